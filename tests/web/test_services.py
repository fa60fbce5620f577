"""The write path every door shares: uploads, runs, replays and policy versions."""

from __future__ import annotations

import hashlib
import json
import tracemalloc

import pytest
import zstandard
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gcengine
from jaato_web.dashboard import background, presenters, selectors, services, storage
from jaato_web.dashboard.models import (
    AgentSession,
    BudgetNode,
    GCRun,
    IngestJob,
    IngestUpload,
    JobStatus,
    Project,
    Removal,
    SessionTurn,
    Summary,
)
from jaato_web.dashboard.storage import packing
from tests.web.uploads import BUDGET_POLICY, HYBRID_POLICY, session_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    return services.project_default()


def test_upload_stores_original_bytes_turns_and_tree(project):
    data = session_file(20)

    receipt = background.session_upload(project=project, filename="agent.json", data=data)

    session = receipt.session
    assert session is not None
    assert not receipt.duplicate
    assert session.sha256 == hashlib.sha256(data).hexdigest()
    assert selectors.session_original(session=session) == data
    engine = gcengine.load_session(data)
    assert (
        session.turn_count
        == len(engine.turns())
        == SessionTurn.objects.filter(session=session).count()
    )
    assert session.total_tokens == engine.budget.total_tokens()
    assert session.context_limit == 8192
    top, _ = selectors.budget_children_page(session=session)
    assert sum(node.tokens for node in top) == session.total_tokens
    conversation = next(node for node in top if node.key == "conversation")
    assert conversation.child_count == session.turn_count
    # The turns and messages of the tree are the turn rows': every message once, its figure
    # the budget's.
    turns, total = selectors.budget_children_page(session=session, parent_path="conversation")
    assert total == session.turn_count
    assert [node.key for node in turns] == list(
        engine.budget.entries[gcengine.InstructionSource.CONVERSATION].children
    )[: len(turns)]
    leaves = [
        leaf
        for turn in turns
        for leaf in selectors.budget_children_page(session=session, parent_path=turn.path)[0]
    ]
    assert sum(leaf.tokens for leaf in leaves) == sum(turn.tokens for turn in turns)
    assert not BudgetNode.objects.filter(session=session, path__startswith="conversation/")


def test_an_original_packed_a_slice_at_a_time_comes_back_byte_for_byte():
    # Over several slices and pieces of varied bytes, ending mid-slice, as a large upload is
    # packed.
    varied = bytes(
        (n * 7919 + n // 1000) % 256 for n in range(2 * packing._COMPRESS_SLICE + 12_345)
    )
    data = varied * (packing._COMPRESS_PIECE // len(varied) + 2)
    assert len(data) > packing._COMPRESS_PIECE

    packed = storage.pack_original(data)
    assert storage.unpack_original(packed) == data
    assert len(packed) < len(data) / 4
    # One frame that says its size, so reading it back reserves exactly the room it needs.
    assert zstandard.frame_content_size(packed) == len(data)
    assert storage.unpacked(storage.packed({"text": data.hex()})) == {"text": data.hex()}
    assert storage.original_of(data) == storage.Original(len(data), packed)
    parts = (b"{", data, b"}", varied)
    assert storage.decompressed(packing.compress(*parts)) == b"".join(parts)


def test_packed_values_hold_no_more_memory_than_their_bytes():
    texts = [json.dumps({"turn": n, "text": "words of a turn " * 200}).encode() for n in range(500)]

    tracemalloc.start()
    try:
        packed = [storage.packed(text.decode()) for text in texts]
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()

    assert held < 2 * sum(map(len, packed)) + 100_000
    assert sum(map(len, packed)) < sum(map(len, texts)) / 4


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(
            [
                *["word", "é", " ", "   ", "\n", "\t\n ", " " * 90, "x" * 40, "中"],
                # Whitespace that is not a plain space, and characters that are not printable.
                *["\u00a0", "\u2028", "\u3000", "\x1c", "\r", "\x0b", "\x0c", "\x85", "\x00"],
            ]
        ),
        max_size=60,
    ).map("".join),
    limit=st.integers(1, 50),
)
# Starts on one line but for one thing: a run of spaces, a space first or last, other
# whitespace (a line break, a no-break space, a line separator).
@example(text="word   word", limit=50)
@example(text=" word", limit=50)
@example(text="word ", limit=50)
@example(text="word \n", limit=5)
@example(text="word\u00a0word", limit=50)
@example(text="word\u2028word", limit=50)
@example(text="word\nword", limit=50)
def test_a_preview_is_the_start_of_the_text_on_one_line(text: str, limit: int) -> None:
    assert storage.preview_of(text, limit) == " ".join(text.split())[:limit]


def test_second_upload_of_the_same_bytes_points_at_the_first(project):
    first = background.session_upload(project=project, filename="a.json", data=session_file(5))
    again = background.session_upload(project=project, filename="b.json", data=session_file(5))

    assert again.duplicate
    assert again.session == first.session
    assert AgentSession.objects.count() == 1


def test_malformed_upload_names_the_path_and_stores_nothing(project):
    document = json.loads(session_file(3))
    document["history"][2]["role"] = 7

    with pytest.raises(gcengine.SessionFormatError) as caught:
        background.session_upload(
            project=project, filename="bad.json", data=json.dumps(document).encode()
        )

    assert caught.value.json_path == "history[2].role"
    assert AgentSession.objects.count() == SessionTurn.objects.count() == 0
    assert BudgetNode.objects.count() == 0


def test_oversized_upload_is_refused_before_anything_is_stored(project, settings):
    settings.JAATO_UPLOAD_MAX_BYTES = 100

    with pytest.raises(services.UploadTooLarge, match="limit is 100 bytes"):
        background.session_upload(project=project, filename="big.json", data=session_file(5))
    assert AgentSession.objects.count() == IngestJob.objects.count() == 0


def test_large_upload_is_read_in_the_background_then_kept(
    project, settings, django_capture_on_commit_callbacks
):
    settings.JAATO_INLINE_INGEST_BYTES = 10

    with django_capture_on_commit_callbacks(execute=True):
        receipt = background.session_upload(
            project=project, filename="big.json", data=session_file(8)
        )

    assert receipt.job is not None
    assert receipt.session is None
    job = IngestJob.objects.get(pk=receipt.job.pk)
    assert job.status == JobStatus.DONE
    # The bytes now live with the session only.
    assert not IngestUpload.objects.filter(job=job).exists()
    assert job.session is not None
    assert job.session.turn_count == 8


def test_malformed_background_upload_keeps_only_its_error(
    project, settings, django_capture_on_commit_callbacks
):
    settings.JAATO_INLINE_INGEST_BYTES = 10

    with django_capture_on_commit_callbacks(execute=True):
        receipt = background.session_upload(
            project=project, filename="bad.json", data=b'{"history": "not a list", "x": 1}'
        )

    job = IngestJob.objects.get(pk=receipt.job.pk)  # type: ignore[union-attr]
    assert job.status == JobStatus.FAILED
    assert job.error_path == "version"
    assert "needs a version" in job.error
    assert not IngestUpload.objects.filter(job=job).exists()
    assert AgentSession.objects.count() == 0


def finished_run(project, config, django_capture_on_commit_callbacks, turns=20):
    session = background.session_upload(
        project=project, filename="s.json", data=session_file(turns)
    ).session
    with django_capture_on_commit_callbacks(execute=True):
        run = background.run_start(session=session, config=config)
    run.refresh_from_db()
    return session, run


def test_run_stores_ledger_figures_and_after_tree(project, django_capture_on_commit_callbacks):
    session, run = finished_run(project, BUDGET_POLICY, django_capture_on_commit_callbacks)
    original = selectors.session_original(session=session)

    assert run.status == JobStatus.DONE, run.error
    assert run.tokens_before == session.total_tokens
    assert run.tokens_after <= session.context_limit * 0.30
    removals = list(Removal.objects.filter(run=run).order_by("seq"))
    assert len(removals) == run.items_collected > 0
    assert sum(r.tokens_freed for r in removals) == run.tokens_freed
    assert all(r.turn_position is not None for r in removals if r.source == "conversation")
    after_top, _ = selectors.budget_children_page(session=session, run=run)
    assert sum(n.tokens for n in after_top) == run.tokens_after
    # The after-tree's turns: those the run left alone are the session's rows, the others
    # written out; together they hold what the run left.
    turns, total = selectors.budget_children_page(
        session=session, run=run, parent_path="conversation"
    )
    assert total == run.turns_after == len(turns)
    assert sum(turn.tokens for turn in turns) == next(
        n.tokens for n in after_top if n.key == "conversation"
    )
    # The upload is untouched by the run.
    assert selectors.session_original(session=session) == original
    after = services.session_after_of(run)
    assert after is not None
    assert gcengine.rebuild_budget(after).total_tokens() == run.tokens_after
    assert after.budget == gcengine.rebuild_budget(
        after, gcengine.counter_by_name(after.token_counter)
    )


def test_a_ledger_keeps_message_ids_as_the_file_wrote_them(
    project, django_capture_on_commit_callbacks
):
    """Message ids come from the file: quotes, backslashes and any script are stored in the
    ledger's JSON and read back as they were."""
    file = json.loads(session_file())
    for number, message in enumerate(file["history"]):
        message["message_id"] = f'm{number} "quoted" \\ path\\to · 消息 \u2028'
    session = background.session_upload(
        project=project, filename="ids.json", data=json.dumps(file).encode()
    ).session
    with django_capture_on_commit_callbacks(execute=True):
        run = background.run_start(session=session, config=BUDGET_POLICY)
    run.refresh_from_db()

    assert run.status == JobStatus.DONE, run.error
    stored = list(Removal.objects.filter(run=run).order_by("seq").values_list("message_ids"))
    expected = [
        item.message_ids
        for item in gcengine.run_gc(
            services.engine_session_of(session), services.config_validated(BUDGET_POLICY)
        ).result.removal_list
    ]
    assert [ids for (ids,) in stored] == expected
    assert any("消息" in ids[0] for ids in expected)


def test_summarizing_run_stores_the_chain_and_where_it_went_in(
    project, django_capture_on_commit_callbacks
):
    _, run = finished_run(project, HYBRID_POLICY, django_capture_on_commit_callbacks)

    assert run.status == JobStatus.DONE, run.error
    written = Summary.objects.get(run=run, written_by_run=True)
    assert written.number == 1
    assert written.covers_turns
    assert written.text.startswith("[Context Summary")
    assert Removal.objects.filter(run=run, reason="summarized").exists()
    # The engine puts a summary before the first turn the run took anything from.
    touched = Removal.objects.filter(run=run).values_list("turn_position", flat=True)
    assert written.inserted_before_position == min(touched)
    diff = selectors.run_diff(run=run, turns=list(selectors.session_turns(session=run.session)))
    states = {row.state for row in diff}
    assert {"removed", "kept"} <= states
    assert any(row.summaries_before for row in diff)


def test_a_run_on_a_session_holding_a_summary_keeps_it_in_the_chain_as_not_its_own(
    project, django_capture_on_commit_callbacks
):
    """A session an agent's GC already summarized: its summary is in the run's chain where it
    stood, not written by the run (a budget run, which keeps what is preservable)."""
    # Eight recent turns kept beside the summary: what the next run can take.
    agents_policy = {**HYBRID_POLICY, "preserve_recent_turns": 8}
    collected = gcengine.run_gc(
        gcengine.load_session(session_file(20)), services.config_validated(agents_policy)
    ).session
    data = gcengine.dump_session(collected).encode()
    session = background.session_upload(project=project, filename="summarized.json", data=data)
    engine = services.engine_session_of(session.session)
    (earlier,) = [m for m in engine.history if m.kind is gcengine.MessageKind.SUMMARY]
    tight = {**BUDGET_POLICY, "threshold_percent": 4, "target_percent": 2, "pressure_percent": None}
    with django_capture_on_commit_callbacks(execute=True):
        run = background.run_start(session=session.session, config=tight)
    run.refresh_from_db()

    assert run.status == JobStatus.DONE, run.error
    assert run.items_collected
    (kept,) = Summary.objects.filter(run=run)
    assert kept.message_id == earlier.message_id
    assert not kept.written_by_run
    assert kept.inserted_before_position == engine.message_turns()[earlier.message_id]


def test_invalid_policy_names_the_key_and_queues_nothing(project):
    session = background.session_upload(
        project=project, filename="s.json", data=session_file(4)
    ).session

    with pytest.raises(gcengine.ConfigError) as caught:
        background.run_start(session=session, config={**BUDGET_POLICY, "target_percent": 95})

    assert caught.value.key == "target_percent"
    assert GCRun.objects.count() == 0


def test_default_policy_runs_on_upload(project, django_capture_on_commit_callbacks):
    policy = services.policy_create(project=project, name="p", config=BUDGET_POLICY)
    services.project_set_default_policy(project=project, policy=policy)

    with django_capture_on_commit_callbacks(execute=True):
        session = background.session_upload(
            project=project, filename="s.json", data=session_file(20)
        ).session

    run = GCRun.objects.get(session=session)
    assert run.trigger == "upload"
    assert run.policy_version == policy.versions.get()
    assert run.status == JobStatus.DONE


def test_replay_is_computed_once_per_policy(project, django_capture_on_commit_callbacks):
    session = background.session_upload(
        project=project, filename="s.json", data=session_file(20)
    ).session

    with django_capture_on_commit_callbacks(execute=True):
        replay = background.replay_request(session=session, config=BUDGET_POLICY)
    again = background.replay_request(session=session, config=dict(BUDGET_POLICY))

    replay.refresh_from_db()
    assert again.pk == replay.pk
    assert replay.status == JobStatus.DONE
    series = replay.series
    assert len(series["steps"]) >= session.turn_count
    chart = presenters.replay_chart(series)
    assert chart.mode == "threshold"
    assert chart.threshold_y is not None


def test_policy_save_refuses_a_stale_base(project):
    policy = services.policy_create(project=project, name="p", config=BUDGET_POLICY)
    services.policy_save(
        policy=policy, config={**BUDGET_POLICY, "target_percent": 50}, base_number=1
    )

    with pytest.raises(services.PolicyConflict) as caught:
        services.policy_save(
            policy=policy, config={**BUDGET_POLICY, "target_percent": 40}, base_number=1
        )

    assert caught.value.current.number == 2
    assert caught.value.current.config["target_percent"] == 50
    assert policy.versions.count() == 2
