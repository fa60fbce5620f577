"""The dashboard as the agent tools' store: its sessions, policies and pins, reached through the
caller's API token and the permission table, changed only through the services.

Each call finds the token the request was authenticated with, builds the same ``Access`` an
API request gets, and looks objects up through it: another project's session is "not found"
(404), a role without the action is refused (403), and every change is written by a service
that records it in the audit log with the token's owner as the actor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import PermissionDenied
from django.db import close_old_connections, transaction
from django.http import Http404
from mcp.server.auth.middleware.auth_context import get_access_token

import gcengine
from gcengine.mcp_tools import (
    ConfiguredPolicy,
    PinRequest,
    PinState,
    PolicyChanges,
    PolicyInUse,
    changed_config,
    setting_changes,
)
from jaato_web.dashboard import selectors, services
from jaato_web.dashboard.models import AgentSession, Policy
from jaato_web.errors import InputError
from jaato_web.review import selectors as review_selectors
from jaato_web.review.targets import Target
from jaato_web.teams.access import Access, NoProject, roles_of, token_user
from jaato_web.teams.permissions import Action

DEFAULTS = "JAATO's defaults"


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
