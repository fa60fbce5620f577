"""App registration for projects' members, API tokens, sign-in and the audit log."""

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "jaato_web.teams"
    label = "teams"
    verbose_name = "Teams and access"
