"""Policy presenters: field tables and differences over plain gc.json mappings (no database)."""

from __future__ import annotations

from jaato_web.dashboard import presenters as p

BASE = {
    "type": "budget",
    "threshold_percent": 80.0,
    "target_percent": 60.0,
    "pressure_percent": 90.0,
    "preserve_recent_turns": 5,
    "pinned_turn_indices": [1, 4],
    "plugin_config": {},
}


def test_table_marks_only_the_fields_that_differ():
    rows = p.config_table([BASE, {**BASE, "target_percent": 50.0, "pinned_turn_indices": [4, 1]}])

    differs = [row.key for row in rows if row.differs]
    target = next(row for row in rows if row.key == "target_percent")
    assert differs == ["target_percent"]
    assert target.values == ["60", "50"]
    # The strategy, then whose rules it follows, then the figures.
    assert [row.key for row in rows][:4] == ["type", "rules", "threshold_percent", "target_percent"]


def test_pinned_turns_read_as_the_session_page_numbers_them():
    row = next(r for r in p.config_table([BASE]) if r.key == "pinned_turn_indices")

    assert row.values == ["2, 5"]  # stable indices 1 and 4


def test_continuous_mode_reads_the_same_however_it_is_written():
    zero, null = {**BASE, "pressure_percent": 0}, {**BASE, "pressure_percent": None}

    assert not p.config_changes(zero, null)
    assert p.shown("pressure_percent", 0) == "0 (continuous mode)"
    assert p.policy_summary(zero).continuous is True
    assert p.policy_summary(BASE).pressure == "90"


def test_strategy_spellings_compare_equal():
    assert not p.config_changes(BASE, {**BASE, "type": "gc_budget"})
    assert p.shown("type", "gc_hybrid") == "hybrid"


def test_unknown_keys_are_listed_after_the_known_ones():
    rows = p.config_table([BASE, {**BASE, "zeta": 1, "_comment": "notes"}])

    assert rows[-1].key == "zeta"
    assert rows[-1].differs
    assert "_comment" not in {row.key for row in rows}


def test_conflict_rows_say_who_changed_what():
    loaded = BASE
    stored = {**BASE, "target_percent": 50.0}
    yours = {**BASE, "preserve_recent_turns": 8, "target_percent": 50.0}

    rows = {row.key: row for row in p.conflict_rows(loaded, stored, yours)}

    assert set(rows) == {"target_percent", "preserve_recent_turns"}
    assert rows["target_percent"].theirs
    assert rows["target_percent"].mine
    assert not rows["preserve_recent_turns"].theirs
    assert rows["preserve_recent_turns"].mine
    assert rows["preserve_recent_turns"].yours == "8"


def test_changes_carry_raw_values():
    changes = p.config_changes(BASE, {**BASE, "max_turns": 40})

    assert changes == [{"key": "max_turns", "a": None, "b": 40}]
