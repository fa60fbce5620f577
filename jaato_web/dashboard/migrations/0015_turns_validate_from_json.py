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


def _message(record: dict[str, Any], names: dict[str, str], part_names: dict[str, str]) -> Any:
    message = _renamed(record, names)
    message["parts"] = [_renamed(part, part_names) for part in record["parts"]]
    return message


def _pack(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return zlib.compress(text.encode(), LEVEL)


def _rewrite(apps: StateApps, change: Any) -> None:
    """Every turn row through ``change`` (stored value in, stored value out, or None to leave
    the row as it is), a batch of rows at a time."""
    SessionTurn = apps.get_model("dashboard", "SessionTurn")
    pks = list(SessionTurn.objects.values_list("pk", flat=True))
    for start in range(0, len(pks), BATCH):
        changed = []
        for row in SessionTurn.objects.filter(pk__in=pks[start : start + BATCH]).only("packed"):
            value = change(json.loads(zlib.decompress(row.packed)))
            if value is not None:
                row.packed = _pack(value)
                changed.append(row)
        SessionTurn.objects.bulk_update(changed, ["packed"], batch_size=BATCH)


def _as_json(stored: Any) -> Any:
    """A turn stored as records, as ``[figures, messages]``; None for one stored so already
    (written by the storage code of this version, in an earlier migration)."""
    if not isinstance(stored, dict):
        return None
    messages = [_message(m, MESSAGE_FIELDS, PART_FIELDS) for m in stored["messages"]]
    return [stored["figures"], messages]


def _as_records(stored: Any) -> Any:
    if isinstance(stored, dict):
        return None
    figures, messages = stored
    back, part_back = _reversed(MESSAGE_FIELDS), _reversed(PART_FIELDS)
    return {"messages": [_message(m, back, part_back) for m in messages], "figures": figures}


def _reversed(names: dict[str, str]) -> dict[str, str]:
    return {new: old for old, new in names.items()}


def rewrite_turns(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rewrite(apps, _as_json)


def restore_records(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rewrite(apps, _as_records)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0014_run_retention_pending"),
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
        migrations.RunPython(rewrite_turns, restore_records),
    ]
