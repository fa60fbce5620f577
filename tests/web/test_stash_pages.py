"""A reachability run in the dashboard: its ledger's verdicts, the stash page and its search,
restoring into a new derived session (page and API, permissions, audit log), "why kept?",
and the reference graph around a turn."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

import gcengine
from jaato_web.dashboard import background, presenters, selectors, services, storage
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    GCRun,
    KeptSegment,
    Project,
    Removal,
    StashedSegment,
)
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, signed_in_client

pytestmark = pytest.mark.django_db

# Well over a collection's target on the demo's window: the run stashes a good part of it.
REACHABILITY = {
    "type": "gc_reachability",
    "threshold_percent": 30,
    "target_percent": 20,
    "preserve_recent_turns": 3,
}


@pytest.fixture
def demo_session(project: Project) -> AgentSession:
    data = json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=40, seed=5)))
    receipt = background.session_upload(project=project, filename="demo.json", data=data.encode())
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def stash_run(demo_session: AgentSession, run_finished: Callable[..., GCRun]) -> GCRun:
    return run_finished(demo_session, config=REACHABILITY)


def stashed_ids(run: GCRun) -> list[str]:
    return list(selectors.run_stashed(run=run).values_list("segment_id", flat=True))


def test_a_reachability_run_stores_its_verdicts_its_stash_and_why_it_kept_the_rest(
    stash_run: GCRun,
) -> None:
    removals = list(selectors.run_removals(run=stash_run))
    assert removals
    for removal in removals:
        assert removal.reachable is not None
        assert removal.score is not None
        assert 0 <= removal.score <= 1
        assert removal.action == "stashed"
        assert removal.explanation.startswith(("unreachable: ", "reachable, taken once"))
    stashed = StashedSegment.objects.filter(run=stash_run)
    assert stashed.count() == len(removals)
    first = stashed.first()
    assert first is not None
    assert first.reason == first.removal.explanation
    assert stash_run.result is not None
    assert "stash" not in stash_run.result  # the stash has rows and a blob of its own
    packed = GCRun.objects.values_list("stash", flat=True).get(pk=stash_run.pk)
    assert packed is not None
    stash = storage.unpack_stash(bytes(packed))
    assert [s.segment_id for s in stash.segments] == stashed_ids(stash_run)
    kept = KeptSegment.objects.filter(run=stash_run)
    assert kept.exists()
    assert kept.filter(reason__startswith="kept: ").exists()
    taken = {r.child_key for r in removals}
    assert not kept.filter(segment_id__in=taken).exists()


def test_other_strategies_store_no_stash(finished_run: GCRun) -> None:
    assert not StashedSegment.objects.filter(run=finished_run).exists()
    assert not KeptSegment.objects.filter(run=finished_run).exists()
    assert {r.action for r in selectors.run_removals(run=finished_run)} == {""}


def test_the_run_page_shows_each_items_verdict_and_asks_why_kept(
    client: Client, stash_run: GCRun
) -> None:
    html = client.get(reverse("run_detail", args=[stash_run.pk])).content.decode()
    removal = selectors.run_removals(run=stash_run).first()
    assert removal is not None
    assert "data-verdict" in html
    assert removal.explanation in html.replace("&#x27;", "'").replace("&quot;", '"')
    assert reverse("run_stash", args=[stash_run.pk]) in html
    assert "data-why-kept" in html
    kept = KeptSegment.objects.filter(run=stash_run, turn_index__isnull=False).last()
    assert kept is not None
    number = kept.turn_index + 1  # type: ignore[operator]
    answer = client.get(
        reverse("run_kept", args=[stash_run.pk]), {"turn": number}, headers={"HX-Request": "true"}
    ).content.decode()
    assert 'id="kept-list"' in answer
    assert "<html" not in answer
    assert f"of turn {number}" in answer


def test_the_stash_page_searches_by_text_and_by_anchor(client: Client, stash_run: GCRun) -> None:
    url = reverse("run_stash", args=[stash_run.pk])
    everything = client.get(url)
    assert everything.status_code == 200
    html = everything.content.decode()
    size = StashedSegment.objects.filter(run=stash_run).count()
    assert f"The run put {size:,} segments here" in html
    with_file = StashedSegment.objects.filter(run=stash_run, anchors_text__contains=".py").first()
    assert with_file is not None
    anchor = next(a for a in with_file.anchors if a.endswith(".py"))
    found = client.get(
        url, {"anchor": anchor}, headers={"HX-Request": "true", "HX-Target": "stash-list"}
    )
    body = found.content.decode()
    assert "<html" not in body
    assert f'data-segment="{with_file.segment_id}"' in body
    expected = StashedSegment.objects.filter(run=stash_run, anchors_text__icontains=anchor).count()
    assert body.count("data-segment=") == min(expected, selectors.STASH_PER_PAGE)
    nothing = client.get(url, {"q": "no segment says this"}).content.decode()
    assert "data-stash-empty" in nothing


def test_restoring_two_segments_makes_a_derived_session_and_leaves_the_run_alone(
    client: Client, stash_run: GCRun, member: Any
) -> None:
    chosen = stashed_ids(stash_run)[:2]
    after_before = GCRun.objects.values_list("session_after", flat=True).get(pk=stash_run.pk)
    response = client.post(reverse("run_stash", args=[stash_run.pk]), {"segments": chosen})
    derived = AgentSession.objects.get(derived_from_run=stash_run)
    assert response.status_code == 302
    assert response["Location"] == reverse("session_detail", args=[derived.pk])
    assert derived.restored_segments == chosen
    assert derived.label.endswith(f"(run {stash_run.pk}, 2 segments restored)")
    engine = services.engine_session_of(derived)
    stash = storage.unpack_stash(
        bytes(GCRun.objects.values_list("stash", flat=True).get(pk=stash_run.pk))
    )
    back = {m for s in stash.segments if s.segment_id in chosen for m in s.message_ids}
    assert back <= {m.message_id for m in engine.history}
    assert engine.budget == gcengine.rebuild_budget(
        engine, gcengine.counter_by_name(engine.token_counter)
    )
    # The run, its session after and the original upload are as they were.
    assert GCRun.objects.values_list("session_after", flat=True).get(pk=stash_run.pk) == (
        after_before
    )
    assert (
        stash_run.session.turn_count == AgentSession.objects.get(pk=stash_run.session_id).turn_count
    )
    event = AuditEvent.objects.get(action=AuditAction.RESTORE)
    assert event.actor == member
    assert event.detail == {"run": stash_run.pk, "session": derived.pk, "segments": chosen}
    page = client.get(reverse("session_detail", args=[derived.pk])).content.decode()
    assert "data-derived-from" in page
    again = client.post(reverse("run_stash", args=[stash_run.pk]), {"segments": chosen})
    assert again["Location"] == response["Location"], "the same restore is the same session"
    assert AgentSession.objects.filter(derived_from_run=stash_run).count() == 1


def test_a_restore_names_what_is_wrong_and_stores_nothing(client: Client, stash_run: GCRun) -> None:
    url = reverse("run_stash", args=[stash_run.pk])
    unknown = client.post(url, {"segments": ["turn_9999"]})
    assert unknown.status_code == 400
    assert f"run {stash_run.pk} stashed no segment" in unknown.content.decode()
    empty = client.post(url, {})
    assert empty.status_code == 400
    assert "Tick at least one stashed segment" in empty.content.decode()
    assert not AgentSession.objects.filter(derived_from_run=stash_run).exists()


def test_only_those_who_may_run_may_restore(project: Project, stash_run: GCRun) -> None:
    viewer = signed_in_client(make_member(project, "vera", Role.VIEWER))
    url = reverse("run_stash", args=[stash_run.pk])
    assert viewer.get(url).status_code == 200
    assert "data-restore" not in viewer.get(url).content.decode()
    assert viewer.post(url, {"segments": stashed_ids(stash_run)[:1]}).status_code == 403
    api = viewer.post(
        f"/api/runs/{stash_run.pk}/stash/restore",
        {"segment_ids": stashed_ids(stash_run)[:1]},
        content_type="application/json",
    )
    assert api.status_code == 403
    assert not AgentSession.objects.filter(derived_from_run=stash_run).exists()


def test_the_api_lists_searches_and_restores_the_stash(client: Client, stash_run: GCRun) -> None:
    listing = client.get(f"/api/runs/{stash_run.pk}/stash").json()
    assert listing["count"] == StashedSegment.objects.filter(run=stash_run).count()
    first = listing["items"][0]
    assert {"segment_id", "kind", "turn_number", "score", "reachable", "reason", "anchors"} <= set(
        first
    )
    searched = client.get(f"/api/runs/{stash_run.pk}/stash", {"q": "no segment says this"})
    assert searched.json()["count"] == 0
    ledger = client.get(f"/api/runs/{stash_run.pk}/ledger").json()["items"]
    assert ledger[0]["explanation"] == first["reason"]
    assert ledger[0]["action"] == "stashed"
    restored = client.post(
        f"/api/runs/{stash_run.pk}/stash/restore",
        {"segment_ids": [first["segment_id"]]},
        content_type="application/json",
    )
    assert restored.status_code == 201
    body = restored.json()
    assert body["derived_from_run"] == stash_run.pk
    assert body["restored_segments"] == [first["segment_id"]]
    wrong = client.post(
        f"/api/runs/{stash_run.pk}/stash/restore",
        {"segment_ids": ["nope"]},
        content_type="application/json",
    )
    assert wrong.status_code == 400
    assert wrong.json()["reason"] == f"run {stash_run.pk} stashed no segment 'nope'"
    assert wrong.json()["key"] == "segments"
    kept = client.get(f"/api/runs/{stash_run.pk}/kept").json()
    assert kept["count"] == KeptSegment.objects.filter(run=stash_run).count()
    assert kept["items"][0]["reason"].startswith(("kept: ", "not taken yet: "))


def test_a_run_of_another_strategy_has_nothing_to_restore(
    client: Client, finished_run: GCRun
) -> None:
    answer = client.post(
        f"/api/runs/{finished_run.pk}/stash/restore",
        {"segment_ids": ["turn_1"]},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert answer.json()["reason"] == f"run {finished_run.pk} stashed nothing to restore"
    page = client.get(reverse("run_stash", args=[finished_run.pk])).content.decode()
    assert "Only the reachability strategy stashes" in page


def test_the_reference_graph_around_a_turn_is_drawn_and_told(
    client: Client, demo_session: AgentSession
) -> None:
    engine = services.engine_session_of(demo_session)
    turn = next(
        t.index
        for t in engine.turns()
        if t.index is not None and gcengine.turn_references(engine, t.index).incoming
    )
    graph = gcengine.turn_references(engine, turn)
    url = reverse("session_references", args=[demo_session.pk])
    html = client.get(url, {"turn": turn + 1}, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in html
    assert "<svg" in html
    assert "data-referred-by" in html
    assert graph.incoming[0].source_label in html
    assert " style=" not in html, "the CSP allows no inline style"
    missing = client.get(url, {"turn": 9999}).content.decode()
    assert f"has no turn 9999: its turns run from 1 to {demo_session.turn_count}" in missing
    api = client.get(f"/api/sessions/{demo_session.pk}/references", {"turn": turn + 1}).json()
    assert api["turn_number"] == turn + 1
    assert [r["source_id"] for r in api["incoming"]] == [r.source_id for r in graph.incoming]
    assert (
        client.get(f"/api/sessions/{demo_session.pk}/references", {"turn": 9999}).status_code == 400
    )
    session_page = client.get(reverse("session_detail", args=[demo_session.pk])).content.decode()
    assert "data-references-form" in session_page


def test_the_ledger_of_another_strategy_exports_no_verdicts(finished_run: GCRun) -> None:
    records = presenters.ledger_records(Removal.objects.filter(run=finished_run).order_by("seq"))
    assert records
    assert all(r["reachable"] is None for r in records)
    assert all(r["action"] == "" for r in records)


def test_an_incremental_replay_says_it_took_batches(
    demo_session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    config = {**REACHABILITY, "incremental": True, "batch_size": 5}
    with django_capture_on_commit_callbacks(execute=True):
        replay = background.replay_request(session=demo_session, config=config)
    replay.refresh_from_db()
    assert replay.series is not None
    batches = [e for e in replay.series["events"] if e["reason"] == "incremental"]
    assert batches
    story = presenters.replay_story(replay.series, replay.config)
    shape = " ".join(story.sentences)
    assert f"GC took a small batch after a turn {len(batches):,} times" in shape
    items = sum(e["items"] for e in batches)
    assert f"({items:,} segments in all)" in shape
