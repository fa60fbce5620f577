"""Reachability collection: the mark-and-sweep strategy with a stash (design document 001).

Every removable unit of a session is a *segment*; later segments refer to earlier ones
(explicitly, or by naming a file, identifier or error code an earlier one holds); roots (the
current task, the latest turns, pins, locked content, the files being worked on) mark what
they reach, and the sweep takes unreachable segments lowest score first, then reachable ones
only if it must. What it takes goes to a stash it can be restored from.

This package is the model (``graph``, ``explain``, ``kinds``, ``anchors``); the strategy is
``gcengine.strategies.reachability``, the stash ``gcengine.gc.stash`` (a result carries it),
and the dry run and pruning ``gcengine.analysis``. Callers import the public names from
``gcengine``.
"""
