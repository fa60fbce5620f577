"""Forms of the account and project pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from jaato_web.dashboard.models import Project
from jaato_web.teams.models import AuditAction
from jaato_web.teams.permissions import Role


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
