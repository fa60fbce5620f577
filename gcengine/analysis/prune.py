"""Pruning: a reachability run an agent or a person asks for, of a policy or of chosen segments.

``pruning_config`` turns any policy into the run that prunes under it: read as a reachability
policy (its roots, weights and pins), with the action asked for (``stash``, ``delete`` or
``auto``) and, when segments are named, exactly those to take. ``run_gc`` carries it out;
``check_pruning`` refuses, before a run is stored or queued, what that run would refuse.
"""

from __future__ import annotations

from collections.abc import Sequence

from gcengine.analysis.dry_run import collection_of
from gcengine.config import GCConfig, dump_gc_config, load_gc_config
from gcengine.running.run import plugin_options
from gcengine.session import Session
from gcengine.strategies.reachability import (
    SEGMENT_IDS,
    ReachabilityStrategy,
    StashAction,
    check_named,
    named_segments,
)


def pruning_config(
    config: GCConfig, action: StashAction | None = None, segment_ids: Sequence[str] = ()
) -> GCConfig:
    """``config`` as a reachability policy with ``action`` (its own when None) that, when
    ``segment_ids`` are given, takes exactly those segments whatever the usage."""
    data = dump_gc_config(config)
    data["type"] = ReachabilityStrategy.name
    if action is not None:
        data["action"] = action
    options = {key: value for key, value in config.plugin_config.items() if key != SEGMENT_IDS}
    if segment_ids:
        options[SEGMENT_IDS] = list(dict.fromkeys(segment_ids))
    data["plugin_config"] = options
    return load_gc_config(data, env={})


def check_pruning(session: Session, config: GCConfig) -> None:
    """Raise ``PruneRefused`` for segments ``config`` names that a run of it on ``session``
    would refuse (no such segment; pinned, locked, in the latest turns, or a root), saying
    why for each; nothing when it names none."""
    named = named_segments(config.plugin_config)
    if not named:
        return
    strategy = ReachabilityStrategy()
    strategy.initialize(plugin_options(config))
    check_named(strategy.plan(collection_of(session, config, strategy)), named)
