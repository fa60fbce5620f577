"""The suite really runs on the database DATABASE_URL names.

`./dev test` runs the suite on SQLite, then on PostgreSQL when
JAATO_TEST_POSTGRES_URL is set (CI always sets it); this keeps a second run from
quietly testing SQLite again.
"""

from __future__ import annotations

import os

import pytest
from django.db import connection

VERSION_QUERIES = {
    "postgresql": ("SELECT version()", "PostgreSQL "),
    "sqlite": ("SELECT sqlite_version()", "3."),
}


@pytest.mark.django_db
def test_suite_runs_on_the_database_the_url_names() -> None:
    url = os.environ.get("DATABASE_URL", "").strip().lower()
    expected = "postgresql" if url.startswith(("postgres://", "postgresql://")) else "sqlite"
    query, prefix = VERSION_QUERIES[expected]

    with connection.cursor() as cursor:
        cursor.execute(query)
        row = cursor.fetchone()

    assert connection.vendor == expected
    assert row is not None
    assert str(row[0]).startswith(prefix), row
