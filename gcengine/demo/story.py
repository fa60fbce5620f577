"""The demo session turn by turn: the plot (which failure is being worked on, when the agent
refers back, reports status or does a chore), and the JAATO file it is written as."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource, SourceEntry
from gcengine.demo.findings import (
    _DIG_IN,
    _GO_AHEAD,
    _REACHES,
    _RECALLS,
    _REPORTS,
    _TEST_REPORTS,
    _Finding,
    _new_finding,
    _opening_findings,
)
from gcengine.demo.project import _INVOICE, _SYSTEM, _enrichment_entry, _plugin_entry
from gcengine.demo.shape import STARTED_AT, WORKSPACE, DemoShape
from gcengine.demo.writer import _estimate, _jaato_figure, _Turn, _Writer
from gcengine.formats.jaato import ENGINE_METADATA_KEY, WRITTEN_VERSION

_DEFAULT_SHAPE = DemoShape()  # frozen: one value serves every call


def generate_demo_session(shape: DemoShape = _DEFAULT_SHAPE) -> dict[str, Any]:
    """The session file (a JSON-ready dict) for ``shape``."""
    return _Story(shape).write()


class _Story(_Writer):
    """The session turn by turn: the plot (which failure is being worked on), the turns it
    makes, and the file they are written as."""

    def write(self) -> dict[str, Any]:
        plot = self._plot()
        for _ in range(self.shape.turns):
            turn = _Turn()
            self.turns.append(turn)
            next(plot)(turn)
        return self._file()

    # --- the plot -------------------------------------------------------------------------------

    def _plot(self) -> Iterator[Callable[[_Turn], None]]:
        """The turn makers, in story order; the story never runs out."""
        opening = _opening_findings()
        for finding in opening:
            self._plant(finding)
        self.open = list(opening)
        yield self._original_request
        for finding in opening:
            yield from self._work_on(finding)
        while True:
            roll = self.rng.random()
            if roll < 0.14 and self.fixed:
                yield self._refer_back
            elif roll < 0.22:
                yield self._status
            elif roll < 0.30:
                yield self._chore
            else:
                finding = _new_finding(self.rng, self.domain_codes)
                self._plant(finding)
                yield partial(self._report, finding)
                yield from self._work_on(finding)

    def _work_on(self, finding: _Finding) -> Iterator[Callable[[_Turn], None]]:
        """Investigate (maybe asking a question), fix and verify one failure."""
        yield partial(self._investigate, finding)
        yield partial(self._fix, finding)
        if self.rng.random() < 0.45:
            yield self._verify
        if self.rng.random() < 0.25:
            yield self._refer_back

    def _plant(self, finding: _Finding) -> None:
        """Put the faulty line where it belongs (a return last in its function, an unused
        import among the imports), so reading the file shows it."""
        source = self._source(finding.module.path)
        start = self._line_of(finding.module, finding.function)
        if finding.check == "ruff":
            finding.line = source.index("") + 1  # the blank line after the docstring
        elif finding.old.startswith("return"):
            finding.line = start + next(
                n for n, line in enumerate(source[start:], 1) if line.startswith("    return")
            )
        else:
            finding.line = start + self.rng.randrange(3, 7)
        source[finding.line - 1] = f"{finding.indent}{finding.old}"

    # --- the turns ------------------------------------------------------------------------------

    def _original_request(self, turn: _Turn) -> None:
        self._user(
            turn,
            "The invoice tests in billing-service have been failing since the tax refactor "
            "(PR #412) was merged. Please find out why and fix the code, not the tests, unless "
            "a test is plainly wrong. Keep the public API of src/billing/invoice.py stable: "
            "checkout and reporting import Invoice and total_with_tax. The check is "
            "`pytest -q`; CI also runs mypy --strict and ruff.",
        )
        self._tool_loop(
            turn,
            self._run(
                turn,
                "pytest -q",
                self.open,
                text="I'll run the suite first to see what fails.",
                thought="Start with the whole suite: how many failures, and do they share a cause?",
            ),
        )
        start = self._line_of(_INVOICE, "total_with_tax")
        self._tool_loop(
            turn,
            self._read(turn, _INVOICE.path, start, 0, text="Now the entry point the tests use."),
        )
        failures = "\n".join(f"- `{f.test}`: `{f.error}` ({f.where})" for f in self.open)
        self._answer(
            turn,
            f"{len(self.open)} tests fail, all in code the refactor touched:\n{failures}\n\n"
            "total_with_tax in src/billing/invoice.py only delegates to src/billing/tax.py, so "
            "the rounding failure starts there. I'll take them one at a time, rounding first.",
        )

    def _report(self, finding: _Finding, turn: _Turn) -> None:
        self.open.append(finding)
        self._user(
            turn,
            self.rng.choice(
                _REPORTS + _TEST_REPORTS if finding.check == "pytest" else _REPORTS
            ).format(
                name=finding.name,
                error=finding.error,
                where=finding.where,
                subject=finding.module.subject,
            ),
        )
        self._tool_loop(
            turn,
            self._run(
                turn,
                finding.command,
                [finding],
                text="Reproducing it first.",
                thought=f"Run exactly what failed: {finding.command}.",
            ),
        )
        self._answer(
            turn,
            f"Reproduced: `{finding.error}`, from {finding.place}. {self._related(finding)}",
        )

    def _investigate(self, finding: _Finding, turn: _Turn) -> None:
        self._user(
            turn,
            self.rng.choice(_DIG_IN).format(function=finding.function, path=finding.module.path),
        )
        self._tool_loop(
            turn,
            self._read(
                turn,
                finding.module.path,
                finding.line - self.rng.randrange(8, 20),
                0,
                through=finding.line + 3,
                text=f"Reading {finding.module.path} around line {finding.line}.",
                thought=f"The error comes from {finding.where}; read the function around it, "
                "then check who calls it.",
            ),
        )
        if finding.check != "ruff" and self.rng.random() < 0.6:
            self._tool_loop(turn, self._grep(turn, finding.function))
        explanation = (
            f"The cause: {finding.cause}. The line is {finding.where}:\n\n"
            f"```python\n{finding.old}\n```\n\n"
        )
        if finding.clarification is not None:
            turn.clarification_q = len(turn.messages)
            self._answer(turn, explanation + finding.clarification.question)
        elif finding.check == "pytest":
            self._answer(
                turn,
                explanation + f"I'd change it to `{finding.new}`; {finding.test} covers it.",
            )
        else:
            change = f"change it to `{finding.new}`" if finding.new else "remove it"
            self._answer(turn, explanation + f"I'd {change} and rerun {finding.check}.")

    def _fix(self, finding: _Finding, turn: _Turn) -> None:
        if finding.clarification is not None:
            turn.clarification_a = len(turn.messages)
            self._user(turn, finding.clarification.answer)
        else:
            self._user(turn, self.rng.choice(_GO_AHEAD))
        if self.rng.random() < 0.2:  # the edit misses: the line is not what the model assumed
            self._tool_loop(turn, self._edit(turn, finding, missed=True))
            self._tool_loop(
                turn,
                self._read(
                    turn,
                    finding.module.path,
                    finding.line - 3,
                    8,
                    text="The edit did not match; reading the exact lines again.",
                ),
            )
        self._tool_loop(turn, self._edit(turn, finding, missed=False))
        self._source(finding.module.path)[finding.line - 1] = (
            f"{finding.indent}{finding.new}" if finding.new else ""
        )
        self.open.remove(finding)
        self._tool_loop(
            turn, self._run(turn, finding.recheck, [], text=f"Rerunning `{finding.recheck}`.")
        )
        finding.fixed_turn = len(self.turns) - 1
        self.fixed.append(finding)
        agreed = f" This follows {finding.clarification.recall}." if finding.clarification else ""
        self._answer(
            turn,
            f"Fixed {finding.code} in {finding.place}.{agreed} "
            f"`{finding.recheck}` passes now. {self._left()}",
        )

    def _verify(self, turn: _Turn) -> None:
        ask = self.rng.choice(
            (
                "Run the whole suite again, please.",
                "Let's see the full test run before we go on.",
                "Full suite, and mypy too?",
            )
        )
        self._user(turn, ask)
        self._tool_loop(turn, self._run(turn, "pytest -q", self.open, text="The full suite:"))
        if "mypy" in ask:
            self._tool_loop(
                turn,
                self._run(turn, "mypy src/billing --strict", self.open, text="And mypy."),
            )
        self._answer(turn, f"The full suite ran. {self._left()}")

    def _refer_back(self, turn: _Turn) -> None:
        if not self.fixed:
            self._status(turn)
            return
        earlier = self.rng.choice(self.fixed)
        other = self.rng.choice([f for f in earlier.module.functions if f != earlier.function])
        reaches = self.rng.random() < 0.5
        self._user(
            turn,
            self.rng.choice(_REACHES if reaches else _RECALLS).format(
                code=earlier.code,
                where=earlier.where,
                other=other,
                error=earlier.error,
                name=earlier.name,
                path=earlier.module.path,
            ),
        )
        if reaches:
            self._tool_loop(turn, self._grep(turn, other, path=earlier.module.path))
        self._tool_loop(
            turn,
            self._read(
                turn,
                earlier.module.path,
                earlier.line - 6,
                0,
                through=earlier.line,
                text=f"The lines we changed for {earlier.code}.",
            ),
        )
        agreed = f" It implements {earlier.clarification.recall}." if earlier.clarification else ""
        verdict = (
            f"{other} does not go through that line, so it is not affected."
            if reaches
            else "No migration is needed: only how amounts are computed changed, not what is "
            "stored."
        )
        self._answer(
            turn,
            f"In turn {earlier.fixed_turn} we fixed {earlier.code} ({earlier.name}) in "
            f"{earlier.place}, because {earlier.cause}.{agreed} {verdict}",
        )

    def _status(self, turn: _Turn) -> None:
        self._user(
            turn,
            self.rng.choice(
                (
                    "Where are we? What's fixed and what's left?",
                    "Quick status, please.",
                    "Summarize what you've changed so far.",
                )
            ),
        )
        latest = self.fixed[-6:]
        done = (
            "Fixed so far, latest last:\n"
            + "\n".join(
                f"- {f.code} at {f.where} ({f.function}), turn {f.fixed_turn}" for f in latest
            )
            if latest
            else "Nothing is fixed yet."
        )
        self._answer(turn, f"{done}\n\n{self._left()}")

    def _chore(self, turn: _Turn) -> None:
        path, ask = self.rng.choice(
            (
                ("CHANGELOG.md", "Add the fixes so far to CHANGELOG.md under 2.8.1."),
                ("docs/billing.md", "Update docs/billing.md so it says what the code does now."),
                ("docs/errors.md", "Note in docs/errors.md what changed for the codes we touched."),
            )
        )
        self._user(turn, ask)
        self._tool_loop(turn, self._read(turn, path, 1, 0, text=f"Reading {path}."))
        recent = list({f.code: f for f in self.fixed[-8:]}.values())
        source = self._source(path)
        old = next(line for line in source if line.startswith("## "))
        if path == "CHANGELOG.md":
            lines = "".join(f"- Fix {f.code} in {f.module.path} ({f.function}).\n" for f in recent)
            below = "" if old == "## 2.8.1" else f"\n{old}"
            new = f"## 2.8.1\n\n{lines or '- Nothing yet.\n'}{below}"
        else:
            notes = " ".join(f"{f.code}: {f.cause}." for f in recent[-3:])
            new = f"{old}\n\nSince 2.8.1. {notes or 'No changes yet.'}"
        args = {"path": path, "old_string": old, "new_string": new}
        self._tool_loop(
            turn,
            self._calling(
                turn,
                f"Updating {path}.",
                None,
                [("edit_file", args, {"path": path, "replacements": 1}, False)],
            ),
        )
        at = source.index(old)
        source[at : at + 1] = new.splitlines()
        codes = ", ".join(f.code for f in recent) or "nothing yet"
        self._answer(turn, f"Updated {path} for what we fixed: {codes}.")

    def _related(self, finding: _Finding) -> str:
        """What an earlier fix in the same file has to do with this one."""
        earlier = [f for f in self.fixed if f.module is finding.module]
        if not earlier:
            return f"Nothing else in {finding.module.path} has failed so far."
        last = earlier[-1]
        return (
            f"Same file as {last.code}, fixed in turn {last.fixed_turn} at {last.where}; I'll "
            "check the two are not related."
        )

    def _left(self) -> str:
        if not self.open:
            return "Nothing else is failing."
        return "Still failing: " + "; ".join(f"{f.code} ({f.name})" for f in self.open) + "."

    # --- the file -------------------------------------------------------------------------------

    def _file(self) -> dict[str, Any]:
        history: list[dict[str, Any]] = []
        accounting: list[dict[str, Any]] = []
        leaves: dict[str, SourceEntry] = {}
        prompt = self.outside_tokens
        for number, turn in enumerate(self.turns, 1):
            start = self.names.tick(self.rng.uniform(20, 240))
            for position, message in enumerate(turn.messages):
                at = self.names.tick(self.rng.uniform(1, 25))
                turn_type = (
                    "original_request"
                    if not history
                    else "clarification_q"
                    if position == turn.clarification_q
                    else "clarification_a"
                    if position == turn.clarification_a
                    else "working"
                )
                leaves[f"msg_{len(history)}"] = SourceEntry(
                    source=InstructionSource.CONVERSATION,
                    tokens=_jaato_figure(message),
                    gc_policy=_TURN_TYPE_POLICIES[turn_type],
                    label=f"turn_{number} {_role_label(message)}",
                    metadata={"turn_type": turn_type} if turn_type != "working" else {},
                    created_at=at.timestamp(),
                    message_ids=[message["message_id"]],
                )
                history.append(message)
                prompt += _estimate(message)
            output = sum(_jaato_figure(m) for m in turn.messages if m["role"] == "model")
            accounting.append(
                {
                    "prompt": prompt,
                    "output": output,
                    "total": prompt + output,
                    "start_time": _iso(start),
                    "end_time": _iso(self.names.now),
                    "duration_seconds": round((self.names.now - start).total_seconds(), 3),
                    "function_calls": [
                        {
                            "name": name,
                            "start_time": _iso(start),
                            "end_time": _iso(start + timedelta(seconds=seconds)),
                            "duration_seconds": seconds,
                        }
                        for name, seconds in turn.calls
                    ],
                    "cache_read": prompt * 4 // 5,
                    "cache_creation": 0,
                    "thinking": turn.thinking_tokens,
                }
            )
        conversation = SourceEntry(
            source=InstructionSource.CONVERSATION,
            gc_policy=GCPolicy.PARTIAL,
            created_at=STARTED_AT.timestamp(),
            children=leaves,
        )
        recorded = InstructionBudget(
            session_id=STARTED_AT.strftime("%Y%m%d_%H%M%S"),
            agent_type="main",
            context_limit=self.shape.context_limit,
            entries={
                InstructionSource.PLUGIN: _plugin_entry(),
                InstructionSource.ENRICHMENT: _enrichment_entry(self.names.now.timestamp()),
                InstructionSource.CONVERSATION: conversation,
                InstructionSource.THINKING: SourceEntry(
                    source=InstructionSource.THINKING,
                    tokens=sum(t.thinking_tokens for t in self.turns),
                    gc_policy=GCPolicy.EPHEMERAL,
                    created_at=STARTED_AT.timestamp(),
                ),
            },
        )
        engine_view = {
            "source_format": "jaato",
            "format_version": WRITTEN_VERSION,
            "model": self.shape.model,
            "system_instructions": [
                {"key": key, "label": label, "text": text} for key, label, text in _SYSTEM
            ],
            "recorded_budget": recorded.snapshot(),
            "recorded_prompt_tokens": prompt,
            "warnings": [],
        }
        return {
            "version": WRITTEN_VERSION,
            "session_id": recorded.session_id,
            "description": "Fix the failing invoice tests in billing-service",
            "created_at": _iso(STARTED_AT),
            "updated_at": _iso(self.names.now),
            "turn_count": len(self.turns),
            "turn_accounting": accounting,
            "user_inputs": self.user_inputs,
            "metadata": {ENGINE_METADATA_KEY: engine_view},
            "connection": {"project": None, "location": None, "model": self.shape.model},
            "workspace_path": WORKSPACE,
            "history": history,
            "budget_state": conversation.to_dict(),
            "interrupted_turn": None,
        }


# JAATO's ConversationTurnType defaults (DEFAULT_TURN_POLICIES).
_TURN_TYPE_POLICIES = {
    "original_request": GCPolicy.LOCKED,
    "clarification_q": GCPolicy.PRESERVABLE,
    "clarification_a": GCPolicy.PRESERVABLE,
    "working": GCPolicy.EPHEMERAL,
}
# About what a numbered line of the rendered files costs in a result (``str()`` of the dict).


def _role_label(message: dict[str, Any]) -> str:
    """JAATO's label for a message in its budget."""
    if message["role"] == "model":
        return "output (model)"
    if message["role"] == "tool":
        return f"input (tool = {', '.join(sorted({p['name'] for p in message['parts']}))})"
    return "input (external)"


def _iso(moment: datetime) -> str:
    """JAATO's naive ISO times."""
    return moment.replace(tzinfo=None).isoformat()
