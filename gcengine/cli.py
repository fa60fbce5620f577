"""``python -m gcengine``: inspect a session, run a policy on it, replay it, plan its next
request, score what a compaction kept, price a replay, or export a policy to other frameworks.

Exit codes: 0 success, 1 the collection itself failed (a summarizer error, say), 2 bad input
(a session or gc.json that cannot be read, an unknown plugin), 130 interrupted, 141 the reader
of the output went away (``| head``). Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from gcengine._fast import cyclic_gc_paused
from gcengine.budget import (
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
)
from gcengine.config import GCConfig, load_gc_config, load_jaato_gc_config
from gcengine.errors import GCEngineError, PlannerError, PriceTableError
from gcengine.formats import dump_session, load_session
from gcengine.gc import GCRemovalItem
from gcengine.messages import turn_label
from gcengine.planner import PlannerConfig, plan_context, plan_items, plan_report, session_caps
from gcengine.quality.digest import digest_against_agent
from gcengine.quality.export import export_policy, export_window
from gcengine.quality.prompt_cache import DEFAULT_PRICES, CacheCost, cache_cost, price_for_model
from gcengine.quality.retention import (
    AnchorRetention,
    score_collection,
    score_collections_at_equal_size,
    score_observed_compactions,
)
from gcengine.quality.session_cost import CostTotals, recorded_cost, uncompacted
from gcengine.running import requests_without_gc, run_gc, simulate
from gcengine.session import Session, token_drift

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 1, 2, 130
EXIT_CLOSED_PIPE = 128 + 13  # what a shell reports for a process stopped by SIGPIPE

# A long session's ledger runs to thousands of items: ``run`` counts them by reason and by
# source and lists this many, unless asked for every one.
FIRST_ITEMS = 10


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gcengine", description="Context garbage collection for agent sessions."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser("inspect", help="the budget tree and usage of a session")
    inspect.add_argument("session", type=Path)
    inspect.add_argument("--children", type=int, default=5, help="children shown per source")
    inspect.add_argument("--json", action="store_true", help="the budget snapshot as JSON")
    run = commands.add_parser("run", help="collect a session under a gc.json policy")
    run.add_argument("session", type=Path)
    run.add_argument("--config", type=Path, required=True, help="the gc.json policy")
    _as_jaato_argument(run)
    run.add_argument("--plugin", help="run this strategy instead of the policy's")
    run.add_argument("--out", type=Path, help="write the collected session (JAATO 2.1) here")
    run.add_argument(
        "--all",
        action="store_true",
        help=f"list every ledger item (by default the first {FIRST_ITEMS} after the counts)",
    )
    run.add_argument("--json", action="store_true", help="the whole result as JSON")
    replay = commands.add_parser("simulate", help="replay a session turn by turn under a policy")
    replay.add_argument("session", type=Path)
    replay.add_argument("--config", type=Path, required=True, help="the gc.json policy")
    _as_jaato_argument(replay)
    replay.add_argument("--json", action="store_true", help="the whole series as JSON")
    plan = commands.add_parser("plan", help="what the next request sends, and why for each item")
    plan.add_argument("session", type=Path)
    window = plan.add_mutually_exclusive_group()
    window.add_argument("--model", help="plan for this model's limits (default: the session's)")
    window.add_argument("--context-length", type=int, help="the model's window, in tokens")
    plan.add_argument("--json", action="store_true", help="the plan as JSON")
    serve = commands.add_parser(
        "mcp", help="serve the agent tools over MCP on stdin/stdout, for a local agent"
    )
    serve.add_argument(
        "--root", type=Path, default=Path(), help="the folder of session files (default: here)"
    )
    serve.add_argument("--policy", type=Path, help="the gc.json policy (default: ROOT/gc.json)")
    score = commands.add_parser(
        "score",
        help="anchor retention of a policy's run (--config) or of the agent's own compactions",
    )
    score.add_argument("session", type=Path)
    score.add_argument(
        "--config",
        type=Path,
        action="append",
        help="score a run of this gc.json policy; given more than once, each run is scored "
        "too at the size of the smallest context any of them leaves",
    )
    _as_jaato_argument(score)
    score.add_argument("--json", action="store_true", help="the scores as JSON")
    cost = commands.add_parser(
        "cost",
        help="the whole session's recorded cost (every call, its compaction call included), "
        "beside a policy's replay of it and the same replay without GC",
    )
    cost.add_argument("session", type=Path)
    cost.add_argument("--config", type=Path, required=True, help="the gc.json policy")
    _as_jaato_argument(cost)
    cost.add_argument("--model", help="price as this model (default: the session's)")
    cost.add_argument("--json", action="store_true", help="both costs as JSON")
    export = commands.add_parser(
        "export-policy", help="a gc.json as the nearest settings of other frameworks"
    )
    export.add_argument("config", type=Path, help="the gc.json policy")
    _as_jaato_argument(export)
    export.add_argument("--window", type=int, help="the model's context window in tokens")
    export.add_argument("--session", type=Path, help="export for this session's window")
    export.add_argument("--model", help="export for this model's window")
    export.add_argument("--json", action="store_true", help="every target as JSON")
    digest = commands.add_parser(
        "digest-vs-agent",
        help="the digest against the agent's own summaries at their size (anchors kept)",
    )
    digest.add_argument("session", type=Path)
    digest.add_argument("--json", action="store_true", help="the comparisons as JSON")
    return parser


def _as_jaato_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--as-jaato",
        action="store_true",
        help="read the gc.json as JAATO runs it: one naming JAATO's own plugin (or none) and "
        "no rules means JAATO's rules",
    )


def _policy(path: Path, args: argparse.Namespace) -> GCConfig:
    """The policy of the gc.json at ``path``: as the engine reads it, or with ``--as-jaato``
    as JAATO runs it (the dashboard's reading of an imported file), saying on stderr when
    that made it JAATO's rules, so a ledger never passes for the engine's when it is not."""
    if not args.as_jaato:
        return load_gc_config(path)
    config, jaatos = load_jaato_gc_config(path)
    if jaatos:
        print(
            f"note: {path} names JAATO's own plugin and no rules: read with JAATO's rules, "
            "as JAATO runs it",
            file=sys.stderr,
        )
    return config


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "mcp":
        return _mcp(args)
    commands = {
        "inspect": _inspect,
        "run": _run,
        "plan": _plan,
        "simulate": _simulate,
        "score": _score,
        "cost": _cost,
        "export-policy": _export,
        "digest-vs-agent": _digest_vs_agent,
    }
    try:
        # The command owns this process and does one bulk job: the cycle collector can rest.
        with cyclic_gc_paused():
            return commands[args.command](args)
    except GCEngineError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader of the output (``| head``) has what it wanted: stop quietly, and keep
        # Python from complaining while it flushes the closed stdout on the way out.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        print(f"error: {where}{error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _percent(tokens: int, limit: int) -> str:
    return f"{tokens / limit * 100:.1f}%" if limit else "-"


def _entry_line(key: str, entry: SourceEntry, limit: int, depth: int) -> str:
    policy = entry.effective_gc_policy()
    total = entry.total_tokens()
    share = _percent(total, limit)
    return f"{'  ' * depth}{policy.indicator} {key:<28} {total:>10,}  {share:>6}  {policy.value}"


def _tree(budget: InstructionBudget, children: int) -> list[str]:
    lines = []
    for source, entry in budget.entries.items():
        note = "  (not in the context)" if source is InstructionSource.THINKING else ""
        lines.append(_entry_line(source.value, entry, budget.context_limit, 0) + note)
        items = list(entry.children.items())
        for key, child in items[:children]:
            # A conversation turn is shown as JAATO labels it (turn_1), not by its key.
            shown = child.label if source is InstructionSource.CONVERSATION and child.label else key
            lines.append(_entry_line(shown, child, budget.context_limit, 1))
        if len(items) > children:
            rest = sum(c.total_tokens() for _, c in items[children:])
            lines.append(f"  … {len(items) - children:,} more ({rest:,} tokens)")
    return lines


def _usage_lines(session: Session) -> list[str]:
    budget = session.budget
    return [
        f"session   {session.session_id} ({session.source_format.value}"
        f"{' ' + session.format_version if session.format_version else ''})",
        f"model     {session.model or 'unknown'}; context limit {session.context_limit:,} "
        f"(from {session.context_limit_origin.value})",
        f"counter   {session.token_counter}",
        f"turns     {len(session.turns()):,}; messages {len(session.history):,}",
        f"usage     {budget.total_tokens():,} tokens, {budget.utilization_percent():.1f}% "
        f"({budget.available_tokens():,} available)",
        f"policy    {GCPolicy.LOCKED.indicator} locked {budget.locked_tokens():,}  "
        f"{GCPolicy.PRESERVABLE.indicator} preservable {budget.preservable_tokens():,}  "
        f"{GCPolicy.EPHEMERAL.indicator} eligible {budget.gc_eligible_tokens():,}",
    ]


def _state_lines(session: Session) -> list[str]:
    """What JAATO saved about the session's state: a turn left running with its unanswered
    calls, the sub-agents it recorded, and its plugins' saved states."""
    lines = []
    interrupted = session.interrupted_turn
    if interrupted is not None:
        calls = ", ".join(f"{c.name}({c.id or 'no id'})" for c in session.pending_tool_calls)
        lines.append(
            f"running   a turn was running when saved (agent {interrupted.agent_id or 'main'}, "
            f"started {interrupted.started_at or 'at an unknown time'}); "
            f"{len(session.pending_tool_calls)} pending calls{': ' + calls if calls else ''}"
        )
    for record in session.subagent_records:
        lines.append(
            f"subagent  {record.agent_id or '(no id)'}: profile {record.profile_name or '-'}, "
            f"{record.status or 'status unknown'}, {record.turn_count or 0} turns"
            f"{f' of at most {record.max_turns}' if record.max_turns else ''}"
        )
    if session.plugin_states:
        lines.append(f"plugins   saved state of {', '.join(sorted(session.plugin_states))}")
    return lines


def _inspect(args: argparse.Namespace) -> int:
    session = load_session(args.session)
    if args.json:
        print(json.dumps(session.budget.snapshot(), ensure_ascii=False, indent=2))
        return 0
    lines = _usage_lines(session)
    drift = token_drift(session)
    if drift.messages:
        lines.append(
            f"drift     recorded {drift.recorded_total:,} vs counted {drift.counted_total:,} "
            f"over {len(drift.messages):,} messages"
        )
    lines.extend(_state_lines(session))
    for warning in session.warnings:
        lines.append(f"warning   {warning}")
    print("\n".join([*lines, "", *_tree(session.budget, args.children)]))
    return 0


def _run(args: argparse.Namespace) -> int:
    session = load_session(args.session)
    config = _policy(args.config, args)
    outcome = run_gc(session, config, plugin=args.plugin)
    result = outcome.result
    if args.out is not None and result.success:
        args.out.write_text(dump_session(outcome.session), encoding="utf-8")
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        limit = session.context_limit
        print(f"{result.plugin_name}: {'ok' if result.success else 'FAILED'}")
        if result.error:
            print(f"error     {result.error}")
        print(
            f"tokens    {result.tokens_before:,} ({_percent(result.tokens_before, limit)}) -> "
            f"{result.tokens_after:,} ({_percent(result.tokens_after, limit)}); "
            f"freed {result.tokens_freed:,}; {_items(result.items_collected)}"
        )
        for line in _ledger_lines(result.removal_list, every=args.all):
            print(line)
        if args.out is not None and result.success:
            print(f"wrote     {args.out}")
    return 0 if result.success else EXIT_FAILED


def _items(count: int) -> str:
    return f"{count:,} item{'' if count == 1 else 's'}"


def _ledger_lines(items: Sequence[GCRemovalItem], *, every: bool) -> list[str]:
    """A run's ledger: counts and tokens by reason and by source, then the items, each turn
    named as a person reads it; the first ``FIRST_ITEMS`` of a long ledger unless ``every``."""
    lines: list[str] = []
    if len(items) > FIRST_ITEMS:
        for title in ("reason", "source"):
            # Per reason (or source): how many items, and the tokens they freed.
            tally: dict[str, list[int]] = {}
            for item in items:
                name = str(item.reason if title == "reason" else item.source.value)
                figures = tally.setdefault(name, [0, 0])
                figures[0] += 1
                figures[1] += item.tokens_freed
            lines.append(f"by {title}")
            for name, (count, freed) in sorted(tally.items(), key=lambda t: -t[1][1]):
                lines.append(f"    {name:<28} {_items(count):>12} {freed:>10,} tokens")
    shown = items if every or len(items) <= FIRST_ITEMS else items[:FIRST_ITEMS]
    if len(shown) < len(items):
        lines.append(
            f"first {len(shown)} of {_items(len(items))} "
            "(--all lists every one; --json gives the whole result)"
        )
    for item in shown:
        where = turn_label(item.turn_index) if item.turn_index is not None else item.source.value
        key = item.child_key or "(whole source)"
        lines.append(f"  - {item.reason:<28} {where:<10} {item.tokens_freed:>8,}  {key}")
        if item.verdict is not None:
            lines.append(f"      {item.verdict.action}: {item.verdict.sentence}")
    if len(shown) < len(items):
        lines.append(f"  ... and {len(items) - len(shown):,} more")
    return lines


def _simulate(args: argparse.Namespace) -> int:
    session = load_session(args.session)
    config = _policy(args.config, args)
    replay = simulate(session, config)
    if args.json:
        print(replay.model_dump_json(indent=2))
        return 0
    mode = "continuous" if replay.continuous_mode else f"threshold {replay.threshold_percent:g}%"
    limit = replay.context_limit
    print(f"{replay.plugin}, {mode}, target {replay.target_percent:g}%, limit {limit:,}")
    turns, events = len(session.turns()), len(replay.events)
    print(f"turns {turns:,}; GC events {events}; peak {replay.peak_percent:.1f}%")
    for event in replay.events:
        result = event.result
        print(
            f"  {turn_label(event.turn_index)} {event.point:<11} {event.reason.value:<12} "
            f"{_percent(result.tokens_before, limit):>6} -> "
            f"{_percent(result.tokens_after, limit):>6}  {result.items_collected} items"
        )
    return 0


def _mcp(args: argparse.Namespace) -> int:
    """Serve until the agent closes stdin. Long-running, so the cycle collector stays on."""
    try:
        from gcengine.mcp_tools import FileStore, build_server
    except ImportError as error:
        if (error.name or "").split(".")[0] != "mcp":
            raise
        print("error: `gcengine mcp` needs the mcp extra: pip install '.[mcp]'", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.root.is_dir():
        print(f"error: {args.root}: not a folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    build_server(FileStore(args.root, args.policy), log_level="WARNING").run()
    return 0


def _plan(args: argparse.Namespace) -> int:
    if args.context_length is not None and args.context_length < 1:
        raise PlannerError(f"--context-length must be at least 1 token, not {args.context_length}")
    session = load_session(args.session)
    caps = session_caps(session, model=args.model, context_length=args.context_length)
    plan = plan_context(plan_items(session), caps, PlannerConfig())
    print(plan.model_dump_json(indent=2) if args.json else "\n".join(plan_report(plan)))
    return 0


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _retention_lines(retention: AnchorRetention) -> list[str]:
    if retention.unscorable is not None:
        return [f"unscorable: {retention.unscorable}"]
    at_size = "" if retention.size is None else f", cut to {retention.size:,} for equal size"
    lines = [
        f"anchor retention {_ratio(retention.score)} over {retention.anchors:,} anchors of the "
        f"context before ({retention.tokens_before:,} tokens), in "
        f"{retention.tokens_after:,} tokens after{at_size} "
        "(keyword survival: a floor on what was lost, not what the agent remembers)",
        f"  {'class':<12} {'weight':>6} {'anchors':>8} {'kept':>6} {'recall':>7}  first lost",
    ]
    for part in retention.classes:
        lost = "; ".join(part.lost[:2])
        lines.append(
            f"  {part.anchor_class.value:<12} {part.weight:>6} {part.anchors:>8,} "
            f"{part.retained:>6,} {_ratio(part.recall):>7}  {lost}"
        )
    invented = retention.invented
    recency = retention.recency
    lines += [
        f"  invented    {invented.invented:,} of {invented.checked:,} literal anchors in new "
        f"summaries ({_ratio(invented.rate)})",
        f"  compression {_ratio(retention.compression_ratio)} "
        f"({retention.replacement_tokens:,} tokens in for {retention.removed_tokens:,} out)",
        f"  recency     oldest third {_ratio(recency.oldest)}, newest third "
        f"{_ratio(recency.newest)}",
    ]
    return lines


def _score(args: argparse.Namespace) -> int:
    session = load_session(args.session)
    if args.config:
        afters = {}
        for path in args.config:
            outcome = run_gc(session, _policy(path, args))
            if not outcome.result.success:
                print(f"error: {path}: {outcome.result.error}", file=sys.stderr)
                return EXIT_FAILED
            afters["run" if len(args.config) == 1 else f"run {path}"] = outcome.session.history
        scores = {name: score_collection(session, after) for name, after in afters.items()}
        if len(afters) > 1:
            equal = score_collections_at_equal_size(session, afters)
            scores |= {f"{name} at equal size": retention for name, retention in equal.items()}
    else:
        scores = score_observed_compactions(session)
    if args.json:
        print(json.dumps({k: v.model_dump(mode="json") for k, v in scores.items()}, indent=2))
        return 0
    if not scores:
        print("the session records no compaction of its own; give --config to score a run")
    for name, retention in scores.items():
        print(
            "\n".join(
                [
                    name if name.startswith("run") else f"compaction {name}",
                    *_retention_lines(retention),
                ]
            )
        )
    return 0


def _cost_line(label: str, cost: CacheCost) -> str:
    usage = cost.usage
    return (
        f"{label:<10} {usage.requests:>6,} requests {usage.tokens_sent:>14,} sent "
        f"{usage.cache_read_tokens:>14,} read {usage.cache_write_tokens:>12,} written "
        f"{usage.uncached_tokens:>10,} uncached  ${cost.dollars:,.4f} "
        f"(${cost.dollars_without_cache:,.4f} without caching)"
    )


def _with_subagents(path: Path) -> Path | bytes:
    """A Claude Code file with the ``<session>/subagents/`` folder Claude Code writes beside it,
    zipped with it as an upload would be (so its compaction call is read); else the file."""
    folder = path.with_suffix("") / "subagents"
    agents = sorted(folder.glob("agent-*.jsonl")) if path.suffix == ".jsonl" else []
    if not agents:
        return path
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(path, path.name)
        for agent in agents:
            archive.write(agent, f"{path.stem}/subagents/{agent.name}")
    return buffer.getvalue()


def _totals_line(label: str, totals: CostTotals) -> str:
    dollars = "unpriced" if totals.dollars is None else f"${totals.dollars:,.4f}"
    return (
        f"{label:<10} {totals.calls:>6,} calls    {totals.uncached_tokens:>14,} uncached "
        f"{totals.cache_read_tokens:>14,} read {totals.cache_write_tokens:>12,} written "
        f"{totals.output_tokens:>10,} output  {dollars}"
    )


def _cost(args: argparse.Namespace) -> int:
    session = load_session(_with_subagents(args.session))
    config = _policy(args.config, args)
    model = args.model or session.model
    price = price_for_model(model, DEFAULT_PRICES)
    if price is None:
        known = ", ".join(p.model for p in DEFAULT_PRICES)
        raise PriceTableError(f"no price for model {model!r} (priced: {known}); give --model")
    recorded = recorded_cost(session, DEFAULT_PRICES, args.model)
    whole = uncompacted(session)
    policy = cache_cost(simulate(whole, config).requests, price)
    without = cache_cost(requests_without_gc(whole), price)
    if args.json:
        print(
            json.dumps(
                {
                    "recorded": recorded.model_dump(mode="json"),
                    "policy": policy.model_dump(),
                    "without_gc": without.model_dump(),
                    "prices": [p.model_dump() for p in DEFAULT_PRICES],
                }
            )
        )
        return 0
    print(
        f"the session as recorded: {recorded.contexts} context(s), every call priced as the "
        "model that answered it"
    )
    print(_totals_line("agent", recorded.agent))
    print(_totals_line("compaction", recorded.compaction))
    print(_totals_line("sub-agents", recorded.subagents))
    print(_totals_line("total", recorded.total))
    if recorded.unpriced_models:
        print(f"no price for {', '.join(recorded.unpriced_models)}: give --model")
    print(
        f"replayed over the whole session ({len(whole.history):,} messages, input only), "
        f"priced as {price.label or price.model} ({price.source}, {price.as_of})"
    )
    print(_cost_line("policy", policy))
    print(_cost_line("without GC", without))
    return 0


def _export(args: argparse.Namespace) -> int:
    window = export_window(
        window=args.window,
        session_window=load_session(args.session).context_limit if args.session else None,
        model=args.model,
    )
    exported = export_policy(_policy(args.config, args), window)
    if args.json:
        print(exported.model_dump_json(indent=2))
        return 0
    for target in exported.targets:
        print(f"== {target.label} ({target.docs})")
        if target.refusal:
            print(f"not exportable: {target.refusal}")
        else:
            print(target.snippet)
        for setting in target.settings:
            nearest = "" if setting.exact else " (nearest)"
            note = f": {setting.note}" if setting.note else ""
            print(f"  {setting.name} = {json.dumps(setting.value)}{nearest}{note}")
        for unmapped in target.unmapped:
            print(f"  not mapped: {unmapped.key} = {json.dumps(unmapped.value)}: {unmapped.why}")
        print()
    return 0


def _digest_vs_agent(args: argparse.Namespace) -> int:
    compared = digest_against_agent(load_session(args.session))
    if args.json:
        print(json.dumps([c.model_dump(mode="json") for c in compared], indent=2))
        return 0
    if not compared:
        print("the session records no compaction with a readable summary")
    for item in compared:
        ratio = "n/a" if item.ratio is None else f"{item.ratio:.2f}x"
        print(
            f"compaction {item.compaction_id}: agent's summary {item.agent_tokens:,} tokens, "
            f"digest {item.digest_tokens:,} tokens; digest keeps {ratio} the anchors "
            f"({item.caveat})"
        )
        print(f"  {'class':<12} {'anchors':>8} {'agent':>6} {'digest':>7}")
        for agent, digest in zip(item.agent.classes, item.digest.classes, strict=True):
            print(
                f"  {agent.anchor_class.value:<12} {agent.anchors:>8,} {agent.retained:>6,} "
                f"{digest.retained:>7,}"
            )
    return 0
