"""A project's quality settings: its retention gates and the price table its replays are
costed with; the engine's defaults until the project sets its own."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema

import gcengine
from jaato_web.api.auth import EDIT_POLICY, VIEW, access_of
from jaato_web.api.schemas import ObjectIn, Problem
from jaato_web.dashboard import services
from jaato_web.dashboard.models import Project

router = Router(tags=["quality"])


class QualityOut(Schema):
    gates: dict[str, float] = Field(description="Least anchor retention per class, 0 to 1")
    prices: list[gcengine.ModelPrice]
    gates_are_defaults: bool
    prices_are_defaults: bool


class QualityIn(ObjectIn):
    """A field left out keeps what is stored; null goes back to the engine's defaults."""

    gates: dict[str, Any] | None = None
    prices: list[Any] | None = None


def _quality_out(project: Project) -> dict[str, object]:
    return {
        "gates": {cls.value: minimum for cls, minimum in services.project_gates(project).items()},
        "prices": services.project_prices(project),
        "gates_are_defaults": project.retention_gates is None,
        "prices_are_defaults": project.prices is None,
    }


@router.get(
    "/projects/{int:project_id}/quality",
    response=QualityOut,
    summary="A project's retention gates and price table",
    auth=VIEW,
)
def project_quality(request: HttpRequest, project_id: int) -> dict[str, object]:
    return _quality_out(access_of(request).project(project_id))


@router.put(
    "/projects/{int:project_id}/quality",
    response={200: QualityOut, 400: Problem},
    summary="Set a project's retention gates and price table",
    auth=EDIT_POLICY,
)
def set_project_quality(
    request: HttpRequest, project_id: int, payload: QualityIn
) -> dict[str, object]:
    """Gates as ``{"decisions": 0.95}``, prices as a list of model entries; each is checked
    by the engine, and a refusal names the class, or the entry and field (``prices[1].model``)."""
    project = access_of(request).project(project_id)
    given = payload.model_fields_set
    gates = payload.gates if "gates" in given else project.retention_gates
    prices = payload.prices if "prices" in given else project.prices
    services.project_quality_save(
        project=project, gates=gates, prices=prices, actor=access_of(request).user
    )
    return _quality_out(project)


class SessionCostOut(Schema):
    cost: gcengine.SessionCost = Field(
        description="Every recorded call of every context priced as the model that answered "
        "it; the agent's calls, its compaction call and its sub-agents' totalled apart"
    )
    prices: list[gcengine.ModelPrice] = Field(
        description="The project's price table, each row with its source and date"
    )


@router.get(
    "/sessions/{int:session_id}/cost",
    response=SessionCostOut,
    summary="A whole session's recorded cost, its compaction call included",
    auth=VIEW,
)
def session_cost(request: HttpRequest, session_id: int) -> dict[str, object]:
    session = access_of(request).session(session_id)
    return {
        "cost": services.session_recorded_cost(session),
        "prices": services.project_prices(session.project),
    }
