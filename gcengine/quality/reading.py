"""What scoring reads of a session's messages, read once: each message's view (what the model
reads of it) and its anchors, the session's anchor context and its vocabulary.

Reading is most of what scoring costs: a 10,000-turn session's anchors take seconds to find,
where counting a context from them takes a fraction of one. An ``AnchorCache`` keeps them for
one session (its corpus), keyed by message id and content, so every score of that session
(a run, the runs and replays after it, a preview) reads each message once: the caller keeps
it, and passes it to ``AnchorScorer``, ``session_scorer``, ``score_collection`` or
``simulate``. Nothing here is kept between calls unless a caller keeps the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cached_property

from gcengine.messages import Message, MessageKind
from gcengine.quality.anchors import (
    literal_words,
    message_anchors,
    normalised,
    normalised_sentences,
    sentence_terms,
    visible_pieces,
    vocabulary_words,
)
from gcengine.quality.counting import ContextAnchors
from gcengine.quality.session_anchors import AnchorContext, anchor_context
from gcengine.quality.tally import Held, held


class View:
    """What the model reads of one message: its pieces normalised, joined by line breaks (a
    literal anchor never spans a sentence, so it is looked for in the whole text), and every
    word in it; each sentence's words are read only when a terms anchor could match there.
    Each is read from the message when first asked for: a score reads only the views of what
    is in view after a compaction (a run of a long session keeps a few hundred of its tens of
    thousands of messages), and the session's context and vocabulary, which read every
    message's text, are read back with its stored anchors.

    A view is the same as another only if it is that view (a cache makes one a message).
    """

    __slots__ = ("_literal_words", "_message", "_pieces", "_sentences", "_text", "_words")

    def __init__(self, message: Message) -> None:
        self._message = message
        self._pieces: tuple[str, ...] | None = None
        self._text: str | None = None
        self._literal_words: frozenset[str] | None = None
        self._words: frozenset[str] | None = None
        self._sentences: tuple[frozenset[str], ...] | None = None

    @property
    def pieces(self) -> tuple[str, ...]:
        if self._pieces is None:
            self._pieces = tuple(normalised(piece) for piece in visible_pieces(self._message))
        return self._pieces

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self.pieces)
        return self._text

    @property
    def literal_words(self) -> frozenset[str]:
        if self._literal_words is None:
            self._literal_words = literal_words(self.text)
        return self._literal_words

    @property
    def words(self) -> frozenset[str]:
        if self._words is None:
            # A text's terms are its literal words with apostrophes dropped: the same without
            # any.
            text = self.text
            self._words = self.literal_words if "'" not in text else sentence_terms(text)
        return self._words

    def sentences(self) -> tuple[frozenset[str], ...]:
        if self._sentences is None:
            self._sentences = tuple(
                sentence_terms(sentence)
                for piece in self.pieces
                for sentence in normalised_sentences(piece)
            )
        return self._sentences


def not_carried(message: Message, other: Message | None) -> bool:
    """Whether ``message`` is not carried into a context where ``other`` has its id, when
    ``other`` is not that very message (which callers check first, without a call: a replay
    asks this of hundreds of messages at each collection, and most are). Only what the model
    reads counts: a collection marking a kept message in its metadata (a closing answer whose
    tool work went) leaves it in view."""
    return (
        other is None
        or other.parts != message.parts
        or other.role is not message.role
        or other.kind is not message.kind
    )


class AnchorCache:
    """What scoring has read of one session's messages: ``corpus`` is everything the session
    said (what its anchor context and an invented anchor's words are read from). A message is
    read again only when its content changed (same id, other parts, role or kind)."""

    # The last context whose anchors were counted at once (``counted``).
    _counted: ContextAnchors | None = None

    def __init__(self, corpus: Iterable[Message]) -> None:
        self._corpus = [m for m in corpus if m.kind is MessageKind.CHAT]
        self._views: dict[str, tuple[Message, View]] = {}
        self._held: dict[str, tuple[Message, Held]] = {}
        self._vocabulary_read: Callable[[], frozenset[str]] | None = None
        self._count_read: Callable[[], ContextAnchors] | None = None
        self._held_read: Callable[[], Sequence[Held]] | None = None

    @property
    def corpus_messages(self) -> int:
        """How many messages it may come to remember: what bounds its memory."""
        return len(self._corpus)

    @cached_property
    def context(self) -> AnchorContext:
        """What the session's anchors are read with: its root, the issue ids it names."""
        return anchor_context(self._corpus, (self.view_of(m).text for m in self._corpus))

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        """Every word the session said, and the names said only inside a dotted one
        (SpotterWeb.Router, this.updateSession)."""
        if self._vocabulary_read is not None:
            return self._vocabulary_read()
        words: set[str] = set()
        for message in self._corpus:
            said = vocabulary_words(self.view_of(message).text)
            words.update(said)
            words.update(part for word in said if "." in word for part in word.split("."))
        return frozenset(words)

    @classmethod
    def having_read(
        cls,
        corpus: Iterable[Message],
        context: AnchorContext,
        vocabulary: Callable[[], frozenset[str]],
        held_each: Callable[[], Sequence[Held]],
        counted: Callable[[], ContextAnchors] | None = None,
    ) -> AnchorCache:
        """A cache of ``corpus`` that has read it already: its ``context``, ``vocabulary``
        (what the callable gives, called when first needed: only a summary's anchors are
        checked against it) and the anchors of each of its ``messages`` (what ``held_each``
        gives, in order, called when one is first asked for: a run's score asks for none),
        as ``read_all`` gave them for the same corpus (kept between processes, say),
        and, when given, the count of those messages (``counted``'s, called when first
        needed: a replay never counts the whole corpus at once).
        It reads again only what ``corpus`` alone does not hold."""
        cache = cls(corpus)
        cache.context = context
        cache._vocabulary_read = vocabulary
        cache._count_read = counted
        cache._held_read = held_each
        return cache

    @property
    def messages(self) -> list[Message]:
        """The corpus's messages whose anchors count (its chat), in order."""
        return self._corpus

    def read_all(self) -> list[Held]:
        """Every corpus message's anchors, in order (with the context and vocabulary, what
        ``having_read`` takes to read none of them again)."""
        return [self.held_of(message) for message in self._corpus]

    def view_of(self, message: Message) -> View:
        known = self._views.get(message.message_id)
        if known is None or (known[0] is not message and not_carried(message, known[0])):
            known = self._views[message.message_id] = (message, View(message))
        return known[1]

    def held_of(self, message: Message) -> Held:
        """The anchors of ``message``."""
        if self._held_read is not None:  # all at once, then no more (a score in another
            # thread meanwhile makes them again, or reads its message afresh: the same)
            read = zip(self._corpus, self._held_read(), strict=True)
            self._held = {m.message_id: (m, h) for m, h in read}
            self._held_read = None
        known = self._held.get(message.message_id)
        if known is None or (known[0] is not message and not_carried(message, known[0])):
            known = self._held[message.message_id] = (
                message,
                held(message_anchors(message, self.context)),
            )
        return known[1]

    def counted(self, context: Sequence[Message]) -> ContextAnchors:
        """The anchors of ``context`` counted at once, kept for the next score of the same
        context (the same messages): every run of a session is scored against its history."""
        if self._count_read is not None:
            self._counted, self._count_read = self._count_read(), None
        counted = self._counted
        if counted is None or not counted.counts(context):
            counted = self._counted = ContextAnchors(context, self.held_of)
        return counted
