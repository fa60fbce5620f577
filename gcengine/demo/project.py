"""The project the demo's agent works on: the billing service's modules and scenarios, the
agent's tools, plugins, system instructions and retrieved documents, and the source files as
the agent reads them (rendered from seeded choices)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from gcengine.budget import GCPolicy, InstructionSource, SourceEntry
from gcengine.demo.shape import STARTED_AT

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
# The errors the project's own code raises (billing/errors.py), by code.
_DOMAIN_CODES = (
    ("BILL-4011", "amount is not a Decimal"),
    ("BILL-4020", "credit note exceeds the invoice balance"),
    ("BILL-4031", "currency has no conversion rate for the invoice date"),
    ("BILL-4044", "invoice is already void"),
    ("BILL-4052", "line has no unit price"),
)

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
