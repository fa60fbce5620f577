"""Sessions keep their history once, turn by turn, and their tree above the turns only.

Each turn row holds its messages as the engine's records with their figures, compressed, in
place of the history view's JSON; the session's document keeps everything but the history; the
budget tree's turns and messages are no longer rows of their own (the turn rows hold them), and
a run's after-tree keeps only the turns it changed (``after_turns``). Stored sessions and runs
are rewritten here, so every page, run and export works on them as on new ones.
"""

import zlib
from typing import Any

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

import gcengine
from jaato_web.dashboard import storage

CONVERSATION = "conversation/"
# Values are packed by the storage code of today, then stored as zlib packed them when this was
# written: the migrations after this one read zlib (and a later one compresses them anew).
ZLIB_LEVEL = 1


def _as_zlib(packed: bytes) -> bytes:
    return zlib.compress(storage.decompressed(packed), ZLIB_LEVEL)


def compact_stored_sessions(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    AgentSession = apps.get_model("dashboard", "AgentSession")
    SessionDocument = apps.get_model("dashboard", "SessionDocument")
    SessionTurn = apps.get_model("dashboard", "SessionTurn")
    BudgetNode = apps.get_model("dashboard", "BudgetNode")
    GCRun = apps.get_model("dashboard", "GCRun")
    for session_id in AgentSession.objects.values_list("pk", flat=True).iterator():
        document = SessionDocument.objects.filter(session_id=session_id).first()
        if document is None:
            continue
        engine = gcengine.Session.model_validate_json(zlib.decompress(document.engine_session))
        turns = {turn.position: turn for turn in SessionTurn.objects.filter(session_id=session_id)}
        changed = []
        for row in storage.turn_rows(engine):
            turn = turns.get(row.position)
            if turn is None:
                continue
            turn.packed = _as_zlib(row.packed)
            turn.budget_key = row.budget_key[:200]
            turn.budget_label = row.budget_label[:300]
            turn.budget_policy = row.budget_policy
            turn.message_count = row.message_count
            changed.append(turn)
        SessionTurn.objects.bulk_update(
            changed,
            ["packed", "budget_key", "budget_label", "budget_policy", "message_count"],
            batch_size=500,
        )
        document.engine_session = _as_zlib(storage.pack_session(engine))
        document.save(update_fields=["engine_session"])
        BudgetNode.objects.filter(
            session_id=session_id, run=None, path__startswith=CONVERSATION
        ).delete()
        for run in GCRun.objects.filter(session_id=session_id):
            _compact_run(run, engine, BudgetNode)


def _compact_run(run: Any, engine: gcengine.Session, BudgetNode: Any) -> None:
    """A run's after-tree as written-out turns, and its collected session by positions."""
    nodes = BudgetNode.objects.filter(run=run, path__startswith=CONVERSATION).order_by(
        "depth", "position"
    )
    leaves: dict[str, list[list[Any]]] = {}
    turns: list[Any] = []
    for node in nodes:
        if node.depth == 1:
            turns.append(node)
        else:
            leaves.setdefault(node.parent_path, []).append(
                [node.key, node.label, node.policy, node.tokens]
            )
    if turns:
        run.after_turns = _as_zlib(
            storage.packed(
                [
                    [turn.key, turn.label, turn.policy, turn.tokens, leaves.get(turn.path, [])]
                    for turn in turns
                ]
            )
        )
    if run.session_after is not None:
        after = gcengine.Session.model_validate_json(zlib.decompress(run.session_after))
        run.session_after = _as_zlib(storage.pack_session_after(after, engine))
    run.save(update_fields=["after_turns", "session_after"])
    nodes.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0010_reachability_stash"),
    ]

    operations = [
        migrations.AddField(
            model_name="gcrun",
            name="after_turns",
            field=models.BinaryField(
                help_text="The conversation the run left, by turn: positions of session turns it left alone, the others written out (storage.after_turns), zlib JSON.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="sessionturn",
            name="budget_key",
            field=models.CharField(
                blank=True,
                help_text="The turn's key in the budget tree (turn_<index>).",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="sessionturn",
            name="budget_label",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="sessionturn",
            name="budget_policy",
            field=models.CharField(
                blank=True,
                help_text="The turn's policy in the tree (partial if mixed).",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="sessionturn",
            name="message_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="sessionturn",
            name="packed",
            field=models.BinaryField(
                default=b"",
                help_text="The turn's messages (gcengine records) and their figures, zlib JSON.",
            ),
        ),
        migrations.AlterField(
            model_name="gcrun",
            name="session_after",
            field=models.BinaryField(
                help_text="The session after the run: its history as positions in the session's (and what the run inserted), zlib JSON.",
                null=True,
            ),
        ),
        migrations.RunPython(compact_stored_sessions, migrations.RunPython.noop, elidable=False),
        migrations.RemoveField(
            model_name="sessionturn",
            name="messages",
        ),
        migrations.AddIndex(
            model_name="sessionturn",
            index=models.Index(
                fields=["session", "budget_key"], name="dashboard_s_session_0e2900_idx"
            ),
        ),
    ]
