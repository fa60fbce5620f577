"""ASGI entry point, for servers such as uvicorn or daphne that will carry
streaming GC progress to the dashboard."""

import os

from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jaato_web.settings")

application: ASGIHandler = get_asgi_application()
