"""The strategies, each one module declaring everything about it (its class and its ``SPEC``),
and the registry of them: the specs in the order people read them, looked up by either name.

Adding a strategy is a module here with its class, its keys and its ``SPEC``, one line in
``STRATEGY_SPECS``, and its keys' model among ``GCConfig``'s bases (``gcengine.config``), so
that a policy's type names every key.
"""

from __future__ import annotations

import copy
from typing import Any

from gcengine.gc.strategy import Strategy
from gcengine.strategies import budget, hybrid, reachability, summarize, truncate
from gcengine.strategies.spec import StrategySpec

STRATEGY_SPECS: tuple[StrategySpec, ...] = (
    truncate.SPEC,
    summarize.SPEC,
    hybrid.SPEC,
    budget.SPEC,
    reachability.SPEC,
)
DEFAULT_STRATEGY = truncate.SPEC
"""JAATO's: a ``gc.json`` that names no strategy truncates."""
NEW_POLICY_STRATEGY = budget.SPEC
"""The strategy a new policy starts from: the policy-aware one."""

ENGINE_STRATEGIES: dict[str, type[Strategy]] = {spec.name: spec.plugin for spec in STRATEGY_SPECS}
"""The engine's own plugin classes, by plugin name."""

ENGINE_PLUGIN_NAMES: dict[str, StrategySpec] = {
    name: spec
    for spec in STRATEGY_SPECS
    for name in (spec.jaato_plugin, spec.jaato_plugin.removeprefix("gc_"))
}
"""The names each strategy is registered under for JAATO (``gc_gcengine_budget``) and the
``type`` a gc.json gives for it (``gcengine_budget``): the same strategy as ``gc_budget`` here."""

_BY_NAME: dict[str, StrategySpec] = {
    **{spec.name: spec for spec in STRATEGY_SPECS},
    **{spec.short_name: spec for spec in STRATEGY_SPECS},
    **ENGINE_PLUGIN_NAMES,
}


def strategy_spec(name: str) -> StrategySpec:
    """The spec of the strategy named ``gc_budget``, ``budget``, or by its own JAATO plugin name
    (``gc_gcengine_budget``, ``gcengine_budget``); ``KeyError`` for a name
    no strategy of the engine has."""
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(spec.short_name for spec in STRATEGY_SPECS)
        raise KeyError(f"no strategy named {name!r} (known: {known})") from None


def starter_policies() -> dict[str, dict[str, Any]]:
    """The ``gc.json`` files a new installation starts with, by name: the new-policy
    strategy's first (the first is the one to make the default), then the others' in the
    order people read the strategies. A new copy each time."""
    ordered = (NEW_POLICY_STRATEGY, *(s for s in STRATEGY_SPECS if s is not NEW_POLICY_STRATEGY))
    return {
        name: copy.deepcopy(dict(policy))
        for spec in ordered
        for name, policy in spec.starter_policies.items()
    }


__all__ = [
    "DEFAULT_STRATEGY",
    "ENGINE_PLUGIN_NAMES",
    "ENGINE_STRATEGIES",
    "NEW_POLICY_STRATEGY",
    "STRATEGY_SPECS",
    "StrategySpec",
    "starter_policies",
    "strategy_spec",
]
