"""What several families of use cases need: the project, a gc.json as the engine reads it, the
pins a session adds to every policy run on it, and the errors more than one family raises.

A family's module imports this one (and the other shared modules, ``stored_sessions`` and
``work``), never another family's: ``tests/web/test_layering.py`` holds them to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse

import gcengine
from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    Policy,
    PolicyKind,
    Project,
    SummaryProvider,
)
from jaato_web.errors import InputError

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    Actor = AbstractBaseUser | AnonymousUser | None

DEFAULT_PROJECT_SLUG = "default"


class UploadTooLarge(InputError):
    """The upload is over ``JAATO_UPLOAD_MAX_BYTES``; nothing was read or stored."""

    status = 413

    def __init__(self, size: int, limit: int, what: str = "file") -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the {what} is {size:,} bytes; the limit is {limit:,} bytes")

    def details(self) -> dict[str, Any]:
        return {"limit_bytes": self.limit}


class PolicyKindError(InputError):
    """A planner config where a GC policy is needed (a run, a default, pins), or the other
    way round."""

    def __init__(self, policy: Policy, key: str = "policy", why: str = "") -> None:
        wanted = "planner config" if policy.kind == PolicyKind.GC else "GC policy"
        reason = f"{policy.name} is a {policy.get_kind_display()}, not a {wanted}"
        super().__init__(f"{reason}: {why}" if why else reason, key)


def project_default() -> Project:
    project, _ = Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default project"}
    )
    return project


@transaction.atomic
def project_set_default_policy(
    *, project: Project, policy: Policy | None, actor: Actor = None
) -> None:
    if policy is not None:
        gc_policy_checked(
            policy, why="only a GC policy can be the project's default, which runs on every upload."
        )
    Project.objects.filter(pk=project.pk).update(default_policy=policy)
    project.default_policy = policy
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.POLICY_DEFAULT,
        target=policy.name if policy else "no default policy",
        target_url=reverse("policy_list"),
        detail={"policy": policy.pk if policy else None},
    )


def config_validated(config: Any) -> gcengine.GCConfig:
    """The engine's reading of a gc.json, independent of this server's environment."""
    return gcengine.load_gc_config(config, env={})


def jaato_config_validated(config: Any) -> tuple[gcengine.GCConfig, bool]:
    """The engine's reading of a gc.json that came from JAATO (an imported file): one naming
    JAATO's own plugin and no rules is read with JAATO's rules, as JAATO runs it; and whether
    that was so (a page says it)."""
    return gcengine.load_jaato_gc_config(config, env={})


def gc_policy_checked(policy: Policy, key: str = "policy", why: str = "") -> Policy:
    """``policy`` when it is a GC policy; a planner config cannot run, pin or be a default
    (``why`` says which of these was asked, for the refusal)."""
    if policy.kind != PolicyKind.GC:
        raise PolicyKindError(policy, key, why)
    return policy


def compaction_checked(session: AgentSession, compaction_id: str) -> str:
    """``compaction_id`` if the session holds that compaction (so a queued run or replay of
    the history before it cannot fail for naming none)."""
    known = {c["id"] for c in session.agent_state.get("compactions") or []}
    if compaction_id and compaction_id not in known:
        raise gcengine.CompactionNotFoundError(
            f"{session.label} has no compaction {compaction_id!r}"
        )
    return compaction_id


def session_pins(*, session: AgentSession) -> tuple[set[int], set[str]]:
    """The turns (stable indices) and messages pinned in this session."""
    turns: set[int] = set()
    ids: set[str] = set()
    for turn_index, message_id in session.pins.values_list("turn_index", "message_id"):
        if turn_index is not None:
            turns.add(turn_index)
        else:
            ids.add(message_id)
    return turns, ids


def config_with_session_pins(config: gcengine.GCConfig, session: AgentSession) -> gcengine.GCConfig:
    """The policy as it runs on this session: its own pins and the session's together."""
    turns, ids = session_pins(session=session)
    if turns <= set(config.pinned_turn_indices) and ids <= set(config.pinned_message_ids):
        return config
    data = gcengine.dump_gc_config(config)
    data["pinned_turn_indices"] = sorted(set(config.pinned_turn_indices) | turns)
    data["pinned_message_ids"] = list(dict.fromkeys([*config.pinned_message_ids, *sorted(ids)]))
    return config_validated(data)


def project_prices(project: Project) -> list[gcengine.ModelPrice]:
    """The price table the project's replays are costed with."""
    if project.prices is None:
        return list(gcengine.DEFAULT_PRICES)
    return gcengine.load_price_table(project.prices)


def project_summary_provider(project: Project) -> gcengine.ProviderSummarizer:
    """The ``provider`` summarizer of the project's runs: its provider when an admin set one
    (its key, else the app's ``JAATO_GC_PROVIDER_API_KEY``), priced from the project's table;
    else the extractive summarizer writes every summary and the run says why."""
    fallback = gcengine.ExtractiveSummarizer()
    provider = SummaryProvider.objects.filter(project=project).first()
    if provider is None:
        return gcengine.ProviderSummarizer(
            None,
            fallback,
            unavailable="model-written summaries are off in this project (an admin sets the "
            "provider on its quality page)",
        )
    chosen = gcengine.ProviderSettings.model_validate(
        {
            "protocol": provider.protocol,
            "model": provider.model,
            "base_url": provider.base_url or None,
            "api_key": provider.api_key or settings.JAATO_GC_PROVIDER_API_KEY or None,
            "timeout": provider.timeout,
        }
    )
    price = gcengine.price_for_model(provider.model, project_prices(project))
    per_mtok = (
        (price.input_per_mtok, price.output_per_mtok)
        if price is not None and price.output_per_mtok is not None
        else None
    )
    return gcengine.ProviderSummarizer(chosen, fallback, per_mtok)


def config_with_project_summarizer(
    config: gcengine.GCConfig, project: Project
) -> gcengine.GCConfig:
    """``config`` with the project's provider summarizer in place of ``"provider"`` (its
    admin's settings, never the worker's environment alone); any other config as it is."""
    if config.plugin_config.get("summarizer") != "provider":
        return config
    summarizer = project_summary_provider(project)
    return config.model_copy(
        update={"plugin_config": {**config.plugin_config, "summarizer": summarizer}}
    )
