"""Routes for sign-in, projects, members, tokens and the audit log (namespace ``teams``)."""

from django.urls import URLPattern, path

from jaato_web.teams import views

app_name = "teams"

urlpatterns: list[URLPattern] = [
    path("accounts/sign-in/", views.sign_in, name="sign_in"),
    path("accounts/sign-out/", views.sign_out, name="sign_out"),
    path("accounts/tokens/", views.tokens, name="tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
    path("projects/", views.project_list, name="projects"),
    path("projects/current/", views.project_switch, name="project_switch"),
    path("projects/<int:project_id>/members/", views.members, name="members"),
    path(
        "projects/<int:project_id>/members/<int:membership_id>/",
        views.member_change,
        name="member_change",
    ),
    path("audit/", views.audit_log, name="audit"),
]
