"""Routes of the policy editor, included under policies/ in the dashboard namespace."""

from django.urls import URLPattern, path

from jaato_web.dashboard import policy_views as views

urlpatterns: list[URLPattern] = [
    path("", views.policy_list, name="policy-list"),
    path("new/", views.policy_new, name="policy-new"),
    path("import/", views.policy_import, name="policy-import"),
    path("preview/", views.policy_preview, name="policy-preview"),
    path("preview/chart/", views.policy_preview_chart, name="policy-preview-chart"),
    path("chart/", views.policy_version_chart, name="policy-version-chart"),
    path("compare/", views.policy_compare, name="policy-compare"),
    path("pins/toggle/", views.policy_pin_toggle, name="policy-pin-toggle"),
    path("runs/", views.policy_runs, name="policy-runs"),
    path("<int:policy_id>/edit/", views.policy_edit, name="policy-edit"),
    path("<int:policy_id>/default/", views.policy_default, name="policy-default"),
    path("<int:policy_id>/apply/", views.policy_apply, name="policy-apply"),
    path("<int:policy_id>/versions/", views.policy_versions, name="policy-versions"),
    path(
        "<int:policy_id>/versions/compare/",
        views.policy_versions_compare,
        name="policy-versions-compare",
    ),
    path(
        "<int:policy_id>/versions/<int:number>/restore/",
        views.policy_restore,
        name="policy-restore",
    ),
    path(
        "<int:policy_id>/versions/<int:number>/gc.json",
        views.policy_export,
        name="policy-export",
    ),
]
