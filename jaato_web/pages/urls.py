"""Every page's route, in one list; names are snake_case and say what the page shows.

Review routes sit beside the objects they review (``runs/<run_id>/comments/``), so a URL says
what a comment or verdict is about. Policy versions are named by their policy and number.
"""

from django.urls import URLPattern, path

from jaato_web.pages import (
    archive,
    background,
    planner,
    policies,
    quality,
    replays,
    review,
    runs,
    sessions,
    stash,
    teams,
    trees,
    uploads,
)

urlpatterns: list[URLPattern] = [
    path("", sessions.home, name="home"),
    # Sessions, uploads, replays
    path("sessions/", sessions.session_list, name="session_list"),
    path("sessions/upload/", uploads.session_upload, name="session_upload"),
    path("sessions/<int:session_id>/", sessions.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/tree/", trees.session_tree, name="session_tree"),
    path("sessions/<int:session_id>/runs/", sessions.run_create, name="run_create"),
    path("sessions/<int:session_id>/replays/", sessions.replay_create, name="replay_create"),
    path("sessions/<int:session_id>/pins/", sessions.session_pin, name="session_pin"),
    path(
        "sessions/<int:session_id>/pins/policy/",
        sessions.session_pins_to_policy,
        name="session_pins_to_policy",
    ),
    path("sessions/<int:session_id>/archive/", archive.session_archive, name="session_archive"),
    path("sessions/<int:session_id>/delete/", archive.session_delete, name="session_delete"),
    path("sessions/<int:session_id>/plan/", planner.session_plan, name="session_plan"),
    path(
        "sessions/<int:session_id>/plan/steps/",
        planner.session_plan_steps,
        name="session_plan_steps",
    ),
    path(
        "sessions/<int:session_id>/references/",
        stash.session_references,
        name="session_references",
    ),
    path("uploads/<int:job_id>/", uploads.ingest_job, name="ingest_job"),
    path("uploads/<int:job_id>/outcome/", uploads.ingest_job_outcome, name="ingest_job_outcome"),
    path("uploads/<int:job_id>/cancel/", background.ingest_job_cancel, name="ingest_job_cancel"),
    path("replays/<int:replay_id>/", replays.replay_detail, name="replay_detail"),
    path("replays/<int:replay_id>/retention/", replays.replay_retention, name="replay_retention"),
    path("replays/<int:replay_id>/cancel/", background.replay_cancel, name="replay_cancel"),
    # Runs
    path("runs/<int:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<int:run_id>/status/", runs.run_status, name="run_status"),
    path("runs/<int:run_id>/retention/", runs.run_retention, name="run_retention"),
    path("runs/<int:run_id>/cancel/", background.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/tree/", trees.run_tree, name="run_tree"),
    path("runs/<int:run_id>/removals/<int:seq>/", runs.run_removal, name="run_removal"),
    path("runs/<int:run_id>/archive/", archive.run_archive, name="run_archive"),
    path("runs/<int:run_id>/delete/", archive.run_delete, name="run_delete"),
    path("runs/<int:run_id>/stash/", stash.run_stash, name="run_stash"),
    path("runs/<int:run_id>/kept/", stash.run_kept, name="run_kept"),
    path(
        "runs/<int:run_id>/export/session.gc.json",
        runs.run_export_session,
        name="run_export_session",
    ),
    path(
        "runs/<int:run_id>/export/session.source",
        runs.run_export_source,
        name="run_export_source",
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
    # Policies
    path("policies/", policies.policy_list, name="policy_list"),
    path("policies/new/", policies.policy_new, name="policy_new"),
    path("policies/import/", policies.policy_import, name="policy_import"),
    path("policies/preview/", policies.policy_preview, name="policy_preview"),
    path("policies/preview/chart/", policies.policy_preview_chart, name="policy_preview_chart"),
    path("policies/chart/", policies.policy_version_chart, name="policy_version_chart"),
    path("policies/compare/", policies.policy_compare, name="policy_compare"),
    path("policies/rankings/<int:ranking_id>/", policies.policy_ranking, name="policy_ranking"),
    path("policies/runs/", policies.policy_runs, name="policy_runs"),
    path("policies/<int:policy_id>/edit/", policies.policy_edit, name="policy_edit"),
    path("policies/<int:policy_id>/default/", policies.policy_default, name="policy_default"),
    path("policies/<int:policy_id>/apply/", policies.policy_apply, name="policy_apply"),
    path("policies/<int:policy_id>/archive/", archive.policy_archive, name="policy_archive"),
    path("policies/<int:policy_id>/delete/", archive.policy_delete, name="policy_delete"),
    path("policies/<int:policy_id>/versions/", policies.policy_versions, name="policy_versions"),
    path(
        "policies/<int:policy_id>/versions/compare/",
        policies.policy_versions_compare,
        name="policy_versions_compare",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/restore/",
        policies.policy_restore,
        name="policy_restore",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/gc.json",
        policies.policy_export,
        name="policy_export",
    ),
    # Planner configs (their versions, review, archive and delete are the policies' pages)
    path("planner/", planner.planner_config_list, name="planner_config_list"),
    path("planner/new/", planner.planner_config_new, name="planner_config_new"),
    path("planner/<int:config_id>/edit/", planner.planner_config_edit, name="planner_config_edit"),
    path(
        "planner/<int:config_id>/versions/<int:number>/planner.json",
        planner.planner_config_export,
        name="planner_config_export",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/export/",
        quality.policy_version_export,
        name="policy_version_export",
    ),
    # Review
    path("review/", review.review_queue, name="review_queue"),
    path("runs/<int:run_id>/comments/", review.run_comment, name="run_comment"),
    path("runs/<int:run_id>/verdicts/", review.run_verdict, name="run_verdict"),
    path(
        "runs/<int:run_id>/removals/<int:seq>/comments/",
        review.removal_comment,
        name="removal_comment",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/review/",
        review.version_review,
        name="version_review",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/comments/",
        review.version_comment,
        name="version_comment",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/verdicts/",
        review.version_verdict,
        name="version_verdict",
    ),
    # Accounts, projects, members, tokens, audit log
    path("accounts/sign-in/", teams.sign_in, name="sign_in"),
    path("accounts/sign-out/", teams.sign_out, name="sign_out"),
    path("accounts/tokens/", teams.token_list, name="token_list"),
    path("accounts/tokens/<int:token_id>/revoke/", teams.token_revoke, name="token_revoke"),
    path("projects/", teams.project_list, name="project_list"),
    path("projects/current/", teams.project_switch, name="project_switch"),
    path("projects/<int:project_id>/members/", teams.member_list, name="member_list"),
    path(
        "projects/<int:project_id>/members/<int:membership_id>/",
        teams.member_change,
        name="member_change",
    ),
    path("projects/<int:project_id>/quality/", quality.project_quality, name="project_quality"),
    path(
        "projects/<int:project_id>/quality/save/",
        quality.project_quality_save,
        name="project_quality_save",
    ),
    path(
        "projects/<int:project_id>/quality/provider/",
        quality.project_provider_save,
        name="project_provider_save",
    ),
    path("audit/", teams.audit_log, name="audit_log"),
]
