"""Every page that shows a count says "1 turn", not "1 turns", and "1,234,567", not "1234567".

The stored figures of a session, a run and a replay are set to 1 and then to 1,234,567, and
each page that shows them is read as a person reads it: its text, without code, dates or
attributes.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

import gcengine
from jaato_web.dashboard import background, storage
from jaato_web.dashboard.models import AgentSession, GCRun, JobStatus, Policy, Replay
from tests.web.uploads import session_file

pytestmark = pytest.mark.django_db

NOUNS = (
    "turns",
    "items",
    "tokens",
    "sessions",
    "runs",
    "messages",
    "collections",
    "checks",
    "events",
    "comments",
    "fields",
    "threads",
    "entries",
    "times",
    "summaries",
    "replays",
    "versions",
    "anchors",
    "requests",
    "keys",
    "literal anchors",
)
ONE_WITH_A_PLURAL = re.compile(rf"(?<![\d,.])1 (?:GC )?(?:{'|'.join(NOUNS)})\b")
# Five digits or more with no separator: a count a reader has to count the digits of (a
# percentage has decimals, and is not a count).
BARE_DIGITS = re.compile(r"(?<![\d,.\w-])\d{5,}(?![\d\w]|\.\d)")
# What a reader does not read as a count: code, ids, dates and times.
NOT_COUNTS = re.compile(
    r"<(script|style|code|pre|time|textarea|title)\b.*?</\1>", re.DOTALL | re.IGNORECASE
)


def read(html: str) -> str:
    """The text of a page: code, dates and tags dropped, entities decoded, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", NOT_COUNTS.sub(" ", html))).split())


def assert_counts_read_well(text: str, page: str) -> None:
    """No "1 turns", no bare "1234567"; a failure quotes each one in its sentence."""
    found = [*ONE_WITH_A_PLURAL.finditer(text), *BARE_DIGITS.finditer(text)]
    assert not found, (page, [text[max(m.start() - 80, 0) : m.end() + 40] for m in found])


def retention(n: int) -> dict[str, Any]:
    """A stored score whose every count is ``n``."""
    classes = [
        gcengine.ClassRetention(anchor_class=c.anchor_class, weight=c.weight, anchors=n)
        for c in gcengine.ANCHOR_CLASSES
    ]
    return storage.retention_record(
        gcengine.AnchorRetention(
            classes=classes,
            invented=gcengine.InventedAnchors(checked=n, invented=n),
            removed_messages=n,
            removed_tokens=n,
            replacement_tokens=n,
        )
    )


def with_figures(session: AgentSession, run: GCRun, replay: Replay, n: int) -> None:
    """Set every stored count the pages show to ``n``."""
    AgentSession.objects.filter(pk=session.pk).update(
        turn_count=n,
        message_count=n,
        total_tokens=2 * n,
        locked_tokens=n,
        preservable_tokens=n,
        eligible_tokens=n,
        utilization_percent=2 * n / session.context_limit * 100,
    )
    GCRun.objects.filter(pk=run.pk).update(
        tokens_before=2 * n,
        tokens_after=n,
        tokens_freed=n,
        items_collected=n,
        turns_after=n,
        locked_after=n,
        preservable_after=0,
        eligible_after=0,
        retention=retention(n),
    )
    Replay.objects.filter(pk=replay.pk).update(
        status=JobStatus.DONE,
        series={
            **(replay.series or {}),
            "steps": [[0, "post_turn", 2 * n, n]],
            "events": [
                {
                    "turn_index": 0,
                    "point": "post_turn",
                    "reason": "threshold",
                    "success": True,
                    "items": n,
                    "tokens_before": 2 * n,
                    "tokens_after": n,
                    "error": None,
                    "retention": retention(n),
                }
            ],
            "requests": [[0, n, 0]],
            "requests_without_gc": [[0, n, 0]],
        },
    )


@pytest.mark.parametrize("n", [1, 1_234_567])
def test_pages_count_with_the_right_noun_and_separators(
    n: int,
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    finished_run: GCRun,
    django_capture_on_commit_callbacks: Any,
) -> None:
    version = budget_policy.versions.get()
    with django_capture_on_commit_callbacks(execute=True):
        replay = background.replay_request(session=stored_session, policy_version=version)
    replay.refresh_from_db()
    with_figures(stored_session, finished_run, replay, n)
    session = stored_session.pk
    pages = {
        "sessions": reverse("session_list"),
        "session": reverse("session_detail", args=[session]),
        "run": reverse("run_detail", args=[finished_run.pk]),
        "replay": reverse("replay_detail", args=[replay.pk]),
        "editor": reverse("policy_edit", args=[budget_policy.pk]),
        "compare": f"{reverse('policy_compare')}?session={session}",
        "apply": reverse("policy_apply", args=[budget_policy.pk]),
        "versions": reverse("policy_versions", args=[budget_policy.pk]),
        "apply progress": f"{reverse('policy_runs')}?ids={finished_run.pk}",
        "review queue": reverse("review_queue"),
        "removed item": reverse("run_removal", args=[finished_run.pk, 0]),
        "quality settings": reverse("project_quality", args=[stored_session.project_id]),
        "export": reverse("policy_version_export", args=[budget_policy.pk, version.number]),
    }
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert_counts_read_well(read(response.content.decode()), name)


def test_upload_results_count_turns_in_the_singular(client: Client, project: Any) -> None:
    response = client.post(
        reverse("session_upload"),
        {"files": [SimpleUploadedFile("one-turn.json", session_file(1))]},
        headers={"HX-Request": "true"},
    )

    text = read(response.content.decode())
    assert "(1 turn, " in text
    assert_counts_read_well(text, "upload results")


def test_the_reading_catches_what_it_is_for() -> None:
    """The checks above would pass on any page if the patterns never matched."""
    assert ONE_WITH_A_PLURAL.findall("GC ran 1 times over 1 checks; 1 GC events")
    assert not ONE_WITH_A_PLURAL.findall("11 turns, 21 items, 1 turn, 1.1 tokens")
    assert BARE_DIGITS.findall("freed 1633283 tokens")
    assert not BARE_DIGITS.findall("freed 1,633,283 tokens in run 12, v3, 2026")
    assert read('<p>1,234 <code>a1b2c3d4e5f6</code> <time datetime="x">20261125</time></p>') == (
        "1,234"
    )
