"""What a strategy is, in one declaration: ``StrategySpec``.

Each strategy's module declares its ``SPEC`` beside its class, and everything that lists,
checks, edits, explains or exports strategies reads the specs (``gcengine.strategies`` keeps
them in the order people read them), so nothing about a strategy is written twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from gcengine.gc.strategy import Strategy
from gcengine.strategies.keys import KeySpec, declared_keys

Insert = Literal["summary", "notice"]


@dataclass(frozen=True)
class StrategySpec:
    """Everything about one strategy that is not how it decides.

    ``plugin`` is its class, which names it (``name``, JAATO's plugin name ``gc_budget``;
    ``short_name`` is what JAATO's ``type`` says, ``budget``) and says what its notices say
    (``template``, ``placeholders`` with their meanings, ``noop_notice``). ``reads`` are the
    ``gc.json`` keys its collections and replays honour, the common ones and its own
    (``plugin_config.<option>`` for an option inside ``plugin_config``). ``jaato_plugin`` is
    the name JAATO loads it by (``jaato.gc_plugins``, ``gcengine.running.jaato_plugins``), also
    accepted as ``type`` in ``gc.json``: its own, never one of JAATO's, so installing the engine
    beside JAATO never changes what JAATO's names load. ``keys`` is the model
    declaring its own keys (``GCConfig`` is composed of such models) and ``options`` its own
    ``plugin_config`` options.

    ``inserts``: what a collection may write into the conversation; ``summary_on_request``:
    a summary only when its policy names a summarizer (``plugin_config.summarizer``), none by
    default. ``conversation_only``:
    it takes only from the conversation, so what lies outside it stays. ``stashes``: it puts
    what it takes in a stash and explains each removal (``verdict``). ``keeps``: what it
    always keeps beyond the rules every strategy follows, in words (empty when nothing).
    ``starter_policies``: ``gc.json`` files, by name, that a new installation starts with.
    """

    plugin: type[Strategy]
    label: str
    description: str
    reads: tuple[str, ...]
    jaato_plugin: str
    keys: type[BaseModel] | None = None
    options: Mapping[str, KeySpec] = field(default_factory=dict)
    inserts: tuple[Insert, ...] = ("notice",)
    summary_on_request: bool = False
    conversation_only: bool = True
    stashes: bool = False
    keeps: str = ""
    starter_policies: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.plugin.name

    @property
    def short_name(self) -> str:
        return self.name.removeprefix("gc_")

    @property
    def template(self) -> str:
        """Its notice's wording when a policy gives none."""
        return self.plugin.notices.template

    @property
    def placeholders(self) -> Mapping[str, str]:
        """The names a notification template may use, each with what it means here."""
        return self.plugin.notices.placeholders

    @property
    def noop_notice(self) -> bool:
        """Whether a collection that was needed but could take nothing says so."""
        return self.plugin.notices.noop

    @property
    def summarizes(self) -> bool:
        return "summary" in self.inserts

    @property
    def own_keys(self) -> tuple[str, ...]:
        """The ``gc.json`` keys it declares, in their order."""
        return tuple(name for name, _, _ in declared_keys(self.keys)) if self.keys else ()
