"""The domain of the dashboard: projects, uploaded sessions, policies, GC runs, replays and
the audit log, with the services that change them and the selectors that read them."""
