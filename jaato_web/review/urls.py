"""Routes of the review pages (namespace ``review``).

Review routes sit beside the objects they review (``runs/<run_id>/comments/``), so a URL
says what a comment or verdict is about. Policy versions are named as the policy pages name
them: the policy and the version's number.
"""

from django.urls import URLPattern, path

from jaato_web.review import views

app_name = "review"

urlpatterns: list[URLPattern] = [
    path("review/", views.queue, name="queue"),
    path("runs/<int:run_id>/comments/", views.run_comment, name="run_comment"),
    path("runs/<int:run_id>/verdicts/", views.run_verdict, name="run_verdict"),
    path(
        "runs/<int:run_id>/removals/<int:seq>/comments/",
        views.removal_comment,
        name="removal_comment",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/review/",
        views.version_review,
        name="version_review",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/comments/",
        views.version_comment,
        name="version_comment",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>/verdicts/",
        views.version_verdict,
        name="version_verdict",
    ),
]
