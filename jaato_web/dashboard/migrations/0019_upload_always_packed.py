"""An upload waiting for a worker is kept packed as its session keeps it: the rows still holding
the bytes as uploaded are packed, and the flag that told the two apart goes."""

from typing import Any

from django.db import migrations

from jaato_web.dashboard.storage import pack_original


def pack_waiting_uploads(apps: Any, schema_editor: Any) -> None:
    uploads = apps.get_model("dashboard", "IngestUpload")
    for job_id in uploads.objects.filter(packed=False).values_list("job_id", flat=True):
        data = bytes(uploads.objects.values_list("data", flat=True).get(job_id=job_id))
        uploads.objects.filter(job_id=job_id).update(data=pack_original(data), packed=True)


def flag_uploads_packed(apps: Any, schema_editor: Any) -> None:
    """Going back, every waiting upload is packed: so the restored flag says."""
    apps.get_model("dashboard", "IngestUpload").objects.update(packed=True)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0018_upload_packed_original"),
    ]

    operations = [
        migrations.RunPython(pack_waiting_uploads, flag_uploads_packed),
        migrations.RemoveField(model_name="ingestupload", name="packed"),
    ]
