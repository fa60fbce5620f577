"""What goes wrong in the demo's project, and what the user asks along the way: the failures
the agent finds, fixes and verifies, and the names (message ids, call ids, times) it writes."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from gcengine.demo.project import (
    _CURRENCY,
    _DISCOUNTS,
    _MODULES,
    _REGIONS,
    _SCENARIOS,
    _TAX,
    _VARIABLES,
    _Module,
)
from gcengine.demo.shape import STARTED_AT

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
