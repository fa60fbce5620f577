"""Large binary values written into a row, copied from another row, or read, a piece at a time.

SQLite makes a whole row in memory to write it: setting a 12.5 MB packed original took 25-45
MB of the worker's memory at its peak, beside the session it was storing (SQLite copies the
bound bytes, then builds the row from them; a copy from another row reads the value whole
first), and any later update of that row, even of another column, read the value back and
built the row again (48 MB to change a row beside a 12.5 MB value). So on SQLite a row's large
values are all set in one update, each to a zero-filled value of its size, which SQLite keeps
without building it, and the bytes are then written into them through SQLite's incremental
blob I/O, a megabyte at a time, in the same transaction. Other databases do this work in their
own server process: there the values are set, or copied by a subquery, in one statement.
Reading one back on SQLite goes through the same blob I/O, straight into the bytes returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import BinaryField, Func, Model, Subquery

PIECE_BYTES = 1 << 20


@dataclass(frozen=True)
class StoredBlob:
    """A binary value already in the database (a field of one row), to be copied there rather
    than read into this process."""

    model: type[Model]
    pk: Any
    field: str

    def rows(self) -> Any:
        return self.model._default_manager.filter(pk=self.pk)


class _ZeroBlob(Func):
    """SQLite's ``zeroblob(n)``: a value of ``n`` zero bytes, stored without being built."""

    function = "zeroblob"
    output_field = BinaryField()


def _blob(model: type[Model], field: str, pk: Any, *, readonly: bool) -> Any:
    """SQLite's handle on one row's value, or None when there is no such row. SQLite opens it
    by the row's ``rowid``, which is not the primary key Django declares (a ``bigint`` key is a
    column of its own)."""
    table, key, quote = model._meta.db_table, model._meta.pk, connection.ops.quote_name
    assert key is not None
    assert key.column is not None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {quote(table)} WHERE {quote(key.column)} = %s", [pk])
        row = cursor.fetchone()
    if row is None:
        return None
    column = model._meta.get_field(field).column  # type: ignore[union-attr]
    return connection.connection.blobopen(table, column, row[0], readonly=readonly)


def blob_of(model: type[Model], pk: Any, field: str) -> bytes | None:
    """The value of ``field`` in the row ``pk`` (None when there is no such row). SQLite reads
    it from its pages straight into the bytes returned: a query's result is built whole by
    SQLite first, then copied (a 45 MB upload took 90 MB to read)."""
    if connection.vendor != "sqlite":
        value = model._default_manager.filter(pk=pk).values_list(field, flat=True).first()
        return None if value is None else bytes(value)
    source = _blob(model, field, pk, readonly=True)
    if source is None:
        return None
    with source:
        data: bytes = source.read()
    return data


@transaction.atomic
def blobs_set(model: type[Model], pk: Any, values: Mapping[str, bytes | StoredBlob]) -> bool:
    """Set the binary fields of the row ``pk`` to ``values`` (bytes, or a value to copy from
    another row), all at once. False, with nothing changed, when the row or a row to copy from
    is gone."""
    copied = [value for value in values.values() if isinstance(value, StoredBlob)]
    if any(not value.rows().exists() for value in copied):
        return False
    rows = model._default_manager.filter(pk=pk)
    if connection.vendor != "sqlite":
        return bool(
            rows.update(
                **{
                    field: Subquery(value.rows().values(value.field))
                    if isinstance(value, StoredBlob)
                    else value
                    for field, value in values.items()
                }
            )
        )
    sizes = {field: _size(value) for field, value in values.items()}
    if not rows.update(**{field: _ZeroBlob(size) for field, size in sizes.items()}):
        return False
    for field, value in values.items():
        with _blob(model, field, pk, readonly=False) as target:
            if isinstance(value, StoredBlob):
                with _blob(value.model, value.field, value.pk, readonly=True) as source:
                    while piece := source.read(PIECE_BYTES):
                        target.write(piece)
            else:
                view = memoryview(value)
                for start in range(0, len(view), PIECE_BYTES):
                    target.write(view[start : start + PIECE_BYTES])
    return True


def _size(value: bytes | StoredBlob) -> int:
    if isinstance(value, bytes):
        return len(value)
    with _blob(value.model, value.field, value.pk, readonly=True) as source:
        return len(source)
