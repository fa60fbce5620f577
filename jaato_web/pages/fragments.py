"""Parts of pages drawn once per process, then copied: the large parts drawn from content that
never changes once stored (a page of a session's turns, the top of its budget tree, a finished
run's diff, ledger rows and after-tree).

Drawing them is most of a page's time, and every request for the same page draws the same
HTML again. Each entry's key names everything its HTML is drawn from, so the cache can only
answer with what drawing would give: a session's parts are keyed on the session (its id, the
SHA-256 of its upload and the token counter of its figures), a finished run's on the run (its
id and when it was created and finished, so an id used again after a delete is another key),
and both on whatever else the part shows that may change (pins, comment counts, the page).
Permissions are checked before a part is looked up, and no part holds anything of the user's
own: what a part depends on of the request (the role's permission, the address its forms come
back to) is in its key, and a form's CSRF token is put in for each request
(``with_csrf_token``), so a part is the same for everyone who may see it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Hashable

from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.template.loader import get_template
from django.utils.safestring import SafeString, mark_safe

from jaato_web import caches
from jaato_web.dashboard import presenters, selectors
from jaato_web.dashboard.models import AgentSession, GCRun, JobStatus

# Characters of HTML kept per process, about as many bytes: some 200 pages of turns of a large
# session (about 170,000 characters each), or many more of the smaller parts.
FRAGMENT_CHARACTERS = 32 * 2**20

_fragments: caches.BoundedLRU[Hashable, SafeString] = caches.bounded(
    "parts of pages drawn", FRAGMENT_CHARACTERS, len, "characters"
)

# What a part's forms carry in place of the CSRF token, which is the user's own: each request
# puts its own token there (with_csrf_token). Random per process and never sent, so no stored
# content can hold it.
CSRF_PLACEHOLDER = f"csrf-{secrets.token_hex(16)}"


def fragment(key: Hashable, draw: Callable[[], SafeString]) -> SafeString:
    """The HTML drawn for ``key``: drawn now the first time, then from memory."""
    html = _fragments.get(key)
    if html is None:
        html = draw()
        _fragments.put(key, html)
    return html


def finished_run_fragment(
    run: GCRun, part: str, page: Hashable, draw: Callable[[], SafeString]
) -> SafeString:
    """``part`` of a run's page, for ``page`` (its page number and size, and anything else it
    shows that may change): kept once the run is done (a finished run and its session never change),
    drawn every time before."""
    if run.status != JobStatus.DONE:
        return draw()
    return fragment((part, *_finished(run), page), draw)


def budget_tree(
    session: AgentSession, *, label: str, url: str, run: GCRun | None = None
) -> SafeString:
    """The top level of a session's budget tree as uploaded (``run`` None) or as a finished run
    left it, as ``components/tree.html#tree`` draws it."""

    def draw() -> SafeString:
        nodes, _ = selectors.budget_children_slice(session=session, run=run)
        tree = {"rows": presenters.tree_rows(nodes, session.total_tokens), "url": url}
        template = get_template("components/tree.html#tree")
        return mark_safe(template.render({"tree": tree, "label": label}))

    if run is not None and run.status != JobStatus.DONE:
        return draw()
    shown = (run and _finished(run), label, url, selectors.NODES_PER_PAGE)
    return stored_session_fragment(session, "tree", shown, draw)


def stored_session_fragment(
    session: AgentSession, part: str, shown: Hashable, draw: Callable[[], SafeString]
) -> SafeString:
    """``part`` of a page drawn from a stored session, which never changes, and ``shown``:
    everything else it shows that may change."""
    stored = (session.pk, session.sha256, session.token_counter)
    return fragment((part, *stored, shown), draw)


def _finished(run: GCRun) -> tuple[Hashable, ...]:
    """A finished run, told apart from any other that had its id before a delete."""
    return run.pk, run.created_at, run.finished_at


def with_csrf_token(html: SafeString, request: HttpRequest) -> SafeString:
    """A part drawn with ``CSRF_PLACEHOLDER`` for the token, with this request's token (the
    token its own ``{% csrf_token %}`` would give)."""
    if CSRF_PLACEHOLDER not in html:
        return html
    return mark_safe(html.replace(CSRF_PLACEHOLDER, get_token(request)))
