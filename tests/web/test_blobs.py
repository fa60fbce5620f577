"""Large values written into a row, copied from another, or read back come out byte for byte,
on SQLite (a piece at a time) and on PostgreSQL (in one statement) alike."""

from __future__ import annotations

import random

from jaato_web.dashboard import blobs
from jaato_web.dashboard.models import (
    AgentSession,
    IngestJob,
    IngestUpload,
    Project,
    SessionDocument,
)

# Random bytes do not compress: a value of several pieces and a remainder.
LARGE = random.Random(7).randbytes(2 * blobs.PIECE_BYTES + 12_345)


def document(session: AgentSession) -> tuple[bytes, bytes]:
    original, engine = SessionDocument.objects.values_list("original", "engine_session").get(
        session=session
    )
    return bytes(original), bytes(engine)


def waiting_upload(project: Project, data: bytes) -> IngestJob:
    job = IngestJob.objects.create(project=project, filename="f.json", sha256="0", size_bytes=1)
    IngestUpload.objects.create(job=job, data=data)
    return job


def test_values_of_several_pieces_are_written_byte_for_byte(
    stored_session: AgentSession,
) -> None:
    written = blobs.blobs_set(
        SessionDocument, stored_session.pk, {"original": LARGE, "engine_session": b"{}"}
    )

    assert written
    assert document(stored_session) == (LARGE, b"{}")


def test_the_row_written_is_the_one_named_whatever_order_rows_were_made_in(
    project: Project,
) -> None:
    """SQLite opens a value by its row's ``rowid``, which is not the row's primary key: the
    upload of the second job made is here the first row of its table."""
    first, second = (
        IngestJob.objects.create(project=project, filename=name, sha256="0", size_bytes=1)
        for name in ("first.json", "second.json")
    )
    IngestUpload.objects.create(job=second, data=b"second")
    IngestUpload.objects.create(job=first, data=b"first")

    assert blobs.blobs_set(IngestUpload, first.pk, {"data": LARGE})
    assert blobs.blobs_set(
        IngestUpload, second.pk, {"data": blobs.StoredBlob(IngestUpload, first.pk, "data")}
    )

    data = dict(IngestUpload.objects.values_list("job", "data"))
    assert (bytes(data[first.pk]), bytes(data[second.pk])) == (LARGE, LARGE)


def test_a_value_is_copied_from_another_row_which_keeps_it(
    project: Project, stored_session: AgentSession
) -> None:
    job = waiting_upload(project, LARGE)
    engine = document(stored_session)[1]

    copied = blobs.blobs_set(
        SessionDocument,
        stored_session.pk,
        {"original": blobs.StoredBlob(IngestUpload, job.pk, "data")},
    )

    assert copied
    assert document(stored_session) == (LARGE, engine)
    assert bytes(IngestUpload.objects.get(job=job).data) == LARGE


def test_nothing_changes_when_a_row_is_gone(project: Project, stored_session: AgentSession) -> None:
    before = document(stored_session)
    job = waiting_upload(project, LARGE)
    IngestUpload.objects.filter(job=job).delete()

    copied = blobs.blobs_set(
        SessionDocument,
        stored_session.pk,
        {"original": blobs.StoredBlob(IngestUpload, job.pk, "data"), "engine_session": b"{}"},
    )
    missing_row = blobs.blobs_set(SessionDocument, stored_session.pk + 1, {"original": b"x"})

    assert not copied
    assert not missing_row
    assert document(stored_session) == before


def test_a_value_is_read_back_byte_for_byte_and_a_missing_row_reads_as_none(
    project: Project,
) -> None:
    job = waiting_upload(project, LARGE)

    assert blobs.blob_of(IngestUpload, job.pk, "data") == LARGE
    assert blobs.blob_of(IngestUpload, job.pk + 1, "data") is None
