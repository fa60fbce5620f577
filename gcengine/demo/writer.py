"""How the demo's agent writes a turn: its messages, its tool calls and their results (reads,
greps, edits, test runs) on the project's files, sized so that the session ends at its fill."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gcengine.demo.findings import _Finding, _Names
from gcengine.demo.project import (
    _DOMAIN_CODES,
    _ENRICHMENT,
    _MODULES,
    _PLUGINS,
    _REGIONS,
    _SCENARIOS,
    _SYSTEM,
    _Module,
    _plugin_tokens,
    _render_file,
)
from gcengine.demo.shape import WORKSPACE, DemoShape


@dataclass
class _Turn:
    """One turn as it is written: its messages, the calls it made, the thinking it did, and
    which of its messages are a clarification question or answer."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, float]] = field(default_factory=list)
    thinking_tokens: int = 0
    clarification_q: int | None = None
    clarification_a: int | None = None


_Exchange = tuple[list[dict[str, Any]], list[dict[str, Any]]]
"""A model message's parts making calls, and the tool message's parts answering them."""


def _jaato_figure(message: dict[str, Any]) -> int:
    """The tokens JAATO records for a message: its text and str() of each result, four
    characters a token (calls and thoughts are left out)."""
    chars = 0
    for part in message["parts"]:
        if part["type"] == "text":
            chars += len(part["text"])
        elif part["type"] == "function_response":
            chars += len(str(part["result"]))
    return chars // 4


def _estimate(message: dict[str, Any]) -> int:
    """What the budget will hold for ``message``, near enough to aim with: JAATO's figure,
    which the engine takes where JAATO records one, else a quarter of the characters sent."""
    calls = [p for p in message["parts"] if p["type"] == "function_call"]
    if not calls:
        return _jaato_figure(message)
    chars = sum(len(p["name"]) + len(json.dumps(p["args"])) for p in calls)
    chars += sum(len(p["text"]) for p in message["parts"] if p["type"] == "text")
    return chars // 4 + 3


class _Writer:
    """What every turn of the story is written with: the messages and tool calls of a turn,
    the project's files as the agent reads and edits them, and the sizing that lands the
    session at its fill."""

    def __init__(self, shape: DemoShape) -> None:
        self.shape = shape
        self.rng = random.Random(f"demo:{shape.seed}")
        self.names = _Names(shape.seed)
        self.sources: dict[str, list[str]] = {}
        self.turns: list[_Turn] = []
        self.user_inputs: list[str] = []
        self.fixed: list[_Finding] = []
        self.open: list[_Finding] = []
        self.domain_codes = iter(_DOMAIN_CODES)
        self.outside_tokens = (
            sum(len(text) for *_, text in _SYSTEM) // 4
            + sum(_plugin_tokens(p) for p in _PLUGINS)
            + sum(len(text) for *_, text in _ENRICHMENT) // 4
        )
        self.target = shape.context_limit * shape.fill_percent / 100
        self.used = self.outside_tokens
        self.sized = 0  # sizable tool results so far, and the tokens granted to them
        self.sized_tokens = 0

    def _user(self, turn: _Turn, text: str) -> None:
        self.user_inputs.append(text)
        self._message(turn, "user", [{"type": "text", "text": text}])

    def _answer(self, turn: _Turn, text: str) -> None:
        self._message(turn, "model", [{"type": "text", "text": text}])

    def _message(self, turn: _Turn, role: str, parts: list[dict[str, Any]]) -> None:
        message = {"role": role, "parts": parts, "message_id": self.names.message_id()}
        turn.messages.append(message)
        self.used += _estimate(message)

    def _tool_loop(self, turn: _Turn, exchange: _Exchange) -> None:
        call_parts, results = exchange
        self._message(turn, "model", call_parts)
        self._message(turn, "tool", results)

    def _calling(
        self,
        turn: _Turn,
        text: str,
        thought: str | None,
        calls: Sequence[tuple[str, dict[str, Any], Any, bool]],
    ) -> _Exchange:
        """The parts of a model message making ``calls`` (name, args, result, is_error), and
        of the tool message answering each."""
        parts: list[dict[str, Any]] = []
        if thought:
            # As the engine writes a thought: JAATO shows it as an unrecognised part.
            parts.append(
                {
                    "type": "unknown",
                    "repr": f"Part(thought={thought!r})",
                    "kind": "thought",
                    "text": thought,
                }
            )
            turn.thinking_tokens += len(thought) // 4 + self.rng.randrange(40, 400)
        parts.append({"type": "text", "text": text})
        results: list[dict[str, Any]] = []
        for name, args, result, is_error in calls:
            call_id = self.names.call_id()
            parts.append({"type": "function_call", "id": call_id, "name": name, "args": args})
            results.append(
                {
                    "type": "function_response",
                    "call_id": call_id,
                    "name": name,
                    "result": result,
                    "is_error": is_error,
                }
            )
            turn.calls.append((name, round(self.rng.uniform(0.05, 4.0), 3)))
        return parts, results

    def _allowance(self) -> int:
        """Characters a sizable tool result (a file read, a whole test run) may have for the
        session to land at its fill: what the rest of the session leaves over after the usual
        cost of a turn (the messages around such results), shared among the sizable results
        still to come at the rate they have come so far, varied so that they differ in size."""
        self.sized += 1
        done = len(self.turns)
        turns_left = self.shape.turns - done + 1
        usual = (self.used - self.outside_tokens - self.sized_tokens + _USUAL_TURN_TOKENS) / done
        spare = self.target - self.used - usual * turns_left
        share = spare / max(1.0, turns_left * self.sized / done)
        granted = max(0, int(share * self.rng.uniform(0.6, 1.4)))
        self.sized_tokens += granted
        return granted * 4

    # --- tools ----------------------------------------------------------------------------------

    def _read(
        self,
        turn: _Turn,
        path: str,
        start: int,
        lines: int,
        *,
        text: str,
        thought: str | None = None,
        through: int = 0,
    ) -> _Exchange:
        """read_file of ``lines`` lines from ``start``, at least ``through``; 0 lines: as many
        as the fill allows."""
        source = self._source(path)
        if lines == 0:
            lines = max(12, self._allowance() // _AVERAGE_LINE_CHARS)
        start = min(max(1, start), max(1, len(source) - 11))
        end = min(len(source), max(start + lines - 1, through))
        content = "\n".join(f"{n:>5}  {source[n - 1]}" for n in range(start, end + 1))
        result = {
            "path": path,
            "start_line": start,
            "end_line": end,
            "total_lines": len(source),
            "content": content,
        }
        args = {"path": path, "start_line": start, "end_line": end}
        return self._calling(turn, text, thought, [("read_file", args, result, False)])

    def _grep(self, turn: _Turn, name: str, path: str = "src/billing") -> _Exchange:
        matches = [
            {"path": module.path, "line": number, "text": line.strip()}
            for module in _MODULES
            if module.path.startswith(path)
            for number, line in enumerate(self._source(module.path), 1)
            if name in line
        ]
        result = {"matches": matches[:40], "count": len(matches)}
        args = {"pattern": rf"\b{name}\b", "path": path, "glob": "*.py"}
        return self._calling(
            turn, f"Where is {name} used?", None, [("grep_content", args, result, False)]
        )

    def _edit(self, turn: _Turn, finding: _Finding, *, missed: bool) -> _Exchange:
        path = finding.module.path
        if missed:  # a guess at the line that is off by its spacing
            guess = finding.old.replace(" ", "  ", 1)
            result: dict[str, Any] = {
                "error": "old_string not found",
                "message": f"old_string does not occur in {path}",
            }
            args = {"path": path, "old_string": guess, "new_string": finding.new}
            return self._calling(
                turn, f"Editing {path}.", None, [("edit_file", args, result, True)]
            )
        added = f"+{finding.indent}{finding.new}\n" if finding.new else ""
        diff = (
            f"--- a/{path}\n+++ b/{path}\n"
            f"@@ -{finding.line},1 +{finding.line},{int(bool(finding.new))} @@"
            f"{'' if finding.check == 'ruff' else f' def {finding.function}'}\n"
            f"-{finding.indent}{finding.old}\n{added}"
        )
        args = {"path": path, "old_string": finding.old, "new_string": finding.new}
        return self._calling(
            turn,
            f"Editing {path}.",
            f"The smallest change that fixes {finding.code} without touching the signature of "
            f"{finding.function}.",
            [("edit_file", args, {"path": path, "replacements": 1, "diff": diff}, False)],
        )

    def _run(
        self,
        turn: _Turn,
        command: str,
        failing: Sequence[_Finding],
        *,
        text: str,
        thought: str | None = None,
    ) -> _Exchange:
        """run_command: pytest, mypy or ruff, with those of ``failing`` it reports."""
        tool = command.split()[0]
        shown = [f for f in failing if f.check == tool]
        if tool == "pytest":
            output = self._pytest_output(command, shown)
        else:
            clean = (
                "Success: no issues found in 14 source files"
                if tool == "mypy"
                else ("All checks passed!")
            )
            output = "\n".join(
                [f"{f.where}: {f.error}" for f in shown]
                + [f"Found {len(shown)} error(s) in {len(shown)} file(s)" if shown else clean]
            )
        result = {
            "command": command,
            "exit_code": 1 if shown else 0,
            "stdout": output,
            "stderr": "",
            "duration_seconds": round(self.rng.uniform(0.8, 9.0), 2),
        }
        args = {"command": command, "timeout_seconds": 300}
        return self._calling(turn, text, thought, [("run_command", args, result, False)])

    def _pytest_output(self, command: str, failing: Sequence[_Finding]) -> str:
        """pytest's output: progress per test file, each failure's traceback, the summary.
        The whole suite's progress is verbose (one line a test), as long as the fill allows."""
        rng = self.rng
        target = command.split()[1]
        whole = target == "-q"
        files = [m.test_path for m in _MODULES] if whole else [target.split("::")[0]]
        lines = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0",
            f"rootdir: {WORKSPACE}",
            "configfile: pyproject.toml",
        ]
        per_file = max(3, self._allowance() // (70 * len(files))) if whole else 1
        passed = 0
        for path in files:
            failed = {f.test.rsplit("::", 1)[1] for f in failing if f.test_file == path}
            module = next(m for m in _MODULES if m.test_path == path)
            names = [
                name
                for s in _SCENARIOS
                for f in module.functions
                if (name := f"test_{f}_{s}") not in failed
            ]
            for name in [*sorted(failed), *names[:per_file]]:
                status = "FAILED" if name in failed else "PASSED"
                passed += status == "PASSED"
                lines.append(
                    f"{path}::{name} {status}".ljust(72) + f"[{rng.randrange(1, 100):>3}%]"
                )
        if failing:
            lines.append("=" * 35 + " FAILURES " + "=" * 35)
        for finding in failing:
            name = finding.test.rsplit("::", 1)[1]
            lines += [
                f"{'_' * 20} {name} {'_' * 20}",
                "",
                f"    def {name}(invoice_factory):",
                f"        invoice = invoice_factory(region={rng.choice(_REGIONS)!r})",
                f">       assert invoice.{finding.function}() == expected",
                "",
                f"{finding.where}: in {finding.function}",
                f"    {finding.old}",
                f"E   {finding.error}",
            ]
        lines.append("=" * 27 + " short test summary info " + "=" * 28)
        lines += [f"FAILED {f.test} - {f.error.split(':', 1)[0]}" for f in failing]
        verdict = f"{len(failing)} failed, {passed} passed" if failing else f"{passed} passed"
        lines.append(f"{verdict} in {rng.uniform(1.5, 9.5):.2f}s")
        return "\n".join(lines)

    # --- the project's files --------------------------------------------------------------------

    def _source(self, path: str) -> list[str]:
        """The file's lines as they are now (edits change them); rendered on first use."""
        if path not in self.sources:
            self.sources[path] = _render_file(path, random.Random(f"{self.shape.seed}:{path}"))
        return self.sources[path]

    def _line_of(self, module: _Module, function: str) -> int:
        return next(
            number
            for number, line in enumerate(self._source(module.path), 1)
            if line.startswith(f"def {function}(")
        )


_AVERAGE_LINE_CHARS = 46
# What a turn costs besides its sizable tool results, before the session has shown it.
_USUAL_TURN_TOKENS = 400
