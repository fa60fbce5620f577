# The dashboard's production image: the ASGI app under uvicorn and its task workers, run by
# `python manage.py serve` as `./dev production` runs it (docs/deployment.md). compose.yaml
# runs it as a web service, a worker service and PostgreSQL.
FROM python:3.13-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --system --create-home --uid 10001 --user-group jaato

WORKDIR /app
COPY . .
# Editable, so the app runs from /app (its templates and static folders live beside it); the
# web extra is the dashboard's stack (pyproject.toml).
RUN pip install --editable ".[web]" \
    && DJANGO_DEBUG=0 DJANGO_SECRET_KEY=collectstatic-only-not-a-secret \
       python manage.py collectstatic --noinput --verbosity 0

# Nothing of /app is writable at run time: the database is PostgreSQL, logs go to the console.
USER jaato
ENV DJANGO_DEBUG=0
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:8000/api/health', timeout=4)"]

CMD ["python", "manage.py", "serve", "0.0.0.0:8000"]
