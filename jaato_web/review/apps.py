"""App registration for comments, verdicts and the review queue."""

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "jaato_web.review"
    label = "review"
    verbose_name = "Review"
