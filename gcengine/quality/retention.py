"""Anchor retention: of the anchors in the model's whole context before a compaction, how many
it can still see after, weighted by class, beside the tokens that context takes.

The inputs are what the model saw before and after. Every anchor of the context before
counts; one held by a message kept unchanged is still in view, and one held only by
messages that went (or changed) is looked for in everything still in view (messages kept,
the summary written). Keeping more never scores lower, so a compaction that removes less
scores at least as high: rankings compare policies at equal size (``score_at_size``,
``scores_at_equal_size``), each context cut to the same token budget. It needs no model and
gives the same figures every time.

* ``score`` is ``sum(weight * kept) / sum(weight * anchors)`` over every class; None when
  the context before held no anchor (nothing to lose);
* per class: anchors, how many are kept, and the first ones lost;
* the tokens of the context before and after (``tokens_before``, ``tokens_after``), and the
  token budget the context after was cut to for an equal-size score (``size``);
* invented anchors: literal anchors of a new summary that appear nowhere in the session (a
  word of them the session never used), a hallucination proxy;
* the compression ratio: tokens of what came in (summaries, notices) over tokens of what went;
* recency: retention of the anchors last mentioned in the oldest third of the context before,
  against those in the newest third.

Stashed content counts as removed: the model cannot see it, whatever can bring it back.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_, is_not, itemgetter, not_
from typing import Any

from pydantic import BaseModel, Field, computed_field

from gcengine._fast import construct
from gcengine.errors import RetentionGateError
from gcengine.messages import Message, MessageKind, PartType
from gcengine.quality.anchors import (
    ANCHOR_CLASSES,
    Anchor,
    AnchorClass,
    literal_anchors_of,
    vocabulary_words,
)
from gcengine.quality.counting import ContextCount, InView, WordCount, lost_of
from gcengine.quality.reading import AnchorCache, View, not_carried
from gcengine.quality.session_anchors import AnchorContext
from gcengine.quality.tally import AnchorKey, Tally
from gcengine.session import ObservedCompaction, Session, message_counts
from gcengine.tokens import counter_by_name

# Each class lists this many of the anchors it lost (the rest are a count).
LOST_SHOWN = 10
INVENTED_SHOWN = 10


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


class ClassRetention(BaseModel):
    """One class's anchors in the context before, and how many of them the model can still
    see."""

    anchor_class: AnchorClass
    weight: int
    anchors: int = 0
    retained: int = 0
    lost: list[str] = Field(default_factory=list, description="the first anchors lost")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float | None:
        return _share(self.retained, self.anchors)


class InventedAnchors(BaseModel):
    """Literal anchors of the summaries a compaction wrote, and those the session never had."""

    checked: int = 0
    invented: int = 0
    examples: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        return _share(self.invented, self.checked)


class RecencyRetention(BaseModel):
    """Weighted anchors last mentioned in the oldest and in the newest third of the context
    before, and how many of each the model can still see."""

    oldest_weight: int = 0
    oldest_retained: int = 0
    newest_weight: int = 0
    newest_retained: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def oldest(self) -> float | None:
        return _share(self.oldest_retained, self.oldest_weight)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def newest(self) -> float | None:
        return _share(self.newest_retained, self.newest_weight)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def bias(self) -> float | None:
        """Newest minus oldest: above 0, the compaction kept recent facts and lost old ones."""
        if self.oldest is None or self.newest is None:
            return None
        return self.newest - self.oldest


def _empty_classes() -> list[ClassRetention]:
    return [ClassRetention(anchor_class=c.anchor_class, weight=c.weight) for c in ANCHOR_CLASSES]


class AnchorRetention(BaseModel):
    """What one compaction (or several, pooled) kept in view of the anchors of the whole
    context before it.

    ``unscorable`` says why there is no score at all (an encrypted summary); otherwise
    ``score`` is None only when the context before held no anchor.
    """

    classes: list[ClassRetention] = Field(default_factory=_empty_classes)
    invented: InventedAnchors = Field(default_factory=InventedAnchors)
    recency: RecencyRetention = Field(default_factory=RecencyRetention)
    removed_messages: int = 0
    removed_tokens: int = 0
    replacement_tokens: int = 0
    tokens_before: int = Field(default=0, description="tokens of the context before")
    tokens_after: int = Field(
        default=0, description="tokens of the context after (cut to ``size`` when one is set)"
    )
    size: int | None = Field(
        default=None,
        description="the token budget the context after was cut to, oldest first, for a "
        "comparison at equal size; None for the context as the compaction left it",
    )
    compactions: int = Field(default=1, description="how many compactions this pools")
    unscorable: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def anchors(self) -> int:
        return sum(c.anchors for c in self.classes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def score(self) -> float | None:
        weighted = sum(c.weight * c.anchors for c in self.classes)
        return _share(sum(c.weight * c.retained for c in self.classes), weighted)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def compression_ratio(self) -> float | None:
        """Tokens that came in over tokens that went: 0 for a truncation."""
        return _share(self.replacement_tokens, self.removed_tokens)

    def of_class(self, anchor_class: AnchorClass) -> ClassRetention:
        return next(c for c in self.classes if c.anchor_class is anchor_class)


def pooled_retention(items: Iterable[AnchorRetention]) -> AnchorRetention:
    """Several compactions as one: every anchor of each counts once, as lost or kept. The
    unscorable ones are left out."""
    scored = [item for item in items if item.unscorable is None]
    classes = _empty_classes()
    for position, total in enumerate(classes):
        for item in scored:
            part = item.classes[position]
            total.anchors += part.anchors
            total.retained += part.retained
            total.lost.extend(part.lost[: LOST_SHOWN - len(total.lost)])
    invented = InventedAnchors()
    recency = RecencyRetention()
    for item in scored:
        invented.checked += item.invented.checked
        invented.invented += item.invented.invented
        invented.examples.extend(item.invented.examples[: INVENTED_SHOWN - len(invented.examples)])
        recency.oldest_weight += item.recency.oldest_weight
        recency.oldest_retained += item.recency.oldest_retained
        recency.newest_weight += item.recency.newest_weight
        recency.newest_retained += item.recency.newest_retained
    return AnchorRetention(
        classes=classes,
        invented=invented,
        recency=recency,
        removed_messages=sum(i.removed_messages for i in scored),
        removed_tokens=sum(i.removed_tokens for i in scored),
        replacement_tokens=sum(i.replacement_tokens for i in scored),
        tokens_before=sum(i.tokens_before for i in scored),
        tokens_after=sum(i.tokens_after for i in scored),
        size=_pooled_size(scored),
        compactions=sum(i.compactions for i in scored),
    )


def _pooled_size(scored: Sequence[AnchorRetention]) -> int | None:
    """The budget of equal-size scores pooled, when they share one and are all at one."""
    sizes = {item.size for item in scored}
    return sizes.pop() if len(sizes) == 1 else None


# --- Gates -------------------------------------------------------------------------------------

RetentionGates = Mapping[AnchorClass, float]
"""The least recall a project accepts per class (0 to 1)."""

DEFAULT_RETENTION_GATES: dict[AnchorClass, float] = {
    AnchorClass.DECISIONS: 0.95,
    AnchorClass.OPEN_WORK: 0.95,
}


class GateFailure(BaseModel):
    anchor_class: AnchorClass
    recall: float
    minimum: float


def gate_failures(retention: AnchorRetention, gates: RetentionGates) -> list[GateFailure]:
    """The classes whose recall is under the project's gate. A class with no anchors has
    nothing to lose and passes."""
    if retention.unscorable is not None:
        return []
    failures = []
    for part in retention.classes:
        minimum = gates.get(part.anchor_class)
        if minimum is not None and part.recall is not None and part.recall < minimum:
            failures.append(
                GateFailure(anchor_class=part.anchor_class, recall=part.recall, minimum=minimum)
            )
    return failures


def load_retention_gates(data: Any) -> dict[AnchorClass, float]:
    """Gates from JSON (``{"decisions": 0.95}``), strict: an unknown class or a value that is
    not a number from 0 to 1 is an error naming the class."""
    if not isinstance(data, Mapping):
        raise RetentionGateError("gates must be an object of class: least recall")
    gates: dict[AnchorClass, float] = {}
    known = ", ".join(c.value for c in AnchorClass)
    for key, value in data.items():
        try:
            anchor_class = AnchorClass(key)
        except ValueError:
            raise RetentionGateError(f"no anchor class {key!r} (known: {known})", key) from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise RetentionGateError(f"must be a number from 0 to 1, not {value!r}", key)
        gates[anchor_class] = float(value)
    return gates


# --- Scoring -----------------------------------------------------------------------------------


_MESSAGE_ID = attrgetter("message_id")
# Read in C from each of a long list of (anchor, where) pairs.
_ANCHOR, _CLASS = itemgetter(0), attrgetter("anchor_class")


class AnchorScorer:
    """Scores compactions of one session, reading each message once however many
    compactions keep or remove it (a replay collects the same window hundreds of times).

    ``corpus`` is everything the session said (what an invented anchor is checked against),
    or what an earlier scorer of the session read of it (its ``cache``, or ``anchor_cache``'s):
    a scorer given one reads no message that one has read. ``tokens`` is what a message costs.
    """

    def __init__(
        self, corpus: Iterable[Message] | AnchorCache, tokens: Callable[[Message], int]
    ) -> None:
        self.cache = corpus if isinstance(corpus, AnchorCache) else AnchorCache(corpus)
        self._tokens = tokens
        self._view_of = self.cache.view_of
        self._held_of = self.cache.held_of
        # The anchors of the last context scored, and what its compaction left (a replay's
        # next context is that and a few more turns).
        self._tally: Tally[View] | None = None
        # Its first context, counted at once, until it scores another (``_whole_of``).
        self._whole: ContextCount | None = None
        self._pending: tuple[list[Message], list[int], bytes] | None = None
        # The words of the last context scored, kept up to date from one score to the next (a
        # replay's contexts differ by a few turns): how many views in it hold each word.
        self._shown: set[View] = set()
        self._words_shown = WordCount()
        # How many of the tally's messages are that last context, when it is the context
        # before of the score under way but for the messages after them (a replay's next).
        self._shown_until: int | None = None
        # A scorer is shared by the requests previewing one session; its word count is not.
        self._lock = threading.Lock()

    @property
    def context(self) -> AnchorContext:
        """What the session's anchors are read with: its root, the issue ids it names."""
        return self.cache.context

    @property
    def corpus_messages(self) -> int:
        """How many messages it may come to remember: what bounds its memory."""
        return self.cache.corpus_messages

    def tokens_of(self, messages: Iterable[Message]) -> int:
        return sum(map(self._tokens, messages))

    def score_change(self, before: Sequence[Message], after: Sequence[Message]) -> AnchorRetention:
        """A compaction from the context ``before`` to the context ``after``: the messages of
        ``before`` that ``after`` no longer holds unchanged went; the messages of ``after``
        that ``before`` did not hold came in."""
        return self.score(before, after, _not_held(before, after), _not_held(after, before))

    def score_taken(
        self, before: Sequence[Message], after: Sequence[Message], first: int, end: int
    ) -> AnchorRetention:
        """``score_change`` when ``after`` is ``before`` without its messages ``first`` to
        ``end``, the very same objects otherwise (a replay's collection that took a run of
        turns, which the replay finds as it goes): nothing is compared message by message, so
        a score costs what changed, not the context."""
        if len(set(map(_MESSAGE_ID, before))) != len(before):
            return self.score_change(before, after)  # ids say which messages went
        return self.score(before, after, before[first:end], taken=(first, end))

    def score_at_size(
        self, before: Sequence[Message], after: Sequence[Message], size: int
    ) -> AnchorRetention:
        """``score_change`` with the context after cut to ``size`` tokens (``cut_to_size``):
        what a policy keeps at that budget, comparable with any other policy's there."""
        cut = cut_to_size(after, self._tokens, size)
        return self.score_change(before, cut).model_copy(update={"size": size})

    def score(
        self,
        before: Sequence[Message],
        after: Sequence[Message],
        removed: Sequence[Message],
        replacement: Sequence[Message] = (),
        *,
        taken: tuple[int, int] | None = None,
    ) -> AnchorRetention:
        """``before``: the whole context before, oldest first; ``after``: everything the model
        still sees; ``removed``: the messages of ``before`` it no longer sees unchanged;
        ``replacement``: what came in for them (summaries, notices), part of ``after`` too.
        ``taken`` (``score_taken``'s): ``removed`` is that run of ``before``, ``after`` the rest.

        An anchor some kept message holds is in view as it was; only the ones held by
        removed messages alone are looked for in ``after`` (most of a context is kept)."""
        with self._lock:
            whole = self._whole_of(before)
            counted: ContextCount | Tally[View] = whole or self._tally_of(before)
            if taken is None:
                gone = {m.message_id for m in removed}
                gone_at = list(
                    compress(range(len(before)), map(gone.__contains__, map(_MESSAGE_ID, before)))
                )
            else:
                gone_at = list(range(*taken))
            keep = bytearray(b"\x01") * len(before)
            for position in gone_at:
                keep[position] = 0
            # Most compactions only take messages out: what is in view is then the rest.
            copies = [] if taken else _copies_kept(list(compress(before, keep)), after)
            only_taken = copies is not None
            if not only_taken:
                views = list(map(self._view_of, after))
            elif isinstance(counted, ContextCount):  # what it kept is read now, no more
                views = list(map(self._view_of, compress(before, keep)))
            else:
                views = list(compress(counted.views, keep))
            if isinstance(counted, Tally) and taken and self._shown_until is not None:
                words = self._words_taken(counted.views, self._shown_until, taken)
            else:
                words = self._words_in_view(after, views)
            in_view = InView(views, words)
            if isinstance(counted, ContextCount):
                kept = counted.anchors.kept(keep, in_view, _thirds(len(before)), LOST_SHOWN)
                lost_count = counted.per_class - kept.retained
                classes = _class_retention(counted.per_class, lost_count, kept.lost_shown)
                recency = construct(
                    RecencyRetention,
                    oldest_weight=kept.oldest,
                    oldest_retained=kept.oldest_retained,
                    newest_weight=kept.newest,
                    newest_retained=kept.newest_retained,
                )
            else:
                # The anchors no message kept unchanged holds, by their first mention (the
                # order lost ones are listed in), each with its last mention and where that is.
                unheld: dict[AnchorKey, tuple[Anchor, int]] = {}
                for position in gone_at:
                    entry = counted.held[position]
                    mentions = zip(entry.anchors, repeat(position))
                    unheld.update(zip(entry.keys, mentions, strict=True))
                for key in keys_still_held(counted, unheld, gone_at, keep):
                    del unheld[key]
                lost = lost_of(list(unheld.values()), in_view)
                classes = class_retentions(counted.per_class, lost)
                recency = recency_retention(counted.last_weights(), lost)
            tokens_before = counted.tokens
            if copies is None:
                tokens_after = self.tokens_of(after)
            else:
                costs = list(compress(counted.costs, keep))
                tokens_after = sum(costs) + sum(self._tokens(after[p]) - costs[p] for p in copies)
            # The next context a replay scores is this one's after and then more turns.
            pending = only_taken and whole is None
            self._pending = (list(after), gone_at, bytes(keep)) if pending else None
        # Built unchecked (a replay scores thousands): every figure is one counted above, and
        # every field is given, in the order they are written out.
        return construct(
            AnchorRetention,
            classes=classes,
            invented=self._invented(replacement),
            recency=recency,
            removed_messages=len(removed),
            removed_tokens=self.tokens_of(removed),
            replacement_tokens=self.tokens_of(replacement),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            size=None,
            compactions=1,
            unscorable=None,
        )

    def _whole_of(self, before: Sequence[Message]) -> ContextCount | None:
        """``before`` counted at once, when it is the first context this scorer scores (a run's
        score, a ranking's contexts after one context before); None from the first other one
        on, which the tally counts (a replay's contexts, each the last one's after and a few
        more turns)."""
        whole = self._whole
        if self._tally is None and whole is None:
            anchors = self.cache.counted(before)
            whole = self._whole = ContextCount(anchors, self._tokens)
        if whole is not None and not whole.counts(before):
            whole = self._whole = None
        return whole

    def _tally_of(self, before: Sequence[Message]) -> Tally[View]:
        """The tally of ``before``: the last one kept, brought up to it when ``before`` is
        the context it counted (or the one after its compaction) and then more; else a new
        one."""
        tally = self._tally
        self._shown_until = None
        if tally is not None and self._pending is not None and not tally.extends_to(before):
            after, gone_at, keep = self._pending
            if len(before) >= len(after) and all(map(is_, after, before)):
                tally.drop(gone_at, keep, after, self._tokens)
                self._shown_until = len(after)
        self._pending = None
        if tally is None or not tally.extends_to(before):
            tally = Tally()
        tally.extend(before[len(tally.messages) :], self._held_of, self._tokens, self._view_of)
        self._tally = tally
        return tally

    def _words_in_view(self, visible: Sequence[Message], views: Sequence[View]) -> WordCount:
        """``_words_shown`` for ``visible``: the views that left the context taken out, the ones
        that came in added."""
        # A view belongs to one message id, so the views of two contexts compare as sets.
        now = set(dict(zip(map(_MESSAGE_ID, visible), views, strict=True)).values())
        for view in self._shown - now:
            self._words_shown.left.update(view.literal_words)
        for view in now - self._shown:
            self._words_shown.came.update(view.literal_words)
        self._shown = now
        return self._words_shown

    def _words_taken(self, views: Sequence[View], shown: int, taken: tuple[int, int]) -> WordCount:
        """``_words_in_view`` when the context before is the last one after (the first
        ``shown`` of ``views``) and then more, and this compaction took the run ``taken`` of
        it: the new views come in, those of the run leave (a view both does is counted both
        ways, so it is not in view)."""
        came, left = views[shown:], views[slice(*taken)]
        for view in came:
            self._words_shown.came.update(view.literal_words)
        for view in left:
            self._words_shown.left.update(view.literal_words)
        self._shown.update(came)
        self._shown.difference_update(left)
        return self._words_shown

    def _invented(self, replacement: Sequence[Message]) -> InventedAnchors:
        """Summaries only: a notice is the collector speaking about itself."""
        invented = InventedAnchors()
        keys: set[tuple[AnchorClass, str]] = set()
        for message in replacement:
            if message.kind is not MessageKind.SUMMARY:
                continue
            for anchor in literal_anchors_of(message):
                if (anchor.anchor_class, anchor.key) in keys:
                    continue
                keys.add((anchor.anchor_class, anchor.key))
                invented.checked += 1
                vocabulary = self.cache.vocabulary
                if any(w not in vocabulary for w in vocabulary_words(anchor.key)):
                    invented.invented += 1
                    if len(invented.examples) < INVENTED_SHOWN:
                        invented.examples.append(anchor.text)
        return invented


def cut_to_size(
    context: Sequence[Message], tokens: Callable[[Message], int], size: int
) -> list[Message]:
    """``context`` cut to at most ``size`` tokens: messages kept verbatim go oldest first,
    then the summaries a compaction wrote (its own product, which a budget is for), oldest
    first. Comparing two contexts at the smaller one's size cuts only the larger; one within
    ``size`` is left as it is."""
    order = sorted(
        range(len(context)),
        key=lambda i: (context[i].kind is MessageKind.SUMMARY, i),
    )
    total = sum(map(tokens, context))
    dropped: set[int] = set()
    for index in order:
        if total <= size:
            break
        dropped.add(index)
        total -= tokens(context[index])
    return [m for i, m in enumerate(context) if i not in dropped]


def scores_at_equal_size(
    scorer: AnchorScorer, before: Sequence[Message], afters: Mapping[str, Sequence[Message]]
) -> dict[str, AnchorRetention]:
    """Several policies' contexts after one context ``before``, each scored at the size of the
    smallest (``AnchorScorer.score_at_size``): a policy that removes less gains nothing from
    it. The size depends only on the set of contexts, so the comparison is symmetric."""
    if not afters:
        return {}
    size = min(scorer.tokens_of(after) for after in afters.values())
    return {name: scorer.score_at_size(before, after, size) for name, after in afters.items()}


def _third(position: int, messages: int) -> int:
    """-1 for a message in the oldest third of ``messages``, 1 in the newest, else 0."""
    share = (position + 0.5) / messages
    return -1 if share < 1 / 3 else 1 if share > 2 / 3 else 0


def _thirds(messages: int) -> tuple[int, int]:
    """Where the middle and the newest third of ``messages`` start (``_third``), found from
    just before each."""
    oldest_end = max(int(messages / 3 - 0.5) - 1, 0)
    while oldest_end < messages and _third(oldest_end, messages) < 0:
        oldest_end += 1
    newest_start = max(int(2 * messages / 3 - 0.5) - 1, oldest_end)
    while newest_start < messages and _third(newest_start, messages) <= 0:
        newest_start += 1
    return oldest_end, newest_start


def keys_still_held(
    tally: Tally[View], keys: Iterable[AnchorKey], gone_at: Sequence[int], keep: bytearray
) -> list[AnchorKey]:
    """Of ``keys``, held by the messages at ``gone_at``, the ones a message ``keep`` keeps
    holds too. Counted on the smaller side: a key whose holders are not all gone, when most
    of the context stays (a replay's collection); a key some kept message holds, when most
    of it goes (a run that took out all but the last turns)."""
    if 2 * len(gone_at) <= len(keep):
        gone_holders: Counter[AnchorKey] = Counter()
        for position in gone_at:
            gone_holders.update(tally.held[position].keys)
        holding = tally.holding
        return [k for k in keys if holding(k) != gone_holders[k]]
    kept_keys: set[AnchorKey] = set()
    for entry in compress(tally.held, keep):
        kept_keys.update(entry.keys)
    return [k for k in keys if k in kept_keys]


def _copies_kept(rest: list[Message], after: Sequence[Message]) -> list[int] | None:
    """Where ``after`` holds a copy of ``rest``'s message that the model reads alike (a
    collection marking a kept message in its metadata), when ``after`` is ``rest`` so; None
    when it is not (something came in, or a message changed)."""
    if len(rest) != len(after):
        return None
    copies = list(compress(range(len(rest)), map(is_not, rest, after)))
    for position in copies:
        one, other = rest[position], after[position]
        if one.message_id != other.message_id or not_carried(other, one):
            return None
    return copies


def _not_held(messages: Sequence[Message], others: Sequence[Message]) -> list[Message]:
    """The messages of ``messages`` that ``others`` does not hold: neither the very object
    nor a message under its id that the model reads alike (a copy a collection marked in its
    metadata). A message ``others`` holds as it is stays held when another of ``others``
    shares its id (a summary given the id of a message it kept, say). The objects are
    compared in C: a replay asks this of hundreds of messages at each collection, and keeps
    most."""
    there = set(map(id, others))
    rest = list(compress(messages, map(not_, map(there.__contains__, map(id, messages)))))
    if not rest:
        return rest
    wanted = set(map(_MESSAGE_ID, rest))
    by_id: dict[str, list[Message]] = {}
    for other in compress(others, map(wanted.__contains__, map(_MESSAGE_ID, others))):
        by_id.setdefault(other.message_id, []).append(other)
    if not by_id:  # no copy to compare (a run's score: tens of thousands of messages went)
        return rest
    return [
        m
        for m in rest
        if (alike := by_id.get(m.message_id)) is None or all(not_carried(m, o) for o in alike)
    ]


def class_retentions(
    anchors: Mapping[AnchorClass, int], lost: list[tuple[Anchor, int]]
) -> list[ClassRetention]:
    """Each class's distinct anchors, how many are kept, and the first lost ones."""
    lost_count: Counter[AnchorClass] = Counter(map(_CLASS, map(_ANCHOR, lost)))
    shown: dict[AnchorClass, list[str]] = {c.anchor_class: [] for c in ANCHOR_CLASSES}
    # Read until every class shows all it will: a run can lose hundreds of thousands.
    wanted = sum(min(count, LOST_SHOWN) for count in lost_count.values())
    for anchor, _ in lost:
        if not wanted:
            break
        if len(texts := shown[anchor.anchor_class]) < LOST_SHOWN:
            texts.append(anchor.text)
            wanted -= 1
    return _class_retention(anchors, lost_count, shown)


def _class_retention(
    anchors: Mapping[AnchorClass, int],
    lost: Mapping[AnchorClass, int],
    shown: Mapping[AnchorClass, list[str]],
) -> list[ClassRetention]:
    """Each class's ``anchors``, how many it ``lost`` and the first of them ``shown``."""
    return [
        construct(
            ClassRetention,
            anchor_class=c.anchor_class,
            weight=c.weight,
            anchors=anchors.get(c.anchor_class, 0),
            retained=anchors.get(c.anchor_class, 0) - lost.get(c.anchor_class, 0),
            lost=shown[c.anchor_class],
        )
        for c in ANCHOR_CLASSES
    ]


def recency_retention(last_weights: list[int], lost: list[tuple[Anchor, int]]) -> RecencyRetention:
    """The weight of the anchors last mentioned in the oldest and newest third of a context
    (``last_weights``: what each of its messages mentions last), and of those kept."""
    oldest_end, newest_start = _thirds(len(last_weights))
    oldest, newest = sum(last_weights[:oldest_end]), sum(last_weights[newest_start:])
    weight = {c.anchor_class: c.weight for c in ANCHOR_CLASSES}
    return construct(
        RecencyRetention,
        oldest_weight=oldest,
        oldest_retained=oldest - sum(weight[a.anchor_class] for a, p in lost if p < oldest_end),
        newest_weight=newest,
        newest_retained=newest - sum(weight[a.anchor_class] for a, p in lost if p >= newest_start),
    )


# --- Runs and observed compactions -------------------------------------------------------------


def session_corpus(session: Session) -> list[Message]:
    """Every message of the session, the ones its own compactions replaced included."""
    return [
        *(m for compaction in session.compactions for m in compaction.replaced),
        *session.history,
    ]


def anchor_cache(session: Session) -> AnchorCache:
    """What scoring reads of ``session``, to keep for its later scores: what its sub-agents
    said counts as said (an anchor a summary takes from a sub-agent's report is not
    invented)."""
    return AnchorCache(
        [*session_corpus(session), *(m for agent in session.subagents for m in agent.history)]
    )


def session_scorer(session: Session, cache: AnchorCache | None = None) -> AnchorScorer:
    """A scorer of ``session``'s compactions, reading it into ``cache`` (``anchor_cache``'s)
    when one is given."""
    counter = counter_by_name(session.token_counter)
    tokens = message_counts(session, counter, recorded=True)
    return AnchorScorer(anchor_cache(session) if cache is None else cache, tokens)


def score_collection(
    session: Session, after: Sequence[Message], cache: AnchorCache | None = None
) -> AnchorRetention:
    """What a collection that left ``after`` of ``session``'s history kept in view of the
    anchors of that history (a run: ``score_collection(session, run_gc(...).session.history)``).
    With ``cache`` (``anchor_cache(session)``), what an earlier score read is not read again."""
    return session_scorer(session, cache).score_change(session.history, after)


def score_collections_at_equal_size(
    session: Session, afters: Mapping[str, Sequence[Message]], cache: AnchorCache | None = None
) -> dict[str, AnchorRetention]:
    """Collections of ``session``'s history (by name) scored at the size of the smallest
    context any of them left (``scores_at_equal_size``)."""
    return scores_at_equal_size(session_scorer(session, cache), session.history, afters)


def _unreadable(messages: Sequence[Message]) -> bool:
    return any(part.type is PartType.OPAQUE for m in messages for part in m.parts)


def score_observed_compactions(
    session: Session, cache: AnchorCache | None = None
) -> dict[str, AnchorRetention]:
    """Every compaction the agent performed, by id, scored as a policy's would be: the
    context before it against the context that followed it (what it kept, and its summary).
    With ``cache`` (``anchor_cache(session)``), what an earlier score read is not read again.

    A compaction whose summary the file holds only as an opaque or encrypted item (a Codex
    or OpenAI remote compaction) is unscorable: nobody can read what it kept.
    """
    scorer = session_scorer(session, cache)
    pool = {m.message_id: m for m in session_corpus(session)}
    contexts = [c.context_before for c in session.compactions]
    contexts.append([m.message_id for m in session.history])
    scores: dict[str, AnchorRetention] = {}
    for number, compaction in enumerate(session.compactions):
        following = [pool[i] for i in contexts[number + 1] if i in pool]
        scores[compaction.compaction_id] = _observed(scorer, compaction, pool, following)
    return scores


def _observed(
    scorer: AnchorScorer,
    compaction: ObservedCompaction,
    pool: Mapping[str, Message],
    following: Sequence[Message],
) -> AnchorRetention:
    """The context just after a compaction is what it kept of the one before, then what it
    put in at the start of the next context: up to its summary, or nothing without one."""
    replaced = {m.message_id for m in compaction.replaced}
    before = [pool[i] for i in compaction.context_before if i in pool]
    kept = [m for m in before if m.message_id not in replaced]
    inserted: list[Message] = []
    if compaction.summary_message_id is not None:
        ids = [m.message_id for m in following]
        if compaction.summary_message_id in ids:
            inserted = list(following[: ids.index(compaction.summary_message_id) + 1])
    earlier = {m.message_id for m in before}
    inserted = [m for m in inserted if m.message_id not in earlier]
    if compaction.summary is None and _unreadable(inserted or following[:3]):
        return AnchorRetention(
            removed_messages=len(compaction.replaced),
            unscorable="the agent's summary is stored encrypted or opaque, so what it kept "
            "cannot be read",
        )
    after = [*inserted, *kept]
    return scorer.score(before, after, compaction.replaced, inserted)
