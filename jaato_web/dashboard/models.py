"""What the dashboard stores: uploads, sessions laid out for paging, policies, GC runs.

Big things are split so pages never load them: the original bytes and the engine's own
session document live in their own rows (``SessionDocument``), the history is stored as one row
per turn and the budget tree above the turns as one row per node, so a page of a 10,000-turn
session reads the same few rows as a page of a 10-turn one.

Uploaded originals are immutable: nothing updates a ``SessionDocument`` after it is written,
and GC runs write their own rows beside the session's.
"""

from __future__ import annotations

from functools import cached_property

from django.conf import settings
from django.db import models
from django.utils import timezone

import gcengine
from jaato_web.dashboard.storage import (
    NulSafeCharField,
    NulSafeJSONField,
    NulSafeTextField,
    StoredMessage,
    message_views,
    unpack_turn,
)


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class BackgroundWork(models.Model):
    """What uploads, runs and replays share: they may run in a worker, and pages poll them.

    A worker holds running work under a lease it keeps renewing (``background/lease.py``): when the
    lease lapses, the worker is gone, and the work is tried once more, then failed.
    """

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = NulSafeCharField(max_length=200, blank=True)
    error = NulSafeTextField(blank=True)
    claimed_by = models.CharField(
        max_length=100, blank=True, help_text="The worker process running it ('host:pid')."
    )
    lease_until = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="While running: when the worker's claim lapses unless it renews it.",
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker took it.")

    class Meta:
        abstract = True

    @property
    def is_pending(self) -> bool:
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)


class Project(models.Model):
    """A team workspace: every session, policy and run belongs to one."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(unique=True)
    default_policy = models.ForeignKey(
        "Policy",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Runs on every upload when GC on upload is enabled.",
    )
    run_default_policy_on_upload = models.BooleanField(default=True)
    retention_gates = NulSafeJSONField(
        null=True,
        blank=True,
        help_text="Least anchor retention per class ({'decisions': 0.95}); empty means the "
        "engine's defaults (gcengine.DEFAULT_RETENTION_GATES).",
    )
    prices = NulSafeJSONField(
        null=True,
        blank=True,
        help_text="The price table replays are costed with (gcengine.ModelPrice entries); "
        "empty means the engine's defaults (gcengine.DEFAULT_PRICES).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class SummaryProvider(models.Model):
    """The provider that writes a project's summaries (the ``provider`` summarizer); a project
    without one has model-written summaries off. Only an admin sets it; the key is write-only
    (never shown, exported or logged). A table of its own, so nothing that reads projects
    reads the key."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="summary_provider"
    )
    protocol = models.CharField(
        max_length=20, choices=[("openai", "OpenAI-compatible"), ("anthropic", "Anthropic")]
    )
    model = models.CharField(max_length=200)
    base_url = models.URLField(max_length=500, blank=True, help_text="Empty: the provider's API.")
    api_key = models.CharField(
        max_length=500,
        blank=True,
        help_text="Write-only. Empty: JAATO_GC_PROVIDER_API_KEY where the app runs.",
    )
    timeout = models.FloatField(default=60.0)

    def __str__(self) -> str:
        return f"{self.get_protocol_display()} {self.model}"


class AgentSession(models.Model):
    """An uploaded agent session, with the figures list pages show."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    label = NulSafeCharField(max_length=300, help_text="The uploaded file's name.")
    sha256 = NulSafeCharField(max_length=64)
    size_bytes = models.PositiveBigIntegerField()
    source_format = NulSafeCharField(max_length=40)
    format_version = NulSafeCharField(max_length=40, blank=True)
    model_name = NulSafeCharField(max_length=200, blank=True)
    engine_session_id = NulSafeCharField(max_length=200, blank=True)
    context_limit = models.PositiveBigIntegerField()
    context_limit_origin = models.CharField(max_length=40)
    turn_count = models.PositiveIntegerField()
    message_count = models.PositiveIntegerField()
    total_tokens = models.PositiveBigIntegerField()
    locked_tokens = models.PositiveBigIntegerField()
    preservable_tokens = models.PositiveBigIntegerField()
    eligible_tokens = models.PositiveBigIntegerField()
    utilization_percent = models.FloatField()
    token_counter = models.CharField(max_length=100)
    drift = NulSafeJSONField(default=dict, help_text="Recorded vs counted token figures.")
    warnings = NulSafeJSONField(default=list)
    agent_state = NulSafeJSONField(
        default=dict,
        help_text="Interrupted turn, sub-agents, compactions: storage.StoredAgentState.",
    )
    derived_from_run = models.ForeignKey(
        "GCRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="derived_sessions",
        help_text="The run whose stash this session was restored from, if it was.",
    )
    restored_segments = NulSafeJSONField(
        default=list, blank=True, help_text="The stashed segments put back, by segment id."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="Hidden from lists since then; delete removes it."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "sha256"], name="session_unique_upload"),
        ]
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return self.label


class SessionDocument(models.Model):
    """The bytes as uploaded and the engine's reading of them; written once, never changed."""

    session = models.OneToOneField(
        AgentSession, on_delete=models.CASCADE, primary_key=True, related_name="document"
    )
    original = models.BinaryField(help_text="The bytes as uploaded, zstd-compressed.")
    engine_session = models.BinaryField(help_text="gcengine.Session as JSON, zstd-compressed.")

    def __str__(self) -> str:
        return f"document of session {self.session_id}"


class SessionAnchors(models.Model):
    """What scoring reads of a session's messages (``gcengine.anchors_record``: its anchor
    context, vocabulary and each message's anchors), stored by its upload or its first score
    and read back by every later score instead of reading the session again. Written by the
    extractor ``extractor`` (``gcengine.extractor_version``): another extractor's record is
    read afresh and replaced. The session's file never changes, so its row is its key."""

    session = models.OneToOneField(
        AgentSession, on_delete=models.CASCADE, primary_key=True, related_name="anchors"
    )
    extractor = models.CharField(max_length=64)
    record = models.BinaryField(help_text="gcengine.anchors_record as JSON, zstd-compressed.")

    def __str__(self) -> str:
        return f"anchors of session {self.session_id}"


class SessionTurn(models.Model):
    """One turn of a session's history: its messages, kept here and nowhere else, with each
    message's figure; the history view and the budget tree's turns are drawn from these rows."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="turns")
    position = models.PositiveIntegerField(help_text="0-based place in the history.")
    turn_index = models.IntegerField(null=True, help_text="The stable turn index, if any.")
    kind = models.CharField(max_length=20)
    budget_key = NulSafeCharField(
        max_length=200, blank=True, help_text="The turn's key in the budget tree (turn_<index>)."
    )
    budget_label = NulSafeCharField(max_length=300, blank=True)
    budget_policy = models.CharField(
        max_length=20, blank=True, help_text="The turn's policy in the tree (partial if mixed)."
    )
    message_count = models.PositiveIntegerField(default=0)
    tokens = models.PositiveBigIntegerField()
    policy = models.CharField(max_length=20, help_text="The most protective policy inside.")
    tool_calls = models.PositiveIntegerField(default=0)
    preview = NulSafeCharField(max_length=300, blank=True)
    packed = models.BinaryField(
        default=b"",
        help_text="The turn's figures and messages (pydantic's JSON), zstd-compressed.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="turn_unique_position"),
        ]
        indexes = [models.Index(fields=["session", "budget_key"])]

    def __str__(self) -> str:
        return f"turn {self.turn_index} of {self.session_id}"

    @cached_property
    def messages(self) -> list[StoredMessage]:
        """The turn's messages as the history view shows them."""
        return message_views(*unpack_turn(self.packed))


class SessionPin(models.Model):
    """A turn or message pinned in one session: every GC run, preview and replay of that
    session keeps it, whatever the policy. Turns are named by their stable index, so a pin
    still means the same turn after runs removed others; a message by its id."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="pins")
    turn_index = models.IntegerField(null=True, blank=True)
    message_id = NulSafeCharField(max_length=200, blank=True)
    author = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "turn_index"],
                condition=models.Q(turn_index__isnull=False),
                name="session_pin_unique_turn",
            ),
            models.UniqueConstraint(
                fields=["session", "message_id"],
                condition=~models.Q(message_id=""),
                name="session_pin_unique_message",
            ),
            models.CheckConstraint(
                condition=models.Q(turn_index__isnull=False, message_id="")
                | models.Q(turn_index__isnull=True) & ~models.Q(message_id=""),
                name="session_pin_turn_or_message",
            ),
        ]

    def __str__(self) -> str:
        if self.turn_index is not None:
            return f"turn {self.turn_index} of session {self.session_id}"
        return f"message {self.message_id} of session {self.session_id}"


class BudgetNode(models.Model):
    """One entry of a budget tree: the session's own tree, or the one a run left behind."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(
        "GCRun", null=True, on_delete=models.CASCADE, related_name="budget_nodes"
    )
    path = NulSafeCharField(max_length=400, help_text="Keys from the root, joined by '/'.")
    parent_path = NulSafeCharField(max_length=400, blank=True)
    position = models.PositiveIntegerField()
    depth = models.PositiveSmallIntegerField()
    key = NulSafeCharField(max_length=200)
    label = NulSafeCharField(max_length=300, blank=True)
    policy = models.CharField(max_length=20)
    tokens = models.PositiveBigIntegerField()
    child_count = models.PositiveIntegerField()
    message_ids = NulSafeJSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["session", "run", "parent_path", "position"])]

    def __str__(self) -> str:
        return self.path


class PolicyKind(models.TextChoices):
    """What a policy's versions hold: a ``gc.json`` for GC, or the context planner's settings
    (``gcengine.PlannerConfig``). Both are versioned, compared, restored and reviewed alike."""

    GC = "gc", "GC policy"
    PLANNER = "planner", "planner config"


class Policy(models.Model):
    """A named ``gc.json`` (or planner config, by ``kind``); every save is a new
    ``PolicyVersion``."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="policies")
    name = models.CharField(max_length=200)
    kind = models.CharField(
        max_length=20,
        choices=PolicyKind.choices,
        default=PolicyKind.GC,
        help_text="gc: versions are gc.json files; planner: context planner settings.",
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="Hidden from lists and pickers since then."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "name"], name="policy_unique_kind_name"
            ),
        ]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.name

    @property
    def is_planner(self) -> bool:
        return self.kind == PolicyKind.PLANNER


class PolicyVersion(models.Model):
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    config = NulSafeJSONField(
        help_text="The gc.json as gcengine.dump_gc_config writes it, or the planner settings "
        "as gcengine.PlannerConfig dumps them."
    )
    # A person's message has no NUL (refused); one the dashboard writes may name message ids.
    message = NulSafeCharField(max_length=500, blank=True)
    author = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["policy", "number"], name="policy_version_unique"),
        ]
        ordering = ["policy", "-number"]

    def __str__(self) -> str:
        return f"{self.policy.name} v{self.number}"


class GCRun(BackgroundWork):
    """One GC run of a policy on a session, with what it removed and why."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="runs")
    policy_version = models.ForeignKey(
        PolicyVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    policy_label = NulSafeCharField(
        max_length=220,
        blank=True,
        help_text="The version as named when run ('Budget 80/60 v3'); empty for a pasted "
        "gc.json. Kept when the version is deleted.",
    )
    config = NulSafeJSONField(help_text="The exact gc.json the run used.")
    plugin = models.CharField(max_length=100)
    trigger = models.CharField(max_length=40, default="manual", help_text="manual or upload")
    tokens_before = models.PositiveBigIntegerField(null=True)
    tokens_after = models.PositiveBigIntegerField(null=True)
    tokens_freed = models.BigIntegerField(null=True)
    items_collected = models.PositiveIntegerField(null=True)
    turns_after = models.PositiveIntegerField(null=True)
    context_limit = models.PositiveBigIntegerField(null=True)
    compaction_id = NulSafeCharField(
        max_length=200,
        blank=True,
        help_text="Run on the history just before this compaction the agent performed.",
    )
    # What the run left, by what may remove it: why a run that stops above its target or
    # the window stopped there. Empty for runs stored before these figures were kept.
    locked_after = models.PositiveBigIntegerField(null=True)
    preservable_after = models.PositiveBigIntegerField(null=True)
    eligible_after = models.PositiveBigIntegerField(null=True)
    result = NulSafeJSONField(null=True, help_text="gcengine.GCResult without its removal list.")
    retention = NulSafeJSONField(
        null=True,
        blank=True,
        help_text="gcengine.AnchorRetention of what the run took out of view; empty for runs "
        "stored before it was scored.",
    )
    retention_pending = models.BooleanField(
        default=False,
        help_text="The run is stored and its worker is scoring its anchor retention (under "
        "the run's lease, so a worker that stops is noticed).",
    )
    session_after = models.BinaryField(
        null=True,
        help_text="The session after the run: its history as positions in the session's "
        "(and what the run inserted), zstd JSON.",
    )
    after_turns = models.BinaryField(
        null=True,
        help_text="The conversation the run left, by turn: positions of session turns it left "
        "alone, the others written out (storage.after_turns), zstd JSON.",
    )
    stash = models.BinaryField(
        null=True,
        blank=True,
        help_text="What a reachability run stashed, gcengine.Stash JSON, zstd-compressed.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True)
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="Hidden from the session's runs since then."
    )

    class Meta:
        indexes = [models.Index(fields=["session", "-created_at"])]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.plugin}) on {self.session_id}"

    @property
    def stashes(self) -> bool:
        """Whether its strategy puts what it takes in a stash and says why each item went:
        the run then keeps a stash, reasons and kept segments, and its pages show them."""
        try:
            return gcengine.strategy_spec(self.plugin).stashes
        except KeyError:  # a plugin of another package
            return False

    def percent(self, tokens: int | None) -> float | None:
        if tokens is None or not self.context_limit:
            return None
        return tokens / self.context_limit * 100


class Removal(models.Model):
    """One item of a run's removal ledger."""

    # Indexed by the unique (run, seq) below, which begins with it: an index of its own cost
    # every insert of a 13,000-row ledger and served no query the other does not.
    run = models.ForeignKey(
        GCRun, on_delete=models.CASCADE, related_name="removals", db_index=False
    )
    seq = models.PositiveIntegerField()
    source = models.CharField(max_length=40)
    child_key = NulSafeCharField(max_length=400, blank=True)
    reason = models.CharField(max_length=60)
    tokens_freed = models.BigIntegerField()
    message_ids = NulSafeJSONField(default=list)
    turn_index = models.IntegerField(null=True)
    turn_position = models.PositiveIntegerField(
        null=True, help_text="Position of the turn in the session before the run."
    )
    # Why a reachability run took the item (empty for other strategies).
    reachable = models.BooleanField(null=True)
    score = models.FloatField(null=True)
    explanation = NulSafeTextField(blank=True)
    action = models.CharField(max_length=20, blank=True, help_text="stashed or deleted")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="removal_unique_seq"),
        ]
        indexes = [models.Index(fields=["run", "turn_position"])]

    def __str__(self) -> str:
        return f"{self.reason}: {self.child_key or self.source}"


class StashedSegment(models.Model):
    """A segment a reachability run stashed, as its stash page lists and searches it; the
    messages themselves are in ``GCRun.stash``."""

    run = models.ForeignKey(GCRun, on_delete=models.CASCADE, related_name="stashed_segments")
    removal = models.OneToOneField(
        Removal, on_delete=models.CASCADE, related_name="stashed", help_text="Its ledger item."
    )
    segment_id = NulSafeCharField(max_length=400)
    kind = models.CharField(max_length=20)
    turn_index = models.IntegerField(null=True)
    tokens = models.PositiveBigIntegerField()
    score = models.FloatField()
    reachable = models.BooleanField()
    reason = NulSafeTextField()
    anchors = NulSafeJSONField(default=list, help_text="Its anchors as written.")
    anchors_text = NulSafeTextField(blank=True, help_text="The anchors, one a line, to search.")
    text = NulSafeTextField(help_text="What it says, tools' arguments and results included.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "segment_id"], name="stashed_unique_segment"),
        ]
        ordering = ["run", "removal__seq"]

    def __str__(self) -> str:
        return self.segment_id


class KeptSegment(models.Model):
    """A segment a reachability run kept, and why (its "why kept?")."""

    run = models.ForeignKey(GCRun, on_delete=models.CASCADE, related_name="kept_segments")
    position = models.PositiveIntegerField(help_text="Its place among the session's segments.")
    segment_id = NulSafeCharField(max_length=400)
    kind = models.CharField(max_length=20)
    turn_index = models.IntegerField(null=True)
    tokens = models.PositiveBigIntegerField()
    score = models.FloatField()
    reachable = models.BooleanField()
    root = models.BooleanField()
    reason = NulSafeTextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="kept_unique_position"),
        ]
        indexes = [models.Index(fields=["run", "turn_index"])]
        ordering = ["run", "position"]

    def __str__(self) -> str:
        return self.segment_id


class Summary(models.Model):
    """A summary in the chain a run leaves: the ones it inherited and the one it wrote."""

    run = models.ForeignKey(GCRun, on_delete=models.CASCADE, related_name="summaries")
    number = models.PositiveIntegerField(null=True)
    message_id = NulSafeCharField(max_length=100)
    text = NulSafeTextField()
    tokens = models.PositiveBigIntegerField()
    covers_turns = NulSafeJSONField(default=list)
    covers_summary = NulSafeJSONField(null=True, help_text="The earlier summary it folds in.")
    summarizer = models.CharField(max_length=100, blank=True)
    written_by_run = models.BooleanField(default=False)
    inserted_before_position = models.PositiveIntegerField(
        null=True, help_text="Where it went in: before this turn of the session before the run."
    )

    class Meta:
        ordering = ["run", "number"]
        verbose_name_plural = "summaries"

    def __str__(self) -> str:
        return f"gc_summary_{self.number}"


class Replay(BackgroundWork):
    """A turn-by-turn replay of a session under a policy (the sawtooth or ripple chart).

    One replay per session and gc.json: a version whose gc.json was replayed already gets that
    replay, which then names the version asked for last (the chart is the same).
    """

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="replays")
    policy_version = models.ForeignKey(
        PolicyVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="replays"
    )
    policy_label = NulSafeCharField(
        max_length=220,
        blank=True,
        help_text="The version as named when replayed ('Budget 80/60 v3'); empty for a "
        "pasted gc.json. Kept when the version is deleted.",
    )
    config = NulSafeJSONField()
    config_digest = models.CharField(max_length=64)
    context_limit = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="A window tried instead of the session's own, if any."
    )
    compaction_id = NulSafeCharField(
        max_length=200,
        blank=True,
        help_text="Replayed on the history just before this compaction the agent performed.",
    )
    series = NulSafeJSONField(null=True, help_text="Steps and events, as the chart draws them.")
    retention_pending = models.BooleanField(
        default=False,
        help_text="The replay is drawn and its worker is scoring each collection's anchor "
        "retention (under the replay's lease, so a worker that stops is noticed).",
    )
    unscored_because = models.CharField(
        max_length=300,
        blank=True,
        help_text="Why its collections have no anchor retention, when scoring them did not "
        "finish; empty otherwise.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "config_digest"], name="replay_unique"),
        ]

    def __str__(self) -> str:
        return f"replay of {self.session_id}"


class PolicyRanking(BackgroundWork):
    """Policy versions ranked over sessions (the compare page's ranking), worked out by a
    worker and kept, so the same ranking asked for again is read back instead of replayed.

    One per project and inputs: the sessions (as uploaded), the versions in the order given,
    the order ranked by and the window (``inputs_digest``). Its progress is counted in
    replays, one per version and session.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rankings")
    inputs_digest = models.CharField(max_length=64)
    session_ids = NulSafeJSONField(help_text="The sessions ranked over, the first first.")
    version_ids = NulSafeJSONField(help_text="The policy versions ranked, in the order asked.")
    by = models.CharField(max_length=20, help_text="What is ranked first (services.RANK_ORDERS).")
    context_limit = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="A window tried instead of each session's own, if any."
    )
    replays_done = models.PositiveIntegerField(default=0)
    replays_total = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = NulSafeJSONField(
        null=True, help_text="The ranking as the API answers it (previews.ranking_record)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "inputs_digest"], name="policy_ranking_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"ranking {self.pk} ({self.status})"

    @property
    def elapsed_seconds(self) -> float | None:
        """How long the worker has worked on it (until it ended, once it has)."""
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return max((end - self.started_at).total_seconds(), 0.0)


class IngestJob(BackgroundWork):
    """A large upload waiting to be read in the background.

    The bytes wait beside it (``IngestUpload``), not in a session, so a file that turns out to
    be malformed leaves nothing half-stored: the job keeps only its error and the bytes are
    dropped.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="ingest_jobs")
    filename = NulSafeCharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    size_bytes = models.PositiveBigIntegerField()
    error_path = NulSafeCharField(max_length=400, blank=True)
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"ingest {self.filename} ({self.status})"


class Worker(models.Model):
    """A task worker process as it last said it was alive, every few seconds, busy or idle:
    health answers and pages tell work waiting for a busy worker from work nobody will take."""

    name = models.CharField(max_length=100, unique=True, help_text="'host:pid'")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.name


class IngestUpload(models.Model):
    """The bytes of an upload waiting to be read, in a row of their own: the job's row changes
    every few seconds while a worker reads it (progress, its lease), and SQLite writes a row
    anew on every update, a 45 MB upload and all. Deleted when the job ends.

    The bytes are the original packed as its session keeps it (``storage.pack_original``):
    the session's document copies them from here in the database, so the worker never holds
    the packed original beside the session it is storing."""

    job = models.OneToOneField(
        IngestJob, on_delete=models.CASCADE, primary_key=True, related_name="upload"
    )
    data = models.BinaryField()

    def __str__(self) -> str:
        return f"bytes of upload {self.job_id}"


class AuditAction(models.TextChoices):
    UPLOAD = "upload", "Upload"
    RUN = "run", "GC run"
    REPLAY = "replay", "Replay"
    CANCEL = "cancel", "Cancelled"
    POLICY_SAVE = "policy_save", "Policy save"
    POLICY_DEFAULT = "policy_default", "Default policy"
    PIN = "pin", "Pin"
    UNPIN = "unpin", "Unpin"
    COMMENT = "comment", "Comment"
    VERDICT = "verdict", "Verdict"
    MEMBER_ADD = "member_add", "Member added"
    MEMBER_ROLE = "member_role", "Role changed"
    MEMBER_REMOVE = "member_remove", "Member removed"
    PROJECT_CREATE = "project_create", "Project created"
    TOKEN_CREATE = "token_create", "Token created"
    TOKEN_REVOKE = "token_revoke", "Token revoked"
    ARCHIVE = "archive", "Archived"
    UNARCHIVE = "unarchive", "Unarchived"
    DELETE = "delete", "Deleted"
    RESTORE = "restore", "Restored from a stash"
    QUALITY = "quality", "Quality gates and prices"


class AuditEvent(models.Model):
    """Who did what, when, in which project. Written in the same transaction as the change."""

    project = models.ForeignKey(
        Project, null=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = NulSafeCharField(
        max_length=150, help_text="Kept when the user is deleted; 'system' for automatic work."
    )
    action = models.CharField(max_length=30, choices=AuditAction.choices)
    target = NulSafeCharField(max_length=300, help_text="What it acted on, in words.")
    target_url = models.CharField(max_length=300, blank=True)
    detail = NulSafeJSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        # The log began in the teams app; the table kept its name when the model moved here.
        db_table = "teams_auditevent"
        indexes = [
            models.Index(fields=["project", "-created_at"], name="teams_audit_project_8f0293_idx")
        ]
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target}"
