"""The dashboard as the agent tools' store: its sessions, policies and pins, reached through the
caller's API token and the permission table, changed only through the services.

Each call finds the token the request was authenticated with, builds the same ``Access`` an
API request gets, and looks objects up through it: another project's session is "not found"
(404), a role without the action is refused (403), and every change is written by a service
that records it in the audit log with the token's owner as the actor.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import PermissionDenied
from django.db import close_old_connections, transaction
from django.http import Http404
from django.urls import reverse
from mcp.server.auth.middleware.auth_context import get_access_token

import gcengine
from gcengine.mcp_tools import (
    PREVIEW_CHARS,
    ConfiguredPolicy,
    LedgerItem,
    PinRequest,
    PinState,
    PolicyChanges,
    PolicyInUse,
    Pruned,
    PruneRequest,
    Retrieved,
    RetrievedSegment,
    StashFound,
    StashHit,
    StashQuery,
    StashRef,
    changed_config,
    percent,
    setting_changes,
)
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    JobStatus,
    Policy,
    PolicyVersion,
    StashedSegment,
)
from jaato_web.errors import InputError
from jaato_web.review import selectors as review_selectors
from jaato_web.review.targets import Target
from jaato_web.teams.access import Access, NoProject, roles_of, token_user
from jaato_web.teams.permissions import Action

DEFAULTS = "JAATO's defaults"
# How long a prune waits for a worker that took its run first.
RUN_WAIT_SECONDS = 600


def _session_key(session_id: int | str) -> int:
    """The dashboard names sessions by number; a path is another server's id."""
    if isinstance(session_id, int):
        return session_id
    if session_id.strip().isdigit():
        return int(session_id)
    raise gcengine.ToolRefusal(
        f"session_id {session_id!r} is not a session of the dashboard: give its number, as "
        "the sessions list and /api/sessions show it"
    )


class DashboardStore:
    """Sessions, policies and pins of the projects the calling token reaches."""

    @contextmanager
    def calling(self) -> Iterator[None]:
        """One tool call: a fresh database connection as a request gets, and the dashboard's
        refusals in the words and statuses its API uses."""
        close_old_connections()
        try:
            yield
        except Http404:
            raise gcengine.ToolRefusal(
                "not found in the projects this token reaches", status=404, code="not_found"
            ) from None
        except NoProject as error:
            raise gcengine.ToolRefusal(str(error), status=404, code="not_found") from None
        except PermissionDenied as error:
            raise gcengine.ToolRefusal(
                str(error) or "not allowed", status=403, code="forbidden"
            ) from None
        except InputError as error:
            raise gcengine.ToolRefusal(str(error), status=error.status, code="bad_input") from None
        finally:
            close_old_connections()

    def _access(self, action: Action) -> Access:
        """The caller's reach, from the API token this request was authenticated with."""
        token = get_access_token()
        found = token_user(token.token) if token is not None else None
        if found is None:
            raise gcengine.ToolRefusal(
                "no valid API token: send Authorization: Bearer <token>",
                status=401,
                code="unauthenticated",
            )
        user, api_token = found
        return Access(user=user, action=action, roles=roles_of(user, api_token), token=api_token)

    def _session(self, session_id: int | str, action: Action) -> tuple[AgentSession, Access]:
        access = self._access(action)
        return access.session(_session_key(session_id)), access

    def session(self, session_id: int | str) -> gcengine.Session:
        session, _ = self._session(session_id, Action.VIEW)
        return services.engine_session_of(session)

    def policy(self, session_id: int | str | None, policy_id: int | None) -> PolicyInUse:
        session = None if session_id is None else self._session(session_id, Action.VIEW)[0]
        policy: Policy | None
        if policy_id is not None:
            policy = self._access(Action.VIEW).policy(policy_id)
        elif session is not None:
            policy = selectors.pin_policy(project=session.project)
        else:
            policy = None
        if policy is None:
            why = "no policy_id given" if session is None else "its project has no default policy"
            config, label = gcengine.GCConfig(), f"{DEFAULTS} ({why})"
        else:
            version = selectors.policy_latest_version(policy=policy)
            config, label = services.config_validated(version.config), str(version)
        if session is not None:
            config = services.config_with_session_pins(config, session)
        return PolicyInUse(config, label)

    def pin(self, session_id: int | str, request: PinRequest) -> PinState:
        session, access = self._session(session_id, Action.PIN)
        before = services.session_pins(session=session)
        with transaction.atomic():  # every pin of the call, or none
            for index in request.turn_indices:
                services.session_pin(
                    session=session, turn_index=index, pinned=request.pinned, actor=access.user
                )
            for message_id in request.message_ids:
                services.session_pin(
                    session=session,
                    message_id=message_id,
                    pinned=request.pinned,
                    actor=access.user,
                )
        turns, ids = services.session_pins(session=session)
        verb = "pinned" if request.pinned else "unpinned"
        moved_turns = sorted(turns ^ before[0])
        moved_ids = sorted(ids ^ before[1])
        return PinState(
            session_id=session.pk,
            pinned_turn_indices=sorted(turns),
            pinned_message_ids=sorted(ids),
            changed=[f"{verb} turn index {t}" for t in moved_turns]
            + [f"{verb} message {i}" for i in moved_ids],
        )

    def configure(
        self,
        session_id: int | str | None,
        policy_id: int | None,
        changes: PolicyChanges,
        message: str,
    ) -> ConfiguredPolicy:
        policy = self._policy_to_change(session_id, policy_id)
        access = self._access(Action.EDIT_POLICY)
        latest = selectors.policy_latest_version(policy=policy)
        after = changed_config(latest.config, changes)
        moved = setting_changes(latest.config, after)
        version = latest
        if moved:
            version = services.policy_save(
                policy=policy,
                config=after,
                base_number=latest.number,
                message=message or "; ".join(change.described() for change in moved),
                actor=access.user,
            )
        target = Target.of_version(version)
        return ConfiguredPolicy(
            policy=policy.name,
            policy_id=policy.pk,
            version=version.number,
            author=version.author,
            review_status=review_selectors.review_status(target=target).value,
            review_url=target.url(),
            changes=moved,
            config=version.config,
        )

    def _policy_to_change(self, session_id: int | str | None, policy_id: int | None) -> Policy:
        """The policy named, else the one the session runs under; checked for edit_policy."""
        if policy_id is not None:
            return self._access(Action.EDIT_POLICY).policy(policy_id)
        if session_id is None:
            raise gcengine.ToolRefusal("give policy_id, or the session_id whose policy to change")
        session, access = self._session(session_id, Action.EDIT_POLICY)
        policy = selectors.pin_policy(project=session.project)
        if policy is None:
            raise gcengine.ToolRefusal(
                f"{session.label} runs under no stored policy (its project has no default "
                "policy): give policy_id",
                status=409,
                code="no_policy",
            )
        access.check(policy.project_id)
        return policy

    # --- Pruning and stashes --------------------------------------------------------------

    def prune(self, session_id: int | str, request: PruneRequest) -> Pruned:
        """A run of the session under its policy (or the one named), stored as any run is and
        carried out now, and the session it left stored as one derived from it."""
        session, access = self._session(session_id, Action.RUN)
        version = self._version(session, request.policy_id, access)
        base = services.config_validated(version.config) if version else gcengine.GCConfig()
        config = gcengine.pruning_config(base, request.action, request.segment_ids)
        gcengine.check_pruning(
            services.engine_session_of(session), services.config_with_session_pins(config, session)
        )
        run = background.run_start(
            session=session,
            policy_version=version,
            config=gcengine.dump_gc_config(config),
            plugin=config.plugin,
            trigger="agent",
            actor=access.user,
        )
        run = self._finished(run)
        derived = services.run_result_session(run=run) if run.items_collected else None
        ledger = [
            LedgerItem(
                segment_id=removal.child_key,
                turn_index=removal.turn_index,
                turn_number=gcengine.turn_number(removal.turn_index)
                if removal.turn_index is not None
                else None,
                tokens_freed=removal.tokens_freed,
                reason=removal.reason,
                action=removal.action or None,
                reachable=removal.reachable,
                score=round(removal.score, 4) if removal.score is not None else None,
                why=removal.explanation,
            )
            for removal in selectors.run_removals(run=run)
        ]
        limit = run.context_limit or session.context_limit
        before, after = run.tokens_before or 0, run.tokens_after or 0
        result = run.result or {}
        return Pruned(
            session_id=session.pk,
            new_session_id=derived.pk if derived is not None else None,
            run_id=run.pk,
            run_url=reverse("run_detail", args=[run.pk]),
            policy=str(version) if version is not None else DEFAULTS,
            action=request.action,
            segments_named=list(request.segment_ids),
            context_limit=limit,
            tokens_before=before,
            tokens_after=after,
            tokens_freed=before - after,
            percent_before=percent(before, limit),
            percent_after=percent(after, limit),
            stashed=sum(1 for item in ledger if item.action == "stashed"),
            deleted=sum(1 for item in ledger if item.action == "deleted"),
            ledger=ledger,
            notification=result.get("notification"),
            message=None
            if ledger
            else str((result.get("details") or {}).get("message") or "nothing to take"),
        )

    def _version(
        self, session: AgentSession, policy_id: int | None, access: Access
    ) -> PolicyVersion | None:
        """The latest version of the policy named, else of the session's; None for neither."""
        policy = (
            access.policy(policy_id)
            if policy_id is not None
            else selectors.pin_policy(project=session.project)
        )
        return None if policy is None else selectors.policy_latest_version(policy=policy)

    def _finished(self, run: GCRun) -> GCRun:
        """The run once done: carried out here, or by the worker that took it first."""
        background.run_execute(run_id=run.pk)
        deadline = time.monotonic() + RUN_WAIT_SECONDS
        run.refresh_from_db()
        while run.status in (JobStatus.QUEUED, JobStatus.RUNNING):
            if time.monotonic() > deadline:
                raise gcengine.ToolRefusal(
                    f"run {run.pk} is still {run.status}; read it later on "
                    f"{reverse('run_detail', args=[run.pk])}",
                    status=504,
                    code="timeout",
                )
            time.sleep(0.2)
            run.refresh_from_db()
        if run.status != JobStatus.DONE:
            raise gcengine.ToolRefusal(
                f"run {run.pk} failed: {run.error}", status=500, code="run_failed"
            )
        return run

    def _stash_run(self, ref: StashRef, action: Action) -> tuple[GCRun, Access]:
        """The run whose stash a reference names, checked for ``action``."""
        access = self._access(action)
        if ref.run_id is not None:
            return access.run(_session_key(ref.run_id)), access
        if ref.session_id is None:
            raise gcengine.ToolRefusal("give run_id or session_id")
        session = access.session(_session_key(ref.session_id))
        run_id = session.derived_from_run_id or selectors.latest_stash_run_id(session=session)
        if run_id is None:
            raise gcengine.ToolRefusal(
                f"{session.label} has no stash: prune it first (context_gc_prune)",
                status=404,
                code="not_found",
            )
        return access.run(run_id), access

    def stash_search(self, ref: StashRef, query: StashQuery) -> StashFound:
        run, _ = self._stash_run(ref, Action.VIEW)
        found = selectors.run_stashed(run=run, text=query.text, anchor=query.anchor)
        if query.kind is not None:
            found = found.filter(kind=query.kind)
        if query.turn_index is not None:
            found = found.filter(turn_index=query.turn_index)
        return StashFound(
            run_id=run.pk,
            stashed=selectors.run_stash_size(run=run),
            found=found.count(),
            segments=[
                _hit(row)
                for row in selectors.stashed_previews(found, chars=PREVIEW_CHARS)[: query.limit]
            ],
        )

    def stash_retrieve(
        self, ref: StashRef, segment_ids: list[str], into_session: bool
    ) -> Retrieved:
        wanted = list(dict.fromkeys(segment_ids))
        if into_session:
            run, access = self._stash_run(ref, Action.RUN)
            derived = services.stash_restore(run=run, segment_ids=wanted, actor=access.user)
            return Retrieved(
                run_id=run.pk,
                into="session",
                restored=wanted,
                new_session_id=derived.pk,
                segments=[],
            )
        run, _ = self._stash_run(ref, Action.VIEW)
        rows = {
            row.segment_id: row for row in selectors.run_stashed_of(run=run, segment_ids=wanted)
        }
        missing = [i for i in wanted if i not in rows]
        if missing:
            raise gcengine.ToolRefusal(
                f"run {run.pk} stashed no segment {missing[0]!r}", status=404, code="not_found"
            )
        return Retrieved(
            run_id=run.pk,
            into="content",
            restored=[],
            new_session_id=None,
            segments=[
                RetrievedSegment(
                    segment_id=row.segment_id,
                    turn_number=gcengine.turn_number(row.turn_index)
                    if row.turn_index is not None
                    else None,
                    tokens=row.tokens,
                    text=row.text,
                )
                for row in (rows[i] for i in wanted)
            ],
        )


def _hit(row: StashedSegment) -> StashHit:
    return StashHit(
        segment_id=row.segment_id,
        kind=row.kind,
        turn_index=row.turn_index,
        turn_number=gcengine.turn_number(row.turn_index) if row.turn_index is not None else None,
        tokens=row.tokens,
        score=round(row.score, 4),
        reachable=row.reachable,
        reason=row.reason,
        anchors=list(row.anchors),
        preview=str(getattr(row, "preview", "")),
    )
