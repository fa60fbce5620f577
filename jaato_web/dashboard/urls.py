"""Routes for the dashboard pages, namespaced so templates say ``dashboard:<name>``."""

from django.urls import URLPattern, URLResolver, include, path

from jaato_web.dashboard.views import replays, runs, sessions, trees, uploads

app_name = "dashboard"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", sessions.home, name="home"),
    # The policy editor's pages keep their own route list (same namespace).
    path("policies/", include("jaato_web.dashboard.policy_urls")),
    path("sessions/", sessions.session_list, name="session_list"),
    path("sessions/upload/", uploads.session_upload, name="session_upload"),
    path("sessions/<int:session_id>/", sessions.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/tree/", trees.session_tree, name="session_tree"),
    path("sessions/<int:session_id>/runs/", sessions.run_create, name="run_create"),
    path("sessions/<int:session_id>/replays/", sessions.replay_create, name="replay_create"),
    path("uploads/<int:job_id>/", uploads.ingest_job, name="ingest_job"),
    path("replays/<int:replay_id>/", replays.replay_detail, name="replay_detail"),
    path("runs/<int:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<int:run_id>/status/", runs.run_status, name="run_status"),
    path("runs/<int:run_id>/tree/", trees.run_tree, name="run_tree"),
    path("runs/<int:run_id>/removals/<int:seq>/", runs.run_removal, name="run_removal"),
    path(
        "runs/<int:run_id>/export/session.gc.json",
        runs.run_export_session,
        name="run_export_session",
    ),
    path(
        "runs/<int:run_id>/export/ledger.json",
        runs.run_export_ledger_json,
        name="run_export_ledger_json",
    ),
    path(
        "runs/<int:run_id>/export/ledger.csv",
        runs.run_export_ledger_csv,
        name="run_export_ledger_csv",
    ),
]
