"""Uploaded originals are stored compressed: the bytes as uploaded come back exactly, in about
a quarter of the room."""

import zlib
from typing import Any

from django.db import migrations, models

# As ``storage.PACK_LEVEL`` was when this was written; a migration does not follow later changes.
LEVEL = 1


def _rewrite(apps: Any, change: Any) -> None:
    documents = apps.get_model("dashboard", "SessionDocument")
    for pk in documents.objects.values_list("pk", flat=True).iterator():
        original = documents.objects.values_list("original", flat=True).get(pk=pk)
        documents.objects.filter(pk=pk).update(original=change(bytes(original)))


def compress(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, lambda data: zlib.compress(data, LEVEL))


def decompress(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, zlib.decompress)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0012_quality_gates_prices_retention"),
    ]

    operations = [
        migrations.AlterField(
            model_name="sessiondocument",
            name="original",
            field=models.BinaryField(help_text="The bytes as uploaded, zlib-compressed."),
        ),
        migrations.RunPython(compress, decompress),
    ]
