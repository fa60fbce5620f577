"""Read-side queries: every query a page or an API endpoint makes is one of these.

Each returns a bounded amount: list pages are paged, tree nodes come one level at a time and
in slices, the history a page of turns at a time. That is what keeps a 10,000-turn session's
pages as cheap as a 10-turn one's. The big columns (original bytes, engine documents, the
session after a run) are never loaded here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Substr
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.tasks import task_backends
from django.utils import timezone
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.models import (
    AgentSession,
    BudgetNode,
    GCRun,
    IngestJob,
    JobStatus,
    KeptSegment,
    Policy,
    PolicyKind,
    PolicyRanking,
    PolicyVersion,
    Project,
    Removal,
    Replay,
    SessionDocument,
    SessionTurn,
    StashedSegment,
    Summary,
    Worker,
)

SESSION_SORTS = {
    "newest": "-created_at",
    "oldest": "created_at",
    "tokens": "-total_tokens",
    "utilization": "-utilization_percent",
    "turns": "-turn_count",
    "name": "label",
}
SESSIONS_PER_PAGE = 25
# A longer search names no session, and databases refuse LIKE patterns past a few thousand.
SEARCH_MAX_CHARS = 200
TURNS_PER_PAGE = 25
NODES_PER_PAGE = 100
LEDGER_PER_PAGE = 50
RUNS_PER_PAGE = 20


def session_list(
    *, project: Project, search: str = "", sort: str = "newest", archived: bool = False
) -> QuerySet[AgentSession]:
    """The project's sessions in use, or only the archived ones, whose name, model, format or
    sha256 prefix holds ``search`` (cut to ``SEARCH_MAX_CHARS``)."""
    search = search.strip()[:SEARCH_MAX_CHARS]
    sessions = AgentSession.objects.filter(
        project=project, archived_at__isnull=not archived
    ).annotate(run_count=Count("runs"))
    if search:
        sessions = sessions.filter(
            Q(label__icontains=search)
            | Q(model_name__icontains=search)
            | Q(source_format__icontains=search)
            | Q(sha256__startswith=search.lower())
        )
    return sessions.order_by(SESSION_SORTS.get(sort, "-created_at"), "-pk")


def page_of(items: QuerySet[Any], number: Any, per_page: int) -> Page[Any]:
    return Paginator(items, per_page).get_page(number)


def session_get(*, projects: Collection[int], session_id: int) -> AgentSession:
    return get_object_or_404(
        AgentSession.objects.select_related("project"), pk=session_id, project__in=projects
    )


def session_original(*, session: AgentSession) -> bytes:
    """The uploaded bytes, for download only."""
    stored = SessionDocument.objects.values_list("original", flat=True).get(session=session)
    return storage.unpack_original(stored)


def session_turns(*, session: AgentSession) -> QuerySet[SessionTurn]:
    return SessionTurn.objects.filter(session=session).order_by("position")


def session_turn(*, session: AgentSession, position: int) -> SessionTurn:
    return get_object_or_404(SessionTurn, session=session, position=position)


class _TurnsByPosition(Sequence[SessionTurn]):
    """A session's turns as a sequence a ``Paginator`` can page.

    Positions run from 0 to ``turn_count - 1`` without gaps, so a page is a range of the
    unique (session, position) index and the count is already on the session: page 400 of a
    10,000-turn session costs what page 1 costs, with no COUNT and no OFFSET scan. A page's
    turns are read when first looked at, so a page drawn from memory reads none.
    """

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def __len__(self) -> int:
        return self.session.turn_count

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, slice):
            raise TypeError("turns are read a page at a time")
        start, stop, _ = index.indices(len(self))
        return session_turns(session=self.session).filter(position__gte=start, position__lt=stop)


def turn_page_number(*, session: AgentSession, turn_index: int) -> int | None:
    """The history page holding the turn with this stable index, or None when there is none."""
    position = (
        SessionTurn.objects.filter(session=session, turn_index=turn_index)
        .values_list("position", flat=True)
        .first()
    )
    return None if position is None else position // TURNS_PER_PAGE + 1


def turn_index_range(*, session: AgentSession) -> tuple[int, int] | None:
    """The first and last stable turn index of the history, or None when it has none: after
    an agent's compaction its turns go on from the turns it replaced, not from the first."""
    found = SessionTurn.objects.filter(session=session).aggregate(
        first=Min("turn_index"), last=Max("turn_index")
    )
    if found["first"] is None or found["last"] is None:
        return None
    return int(found["first"]), int(found["last"])


def session_turn_page(*, session: AgentSession, number: Any) -> Page[SessionTurn]:
    """One page of the history (``TURNS_PER_PAGE`` turns) in one query."""
    return Paginator(_TurnsByPosition(session), TURNS_PER_PAGE).get_page(number)


@dataclass(frozen=True)
class TreeNode:
    """A node of a budget tree as pages and the API draw it: a stored ``BudgetNode`` (a source
    and what lies under it above the turns), or a turn or message drawn from the turn rows."""

    path: str
    parent_path: str
    key: str
    label: str
    depth: int
    policy: str
    tokens: int
    child_count: int
    node_id: str  # unique on a page that shows a session's tree and a run's


def _stored_node(node: BudgetNode) -> TreeNode:
    return TreeNode(
        path=node.path,
        parent_path=node.parent_path,
        key=node.key,
        label=node.label,
        depth=node.depth,
        policy=node.policy,
        tokens=node.tokens,
        child_count=node.child_count,
        node_id=f"n{node.pk}",
    )


def budget_children_page(
    *,
    session: AgentSession,
    run: GCRun | None = None,
    parent_path: str = "",
    offset: int = 0,
    limit: int | None = None,
) -> tuple[list[TreeNode], int]:
    """``limit`` children of a node (``NODES_PER_PAGE``) from ``offset``, and how many it has:
    one level of the
    session's own tree (``run`` None) or a run's after-tree. The conversation's turns and their
    messages come from the turn rows (and a run's ``after_turns``), the rest from ``BudgetNode``
    rows."""
    offset, limit = max(offset, 0), NODES_PER_PAGE if limit is None else limit
    source, _, below = parent_path.partition("/")
    if source == storage.CONVERSATION and parent_path:
        if not below:
            return _turn_nodes(session, run, offset, limit)
        if "/" not in below:
            nodes = _message_nodes(session, run, below)
            return nodes[offset : offset + limit], len(nodes)
        return [], 0
    stored = BudgetNode.objects.filter(session=session, run=run, parent_path=parent_path)
    # One row past the page tells whether more follow, so a level is one query.
    page = list(stored.defer("message_ids").order_by("position")[offset : offset + limit + 1])
    total = offset + len(page) if len(page) <= limit and (page or not offset) else stored.count()
    return [_stored_node(node) for node in page[:limit]], total


def budget_children_slice(
    *, session: AgentSession, run: GCRun | None = None, parent_path: str = "", offset: int = 0
) -> tuple[list[TreeNode], bool]:
    """``NODES_PER_PAGE`` children from ``offset``, and whether more follow."""
    nodes, total = budget_children_page(
        session=session, run=run, parent_path=parent_path, offset=offset
    )
    return nodes, offset + len(nodes) < total


def _turn_node(turn: SessionTurn, node_id: str) -> TreeNode:
    return TreeNode(
        path=f"{storage.CONVERSATION}/{turn.budget_key}",
        parent_path=storage.CONVERSATION,
        key=turn.budget_key,
        label=turn.budget_label or turn.budget_key,
        depth=1,
        policy=turn.budget_policy or turn.policy,
        tokens=turn.tokens,
        child_count=turn.message_count,
        node_id=node_id,
    )


def _turns_at(session: AgentSession, positions: Collection[int]) -> dict[int, SessionTurn]:
    return {
        turn.position: turn
        for turn in SessionTurn.objects.filter(session=session, position__in=positions).defer(
            "packed"
        )
    }


def _after_turns(run: GCRun) -> list[storage.AfterTurn]:
    packed = GCRun.objects.filter(pk=run.pk).values_list("after_turns", flat=True).first()
    return storage.unpacked(packed) if packed is not None else []


def _turn_nodes(
    session: AgentSession, run: GCRun | None, offset: int, limit: int
) -> tuple[list[TreeNode], int]:
    if run is None:
        turns = SessionTurn.objects.filter(
            session=session, position__gte=offset, position__lt=offset + limit
        ).defer("packed")
        nodes = [_turn_node(t, f"t{t.pk}") for t in turns.order_by("position")]
        return nodes, session.turn_count
    after = _after_turns(run)
    page = after[offset : offset + limit]
    kept = _turns_at(session, [item for item in page if isinstance(item, int)])
    nodes = []
    for number, item in enumerate(page, offset):
        if isinstance(item, int):
            nodes.append(_turn_node(kept[item], f"r{run.pk}-t{kept[item].pk}"))
            continue
        key, label, policy, tokens, leaves = item
        nodes.append(
            TreeNode(
                path=f"{storage.CONVERSATION}/{key}",
                parent_path=storage.CONVERSATION,
                key=key,
                label=label,
                depth=1,
                policy=policy,
                tokens=tokens,
                child_count=len(leaves),
                node_id=f"r{run.pk}-w{number}",
            )
        )
    return nodes, len(after)


def _message_nodes(session: AgentSession, run: GCRun | None, key: str) -> list[TreeNode]:
    """The messages of the turn ``key`` (of the session, or of what the run left)."""
    parent = f"{storage.CONVERSATION}/{key}"
    turn = SessionTurn.objects.filter(session=session, budget_key=key).order_by("position").first()
    prefix = "" if run is None else f"r{run.pk}-"
    if run is not None:
        after = _after_turns(run)
        written = next(
            (item for item in after if not isinstance(item, int) and item[0] == key), None
        )
        if written is not None:
            return [
                TreeNode(
                    path=f"{parent}/{leaf_key}",
                    parent_path=parent,
                    key=leaf_key,
                    label=label,
                    depth=2,
                    policy=policy,
                    tokens=tokens,
                    child_count=0,
                    node_id=f"{prefix}{key}-{number}",
                )
                for number, (leaf_key, label, policy, tokens) in enumerate(written[4])
            ]
        if turn is None or turn.position not in {i for i in after if isinstance(i, int)}:
            return []
    if turn is None:
        return []
    return [
        TreeNode(
            path=f"{parent}/{message['id']}",
            parent_path=parent,
            key=message["id"],
            label=message["label"] or message["id"],
            depth=2,
            policy=message["policy"],
            tokens=message["tokens"],
            child_count=0,
            node_id=f"{prefix}t{turn.pk}-{number}",
        )
        for number, message in enumerate(turn.messages)
    ]


def budget_node_find(*, session: AgentSession, run: GCRun | None, path: str) -> TreeNode | None:
    """A stored node above the turns, by its path (what a run removed outside the
    conversation)."""
    node = (
        BudgetNode.objects.filter(session=session, run=run, path=path).defer("message_ids").first()
    )
    return _stored_node(node) if node is not None else None


def run_list(*, session: AgentSession, archived: bool = False) -> QuerySet[GCRun]:
    """The session's runs, newest first: those in use, or only the archived ones."""
    return (
        GCRun.objects.filter(session=session, archived_at__isnull=not archived)
        .select_related("policy_version__policy")
        .defer("session_after", "after_turns", "result", "stash")
        .order_by("-created_at", "-pk")
    )


def run_get(*, projects: Collection[int], run_id: int) -> GCRun:
    return get_object_or_404(
        GCRun.objects.select_related("session__project", "policy_version__policy").defer(
            "session_after", "after_turns", "stash"
        ),
        pk=run_id,
        session__project__in=projects,
    )


def run_removals(*, run: GCRun) -> QuerySet[Removal]:
    return Removal.objects.filter(run=run).order_by("seq")


def run_removal(*, run: GCRun, seq: int) -> Removal:
    return get_object_or_404(Removal, run=run, seq=seq)


STASH_PER_PAGE = 25
KEPT_PER_PAGE = 50


def run_stashed(*, run: GCRun, text: str = "", anchor: str = "") -> QuerySet[StashedSegment]:
    """What a reachability run stashed, in the order it took it; only the segments whose text
    holds ``text`` and one of whose anchors holds ``anchor`` (ignoring case), when given."""
    found = StashedSegment.objects.filter(run=run).select_related("removal")
    if text.strip():
        found = found.filter(text__icontains=text.strip()[:SEARCH_MAX_CHARS])
    if anchor.strip():
        found = found.filter(anchors_text__icontains=anchor.strip()[:SEARCH_MAX_CHARS])
    return found.defer("text").order_by("removal__seq")


def run_stash_size(*, run: GCRun) -> int:
    return StashedSegment.objects.filter(run=run).count()


def run_stashed_of(*, run: GCRun, segment_ids: Collection[str]) -> QuerySet[StashedSegment]:
    """The segments a run stashed among ``segment_ids``, with their text."""
    return StashedSegment.objects.filter(run=run, segment_id__in=list(segment_ids))


def stashed_previews(found: QuerySet[StashedSegment], *, chars: int) -> QuerySet[StashedSegment]:
    """``found`` with the start of what each segment says as ``preview``, without its text."""
    return found.annotate(preview=Substr("text", 1, chars))


def latest_stash_run_id(*, session: AgentSession) -> int | None:
    """The session's latest done run that stashed something."""
    run_id: int | None = (
        StashedSegment.objects.filter(run__session=session, run__status=JobStatus.DONE)
        .order_by("-run__created_at", "-run__pk")
        .values_list("run_id", flat=True)
        .first()
    )
    return run_id


def run_kept(*, run: GCRun, turn_index: int | None = None, text: str = "") -> QuerySet[KeptSegment]:
    """Why a reachability run kept each segment it kept, in history order: those of one turn
    (stable index), or whose reason holds ``text``, when given."""
    found = KeptSegment.objects.filter(run=run)
    if turn_index is not None:
        found = found.filter(turn_index=turn_index)
    if text.strip():
        found = found.filter(reason__icontains=text.strip()[:SEARCH_MAX_CHARS])
    return found.order_by("position")


def derived_sessions(*, run: GCRun) -> QuerySet[AgentSession]:
    """The sessions restored from a run's stash, newest first."""
    return (
        AgentSession.objects.filter(derived_from_run=run)
        .only("pk", "label", "restored_segments", "created_at", "turn_count", "total_tokens")
        .order_by("-created_at", "-pk")
    )


def run_summaries(*, run: GCRun) -> QuerySet[Summary]:
    return Summary.objects.filter(run=run).order_by("number", "pk")


@dataclass(frozen=True)
class DiffRow:
    """One turn of the session before the run, and what the run did to it."""

    turn: SessionTurn
    state: str  # kept, removed, partial
    removed_ids: frozenset[str]
    summaries_before: list[Summary]


def run_diff(*, run: GCRun, turns: list[SessionTurn]) -> list[DiffRow]:
    """The before/after view of a page of turns, in three queries whatever the session size."""
    if not turns:
        return []
    first, last = turns[0].position, turns[-1].position
    removed: dict[int, set[str]] = {}
    for position, ids in Removal.objects.filter(
        run=run, turn_position__gte=first, turn_position__lte=last
    ).values_list("turn_position", "message_ids"):
        if position is not None:
            removed.setdefault(position, set()).update(ids)
    inserted: dict[int, list[Summary]] = {}
    for summary in Summary.objects.filter(
        run=run,
        written_by_run=True,
        inserted_before_position__gte=first,
        inserted_before_position__lte=last,
    ):
        inserted.setdefault(summary.inserted_before_position or 0, []).append(summary)
    rows = []
    for turn in turns:
        ids = removed.get(turn.position, set())
        all_ids = {m["id"] for m in turn.messages}
        state = "kept" if not ids else ("removed" if all_ids <= ids else "partial")
        rows.append(DiffRow(turn, state, frozenset(ids), inserted.get(turn.position, [])))
    return rows


def replay_shown(*, session: AgentSession, replay_id: int | None = None) -> Replay | None:
    """The replay a session page shows: the one asked for, else the newest; never its series."""
    replays = Replay.objects.filter(session=session).defer("series")
    if replay_id is not None:
        chosen = replays.filter(pk=replay_id).first()
        if chosen is not None:
            return chosen
    return replays.order_by("-created_at", "-pk").first()


def ingest_job_get(*, projects: Collection[int], job_id: int) -> IngestJob:
    return get_object_or_404(IngestJob, pk=job_id, project__in=projects)


def replay_get(*, projects: Collection[int], replay_id: int) -> Replay:
    return get_object_or_404(
        Replay.objects.select_related("session__project", "policy_version__policy"),
        pk=replay_id,
        session__project__in=projects,
    )


def ranking_get(*, projects: Collection[int], ranking_id: int) -> PolicyRanking:
    return get_object_or_404(
        PolicyRanking.objects.select_related("project"), pk=ranking_id, project__in=projects
    )


def policy_list(*, project: Project) -> QuerySet[Policy]:
    return Policy.objects.filter(project=project).order_by("name")


def policy_get(*, projects: Collection[int], policy_id: int, kind: str | None = None) -> Policy:
    """A policy of these projects; with ``kind``, only one of that kind (a GC page asked for
    a planner config answers 404, as for any object it does not show)."""
    found = Policy.objects.filter(kind=kind) if kind is not None else Policy.objects
    return get_object_or_404(found, pk=policy_id, project__in=projects)


def policy_latest_versions(
    *, project: Project, archived: bool = False, kind: str = PolicyKind.GC
) -> list[PolicyVersion]:
    """The newest version of every policy of the project in use (or only of the archived
    ones), in one query however many versions pins and saves have made. GC policies unless
    ``kind`` says otherwise: every GC picker lists only what can run."""
    newest = (
        PolicyVersion.objects.filter(policy=OuterRef("policy"))
        .order_by("-number")
        .values("number")[:1]
    )
    return list(
        PolicyVersion.objects.filter(
            policy__project=project,
            policy__kind=kind,
            policy__archived_at__isnull=not archived,
            number=Subquery(newest),
        )
        .select_related("policy__project")
        .order_by("policy__name")
    )


def policy_version_get(
    *, projects: Collection[int], version_id: int, kind: str | None = None
) -> PolicyVersion:
    """A version of a policy of these projects; with ``kind``, only of a policy of that kind."""
    versions = PolicyVersion.objects.select_related("policy")
    if kind is not None:
        versions = versions.filter(policy__kind=kind)
    return get_object_or_404(versions, pk=version_id, policy__project__in=projects)


def policy_version_by_number(*, policy: Policy, number: int) -> PolicyVersion:
    return get_object_or_404(PolicyVersion, policy=policy, number=number)


def policy_latest_version(*, policy: Policy) -> PolicyVersion:
    version = policy.versions.order_by("-number").first()
    if version is None:  # every policy is created with version 1; a broken row is not found
        raise Http404("policy has no version")
    return version


def policy_version_choices(
    *, project: Project, kind: str = PolicyKind.GC
) -> QuerySet[PolicyVersion]:
    """Every version of every policy of ``kind``, for pickers: names and numbers, not the
    config."""
    return (
        PolicyVersion.objects.filter(
            policy__project=project, policy__kind=kind, policy__archived_at__isnull=True
        )
        .select_related("policy")
        .defer("config")
        .order_by("policy__name", "-number")
    )


def session_choices(*, project: Project) -> QuerySet[AgentSession]:
    """Sessions for pickers (preview, compare, apply): figures only, newest first; archived
    sessions are left out."""
    return (
        AgentSession.objects.filter(project=project, archived_at__isnull=True)
        .only(
            "id",
            "project_id",
            "label",
            "turn_count",
            "total_tokens",
            "context_limit",
            "utilization_percent",
            "created_at",
        )
        .order_by("-created_at", "-pk")
    )


def export_window(*, project: Project, window: int | None = None) -> int:
    """The context window a policy of ``project`` is exported for (``gcengine.export_window``):
    the one asked for, else the window of the project's newest session; a ``ConfigError``
    naming ``context_window`` when the project has no session to take it from."""
    newest = session_choices(project=project).first()
    return gcengine.export_window(
        window=window, session_window=newest.context_limit if newest else None
    )


def sessions_by_ids(*, project: Project, ids: list[int]) -> list[AgentSession]:
    """The project's sessions among ``ids``, in the order given; ids of others are dropped."""
    found = AgentSession.objects.filter(project=project, pk__in=ids).in_bulk()
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def runs_by_ids(*, projects: Collection[int], ids: list[int]) -> list[GCRun]:
    """Runs of these projects among ``ids``, in the order given (a bulk apply's progress)."""
    found = (
        GCRun.objects.filter(session__project__in=projects, pk__in=ids)
        .select_related("session", "policy_version__policy")
        .defer("session_after", "after_turns", "result")
        .in_bulk()
    )
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def pin_policy(*, project: Project, policy_id: int | None = None) -> Policy | None:
    """The policy pins act on: the one asked for, else the project's default (or None)."""
    if policy_id is not None:
        return policy_get(projects=[project.pk], policy_id=policy_id, kind=PolicyKind.GC)
    if project.default_policy_id is None:
        return None
    return Policy.objects.filter(pk=project.default_policy_id, project=project).first()


def policy_pins(*, policy: Policy | None) -> tuple[set[int], set[str]]:
    """Turn indices and message ids the policy's newest version pins."""
    if policy is None:
        return set(), set()
    config = (
        PolicyVersion.objects.filter(policy=policy)
        .order_by("-number")
        .values_list("config", flat=True)
        .first()
    ) or {}
    return set(config.get("pinned_turn_indices") or []), set(config.get("pinned_message_ids") or [])


def policy_versions(*, policy: Policy) -> QuerySet[PolicyVersion]:
    return policy.versions.order_by("-number")


# --- Background workers ----------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerStatus:
    """Whether anyone is taking background work: when a worker was last seen alive (it says
    so every quarter lease, busy or idle), and the tasks waiting for one."""

    last_seen: datetime | None
    queued: int
    oldest_queued_seconds: int | None
    # Only the database backend has workers; tasks of the immediate one run in the request.
    workers_expected: bool

    @property
    def absent(self) -> bool:
        """No worker has been seen for a lease's length, where work needs one."""
        if not self.workers_expected:
            return False
        lease = timedelta(seconds=settings.JAATO_TASK_LEASE_SECONDS)
        return self.last_seen is None or timezone.now() - self.last_seen > lease


def worker_status() -> WorkerStatus:
    """Three cheap queries: the latest heartbeat, and the ready tasks (an index holds them)."""
    now = timezone.now()
    last_seen = Worker.objects.aggregate(latest=Max("seen_at"))["latest"]
    ready = DBTaskResult.objects.ready()
    waiting = ready.aggregate(count=Count("pk"), oldest=Min("enqueued_at"))
    oldest = waiting["oldest"]
    return WorkerStatus(
        last_seen=last_seen,
        queued=waiting["count"],
        oldest_queued_seconds=int((now - oldest).total_seconds()) if oldest else None,
        workers_expected=isinstance(task_backends["default"], DatabaseBackend),
    )
