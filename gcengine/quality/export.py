"""A policy as the nearest settings of other frameworks, with every key that does not map and
why.

No other framework has JAATO's model (turns, tiers, pins, a trigger and a target), so an
export is a translation: each setting says which ``gc.json`` keys it comes from and whether it
is exact or the nearest there is, and every key of the policy that has no counterpart is
listed with the reason. Targets that count absolute tokens need the model's context window.

Sources: Anthropic's context editing and compaction pages, OpenAI's compaction guide,
LangChain v1's middleware reference, Google ADK's ``EventsCompactionConfig``, Letta's
``compaction_settings`` and Claude Code's environment variables, as of November 2026.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from gcengine.config import GC_JSON_FIELDS, GCConfig, dump_gc_config
from gcengine.context_limits import context_limit_for_model
from gcengine.errors import ConfigError
from gcengine.strategies import strategy_spec
from gcengine.window import context_limit_checked

ANTHROPIC_COMPACTION_MINIMUM = 50_000
# ADK keeps raw events, not turns: a turn is a user event and at least one model event.
ADK_EVENTS_PER_TURN = 2
# Letta clips the summary in characters; about four make a token of English text.
CHARS_PER_TOKEN = 4


class ExportSetting(BaseModel):
    """One setting of the target, the policy keys it comes from, and whether it says what the
    policy says (``exact``) or is the nearest the target has."""

    name: str
    value: Any
    from_keys: list[str]
    exact: bool = True
    note: str = ""


class UnmappedSetting(BaseModel):
    """A policy key the target has nothing for, with its value and why."""

    key: str
    value: Any
    why: str


class TargetExport(BaseModel):
    target: str
    label: str
    docs: str
    available: bool = True
    refusal: str | None = Field(default=None, description="why the policy cannot be exported")
    settings: list[ExportSetting] = Field(default_factory=list)
    unmapped: list[UnmappedSetting] = Field(default_factory=list)
    snippet: str = ""


class PolicyExport(BaseModel):
    context_window: int
    targets: list[TargetExport]


@dataclass
class _Draft:
    """A target being filled in: settings as they are decided, reasons for the keys left."""

    policy: dict[str, Any]
    settings: list[ExportSetting] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    def set(
        self, name: str, value: Any, keys: list[str], *, exact: bool = True, note: str = ""
    ) -> None:
        self.settings.append(
            ExportSetting(name=name, value=value, from_keys=keys, exact=exact, note=note)
        )

    def unmapped(self, reason: str, *keys: str) -> None:
        for key in keys:
            self.reasons.setdefault(key, reason)

    def finish(
        self, target: str, label: str, docs: str, snippet: str, refusal: str | None = None
    ) -> TargetExport:
        """Every policy key is either in a setting or listed as unmapped, with its reason
        (the generic one when the target said nothing about it)."""
        mapped = {key for setting in self.settings for key in setting.from_keys}
        unmapped = [
            UnmappedSetting(
                key=key,
                value=value,
                why=self.reasons.get(key, f"{label} has no setting for this"),
            )
            for key, value in self.policy.items()
            if key not in mapped
        ]
        return TargetExport(
            target=target,
            label=label,
            docs=docs,
            available=refusal is None,
            refusal=refusal,
            settings=[] if refusal else self.settings,
            unmapped=unmapped,
            snippet="" if refusal else snippet,
        )


def _tokens(percent: float, window: int) -> int:
    return round(percent / 100 * window)


def _trigger(config: GCConfig, draft: _Draft) -> tuple[float, list[str]]:
    """The usage, in percent, at which the policy collects, and the keys that say so: the
    threshold, or in continuous mode (no pressure threshold) the target, which every
    collection starts above and comes back to."""
    if config.continuous_mode:
        draft.unmapped(
            "in continuous mode a collection starts as soon as usage passes the target; the "
            "threshold is not used",
            "threshold_percent",
        )
        return config.target_percent, ["target_percent", "pressure_percent"]
    return config.threshold_percent, ["threshold_percent"]


def _summarizes(config: GCConfig) -> bool:
    """Whether the policy's strategy writes summaries (the targets' compaction does): one that
    writes them only on request, when the policy names a summarizer."""
    spec = strategy_spec(config.plugin)
    return spec.summarizes and (
        not spec.summary_on_request or bool(config.plugin_config.get("summarizer"))
    )


_AGENT_NAME = "names the agent for JAATO; it changes nothing a collection does"
_NOTICES = "nothing is written into the conversation about a collection"


def _anthropic_editing(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    percent, trigger_keys = _trigger(config, draft)
    trigger = _tokens(percent, window)
    clear = _tokens(percent - config.target_percent, window)
    edit: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": trigger},
        "clear_at_least": {"type": "input_tokens", "value": clear},
        "keep": {"type": "tool_uses", "value": max(config.preserve_recent_turns, 1)},
        "clear_tool_inputs": True,
    }
    draft.set(
        "type",
        "clear_tool_uses_20250919",
        ["type"],
        exact=False,
        note="clears the oldest tool calls and results, leaving a placeholder; "
        f"{config.plugin} removes whole turns and tool exchanges",
    )
    draft.set("trigger", edit["trigger"], trigger_keys)
    draft.set(
        "clear_at_least",
        edit["clear_at_least"],
        ["target_percent"],
        exact=False,
        note="at least the tokens between the trigger and the target; it clears whole tool "
        "results, so it may clear more",
    )
    draft.set(
        "keep",
        edit["keep"],
        ["preserve_recent_turns"],
        exact=False,
        note="counts tool uses, not turns: a recent turn without a tool use is not protected",
    )
    draft.set("clear_tool_inputs", True, ["type"], exact=False, note="the policy removes calls too")
    draft.unmapped(
        "context editing clears tool results only; it never removes other content",
        "pressure_percent",
    )
    draft.unmapped(
        "pins name turns and messages of one session; context editing can only keep tools by "
        "name (exclude_tools)",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped("its triggers count input tokens or tool uses, not turns", "max_turns")
    draft.unmapped(
        "an edit in the request applies whenever its trigger is passed; to collect only on "
        "demand, send it only on the requests that should collect",
        "auto_trigger",
    )
    draft.unmapped(
        "edits apply to every request as it is sent, so there is no other check",
        "check_before_send",
    )
    draft.unmapped(
        "context editing never summarizes (see Anthropic compaction)",
        "summarize_middle_turns",
        "max_summary_tokens",
        "plugin_config",
    )
    draft.unmapped(
        f"{_NOTICES} but the placeholder; the response lists what went in "
        "context_management.applied_edits",
        "notify_on_gc",
        "notification_template",
        "noop_notification_template",
    )
    draft.unmapped(_AGENT_NAME, "agent_name")
    snippet = _anthropic_request("context-management-2025-06-27", edit)
    return draft.finish(
        "anthropic_context_editing",
        "Anthropic context editing",
        "https://platform.claude.com/docs/en/build-with-claude/context-editing",
        snippet,
    )


def _anthropic_request(beta: str, edit: dict[str, Any]) -> str:
    """The request part an Anthropic context-management edit goes in, with its beta header."""
    return f"# header: anthropic-beta: {beta}\n" + json.dumps(
        {"context_management": {"edits": [edit]}}, indent=2
    )


def _anthropic_compaction(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    percent, trigger_keys = _trigger(config, draft)
    wanted = _tokens(percent, window)
    trigger = max(ANTHROPIC_COMPACTION_MINIMUM, wanted)
    edit: dict[str, Any] = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": trigger},
        "pause_after_compaction": config.preserve_recent_turns > 0,
    }
    summarizes = _summarizes(config)
    draft.set(
        "type",
        "compact_20260112",
        ["type"],
        exact=summarizes,
        note="" if summarizes else f"compaction always summarizes; {config.plugin} does not",
    )
    draft.set(
        "trigger",
        edit["trigger"],
        trigger_keys,
        exact=trigger == wanted,
        note=""
        if trigger == wanted
        else f"raised to the minimum {ANTHROPIC_COMPACTION_MINIMUM:,} from {wanted:,}",
    )
    if config.preserve_recent_turns > 0:
        draft.set(
            "pause_after_compaction",
            True,
            ["preserve_recent_turns"],
            exact=False,
            note="the response stops after compacting: append the last "
            + (
                "turn"
                if config.preserve_recent_turns == 1
                else f"{config.preserve_recent_turns} turns"
            )
            + " again yourself",
        )
    if config.max_summary_tokens is not None:
        edit["instructions"] = (
            f"Summarize the conversation in at most {config.max_summary_tokens} tokens."
        )
        draft.set(
            "instructions",
            edit["instructions"],
            ["max_summary_tokens"],
            exact=False,
            note="replaces the default summary prompt; the length is a request, not a limit",
        )
    draft.unmapped(
        "the server decides how much the summary keeps; there is no target size",
        "target_percent",
        "pressure_percent",
        "summarize_middle_turns",
    )
    draft.unmapped(
        "only the instructions can ask the summary to keep something; nothing is kept for sure",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped("its trigger counts input tokens, not turns", "max_turns")
    draft.unmapped(
        "compaction applies whenever its trigger is passed; for on-demand compaction use the "
        "compact-2026-09-04 mechanism",
        "auto_trigger",
    )
    draft.unmapped("the trigger is checked on every request as it is sent", "check_before_send")
    draft.unmapped("the server writes the summary with the model of the request", "plugin_config")
    draft.unmapped(
        f"{_NOTICES} but the compaction block, which must be sent back",
        "notify_on_gc",
        "notification_template",
        "noop_notification_template",
    )
    draft.unmapped(_AGENT_NAME, "agent_name")
    snippet = _anthropic_request("compact-2026-01-12", edit)
    return draft.finish(
        "anthropic_compaction",
        "Anthropic compaction",
        "https://platform.claude.com/docs/en/build-with-claude/compaction",
        snippet,
    )


def _openai(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    percent, trigger_keys = _trigger(config, draft)
    threshold = _tokens(percent, window)
    draft.set("compact_threshold", threshold, trigger_keys)
    summarizes = _summarizes(config)
    draft.set(
        "type",
        "compaction",
        ["type"],
        exact=summarizes,
        note="the server summarizes into an encrypted item, so what it keeps cannot be read"
        + ("" if summarizes else f"; {config.plugin} does not summarize"),
    )
    draft.unmapped(
        "the compaction item is encrypted and its size is the server's",
        "target_percent",
        "pressure_percent",
        "preserve_recent_turns",
        "summarize_middle_turns",
        "max_summary_tokens",
        "plugin_config",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped(
        "server-side compaction runs whenever the threshold is crossed; for on-demand "
        "compaction call POST /responses/compact",
        "auto_trigger",
    )
    draft.unmapped("the threshold counts the rendered tokens, not turns", "max_turns")
    draft.unmapped("the threshold is checked on every request", "check_before_send")
    draft.unmapped(_NOTICES, "notify_on_gc", "notification_template", "noop_notification_template")
    draft.unmapped(_AGENT_NAME, "agent_name")
    snippet = json.dumps(
        {"context_management": [{"type": "compaction", "compact_threshold": threshold}]},
        indent=2,
    )
    return draft.finish(
        "openai_compaction",
        "OpenAI Responses compaction",
        "https://developers.openai.com/api/docs/guides/compaction",
        snippet,
    )


def _langchain(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    percent, trigger_keys = _trigger(config, draft)
    fraction = round(percent / 100, 4)
    if _summarizes(config):
        keep = round(config.target_percent / 100, 4)
        draft.set(
            "middleware",
            "SummarizationMiddleware",
            ["type"],
            note="summarizes what it does not keep",
        )
        draft.set("trigger", ["fraction", fraction], trigger_keys)
        draft.set(
            "keep",
            ["fraction", keep],
            ["target_percent"],
            exact=False,
            note="keeps the newest messages up to this share of the window and summarizes the "
            "rest; keep takes one size, so the protected recent turns are not guaranteed",
        )
        draft.unmapped(
            "keep takes one size (tokens, messages or a fraction); the target is used",
            "preserve_recent_turns",
        )
        draft.unmapped("everything before what is kept is summarized", "summarize_middle_turns")
        draft.unmapped(
            "the summary's length is the model's; trim_tokens_to_summarize limits its input",
            "max_summary_tokens",
        )
        draft.unmapped("the summarizer is the middleware's model (model=...)", "plugin_config")
        snippet = (
            "from langchain.agents.middleware import SummarizationMiddleware\n\n"
            "SummarizationMiddleware(\n"
            '    model="<summary model>",\n'
            f'    trigger=("fraction", {fraction}),\n'
            f'    keep=("fraction", {keep}),\n'
            ")"
        )
    else:
        trigger = _tokens(percent, window)
        clear = _tokens(percent - config.target_percent, window)
        keep_uses = max(config.preserve_recent_turns, 1)
        draft.set(
            "middleware",
            "ContextEditingMiddleware with ClearToolUsesEdit",
            ["type"],
            exact=False,
            note=f"clears old tool results; {config.plugin} removes whole turns",
        )
        draft.set("trigger", trigger, trigger_keys)
        draft.set(
            "clear_at_least",
            clear,
            ["target_percent"],
            exact=False,
            note="at least the tokens between the trigger and the target",
        )
        draft.set(
            "keep",
            keep_uses,
            ["preserve_recent_turns"],
            exact=False,
            note="counts tool uses, not turns",
        )
        draft.unmapped(
            "clearing tool results never summarizes",
            "summarize_middle_turns",
            "max_summary_tokens",
            "plugin_config",
        )
        snippet = (
            "from langchain.agents.middleware import ContextEditingMiddleware, "
            "ClearToolUsesEdit\n\n"
            "ContextEditingMiddleware(edits=[ClearToolUsesEdit(\n"
            f"    trigger={trigger},\n"
            f"    clear_at_least={clear},\n"
            f"    keep={keep_uses},\n"
            "    clear_tool_inputs=True,\n"
            ")])"
        )
    draft.unmapped("the middleware does not tell content tiers apart", "pressure_percent")
    draft.unmapped(
        "pins name turns and messages of one session; the middleware can exclude tools by "
        "name only",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped(
        "a trigger counts tokens, messages or a fraction of the window, not turns", "max_turns"
    )
    draft.unmapped(
        "the middleware runs before every model call whenever its trigger is passed",
        "auto_trigger",
        "check_before_send",
    )
    draft.unmapped(
        "messages are replaced; nothing says what went",
        "notify_on_gc",
        "notification_template",
        "noop_notification_template",
    )
    draft.unmapped(_AGENT_NAME, "agent_name")
    return draft.finish(
        "langchain",
        "LangChain middleware",
        "https://reference.langchain.com/python/langchain/agents/middleware",
        snippet,
    )


def _adk(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    if not config.auto_trigger:
        return draft.finish(
            "google_adk",
            "Google ADK EventsCompactionConfig",
            "https://google.github.io/adk-docs/context/compaction",
            "",
            refusal="ADK's validator needs a trigger (token_threshold with "
            "event_retention_size, or compaction_interval with overlap_size), and this policy "
            "collects only on demand",
        )
    percent, trigger_keys = _trigger(config, draft)
    threshold = _tokens(percent, window)
    retained = config.preserve_recent_turns * ADK_EVENTS_PER_TURN
    draft.set("token_threshold", threshold, trigger_keys)
    draft.set(
        "event_retention_size",
        retained,
        ["preserve_recent_turns"],
        exact=False,
        note=f"raw events, not turns: {ADK_EVENTS_PER_TURN} for each turn, and a turn with "
        "tool calls has more",
    )
    draft.set(
        "summarizer",
        "LlmEventSummarizer (the default)",
        ["type"],
        exact=_summarizes(config),
        note="" if _summarizes(config) else f"ADK summarizes; {config.plugin} does not",
    )
    draft.unmapped(
        "ADK keeps a number of events, not a share of the window",
        "target_percent",
        "pressure_percent",
    )
    draft.unmapped(
        "compaction_interval counts user invocations in a sliding window, which is not a "
        "turn limit",
        "max_turns",
    )
    draft.unmapped("ADK checks after each invocation only", "check_before_send")
    draft.unmapped(
        "only a custom BaseEventsSummarizer can keep chosen events",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped(
        "the summarizer decides the summary's length and wording",
        "summarize_middle_turns",
        "max_summary_tokens",
        "plugin_config",
    )
    draft.unmapped(
        "the summary is stored as an event's actions.compaction; nothing else is written",
        "notify_on_gc",
        "notification_template",
        "noop_notification_template",
    )
    draft.unmapped(_AGENT_NAME, "agent_name")
    snippet = (
        "from google.adk.apps import App\n"
        "from google.adk.apps.app import EventsCompactionConfig\n\n"
        "App(\n"
        '    name="<app>",\n'
        "    root_agent=root_agent,\n"
        "    events_compaction_config=EventsCompactionConfig(\n"
        f"        token_threshold={threshold},\n"
        f"        event_retention_size={retained},\n"
        "    ),\n"
        ")"
    )
    return draft.finish(
        "google_adk",
        "Google ADK EventsCompactionConfig",
        "https://google.github.io/adk-docs/context/compaction",
        snippet,
    )


def _letta(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    share = round(1 - config.target_percent / 100, 4)
    settings: dict[str, Any] = {"mode": "sliding_window", "sliding_window_percentage": share}
    draft.set(
        "mode",
        "sliding_window",
        ["type"],
        exact=_summarizes(config),
        note="summarizes the oldest part; "
        + ("" if _summarizes(config) else f"{config.plugin} drops it instead"),
    )
    draft.set(
        "sliding_window_percentage",
        share,
        ["target_percent"],
        exact=False,
        note="the share of the context summarized so about the target is left; Letta's docs "
        "word this ambiguously, and it widens the share in 10 % steps when that is not enough",
    )
    if config.max_summary_tokens is not None:
        clip = config.max_summary_tokens * CHARS_PER_TOKEN
        settings["clip_chars"] = clip
        draft.set(
            "clip_chars",
            clip,
            ["max_summary_tokens"],
            exact=False,
            note=f"characters, at about {CHARS_PER_TOKEN} a token",
        )
    draft.unmapped(
        "Letta compacts when the context overflows; the trigger cannot be set",
        "threshold_percent",
        "max_turns",
        "auto_trigger",
        "check_before_send",
    )
    draft.unmapped(
        "Letta has no setting for recent turns (its keep_last_n_messages was ignored, letta#2512)",
        "preserve_recent_turns",
        "summarize_middle_turns",
    )
    draft.unmapped(
        "Letta never compacts memory blocks: put what must stay into a block",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped("Letta does not tell content tiers apart", "pressure_percent")
    draft.unmapped(
        "the summarizer is compaction_settings.model (a provider's small model by default)",
        "plugin_config",
    )
    draft.unmapped(
        "Letta leaves its summary message, not a notice",
        "notify_on_gc",
        "notification_template",
        "noop_notification_template",
    )
    draft.unmapped(_AGENT_NAME, "agent_name")
    return draft.finish(
        "letta",
        "Letta compaction_settings",
        "https://docs.letta.com/guides/core-concepts/messages/compaction",
        json.dumps({"compaction_settings": settings}, indent=2),
    )


def _claude_code(config: GCConfig, window: int, draft: _Draft) -> TargetExport:
    lines = []
    if config.auto_trigger:
        trigger, trigger_keys = _trigger(config, draft)
        percent = round(trigger)
        lines.append(f"export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={percent}")
        draft.set(
            "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
            percent,
            trigger_keys,
            exact=False,
            note="it can only lower the threshold: a value above Claude Code's own (about 83 % "
            "of a 200,000 window) is capped; set it in the shell, as users report that "
            "settings.json's env block does not reach it",
        )
    else:
        lines.append("export DISABLE_AUTO_COMPACT=true")
        draft.set(
            "DISABLE_AUTO_COMPACT",
            True,
            ["auto_trigger"],
            exact=False,
            note="users report compactions despite it; /compact stays available",
        )
    lines.append(f"export CLAUDE_CODE_AUTO_COMPACT_WINDOW={window}")
    draft.set(
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
        window,
        [],
        note="the window the percentage is of (the export's context window)",
    )
    draft.unmapped(
        "Claude Code summarizes the whole conversation; the summary's size is the model's",
        "target_percent",
        "pressure_percent",
        "preserve_recent_turns",
        "summarize_middle_turns",
        "max_summary_tokens",
    )
    draft.unmapped(
        "Claude Code always summarizes with its own prompt; /compact takes instructions",
        "type",
        "plugin_config",
    )
    draft.unmapped(
        "nothing survives a compaction but what the summary says; CLAUDE.md is read again",
        "pinned_turn_indices",
        "pinned_message_ids",
    )
    draft.unmapped("the threshold counts tokens only", "max_turns")
    draft.unmapped("Claude Code checks usage as it goes; this is not settable", "check_before_send")
    draft.unmapped(
        "Claude Code marks a compaction in the transcript itself",
        "notify_on_gc",
        "notification_template",
        "noop_notification_template",
    )
    draft.unmapped(_AGENT_NAME, "agent_name")
    return draft.finish(
        "claude_code",
        "Claude Code environment",
        "https://code.claude.com/docs/en/settings",
        "\n".join(lines),
    )


_TARGETS: tuple[Callable[[GCConfig, int, _Draft], TargetExport], ...] = (
    _anthropic_editing,
    _anthropic_compaction,
    _openai,
    _langchain,
    _adk,
    _letta,
    _claude_code,
)


def export_window(
    *, window: int | None = None, session_window: int | None = None, model: str | None = None
) -> int:
    """The context window a policy is exported for: the one asked for, else the session's,
    else the model's (``context_limit_for_model``); a ``ConfigError`` naming
    ``context_window`` when none is known. No default stands in: thresholds worked out from
    a window the model does not have are wrong by the difference."""
    chosen = window or session_window or context_limit_for_model(model)
    if chosen is None:
        asked = f"no known context window for {model!r}" if model else "no context window"
        raise ConfigError(
            f"{asked}: give the window, a session, or a model the engine knows",
            "context_window",
        )
    return context_limit_checked(chosen)


def export_policy(config: GCConfig, context_window: int) -> PolicyExport:
    """``config`` as the nearest settings of each target framework, for a model with
    ``context_window`` tokens (absolute thresholds are worked out from it)."""
    window = context_limit_checked(context_window)
    policy = {key: value for key, value in dump_gc_config(config).items() if key in _KEYS}
    return PolicyExport(
        context_window=window,
        targets=[target(config, window, _Draft(policy)) for target in _TARGETS],
    )


_KEYS = frozenset(f.key for f in GC_JSON_FIELDS)
