"""The table of gc.json keys: complete, in step with the loader and the dump, and truthful.

Every page that shows or edits a policy reads this table, so what it says about a key (its
default, its kind of value, which strategies read it) must be what the engine does.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import gcengine
from gcengine import (
    GC_JSON_ALIASES,
    GC_JSON_FIELDS,
    GC_STRATEGIES,
    PLUGIN_CONFIG_FIELDS,
    ApproxCounter,
    ConfigError,
    GCConfig,
    GCJsonField,
    dump_gc_config,
    load_gc_config,
)
from gcengine.running import discover_gc_plugins
from gcengine.strategies import ENGINE_STRATEGIES
from gcengine.synthetic import SessionShape, generate_session_file

FIELDS = {field.key: field for field in GC_JSON_FIELDS}
STRATEGY_NAMES = [strategy.name for strategy in GC_STRATEGIES]


def load(data: dict[str, Any]) -> GCConfig:
    return load_gc_config(data, env={})


def test_every_config_field_has_exactly_one_row() -> None:
    assert sorted(field.attribute for field in GC_JSON_FIELDS) == sorted(GCConfig.model_fields)
    assert len(FIELDS) == len(GC_JSON_FIELDS)


def test_defaults_are_the_configs_and_what_a_gc_json_without_the_key_gets() -> None:
    bare = load({})
    for field in GC_JSON_FIELDS:
        assert field.default == getattr(GCConfig(), field.attribute), field.key
        assert field.default == getattr(bare, field.attribute), field.key
    assert FIELDS["threshold_percent"].default == 80
    assert FIELDS["pressure_percent"].default == 90
    pins = FIELDS["pinned_turn_indices"]
    assert pins.default is not pins.default, "a list default is a new list each time"


def test_the_dump_writes_keys_in_the_tables_order() -> None:
    every_key_set = load(
        {
            "type": "hybrid",
            "rules": "jaato",
            "preserve_recent_exchanges": 20,
            "max_turns": 40,
            "pinned_turn_indices": [3],
            "pinned_message_ids": ["m"],
            "notification_template": "{truncated}",
            "noop_notification_template": "{total}",
            "summarize_middle_turns": 4,
            "max_summary_tokens": 800,
            "roots": {"recent_turns": 4},
            "weights": {"recency": 1},
            "action": "auto",
            "incremental": True,
            "batch_size": 12,
            "agent_name": "reviewer",
            "plugin_config": {"keep": 1},
        }
    )
    assert list(dump_gc_config(every_key_set)) == list(FIELDS)
    sparse = list(dump_gc_config(load({})))
    assert sparse == [key for key in FIELDS if key in sparse]


def test_the_loader_knows_the_tables_keys_and_continuous_mode() -> None:
    with pytest.raises(ConfigError) as raised:
        load({"colour": "red"})
    listed = str(raised.value).split("known keys: ")[1].rstrip(")").split(", ")
    assert sorted(listed) == sorted([*FIELDS, "continuous_mode"])


def test_aliases_name_keys_of_the_table_and_the_loader_speaks_them() -> None:
    assert set(GC_JSON_ALIASES.values()) <= set(FIELDS)
    assert load({"plugin": "gc_budget", "config": {}}).plugin == "gc_budget"
    assert load({"continuous_mode": True}).pressure_percent is None
    for data in (
        {"plugin": "budget", "config": {"type": "truncate"}},
        {"plugin": "budget", "config": {"plugin": "truncate"}},
        {"type": "budget", "pressure_percent": 80, "continuous_mode": True},
    ):
        with pytest.raises(ConfigError) as raised:
            load(data)
        assert raised.value.key in GC_JSON_ALIASES


def test_the_strategy_table_is_the_strategies_the_engine_registers() -> None:
    assert list(ENGINE_STRATEGIES) == STRATEGY_NAMES
    with pytest.raises(ValidationError):
        GCConfig(plugin="gc_fifo")  # a policy names a strategy of the engine
    assert set(STRATEGY_NAMES) <= set(discover_gc_plugins())
    assert [s.label for s in GC_STRATEGIES] == [n.removeprefix("gc_") for n in STRATEGY_NAMES]
    assert FIELDS["type"].choices == tuple(STRATEGY_NAMES)
    for field in (*GC_JSON_FIELDS, *PLUGIN_CONFIG_FIELDS):
        assert set(field.strategies) <= set(STRATEGY_NAMES), field.key
        assert field.help.endswith("."), field.key


# A value of the wrong kind for each kind: the loader must refuse it, naming the key.
WRONG_FOR_KIND: dict[str, Any] = {
    "choice": "fifo",
    "percent": 101,
    "whole_number": 1.5,
    "flag": "yes",
    "text": 5,
    "turn_list": ["first"],
    "id_list": [1],
    "object": [],
}


@pytest.mark.parametrize("field", GC_JSON_FIELDS, ids=lambda f: f.key)
def test_each_kind_is_the_kind_of_value_the_loader_accepts(field: GCJsonField) -> None:
    with pytest.raises(ConfigError) as raised:
        load({field.key: WRONG_FOR_KIND[field.kind]})
    assert raised.value.key == field.key


# --- Which strategies read a key ------------------------------------------------------------

# For a key, values that would change a strategy's collection if it read the key.
VARIANTS: dict[str, list[Any]] = {
    "rules": ["jaato"],
    "noop_notification_template": ["Nothing went: {total} turns, {preserve} kept."],
    "summarize_middle_turns": [0, 1, 3, 50],
    "max_summary_tokens": [1, 8, 5_000],
    "roots": [{"recent_turns": 0, "current_task": False}, {"recent_turns": 12}],
    "weights": [{"recency": 0, "generation": 5}, {"importance": 1, "refcount": 0}],
    "action": ["delete", "auto"],
    "incremental": [True],
    "batch_size": [5, 20],
    "agent_name": ["someone else"],
}
SUMMARIZER = PLUGIN_CONFIG_FIELDS[0]


def unread(field: GCJsonField) -> list[str]:
    return [name for name in STRATEGY_NAMES if name not in field.strategies]


def test_every_key_some_strategy_ignores_has_variants_here() -> None:
    assert {f.key for f in GC_JSON_FIELDS if unread(f)} == set(VARIANTS)


def session(turns: int, seed: int, usage: int) -> gcengine.Session:
    counter = ApproxCounter()
    loaded = gcengine.load_session(
        generate_session_file(SessionShape(turns=turns, seed=seed)), counter=counter
    )
    limit = max(1, loaded.budget.total_tokens() * 100 // usage)
    loaded = loaded.model_copy(update={"context_limit": limit})
    loaded.budget = gcengine.rebuild_budget(loaded, counter)
    return loaded


def what_it_does(session: gcengine.Session, config: GCConfig) -> tuple[Any, ...]:
    """Everything a strategy's work shows: a run's result and history, and a replay."""
    outcome = gcengine.run_gc(session, config)
    return outcome.result, outcome.session.history, gcengine.simulate(session, config)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    turns=st.integers(min_value=4, max_value=30),
    seed=st.integers(min_value=0, max_value=1_000),
    usage=st.integers(min_value=50, max_value=150),
    preserve=st.integers(min_value=0, max_value=40),
    notify=st.booleans(),
    continuous=st.booleans(),
    data=st.data(),
)
def test_a_key_a_strategy_does_not_read_never_changes_what_it_does(
    turns: int,
    seed: int,
    usage: int,
    preserve: int,
    notify: bool,
    continuous: bool,
    data: st.DataObject,
) -> None:
    generated = session(turns, seed, usage)
    base: dict[str, Any] = {
        "threshold_percent": 70,
        "target_percent": 40,
        "pressure_percent": 0 if continuous else 90,
        "preserve_recent_turns": preserve,
        "notify_on_gc": notify,
    }
    done = {name: what_it_does(generated, load({**base, "type": name})) for name in STRATEGY_NAMES}
    for field in GC_JSON_FIELDS:
        for strategy in unread(field):
            variant = data.draw(st.sampled_from(VARIANTS[field.key]), label=field.key)
            changed = load({**base, "type": strategy, field.key: variant})
            assert what_it_does(generated, changed) == done[strategy], (field.key, strategy)
    for strategy in unread(SUMMARIZER):
        # The llm summarizer needs a server; a strategy that never summarizes never asks it.
        changed = load({**base, "type": strategy, "plugin_config": {"summarizer": "llm"}})
        assert what_it_does(generated, changed) == done[strategy], strategy


@pytest.mark.parametrize(
    ("strategy", "key", "base", "variant"),
    [
        ("gc_truncate", "noop_notification_template", None, "Kept all {total}."),
        ("gc_summarize", "noop_notification_template", None, "Kept all {total}."),
        ("gc_hybrid", "noop_notification_template", None, "Kept all {total}."),
        ("gc_hybrid", "summarize_middle_turns", 0, 10),
        ("gc_summarize", "max_summary_tokens", 600, 8),
        ("gc_hybrid", "max_summary_tokens", 600, 8),
        ("gc_reachability", "roots", {"recent_turns": 0}, {"recent_turns": 20}),
        ("gc_reachability", "weights", {"recency": 1}, {"importance": 1, "recency": 0}),
        ("gc_reachability", "action", "stash", "delete"),
    ],
)
def test_a_key_a_strategy_reads_can_change_what_it_does(
    strategy: str, key: str, base: Any, variant: Any
) -> None:
    assert strategy in FIELDS[key].strategies
    # Nothing protected and far over the target, or (for the no-op notice) everything protected.
    nothing_to_take = key == "noop_notification_template"
    common = {
        "type": strategy,
        "notify_on_gc": True,
        "preserve_recent_turns": 100 if nothing_to_take else 2,
        "target_percent": 10,
        "summarize_middle_turns": 10,
    }
    generated = session(30, 4, 120)
    first = gcengine.run_gc(generated, load({**common, key: base})).result
    second = gcengine.run_gc(generated, load({**common, key: variant})).result
    assert first != second


def test_the_summarizer_option_changes_what_a_summarizing_strategy_does() -> None:
    generated = session(30, 4, 120)
    for strategy in SUMMARIZER.strategies:
        extractive = load({"type": strategy, "target_percent": 10, "summarize_middle_turns": 20})
        llm = load(
            {
                "type": strategy,
                "target_percent": 10,
                "summarize_middle_turns": 20,
                "plugin_config": {"summarizer": "llm"},
            }
        )
        assert gcengine.run_gc(generated, extractive).result.success
        assert not gcengine.run_gc(generated, llm).result.success  # no server is configured
