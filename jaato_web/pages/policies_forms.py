"""The policy editor's forms: one control per gc.json key, built from the engine's key
declarations, and the import and save forms beside it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

import gcengine
from jaato_web.dashboard import services
from jaato_web.dashboard.presenters import strategy_of, turn_index_of
from jaato_web.pages.forms import ListField

# Every gc.json key has a control, made from the engine's table of keys
# (``gcengine.GC_JSON_FIELDS``): its kind picks the control, its bounds the control's limits,
# and its label, help and default come with it. Two keys are edited under another name.
FORM_FIELD_OF_KEY = {"type": "strategy", "plugin_config": "plugin_options"}
GC_FIELDS = {field.key: field for field in gcengine.GC_JSON_FIELDS}
EVERY_STRATEGY = frozenset(spec.name for spec in gcengine.STRATEGY_SPECS)
# The options inside plugin_config that strategies declare (the summarizer), each with a
# control of its own; any other plugin_config key is kept as written, in one JSON field.
PLUGIN_OPTIONS = {field.key: field for field in gcengine.PLUGIN_CONFIG_FIELDS}
# The keys only some strategies read; the editor shows each for these only (hidden controls
# keep their values, so switching strategy and back loses nothing). A key no strategy reads
# (kept for JAATO) is always shown.
APPLIES_TO: dict[str, tuple[str, ...]] = {
    FORM_FIELD_OF_KEY.get(field.key, field.key): field.strategies
    for field in (*gcengine.GC_JSON_FIELDS, *PLUGIN_OPTIONS.values())
    if field.strategies and set(field.strategies) != EVERY_STRATEGY
}
# The placeholders a notification template may use, with what each means for the strategy.
PLACEHOLDERS: dict[str, list[tuple[str, str]]] = {
    strategy: [("{" + name + "}", meaning) for name, meaning in sorted(meanings.items())]
    for strategy, meanings in gcengine.NOTIFICATION_FIELD_MEANINGS.items()
}
NOOP_PLACEHOLDERS = ", ".join(
    "{" + name + "}" for name in sorted(gcengine.NOOP_NOTIFICATION_FIELDS)
)

# The options of an object key (``roots``, ``weights``) each have a control of their own,
# named ``<key>_<option>``, with the label, help and kind of the engine's table of options.
SUBFIELDS: dict[str, tuple[gcengine.GCJsonField, ...]] = dict(gcengine.GC_JSON_SUBFIELDS)
# Text a person types into a policy (a notice's wording, an agent's name): ample, but bounded.
TEXT_MAX_CHARS = 2000


def subfield_name(key: str, option: str) -> str:
    return f"{key}_{option}"


# gc.json keys, and the other names the engine reads them by, that the editor edits under
# another name: an error about ``roots.recent_turns`` goes beside its own control, one about
# ``weights`` as a whole beside the first weight.
KEY_FIELDS = {
    **FORM_FIELD_OF_KEY,
    **{alias: FORM_FIELD_OF_KEY.get(key, key) for alias, key in gcengine.GC_JSON_ALIASES.items()},
    **{
        f"{key}.{option.key}": subfield_name(key, option.key)
        for key, options in SUBFIELDS.items()
        for option in options
    },
    **{key: subfield_name(key, options[0].key) for key, options in SUBFIELDS.items()},
}


def field_for_key(form: forms.Form, key: str | None) -> str | None:
    """The form field that edits gc.json key ``key``, or None (then it is shown on top)."""
    if key is None:
        return None
    name = KEY_FIELDS.get(key, key)
    return name if name in form.fields else None


def add_config_error(form: forms.Form, error: gcengine.ConfigError) -> None:
    field = field_for_key(form, error.key)
    if field is not None:
        form.add_error(field, error.reason)
    else:
        form.add_error(None, str(error))  # "key: reason", so an unknown key is named


class TurnListField(ListField):
    """Turns as a person types them, numbered as the session page shows them (from 1); cleaned
    to the stable indices a gc.json stores (from 0)."""

    def item(self, value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            raise ValidationError(
                f"“{value}” is not a turn number (a whole number from 1, as the session page "
                "numbers turns)."
            )
        return turn_index_of(number)


def _number(value: Any) -> Any:
    """80.0 shows as 80 in a number field; other values pass through."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _turn_shown(index: Any) -> Any:
    """A pinned turn as the editor shows it: a stable index as the session page's number; a
    value that is no index (from an imported file the engine refused) as it was written."""
    if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
        return gcengine.turn_number(index)
    return index


def form_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """The editor's field values for a flat gc.json (stored, default, or imported): each key's
    value, or the engine's default for it."""
    values: dict[str, Any] = {}
    for key, field in GC_FIELDS.items():
        value = config.get(key, field.default)
        match field.kind:
            case "percent":
                value = _number(value) if value else 0  # no pressure is continuous mode: 0
            case "text":
                value = value or ""
            case "turn_list" | "id_list":
                # A refused file's value may be anything; only a list has items to show.
                items = list(value) if isinstance(value, list | tuple) else []
                value = [_turn_shown(v) for v in items] if field.kind == "turn_list" else items
        values[FORM_FIELD_OF_KEY.get(key, key)] = value
    values["strategy"] = strategy_of(config)
    for key, fields in SUBFIELDS.items():
        given = config.get(key)
        chosen = given if isinstance(given, Mapping) else GC_FIELDS[key].default.model_dump()
        defaults = GC_FIELDS[key].default.model_dump()
        for option in fields:
            values[subfield_name(key, option.key)] = _number(
                chosen.get(option.key, defaults[option.key])
            )
    options = config.get("plugin_config")
    options = dict(options) if isinstance(options, Mapping) else {}
    for key in PLUGIN_OPTIONS:
        chosen = options.pop(key, "")
        values[key] = chosen if isinstance(chosen, str) else json.dumps(chosen)
    values["plugin_options"] = json.dumps(options, indent=1, sort_keys=True) if options else ""
    return values


def default_values() -> dict[str, Any]:
    """A new policy starts from the engine's defaults, with the strategy a new policy starts
    from (the policy-aware one)."""
    config = gcengine.GCConfig(plugin=gcengine.NEW_POLICY_STRATEGY.name)
    return form_values(gcengine.dump_gc_config(config))


def _bounds(field: gcengine.GCJsonField) -> dict[str, Any]:
    """A number control's limits, as the engine bounds the key."""
    attrs: dict[str, Any] = {}
    for attr, bound in (("min", field.minimum), ("max", field.maximum)):
        if bound is not None:
            attrs[attr] = _number(float(bound))
    return attrs


def _control(field: gcengine.GCJsonField, *, optional: bool = False) -> forms.Field:
    """The control that edits one key (or one option of an object key), by its kind;
    ``optional``: it may be left empty, which makes the key null (unset where that is its
    default)."""
    control: forms.Field
    match field.kind:
        case "choice" if field.key == "type":
            control = forms.ChoiceField(
                choices=[(s.name, f"{s.label}: {s.description}") for s in gcengine.GC_STRATEGIES],
                widget=forms.Select(attrs={"data-strategy-select": ""}),
            )
        case "choice" if field.key in PLUGIN_OPTIONS:  # unset, the strategy's own default
            # (the summarizer: extractive for summarize and hybrid, none for reachability)
            control = forms.ChoiceField(
                required=False,
                choices=[("", "the strategy's default"), *((c, c) for c in field.choices)],
            )
        case "choice":
            control = forms.ChoiceField(choices=[(c, c) for c in field.choices])
        case "percent":
            control = forms.FloatField(
                widget=forms.NumberInput(
                    attrs={
                        **_bounds(field),
                        "step": "any",
                        "class": "percent-pair__number",
                        "data-percent-number": field.key,
                    }
                )
            )
        case "whole_number":
            control = forms.IntegerField(
                required=not optional, widget=forms.NumberInput(attrs=_bounds(field))
            )
        case "number":
            control = forms.FloatField(
                required=not optional,
                widget=forms.NumberInput(attrs={**_bounds(field), "step": "any"}),
            )
        case "flag":
            control = forms.BooleanField(required=False)
        case "text":
            control = forms.CharField(required=False, max_length=TEXT_MAX_CHARS)
        case "turn_list":
            control = TurnListField(required=False)
        case "id_list":
            control = ListField(required=False)
        case _:
            raise ValueError(f"{field.key}: no control edits a {field.kind} key")
    control.label, control.help_text = field.label.removesuffix(" %"), field.help
    if field.kind == "turn_list":  # the engine's help counts as the gc.json stores them
        control.help_text = (
            "Turns a collection never touches, numbered as the session page shows them "
            "(from 1); the gc.json stores each as its index from 0."
        )
    return control


def _plugin_options_control() -> forms.Field:
    control = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"})
    )
    control.label = "Other plugin options"
    control.help_text = "Other plugin_config keys, as a JSON object (kept as they are)."
    return control


@dataclass(frozen=True)
class OptionGroup:
    """An object key's options (``roots``), under the key's label and help."""

    legend: str
    help: str
    controls: list[forms.BoundField]


@dataclass(frozen=True)
class StrategyPanel:
    """The controls of the keys one strategy declares for itself, shown while a strategy
    that reads any of them is chosen: each control as a pair with the strategies it applies
    to (``data-applies``), and its object keys' options in groups."""

    strategy: str
    legend: str
    applies: str
    controls: list[tuple[forms.BoundField, str]]
    groups: list[OptionGroup]


class PolicyForm(forms.Form):
    """The gc.json being edited. ``config`` holds the engine's reading once valid.

    Its fields are made from the engine's table of keys, in the order people read a policy:
    a key a strategy declares gets its control here without a line of this module."""

    config: gcengine.GCConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, field in GC_FIELDS.items():
            if key in SUBFIELDS:
                for option in SUBFIELDS[key]:
                    self.fields[subfield_name(key, option.key)] = _control(option)
            elif key == "plugin_config":
                for option in PLUGIN_OPTIONS.values():
                    self.fields[option.key] = _control(option)
                self.fields["plugin_options"] = _plugin_options_control()
            else:
                self.fields[FORM_FIELD_OF_KEY.get(key, key)] = _control(
                    field, optional=field.default is None or field.nullable
                )

    @property
    def options(self) -> dict[str, list[forms.BoundField]]:
        """The controls of each object key's options, by key: ``form.options.roots``."""
        return {
            key: [self[subfield_name(key, option.key)] for option in options]
            for key, options in SUBFIELDS.items()
        }

    @property
    def strategy_panels(self) -> list[StrategyPanel]:
        """A panel for each strategy that declares keys or plugin_config options of its own,
        in the order people read the strategies."""
        panels = []
        for spec in gcengine.STRATEGY_SPECS:
            keys = [*spec.own_keys, *spec.options]
            if not keys:
                continue
            controls = [
                (self[FORM_FIELD_OF_KEY.get(key, key)], " ".join(APPLIES_TO.get(key, ())))
                for key in keys
                if key not in SUBFIELDS
            ]
            groups = [
                OptionGroup(GC_FIELDS[key].label, GC_FIELDS[key].help, self.options[key])
                for key in keys
                if key in SUBFIELDS
            ]
            readers = {s for key in keys for s in APPLIES_TO.get(key, (spec.name,))}
            panels.append(
                StrategyPanel(
                    spec.name,
                    spec.label.capitalize(),
                    " ".join(s.name for s in gcengine.STRATEGY_SPECS if s.name in readers),
                    controls,
                    groups,
                )
            )
        return panels

    def clean_plugin_options(self) -> dict[str, Any]:
        text = self.cleaned_data["plugin_options"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValidationError(f"Not JSON: {error.msg} (line {error.lineno}).") from None
        if not isinstance(value, dict):
            raise ValidationError('Give a JSON object, such as {"key": 1}.')
        for key in PLUGIN_OPTIONS:
            if key in value:
                raise ValidationError(f"Choose the {key} with its own control above.")
        return value

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        if self.errors:
            return cleaned  # coercion failed somewhere; the engine would only repeat it
        try:
            self.config = services.config_validated(self.gc_json())
        except gcengine.ConfigError as error:
            add_config_error(self, error)
        return cleaned

    def gc_json(self) -> dict[str, Any]:
        """The flat gc.json these fields say (before the engine has read it); an empty optional
        field is left out, so the engine's default applies."""
        data = self.cleaned_data
        config: dict[str, Any] = {}
        for key, field in GC_FIELDS.items():
            if key in SUBFIELDS:
                config[key] = {
                    option.key: data.get(subfield_name(key, option.key))
                    for option in SUBFIELDS[key]
                    if data.get(subfield_name(key, option.key)) is not None
                }
                continue
            if key == "plugin_config":
                continue
            value = data.get(FORM_FIELD_OF_KEY.get(key, key))
            if field.kind in ("turn_list", "id_list"):
                value = value or []
            elif value in (None, "") and not self.fields[FORM_FIELD_OF_KEY.get(key, key)].required:
                if field.default is None:
                    continue
                value = None  # left empty: null, which is not what the key's default says
            config[key] = value
        options = dict(data.get("plugin_options") or {})
        for key in PLUGIN_OPTIONS:
            if data.get(key):
                options[key] = data[key]
        config["plugin_config"] = options
        return config


class PolicySaveForm(forms.Form):
    """What a save records beside the gc.json: why, and the version it started from (who is the
    signed-in user)."""

    name = forms.CharField(max_length=services.POLICY_NAME_MAX, required=False)
    message = forms.CharField(
        max_length=500,
        error_messages={"required": "Say what changed and why: it is the version's message."},
    )
    base_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, new: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new = new
        self.fields["name"].required = new


class PolicyImportForm(forms.Form):
    """A gc.json to import, uploaded or pasted; the engine reads it, in either shape."""

    # An empty file is the engine's to refuse, with the message the API gives for it.
    file = forms.FileField(required=False, allow_empty_file=True)
    text = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        strip=False,
    )
    name = forms.CharField(max_length=services.POLICY_NAME_MAX, required=False)
    message = forms.CharField(max_length=500, required=False)

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        upload = self.cleaned_data.get("file")
        text = self.cleaned_data.get("text") or ""
        if upload and text.strip():
            raise ValidationError("Upload a file or paste its text, not both.")
        if not upload and not text.strip():
            raise ValidationError("Upload a gc.json file or paste its text.")
        return cleaned

    def raw(self) -> bytes:
        """The gc.json's bytes; an upload's declared size is checked before it is read."""
        upload = self.cleaned_data.get("file")
        if upload is not None:
            services.policy_size_check(upload.size or 0)
            return bytes(upload.read())
        return str(self.cleaned_data["text"]).encode()

    def filename(self) -> str:
        upload = self.cleaned_data.get("file")
        return str(upload.name or "") if upload is not None else ""

    def parsed(self, raw: bytes) -> dict[str, Any] | None:
        """The file as a JSON object, if it is one (for refilling the editor)."""
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # JSON, UTF-8 and number-size errors alike
            return None
        return value if isinstance(value, dict) else None
