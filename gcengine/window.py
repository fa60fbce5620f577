"""Trying a session against another context window.

Real sessions often use a few percent of a 200,000-token window, so every policy removes
nothing from them; "pretend the window is 8,000 tokens" shows what a policy would do to the
same history under pressure. Only the limit changes: the history, the budget's figures and
every token count stay as they were.
"""

from __future__ import annotations

from gcengine.errors import ConfigError
from gcengine.session import ContextLimitOrigin, Session

# Below this no real model works, and usage percentages stop meaning anything.
MIN_CONTEXT_LIMIT = 1_000


def context_limit_checked(limit: object) -> int:
    """``limit`` if it can be a context window; otherwise a ``ConfigError`` naming it, so a
    caller can refuse a window before it has the session at hand."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < MIN_CONTEXT_LIMIT:
        raise ConfigError(
            f"a context window must be a whole number of at least {MIN_CONTEXT_LIMIT:,} tokens",
            "context_limit",
        )
    return limit


def with_context_limit(session: Session, limit: int) -> Session:
    """The same session with a context window of ``limit`` tokens, marked as an override."""
    context_limit_checked(limit)
    if limit == session.context_limit:
        return session
    budget = session.budget.model_copy(update={"context_limit": limit})
    return session.model_copy(
        update={
            "context_limit": limit,
            "context_limit_origin": ContextLimitOrigin.OVERRIDE,
            "context_limit_source": (
                f"override: {limit:,} tokens instead of the session's {session.context_limit:,} "
                f"({session.context_limit_origin.value})"
            ),
            "budget": budget,
        }
    )
