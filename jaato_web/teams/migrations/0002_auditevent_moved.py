"""The audit log's model now belongs to the dashboard app (same table); only the teams
app's record of it goes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0001_initial"),
        ("dashboard", "0002_auditevent"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AuditEvent")],
            database_operations=[],
        ),
    ]
