"""App registration for the dashboard's domain (sessions, policies, runs)."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Named explicitly because the app lives inside the project package."""

    name = "jaato_web.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
