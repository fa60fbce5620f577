"""What a reachability collection would see and do, with nothing changed: the dry run and
the reference graph around a turn (``dry_run``), and pruning chosen segments (``prune``).

Callers import the public names from ``gcengine``.
"""
