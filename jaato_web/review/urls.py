"""Routes of the review pages (namespace ``review``)."""

from django.urls import URLPattern, path

from jaato_web.review import views

app_name = "review"

urlpatterns: list[URLPattern] = [
    path("review/", views.queue, name="queue"),
]
