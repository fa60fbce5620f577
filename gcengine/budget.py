"""The instruction budget: where every token in the context window comes from, and its GC policy.

This is JAATO's ``InstructionBudget`` data model, kept figure for figure so that snapshots move
between the two systems unchanged. Two deliberate differences:

* ``created_at`` has no wall-clock default. The engine is deterministic: whoever builds an entry
  decides its timestamp (the session loader derives them from history order).
* Reading a snapshot back never turns a container's *effective* policy into its *stored* one
  (JAATO's restore does, so a conversation restored while it held only the locked first request
  stays locked forever). See :func:`_infer_stored_policy`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from gcengine._fast import REVISION_KEY, Revision, construct, set_fresh
from gcengine._json import default_if_null, json_type, parse_count, parse_enum
from gcengine.errors import SessionFormatError

if TYPE_CHECKING:
    from gcengine.conversation import ConversationIndex


class InstructionSource(StrEnum):
    """The five layers a prompt is assembled from."""

    SYSTEM = "system"
    PLUGIN = "plugin"
    ENRICHMENT = "enrichment"
    CONVERSATION = "conversation"
    THINKING = "thinking"


class GCPolicy(StrEnum):
    """How willing the collector is to drop an entry (``POLICY_ORDER`` ranks them)."""

    LOCKED = "locked"
    PRESERVABLE = "preservable"
    PARTIAL = "partial"
    EPHEMERAL = "ephemeral"
    CONDITIONAL = "conditional"

    @property
    def indicator(self) -> str:
        return GC_POLICY_INDICATORS[self]

    @property
    def description(self) -> str:
        return GC_POLICY_DESCRIPTIONS[self]


POLICY_ORDER: tuple[GCPolicy, ...] = (
    GCPolicy.LOCKED,
    GCPolicy.PRESERVABLE,
    GCPolicy.CONDITIONAL,
    GCPolicy.PARTIAL,
    GCPolicy.EPHEMERAL,
)
"""The policies, most protective first. A conditional entry is decided by the plugin owning
its tool, which may keep it, so it ranks above a container of mixed (partial) children."""


def most_protective(policies: Iterable[GCPolicy | str]) -> GCPolicy:
    """The first policy in ``POLICY_ORDER`` any of ``policies`` has: what a group of entries
    removed together (a tool exchange, a turn) must be treated as. Policies may be given as
    their string values (``"locked"``); values that name no policy are ignored, and nothing
    at all counts as ephemeral."""
    given = list(policies)
    # Searched in the list, never put in a set: a policy's hash is computed in Python, while
    # the list compares identity (then the string) in C. Most groups have one policy.
    if given and isinstance(given[0], GCPolicy) and given.count(given[0]) == len(given):
        return given[0]
    for policy in POLICY_ORDER:
        if policy in given:
            return policy
    return GCPolicy.EPHEMERAL


GC_POLICY_INDICATORS: dict[GCPolicy, str] = {
    GCPolicy.LOCKED: "🔒",
    GCPolicy.PRESERVABLE: "◑",
    GCPolicy.PARTIAL: "◐",
    GCPolicy.EPHEMERAL: "○",
    GCPolicy.CONDITIONAL: "◈",
}

GC_POLICY_DESCRIPTIONS: dict[GCPolicy, str] = {
    GCPolicy.LOCKED: "never collected",
    GCPolicy.PRESERVABLE: "collected only under pressure, never in continuous mode",
    GCPolicy.PARTIAL: "a container whose children have mixed policies",
    GCPolicy.EPHEMERAL: "collected first",
    GCPolicy.CONDITIONAL: "decided at collection time by the plugin that owns the tool",
}

DEFAULT_SOURCE_POLICIES: dict[InstructionSource, GCPolicy] = {
    InstructionSource.SYSTEM: GCPolicy.LOCKED,
    InstructionSource.PLUGIN: GCPolicy.PARTIAL,
    InstructionSource.ENRICHMENT: GCPolicy.EPHEMERAL,
    InstructionSource.CONVERSATION: GCPolicy.PARTIAL,
    InstructionSource.THINKING: GCPolicy.EPHEMERAL,
}

# Thinking tokens are output the model produced, not input it is sent again.
NON_CONTEXT_SOURCES: frozenset[InstructionSource] = frozenset({InstructionSource.THINKING})

DEFAULT_CONTEXT_LIMIT = 128_000


class SourceEntry(BaseModel):
    """One node of the budget tree: a source, or a child such as a turn or a message.

    A node with children is a container: its own ``tokens`` are kept (JAATO writes them) but
    every figure is computed from the children, exactly as JAATO does.

    A conversation entry keeps its conversation laid out flat (``keep_index``), which its
    figures are then read from. Assigning a field of any entry of its tree, ``add_child`` and
    ``remove_child`` advance the tree's ``Revision`` (``gcengine._fast``) and so drop it: the
    budget builder gives one to every entry it makes, and a rebuild gives the one of the tree
    it reuses entries from to the entries it adds (a budget and the budgets rebuilt from it
    share entries); a tree read from elsewhere (a JAATO snapshot, a copy) is given one when its
    conversation is first read. Change ``children`` and
    ``message_ids`` through those, or on a copy, never in place (that is not seen).

    Neither is a field: they take no part in equality or dumps. The revision is kept in the
    entry's ``__dict__`` (as a cached property would be), so reading every entry's is C-speed
    work; a copy shares it, and a deep copy's tree shares a copy of it. The index is kept in a
    slot, so no copy has it.
    """

    __slots__ = ("__weakref__", "_index")

    source: InstructionSource
    tokens: int = Field(default=0, ge=0)
    gc_policy: GCPolicy
    label: str | None = None
    children: dict[str, SourceEntry] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: float | None = None
    message_ids: list[str] = Field(default_factory=list)

    def total_tokens(self) -> int:
        """A leaf's own tokens; a container's is the sum over its leaves: the total of its
        index when it has one (a built conversation), else walked without a call per node (a
        conversation has a leaf per message)."""
        if not self.children:
            return self.tokens
        index = self.kept_index()
        if index is not None:
            return index.total
        total = 0
        pending = [self.children]
        while pending:
            for child in pending.pop().values():
                if child.children:
                    pending.append(child.children)
                else:
                    total += child.tokens
        return total

    def gc_eligible_tokens(self) -> int:
        if self.gc_policy is GCPolicy.LOCKED:
            return 0
        if self.gc_policy is GCPolicy.EPHEMERAL:
            return self.total_tokens()
        if (eligible := self._indexed_tokens(GCPolicy.EPHEMERAL)) is not None:
            return eligible
        return sum(child.gc_eligible_tokens() for child in self.children.values())

    def locked_tokens(self) -> int:
        if self.gc_policy is GCPolicy.LOCKED:
            return self.total_tokens()
        if (locked := self._indexed_tokens(GCPolicy.LOCKED)) is not None:
            return locked
        return sum(child.locked_tokens() for child in self.children.values())

    def preservable_tokens(self) -> int:
        if self.gc_policy is GCPolicy.PRESERVABLE:
            return self.total_tokens()
        if (preservable := self._indexed_tokens(GCPolicy.PRESERVABLE)) is not None:
            return preservable
        return sum(child.preservable_tokens() for child in self.children.values())

    def _indexed_tokens(self, policy: GCPolicy) -> int | None:
        """A built conversation's tokens of messages of ``policy``, from its index (None for
        any other entry): its turns are PARTIAL containers, so a tier's tokens are its
        leaves', which a walk would add up one message at a time."""
        index = self.kept_index() if self.children else None
        return index.tier_tokens[policy] if index is not None else None

    def effective_gc_policy(self) -> GCPolicy:
        """A container's policy is its children's when they agree, PARTIAL when they do not."""
        if not self.children:
            return self.gc_policy
        policies = {child.effective_gc_policy() for child in self.children.values()}
        return policies.pop() if len(policies) == 1 else GCPolicy.PARTIAL

    def indicator(self) -> str:
        return self.effective_gc_policy().indicator

    def add_child(
        self,
        key: str,
        tokens: int,
        gc_policy: GCPolicy | None = None,
        label: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: float | None = None,
        message_ids: list[str] | None = None,
    ) -> SourceEntry:
        """Add (or replace) a child; it inherits this entry's source, as in JAATO, and this
        entry's revision (an edit of it is an edit of the tree)."""
        self.edited()
        child = SourceEntry(
            source=self.source,
            tokens=tokens,
            gc_policy=gc_policy if gc_policy is not None else self.gc_policy,
            label=label if label is not None else key,
            metadata=dict(metadata or {}),
            created_at=created_at,
            message_ids=list(message_ids or []),
        )
        revision = self.revision()
        if revision is not None:
            child.stamp(revision)
        self.children[key] = child
        return child

    def remove_child(self, key: str) -> bool:
        self.edited()
        return self.children.pop(key, None) is not None

    def __setattr__(self, name: str, value: Any) -> None:
        self.edited()
        super().__setattr__(name, value)

    def edited(self) -> None:
        """Count an edit of this entry against its tree's revision, if it has one: every fact
        stamped with the revision is read again."""
        revision = self.revision()
        if revision is not None:
            revision.edits += 1

    def revision(self) -> Revision | None:
        """The revision of the tree this entry belongs to, if it was given one."""
        revision: Revision | None = self.__dict__.get(REVISION_KEY)
        return revision

    def stamp(self, revision: Revision) -> None:
        """Make this entry one of the tree ``revision`` counts the edits of (it is not an edit:
        nothing read from the entry changes)."""
        self.__dict__[REVISION_KEY] = revision

    def keep_index(self, index: ConversationIndex) -> None:
        """Keep ``index`` (this conversation entry's tree laid out flat) until the tree is
        edited; the entry must have been stamped (``stamp``) with its tree's revision."""
        revision = self.revision()
        assert revision is not None, "an index is kept only for a tree with a revision"
        _INDEX.__set__(self, (index, revision, revision.edits))

    def kept_index(self) -> ConversationIndex | None:
        """The index kept for this entry, if its tree is unedited since."""
        try:
            kept: tuple[ConversationIndex, Revision, int] | None = _INDEX.__get__(self)
        except AttributeError:  # nothing was ever kept
            return None
        if kept is None or kept[1].edits != kept[2]:
            return None
        return kept[0]

    def leaves(self) -> Iterator[SourceEntry]:
        """Every node below and including this one that has no children, in ``walk``'s
        order, without the key paths ``walk`` builds: a conversation has a leaf a message."""
        stack = [self]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(reversed(node.children.values()))
            else:
                yield node

    def leaf_figures(self) -> Iterable[tuple[int, str | None]]:
        """Each leaf's tokens and what made them (its ``counted_by``), in ``leaves``' order. A
        built conversation's are its messages' (none for no message, where ``leaves`` gives
        the empty entry itself), read from its index: an upload asks where its figures came
        from, and walking a long session's tree for that took 0.03 s."""
        index = self.kept_index()
        if index is not None and index.counted_by is not None:
            return zip(index.tokens, index.counted_by, strict=True)
        return ((leaf.tokens, leaf.metadata.get("counted_by")) for leaf in self.leaves())

    def walk(self, key: str = "") -> Iterator[tuple[str, SourceEntry]]:
        """Every node below and including this one, depth first, with a ``/``-joined key path."""
        yield key, self
        for child_key, child in self.children.items():
            yield from child.walk(f"{key}/{child_key}" if key else child_key)

    def to_dict(self, top_level_default: GCPolicy | None = None) -> dict[str, Any]:
        """JAATO's ``SourceEntry.to_dict()`` shape.

        A container's stored policy is added (as ``stored_gc_policy``) when reading the dict
        back would not recover it from the figures alone.
        """
        effective = self.effective_gc_policy()
        data: dict[str, Any] = {
            "source": self.source.value,
            "tokens": self.tokens,
            "total_tokens": self.total_tokens(),
            "gc_policy": effective.value,
            "gc_eligible_tokens": self.gc_eligible_tokens(),
            "indicator": effective.indicator,
        }
        if (
            self.children
            and _infer_stored_policy(self, data, top_level_default) is not self.gc_policy
        ):
            data["stored_gc_policy"] = self.gc_policy.value
        if self.label:
            data["label"] = self.label
        if self.metadata:
            data["metadata"] = self.metadata
        if self.created_at is not None:
            data["created_at"] = self.created_at
        if self.message_ids:
            data["message_ids"] = list(self.message_ids)
        if self.children:
            data["children"] = {key: child.to_dict() for key, child in self.children.items()}
        return data

    @classmethod
    def from_dict(
        cls,
        data: Any,
        path: tuple[str | int, ...] = (),
        source: InstructionSource | None = None,
        top_level_default: GCPolicy | None = None,
    ) -> SourceEntry:
        """Read the ``to_dict()`` shape back, recovering the stored policy (see module docs)."""
        if not isinstance(data, Mapping):
            raise SessionFormatError(
                f"a budget entry must be an object, not {json_type(data)}", path
            )
        entry_source = parse_enum(InstructionSource, data.get("source"), (*path, "source"))
        if source is not None and entry_source is not source:
            entry_source = source
        policy_key = "stored_gc_policy" if "stored_gc_policy" in data else "gc_policy"
        policy = parse_enum(GCPolicy, data.get(policy_key, "ephemeral"), (*path, policy_key))
        tokens = parse_count(data.get("tokens", 0), (*path, "tokens"))
        raw_children = default_if_null(data.get("children"), {})
        if not isinstance(raw_children, Mapping):
            raise SessionFormatError("children must be an object", (*path, "children"))
        children = {
            str(key): cls.from_dict(child, (*path, "children", str(key)), entry_source)
            for key, child in raw_children.items()
        }
        label = data.get("label")
        if label is not None and not isinstance(label, str):
            raise SessionFormatError("label must be a string", (*path, "label"))
        metadata = default_if_null(data.get("metadata"), {})
        if not isinstance(metadata, Mapping):
            raise SessionFormatError("metadata must be an object", (*path, "metadata"))
        created_at = data.get("created_at")
        if created_at is not None and (
            isinstance(created_at, bool) or not isinstance(created_at, int | float)
        ):
            raise SessionFormatError("created_at must be a Unix time", (*path, "created_at"))
        message_ids = default_if_null(data.get("message_ids"), [])
        if not isinstance(message_ids, list) or not all(isinstance(m, str) for m in message_ids):
            raise SessionFormatError(
                "message_ids must be a list of strings", (*path, "message_ids")
            )
        entry = construct(
            cls,
            source=entry_source,
            tokens=tokens,
            gc_policy=policy,
            label=label,
            children=children,
            metadata=dict(metadata),
            created_at=float(created_at) if created_at is not None else None,
            message_ids=list(message_ids),
        )
        if children and "stored_gc_policy" not in data:
            set_fresh(entry, "gc_policy", _infer_stored_policy(entry, data, top_level_default))
        return entry


# The slot holding an entry's kept index, read and set without pydantic's attribute handling
# (which takes every name starting with "_" for a private attribute).
_INDEX = SourceEntry.__dict__["_index"]


def _infer_stored_policy(
    entry: SourceEntry, recorded: Mapping[str, Any], top_level_default: GCPolicy | None
) -> GCPolicy:
    """Choose the stored policy of a container read from a JAATO snapshot.

    JAATO writes only the effective policy. Any stored policy that reproduces the recorded
    figures is a faithful reading; we prefer the source default, then PARTIAL, so a container
    keeps accepting new children of any policy (the fix for JAATO's restore bug).
    """
    recorded_eligible = recorded.get("gc_eligible_tokens")
    candidates = [top_level_default, GCPolicy.PARTIAL, entry.effective_gc_policy()]
    for candidate in candidates:
        if candidate is None:
            continue
        if recorded_eligible is None or _eligible_as(entry, candidate) == recorded_eligible:
            return candidate
    # The recorded figures fit no reading (a hand-edited file); PARTIAL keeps children in charge.
    return GCPolicy.PARTIAL


def _eligible_as(entry: SourceEntry, policy: GCPolicy) -> int:
    """The container's GC-eligible tokens if ``policy`` were its stored policy."""
    if policy is GCPolicy.LOCKED:
        return 0
    if policy is GCPolicy.EPHEMERAL:
        return entry.total_tokens()
    return sum(child.gc_eligible_tokens() for child in entry.children.values())


class InstructionBudget(BaseModel):
    """The whole context window of one agent, by source."""

    session_id: str = ""
    agent_id: str = "main"
    agent_type: str | None = None
    context_limit: int = Field(default=DEFAULT_CONTEXT_LIMIT, ge=0)
    entries: dict[InstructionSource, SourceEntry] = Field(default_factory=dict)

    @classmethod
    def create_default(
        cls,
        session_id: str = "",
        agent_id: str = "main",
        agent_type: str | None = None,
        context_limit: int = DEFAULT_CONTEXT_LIMIT,
    ) -> InstructionBudget:
        """All five sources, empty, with their default policies, in JAATO's order."""
        return cls(
            session_id=session_id,
            agent_id=agent_id,
            agent_type=agent_type if agent_type is not None else agent_id,
            context_limit=context_limit,
            entries={
                source: SourceEntry(source=source, gc_policy=DEFAULT_SOURCE_POLICIES[source])
                for source in InstructionSource
            },
        )

    def context_entries(self) -> Iterator[tuple[InstructionSource, SourceEntry]]:
        """The sources sent to the model (every one but thinking), with their entries."""
        return ((s, e) for s, e in self.entries.items() if s not in NON_CONTEXT_SOURCES)

    def total_tokens(self) -> int:
        """Tokens sent to the model: every source but thinking."""
        return sum(entry.total_tokens() for _, entry in self.context_entries())

    def total_tokens_all(self) -> int:
        return sum(entry.total_tokens() for entry in self.entries.values())

    def gc_eligible_tokens(self) -> int:
        return sum(entry.gc_eligible_tokens() for _, entry in self.context_entries())

    def locked_tokens(self) -> int:
        return sum(entry.locked_tokens() for _, entry in self.context_entries())

    def preservable_tokens(self) -> int:
        return sum(entry.preservable_tokens() for _, entry in self.context_entries())

    def utilization_percent(self) -> float:
        return self.percent_of(self.total_tokens())

    def percent_of(self, tokens: int) -> float:
        """``tokens`` as a share of the context limit, in percent (0 without a limit)."""
        if self.context_limit == 0:
            return 0.0
        return tokens / self.context_limit * 100

    def available_tokens(self) -> int:
        return max(0, self.context_limit - self.total_tokens())

    def gc_headroom_percent(self) -> float:
        if self.context_limit == 0:
            return 0.0
        return self.gc_eligible_tokens() / self.context_limit * 100

    def get_entry(self, source: InstructionSource) -> SourceEntry | None:
        return self.entries.get(source)

    def set_entry(
        self,
        source: InstructionSource,
        tokens: int,
        gc_policy: GCPolicy | None = None,
        label: str | None = None,
        children: dict[str, SourceEntry] | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: float | None = None,
    ) -> SourceEntry:
        """Replace a source's entry; a missing policy means the source's default."""
        entry = SourceEntry(
            source=source,
            tokens=tokens,
            gc_policy=gc_policy or DEFAULT_SOURCE_POLICIES[source],
            label=label,
            children=dict(children or {}),
            metadata=dict(metadata or {}),
            created_at=created_at,
        )
        self.entries[source] = entry
        return entry

    def add_child(
        self,
        source: InstructionSource,
        key: str,
        tokens: int,
        gc_policy: GCPolicy | None = None,
        label: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: float | None = None,
        message_ids: list[str] | None = None,
    ) -> SourceEntry | None:
        """Add a child under a source; None when the source has no entry (as in JAATO)."""
        parent = self.entries.get(source)
        if parent is None:
            return None
        return parent.add_child(
            key,
            tokens,
            gc_policy,
            label=label,
            metadata=metadata,
            created_at=created_at,
            message_ids=message_ids,
        )

    def remove_child(self, source: InstructionSource, key: str) -> bool:
        parent = self.entries.get(source)
        return parent.remove_child(key) if parent is not None else False

    def snapshot(self) -> dict[str, Any]:
        """JAATO's snapshot JSON: what its UIs receive and what budget files contain."""
        return {
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "agent_type": self.agent_type,
            "context_limit": self.context_limit,
            "total_tokens": self.total_tokens(),
            "gc_eligible_tokens": self.gc_eligible_tokens(),
            "locked_tokens": self.locked_tokens(),
            "preservable_tokens": self.preservable_tokens(),
            "utilization_percent": round(self.utilization_percent(), 2),
            "available_tokens": self.available_tokens(),
            "gc_headroom_percent": round(self.gc_headroom_percent(), 2),
            "entries": {
                source.value: entry.to_dict(DEFAULT_SOURCE_POLICIES[source])
                for source, entry in self.entries.items()
            },
        }

    @classmethod
    def from_snapshot(cls, data: Any, path: tuple[str | int, ...] = ()) -> InstructionBudget:
        """Read ``snapshot()`` output (ours or JAATO's) back into a budget with the same figures."""
        if not isinstance(data, Mapping):
            raise SessionFormatError(
                f"a budget snapshot must be an object, not {json_type(data)}", path
            )
        raw_entries = data.get("entries")
        if not isinstance(raw_entries, Mapping):
            raise SessionFormatError(
                "entries must be an object keyed by source", (*path, "entries")
            )
        entries: dict[InstructionSource, SourceEntry] = {}
        for key, raw in raw_entries.items():
            source = parse_enum(InstructionSource, key, (*path, "entries", key))
            entries[source] = SourceEntry.from_dict(
                raw, (*path, "entries", key), source, DEFAULT_SOURCE_POLICIES[source]
            )
        session_id = data.get("session_id", "")
        agent_id = data.get("agent_id", "main")
        agent_type = data.get("agent_type")
        for name, value in (("session_id", session_id), ("agent_id", agent_id)):
            if not isinstance(value, str):
                raise SessionFormatError("must be a string", (*path, name))
        if agent_type is not None and not isinstance(agent_type, str):
            raise SessionFormatError("must be a string or null", (*path, "agent_type"))
        context_limit = parse_count(
            data.get("context_limit", DEFAULT_CONTEXT_LIMIT), (*path, "context_limit")
        )
        return construct(
            cls,
            session_id=session_id,
            agent_id=agent_id,
            agent_type=agent_type,
            context_limit=context_limit,
            entries=entries,
        )
