"""Routes for the dashboard pages, namespaced so templates can say dashboard:home."""

from django.urls import URLPattern, path

from jaato_web.dashboard import views

app_name = "dashboard"

urlpatterns: list[URLPattern] = [
    path("", views.home, name="home"),
]
