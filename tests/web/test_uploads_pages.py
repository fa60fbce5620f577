"""Uploading from the page: one file or several, and every way a file can turn out."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.test import Client
from django.urls import reverse

import gcengine
from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, IngestJob, JobStatus, Project
from tests.web.conftest import session_bytes

pytestmark = pytest.mark.django_db

URL = "/sessions/upload/"
HTMX = {"HX-Request": "true"}


def a_file(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/json")


def malformed_bytes() -> bytes:
    file = generate_session_file(SessionShape(turns=2, seed=3))
    file["history"][2]["role"] = "alien"
    return json.dumps(file).encode()


def other_session(seed: int) -> bytes:
    return session_bytes(SessionShape(turns=2, user_chars=100, model_chars=100, seed=seed))


def test_upload_page_has_a_multiple_file_picker_and_a_drop_zone(
    client: Client, project: Project
) -> None:
    html = client.get(reverse("session_upload")).content.decode()

    assert re.search(r'<input type="file" name="files"[^>]* multiple', html)
    assert 'enctype="multipart/form-data"' in html
    assert 'hx-encoding="multipart/form-data"' in html
    assert "data-dropzone" in html
    assert re.search(r'<script src="/static/js/upload\.js" defer>', html)
    assert "style=" not in html


def test_single_file_is_stored_and_linked(client: Client, project: Project) -> None:
    response = client.post(URL, {"files": a_file("one.json", other_session(1))})

    session = AgentSession.objects.get()
    html = response.content.decode()
    assert response.status_code == 200
    assert "one.json" in html
    assert "stored" in html
    assert f'href="{reverse("session_detail", args=[session.pk])}"' in html
    assert "<html" in html


def test_htmx_upload_answers_with_the_results_fragment(client: Client, project: Project) -> None:
    response = client.post(URL, {"files": a_file("one.json", other_session(1))}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.lstrip().startswith('<section id="upload-results"')
    assert "stored" in html


def test_several_files_each_get_their_outcome(client: Client, project: Project) -> None:
    files = [
        a_file("first.json", other_session(1)),
        a_file("broken.json", malformed_bytes()),
        a_file("second.json", other_session(2)),
    ]

    response = client.post(URL, {"files": files})

    html = response.content.decode()
    assert response.status_code == 200  # at least one was stored
    assert AgentSession.objects.count() == 2
    outcomes = re.findall(
        r'<li class="outcome outcome--(\w+)">\s*<span class="outcome__file">([^<]+)<', html
    )
    assert outcomes == [
        ("stored", "first.json"),
        ("malformed", "broken.json"),
        ("stored", "second.json"),
    ]


def test_duplicate_links_the_existing_session(client: Client, stored_session: AgentSession) -> None:
    response = client.post(URL, {"files": a_file("again.json", session_bytes())})

    html = response.content.decode()
    assert response.status_code == 200
    assert "already uploaded" in html
    assert f'href="{reverse("session_detail", args=[stored_session.pk])}"' in html
    assert AgentSession.objects.count() == 1


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_malformed_file_is_refused_with_reason_and_path(
    client: Client, project: Project, headers: dict[str, str]
) -> None:
    response = client.post(
        URL, {"files": a_file("broken.json", malformed_bytes())}, headers=headers
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert "broken.json" in html
    assert "&quot;alien&quot; is not one of user, model, tool" in html
    assert "<code>history[2].role</code>" in html
    assert "Nothing was stored" in html
    assert not AgentSession.objects.exists()


def test_not_json_is_refused(client: Client, project: Project) -> None:
    response = client.post(URL, {"files": a_file("notes.txt", b"just some notes")})

    assert response.status_code == 400
    assert "not valid JSON" in response.content.decode()


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_too_large_is_refused_with_413(
    client: Client, project: Project, settings: Any, headers: dict[str, str]
) -> None:
    settings.JAATO_UPLOAD_MAX_BYTES = 1000

    response = client.post(URL, {"files": a_file("huge.json", other_session(1))}, headers=headers)

    html = response.content.decode()
    assert response.status_code == 413
    assert "huge.json" in html
    assert "too large" in html
    assert "the limit is 1,000 bytes" in html
    assert not AgentSession.objects.exists()


def test_all_failed_for_different_reasons_is_400(
    client: Client, project: Project, settings: Any
) -> None:
    settings.JAATO_UPLOAD_MAX_BYTES = 5000
    files = [a_file("huge.json", session_bytes()), a_file("tiny.json", b"[1]")]

    response = client.post(URL, {"files": files})

    assert response.status_code == 400
    html = response.content.decode()
    assert "outcome--too_large" in html
    assert "outcome--malformed" in html


def test_no_file_chosen_is_a_form_error(client: Client, project: Project) -> None:
    response = client.post(URL, {}, headers=HTMX)

    assert response.status_code == 400
    assert "This field is required." in response.content.decode()


def test_large_file_is_read_in_the_background(
    client: Client, project: Project, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 1000

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"files": a_file("big.json", other_session(1))})

    job = IngestJob.objects.get()
    html = response.content.decode()
    assert response.status_code == 200
    assert "being read in the background" in html
    assert f'href="{reverse("ingest_job", args=[job.pk])}"' in html

    # The results line follows the read by itself.
    following = reverse("ingest_job_outcome", args=[job.pk])
    assert f'hx-get="{following}" hx-trigger="every 2s"' in html

    # The task ran once the upload committed; the job page now links the session, and so
    # does the results line, which stops following.
    page = client.get(reverse("ingest_job", args=[job.pk])).content.decode()
    session = AgentSession.objects.get()
    assert "The file was read and stored" in page
    assert f'href="{reverse("session_detail", args=[session.pk])}"' in page
    assert "every 2s" not in page
    line = client.get(following, headers=HTMX).content.decode()
    assert "<html" not in line
    assert 'class="outcome outcome--stored"' in line
    assert f'href="{reverse("session_detail", args=[session.pk])}"' in line
    assert f"({session.turn_count} turns," in line
    assert "every 2s" not in line


def test_pending_job_polls_until_done(client: Client, project: Project, settings: Any) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 1000
    client.post(URL, {"files": a_file("big.json", other_session(1))})  # never committed: queued
    job = IngestJob.objects.get()

    response = client.get(reverse("ingest_job", args=[job.pk]), headers=HTMX)

    html = response.content.decode()
    assert "<html" not in html
    assert 'hx-trigger="every 2s"' in html
    assert f'hx-get="{reverse("ingest_job", args=[job.pk])}"' in html
    assert "waiting for a worker" in html
    line = client.get(reverse("ingest_job_outcome", args=[job.pk]), headers=HTMX).content.decode()
    assert 'class="outcome outcome--queued"' in line
    assert "being read in the background" in line
    assert "waiting for a worker" in line
    assert f'hx-get="{reverse("ingest_job_outcome", args=[job.pk])}"' in line


def test_failed_background_job_shows_the_error_and_path(client: Client, project: Project) -> None:
    job = IngestJob.objects.create(
        project=project,
        filename="broken.json",
        sha256="0" * 64,
        size_bytes=10,
        status=JobStatus.FAILED,
        error="history[2].role: bad role",
        error_path="history[2].role",
    )

    html = client.get(reverse("ingest_job", args=[job.pk])).content.decode()
    line = client.get(reverse("ingest_job_outcome", args=[job.pk]), headers=HTMX)

    assert "history[2].role: bad role" in html
    assert "<code>history[2].role</code>" in html
    assert "nothing was stored" in html
    assert "every 2s" not in html
    # The upload page's results line says the same, and stops following.
    text = line.content.decode()
    assert 'class="outcome outcome--failed"' in text
    assert "history[2].role: bad role" in text
    assert "<code>history[2].role</code>" in text
    assert "Nothing was stored." in text
    assert "every 2s" not in text


def test_an_empty_file_is_refused_alone_and_the_others_are_stored(
    client: Client, project: Project
) -> None:
    answer = client.post(
        URL,
        {"files": [a_file("good.json", session_bytes()), a_file("empty.json", b"")]},
        headers=HTMX,
    )

    html = answer.content.decode()
    assert answer.status_code == 200
    assert "The submitted file is empty" not in html
    assert re.search(r"empty\.json.*?badge--error\">empty<.*?the file is empty", html, re.S)
    assert AgentSession.objects.get().label == "good.json"


def test_the_api_answers_one_request_of_several_files_with_a_result_each(
    client: Client, project: Project
) -> None:
    answer = client.post(
        "/api/sessions/uploads",
        {
            "files": [
                a_file("good.json", session_bytes()),
                a_file("empty.json", b""),
                a_file("broken.json", malformed_bytes()),
            ]
        },
    )

    body = answer.json()
    assert answer.status_code == 200
    assert (body["taken"], body["refused"]) == (1, 2)
    good, empty, broken = body["results"]
    assert (good["state"], good["status"], good["session"]["label"]) == ("stored", 200, "good.json")
    assert (empty["state"], empty["status"], empty["reason"]) == ("empty", 400, "the file is empty")
    assert (broken["state"], broken["json_path"]) == ("malformed", "history[2].role")
    assert AgentSession.objects.count() == 1


def test_the_api_answers_the_refusal_when_no_file_was_taken(
    client: Client, project: Project
) -> None:
    answer = client.post("/api/sessions/uploads", {"files": [a_file("empty.json", b"")]})

    assert answer.status_code == 400
    assert answer.json()["results"][0]["state"] == "empty"


class CountedReads(io.BytesIO):
    """An uploaded file's bytes that remember how much each read asked for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.sizes: list[int | None] = []

    def read(self, size: int | None = -1) -> bytes:
        self.sizes.append(size)
        return super().read(size)


def test_a_file_sent_again_is_recognised_without_reading_it_whole(
    client: Client, project: Project, settings: Any
) -> None:
    data = session_bytes()
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024  # what a large upload is: a file on disk
    assert client.post(URL, {"files": [a_file("first.json", data)]}).status_code == 200
    assert AgentSession.objects.get().sha256 == hashlib.sha256(data).hexdigest()
    counted = CountedReads(data)
    # As Django hands over a large upload: a file (on disk) read through File.chunks.
    again = UploadedFile(counted, "again.json", "application/json", len(data))
    again.DEFAULT_CHUNK_SIZE = 4096

    receipt = background.session_upload_file(project=project, upload=again)

    assert receipt.duplicate
    assert receipt.session == AgentSession.objects.get()
    assert counted.sizes
    assert all(size is not None and 0 < size < len(data) for size in counted.sizes)


def test_an_upload_to_a_project_without_a_default_policy_says_no_gc_ran(
    client: Client, project: Project
) -> None:
    html = client.post(URL, {"files": a_file("one.json", other_session(1))}).content.decode()
    single = client.post("/api/sessions", {"file": a_file("two.json", other_session(2))}).json()
    several = client.post(
        "/api/sessions/uploads", {"files": [a_file("three.json", other_session(3))]}
    ).json()

    notice = re.search(r"<p [^>]*data-gc-on-upload[^>]*>(.*?)</p>", html, re.S)
    assert notice, html
    assert "no default policy" in notice.group(1)
    assert reverse("policy_list") in notice.group(1)
    for answer in (single, several):
        assert "no default policy" in answer["gc_skipped_because"]
        assert "/api/policies/{id}/default" in answer["gc_skipped_because"]
    assert not project.sessions.filter(runs__isnull=False).exists()


def test_an_upload_that_runs_the_default_policy_has_nothing_to_explain(
    client: Client, project: Project, settings: Any
) -> None:
    from jaato_web.dashboard import services
    from tests.web.conftest import TIGHT_BUDGET

    policy = services.policy_create(project=project, name="Tight", config=TIGHT_BUDGET)
    services.project_set_default_policy(project=project, policy=policy)

    html = client.post(URL, {"files": a_file("one.json", other_session(1))}).content.decode()
    single = client.post("/api/sessions", {"file": a_file("two.json", other_session(2))}).json()
    settings.JAATO_GC_ON_UPLOAD = False
    off = client.post("/api/sessions", {"file": a_file("three.json", other_session(3))}).json()

    assert "data-gc-on-upload" not in html
    assert single["gc_skipped_because"] == ""
    assert "switched off on this server" in off["gc_skipped_because"]


SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
SPOTTER_SESSION = "258c7280-ae70-4798-800f-63464d01a85d"


def spotter_files(*, folder_order: bool = False) -> list[SimpleUploadedFile]:
    """A real Claude Code session's files as a browser sends them, chosen together or as its
    folder (the session file last, as a folder's listing may put it)."""
    agents = sorted((SPOTTER / SPOTTER_SESSION / "subagents").glob("agent-*.jsonl"))
    files = [a_file(path.name, path.read_bytes()) for path in agents]
    session = a_file(
        f"{SPOTTER_SESSION}.jsonl", (SPOTTER / f"{SPOTTER_SESSION}.jsonl").read_bytes()
    )
    return [*files, session] if folder_order else [session, *files]


@pytest.mark.parametrize("where", ["page", "api"])
@pytest.mark.parametrize("folder_order", [False, True], ids=["files", "folder"])
def test_a_claude_code_session_uploaded_with_its_subagent_files_is_one_session(
    client: Client, project: Project, where: str, folder_order: bool
) -> None:
    url = URL if where == "page" else "/api/sessions/uploads"
    other = a_file("other.json", other_session(4))
    answer = client.post(url, {"files": [*spotter_files(folder_order=folder_order), other]})

    assert answer.status_code == 200
    assert AgentSession.objects.count() == 2
    stored = AgentSession.objects.get(source_format="claude_code")
    engine = services.engine_session_of(stored)
    assert {agent.agent_id for agent in engine.subagents} == {"a881341", "acompact-fffbd0"}
    if where == "api":
        names = [result["filename"] for result in answer.json()["results"]]
        assert sorted(names) == sorted([f"{SPOTTER_SESSION}.zip", "other.json"])


def test_a_subagent_file_without_its_session_is_an_upload_of_its_own(
    client: Client, project: Project
) -> None:
    [agent] = [f for f in spotter_files() if f.name == "agent-a881341.jsonl"]
    answer = client.post("/api/sessions/uploads", {"files": [agent]})

    # Read as the file it is (a sub-agent's rows alone hold no session's conversation).
    [result] = answer.json()["results"]
    assert result["filename"] == "agent-a881341.jsonl"


def test_the_page_names_every_format_the_upload_reads_and_takes_folders_and_zips(
    client: Client, project: Project
) -> None:
    html = client.get(reverse("session_upload")).content.decode()

    listed = html.split("data-readable-formats", 1)[1].split("</ul>", 1)[0]
    for readable in gcengine.READABLE_FORMATS:
        assert readable.name in listed
    assert "zip" in listed
    assert "folder" in listed
    assert "data-choose-folder" in html
    assert re.search(r'accept="[^"]*\.zip', html)


def test_every_format_the_engine_reads_is_in_its_list() -> None:
    assert {f.source_format for f in gcengine.READABLE_FORMATS} == set(gcengine.SourceFormat)
