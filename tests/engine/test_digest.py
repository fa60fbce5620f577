"""The digest summarizer: the state of the work in sections, within the cap, and at Claude
Code's own summary size keeping more anchors than Claude Code's summary of the same context."""

from __future__ import annotations

from pathlib import Path

import pytest

import gcengine
from gcengine.cli import main
from gcengine.gc.digest import DigestSummarizer
from gcengine.gc.summarizers import SummaryRequest, summarizer_from_options
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    Message,
    MessageKind,
    Part,
    Role,
    split_into_turns,
)
from gcengine.quality.digest import digest_against_agent
from gcengine.tokens import TokenCounter
from tests.engine.strategies import policy, session_at

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
REAL = [
    *sorted((FORMATS / "spotter").glob("*-*.jsonl")),
    FORMATS / "codemie_code" / "session-624a4a58.jsonl",
]


def _user(text: str, mid: str) -> Message:
    return Message(role=Role.USER, parts=[Part.from_text(text)], message_id=mid)


def _call(mid: str, call_id: str, name: str, text: str = "", **args: object) -> Message:
    parts = [Part.from_text(text)] if text else []
    parts.append(Part.from_function_call(FunctionCall(id=call_id, name=name, args=args)))
    return Message(role=Role.MODEL, parts=parts, message_id=mid)


def _result(mid: str, call_id: str, name: str, result: str, error: bool = False) -> Message:
    response = FunctionResponse(call_id=call_id, name=name, result=result, is_error=error)
    return Message(role=Role.USER, parts=[Part.from_function_response(response)], message_id=mid)


def _work() -> list[Message]:
    """A session that reads a file, edits it, creates a test, fails a test run then passes it,
    fails a type check it never fixes, decides, and leaves a todo open."""
    return [
        _user("Fix the rounding in src/billing/tax.py. Never change the public API.", "u1"),
        _call("m1", "c1", "Read", file_path="src/billing/tax.py"),
        _result("r1", "c1", "Read", "def round_money(x): ..."),
        _call(
            "m2", "c2", "Edit", "I'll use Decimal instead of float.", file_path="src/billing/tax.py"
        ),
        _result("r2", "c2", "Edit", "ok"),
        _call("m3", "c3", "Write", file_path="tests/test_tax.py", content="def test_cap(): ..."),
        _result("r3", "c3", "Write", "ok"),
        _call("m4", "c4", "Bash", command="pytest tests/test_tax.py"),
        _result("r4", "c4", "Bash", "E AssertionError: 0.1 != 0.10\n1 failed", error=True),
        _call("m5", "c5", "Bash", command="mypy src"),
        _result("r5", "c5", "Bash", "src/billing/tax.py:3: error: Missing return [return]", True),
        _call("m6", "c6", "Bash", command="pytest tests/test_tax.py"),
        _result("r6", "c6", "Bash", "1 passed"),
        _call(
            "m7",
            "c7",
            "TodoWrite",
            todos=[
                {"content": "Fix rounding", "status": "completed"},
                {"content": "Document the InvoiceError codes", "status": "pending"},
            ],
        ),
        _result("r7", "c7", "TodoWrite", "ok"),
        _user("Now also cap the VAT at 20 %.", "u2"),
    ]


def _digest(messages: list[Message], cap: int, counter: TokenCounter) -> str:
    return DigestSummarizer().summarize(
        SummaryRequest(split_into_turns(messages), None, cap, counter)
    )


def test_the_digest_says_the_task_files_errors_decisions_and_open_work(
    counter: TokenCounter,
) -> None:
    text = _digest(_work(), 600, counter)
    sections = {block.split("\n", 1)[0]: block.split("\n", 1)[1] for block in text.split("## ")[1:]}
    assert "Now also cap the VAT at 20 %." in sections["Current task"]
    assert "src/billing/tax.py: read, edited" in sections["Files"]
    assert "tests/test_tax.py: created" in sections["Files"]
    errors = sections["Errors"]
    assert "fixed: Bash pytest tests/test_tax.py: E AssertionError: 0.1 != 0.10" in errors
    assert "open: Bash mypy src: src/billing/tax.py:3: error: Missing return" in errors
    # Open errors come first: they are what the agent must still act on.
    assert errors.index("open:") < errors.index("fixed:")
    assert "user: Never change the public API." in sections["Decisions"]
    assert "agent: I'll use Decimal instead of float." in sections["Decisions"]
    assert "[pending] Document the InvoiceError codes" in sections["Open work"]
    assert "Fix rounding" not in sections["Open work"]
    assert "round_money" not in text  # a name only a file read held is output, not a fact


@pytest.mark.parametrize("cap", [12, 40, 90, 200])
def test_the_digest_keeps_within_its_cap_by_priority_the_same_every_time(
    cap: int, counter: TokenCounter
) -> None:
    text = _digest(_work(), cap, counter)
    assert counter.count(text) <= cap
    assert text == _digest(_work(), cap, counter)
    if cap >= 40:
        # The current task is the first section filled, whatever else is cut.
        assert text.startswith("## Current task\nNow also cap the VAT at 20 %.")
    if counter.count(_digest(_work(), 10_000, counter)) > cap:
        assert "more facts omitted to stay within" in text


def test_the_digest_is_chosen_through_the_summarizer_option() -> None:
    assert summarizer_from_options({"summarizer": "digest"}).name == "digest"


@pytest.mark.parametrize("strategy", ["gc_summarize", "gc_hybrid"])
def test_summarize_and_hybrid_write_a_digest_when_the_policy_asks(
    strategy: str, counter: TokenCounter
) -> None:
    session = session_at(30, 95, counter)
    outcome = gcengine.run_gc(
        session,
        policy(
            type=strategy,
            preserve_recent_turns=2,
            summarize_middle_turns=26,
            plugin_config={"summarizer": "digest"},
        ),
    )
    summaries = [m for m in outcome.session.history if m.kind is MessageKind.SUMMARY]
    assert summaries
    assert summaries[0].metadata["summarizer"] == "digest"
    assert "## " in summaries[0].text


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:8])
def test_at_claude_codes_own_summary_size_the_digest_keeps_more_anchors(path: Path) -> None:
    """The context just before each real compaction, summarized by the digest within the
    tokens of Claude Code's own summary (its ``isCompactSummary`` message), both scored the
    same way against that context: the digest keeps at least 1.2 times the anchors."""
    session = gcengine.load_session(path)
    compared = digest_against_agent(session)
    assert len(compared) == len(session.compactions) == 1
    for item in compared:
        assert 0 < item.digest_tokens <= item.agent_tokens
        assert item.ratio is not None
        assert item.ratio >= 1.2, (item.kept(item.agent), item.kept(item.digest))


def test_the_comparison_is_printed_with_its_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    """Figures of a digest beating the agent read as recall unless the caveat sits beside
    them."""
    assert main(["digest-vs-agent", str(REAL[-1])]) == 0
    out = capsys.readouterr().out
    headline = out.splitlines()[0]
    assert "tokens; digest keeps" in headline
    assert "not what the agent would recall" in headline
    assert "open_work" in out


def test_a_request_that_says_too_little_takes_the_one_before_into_the_task(
    counter: TokenCounter,
) -> None:
    messages = [
        *_work(),
        Message(role=Role.MODEL, parts=[Part.from_text("Capped.")], message_id="m9"),
        _user("continue", "u3"),
    ]
    text = _digest(messages, 600, counter)
    assert text.startswith("## Current task\nNow also cap the VAT at 20 %.\ncontinue\n")
    earlier = text.split("## Earlier requests\n", 1)[1]
    assert "Fix the rounding" in earlier
    assert "cap the VAT" not in earlier


def test_codex_patches_and_commands_are_read_as_files_and_runs(counter: TokenCounter) -> None:
    """Codex writes files through ``apply_patch`` and runs commands through ``exec_command``."""
    patch = (
        "*** Begin Patch\n*** Add File: src/vat.py\n+RATE = 20\n"
        "*** Update File: src/billing/tax.py\n@@\n-x\n+y\n*** End Patch"
    )
    messages = [
        _user("Add the VAT module and wire it into the tax code.", "u1"),
        _call("m1", "c1", "apply_patch", input=patch),
        _result("r1", "c1", "apply_patch", "Success"),
        _call("m2", "c2", "exec_command", cmd="npm test"),
        _result("r2", "c2", "exec_command", "Tests: 1 failed, 3 passed\nexit code 1"),
    ]
    text = _digest(messages, 600, counter)
    assert "src/vat.py: created" in text
    assert "src/billing/tax.py: edited" in text
    assert "open: exec_command npm test: Tests: 1 failed, 3 passed" in text


def test_a_file_that_mentions_a_failure_is_no_error(counter: TokenCounter) -> None:
    """Only a command's output that ends in a failure is an error the tool did not flag: a
    file read that ends with ``raise Failed("error: ...")`` is the file's text."""
    messages = [
        _user("Read the runner and tell me how it reports failures.", "u1"),
        _call("m1", "c1", "Read", file_path="src/runner.py"),
        _result("r1", "c1", "Read", 'def run():\n    raise Failed("error: the run failed")'),
    ]
    text = _digest(messages, 600, counter)
    assert "## Errors" not in text
    assert "src/runner.py: read" in text
