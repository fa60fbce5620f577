"""JSON API of the dashboard.

One NinjaAPI instance serves every endpoint so there is a single OpenAPI
document (browsable at /api/docs) for scripts and agents that drive GC runs.
"""

from importlib.metadata import PackageNotFoundError, version

from django.http import HttpRequest
from ninja import NinjaAPI, Schema

DISTRIBUTION = "jaato-gc-web"

api = NinjaAPI(title="jaato GC API", version="1", urls_namespace="api")


class Health(Schema):
    """Liveness answer; the version lets a client tell which build it reached."""

    status: str
    version: str


def package_version() -> str:
    """A source checkout that was never pip-installed has no metadata; the
    health check must still answer there, so it reports a placeholder."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"


@api.get("/health", response=Health, summary="Liveness check")
def health(request: HttpRequest) -> Health:
    """Cheap on purpose: load balancers call it often, so it touches no database."""
    return Health(status="ok", version=package_version())
