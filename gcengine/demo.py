"""A realistic coding-agent session, generated: the demo session that teaches.

``gcengine.synthetic`` makes word salad shaped like JAATO's benchmark, which is right for
timing a collector and useless for learning what one does. This module tells a story instead:
an agent asked to fix the failing invoice tests of a Python billing service. It runs the tests,
reads files by line range, greps, edits (one edit in a while misses), asks clarifying questions
and gets answers, fixes one failure after another as new ones are reported by CI and review,
and keeps coming back to earlier files and error codes. Every source of the budget holds
something a policy can act on:

* system: the base, client and framework instructions and a pinned reference (locked);
* plugin: tool schemas, core (locked), discovered (ephemeral), and a formatter (preservable);
* enrichment: retrieved memories and documentation (ephemeral);
* conversation: the original request (locked), clarification questions and answers
  (preservable, recorded as JAATO's ``clarification_q`` / ``clarification_a``), tool work
  (ephemeral), and the closing answers of tool loops (preservable);
* thinking: the reasoning tokens of each turn.

The result is a JAATO 2.1 session file as the engine writes one (``dump_session``): JAATO's
fields, with the per-message ``budget_state`` JAATO records, and what 2.1 has no field for
(system instructions, the plugin and enrichment budget) under ``metadata["gcengine"]``.
Content is templated with seeded choices: the same shape gives the same file, byte for byte.
File sizes are fitted as the session goes so that it ends near ``fill_percent`` of the
model's window, where every policy has something to do.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource, SourceEntry
from gcengine.context_limits import context_limit_for_model
from gcengine.errors import ConfigError
from gcengine.formats.jaato import ENGINE_METADATA_KEY, WRITTEN_VERSION

WORKSPACE = "/home/dev/billing-service"
STARTED_AT = datetime(2026, 3, 2, 9, 12, tzinfo=UTC)


@dataclass(frozen=True)
class DemoShape:
    """What to generate: how many turns, for which model, how full its window ends up."""

    turns: int = 240
    model: str = "claude-sonnet-4"
    fill_percent: float = 85.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.turns < 1:
            raise ConfigError(f"a session needs at least one turn, not {self.turns}", "turns")
        if context_limit_for_model(self.model) is None:
            raise ConfigError(
                f"no known context window for {self.model!r}; pick a model the engine knows "
                "(gcengine.context_limits)",
                "model",
            )
        if not 0 < self.fill_percent <= 100:
            raise ConfigError(
                f"must be above 0 and at most 100, not {self.fill_percent}", "fill_percent"
            )

    @property
    def context_limit(self) -> int:
        limit = context_limit_for_model(self.model)
        assert limit is not None  # checked on construction
        return limit


def generate_demo_session(shape: DemoShape = DemoShape()) -> dict[str, Any]:
    """The session file (a JSON-ready dict) for ``shape``."""
    return _Story(shape).write()


# --- The project the agent works on ------------------------------------------------------------


@dataclass(frozen=True)
class _Module:
    path: str
    test_path: str
    functions: tuple[str, ...]
    subject: str


_MODULES = (
    _Module(
        "src/billing/invoice.py",
        "tests/test_invoice.py",
        ("line_total", "subtotal", "total_with_tax", "apply_discounts", "to_dict", "from_order"),
        "invoice totals",
    ),
    _Module(
        "src/billing/tax.py",
        "tests/test_tax.py",
        ("round_money", "tax_for_line", "rate_for_region", "reverse_charge_applies"),
        "tax rules",
    ),
    _Module(
        "src/billing/currency.py",
        "tests/test_currency.py",
        ("convert", "quantize", "parse_amount", "format_money"),
        "currency conversion",
    ),
    _Module(
        "src/billing/discounts.py",
        "tests/test_discounts.py",
        ("percent_off", "bulk_discount", "stack_discounts", "coupon_value"),
        "discounts",
    ),
    _Module(
        "src/billing/credit_notes.py",
        "tests/test_credit_notes.py",
        ("issue_credit_note", "refund_lines", "remaining_balance"),
        "credit notes",
    ),
    _Module(
        "src/billing/api/routes.py",
        "tests/api/test_routes.py",
        ("create_invoice", "get_invoice", "void_invoice", "preview_totals"),
        "the invoice API",
    ),
)
_INVOICE, _TAX, _CURRENCY, _DISCOUNTS = _MODULES[:4]
_SCENARIOS = (
    "rounds_half_up",
    "handles_zero_quantity",
    "rejects_negative_price",
    "multi_currency",
    "after_credit_note",
    "reverse_charge",
    "bulk_tier_3",
    "empty_invoice",
    "legacy_float_amounts",
    "region_fallback",
    "coupon_and_percent",
    "partial_refund",
)
_VARIABLES = ("amount", "rate", "total", "net", "gross", "line", "discount", "balance", "price")
_REGIONS = ("EU-HR", "EU-SI", "US-WA", "CA-QC", "EU-IE", "UK-NI", "AU-NSW", "EU-MT")

# Tool schemas as the model receives them; the plugin budget counts them (JAATO: JSON, indent 2).
_TOOLS: dict[str, dict[str, Any]] = {
    "read_file": {
        "description": "Read a text file from the workspace and return its lines, numbered "
        "from 1. For files longer than a few hundred lines, pass start_line and end_line and "
        "read the part you need; the result says how many lines the file has, so you can "
        "read on. Binary files are refused. Prefer this tool over `cat` in run_command.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line."},
            },
            "required": ["path"],
        },
    },
    "grep_content": {
        "description": "Search file contents with a regular expression (Python syntax) and "
        "return every match as path, line number and the line's text, at most 200. Use it to "
        "find where a function is defined and called before changing it, and to check that "
        "a name is no longer used after a change. Searches are case-sensitive.",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "A regular expression."},
                "path": {"type": "string", "description": "A file or a directory."},
                "glob": {"type": "string", "description": "Only files matching, e.g. *.py."},
            },
            "required": ["pattern"],
        },
    },
    "list_dir": {
        "description": "List a directory of the workspace: names, sizes and whether each is "
        "a directory. Hidden files and the virtualenv are left out.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Defaults to the root."}},
        },
    },
    "edit_file": {
        "description": "Replace one exact occurrence of old_string with new_string in a "
        "file and return the diff. old_string must occur exactly once, whitespace and "
        "indentation included; if it occurs zero or several times nothing is changed and "
        "the error says so. Include enough surrounding lines to make it unique. An empty "
        "new_string deletes old_string.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string", "description": "Must match exactly once."},
                "new_string": {"type": "string", "description": "The replacement."},
            },
            "required": ["path", "old_string", "new_string"],
        },
    },
    "run_command": {
        "description": "Run a shell command in the workspace root with the project's "
        "virtualenv active and return exit_code, stdout, stderr and duration. Commands "
        "that read from standard input, need the network or run longer than timeout_seconds "
        "are stopped. Use it for tests (pytest), type checks (mypy), linting (ruff) and "
        "read-only git commands.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "A single shell command."},
                "timeout_seconds": {"type": "integer", "default": 120, "maximum": 600},
            },
            "required": ["command"],
        },
    },
    "git_diff": {
        "description": "Show the working tree's changes against HEAD as a unified diff, for "
        "all files or the paths given.",
        "parameters": {
            "type": "object",
            "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
        },
    },
    "web_fetch": {
        "description": "Fetch a public URL and return its text, with HTML reduced to "
        "readable text. Discovered on demand: load it only when the repository and the "
        "retrieved documentation do not answer a question.",
        "parameters": {
            "type": "object",
            "properties": {"url": {"type": "string", "format": "uri"}},
            "required": ["url"],
        },
    },
}


@dataclass(frozen=True)
class _Plugin:
    name: str
    instructions: str
    tools: tuple[str, ...]
    policy: GCPolicy


_PLUGINS = (
    _Plugin(
        "filesystem_query",
        "Use read_file with a line range for large files. Prefer grep_content over reading "
        "whole directories. Paths are relative to the workspace root.",
        ("read_file", "grep_content", "list_dir"),
        GCPolicy.LOCKED,
    ),
    _Plugin(
        "file_edit",
        "Edit with edit_file; old_string must match the file exactly, whitespace included. "
        "Read the lines again after a failed edit instead of guessing.",
        ("edit_file",),
        GCPolicy.LOCKED,
    ),
    _Plugin(
        "cli",
        "run_command runs in the workspace with the project's virtualenv active. Do not run "
        "commands that need network access or that change git history.",
        ("run_command", "git_diff"),
        GCPolicy.LOCKED,
    ),
    _Plugin(
        "web_fetch",
        "Discovered tool: fetch public documentation pages when the repository does not "
        "answer a question.",
        ("web_fetch",),
        GCPolicy.EPHEMERAL,
    ),
    _Plugin(
        "markdown_formatter",
        "Format answers as Markdown: code in fenced blocks with a language, file references "
        "as path:line, lists for steps.",
        (),
        GCPolicy.PRESERVABLE,
    ),
)

_SYSTEM = (
    (
        "base",
        "Base Instructions",
        "You are working in the billing-service repository: Python 3.12, pytest, mypy "
        "--strict and ruff, deployed as a container behind the checkout API. Money is always "
        "decimal.Decimal, never float; amounts are quantized to the currency's minor unit "
        "with CENT from billing.money. Public names exported by src/billing/__init__.py "
        "(Invoice, LineItem, total_with_tax, convert, stack_discounts, issue_credit_note) "
        "are a stable API used by checkout and reporting: do not rename them, remove them "
        "or change their signatures. Database migrations live in migrations/ and are "
        "reviewed by the data team; never edit an applied one.",
    ),
    (
        "client",
        "Client Instructions",
        "The user is a backend engineer on the payments team. Keep answers short and "
        "concrete: show the exact command you ran, quote errors verbatim, and name files as "
        "path:line. Ask before changing a test's expectation, a public signature or a "
        "migration. When you are unsure which behaviour is wanted, ask one precise question "
        "rather than guessing.",
    ),
    (
        "framework",
        "Framework",
        "Work on one step at a time and say what changed after each. When a task needs "
        "several steps, keep the todo list current: mark an item done only when its check "
        "passes. You may call several tools in parallel when they do not depend on each "
        "other, such as reading two files; never edit a file in parallel with reading it. "
        "When a tool fails, read its error and adjust; do not repeat the same call. When a "
        "turn used tools, end it with a short summary of what was done, what was found and "
        "what is left, so that later turns can rely on the summary even after the tool "
        "output has been removed from the context.",
    ),
    (
        "selected_references:contributing",
        "ref: CONTRIBUTING.md",
        "CONTRIBUTING.md (pinned reference).\n"
        "## Checks\nEvery change needs a test that fails without it. Before asking for "
        "review run `pytest -q`, `mypy src --strict` and `ruff check .`; CI runs the same "
        "three and blocks the merge on any failure.\n"
        "## Error codes\nCodes BILL-4000 to BILL-4999 are reserved for invoice validation "
        "and documented in docs/errors.md with what raises them and what the API answers. "
        "Never reuse a retired code; add new ones at the end of their range.\n"
        "## Changelog\nEvery user-visible fix gets a line in CHANGELOG.md under the next "
        "patch version, naming the error code or test it fixes.",
    ),
)

_ENRICHMENT = (
    (
        "memory:rounding-decision",
        "memory: rounding decision",
        "memory",
        "2025-11 decision (finance, payments team): invoice lines are rounded half-up to the "
        "cent one by one and then summed; tax is computed per line on the rounded net. "
        "Banker's rounding was tried in 2.6 and reverted after reconciliation mismatches.",
    ),
    (
        "memory:legacy-amounts",
        "memory: legacy float amounts",
        "memory",
        "Orders imported before 2024 store amounts as floats in amount_raw. Convert them with "
        "Decimal(str(value)), never Decimal(value), or 0.1 becomes "
        "0.1000000000000000055511151231257827.",
    ),
    (
        "docs:python-decimal",
        "docs: decimal.Decimal.quantize",
        "docs",
        "decimal.Decimal.quantize(exp, rounding=None, context=None): return a value equal to "
        "the first operand after rounding and having the exponent of the second operand. "
        "Decimal('1.41421356').quantize(Decimal('1.000')) gives Decimal('1.414'). Unlike "
        "other operations, if the length of the coefficient after the quantize operation "
        "would be greater than precision, then an InvalidOperation is signalled. The "
        "rounding argument, if given, overrides the context's: ROUND_HALF_UP rounds away "
        "from zero on a tie (2.675 becomes 2.68), ROUND_HALF_EVEN rounds a tie to the even "
        "digit (2.675 becomes 2.68, 2.665 becomes 2.66), ROUND_DOWN truncates towards zero. "
        "The default context rounds ROUND_HALF_EVEN.",
    ),
    (
        "docs:billing-errors",
        "docs: docs/errors.md (BILL-40xx)",
        "docs",
        "BILL-4011 amount is not a Decimal. BILL-4012 discount exceeds 100 % of the line. "
        "BILL-4013 unknown tax region. BILL-4020 credit note exceeds the invoice balance. "
        "BILL-4031 currency has no conversion rate for the invoice date.",
    ),
    (
        "system-reminder:todo",
        "system-reminder: todo list",
        "system-reminder",
        "Open todo items: fix failing invoice tests; keep the public API stable; update "
        "CHANGELOG.md for the patch release; run mypy and ruff before the final summary.",
    ),
)


# --- What goes wrong, and what the user asks along the way -------------------------------------


@dataclass(frozen=True)
class _Clarification:
    question: str
    answer: str
    recall: str  # how a later turn refers back to what was agreed


@dataclass
class _Finding:
    """A failure the agent works on: where it shows, what it says, how it gets fixed."""

    code: str
    check: str  # what reports it: pytest, mypy or ruff
    test: str  # the pytest node id (for pytest)
    module: _Module
    function: str
    error: str
    cause: str
    old: str
    new: str
    clarification: _Clarification | None = None
    line: int = 0
    fixed_turn: int | None = None

    @property
    def where(self) -> str:
        return f"{self.module.path}:{self.line}"

    @property
    def place(self) -> str:
        """Where it is, in words: the function, or the imports a linter flags."""
        if self.check == "ruff":
            return f"the imports of {self.where}"
        return f"{self.function} at {self.where}"

    @property
    def indent(self) -> str:
        return "" if self.check == "ruff" else "    "

    @property
    def test_file(self) -> str:
        return self.test.split("::", 1)[0]

    @property
    def name(self) -> str:
        return self.test if self.check == "pytest" else f"{self.check} on {self.module.path}"

    @property
    def command(self) -> str:
        """What reproduces it."""
        if self.check == "pytest":
            return f"pytest {self.test} -q"
        return _LINT_COMMANDS[self.check].format(path=self.module.path)

    @property
    def recheck(self) -> str:
        """What shows it fixed: the whole test file, or the same linter."""
        if self.check == "pytest":
            return f"pytest {self.test_file} -q"
        return self.command


_LINT_COMMANDS = {"mypy": "mypy {path} --strict", "ruff": "ruff check {path}"}


def _opening_findings() -> list[_Finding]:
    """The four failures the original request is about: the tax refactor broke them."""
    return [
        _Finding(
            code="rounding",
            check="pytest",
            test="tests/test_invoice.py::test_total_with_tax_rounds_half_up",
            module=_TAX,
            function="round_money",
            error="AssertionError: assert Decimal('81.58') == Decimal('81.59')",
            cause="round_money now quantizes with ROUND_HALF_EVEN, so 81.585 goes down to "
            "81.58, and the refactor rounds once on the sum instead of per line",
            old="return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)",
            new="return amount.quantize(CENT, rounding=ROUND_HALF_UP)",
            clarification=_Clarification(
                question="docs/billing.md says totals use banker's rounding (ROUND_HALF_EVEN), "
                "but test_total_with_tax_rounds_half_up expects half-up. Which one does "
                "finance expect: round each line half-up and then sum, or sum first and round "
                "once?",
                answer="Round each line half-up, then sum. The doc is out of date; finance "
                "signed that off in November. Please fix docs/billing.md too.",
                recall="per-line half-up rounding, as you confirmed",
            ),
        ),
        _Finding(
            code="TypeError",
            check="pytest",
            test="tests/test_invoice.py::test_multi_currency_invoice",
            module=_CURRENCY,
            function="convert",
            error="TypeError: unsupported operand type(s) for *: 'decimal.Decimal' and 'float'",
            cause="convert multiplies by RATES[currency], and the refactor loads RATES from "
            "JSON as floats",
            old="return amount * RATES[currency]",
            new="return amount * Decimal(str(RATES[currency]))",
            clarification=_Clarification(
                question="Legacy invoices still carry float amounts in amount_raw. Should "
                "convert() accept floats (through Decimal(str(x))), or reject them with "
                "BILL-4011 and fix the callers?",
                answer="Accept them through Decimal(str(x)) for now and log a deprecation "
                "warning; dropping amount_raw is planned for next quarter.",
                recall="accepting legacy floats through Decimal(str(x)) with a warning",
            ),
        ),
        _Finding(
            code="BILL-4013",
            check="pytest",
            test="tests/test_tax.py::test_region_fallback",
            module=_TAX,
            function="rate_for_region",
            error="KeyError: 'EU-HR'",
            cause="rate_for_region indexes TAX_RATES directly; the old code fell back to the "
            "EU default rate and the refactor dropped the fallback",
            old="return TAX_RATES[region]",
            new="return TAX_RATES.get(region) or eu_default_rate(region)",
            clarification=_Clarification(
                question="rate_for_region raises KeyError for 'EU-HR' because Croatia is not "
                "in TAX_RATES. Should unknown EU regions fall back to the EU default rate, or "
                "should the API answer 422 with BILL-4013?",
                answer="Fall back to the EU default and log a warning. A 422 would break "
                "checkout for every new region until someone updates the table.",
                recall="the EU default-rate fallback with a warning",
            ),
        ),
        _Finding(
            code="BILL-4012",
            check="pytest",
            test="tests/test_discounts.py::test_stacked_discounts_cap",
            module=_DISCOUNTS,
            function="stack_discounts",
            error="billing.errors.InvoiceError: [BILL-4012] discount exceeds line total",
            cause="stack_discounts raises as soon as the stacked discounts exceed the line "
            "total instead of capping the line at zero",
            old='raise InvoiceError("BILL-4012", "discount exceeds line total")',
            new='return max(line_total - discount, Decimal("0.00"))',
            clarification=_Clarification(
                question="When stacked discounts exceed the line total, should the line go to "
                "zero, or should we keep raising BILL-4012 as the current code does?",
                answer="Cap the line at zero; never produce a negative line. Keep BILL-4012 "
                "only for a single discount above 100 %.",
                recall="capping stacked discounts at zero and keeping BILL-4012 for single "
                "discounts above 100 %",
            ),
        ),
    ]


_DOMAIN_CODES = (
    ("BILL-4011", "amount is not a Decimal"),
    ("BILL-4020", "credit note exceeds the invoice balance"),
    ("BILL-4031", "currency has no conversion rate for the invoice date"),
    ("BILL-4044", "invoice is already void"),
    ("BILL-4052", "line has no unit price"),
)
_MYPY = (
    ("arg-type", 'Argument 1 to "round_money" has incompatible type "float"; expected "Decimal"'),
    ("return-value", 'Incompatible return value type (got "Decimal | None", expected "Decimal")'),
    ("union-attr", 'Item "None" of "Customer | None" has no attribute "region"'),
)
_UNUSED_IMPORTS = ("import math", "import json", "from typing import cast")
_REPORTS = (
    "CI on the branch is red again: {name} fails with `{error}`.",
    "Review comment from Priya on the PR, {where}: `{error}`. Can you look?",
    "One more from CI: `{error}` in {name}. It passed yesterday.",
)
_TEST_REPORTS = (
    "QA found a problem in {subject}: {name} fails with `{error}` on their data set.",
    "Running the nightly job locally I get `{error}` from {name}.",
)
_GO_AHEAD = (
    "Go ahead and fix it.",
    "Makes sense. Please fix it and rerun the tests.",
    "Agreed, fix it the way you describe.",
    "OK, do it. Keep the change small.",
    "Sounds right. Fix it, then run the test file.",
)
_DIG_IN = (
    "Dig into {function} and tell me what is going on before changing anything.",
    "Can you find the cause? Start with {path}.",
    "Look at {function} in {path} first.",
    "Find out why; don't touch the test yet.",
)
# Questions about an earlier fix: whether it reaches another function, or what it was.
_REACHES = (
    "Going back to the {code} failure from earlier ({where}): does your fix also cover {other}?",
    "Before we ship: the `{error}` we saw in {name}. Could the same thing happen in {other}?",
)
_RECALLS = (
    "The reviewer asks whether the change in {path} for {code} needs a migration. Does it?",
    "Remind me what we changed for {code} in {path}, and why.",
)


def _new_finding(rng: random.Random, domain_codes: Iterator[tuple[str, str]]) -> _Finding:
    """A failure reported later in the session, somewhere in the service."""
    module = rng.choice(_MODULES)
    function = rng.choice(module.functions)
    test = f"{module.test_path}::test_{function}_{rng.choice(_SCENARIOS)}"
    v = rng.choice(_VARIABLES)
    kind = rng.choice(("assertion", "float", "key", "none", "domain", "mypy", "ruff", "http"))
    check, clarification = "pytest", None
    domain = next(domain_codes, None) if kind == "domain" else None
    if kind == "domain" and domain is None:  # every code has been used once
        kind = "assertion"
    if kind == "assertion":
        cents = rng.randrange(1000, 99999)
        code = test.rsplit("::", 1)[1]
        error = (
            f"AssertionError: assert Decimal('{cents // 100}.{cents % 100:02d}') == "
            f"Decimal('{(cents + 1) // 100}.{(cents + 1) % 100:02d}')"
        )
        cause = f"{function} rounds {v} before applying the rate, so it ends a cent off"
        old, new = f"{v} = round_money({v}) * rate", f"{v} = round_money({v} * rate)"
    elif kind == "float":
        code = "TypeError"
        error = "TypeError: unsupported operand type(s) for +: 'decimal.Decimal' and 'float'"
        cause = f"{function} adds a float default from the adjustments table to {v}"
        old = f'{v} = {v} + adjustments.get("{function}", 0.0)'
        new = f'{v} = {v} + Decimal(str(adjustments.get("{function}", 0)))'
    elif kind == "key":
        region = rng.choice(_REGIONS)
        code, error = "KeyError", f"KeyError: '{region}'"
        cause = f"{function} looks up {region} in TAX_RATES, which has no entry for it"
        old, new = "rate = TAX_RATES[region]", "rate = TAX_RATES.get(region, DEFAULT_RATE)"
    elif kind == "none":
        code = "AttributeError"
        error = "AttributeError: 'NoneType' object has no attribute 'quantize'"
        cause = f"{function} gets None for the unit price of a line imported without one"
        old = f"{v} = line.unit_price.quantize(CENT)"
        new = f'{v} = (line.unit_price or Decimal("0")).quantize(CENT)'
    elif domain is not None:
        code, meaning = domain
        error = f"billing.errors.InvoiceError: [{code}] {meaning}"
        cause = f"{function} raises {code} for drafts as well as for finalised invoices"
        old = f'raise InvoiceError("{code}", "{meaning}")'
        new = f'raise_if_final(invoice, "{code}", "{meaning}")'
        clarification = _Clarification(
            question=f"{function} raises {code} ({meaning}) for this case. Is that intended "
            "for drafts too, or only for finalised invoices?",
            answer=f"Only for finalised invoices. Drafts may be inconsistent while someone "
            f"edits them; {code} must not block saving a draft.",
            recall=f"raising {code} only for finalised invoices",
        )
    elif kind == "mypy":
        check = "mypy"
        code, message = rng.choice(_MYPY)
        error = f"error: {message}  [{code}]"
        cause = f"{function} passes a float where mypy expects a Decimal"
        old, new = f"{v} = round_money(float({v}))", f"{v} = round_money({v})"
        if rng.random() < 0.5:
            clarification = _Clarification(
                question=f"mypy reports [{code}] in {module.path}. Fix it properly now, or add "
                "a narrow `# type: ignore` and open a follow-up?",
                answer="Fix it properly. CI runs mypy --strict and we don't merge ignores "
                "without a linked issue.",
                recall="fixing type errors instead of ignoring them",
            )
    elif kind == "ruff":
        check, code = "ruff", "F401"
        old = rng.choice(_UNUSED_IMPORTS)
        error = f"F401 `{old.split()[-1]}` imported but unused"
        cause = "the refactor removed the last use of that import"
        new = ""
    else:
        code = "HTTP 422"
        error = (
            'AssertionError: assert 422 == 201 (response: {"detail": [{"loc": ["body", '
            '"lines", 0, "quantity"], "msg": "Input should be greater than 0"}]})'
        )
        cause = f"{function} validates the quantity before converting it to the base unit"
        old = "if line.quantity <= 0:"
        new = "if convert_units(line.quantity, line.unit) <= 0:"
    return _Finding(
        code=code,
        check=check,
        test=test,
        module=module,
        function=function,
        error=error,
        cause=cause,
        old=old,
        new=new,
        clarification=clarification,
    )


class _Names:
    """Message ids, call ids and times, in the order the session makes them."""

    def __init__(self, seed: int) -> None:
        self._ids = random.Random(f"ids:{seed}")
        self._calls = 0
        self.now = STARTED_AT

    def message_id(self) -> str:
        return str(uuid.UUID(int=self._ids.getrandbits(128), version=4))

    def call_id(self) -> str:
        self._calls += 1
        return f"toolu_{self._calls:05d}"

    def tick(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


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


class _Story:
    """The session turn by turn: the plot (which failure is being worked on), the project's
    files as the agent reads and edits them, and the sizing that lands the session at its
    fill."""

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

    # --- messages -------------------------------------------------------------------------------

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
_AVERAGE_LINE_CHARS = 46
# What a turn costs besides its sizable tool results, before the session has shown it.
_USUAL_TURN_TOKENS = 400


def _role_label(message: dict[str, Any]) -> str:
    """JAATO's label for a message in its budget."""
    if message["role"] == "model":
        return "output (model)"
    if message["role"] == "tool":
        return f"input (tool = {', '.join(sorted({p['name'] for p in message['parts']}))})"
    return "input (external)"


def _plugin_tokens(plugin: _Plugin) -> int:
    """A plugin's instructions and tool schemas (JSON, indent 2), four characters a token."""
    schemas = [{"name": name, **_TOOLS[name]} for name in plugin.tools]
    return (len(plugin.instructions) + len(json.dumps(schemas, indent=2))) // 4


def _plugin_entry() -> SourceEntry:
    created = STARTED_AT.timestamp()
    return SourceEntry(
        source=InstructionSource.PLUGIN,
        gc_policy=GCPolicy.PARTIAL,
        created_at=created,
        children={
            plugin.name: SourceEntry(
                source=InstructionSource.PLUGIN,
                tokens=_plugin_tokens(plugin),
                gc_policy=plugin.policy,
                label=plugin.name,
                metadata={"tools": list(plugin.tools)} if plugin.tools else {},
                created_at=created,
            )
            for plugin in _PLUGINS
        },
    )


def _enrichment_entry(retrieved_at: float) -> SourceEntry:
    """What was retrieved for the latest request, as the framework injected it."""
    return SourceEntry(
        source=InstructionSource.ENRICHMENT,
        gc_policy=GCPolicy.EPHEMERAL,
        created_at=retrieved_at,
        children={
            key: SourceEntry(
                source=InstructionSource.ENRICHMENT,
                tokens=len(text) // 4,
                gc_policy=GCPolicy.EPHEMERAL,
                label=label,
                metadata={"kind": kind, "text": text},
                created_at=retrieved_at,
            )
            for key, label, kind, text in _ENRICHMENT
        },
    )


def _iso(moment: datetime) -> str:
    """JAATO's naive ISO times."""
    return moment.replace(tzinfo=None).isoformat()


# --- Source files, rendered ----------------------------------------------------------------------

_IMPORTS = (
    "from __future__ import annotations",
    "",
    "import logging",
    "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal",
    "",
    "from billing.errors import InvoiceError, raise_if_final",
    "from billing.models import Customer, Invoice, LineItem",
    "",
    "logger = logging.getLogger(__name__)",
    'CENT = Decimal("0.01")',
    'DEFAULT_RATE = Decimal("0.20")',
    "",
)
_HELPERS = (
    "normalise_amount",
    "validate_lines",
    "lines_for",
    "rate_table",
    "quantize_all",
    "log_totals",
    "as_decimal",
    "apply_rule",
    "currency_of",
    "check_region",
    "split_net_gross",
    "rounding_for",
    "minor_units",
    "issued_period",
)
_STATEMENTS = (
    "{a} = Decimal(str({b}))",
    "{a} = {a}.quantize(CENT, rounding=ROUND_HALF_UP)",
    "{a} = {b} * rate",
    '{a} = sum(({f}(item) for item in invoice.lines), Decimal("0.00"))',
    'logger.debug("%s: %s -> %s", "{f}", {b}, {a})',
    'if {b} is None:\n    return Decimal("0.00")',
    'if {a} < 0:\n    raise InvoiceError("BILL-4011", "negative {a}")',
    "rate = TAX_RATES.get(region, DEFAULT_RATE)",
    "for item in invoice.lines:\n    {a} += {f}(item)",
    '{a} = max({a} - {b}, Decimal("0.00"))',
    "if customer.reverse_charge:\n    return {a}",
    "{a} = convert({a}, invoice.currency, at=invoice.issued_on)",
)


def _render_file(path: str, rng: random.Random) -> list[str]:
    """Plausible Python for a module of the service, or Markdown for a document."""
    module = next((m for m in _MODULES if m.path == path), None)
    if path == "docs/errors.md":
        lines = ["# Error codes", ""]
        for code, meaning in (*_DOMAIN_CODES, ("BILL-4012", "discount exceeds line total")):
            lines += [
                f"## {code}",
                "",
                f"{meaning.capitalize()}. Raised by "
                f"{rng.choice(_MODULES).path}; the API answers 422.",
                "",
            ]
        return lines
    if path == "docs/billing.md":
        lines = ["# Billing", ""]
        for each in _MODULES:
            lines += [f"## {each.subject.capitalize()}", ""]
            lines += [f"`{f}` is documented in {each.path}." for f in each.functions]
            lines.append("")
        return lines
    if module is None:
        lines = [f"# {path.rsplit('/', 1)[-1]}", ""]
        for minor in range(8, 0, -1):
            lines += [f"## 2.{minor}.0", ""]
            lines += [
                f"- {rng.choice(('Fix', 'Add', 'Document', 'Speed up'))} "
                f"{rng.choice(_MODULES).subject} ({rng.choice(_SCENARIOS).replace('_', ' ')})."
                for _ in range(rng.randrange(2, 6))
            ]
            lines.append("")
        return lines
    lines = [f'"""{module.subject.capitalize()} for billing-service."""', "", *_IMPORTS]
    if module is _TAX:
        lines.append("TAX_RATES: dict[str, Decimal] = {")
        lines += [f'    "{r}": Decimal("0.{rng.randrange(5, 27):02d}"),' for r in _REGIONS[2:6]]
        lines += ["}", ""]
    helpers = [f"_{name}" for name in rng.sample(_HELPERS, 9)]
    for function in (*module.functions, *helpers):
        a, b = rng.sample(_VARIABLES, 2)
        lines += ["", f'def {function}({b}: Decimal, *, region: str = "EU") -> Decimal:']
        lines.append(f'    """{function.replace("_", " ").capitalize()}, to the cent."""')
        lines.append(f'    {a} = Decimal("0.00")')
        for _ in range(rng.randrange(8, 16)):
            called = rng.choice((*module.functions, *helpers))
            statement = rng.choice(_STATEMENTS).format(a=a, b=b, f=called)
            lines += [f"    {part}" for part in statement.splitlines()]
        lines.append(f"    return {a}")
    return lines
