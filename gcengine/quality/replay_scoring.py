"""Scoring a replay's truncations from what each one changed, not from the window.

A continuous replay collects thousands of times, and most of its collections take a run of
the oldest turns out of a window that is the one before and a turn more (``score_taken``).
``AnchorScorer`` keeps the window's anchors from one score to the next (``Tally``), but still
looks for each anchor only removed messages held in what stays in view: the words of every
message that comes in or goes counted, a sentence anchor tried against every kept message's
sentences, a longer literal one searched for in the window's whole text.

A ``ReplayScorer`` reads each message of the session once for which of the session's anchors
its text shows (``_Shows``: an anchor is found in a context's text exactly when it is found in
one message's text, as no anchor looked for message by message spans a line break), and keeps
per anchor how many messages of the window show it, as turns come in and collections take
messages out. A collection's score then costs the anchors of the messages it took: one held
by no kept message is still in view exactly when some kept message shows it. Every figure is
``AnchorScorer.score_taken``'s; anything else it is asked (a window with a message the session
does not hold, a collection that did more than take a run) is scored as ``AnchorScorer`` does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import cast

from gcengine._fast import construct
from gcengine.messages import Message
from gcengine.quality.anchor_text import TERM, literal_found, literal_words
from gcengine.quality.anchors import Anchor, MatchRule
from gcengine.quality.reading import AnchorCache, View
from gcengine.quality.retention import (
    AnchorRetention,
    AnchorScorer,
    class_retentions,
    keys_still_held,
    recency_retention,
)
from gcengine.quality.tally import AnchorKey, Held, Tally

# What a terms anchor is looked for by: its key, its terms, how many one sentence must hold.
_TermsKey = tuple[str, frozenset[str], int]


# A terms anchor is filed under its rarest terms when the messages holding them are at most
# this many; one made of common words only is tried on the window's messages when lost.
FILED_TERMS_MESSAGES = 64


@dataclass(frozen=True, slots=True)
class _Keys:
    """The anchors of a session, arranged for finding which of them one message's text shows.

    ``one_word``: literal keys that are one word (most), shown where that word is. ``by_word``:
    the other literal keys under their rarest word, which a text showing them holds.
    ``terms_by``: terms anchors under as many of their rarest terms as a sentence matching one
    must hold one of. ``whole_text``: literal keys a single message cannot be said to show (one
    with a line break, or with no word to find it by), and ``walked``: terms anchors whose
    every term most messages hold; both looked for in what is in view when lost."""

    one_word: frozenset[str]
    by_word: dict[str, list[tuple[str, frozenset[str]]]]
    words: frozenset[str]
    terms_by: dict[str, list[_TermsKey]]
    terms: frozenset[str]
    whole_text: frozenset[str]
    walked: dict[str, _TermsKey]


def _keys(helds: Iterable[Held], views: Iterable[View]) -> _Keys:
    """The keys of every anchor ``helds`` hold, arranged as ``_Keys`` by how many of
    ``views`` (the session's messages) hold each word."""
    one_word: set[str] = set()
    longer: dict[str, frozenset[str]] = {}
    terms: dict[str, _TermsKey] = {}
    for entry in helds:
        for anchor in entry.anchors:
            key = anchor.key
            if anchor.rule is not MatchRule.LITERAL:
                if key not in terms:
                    terms[key] = (key, anchor.terms, anchor.needed())
            elif TERM.fullmatch(key):
                one_word.add(key)
            elif key not in longer:
                longer[key] = literal_words(key)
    # Only the words anchors are filed under are counted: the rest are most of the session's
    # hundreds of thousands.
    filed_by = frozenset().union(*longer.values(), *(sought[1] for sought in terms.values()))
    holding: Counter[str] = Counter()
    for view in views:
        holding.update(view.words & filed_by)

    def rarest(words: Iterable[str]) -> list[str]:
        return sorted(words, key=lambda word: (holding[word], word))

    by_word: dict[str, list[tuple[str, frozenset[str]]]] = {}
    whole_text: set[str] = set()
    for key, words in longer.items():
        if "\n" in key or not words:
            whole_text.add(key)
        else:
            by_word.setdefault(rarest(words)[0], []).append((key, words))
    terms_by: dict[str, list[_TermsKey]] = {}
    walked: dict[str, _TermsKey] = {}
    for key, sought in terms.items():
        # A sentence holding ``needed`` of the terms lacks at most the others: it holds one of
        # any ``len - needed + 1`` of them.
        _, key_terms, needed = sought
        filed = rarest(key_terms)[: len(key_terms) - needed + 1]
        if sum(holding[term] for term in filed) > FILED_TERMS_MESSAGES:
            walked[key] = sought
            continue
        for term in filed:
            terms_by.setdefault(term, []).append(sought)
    return _Keys(
        frozenset(one_word),
        by_word,
        frozenset(by_word),
        terms_by,
        frozenset(terms_by),
        frozenset(whole_text),
        walked,
    )


@dataclass(frozen=True, slots=True)
class _Shows:
    """The literal keys and the terms keys of the session's anchors one message's text
    (``view``) shows: ``AnchorScorer``'s test of an anchor in view, on that text alone."""

    view: View
    literal: tuple[str, ...]
    terms: tuple[str, ...]


def _shows(view: View, keys: _Keys) -> _Shows:
    words = view.literal_words
    literal = list(words & keys.one_word)
    for word in words & keys.words:
        for key, key_words in keys.by_word[word]:
            if key_words <= words and literal_found(view.text, key):
                literal.append(key)
    shown: list[str] = []
    hits = view.words & keys.terms
    if hits:
        tried: set[str] = set()
        for term in hits:
            for key, key_terms, needed in keys.terms_by[term]:
                if key not in tried:
                    tried.add(key)
                    if _shown_in(view, key_terms, needed):
                        shown.append(key)
    return _Shows(view, tuple(literal), tuple(shown))


def _shown_in(view: View, terms: frozenset[str], needed: int) -> bool:
    """Whether a sentence of ``view`` holds ``needed`` of a terms anchor's ``terms``."""
    if len(terms & view.words) < needed:
        return False
    return any(len(terms & sentence) >= needed for sentence in view.sentences())


class ReplayScorer(AnchorScorer):
    """An ``AnchorScorer`` for replays of one session (``messages``: its history, what a
    replay's window is made of), scoring a collection that took a run of the window from the
    anchors of that run (see the module's docstring). Shared by several replays of the
    session, it reads each message once for all of them."""

    def __init__(
        self,
        corpus: Iterable[Message] | AnchorCache,
        tokens: Callable[[Message], int],
        messages: Sequence[Message],
    ) -> None:
        super().__init__(corpus, tokens)
        self._messages = messages
        self._known: dict[str, Message] | None = None
        self._keys: _Keys | None = None
        self._read: dict[View, _Shows] = {}
        # The window after the last collection scored: its tally (each message's view being
        # what it shows), the ids it holds, and how many of its messages show each key, as
        # how many came in and went (counted in C by ``Counter.update``).
        self._window: Tally[_Shows] | None = None
        self._ids: set[str] = set()
        self._came: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
        self._went: tuple[Counter[str], Counter[str]] = (Counter(), Counter())

    def score_taken(
        self, before: Sequence[Message], after: Sequence[Message], first: int, end: int
    ) -> AnchorRetention:
        with self._lock:
            retention = self._counted(before, first, end)
        if retention is None:
            return super().score_taken(before, after, first, end)
        return retention

    def _counted(self, before: Sequence[Message], first: int, end: int) -> AnchorRetention | None:
        """``score_taken``'s figures from the window kept, brought to ``before``; None when
        ``before`` holds a message the session does not (or one twice)."""
        window = self._window_before(before)
        if window is None or not 0 <= first <= end <= len(before):
            self._window = None
            return None
        keep = bytearray(b"\x01") * len(before)
        keep[first:end] = bytes(end - first)
        gone_at = range(first, end)
        # As ``AnchorScorer.score``: the anchors no kept message holds, by their first mention,
        # each with its last mention and where that is.
        unheld: dict[AnchorKey, tuple[Anchor, int]] = {}
        for position in gone_at:
            entry = window.held[position]
            unheld.update(zip(entry.keys, zip(entry.anchors, repeat(position)), strict=True))
        # ``keys_still_held`` reads only the window's anchors, whatever its views are.
        for key in keys_still_held(cast("Tally[View]", window), unheld, gone_at, keep):
            del unheld[key]
        went_literal, went_terms = self._went
        for shows in window.views[first:end]:
            went_literal.update(shows.literal)
            went_terms.update(shows.terms)
        in_view = self._in_view(window, keep)
        lost = [(anchor, at) for anchor, at in unheld.values() if not in_view(anchor)]
        anchors = dict(window.per_class)
        last_weights = window.last_weights()
        tokens_before = window.tokens
        removed_tokens = sum(window.costs[first:end])
        messages = window.messages
        self._ids.difference_update(m.message_id for m in messages[first:end])
        window.take(first, end)
        return construct(
            AnchorRetention,
            classes=class_retentions(anchors, lost),
            invented=self._invented(()),
            recency=recency_retention(last_weights, lost),
            removed_messages=end - first,
            removed_tokens=removed_tokens,
            replacement_tokens=0,
            tokens_before=tokens_before,
            tokens_after=window.tokens,
            size=None,
            compactions=1,
            unscorable=None,
        )

    def _window_before(self, before: Sequence[Message]) -> Tally[_Shows] | None:
        """The window kept, with the messages ``before`` holds after it (a new window when
        ``before`` does not begin with it)."""
        window = self._window
        if window is None or not window.extends_to(before):
            window = self._window = Tally()
            self._ids = set()
            for count in (*self._came, *self._went):
                count.clear()
        known, ids = self._session_messages(), self._ids
        fresh = before[len(window.messages) :]
        for message in fresh:
            if known.get(message.message_id) is not message or message.message_id in ids:
                return None
            ids.add(message.message_id)
        done = len(window.messages)
        window.extend(fresh, self._held_of, self._tokens, self._shows_of)
        came_literal, came_terms = self._came
        for shows in window.views[done:]:
            came_literal.update(shows.literal)
            came_terms.update(shows.terms)
        return window

    def _in_view(self, window: Tally[_Shows], keep: bytearray) -> Callable[[Anchor], bool]:
        """Whether an anchor is in view once the messages ``keep`` leaves out went (the counts
        updated already): some kept message shows it."""
        came_literal, came_terms = self._came
        went_literal, went_terms = self._went
        keys = self._session_keys()
        whole_text, walked = keys.whole_text, keys.walked

        def views() -> Iterator[View]:
            return (shows.view for shows in compress(window.views, keep))

        def in_view(anchor: Anchor) -> bool:
            key = anchor.key
            if anchor.rule is not MatchRule.LITERAL:
                if key not in walked:
                    return came_terms.get(key, 0) > went_terms.get(key, 0)
                _, terms, needed = walked[key]
                return any(_shown_in(view, terms, needed) for view in views())
            if key not in whole_text:
                return came_literal.get(key, 0) > went_literal.get(key, 0)
            return literal_found("\n".join(view.text for view in views()), key)

        return in_view

    def _session_messages(self) -> dict[str, Message]:
        """The session's messages by id (none when two share one: ids then do not say which
        message went)."""
        if self._known is None:
            known = {m.message_id: m for m in self._messages}
            self._known = known if len(known) == len(self._messages) else {}
        return self._known

    def _session_keys(self) -> _Keys:
        if self._keys is None:
            messages = self._messages
            self._keys = _keys(map(self._held_of, messages), map(self._view_of, messages))
        return self._keys

    def _shows_of(self, message: Message) -> _Shows:
        view = self._view_of(message)
        shows = self._read.get(view)
        if shows is None:
            shows = self._read[view] = _shows(view, self._session_keys())
        return shows
