"""A realistic coding-agent session, generated: the demo session that teaches.

``gcengine.synthetic`` makes word salad shaped like JAATO's benchmark, which is right for
timing a collector and useless for learning what one does. This module tells a story instead:
an agent asked to fix the failing invoice tests of a Python billing service. It runs the tests,
reads files by line range, greps, edits (one edit in a while misses), asks clarifying questions
and gets answers, fixes one failure after another as new ones are reported by CI and review,
and keeps coming back to earlier files and error codes. Every source of the budget holds
something a policy can act on:

* system: the base, client and framework instructions and a pinned reference (locked);
* plugin: tool schemas, core (locked), discovered (ephemeral), and a formatter (preservable);
* enrichment: retrieved memories and documentation (ephemeral);
* conversation: the original request (locked), clarification questions and answers
  (preservable, recorded as JAATO's ``clarification_q`` / ``clarification_a``), tool work
  (ephemeral), and the closing answers of tool loops (preservable);
* thinking: the reasoning tokens of each turn.

The result is a JAATO 2.1 session file as the engine writes one (``dump_session``): JAATO's
fields, with the per-message ``budget_state`` JAATO records, and what 2.1 has no field for
(system instructions, the plugin and enrichment budget) under ``metadata["gcengine"]``.
Content is templated with seeded choices: the same shape gives the same file, byte for byte.
File sizes are fitted as the session goes so that it ends near ``fill_percent`` of the
model's window, where every policy has something to do.
"""

from gcengine.demo.shape import DemoShape
from gcengine.demo.story import generate_demo_session

__all__ = ["DemoShape", "generate_demo_session"]
