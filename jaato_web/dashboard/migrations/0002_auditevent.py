"""The audit log moves here from the teams app, so the services that write it sit below
teams; its table keeps its name, so nothing changes in the database."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0001_initial"),
        ("teams", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "actor_name",
                            models.CharField(
                                help_text="Kept when the user is deleted; 'system' for automatic work.",
                                max_length=150,
                            ),
                        ),
                        (
                            "action",
                            models.CharField(
                                choices=[
                                    ("upload", "Upload"),
                                    ("run", "GC run"),
                                    ("replay", "Replay"),
                                    ("policy_save", "Policy save"),
                                    ("policy_default", "Default policy"),
                                    ("pin", "Pin"),
                                    ("unpin", "Unpin"),
                                    ("comment", "Comment"),
                                    ("verdict", "Verdict"),
                                    ("member_add", "Member added"),
                                    ("member_role", "Role changed"),
                                    ("member_remove", "Member removed"),
                                    ("project_create", "Project created"),
                                    ("token_create", "Token created"),
                                    ("token_revoke", "Token revoked"),
                                ],
                                max_length=30,
                            ),
                        ),
                        (
                            "target",
                            models.CharField(
                                help_text="What it acted on, in words.", max_length=300
                            ),
                        ),
                        ("target_url", models.CharField(blank=True, max_length=300)),
                        ("detail", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        (
                            "actor",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="audit_events",
                                to="dashboard.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "teams_auditevent",
                        "ordering": ["-created_at", "-pk"],
                        "indexes": [
                            models.Index(
                                fields=["project", "-created_at"],
                                name="teams_audit_project_8f0293_idx",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
