"""Policies: GC policies and planner configs (a policy of another kind), their versions, the
project's pins in a policy and a session's own pins, and the rankings of versions over sessions
(recorded here, worked out by a worker: ``background.ranking_request``).

Every save is a new version, checked against the version it was made from, so two people
editing one policy never overwrite each other unseen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import Max, Min
from django.urls import reverse

import gcengine
from jaato_web.dashboard import presenters, storage
from jaato_web.dashboard.audit import actor_name, audit_record
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    JobStatus,
    Policy,
    PolicyKind,
    PolicyRanking,
    PolicyVersion,
    Project,
    SessionPin,
    SessionTurn,
)
from jaato_web.dashboard.services.common import (
    UploadTooLarge,
    config_validated,
    config_with_session_pins,
    gc_policy_checked,
    jaato_config_validated,
)
from jaato_web.errors import InputError, without_nul

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor

# A gc.json is small; anything bigger is not a policy (JAATO's own files are under 1 KB).
POLICY_MAX_BYTES = 256 * 1024
POLICY_NAME_MAX = 200


class PolicyConflict(InputError):
    """A save based on an older version than the one stored now.

    ``base_config`` is the gc.json of the version the change was made from (None when that
    number does not exist), so callers can show what changed underneath the user.
    """

    status = 409

    def __init__(
        self,
        policy: Policy,
        base: int,
        current: PolicyVersion,
        base_config: dict[str, Any] | None = None,
    ) -> None:
        self.policy = policy
        self.base = base
        self.current = current
        self.base_config = base_config
        super().__init__(
            f"{policy.name} changed since you loaded version {base}: "
            f"version {current.number} was saved by {current.author or 'someone'}",
            "base_version",
        )

    def details(self) -> dict[str, Any]:
        return {
            "base_version": self.base,
            "current_version": self.current.number,
            "current_author": self.current.author,
            "current_message": self.current.message,
            "current_config": self.current.config,
            # What changed between the version the client started from and the stored one.
            "differences": presenters.config_changes(self.base_config or {}, self.current.config),
        }


class PolicyNameError(InputError):
    """A policy name that is empty, too long, or already used in the project."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "name")


class PinError(InputError):
    """A pin that cannot be placed: no policy to hold it, or no such turn in the session."""


class PlannerConfigError(InputError):
    """Planner settings the engine refuses; ``key`` names the setting (``shares.rag``)."""

    def __init__(self, error: gcengine.PlannerError) -> None:
        key, reason = _planner_problem(str(error))
        super().__init__(reason, key)


# How the engine names what it validates in a PlannerError ("planner settings: ttl_policy:
# ...", "section shares: rag: ..."), and where those settings sit in a planner config.
_PLANNER_WHAT = {"planner settings": "", "section shares": "shares"}


def _planner_problem(message: str) -> tuple[str | None, str]:
    """The setting a planner error names (dotted, from the config's top) and its reason."""
    what, _, rest = message.partition(": ")
    if what not in _PLANNER_WHAT or not rest:
        return None, message
    base = _PLANNER_WHAT[what]
    where, _, reason = rest.partition(": ")
    if reason and all(step.isidentifier() for step in where.split(".")):
        return ".".join(filter(None, (base, where))), reason
    return base or None, rest


def planner_config_validated(config: Any) -> gcengine.PlannerConfig:
    """The engine's reading of planner settings (``PlannerConfigError`` names the one at
    fault)."""
    if isinstance(config, gcengine.PlannerConfig):
        return config
    try:
        return gcengine.PlannerConfig.model_validate(config)
    except gcengine.PlannerError as error:
        raise PlannerConfigError(error) from None


def config_canonical(config: Any, kind: str = PolicyKind.GC) -> dict[str, Any]:
    """What is stored for a policy: the flat gc.json JAATO's own loader accepts, or for a
    planner config every setting the engine reads, defaults written out.

    Every version is stored whole and copied into every run, so one size limit applies to
    every door (a gc.json is a few hundred bytes; the limit leaves room for long pin lists).
    """
    if kind == PolicyKind.PLANNER:
        stored = planner_config_validated(config).model_dump(mode="json")
    else:
        stored = gcengine.dump_gc_config(config_validated(config))
    policy_size_check(len(json.dumps(stored)))
    return stored


def _policy_name_checked(project: Project, name: str, kind: str) -> str:
    name = without_nul(name, "name").strip()
    noun = PolicyKind(kind).label if kind != PolicyKind.GC else "policy"
    if not name:
        raise PolicyNameError(f"give the {noun} a name")
    if len(name) > POLICY_NAME_MAX:
        raise PolicyNameError(f"at most {POLICY_NAME_MAX} characters")
    if Policy.objects.filter(project=project, kind=kind, name=name).exists():
        raise PolicyNameError(f"a {noun} named {name!r} already exists")
    return name


@transaction.atomic
def policy_create(
    *,
    project: Project,
    name: str,
    config: Any,
    message: str = "",
    actor: Actor = None,
    kind: str = PolicyKind.GC,
) -> Policy:
    """A new policy with ``config`` as version 1: a gc.json, or with ``kind`` "planner"
    planner settings (each kind has its own names)."""
    if kind not in PolicyKind.values:
        raise InputError(f"kind is {' or '.join(PolicyKind.values)}, not {kind!r}", "kind")
    without_nul(message, "message")
    stored = config_canonical(config, kind)
    name = _policy_name_checked(project, name, kind)
    try:
        with transaction.atomic():
            policy = Policy.objects.create(project=project, name=name, kind=kind)
    except IntegrityError:
        # Someone created the same name between the check and the insert.
        raise PolicyNameError(f"a policy named {name!r} already exists") from None
    version = PolicyVersion.objects.create(
        policy=policy,
        number=1,
        config=stored,
        message=message or "created",
        author=_author(actor),
    )
    _policy_audit(version, actor)
    return policy


def policy_import(
    *,
    project: Project,
    data: bytes | str,
    filename: str = "",
    name: str = "",
    message: str = "",
    actor: Actor = None,
) -> Policy:
    """Create a policy from a gc.json file's bytes or pasted text, in either shape.

    Without a name, the policy is named after the file (``budget-80-60.json`` gives
    ``budget-80-60``); a file that says nothing by its name (``gc.json``, JAATO's own name for
    every policy, or pasted text) is named after its strategy, numbered if that name is taken.
    Text is encoded before it reaches the engine, which would read a string that does not look
    like JSON as a path on this server.

    The file came from JAATO: one naming JAATO's own plugin (``budget``, ``gc_truncate``) and
    no ``rules`` is stored with ``rules: "jaato"``, since that is how JAATO runs it
    (``jaato_config_validated``); a policy written here keeps the engine's rules.
    """
    raw = data.encode() if isinstance(data, str) else data
    policy_size_check(len(raw))
    without_nul(name, "name")
    without_nul(message, "message")
    config, _ = jaato_config_validated(raw)
    given = name.strip()
    if not given:
        named = policy_name_from_file(filename) or f"Imported {config.strategy_name} policy"
        given = _policy_name_free(project, named)
    return policy_create(
        project=project,
        name=given,
        config=gcengine.dump_gc_config(config),
        message=message or "imported",
        actor=actor,
    )


def policy_size_check(size: int) -> None:
    """Refuse a gc.json over the limit from its size, before it is read or parsed."""
    if size > POLICY_MAX_BYTES:
        raise UploadTooLarge(size, POLICY_MAX_BYTES, what="gc.json")


def policy_name_from_file(filename: str) -> str:
    """A policy's name from its file's (``budget-80-60.json`` gives ``budget-80-60``); empty
    for a name that tells nothing: ``gc.json`` is what JAATO calls every policy file."""
    stem = PurePath(filename).name.removesuffix(".json").strip()
    return "" if stem == "gc" else stem[:POLICY_NAME_MAX]


def _policy_name_free(project: Project, name: str) -> str:
    """``name``, or ``name 2``, ``name 3``... whichever the project does not use yet."""
    taken = set(
        Policy.objects.filter(
            project=project, kind=PolicyKind.GC, name__startswith=name
        ).values_list("name", flat=True)
    )
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name} {number}"
    return candidate


def _author(actor: Actor) -> str:
    """The name stored on a version; "system" for the demo loader and other scripts."""
    return actor_name(actor)


def _policy_audit(version: PolicyVersion, actor: Actor, action: AuditAction | None = None) -> None:
    policy = version.policy
    audit_record(
        project=policy.project,
        actor=actor,
        action=action or AuditAction.POLICY_SAVE,
        target=f"{policy.name} version {version.number}",
        target_url=reverse("policy_versions", args=[policy.pk]),
        detail={
            "policy": policy.pk,
            "kind": policy.kind,
            "version": version.number,
            "message": version.message,
        },
    )


def _latest_locked(policy: Policy) -> PolicyVersion:
    """The newest version, with the policy row locked until the transaction ends."""
    Policy.objects.select_for_update().filter(pk=policy.pk).get()
    current = policy.versions.order_by("-number").first()
    assert current is not None  # every policy is created with version 1
    return current


@transaction.atomic
def policy_save(
    *, policy: Policy, config: Any, base_number: int, message: str = "", actor: Actor = None
) -> PolicyVersion:
    """Store a new version, unless someone saved since ``base_number`` was loaded."""
    without_nul(message, "message")
    stored = config_canonical(config, policy.kind)
    current = _latest_locked(policy)
    if current.number != base_number:
        base = policy.versions.filter(number=base_number).values_list("config", flat=True).first()
        raise PolicyConflict(policy, base_number, current, base)
    version = PolicyVersion.objects.create(
        policy=policy,
        number=current.number + 1,
        config=stored,
        message=message,
        author=_author(actor),
    )
    _policy_audit(version, actor)
    return version


def policy_restore(
    *, policy: Policy, number: int, base_number: int | None = None, actor: Actor = None
) -> PolicyVersion:
    """Store version ``number``'s gc.json again, as a new version "restored version N".

    History is never rewritten: the restore is itself a version, so it can be undone the same
    way. ``base_number`` guards against restoring over a save the user has not seen.
    """
    old = policy.versions.get(number=number)
    with transaction.atomic():
        current = _latest_locked(policy)
        base = current.number if base_number is None else base_number
        return policy_save(
            policy=policy,
            config=old.config,
            base_number=base,
            message=f"restored version {number}",
            actor=actor,
        )


@dataclass(frozen=True)
class PinChange:
    """Pins to add and to take away, by stable turn index and by message id."""

    pin_turns: tuple[int, ...] = ()
    unpin_turns: tuple[int, ...] = ()
    pin_messages: tuple[str, ...] = ()
    unpin_messages: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pin_turns or self.unpin_turns or self.pin_messages or self.unpin_messages)

    def describe(self) -> str:
        """ "pinned turns 3, 5; unpinned message m-12", the default version message; turns are
        numbered as the session page shows them (index 2 is turn 3)."""
        parts = []
        for verb, turns, ids in (
            ("pinned", self.pin_turns, self.pin_messages),
            ("unpinned", self.unpin_turns, self.unpin_messages),
        ):
            if turns:
                noun = "turn" if len(turns) == 1 else "turns"
                numbers = ", ".join(str(gcengine.turn_number(t)) for t in sorted(turns))
                parts.append(f"{verb} {noun} {numbers}")
            if ids:
                noun = "message" if len(ids) == 1 else "messages"
                parts.append(f"{verb} {noun} {', '.join(sorted(ids))}")
        return "; ".join(parts)


def policy_pins_change(
    *,
    policy: Policy,
    change: PinChange,
    message: str = "",
    session: AgentSession | None = None,
    actor: Actor = None,
) -> PolicyVersion:
    """Pin and unpin turns and messages in a policy, for every session it runs on, as one new
    version (with ``message``, or one that lists the change). A change that leaves the pins as
    they are stores nothing and returns the newest version. With ``session``, every turn and
    message pinned must exist in it."""
    if policy.kind != PolicyKind.GC:
        raise PinError(f"{policy.name} is a planner config: only a GC policy holds pins", "policy")
    if not change:
        raise PinError("name at least one turn or message to pin or unpin", "turn_index")
    without_nul(message, "message")
    if session is not None:
        _pin_targets_check(session, change.pin_turns, change.pin_messages)
    with transaction.atomic():
        current = _latest_locked(policy)
        config = dict(current.config)
        turns = set(config.get("pinned_turn_indices") or [])
        ids = list(config.get("pinned_message_ids") or [])
        new_turns = (turns | set(change.pin_turns)) - set(change.unpin_turns)
        unpinned = set(change.unpin_messages)
        new_ids = [i for i in dict.fromkeys([*ids, *change.pin_messages]) if i not in unpinned]
        if new_turns == turns and new_ids == ids:
            return current
        config["pinned_turn_indices"] = sorted(new_turns)
        config["pinned_message_ids"] = new_ids
        version = PolicyVersion.objects.create(
            policy=policy,
            number=current.number + 1,
            config=config_canonical(config),
            message=(message.strip() or change.describe())[:500],
            author=_author(actor),
        )
        pinned_more = bool(new_turns - turns) or bool(set(new_ids) - set(ids))
        _policy_audit(version, actor, AuditAction.PIN if pinned_more else AuditAction.UNPIN)
    return version


@transaction.atomic
def session_pin(
    *,
    session: AgentSession,
    turn_index: int | None = None,
    message_id: str | None = None,
    pinned: bool | None = None,
    actor: Actor = None,
) -> bool:
    """Pin or unpin one turn (stable index) or message in this session only; ``pinned`` None
    toggles. Every later run, preview and replay of the session keeps what is pinned, with
    any policy. Returns whether the item is pinned now."""
    if (turn_index is None) == (message_id is None):
        raise PinError("give either a turn index or a message id", "turn_index")
    _pin_targets_check(
        session,
        () if turn_index is None else (turn_index,),
        () if message_id is None else (message_id,),
    )
    existing = session.pins.filter(
        turn_index=turn_index, message_id=message_id or ""
    ).select_for_update()
    now = not existing.exists() if pinned is None else pinned
    if now == existing.exists():
        return now
    noun = gcengine.turn_label(turn_index) if message_id is None else f"message {message_id}"
    if now:
        try:
            with transaction.atomic():
                SessionPin.objects.create(
                    session=session,
                    turn_index=turn_index,
                    message_id=message_id or "",
                    author=_author(actor),
                )
        except IntegrityError:
            return True  # pinned by someone else at the same moment, and recorded by them
    else:
        existing.delete()
    audit_record(
        project=session.project,
        actor=actor,
        action=AuditAction.PIN if now else AuditAction.UNPIN,
        target=f"{noun} of {session.label}",
        target_url=reverse("session_detail", args=[session.pk]),
        detail={"session": session.pk, "turn_index": turn_index, "message_id": message_id},
    )
    return now


def _pin_targets_check(
    session: AgentSession, turn_indices: Iterable[int], message_ids: Iterable[str]
) -> None:
    """Refuse a turn or message the session lacks (a pin there would keep nothing), naming it
    and, for turns, the range of turn indices the session has."""
    turns = SessionTurn.objects.filter(session=session)
    wanted_turns = set(turn_indices)
    found = set(turns.filter(turn_index__in=wanted_turns).values_list("turn_index", flat=True))
    missing_turns = sorted(wanted_turns - found)
    if missing_turns:
        shown = ", ".join(str(t) for t in missing_turns)
        noun = "turn" if len(missing_turns) == 1 else "turns"
        bounds = turns.aggregate(low=Min("turn_index"), high=Max("turn_index"))
        has = (
            f"its turn indices run from {bounds['low']} to {bounds['high']}"
            if bounds["low"] is not None
            else "it has no turns"
        )
        raise PinError(f"{session.label} has no {noun} {shown}: {has}", "turn_index")
    wanted_ids = set(message_ids)
    if wanted_ids:
        # Messages are stored packed, turn by turn; message pins are rare, so scan.
        for packed in turns.values_list("packed", flat=True).iterator():
            wanted_ids -= {m.message_id for m in storage.unpack_turn(packed)[0]}
            if not wanted_ids:
                return
        raise PinError(f"{session.label} has no message {sorted(wanted_ids)[0]!r}", "message_id")


# --- Rankings of versions over sessions ------------------------------------------------------

# Sessions one ranking replays at most; each is replayed once per version.
RANK_SESSIONS_MAX = 20
# Versions one ranking replays at most.
RANK_VERSIONS_MAX = 20
# What a ranking puts first, after staying within the window; the rest break ties.
RANK_ORDERS = {
    "retention": "the fewest collections under a gate, then the highest anchor retention at "
    "equal size",
    "cost": "the lowest cost with prompt caching",
    "tokens": "the fewest tokens sent",
}
RANKING_WAITING = "waiting for a worker"


class RankError(InputError):
    """A ranking that cannot be made: an unknown order, no session with turns, too many
    sessions or versions, or sessions and versions of another project (whose gates and prices
    differ)."""


def _ranking_digest(
    project: Project,
    sessions: list[AgentSession],
    versions: list[PolicyVersion],
    by: str,
    context_limit: int | None,
) -> str:
    """What a ranking's figures depend on: each version's gc.json as it runs on each session
    (with the session's pins), the sessions as uploaded, the order, the window, and the
    project's gates and prices."""
    configs = [config_validated(v.config) for v in versions]
    inputs = {
        "sessions": [
            [
                s.pk,
                s.sha256,
                [gcengine.dump_gc_config(config_with_session_pins(c, s)) for c in configs],
            ]
            for s in sessions
        ],
        "versions": [v.pk for v in versions],
        "by": by,
        "context_limit": context_limit,
        "gates": project.retention_gates,
        "prices": project.prices,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def ranking_get_or_queue(
    *,
    project: Project,
    sessions: list[AgentSession],
    versions: list[PolicyVersion],
    by: str = "retention",
    context_limit: int | None = None,
) -> tuple[PolicyRanking, bool]:
    """The ranking of ``versions`` over ``sessions`` (those with turns; the first is the one
    a compare page shows in detail) ``by`` one of ``RANK_ORDERS``: the one stored for the
    same inputs, or one queued now. With it, whether it was queued just now (new, or failed
    before and asked for again), so a worker must be asked for it. Bad input raises
    ``RankError`` (or the engine's ``ConfigError`` for a window) before anything is stored."""
    if by not in RANK_ORDERS:
        raise RankError(f"no ranking by {by!r} (one of {', '.join(RANK_ORDERS)})", "by")
    sessions = [s for s in dict.fromkeys(sessions) if s.turn_count]
    versions = list(dict.fromkeys(versions))
    if not sessions:
        raise RankError("give at least one session with turns to rank over", "session_ids")
    if len(sessions) > RANK_SESSIONS_MAX:
        raise RankError(f"rank over at most {RANK_SESSIONS_MAX} sessions", "session_ids")
    if not versions or len(versions) > RANK_VERSIONS_MAX:
        raise RankError(f"rank 1 to {RANK_VERSIONS_MAX} policy versions", "version_ids")
    if {s.project_id for s in sessions} | {v.policy.project_id for v in versions} != {project.pk}:
        raise RankError("the sessions and versions ranked must be of one project")
    for version in versions:
        gc_policy_checked(version.policy, "version_ids")
    if context_limit is not None:
        gcengine.context_limit_checked(context_limit)
    digest = _ranking_digest(project, sessions, versions, by, context_limit)
    with transaction.atomic():
        ranking, created = PolicyRanking.objects.get_or_create(
            project=project,
            inputs_digest=digest,
            defaults={
                "session_ids": [s.pk for s in sessions],
                "version_ids": [v.pk for v in versions],
                "by": by,
                "context_limit": context_limit,
                "replays_total": len(sessions) * len(versions),
                "progress": RANKING_WAITING,
            },
        )
        # A ranking that failed (or whose sessions went) is worked out again when asked for.
        retried = not created and bool(
            PolicyRanking.objects.filter(pk=ranking.pk, status=JobStatus.FAILED).update(
                status=JobStatus.QUEUED,
                error="",
                progress=RANKING_WAITING,
                attempts=0,
                replays_done=0,
                started_at=None,
                finished_at=None,
            )
        )
        if retried:
            ranking.refresh_from_db()
    return ranking, created or retried
