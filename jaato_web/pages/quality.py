"""Compaction quality pages: a project's retention gates and price table, and a policy
version exported as other frameworks' settings."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

import gcengine
from jaato_web.dashboard import presenters, selectors, services
from jaato_web.dashboard.models import Project, SummaryProvider
from jaato_web.http import PageRequest
from jaato_web.pages.forms import (
    PRICE_FIELDS,
    ExportForm,
    GatesForm,
    ProviderForm,
    price_rows,
    price_table_posted,
)
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action

_KEY_ROW = "prices["


def _settings_page(
    request: PageRequest,
    project: Project,
    gates_form: GatesForm,
    rows: list[dict[str, Any]],
    *,
    price_error: str = "",
    status: int = 200,
    provider_form: ProviderForm | None = None,
) -> HttpResponse:
    provider = SummaryProvider.objects.filter(project=project).first()
    return render(
        request,
        "quality/settings.html",
        {
            "project": project,
            "provider_form": provider_form or _provider_form(provider),
            "provider": provider,
            "gates_form": gates_form,
            "rows": rows,
            "fields": PRICE_FIELDS,
            "price_error": price_error,
            "gates_are_defaults": project.retention_gates is None,
            "default_gates": presenters.gates_in_words(gcengine.DEFAULT_RETENTION_GATES),
            "prices_are_defaults": project.prices is None,
            "classes": gcengine.ANCHOR_CLASSES,
        },
        status=status,
    )


@require_GET
@requires(Action.VIEW)
def project_quality(request: PageRequest, project_id: int) -> HttpResponse:
    """The gates every run, replay and compaction of the project is held to, and the prices
    its replays are costed with."""
    project = request.access.project(project_id)
    gates_form = GatesForm(initial=GatesForm.initial_for(services.project_gates(project)))
    table = [price.model_dump() for price in services.project_prices(project)]
    return _settings_page(request, project, gates_form, price_rows(table))


def _row_error(error: gcengine.PriceTableError, rows: list[int]) -> str:
    """The engine names the entry it refused (``prices[1].input_per_mtok``); the page names
    the row the user typed it in."""
    key = error.key or ""
    if key.startswith(_KEY_ROW) and "]" in key:
        entry = int(key[len(_KEY_ROW) : key.index("]")])
        field = key[key.index("]") + 2 :] or "entry"
        labels = dict(PRICE_FIELDS)
        return f"Row {rows[entry] + 1}, {labels.get(field, field)}: {error.reason}"
    return error.reason


@require_POST
@requires(Action.EDIT_POLICY)
def project_quality_save(request: PageRequest, project_id: int) -> HttpResponse:
    """Save the gates and the price table as posted, or go back to the engine's defaults."""
    project = request.access.project(project_id)
    entries, rows = price_table_posted(request.POST)
    gates_form = GatesForm(request.POST)
    if request.POST.get("reset") == "defaults":
        services.project_quality_save(project=project, gates=None, prices=None, actor=request.user)
        messages.success(request, "The project uses the default gates and prices again.")
        return redirect("project_quality", project_id=project.pk)
    if not gates_form.is_valid():
        return _settings_page(request, project, gates_form, price_rows(entries), status=400)
    try:
        services.project_quality_save(
            project=project, gates=gates_form.gates(), prices=entries, actor=request.user
        )
    except gcengine.RetentionGateError as error:
        gates_form.add_error(f"gate_{error.key}" if error.key else None, error.reason)
    except gcengine.PriceTableError as error:
        return _settings_page(
            request,
            project,
            gates_form,
            price_rows(entries),
            price_error=_row_error(error, rows),
            status=400,
        )
    else:
        messages.success(request, f"Saved the gates and prices of {project.name}.")
        return redirect("project_quality", project_id=project.pk)
    return _settings_page(request, project, gates_form, price_rows(entries), status=400)


def _provider_form(provider: SummaryProvider | None) -> ProviderForm:
    if provider is None:
        return ProviderForm()
    return ProviderForm(
        initial={
            "protocol": provider.protocol,
            "model": provider.model,
            "base_url": provider.base_url,
            "timeout": provider.timeout,
        }
    )


@require_POST
@requires(Action.MANAGE_MEMBERS)
def project_provider_save(request: PageRequest, project_id: int) -> HttpResponse:
    """Set (or turn off) the provider that writes the project's summaries: admins only, as
    it spends the project's money and holds its key."""
    project = request.access.project(project_id)
    form = ProviderForm(request.POST)
    if not form.is_valid():
        gates_form = GatesForm(initial=GatesForm.initial_for(services.project_gates(project)))
        table = [price.model_dump() for price in services.project_prices(project)]
        return _settings_page(
            request, project, gates_form, price_rows(table), provider_form=form, status=400
        )
    data = form.cleaned_data
    services.project_provider_save(
        project=project,
        protocol=data["protocol"],
        model=data["model"],
        base_url=data["base_url"],
        api_key=form.key_change(),
        timeout=data["timeout"],
        actor=request.user,
    )
    messages.success(
        request,
        f"Model-written summaries in {project.name} are "
        + (f"written by {data['model']}." if data["protocol"] else "off."),
    )
    return redirect("project_quality", project_id=project.pk)


@require_GET
@requires(Action.VIEW)
def policy_version_export(request: PageRequest, policy_id: int, number: int) -> HttpResponse:
    """A version as the nearest settings of other frameworks, for a chosen context window
    (by default the window of the project's newest session; without one, the page asks)."""
    policy = request.access.policy(policy_id)
    version = selectors.policy_version_by_number(policy=policy, number=number)
    try:
        initial = {"window": selectors.export_window(project=policy.project)}
    except gcengine.ConfigError:
        initial = None  # no session to take the window from: the page asks for it
    form = ExportForm(request.GET if "window" in request.GET else initial)
    exported = None
    if form.is_valid():
        config = services.config_validated(version.config)
        exported = gcengine.export_policy(config, form.cleaned_data["window"])
    return render(
        request,
        "quality/export.html",
        {
            "policy": policy,
            "version": version,
            "form": form,
            "exported": exported,
        },
        status=200 if exported or not form.is_bound else 400,
    )
