"""Download names come from uploaded file names, which anyone can choose: a name is quoted
into ``Content-Disposition`` so it cannot add parameters or break the header."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.http import content_disposition_header

from jaato_web.dashboard import background
from jaato_web.dashboard.models import Project
from tests.web.uploads import session_file

HOSTILE_NAMES = [
    # Would add a second, preferred file name (a page to open) to an unquoted header.
    "notes.json\"; filename*=UTF-8''evil.html",
    'quote " and back\\slash.json',
    "line\r\nSet-Cookie: sessionid=forged.json",
    "séance 日本.json",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_original_download_quotes_the_uploaded_name(
    client: Client, project: Project, name: str
) -> None:
    receipt = background.session_upload(project=project, filename=name, data=session_file(3))
    assert receipt.session is not None

    answer = client.get(f"/api/sessions/{receipt.session.pk}/original")

    assert answer.status_code == 200
    assert answer["Content-Disposition"] == content_disposition_header(True, name)
    assert "Set-Cookie" not in answer.headers
    assert not answer.cookies.get("sessionid")
