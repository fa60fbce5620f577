"""Forms of the dashboard pages: widgets and coercion only.

The rules live elsewhere: the engine decides what a valid session or gc.json is, and the
services decide what happens to them. A form here turns request data into the arguments those
functions take, and gives their errors a place next to the right field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet

from jaato_web.dashboard.models import PolicyVersion, Project


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
        help_text="JAATO session files, budget snapshots, OpenAI or Anthropic exports (JSON).",
    )

    # Left out, the upload goes to the current project.
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), empty_label=None, label="Project", required=False
    )

    def __init__(self, *args: Any, projects: QuerySet[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["files"].widget.attrs.update({"accept": ".json,.jsonl,application/json"})
        project_field = self.fields["project"]
        assert isinstance(project_field, forms.ModelChoiceField)
        project_field.queryset = projects


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
        """Keyword arguments for ``services.run_start`` (after ``is_valid()``).

        A pasted gc.json is handed over as bytes, so the engine reads it as JSON text and
        never as a file name.
        """
        text = self.cleaned_data["gc_json"].strip()
        arguments: dict[str, Any] = {"plugin": self.cleaned_data["plugin"] or None}
        if text:
            arguments["config"] = text.encode()
        else:
            arguments["policy_version"] = self.versions[self.cleaned_data["policy_version"]]
        return arguments


class ReplayForm(DashboardForm):
    policy_version = forms.ChoiceField(label="Policy")

    def __init__(self, *args: Any, versions: Sequence[PolicyVersion], **kwargs: Any) -> None:
        # The session page also shows RunForm, whose field has the same name: distinct ids
        # keep each label on its own select.
        kwargs.setdefault("auto_id", "id_replay_%s")
        super().__init__(*args, **kwargs)
        self.versions = {str(v.pk): v for v in versions}
        _choice_field(self, "policy_version").choices = _version_choices(versions)

    def chosen_version(self) -> PolicyVersion:
        return self.versions[self.cleaned_data["policy_version"]]


def _choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field
