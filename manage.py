#!/usr/bin/env python
"""Django's command-line utility for the jaato GC dashboard."""

import os
import sys


def main() -> None:
    """Default to this project's settings so a bare `manage.py` works."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jaato_web.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise ImportError(
            "Couldn't import Django. Run ./dev setup to create .venv, "
            "then use .venv/bin/python manage.py ..."
        ) from exc
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
