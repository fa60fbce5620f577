"""Forms of every page: widgets and coercion only.

The rules live elsewhere: the engine decides what a valid session or gc.json is, and the
services decide what happens to them. A form here turns request data into the arguments those
functions take, and gives their errors a place next to the right field.

``PolicyForm`` turns the editor's fields into a flat gc.json and hands it to the engine
(through ``services.config_validated``); a ``ConfigError`` comes back naming a gc.json key,
and ``field_for_key`` puts its message next to the control that edits that key. So the editor,
the import page and the API refuse exactly the same things.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet

import gcengine
from jaato_web.dashboard import services
from jaato_web.dashboard.models import AuditAction, PolicyVersion, Project
from jaato_web.dashboard.presenters import strategy_of, turn_index_of
from jaato_web.http import query_int
from jaato_web.teams.permissions import Role

# --- Sessions, runs and replays ---------------------------------------------------------


class DashboardForm(forms.Form):
    """Labels stand above their fields, so they need no trailing colon."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file picker that accepts several files; cleans to a list of uploads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        # An empty file is one file's problem, reported with the others' results by the
        # service, not a reason to refuse the whole upload.
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile[Any]]:
        items = list(data) if isinstance(data, list | tuple) else [data]
        # No file at all is cleaned as one missing file, so "required" still applies.
        cleaned = [super().clean(item, initial) for item in items or [None]]
        return [upload for upload in cleaned if upload]


class UploadForm(DashboardForm):
    # Django's form metaclass moves declared fields into ``base_fields``, so this does not
    # replace ``BaseForm.files`` at run time; the stubs cannot know that.
    files = MultipleFileField(  # type: ignore[assignment]
        label="Session files",
        help_text="Each file is read on its own, except a Claude Code session's sub-agent "
        "files, read with their session when they come with it (or in its folder or a zip).",
    )
    # What the page names as readable: the engine's own list, so it names every format the
    # upload takes and nothing it does not.
    readable_formats = gcengine.READABLE_FORMATS
    readable_containers = gcengine.READABLE_CONTAINERS

    # Left out, the upload goes to the current project.
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), empty_label=None, label="Project", required=False
    )

    def __init__(self, *args: Any, projects: QuerySet[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["files"].widget.attrs.update(
            {"accept": ".json,.jsonl,.traj,.zip,application/json,application/zip"}
        )
        project_field = self.fields["project"]
        assert isinstance(project_field, forms.ModelChoiceField)
        project_field.queryset = projects


# A context window larger than any model's is a typo, not a question worth answering.
MAX_CONTEXT_LIMIT = 100_000_000


class WindowForm(DashboardForm):
    """ "Pretend the window is 8,000 tokens": another context window to see the session, its
    runs, previews and replays against (the session's own stays what the file says)."""

    window = forms.IntegerField(
        label="Try another window",
        required=False,
        min_value=gcengine.MIN_CONTEXT_LIMIT,
        max_value=MAX_CONTEXT_LIMIT,
        widget=forms.NumberInput(attrs={"step": 1000, "placeholder": "e.g. 8000"}),
        help_text="Tokens. Every figure, run, preview and replay started here uses it.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The run and replay forms on the same page carry a window field of their own.
        kwargs.setdefault("auto_id", "id_try_%s")
        super().__init__(*args, **kwargs)

    def chosen(self) -> int | None:
        """The window asked for, if the form is valid and names one."""
        return self.cleaned_data.get("window") if self.is_valid() else None


def _window_field() -> forms.IntegerField:
    """The window a run or replay form carries from the page it is on (hidden)."""
    return forms.IntegerField(
        required=False,
        min_value=gcengine.MIN_CONTEXT_LIMIT,
        max_value=MAX_CONTEXT_LIMIT,
        widget=forms.HiddenInput,
    )


def _version_choices(versions: Sequence[PolicyVersion]) -> list[tuple[str, str]]:
    return [(str(v.pk), f"{v.policy.name} (version {v.number})") for v in versions]


class RunForm(DashboardForm):
    """A stored policy version or a pasted gc.json, and an optional plugin override."""

    policy_version = forms.ChoiceField(label="Stored policy", required=False)
    gc_json = forms.CharField(
        label="Or paste a gc.json",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text="Used instead of the stored policy when filled in.",
    )
    plugin = forms.ChoiceField(
        label="Plugin",
        required=False,
        help_text="Leave on the policy's own strategy, or pick another installed one.",
    )
    window = _window_field()
    compaction = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)

    def __init__(
        self,
        *args: Any,
        versions: Sequence[PolicyVersion],
        plugins: Sequence[str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.versions = {str(v.pk): v for v in versions}
        _choice_field(self, "policy_version").choices = [("", "—"), *_version_choices(versions)]
        _choice_field(self, "plugin").choices = [
            ("", "the policy's own"),
            *((p, p) for p in plugins),
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("gc_json", "").strip() and not cleaned.get("policy_version"):
            raise forms.ValidationError("Choose a stored policy or paste a gc.json.")
        return cleaned

    def run_arguments(self) -> dict[str, Any]:
        """Keyword arguments for ``background.run_start`` (after ``is_valid()``).

        A pasted gc.json is handed over as bytes, so the engine reads it as JSON text and
        never as a file name.
        """
        text = self.cleaned_data["gc_json"].strip()
        arguments: dict[str, Any] = {
            "plugin": self.cleaned_data["plugin"] or None,
            "context_limit": self.cleaned_data.get("window"),
            "compaction_id": self.cleaned_data.get("compaction") or "",
        }
        if text:
            arguments["config"] = text.encode()
        else:
            arguments["policy_version"] = self.versions[self.cleaned_data["policy_version"]]
        return arguments


class ReplayForm(DashboardForm):
    policy_version = forms.ChoiceField(label="Policy")
    window = _window_field()
    compaction = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)

    def __init__(self, *args: Any, versions: Sequence[PolicyVersion], **kwargs: Any) -> None:
        # The session page also shows RunForm, whose field has the same name: distinct ids
        # keep each label on its own select.
        kwargs.setdefault("auto_id", "id_replay_%s")
        super().__init__(*args, **kwargs)
        self.versions = {str(v.pk): v for v in versions}
        _choice_field(self, "policy_version").choices = _version_choices(versions)

    def chosen_version(self) -> PolicyVersion:
        return self.versions[self.cleaned_data["policy_version"]]

    def chosen_window(self) -> int | None:
        return self.cleaned_data.get("window")

    def chosen_compaction(self) -> str:
        return str(self.cleaned_data.get("compaction") or "")


def _choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field


# --- Policies --------------------------------------------------------------------------------

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


class _ListField(forms.Field):
    """Repeated inputs with one name (the pinned list); blank entries are ignored."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[Any]:
        if value in self.empty_values:
            return []
        values = value if isinstance(value, list | tuple) else [value]
        return [self.item(str(v).strip()) for v in values if str(v).strip()]

    def item(self, value: str) -> Any:
        return value


class TurnListField(_ListField):
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


class RestoreForm(DashboardForm):
    """The stashed segments to put back, by segment id (the ticked rows of the stash page);
    the service says which ids the run's stash does not hold."""

    segments = _ListField(
        label="Segments to restore",
        error_messages={"required": "Tick at least one stashed segment to restore."},
    )


def _number(value: Any) -> Any:
    """80.0 shows as 80 in a number field; other values pass through."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def flat_gc_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """The flat shape of either gc.json shape, as far as it can be read (for refilling a form
    from a file the engine refused; the engine itself decides what is valid)."""
    if "plugin" in data or "config" in data:
        inner = data.get("config")
        return {"type": data.get("plugin"), **(inner if isinstance(inner, Mapping) else {})}
    return dict(data)


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
            default = field.choices[0]
            control = forms.ChoiceField(
                required=False,
                choices=[("", f"{default} (default)"), *((c, c) for c in field.choices)],
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
            control = _ListField(required=False)
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


# --- Projects, members and tokens --------------------------------------------------------------


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200, label="Project name")


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, label="User name")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)

    def clean_username(self) -> Any:
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=name, is_active=True).first()
        if user is None:
            raise forms.ValidationError(f"No active user is named {name!r}.")
        return user


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, label="Token name", help_text="Where it is used, e.g. “CI”."
    )
    projects = forms.ModelMultipleChoiceField(
        queryset=Project.objects.none(), widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, projects: QuerySet[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["projects"]
        assert isinstance(field, forms.ModelMultipleChoiceField)
        field.queryset = projects


class AuditFilterForm(forms.Form):
    """Filters of the audit log; every one is optional and a bad one is ignored."""

    action = forms.ChoiceField(choices=[("", "Any action"), *AuditAction.choices], required=False)
    actor = forms.CharField(max_length=150, required=False, label="Who")
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))


# --- Compaction quality: gates, prices, export ------------------------------------------------


class GatesForm(DashboardForm):
    """The least anchor retention a project accepts per class, in percent; empty, no gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for info in gcengine.ANCHOR_CLASSES:
            self.fields[f"gate_{info.anchor_class.value}"] = forms.FloatField(
                label=info.label[0].upper() + info.label[1:],
                required=False,
                min_value=0,
                max_value=100,
                widget=forms.NumberInput(attrs={"step": "any", "placeholder": "no gate"}),
                help_text=f"Percent. Weight {info.weight}: {info.finds}.",
            )

    @staticmethod
    def initial_for(gates: Mapping[gcengine.AnchorClass, float]) -> dict[str, float]:
        return {f"gate_{cls.value}": round(minimum * 100, 4) for cls, minimum in gates.items()}

    def gates(self) -> dict[str, float]:
        """As the engine reads them: class -> least recall from 0 to 1."""
        return {
            name.removeprefix("gate_"): value / 100
            for name, value in self.cleaned_data.items()
            if value is not None
        }


PRICE_FIELDS = (
    ("model", "Model name starts with"),
    ("label", "Label"),
    ("input_per_mtok", "Input $ / M tokens"),
    ("cache_write_per_mtok", "Cache write $ / M"),
    ("cache_read_per_mtok", "Cache read $ / M"),
    ("output_per_mtok", "Output $ / M"),
    ("min_cacheable_tokens", "Least cacheable prompt"),
    ("source", "Source"),
    ("as_of", "Read on"),
)
# Blank rows the price table offers for new models.
NEW_PRICE_ROWS = 2


def price_rows(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows the price table form shows: each entry, then blank rows for new models."""
    blank = {name: "" for name, _ in PRICE_FIELDS}
    return [{**blank, **dict(entry)} for entry in table] + [dict(blank)] * NEW_PRICE_ROWS


def price_table_posted(data: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """The entries a posted price table holds, as the engine reads them (rows without a model
    name and rows ticked for removal left out), and for each entry its row on the page, so an
    error the engine names (``prices[1].input_per_mtok``) is shown on the right row."""
    entries: list[dict[str, Any]] = []
    rows: list[int] = []
    count = min(query_int(data.get("price-count")), 500)  # a forged count is no rows
    for row in range(count):
        values = {
            name: str(data.get(f"price-{row}-{name}", "")).strip() for name, _ in PRICE_FIELDS
        }
        if not values["model"] or data.get(f"price-{row}-remove"):
            continue
        for optional in ("min_cacheable_tokens", "output_per_mtok"):
            if not values[optional]:
                values.pop(optional)
        entries.append(values)
        rows.append(row)
    return entries, rows


class ProviderForm(DashboardForm):
    """The provider that writes a project's summaries; the key is write-only: the field is
    never filled in, left empty keeps the stored key, and "remove" drops it."""

    protocol = forms.ChoiceField(
        label="Provider",
        required=False,
        choices=[
            ("", "Off: the extractive summarizer writes every summary"),
            ("openai", "OpenAI-compatible (OpenAI, Ollama, vLLM, llama.cpp)"),
            ("anthropic", "Anthropic"),
        ],
    )
    model = forms.CharField(label="Model", required=False, max_length=200)
    base_url = forms.URLField(
        label="Endpoint",
        required=False,
        max_length=500,
        help_text="Empty: the provider's own API. An OpenAI-compatible one ends in /v1.",
    )
    api_key = forms.CharField(
        label="API key",
        required=False,
        max_length=500,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Write-only. Empty keeps the stored key (without one: the app's "
        "JAATO_GC_PROVIDER_API_KEY).",
    )
    remove_key = forms.BooleanField(label="Remove the stored key", required=False)
    timeout = forms.FloatField(label="Timeout (seconds)", min_value=1, max_value=600, initial=60.0)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("protocol") and not cleaned.get("model"):
            self.add_error("model", "Name the model that writes the summaries.")
        return cleaned

    def key_change(self) -> str | None:
        """The key to store: None keeps the stored one, "" removes it."""
        if self.cleaned_data.get("remove_key"):
            return ""
        return self.cleaned_data.get("api_key") or None


class ExportForm(DashboardForm):
    """The window a policy is exported for: targets that count absolute tokens need it."""

    window = forms.IntegerField(
        label="Context window",
        min_value=gcengine.MIN_CONTEXT_LIMIT,
        max_value=MAX_CONTEXT_LIMIT,
        widget=forms.NumberInput(attrs={"step": 1000}),
        help_text="Tokens. Thresholds of the targets that count tokens are worked out from it.",
    )
