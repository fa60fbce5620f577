"""Anchors a reader agrees with: a hand-labelled sample of the anchors found in the real public
transcripts (drawn by ``tests/engine/anchor_sample.py``: up to 7 a class spread across the
transcripts, seed 36; each labelled meaningful, weak or noise by reading it in its message), and
the rules each class follows, with examples from those transcripts."""

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
from tests.engine.test_anchor_retention import call, found, summary, tool_result

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
    assert {"paths", "errors", "issues", "requests", "tests", "tasks"} <= classes


def test_most_sampled_anchors_are_meaningful() -> None:
    """A reader calls 64 of the 73 sampled anchors meaningful (88 %): at least 85 % must be,
    and the sample's anchors are still extracted in their class (the test above)."""
    meaningful = sum(item["label"] == "meaningful" for item in SAMPLE)
    assert meaningful / len(SAMPLE) >= 0.85


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
    plan = call(  # Codex CLI's plan tool
        "update_plan",
        {"plan": [{"step": "Run focused verification", "status": "pending"}]},
        "m2",
    )
    assert {key for cls, key in found(todos, checklist, plan) if cls == "tasks"} == {
        "add the refunds migration",
        "wire the trace headers",
        "add the span macro",
        "run focused verification",
    }
    assert of_class("open_work", plan) == {"run focused verification"}


def of_class(anchor_class: str, *messages: Message) -> set[str]:
    return {key for cls, key in found(*messages) if cls == anchor_class}


def test_a_count_of_things_and_a_colour_code_are_no_numbers() -> None:
    said = Message(
        role=Role.MODEL,
        parts=[Part.from_text("All 5 tests pass (297 tests, 2 files). The poll waits 300 ms.")],
        message_id="m1",
    )
    coloured = user(
        "<local-command-stdout>\x1b[2mCompacted\x1b[22m in 4 s</local-command-stdout>", "u1"
    )
    assert of_class("numbers", said, coloured) == {"300 ms", "4 s"}


# The end of a real vitest run (the Codex CLI rollout in tests/fixtures/formats/codemie_code).
VITEST_RUN = (
    " ❯ src/agents/plugins/__tests__/codemie-code-reasoning.test.ts (16 tests | 1 failed | 15 "
    "skipped) 1316ms\n"
    "       × sets default context compaction threshold to 90% 1312ms\n\n"
    "⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯\n\n"
    " FAIL  src/agents/plugins/__tests__/codemie-code-reasoning.test.ts > CodeMie Code Plugin — "
    "Reasoning Sanitization Integration > Compaction Config > sets default context compaction "
    "threshold to 90%\n"
    "AssertionError: expected undefined to deeply equal { auto: true, prune: true, …(1) }\n\n"
    " Test Files  1 failed (1)\n"
    "      Tests  1 failed | 15 skipped (16)\n"
    "   Start at  11:42:09\n"
)
JEST_RUN = (
    "FAIL src/sync/session-sync.test.ts\n"
    "  SessionSync\n"
    "    ✓ should process all messages on first sync (4 ms)\n"
    "    ✕ should skip if no new messages (3 ms)\n\n"
    "  ● SessionSync › should skip if no new messages\n\n"
    "    expect(received).toBe(expected) // Object.is equality\n\n"
    "Test Suites: 1 failed, 1 total\n"
    "Tests:       1 failed, 1 passed, 2 total\n"
)


def test_a_test_runs_tests_are_named_and_its_tally_is_no_error() -> None:
    vitest = tool_result("exec_command", VITEST_RUN, "t1", failed=True)
    jest = tool_result("Bash", JEST_RUN, "t2", failed=True)
    assert of_class("tests", vitest) == {"sets default context compaction threshold to 90%"}
    assert of_class("tests", jest) == {
        "should process all messages on first sync",
        "should skip if no new messages",
    }
    assert of_class("errors", vitest) == {
        "assertionerror: expected undefined to deeply equal { auto: true, prune: true, …(1) }"
    }
    # a check mark is a test only in a test run's output
    installed = tool_result("Bash", "  ✓ Claude plugin copied successfully (2 ms)", "t3")
    assert not of_class("tests", installed)


def test_the_codex_sessions_failing_vitest_test_is_one_test_in_its_patch_and_its_run() -> None:
    """In the real Codex CLI rollout the agent adds a vitest test with apply_patch and runs it
    (it fails first): both name one test, by the words a summary would write."""
    rollout = "codemie_code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    anchors = extracted(rollout)
    test = ("tests", "sets default context compaction threshold to 90%")
    assert test in anchors["459819d7-c766-54a6-bbf0-69819a001559"]  # the patch
    assert test in anchors["55613624-8f51-5757-faea-38ef0f4be02b"]  # the failing run
    assert ("errors", "tests 1 failed | 15 skipped (16)") not in anchors[
        "55613624-8f51-5757-faea-38ef0f4be02b"
    ]


def test_test_names_in_javascript_sources_are_tests() -> None:
    patch = call(
        "apply_patch",
        {
            "input": "+  describe('Compaction Config', () => {\n"
            "+    it('sets default context compaction threshold to 90%', async () => {\n"
            '+      test.each([1, 2])("rounds %i", (n) => {\n'
            "+      if (/^o[134]-/.test(id)) return;\n"
        },
        "m1",
    )
    assert of_class("tests", patch) == {
        "compaction config",
        "sets default context compaction threshold to 90%",
        "rounds %i",
    }


def test_a_failed_commands_progress_is_not_its_error() -> None:
    compiled = tool_result(
        "Bash",
        "Exit code 2\nCompiling 41 files (.ex)\nGenerated spotter app\n"
        "Getting extensions in current project...\npermission denied: ./run.sh",
        "t1",
        failed=True,
    )
    assert of_class("errors", compiled) == {"permission denied: ./run.sh"}


def test_errors_as_a_topic_or_a_behaviour_are_no_errors() -> None:
    said = Message(
        role=Role.MODEL,
        parts=[
            Part.from_text(
                "- No session metadata → error\n- API failure → return error\n"
                "- Span creation, attributes, error status\n"
                "- Compile error at line 171: cannot invoke remote function"
            )
        ],
        message_id="m1",
    )
    assert of_class("errors", said) == {
        "- compile error at line 171: cannot invoke remote function"
    }


def test_only_and_instead_restated_in_a_summary_are_no_constraints() -> None:
    restated = summary(
        "Only Dialyzer blocks the commit. Fixed by using `with` instead of `case`. "
        "OTEL failures must never crash the app."
    )
    typed = user("Only touch the sync module.", "u1")
    assert of_class("decisions", restated) == {"otel failures must never crash the app."}
    assert of_class("decisions", typed) == {"only touch the sync module."}


def test_pending_data_is_no_open_work() -> None:
    said = Message(
        role=Role.MODEL,
        parts=[Part.from_text("Only pending deltas are processed. Two changes are still pending.")],
        message_id="m1",
    )
    assert of_class("open_work", said) == {"two changes are still pending."}


def test_a_librarys_files_a_search_and_a_template_are_no_anchors() -> None:
    said = Message(
        role=Role.MODEL,
        parts=[
            Part.from_text(
                "Read deps/opentelemetry_api/lib/open_telemetry/tracer.ex and lib/spotter/otel.ex. "
                'curl "https://search.hexdocs.pm/?q=setup" and https://hex.pm/api/packages/<name> '
                "then https://hexdocs.pm/opentelemetry_api/OpenTelemetry.html"
            )
        ],
        message_id="m1",
    )
    assert of_class("paths", said) == {"lib/spotter/otel.ex"}
    assert of_class("urls", said) == {"https://hexdocs.pm/opentelemetry_api/opentelemetry.html"}


def test_a_background_tasks_id_is_no_commit() -> None:
    polled = call("TaskOutput", {"task_id": "b0be39e", "block": True}, "m1")
    notified = user("<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed", "u1")
    pinned = user("Check out b0be39e before the rebase.", "u2")
    assert not of_class("commits", polled, notified)
    assert of_class("commits", pinned) == {"b0be39e"}


def test_code_values_are_no_figures() -> None:
    """A style's value, a Tailwind class, a shell's positional parameter and a status a test
    compares are code; a figure the work states is a number."""
    written = call(
        "Write",
        {
            "content": '<div style="min-width: 100%;border-radius:50%" class="gap-2 mb-2">\n'
            'SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"\n'
            "assert status == 201\n"
            "# The sync takes 50 ms and answers with status 409 on a conflict."
        },
        "m1",
    )
    assert of_class("numbers", written) == {"50 ms", "409"}


def test_a_name_ending_in_error_is_no_error_but_an_error_type_is() -> None:
    said = Message(
        role=Role.MODEL,
        parts=[
            Part.from_text(
                "| `lastConversationSyncError` | `string?` | Last error message (optional) |\n"
                "The config raised a BadMapError on start."
            )
        ],
        message_id="m1",
    )
    assert of_class("errors", said) == {"the config raised a badmaperror on start."}


def test_a_users_answer_is_the_decision_not_the_tools_framing() -> None:
    answered = tool_result(
        "AskUserQuestion",
        'User has answered your questions: "Pre-commit hook blocks on pre-existing issues. How '
        'should we proceed?"="main was clean; fix the issues". You can now continue with the '
        "user's answers in mind.",
        "t1",
    )
    assert of_class("decisions", answered) == {"main was clean; fix the issues"}


def test_a_tracker_command_on_a_child_names_the_child_alone() -> None:
    closed = call("Bash", {"command": "bd close spotter-dov.3 --reason=done"}, "m1")
    shown = call("Bash", {"command": "bd show spotter-dov"}, "m2")
    assert of_class("issues", closed) == {"spotter-dov.3"}
    assert of_class("issues", shown) == {"spotter-dov"}


def test_a_path_after_a_variable_is_no_rooted_path() -> None:
    sourced = call("Bash", {"command": '. "${LIB_DIR}/trace_context.sh"'}, "m1")
    assert of_class("paths", sourced) == {"trace_context.sh"}


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
