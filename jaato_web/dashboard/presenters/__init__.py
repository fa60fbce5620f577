"""Engine values and stored rows shaped for pages and the API: no ORM, no requests.

Each family of pages has its own module, named like its pages (``jaato_web/pages/<family>.py``)
and templates (``templates/<family>/``): ``sessions`` (the history, drift, the agent's usage),
``trees`` (the budget tree and the usage bar), ``runs`` (a run's figures, ledger, summary chain,
diff and story), ``replays`` (the chart, events, figures and story of a replay), ``policies``
(gc.json tables and what a preview says), ``planner`` (the Plan tab), ``quality`` (anchor
retention, prompt-cache cost, the ranking) and ``stash`` (the reference graph around a turn).
``words`` says figures the same way everywhere, and ``layout`` holds the chart sizes and the
pager. The package names what pages, the API, the previews and the tests use, so they import
one package; anything else is imported from its family's module.
"""

from __future__ import annotations

from jaato_web.dashboard.presenters.layout import (
    COMPACT_CHART_HEIGHT,
    COMPACT_CHART_WIDTH,
    pager,
)
from jaato_web.dashboard.presenters.planner import (
    PLANNER_LABELS,
    TURNS_SHOWN,
    budget_rows,
    caps_origin,
    code_counts,
    excluded_units,
    included_units,
    item_name,
    planner_config_table,
    planner_flat,
    planner_summary,
    section_bars,
    step_chart,
    telemetry_json,
)
from jaato_web.dashboard.presenters.policies import (
    Left,
    PolicySummary,
    PreviewStory,
    config_changes,
    config_table,
    conflict_rows,
    policy_name,
    policy_summary,
    preview_story,
    shown,
    strategy_of,
)
from jaato_web.dashboard.presenters.quality import (
    RetentionView,
    cost_view,
    gates_in_words,
    ranking_rows,
    replay_gate_failures,
    replay_retention,
    retention_view,
    run_retention,
)
from jaato_web.dashboard.presenters.replays import (
    CHART_MAX_POINTS,
    ReplayStory,
    chart_title,
    no_turns,
    replay_chart,
    replay_events,
    replay_figures,
    replay_story,
    replay_title,
)
from jaato_web.dashboard.presenters.runs import (
    SummaryView,
    diff_views,
    ledger_csv,
    ledger_record,
    ledger_records,
    ledger_rows,
    run_figures,
    run_story,
    summary_views,
)
from jaato_web.dashboard.presenters.sessions import (
    Pins,
    drift_view,
    message_views,
    part_view,
    pin_summary,
    removed_message_views,
    turn_views,
    usage_chart,
)
from jaato_web.dashboard.presenters.stash import reference_picture
from jaato_web.dashboard.presenters.trees import (
    indicator,
    policy_legend,
    tree_rows,
    usage_bar,
)
from jaato_web.dashboard.presenters.words import (
    counted,
    dollars,
    share,
    turn_ranges,
)

__all__ = [
    "CHART_MAX_POINTS",
    "COMPACT_CHART_HEIGHT",
    "COMPACT_CHART_WIDTH",
    "PLANNER_LABELS",
    "TURNS_SHOWN",
    "Left",
    "Pins",
    "PolicySummary",
    "PreviewStory",
    "ReplayStory",
    "RetentionView",
    "SummaryView",
    "budget_rows",
    "caps_origin",
    "chart_title",
    "code_counts",
    "config_changes",
    "config_table",
    "conflict_rows",
    "cost_view",
    "counted",
    "diff_views",
    "dollars",
    "drift_view",
    "excluded_units",
    "gates_in_words",
    "included_units",
    "indicator",
    "item_name",
    "ledger_csv",
    "ledger_record",
    "ledger_records",
    "ledger_rows",
    "message_views",
    "no_turns",
    "pager",
    "part_view",
    "pin_summary",
    "planner_config_table",
    "planner_flat",
    "planner_summary",
    "policy_legend",
    "policy_name",
    "policy_summary",
    "preview_story",
    "ranking_rows",
    "reference_picture",
    "removed_message_views",
    "replay_chart",
    "replay_events",
    "replay_figures",
    "replay_gate_failures",
    "replay_retention",
    "replay_story",
    "replay_title",
    "retention_view",
    "run_figures",
    "run_retention",
    "run_story",
    "section_bars",
    "share",
    "shown",
    "step_chart",
    "strategy_of",
    "summary_views",
    "telemetry_json",
    "tree_rows",
    "turn_ranges",
    "turn_views",
    "usage_bar",
    "usage_chart",
]
