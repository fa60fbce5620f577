"""gc.json: read strictly in either shape, written back in the flat shape JAATO loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gcengine import ConfigError, GCConfig, dump_gc_config, load_gc_config
from gcengine.config import NOTIFICATION_FIELD_MEANINGS, NOTIFICATION_FIELDS

NO_ENV: dict[str, str] = {}


def load(source: Any, env: dict[str, str] | None = None) -> GCConfig:
    """Load without letting the test runner's environment leak in."""
    return load_gc_config(source, env=NO_ENV if env is None else env)


def config_error(source: Any, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        load(source, env)
    assert type(raised.value) is ConfigError
    return raised.value


# JAATO's two shipped gc.json files, byte for byte (tests/fixtures/gc/README.md).
GC_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gc"
JAATO_REPO_GC_TEXT = (GC_FIXTURES / "jaato_repo_gc.json").read_text()
JAATO_TUI_EXAMPLE_GC_TEXT = (GC_FIXTURES / "jaato_tui_example_gc.json").read_text()
JAATO_REPO_GC_JSON: dict[str, Any] = json.loads(JAATO_REPO_GC_TEXT)
JAATO_TUI_EXAMPLE_GC_JSON: dict[str, Any] = json.loads(JAATO_TUI_EXAMPLE_GC_TEXT)
JAATO_TEMPLATE = (
    "Context cleaned: {truncated} turns removed, {summarized} turns summarized, "
    "{kept} recent turns preserved."
)


# Shapes and strategies


@pytest.mark.parametrize(
    ("spelling", "plugin"),
    [
        ("truncate", "gc_truncate"),
        ("summarize", "gc_summarize"),
        ("hybrid", "gc_hybrid"),
        ("budget", "gc_budget"),
        ("gc_truncate", "gc_truncate"),
        ("gcengine_budget", "gc_budget"),
        ("gc_gcengine_reachability", "gc_reachability"),
        ("gc_summarize", "gc_summarize"),
        ("gc_hybrid", "gc_hybrid"),
        ("gc_budget", "gc_budget"),
    ],
)
def test_every_type_spelling_selects_its_plugin(spelling: str, plugin: str) -> None:
    config = load({"type": spelling})
    assert config.plugin == plugin
    assert config.strategy_name == plugin.removeprefix("gc_")


def test_file_without_type_uses_truncation() -> None:
    assert load({}).plugin == "gc_truncate"


@pytest.mark.parametrize(
    ("design", "flat"),
    [
        pytest.param(
            {
                "plugin": "gc_budget",
                "config": {"threshold_percent": 75, "target_percent": 50, "pressure_percent": 0},
            },
            {
                "type": "budget",
                "threshold_percent": 75,
                "target_percent": 50,
                "pressure_percent": 0,
            },
            id="budget-continuous",
        ),
        pytest.param(
            {
                "plugin": "gc_hybrid",
                "config": {"preserve_recent_turns": 3, "notify_on_gc": True, "max_turns": 40},
            },
            {"type": "hybrid", "preserve_recent_turns": 3, "notify_on_gc": True, "max_turns": 40},
            id="hybrid",
        ),
        pytest.param(
            {"plugin": "truncate", "config": {}},
            {"type": "gc_truncate"},
            id="unprefixed-plugin-empty-config",
        ),
        pytest.param({"plugin": "gc_summarize"}, {"type": "summarize"}, id="plugin-without-config"),
    ],
)
def test_design_shape_gives_the_same_config_as_the_flat_file(
    design: dict[str, Any], flat: dict[str, Any]
) -> None:
    assert load(design) == load(flat)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        pytest.param({"plugin": "gc_budget", "type": "budget"}, "plugin", id="plugin-and-type"),
        pytest.param(
            {"plugin": "gc_budget", "config": {}, "threshold_percent": 70},
            "threshold_percent",
            id="setting-beside-plugin",
        ),
        pytest.param(
            {"config": {"target_percent": 50}, "notify_on_gc": True},
            "notify_on_gc",
            id="setting-beside-config",
        ),
        pytest.param(
            {"plugin": "gc_budget", "config": {"type": "budget"}},
            "config.type",
            id="type-inside-config",
        ),
        pytest.param(
            {"plugin": "gc_budget", "config": {"plugin": "gc_budget"}},
            "config.plugin",
            id="plugin-inside-config",
        ),
        pytest.param({"plugin": "gc_budget", "config": []}, "config", id="config-a-list"),
        pytest.param({"plugin": "fifo", "config": {}}, "plugin", id="unknown-plugin"),
    ],
)
def test_mixing_shapes_is_an_error_naming_the_key(data: dict[str, Any], key: str) -> None:
    assert config_error(data).key == key


# Defaults and continuous mode


def test_defaults() -> None:
    config = load({})
    assert config.threshold_percent == 80
    assert config.target_percent == 60
    assert config.pressure_percent == 90
    assert config.preserve_recent_turns == 5
    assert config.notify_on_gc is False
    assert config.continuous_mode is False
    assert config.pinned_turn_indices == []
    assert config.pinned_message_ids == []


def test_file_without_pressure_is_not_continuous_mode() -> None:
    # JAATO's loader reads a missing pressure_percent as continuous mode; this one does not.
    config = load({"type": "budget", "threshold_percent": 80, "target_percent": 60})
    assert config.continuous_mode is False
    assert config.pressure_percent == 90


@pytest.mark.parametrize("pressure", [0, 0.0, None], ids=["zero", "zero-float", "null"])
def test_zero_or_null_pressure_is_continuous_mode(pressure: float | None) -> None:
    config = load({"type": "budget", "pressure_percent": pressure})
    assert config.continuous_mode is True
    assert config.pressure_percent is None


def test_continuous_mode_flag_alone_is_continuous() -> None:
    config = load({"type": "budget", "continuous_mode": True})
    assert config.continuous_mode is True
    assert config.pressure_percent is None


def test_continuous_mode_false_keeps_the_pressure() -> None:
    config = load({"continuous_mode": False, "pressure_percent": 95})
    assert config.continuous_mode is False
    assert config.pressure_percent == 95


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"continuous_mode": True, "pressure_percent": 90}, id="true-with-pressure"),
        pytest.param({"continuous_mode": False, "pressure_percent": 0}, id="false-with-zero"),
        pytest.param({"continuous_mode": "yes"}, id="not-a-boolean"),
    ],
)
def test_contradictory_continuous_mode_is_an_error(data: dict[str, Any]) -> None:
    assert config_error(data).key == "continuous_mode"


# Environment overrides


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        ("JAATO_GC_THRESHOLD", "70", "threshold_percent", 70.0),
        ("JAATO_GC_TARGET", "45.5", "target_percent", 45.5),
        ("JAATO_GC_PRESSURE", "95", "pressure_percent", 95.0),
    ],
)
def test_env_override_applies_where_the_file_omits_the_field(
    variable: str, value: str, field: str, expected: float
) -> None:
    config = load({"type": "budget"}, env={variable: value})
    assert getattr(config, field) == expected


@pytest.mark.parametrize(
    ("variable", "value", "field", "in_file"),
    [
        ("JAATO_GC_THRESHOLD", "70", "threshold_percent", 85),
        ("JAATO_GC_TARGET", "30", "target_percent", 50),
        ("JAATO_GC_PRESSURE", "0", "pressure_percent", 95),
    ],
)
def test_file_value_wins_over_env(variable: str, value: str, field: str, in_file: float) -> None:
    config = load({"type": "budget", field: in_file}, env={variable: value})
    assert getattr(config, field) == in_file


@pytest.mark.parametrize("variable", ["JAATO_GC_THRESHOLD", "JAATO_GC_TARGET", "JAATO_GC_PRESSURE"])
@pytest.mark.parametrize("value", ["abc", "", "80%", "nan"])
def test_non_numeric_env_value_is_an_error_naming_the_variable(variable: str, value: str) -> None:
    error = config_error({}, env={variable: value})
    assert error.key == variable
    assert repr(value) in error.reason


@pytest.mark.parametrize(
    ("variable", "value"),
    [("JAATO_GC_THRESHOLD", "150"), ("JAATO_GC_TARGET", "85"), ("JAATO_GC_PRESSURE", "120")],
)
def test_out_of_range_env_value_is_an_error_naming_the_variable(variable: str, value: str) -> None:
    # The file does not mention the field: the key must point at what the user set.
    assert config_error({"type": "budget"}, env={variable: value}).key == variable


@pytest.mark.parametrize("value", ["0", "-1", "0.0"])
def test_env_pressure_zero_or_below_is_continuous_mode(value: str) -> None:
    config = load({"type": "budget"}, env={"JAATO_GC_PRESSURE": value})
    assert config.continuous_mode is True
    assert config.pressure_percent is None


def test_without_env_argument_os_environ_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAATO_GC_THRESHOLD", "70")
    monkeypatch.setenv("JAATO_GC_PRESSURE", "0")
    config = load_gc_config({"type": "budget"})
    assert config.threshold_percent == 70
    assert config.continuous_mode is True


def test_env_mapping_replaces_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAATO_GC_THRESHOLD", "70")
    assert load_gc_config({}, env={}).threshold_percent == 80


def test_unrelated_env_variables_are_ignored() -> None:
    assert load({}, env={"JAATO_GC_TYPE": "budget", "GC_THRESHOLD": "abc"}) == load({})


# Validation errors name the key


@pytest.mark.parametrize(
    ("data", "key", "words"),
    [
        pytest.param(
            {"threshold_percent": 120}, "threshold_percent", "between 0 and 100", id="threshold-120"
        ),
        pytest.param({"threshold_percent": 0}, "threshold_percent", "above 0", id="threshold-0"),
        pytest.param(
            {"target_percent": -5}, "target_percent", "between 0 and 100", id="target-negative"
        ),
        pytest.param(
            {"threshold_percent": 70, "target_percent": 70},
            "target_percent",
            "below threshold_percent",
            id="target-equal-to-threshold",
        ),
        pytest.param(
            {"threshold_percent": 70, "target_percent": 75},
            "target_percent",
            "below threshold_percent",
            id="target-above-threshold",
        ),
        pytest.param(
            {"pressure_percent": 101}, "pressure_percent", "between 0 and 100", id="pressure-101"
        ),
        pytest.param({"type": "fifo"}, "type", "not a strategy", id="type-fifo"),
        pytest.param({"type": 5}, "type", "not a strategy", id="type-number"),
        pytest.param({"type": "Budget"}, "type", "not a strategy", id="type-capitalised"),
        pytest.param(
            {"threshold_percent": "80"},
            "threshold_percent",
            "must be a number",
            id="threshold-string",
        ),
        pytest.param(
            {"threshold_percent": None},
            "threshold_percent",
            "must be a number",
            id="threshold-null",
        ),
        pytest.param(
            {"threshold_percent": True},
            "threshold_percent",
            "must be a number",
            id="threshold-boolean",
        ),
        pytest.param(
            {"preserve_recent_turns": -1},
            "preserve_recent_turns",
            "at least 0",
            id="preserve-negative",
        ),
        pytest.param(
            {"preserve_recent_turns": 2.5},
            "preserve_recent_turns",
            "whole number",
            id="preserve-fraction",
        ),
        pytest.param(
            {"preserve_recent_turns": True},
            "preserve_recent_turns",
            "whole number",
            id="preserve-boolean",
        ),
        pytest.param({"max_turns": 0}, "max_turns", "at least 1", id="max_turns-0"),
        pytest.param(
            {"summarize_middle_turns": -3},
            "summarize_middle_turns",
            "at least 0",
            id="summarize-negative",
        ),
        pytest.param(
            {"pinned_turn_indices": [-1]}, "pinned_turn_indices", "turn index", id="pins-negative"
        ),
        pytest.param(
            {"pinned_turn_indices": "3"},
            "pinned_turn_indices",
            "list of turn indices",
            id="pins-string",
        ),
        pytest.param(
            {"pinned_turn_indices": [1.5]}, "pinned_turn_indices", "turn index", id="pins-fraction"
        ),
        pytest.param(
            {"pinned_turn_indices": [True]}, "pinned_turn_indices", "turn index", id="pins-boolean"
        ),
        pytest.param(
            {"pinned_message_ids": [""]}, "pinned_message_ids", "message ids", id="pinned-id-empty"
        ),
        pytest.param(
            {"pinned_message_ids": "msg_1"},
            "pinned_message_ids",
            "list of message ids",
            id="pinned-ids-string",
        ),
        pytest.param(
            {"plugin_config": []}, "plugin_config", "must be an object", id="plugin_config-list"
        ),
        pytest.param({"notify_on_gc": "yes"}, "notify_on_gc", "true or false", id="notify-yes"),
        pytest.param(
            {"auto_trigger": 1}, "auto_trigger", "true or false", id="auto_trigger-number"
        ),
        pytest.param({"agent_name": 5}, "agent_name", "must be a string", id="agent_name-number"),
        pytest.param(
            {"notify_on_gc": True, "notification_template": "GC freed {bytes} bytes"},
            "notification_template",
            "{bytes}",
            id="template-unknown-placeholder-with-notices-on",
        ),
        pytest.param(
            {"notify_on_gc": True, "notification_template": "{unclosed"},
            "notification_template",
            "not a valid template",
            id="template-unclosed-brace-with-notices-on",
        ),
        pytest.param(
            {"plugin_config": {"notify_on_gc": True}, "notification_template": "removed {} turns"},
            "notification_template",
            "{}",
            id="template-positional-placeholder-with-notices-on-in-plugin-config",
        ),
        pytest.param(
            {"notification_template": 5},
            "notification_template",
            "must be a string",
            id="template-number",
        ),
        pytest.param(
            {
                "type": "truncate",
                "notify_on_gc": True,
                "noop_notification_template": "nothing to free from {items}",
            },
            "noop_notification_template",
            "{items}",
            id="noop-template-with-items",
        ),
    ],
)
def test_invalid_value_is_an_error_naming_the_key(
    data: dict[str, Any], key: str, words: str
) -> None:
    error = config_error(data)
    assert error.key == key
    assert words in error.reason
    assert str(error) == f"{key}: {error.reason}"


def test_unknown_key_is_an_error_listing_the_known_keys() -> None:
    error = config_error({"type": "budget", "treshold_percent": 80})
    assert error.key == "treshold_percent"
    assert "unknown key" in error.reason
    for known in (
        "threshold_percent",
        "target_percent",
        "pressure_percent",
        "preserve_recent_turns",
    ):
        assert known in error.reason


def test_template_error_lists_the_placeholders_the_strategy_provides() -> None:
    error = config_error({"notify_on_gc": True, "notification_template": "{bytes}"})
    for provided in ("{removed}", "{kept}", "{truncated}", "{summarized}", "{items}", "{freed}"):
        assert provided in error.reason


JAATO_TEMPLATES = [
    "Context cleaned: removed {removed} old turns, kept {kept} recent turns.",
    "Context cleaned: summarized {removed} old turns into context summary.",
    JAATO_TEMPLATE,
    "Context cleaned: removed {items} items, freed {freed} tokens.",
    "Cleared {removed} turns, freed {tokens_freed} tokens!",
]


@pytest.mark.parametrize("plugin", ["truncate", "summarize", "hybrid", "budget", "reachability"])
@pytest.mark.parametrize("template", JAATO_TEMPLATES)
def test_every_strategy_renders_every_jaato_template(plugin: str, template: str) -> None:
    """JAATO's shipped files pair the budget strategy with hybrid's template: every strategy
    provides every variable any of JAATO's templates uses, so any of them loads with notices
    on and no warning."""
    config = load({"type": plugin, "notify_on_gc": True, "notification_template": template})
    assert config.notification_template == template
    assert config.warnings == []


def test_every_notification_variable_has_a_meaning_for_every_strategy() -> None:
    """Every strategy provides JAATO's variables; the reachability strategy also says how many
    segments it stashed and deleted."""
    variables = {"removed", "kept", "truncated", "summarized", "items", "freed", "tokens_freed"}
    extra = {"gc_reachability": {"stashed", "deleted"}}
    for strategy, meanings in NOTIFICATION_FIELD_MEANINGS.items():
        assert set(meanings) == variables | extra.get(strategy, set()), strategy
        assert all(meaning.strip() for meaning in meanings.values()), strategy
        assert NOTIFICATION_FIELDS[strategy] == set(meanings)


@pytest.mark.parametrize(
    ("data", "key", "words"),
    [
        pytest.param(
            {"notification_template": "GC freed {bytes} bytes"},
            "notification_template",
            "{bytes}",
            id="unknown-placeholder-notices-off",
        ),
        pytest.param(
            {"notification_template": "{unclosed"},
            "notification_template",
            "not a valid template",
            id="unclosed-brace-notices-off",
        ),
        pytest.param(
            {"type": "budget", "notify_on_gc": True, "noop_notification_template": "{items}"},
            "noop_notification_template",
            "writes no such notice",
            id="noop-template-of-a-strategy-that-writes-none",
        ),
    ],
)
def test_a_template_that_will_not_be_used_is_a_warning_not_an_error(
    data: dict[str, Any], key: str, words: str
) -> None:
    config = load(data)
    assert len(config.warnings) == 1
    warning = config.warnings[0]
    assert warning.startswith(f"{key}: ")
    assert words in warning


def test_noop_template_with_its_placeholders_is_accepted() -> None:
    template = "Nothing to collect: {total} turns, {preserve} preserved."
    assert load({"noop_notification_template": template}).noop_notification_template == template


# Sources and decoding


def test_json_syntax_error_reports_line_and_column() -> None:
    error = config_error('{"type": "budget",\n "threshold_percent": }')
    assert error.key is None
    assert "line 2, column" in error.reason


def test_json_syntax_error_in_a_file_reports_line_and_column(tmp_path: Path) -> None:
    file = tmp_path / "gc.json"
    file.write_text('{\n  "type": "budget"\n  "threshold_percent": 80\n}\n')
    assert "line 3, column" in config_error(file).reason


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(b"[1, 2]", id="bytes"),
        pytest.param("[1, 2]", id="text"),
        pytest.param(json.loads("[1, 2]"), id="parsed"),
        pytest.param(b'"budget"', id="string-bytes"),
    ],
)
def test_top_level_that_is_not_an_object_is_refused(source: Any) -> None:
    assert "JSON object" in config_error(source).reason


def test_file_path_bytes_text_and_dict_give_the_same_config(tmp_path: Path) -> None:
    data = {"type": "budget", "threshold_percent": 75, "pressure_percent": 0}
    text = json.dumps(data, indent=2)
    file = tmp_path / "gc.json"
    file.write_text(text)
    expected = load(data)
    assert expected.plugin == "gc_budget"
    assert expected.threshold_percent == 75
    assert load(file) == expected
    assert load(text.encode()) == expected
    assert load(text) == expected
    assert load("\n  " + text) == expected


def test_a_string_is_never_read_as_a_file_name(tmp_path: Path) -> None:
    """Text pasted into a form must not make a server open a file of that name."""
    file = tmp_path / "gc.json"
    file.write_text('{"type": "budget"}')

    with pytest.raises(ConfigError, match="not valid JSON"):
        load(str(file))


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    file = tmp_path / "gc.json"
    file.write_bytes(b"\xef\xbb\xbf" + json.dumps({"type": "hybrid"}).encode())
    assert load(file).plugin == "gc_hybrid"


def test_missing_file_is_an_error_saying_it_cannot_be_read(tmp_path: Path) -> None:
    missing = tmp_path / "absent" / "gc.json"
    error = config_error(missing)
    assert "cannot read" in error.reason
    assert str(missing) in error.reason


def test_bytes_that_are_not_utf8_are_refused() -> None:
    assert "UTF-8" in config_error(b'{"type": "\xff"}').reason


def test_deeply_nested_json_is_refused() -> None:
    text = '{"plugin_config": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}"
    assert "deep" in config_error(text).reason


@pytest.mark.parametrize(
    ("source", "words"),
    [
        pytest.param("", "empty", id="empty-text"),
        pytest.param(Path("gc\x00.json"), "cannot read", id="path-with-nul-byte"),
        pytest.param('{"max_turns": ' + "9" * 5000 + "}", "digits|number", id="5000-digit-number"),
    ],
)
def test_unreadable_source_is_a_config_error(source: str, words: str) -> None:
    error = config_error(source)
    assert any(word in error.reason for word in words.split("|")), error.reason


@pytest.mark.parametrize(
    "notes",
    [
        pytest.param({"_comment": "tuned for long sessions"}, id="comment"),
        pytest.param({"_docs": {"type": "truncate | budget"}}, id="docs"),
        pytest.param({"_anything": [1, 2], "_": None}, id="any-underscore-key"),
    ],
)
def test_underscore_keys_are_ignored(notes: dict[str, Any]) -> None:
    assert load({"type": "budget", **notes}) == load({"type": "budget"})
    design = {"plugin": "gc_budget", "config": {"target_percent": 50, **notes}, **notes}
    assert load(design) == load({"type": "budget", "target_percent": 50})


# JAATO's shipped files


@pytest.mark.parametrize(
    ("text", "target", "notify"),
    [
        pytest.param(JAATO_REPO_GC_TEXT, 60, False, id="repo-jaato-gc-json"),
        pytest.param(JAATO_TUI_EXAMPLE_GC_TEXT, 40, True, id="jaato-tui-example"),
    ],
)
def test_jaato_shipped_files_load_as_they_are_in_continuous_mode(
    text: str, target: float, notify: bool
) -> None:
    """JAATO's own files: the budget strategy with hybrid's template, ``max_turns`` null,
    ``plugin_config`` empty, a string ``_docs``; JAATO loads them, and so does the engine,
    without a warning."""
    config = load(text)
    assert config.plugin == "gc_budget"
    assert config.continuous_mode is True
    assert config.pressure_percent is None
    assert config.threshold_percent == 80
    assert config.target_percent == target
    assert config.preserve_recent_turns == 5
    assert config.summarize_middle_turns == 10
    assert config.max_turns is None
    assert config.plugin_config == {}
    assert config.notify_on_gc is notify
    assert config.auto_trigger is True
    assert config.check_before_send is True
    assert config.pinned_turn_indices == []
    assert config.notification_template == JAATO_TEMPLATE
    assert config.warnings == []
    assert load_gc_config(GC_FIXTURES / "jaato_repo_gc.json", env={}).target_percent == 60


# Writing back


ROUND_TRIP_CASES = [
    pytest.param({}, id="defaults"),
    pytest.param(JAATO_REPO_GC_JSON, id="jaato-repo-file"),
    pytest.param(JAATO_TUI_EXAMPLE_GC_JSON, id="jaato-tui-example"),
    pytest.param(JAATO_REPO_GC_TEXT, id="jaato-repo-file-text"),
    pytest.param(JAATO_TUI_EXAMPLE_GC_TEXT, id="jaato-tui-example-text"),
    pytest.param({"type": "budget", "continuous_mode": True}, id="continuous-flag"),
    pytest.param(
        {"type": "budget", "pressure_percent": None, "target_percent": 35.5}, id="null-pressure"
    ),
    pytest.param(
        {
            "type": "truncate",
            "threshold_percent": 92.5,
            "target_percent": 70,
            "pressure_percent": 97,
        },
        id="fractional-percentages",
    ),
    pytest.param(
        {
            "type": "hybrid",
            "max_turns": 40,
            "auto_trigger": False,
            "check_before_send": False,
            "preserve_recent_turns": 0,
            "pinned_turn_indices": [7, 0, 3],
            "pinned_message_ids": ["msg_b", "msg_a"],
            "notify_on_gc": True,
            "notification_template": "Truncated {truncated}, summarized {summarized}.",
            "noop_notification_template": "{total} turns, {preserve} kept",
            "summarize_middle_turns": 4,
            "max_summary_tokens": 800,
            "agent_name": "reviewer",
            "plugin_config": {"summarizer": "extractive", "keep": [1, 2]},
        },
        id="every-field",
    ),
    pytest.param({"plugin": "gc_summarize", "config": {"max_turns": 12}}, id="design-shape"),
]


@pytest.mark.parametrize("data", ROUND_TRIP_CASES)
def test_dumped_config_loads_back_equal(data: dict[str, Any]) -> None:
    config = load(data)
    dumped = dump_gc_config(config)
    assert load(dumped) == config
    assert load(json.dumps(dumped)) == config


@pytest.mark.parametrize("data", ROUND_TRIP_CASES)
def test_dumped_config_is_unaffected_by_env_on_reload(data: dict[str, Any]) -> None:
    config = load(data)
    env = {"JAATO_GC_THRESHOLD": "99", "JAATO_GC_TARGET": "1", "JAATO_GC_PRESSURE": "50"}
    assert load(dump_gc_config(config), env=env) == config


@pytest.mark.parametrize("data", ROUND_TRIP_CASES)
def test_dump_writes_pressure_and_unprefixed_type_for_jaato(data: dict[str, Any]) -> None:
    config = load(data)
    dumped = dump_gc_config(config)
    assert dumped["type"] == config.plugin.removeprefix("gc_")
    assert not dumped["type"].startswith("gc_")
    # JAATO's loader reads a missing pressure as continuous mode, so it is always written.
    assert "pressure_percent" in dumped
    if config.continuous_mode:
        assert dumped["pressure_percent"] == 0
    else:
        assert dumped["pressure_percent"] == config.pressure_percent
        assert dumped["pressure_percent"] > 0
    assert json.loads(json.dumps(dumped)) == dumped


def test_dump_uses_jaato_flat_keys() -> None:
    dumped = dump_gc_config(load({"plugin": "gc_budget", "config": {"target_percent": 50}}))
    assert "plugin" not in dumped
    assert "config" not in dumped
    assert "continuous_mode" not in dumped
    assert dumped["type"] == "budget"
    assert dumped["target_percent"] == 50
    assert dumped["preserve_recent_turns"] == 5
    assert dumped["notify_on_gc"] is False


# Pins


@pytest.mark.parametrize(
    ("pins", "expected"),
    [
        ([3, 1, 3, 2], [1, 2, 3]),
        ([0, 0, 0], [0]),
        ([10, 2], [2, 10]),
        ([], []),
    ],
)
def test_pinned_turn_indices_are_deduplicated_and_sorted(
    pins: list[int], expected: list[int]
) -> None:
    assert load({"pinned_turn_indices": pins}).pinned_turn_indices == expected


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["msg_b", "msg_a", "msg_b"], ["msg_b", "msg_a"]),
        (["z", "a", "z", "m", "a"], ["z", "a", "m"]),
        ([], []),
    ],
)
def test_pinned_message_ids_are_deduplicated_keeping_order(
    ids: list[str], expected: list[str]
) -> None:
    assert load({"pinned_message_ids": ids}).pinned_message_ids == expected


def test_summarize_middle_turns_zero_means_hybrid_only_truncates() -> None:
    config = load_gc_config({"type": "hybrid", "summarize_middle_turns": 0}, env={})
    assert config.summarize_middle_turns == 0


# --- plugin_config options are checked as the keys they stand for ----------------------------


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("preserve_recent_turns", "three", "must be a whole number"),
        ("preserve_recent_turns", True, "must be a whole number"),
        ("preserve_recent_turns", -1, "must be at least 0"),
        ("preserve_recent_turns", 2.5, "must be a whole number"),
        ("summarize_middle_turns", "three", "must be a whole number"),
        ("max_summary_tokens", False, "must be a whole number"),
        ("batch_size", 0, "must be at least"),
        ("notify_on_gc", "yes", "must be true or false"),
        ("target_percent", 300, "must be between 0 and 100"),
        ("summarizer", "magic", "must be extractive, digest, llm or provider"),
    ],
)
def test_a_plugin_config_option_of_the_wrong_kind_is_refused_naming_it(
    option: str, value: Any, words: str
) -> None:
    """The strategy is handed ``plugin_config`` over the keys (as JAATO does), so an option
    naming a key is checked as that key is; it was stored as it came and failed in a run."""
    strategy = "reachability" if option == "batch_size" else "hybrid"
    error = config_error({"type": strategy, "plugin_config": {option: value}})
    assert error.key == f"plugin_config.{option}"
    assert words in error.reason


def test_plugin_config_options_of_the_right_kind_load_as_the_key_holds_them() -> None:
    config = load(
        {"type": "hybrid", "plugin_config": {"preserve_recent_turns": 3.0, "my_option": "x"}}
    )
    assert config.plugin_config == {"preserve_recent_turns": 3, "my_option": "x"}
    assert type(config.plugin_config["preserve_recent_turns"]) is int


def test_a_strategy_option_is_checked_only_for_the_strategies_that_read_it() -> None:
    """``summarizer`` means nothing to gc_budget: its plugin_config is JAATO's free-form."""
    config = load({"type": "budget", "plugin_config": {"summarizer": {"model": "small"}}})
    assert config.plugin_config == {"summarizer": {"model": "small"}}
