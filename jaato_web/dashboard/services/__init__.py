"""Write-side use cases: the only modules that both call the engine and write the database.

Pages, the API and management commands call these functions and nothing else to change state,
so an upload or a run behaves the same whichever door it came through. Work a worker carries
out (reading a large upload, a run, a replay, and the run of the default policy on an upload)
is started through ``dashboard.background`` instead, which records it here and hands it to a
worker when the transaction commits.

One module per family, named as the pages and the API name it: ``uploads``, ``runs``,
``replays``, ``policies`` (planner configs and pins too), ``archive`` (archive and delete),
``stash`` (sessions derived from a run) and ``quality`` (a project's retention gates and price
table). What several families need is in the shared modules:
``common`` (the project, a gc.json as the engine reads it, the pins a session adds),
``stored_sessions`` (a session written as rows and read back) and ``work`` (what a use case
carried out in the background reports through). A family never imports another family.
"""

from jaato_web.dashboard.services.archive import (
    DeletionPlan,
    archive_set,
    deletion_plan,
    item_delete,
    item_described,
)
from jaato_web.dashboard.services.common import (
    DEFAULT_PROJECT_SLUG,
    PolicyKindError,
    UploadTooLarge,
    compaction_checked,
    config_validated,
    config_with_session_pins,
    gc_policy_checked,
    jaato_config_validated,
    project_default,
    project_prices,
    project_set_default_policy,
    project_summary_provider,
    session_pins,
)
from jaato_web.dashboard.services.policies import (
    POLICY_MAX_BYTES,
    POLICY_NAME_MAX,
    RANK_ORDERS,
    RANK_SESSIONS_MAX,
    RANK_VERSIONS_MAX,
    PinChange,
    PinError,
    PlannerConfigError,
    PolicyConflict,
    PolicyNameError,
    RankError,
    config_canonical,
    planner_config_validated,
    policy_create,
    policy_import,
    policy_name_from_file,
    policy_pins_change,
    policy_restore,
    policy_save,
    policy_size_check,
    ranking_get_or_queue,
    session_pin,
)
from jaato_web.dashboard.services.quality import (
    project_gates,
    project_provider_save,
    project_quality_save,
    session_recorded_cost,
)
from jaato_web.dashboard.services.replays import (
    REPLAYED_DIFFERENTLY,
    replay_scored_series,
    replay_series_of,
)
from jaato_web.dashboard.services.runs import VERDICT_FIELDS, plugin_names
from jaato_web.dashboard.services.stash import RestoreError, run_result_session, stash_restore
from jaato_web.dashboard.services.stored_sessions import (
    SESSION_CACHE_MESSAGES,
    engine_session_of,
    session_after_of,
)
from jaato_web.dashboard.services.uploads import (
    FILENAME_MAX_CHARS,
    UploadNameError,
    UploadOutcome,
    UploadReceipt,
    UploadState,
    gc_skipped_because,
    upload_name_check,
    upload_size_check,
    uploads_gc_skipped_because,
    uploads_status,
)

__all__ = [
    "DEFAULT_PROJECT_SLUG",
    "FILENAME_MAX_CHARS",
    "POLICY_MAX_BYTES",
    "POLICY_NAME_MAX",
    "RANK_ORDERS",
    "RANK_SESSIONS_MAX",
    "RANK_VERSIONS_MAX",
    "REPLAYED_DIFFERENTLY",
    "SESSION_CACHE_MESSAGES",
    "VERDICT_FIELDS",
    "DeletionPlan",
    "PinChange",
    "PinError",
    "PlannerConfigError",
    "PolicyConflict",
    "PolicyKindError",
    "PolicyNameError",
    "RankError",
    "RestoreError",
    "UploadNameError",
    "UploadOutcome",
    "UploadReceipt",
    "UploadState",
    "UploadTooLarge",
    "archive_set",
    "compaction_checked",
    "config_canonical",
    "config_validated",
    "config_with_session_pins",
    "deletion_plan",
    "engine_session_of",
    "gc_policy_checked",
    "gc_skipped_because",
    "item_delete",
    "item_described",
    "jaato_config_validated",
    "planner_config_validated",
    "plugin_names",
    "policy_create",
    "policy_import",
    "policy_name_from_file",
    "policy_pins_change",
    "policy_restore",
    "policy_save",
    "policy_size_check",
    "project_default",
    "project_gates",
    "project_prices",
    "project_provider_save",
    "project_quality_save",
    "project_set_default_policy",
    "project_summary_provider",
    "ranking_get_or_queue",
    "replay_scored_series",
    "replay_series_of",
    "run_result_session",
    "session_after_of",
    "session_pin",
    "session_pins",
    "session_recorded_cost",
    "stash_restore",
    "upload_name_check",
    "upload_size_check",
    "uploads_gc_skipped_because",
    "uploads_status",
]
