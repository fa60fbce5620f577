"""Routes for the dashboard pages, namespaced so templates can say dashboard:home."""

from django.urls import URLPattern, URLResolver, include, path

from jaato_web.dashboard import views

app_name = "dashboard"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.home, name="home"),
    # The policy editor's pages keep their own route list (same namespace).
    path("policies/", include("jaato_web.dashboard.policy_urls")),
]
