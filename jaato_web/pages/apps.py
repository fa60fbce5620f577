"""App registration for the pages (their template filters need an installed app)."""

from django.apps import AppConfig


class PagesConfig(AppConfig):
    """Named explicitly because the app lives inside the project package."""

    name = "jaato_web.pages"
    label = "pages"
    verbose_name = "Pages"
