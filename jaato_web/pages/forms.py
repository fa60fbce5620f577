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

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet

import gcengine
from jaato_web.dashboard.models import AuditAction, PolicyVersion, Project
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


class ListField(forms.Field):
    """Repeated inputs with one name (the pinned list); blank entries are ignored."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[Any]:
        if value in self.empty_values:
            return []
        values = value if isinstance(value, list | tuple) else [value]
        return [self.item(str(v).strip()) for v in values if str(v).strip()]

    def item(self, value: str) -> Any:
        return value


class RestoreForm(DashboardForm):
    """The stashed segments to put back, by segment id (the ticked rows of the stash page);
    the service says which ids the run's stash does not hold."""

    segments = ListField(
        label="Segments to restore",
        error_messages={"required": "Tick at least one stashed segment to restore."},
    )


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
