"""Turn rows hold ``[figures, messages]`` as pydantic writes the messages, so reading a session
back validates each turn straight from its bytes; rows holding the engine's records (``{"messages":
[...], "figures": [...]}``) are rewritten here.

Written with plain JSON values, not the storage code: a migration does not follow later changes.
"""

import json
import zlib
from typing import Any

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

# As ``storage.PACK_LEVEL`` was when this was written.
LEVEL = 1
BATCH = 500
# The records' short names for the fields of a message and of a part.
MESSAGE_FIELDS = {"id": "message_id", "turn": "turn_index"}
PART_FIELDS = {
    "call": "function_call",
    "response": "function_response",
    "inline": "inline_data",
}


def _renamed(record: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {names.get(key, key): value for key, value in record.items()}


def _message(record: dict[str, Any]) -> dict[str, Any]:
    message = _renamed(record, MESSAGE_FIELDS)
    message["parts"] = [_renamed(part, PART_FIELDS) for part in record["parts"]]
    return message


def _turn(stored: Any) -> Any:
    """A turn as stored now, from one stored either way."""
    if not isinstance(stored, dict):
        return stored  # already ``[figures, messages]`` (written by this code's storage)
    return [stored["figures"], [_message(record) for record in stored["messages"]]]


def _pack(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return zlib.compress(text.encode(), LEVEL)


def rewrite_turns(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    SessionTurn = apps.get_model("dashboard", "SessionTurn")
    pks = list(SessionTurn.objects.values_list("pk", flat=True))
    for start in range(0, len(pks), BATCH):
        rows = SessionTurn.objects.filter(pk__in=pks[start : start + BATCH]).only("packed")
        changed = []
        for row in rows:
            stored = json.loads(zlib.decompress(row.packed))
            if isinstance(stored, dict):
                row.packed = _pack(_turn(stored))
                changed.append(row)
        SessionTurn.objects.bulk_update(changed, ["packed"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0013_compress_originals"),
    ]

    operations = [
        migrations.AlterField(
            model_name="sessionturn",
            name="packed",
            field=models.BinaryField(
                default=b"",
                help_text="The turn's figures and messages (pydantic's JSON), zlib-compressed.",
            ),
        ),
        migrations.RunPython(rewrite_turns, migrations.RunPython.noop),
    ]
