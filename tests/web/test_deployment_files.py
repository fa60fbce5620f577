"""The container image and the compose file say what the README and docs/deployment.md say.

No container runtime runs here, so these read the files: the compose file parses and has its
three services with health checks and the database's volume, every process the image starts
is the production command (``manage.py serve``) that ``./dev production`` runs, and every
setting the compose file passes is one the dashboard reads.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ["python", "manage.py", "serve"]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_compose_runs_web_worker_and_postgres_with_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]

    assert set(services) == {"web", "worker", "db"}
    assert services["db"]["image"].startswith("postgres:")
    assert "postgres-data:/var/lib/postgresql/data" in services["db"]["volumes"]
    assert "postgres-data" in compose["volumes"]
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
        assert service["restart"] == "unless-stopped", name
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"
        assert services[name]["environment"]["DJANGO_DEBUG"] == "0"
        assert services[name]["environment"]["DATABASE_URL"].startswith("postgres://")


def test_every_process_is_the_production_command(compose: dict[str, Any]) -> None:
    services = compose["services"]
    web, worker = services["web"]["command"], services["worker"]["command"]
    instructions = dockerfile_instructions()
    image_command = json.loads(next(arg for op, arg in instructions if op == "CMD"))

    assert image_command[:3] == PRODUCTION
    assert web[:3] == PRODUCTION
    assert worker[:3] == PRODUCTION
    # The web service serves and migrates; the worker service only runs tasks, after it.
    assert web[web.index("--task-workers") + 1] == "0"
    assert worker[worker.index("--workers") + 1] == "0"
    assert "--no-migrate" in worker
    assert services["worker"]["depends_on"]["web"]["condition"] == "service_healthy"
    # ./dev production runs the same command after collecting the static files.
    dev = (ROOT / "dev").read_text()
    assert 'exec "$VENV_PY" manage.py serve "$@"' in dev


def test_the_image_is_slim_runs_as_a_user_and_collects_static_files_at_build() -> None:
    instructions = dockerfile_instructions()
    ops = [op for op, _ in instructions]
    base = next(arg for op, arg in instructions if op == "FROM")
    run = " ".join(arg for op, arg in instructions if op == "RUN")

    assert re.fullmatch(r"python:3\.1[2-9]-slim(-\w+)?", base)
    assert "collectstatic --noinput" in run
    user = next(arg for op, arg in instructions if op == "USER")
    assert user not in {"root", "0"}
    # Everything after USER runs as that user, the server included.
    assert ops.index("USER") < ops.index("CMD")
    assert any(op == "HEALTHCHECK" for op in ops)


def test_compose_passes_only_settings_the_dashboard_reads(compose: dict[str, Any]) -> None:
    settings_source = (ROOT / "jaato_web" / "settings.py").read_text()
    for name in ("web", "worker"):
        for variable in compose["services"][name]["environment"]:
            assert f'"{variable}"' in settings_source, variable


def test_the_readme_and_the_deployment_doc_give_the_same_commands(
    compose: dict[str, Any],
) -> None:
    readme = (ROOT / "README.md").read_text()
    deployment = (ROOT / "docs" / "deployment.md").read_text()
    first_commands = readme.split("```")[1]

    assert "./dev production" in first_commands
    assert "docs/deployment.md" in readme
    for service in ("web", "worker"):
        assert shlex.join(compose["services"][service]["command"]) in deployment, service
