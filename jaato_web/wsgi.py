"""WSGI entry point, for synchronous application servers such as gunicorn."""

import os

from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jaato_web.settings")

application: WSGIHandler = get_wsgi_application()
