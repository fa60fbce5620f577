"""Anchors a reader agrees with: a hand-labelled sample of the anchors found in the real public
transcripts (up to 7 a class, seed 35, each labelled meaningful, weak or noise by reading it in its
message), and the rules each class follows, with examples from those transcripts."""

from __future__ import annotations

import io
import json
import zipfile
from functools import cache
from pathlib import Path

import gcengine
from gcengine import Message, Part, Role
from gcengine.quality.retention import session_corpus, session_scorer
from gcengine.quality.session_anchors import anchor_context
from tests.engine.strategies import user
from tests.engine.test_anchor_retention import call, found, tool_result

FIXTURES = Path(__file__).parents[1] / "fixtures"
SAMPLE = json.loads((FIXTURES / "anchor_precision_sample.json").read_text())["anchors"]


@cache
def extracted(transcript: str) -> dict[str, set[tuple[str, str]]]:
    """Every anchor of each message of a real transcript, read with its session's context."""
    session = gcengine.load_session(FIXTURES / "formats" / transcript)
    context = session_scorer(session).context
    return {
        m.message_id: {(a.anchor_class.value, a.key) for a in gcengine.message_anchors(m, context)}
        for m in session_corpus(session)
    }


def test_every_sampled_anchor_is_still_found_in_its_class() -> None:
    for item in SAMPLE:
        anchors = extracted(item["transcript"])[item["message_id"]]
        assert (item["anchor_class"], item["key"]) in anchors, item


def test_the_sample_covers_every_class_that_the_transcripts_hold() -> None:
    classes = {item["anchor_class"] for item in SAMPLE}
    assert {"paths", "errors", "issues", "requests", "tests"} <= classes


def test_most_sampled_anchors_are_meaningful() -> None:
    """A reader calls 56 of the 72 sampled anchors meaningful (78 %; the goal is 85 %, which
    numbers and first lines of failed commands still keep it from): the share may not drop,
    and the sample's anchors are still extracted in their class (the test above)."""
    meaningful = sum(item["label"] == "meaningful" for item in SAMPLE)
    assert meaningful / len(SAMPLE) >= 0.77


# --- The rules, with what the real transcripts write ------------------------------------------


def test_spellings_of_one_file_are_one_path() -> None:
    root = "/home/user/projects/spotter-worktrees/spotter-gqc"
    messages = [
        call("Read", {"file_path": f"{root}/lib/spotter/transcripts/annotation.ex"}, "m1"),
        call("Read", {"file_path": f"{root}/lib/spotter_web/router.ex"}, "m2"),
        user("Look at ./lib/spotter/transcripts/annotation.ex again.", "u1"),
    ]
    context = anchor_context(messages, ["Look at ./lib/spotter/transcripts/annotation.ex again."])
    paths = {
        a.key
        for m in messages
        for a in gcengine.message_anchors(m, context)
        if a.anchor_class.value == "paths"
    }
    assert paths == {"lib/spotter/transcripts/annotation.ex", "lib/spotter_web/router.ex"}


def test_lines_of_a_file_read_are_no_errors_but_reported_ones_are() -> None:
    read = tool_result(
        "Read",
        "   222→    failed = Enum.count(calls, & &1.is_error)\n"
        "   305→  <span>({stats.failed} failed)</span>",
        "t1",
    )
    compiled = tool_result(
        "Bash",
        "Exit code 1\nerror: undefined function get/2 (expected SpotterWeb.ProjectReviewLiveTest "
        "to define such a function or for it to be imported)",
        "t2",
        failed=True,
    )
    logged = tool_result("Bash", "logger.error('[opencode] Failed to create session file');", "t3")
    errors = {key for cls, key in found(read, compiled, logged) if cls == "errors"}
    assert errors == {
        "error: undefined function get/2 (expected spotterweb.projectreviewlivetest to define "
        "such a function or for it to be imported)"
    }


def test_a_regex_class_and_a_css_selector_are_no_error_codes() -> None:
    said = Message(
        role=Role.MODEL,
        parts=[Part.from_text("Match `[a-z]` and select `[data-message-id]` rows.")],
        message_id="m1",
    )
    mypy = tool_result("Bash", "x.py:3: error: Argument 1 has incompatible type  [arg-type]", "t1")
    assert {key for cls, key in found(said, mypy) if cls == "errors"} >= {"[arg-type]"}
    assert not {key for cls, key in found(said) if cls == "errors"}


def test_issue_ids_are_a_class() -> None:
    text = "Implement spotter-gqc.4 before PROJ-42; see #123 and https://github.com/o/r/issues/9."
    assert {key for cls, key in found(user(text, "u1")) if cls == "issues"} == {
        "spotter-gqc.4",
        "proj-42",
        "#123",
        "https://github.com/o/r/issues/9",
    }
    # a bare id counts where the session knows it as one
    session = [user("Work on spotter-4te.3 now.", "u1"), user("Close spotter-4te.", "u2")]
    context = anchor_context(session, ["Work on spotter-4te.3 now."])
    assert "spotter-4te" in {a.key for a in gcengine.message_anchors(session[1], context)}
    assert "spotter-hook" not in {
        a.key for a in gcengine.message_anchors(user("spotter-hook", "u3"), context)
    }


def test_the_users_requests_are_a_class_and_injected_notices_are_not() -> None:
    asked = user("Work on bead spotter-4te. Start with the first ready task.", "u1")
    injected = user("<command-name>/compact</command-name> please run it", "u2")
    assert {key for cls, key in found(asked, injected) if cls == "requests"} == {
        "work on bead spotter-4te.",
        "start with the first ready task.",
    }


def test_test_names_are_a_class() -> None:
    written = call(
        "Write",
        {"content": 'test "defaults source to terminal" do\n  assert true\nend'},
        "m1",
    )
    said = user("Run tests/test_tax.py::test_cap and test_rounding.", "u1")
    failed = tool_result("Bash", "  1) test renders the page (SpotterWeb.PageTest)", "t1")
    assert {key for cls, key in found(written, said, failed) if cls == "tests"} == {
        'test "defaults source to terminal"',
        "tests/test_tax.py::test_cap",
        "test_cap",
        "test_rounding",
        "test renders the page",
    }


def test_task_list_items_are_a_class() -> None:
    todos = call(
        "TodoWrite",
        {"todos": [{"content": "Add the refunds migration", "status": "completed"}]},
        "m1",
    )
    checklist = user("- [ ] Wire the trace headers\n- [x] Add the span macro", "u1")
    assert {key for cls, key in found(todos, checklist) if cls == "tasks"} == {
        "add the refunds migration",
        "wire the trace headers",
        "add the span macro",
    }


def test_invented_is_only_what_nothing_the_history_held_names() -> None:
    """Names the history writes inside dotted ones (SpotterWeb.Router) or only a sub-agent
    wrote (JavaScript) are not invented; the one anchor Claude Code's summary names that
    nothing before it did is the transcript file it points the agent to."""
    session_id = "258c7280-ae70-4798-800f-63464d01a85d"
    folder = FIXTURES / "formats" / "spotter"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(folder / f"{session_id}.jsonl", f"{session_id}.jsonl")
        for path in sorted((folder / session_id / "subagents").glob("*.jsonl")):
            archive.write(path, f"{session_id}/subagents/{path.name}")
    session = gcengine.load_session(buffer.getvalue())
    (retention,) = gcengine.score_observed_compactions(session).values()
    assert retention.invented.checked > 100
    assert [name.rsplit("/", 1)[-1] for name in retention.invented.examples] == [
        f"{session_id}.jsonl"
    ]
