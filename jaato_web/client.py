"""``jaato-gc``: the dashboard's API from a shell, for CI pipelines and agents.

It talks HTTP to a running dashboard with a personal API token, so it needs neither Django
nor the database: ``JAATO_URL`` says where the dashboard is and ``JAATO_TOKEN`` holds the
token (made on the dashboard's *Tokens* page). Everything it does goes through the same API
endpoints, and so the same permission checks, as any other client.

Exit codes: 0 done; 1 the dashboard refused (its message is printed: a 400 names the key or
JSON path, 403 the missing permission, 404 an object outside your projects), or refused some
of the files of an upload (every file's result is printed); 2 bad usage or an unreadable local
file (nothing is sent); 3 the dashboard could not be reached; 4 a run that ended failed; 141
the reader of the output went away (``jaato-gc sessions | head -1``), as for any tool stopped
by a closed pipe.

``jaato-gc hook`` is the exception: run by an agent's hooks (Claude Code's ``PreCompact``,
``SessionEnd`` and ``SessionStart``), it always exits 0 and writes what went wrong to its log,
so the agent is never failed or held up by the dashboard (docs/hooks.md).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import traceback
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any
from urllib import error, parse, request

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_RUN_FAILED = 0, 1, 2, 3, 4
EXIT_CLOSED_PIPE = 128 + 13  # what a shell reports for a process stopped by SIGPIPE
DEFAULT_URL = "http://127.0.0.1:8000"
POLL_SECONDS = 1.0


class ClientError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class PartlyRefused(ClientError):
    """Some of the work was refused: the answer is still printed, and the exit code says so."""

    def __init__(self, answer: Any, message: str) -> None:
        super().__init__(message, EXIT_REFUSED)
        self.answer = answer


class Api:
    """A thin JSON-over-HTTP caller; every failure becomes a ``ClientError`` with its exit code."""

    def __init__(self, base_url: str, token: str, timeout: float = 60.0) -> None:
        self.base = base_url.rstrip("/") + "/api"
        self.token = token
        self.timeout = timeout

    def call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        payload: Any = None,
        body: bytes | None = None,
        content_type: str | None = None,
        answers: tuple[int, ...] = (),
    ) -> Any:
        """Call the API; an error status is a ``ClientError`` unless ``answers`` names it (an
        endpoint whose error answers carry results, such as an upload of several files)."""
        url = self.base + path
        wanted = {k: v for k, v in (query or {}).items() if v not in (None, "")}
        if wanted:
            url += "?" + parse.urlencode(wanted)
        if payload is not None:
            body, content_type = json.dumps(payload).encode(), "application/json"
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        req = request.Request(url, data=body, method=method, headers=headers)
        try:
            with request.urlopen(req, timeout=self.timeout) as answer:
                raw = answer.read()
                kind = answer.headers.get("Content-Type", "")
        except error.HTTPError as refused:
            if refused.code in answers:
                return json.loads(refused.read() or b"null")
            raise ClientError(_refusal(refused), EXIT_REFUSED) from None
        except (error.URLError, TimeoutError, OSError) as unreachable:
            reason = getattr(unreachable, "reason", unreachable)
            raise ClientError(f"cannot reach {self.base}: {reason}", EXIT_UNREACHABLE) from None
        if "json" in kind:
            return json.loads(raw or b"null")
        return raw.decode("utf-8", errors="replace")

    def upload(self, paths: Sequence[Path], project: int | None) -> Any:
        """Every file in one request; the answer has a result per file, and a refused file
        (an HTTP status of 400 or 413 for the whole answer when none was taken) is still an
        answer to print, not an error."""
        return self.upload_files([(path.name, path.read_bytes()) for path in paths], project)

    def upload_files(self, files: Sequence[tuple[str, bytes]], project: int | None) -> Any:
        """``upload`` of files held in memory, each a name and its bytes."""
        boundary = uuid.uuid4().hex
        body = b""
        for name, data in files:
            body += (
                f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
                f'filename="{name}"\r\nContent-Type: application/json\r\n\r\n'
            ).encode()
            body += data + b"\r\n"
        body += f"--{boundary}--\r\n".encode()
        return self.call(
            "POST",
            "/sessions/uploads",
            query={"project": project},
            body=body,
            content_type=f"multipart/form-data; boundary={boundary}",
            answers=(400, 413),
        )


def _refusal(refused: error.HTTPError) -> str:
    """The dashboard's own explanation: ``detail`` plus the key or JSON path it names."""
    try:
        answer = json.loads(refused.read() or b"{}")
    except ValueError:
        answer = {}
    detail = answer.get("detail") if isinstance(answer, dict) else None
    where = next(
        (
            f" ({k}: {answer[k]})"
            for k in ("key", "json_path")
            if isinstance(answer, dict) and answer.get(k)
        ),
        "",
    )
    if refused.code == 401:
        detail = detail or "the token is missing, unknown or revoked"
    return f"HTTP {refused.code}: {detail or refused.reason}{where}"


# --- Commands --------------------------------------------------------------------------------


def _projects(api: Api, args: argparse.Namespace) -> Any:
    return api.call("GET", "/projects")


def _sessions(api: Api, args: argparse.Namespace) -> Any:
    return api.call(
        "GET",
        "/sessions",
        query={"project": args.project, "search": args.search, "page": args.page},
    )


def _upload(api: Api, args: argparse.Namespace) -> Any:
    paths = [Path(name) for name in args.files]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise ClientError(f"no such file: {', '.join(missing)} (nothing was uploaded)", EXIT_USAGE)
    answer = api.upload(paths, args.project)
    if answer["refused"]:
        raise PartlyRefused(answer, f"{answer['refused']} of {len(paths)} files refused")
    return answer


def _run(api: Api, args: argparse.Namespace) -> Any:
    payload: dict[str, Any] = {"plugin": args.plugin}
    if args.policy_version is not None:
        payload["policy_version_id"] = args.policy_version
    else:
        try:
            payload["config"] = json.loads(Path(args.config).read_text())
        except (OSError, ValueError) as problem:
            raise ClientError(
                f"{args.config}: cannot read a gc.json: {problem}", EXIT_USAGE
            ) from None
    run = api.call("POST", f"/sessions/{args.session}/runs", payload=payload)
    while args.wait and run["status"] in ("queued", "running"):
        time.sleep(POLL_SECONDS)
        run = api.call("GET", f"/runs/{run['id']}")
    if run["status"] == "failed":
        raise ClientError(f"run {run['id']} failed: {run['error']}", EXIT_RUN_FAILED)
    return run


def _show_run(api: Api, args: argparse.Namespace) -> Any:
    return api.call("GET", f"/runs/{args.run}")


def _ledger(api: Api, args: argparse.Namespace) -> Any:
    if args.csv:
        return api.call("GET", f"/runs/{args.run}/ledger.csv")
    return api.call("GET", f"/runs/{args.run}/ledger.json")


def _policies(api: Api, args: argparse.Namespace) -> Any:
    return api.call("GET", "/policies", query={"project": args.project})


def _export(api: Api, args: argparse.Namespace) -> Any:
    return api.call("GET", f"/policies/{args.policy}/versions/{args.number}/gc.json")


def _audit(api: Api, args: argparse.Namespace) -> Any:
    query = {"project": args.project, "action": args.action, "actor": args.actor, "page": args.page}
    return api.call("GET", "/audit", query=query)


# --- The agent hook ---------------------------------------------------------------------------

# Claude Code runs a SessionEnd hook for 1.5 s unless CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS says
# more, and other hooks for 600 s: a hook that uploads stops well before either.
HOOK_TIMEOUT_SECONDS = {"SessionEnd": 1.2}
HOOK_DEFAULT_TIMEOUT_SECONDS = 20.0
UPLOADED_ON = frozenset({"PreCompact", "SessionEnd"})


def hook_log_path() -> Path:
    """Where ``jaato-gc hook`` writes what it did: ``JAATO_HOOK_LOG``, else the user's state
    folder."""
    named = os.environ.get("JAATO_HOOK_LOG", "").strip()
    if named:
        return Path(named).expanduser()
    state = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(state) / "jaato-gc" / "hook.log"


def transcript_archive(transcript: Path, session_id: str | None) -> tuple[str, bytes]:
    """The transcript, with its sub-agents' files when Claude Code wrote any (beside it, in
    ``<session>/subagents/``), as the upload the dashboard reads: the file alone, or a zip of
    it and its ``subagents`` folder."""
    stem = session_id or transcript.stem
    agents = sorted((transcript.parent / stem / "subagents").glob("agent-*.jsonl"))
    if not agents:
        return transcript.name, transcript.read_bytes()
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.write(transcript, transcript.name)
        for agent in agents:
            archive.write(agent, f"{stem}/subagents/{agent.name}")
    return f"{stem}.zip", packed.getvalue()


def _hook_anchors(transcript: Path) -> str:
    """For ``SessionStart`` after a compaction: what the compaction left out, as Claude Code
    takes context from a hook (``hookSpecificOutput.additionalContext``); empty when nothing."""
    import gcengine  # the engine is only needed here; the rest of the client is stdlib

    text = gcengine.compaction_handoff(gcengine.load_session(transcript))
    if not text:
        return ""
    output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return json.dumps(output)


def run_hook(args: argparse.Namespace, stdin: IO[str], stdout: IO[str]) -> list[str]:
    """Do what the hook's event asks; the lines to log. Raises on any failure (``_hook``
    logs it)."""
    event = json.loads(stdin.read() or "{}")
    if not isinstance(event, dict):
        raise ValueError(f"the hook's input is not a JSON object: {str(event)[:80]}")
    name = str(event.get("hook_event_name") or "")
    transcript = Path(str(event.get("transcript_path") or "")).expanduser()
    session_id = event.get("session_id") if isinstance(event.get("session_id"), str) else None
    why = event.get("trigger") or event.get("source") or event.get("reason") or ""
    said = f"{name or 'hook'} {why}".strip()
    lines: list[str] = []
    if not transcript.is_file():
        raise FileNotFoundError(f"{said}: no transcript at {transcript}")
    if name == "SessionStart":
        if args.anchors and event.get("source") == "compact":
            handed = _hook_anchors(transcript)
            if handed:
                stdout.write(handed + "\n")
            lines.append(f"{said}: {'handed' if handed else 'no'} lost anchors to the agent")
        return lines
    if name not in UPLOADED_ON:
        return [f"{said}: nothing to do for this event"]
    token = os.environ.get("JAATO_TOKEN", "").strip()
    if not token:
        raise ValueError("JAATO_TOKEN is not set: nothing was uploaded")
    timeout = args.timeout or HOOK_TIMEOUT_SECONDS.get(name, HOOK_DEFAULT_TIMEOUT_SECONDS)
    filename, data = transcript_archive(transcript, session_id)
    answer = Api(args.url, token, timeout=timeout).upload_files([(filename, data)], args.project)
    for result in answer.get("results", []):
        lines.append(f"{said}: {_line(result)}")
    return lines


def _hook(args: argparse.Namespace) -> int:
    """``jaato-gc hook``: never fails and never speaks but to hand the agent context; every
    outcome goes to the log."""
    log = Path(args.log).expanduser() if args.log else hook_log_path()
    started = time.monotonic()
    try:
        lines = run_hook(args, sys.stdin, sys.stdout)
    except Exception as problem:  # whatever it is, the agent goes on; the log says what
        detail = problem if isinstance(problem, (ClientError, OSError, ValueError)) else None
        lines = [f"failed: {detail or traceback.format_exc(limit=3)}"]
    elapsed = time.monotonic() - started
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with log.open("a", encoding="utf-8") as written:
            for line in lines:
                written.write(f"{stamp} ({elapsed:.1f} s) {line.rstrip()}\n")
    except OSError:
        pass  # no log to write to: still nothing for the agent to wait on
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="jaato-gc",
        description="Use a jaato GC dashboard from the shell (JAATO_URL, JAATO_TOKEN).",
    )
    top.add_argument("--url", default=os.environ.get("JAATO_URL", DEFAULT_URL))
    top.add_argument("--json", action="store_true", help="print the API's JSON as it is")
    commands = top.add_subparsers(dest="command", required=True)

    commands.add_parser("projects", help="your projects and roles").set_defaults(func=_projects)

    sessions = commands.add_parser("sessions", help="a project's sessions")
    sessions.add_argument("--project", type=int)
    sessions.add_argument("--search", default="")
    sessions.add_argument("--page", type=int, default=1)
    sessions.set_defaults(func=_sessions)

    upload = commands.add_parser("upload", help="upload session files")
    upload.add_argument("files", nargs="+")
    upload.add_argument("--project", type=int)
    upload.set_defaults(func=_upload)

    run = commands.add_parser("run", help="run GC on a session")
    run.add_argument("session", type=int)
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--policy-version", type=int, help="a stored policy version's id")
    source.add_argument("--config", help="a gc.json file")
    run.add_argument("--plugin")
    run.add_argument("--wait", action="store_true", help="poll until the run ends")
    run.set_defaults(func=_run)

    show = commands.add_parser("show-run", help="a run's status and figures")
    show.add_argument("run", type=int)
    show.set_defaults(func=_show_run)

    ledger = commands.add_parser("ledger", help="a run's removal ledger")
    ledger.add_argument("run", type=int)
    ledger.add_argument("--csv", action="store_true")
    ledger.set_defaults(func=_ledger)

    policies = commands.add_parser("policies", help="a project's policies")
    policies.add_argument("--project", type=int)
    policies.set_defaults(func=_policies)

    export = commands.add_parser("export", help="a policy version as gc.json")
    export.add_argument("policy", type=int)
    export.add_argument("number", type=int)
    export.set_defaults(func=_export)

    audit = commands.add_parser("audit", help="the audit log")
    audit.add_argument("--project", type=int)
    audit.add_argument("--action")
    audit.add_argument("--actor")
    audit.add_argument("--page", type=int, default=1)
    audit.set_defaults(func=_audit)

    hook = commands.add_parser(
        "hook",
        help="for an agent's hooks: upload its transcript (PreCompact, SessionEnd), hand it "
        "what a compaction lost (SessionStart --anchors); always exits 0",
    )
    hook.add_argument("--project", type=int)
    hook.add_argument(
        "--timeout", type=float, help="seconds for the upload (default: 20, 1.2 on SessionEnd)"
    )
    hook.add_argument(
        "--log", help="the log file (default: JAATO_HOOK_LOG or ~/.local/state/jaato-gc/hook.log)"
    )
    hook.add_argument(
        "--anchors",
        action="store_true",
        help="on SessionStart after a compaction, print the files, errors, decisions and open "
        "work it left out, as context for the agent",
    )
    hook.set_defaults(func=None)
    return top


def _text(answer: Any) -> str:
    """Lists and pages as one line per item (tab-separated columns), a run in words; anything
    else as indented JSON."""
    if isinstance(answer, str):
        return answer.rstrip("\n")
    if isinstance(answer, dict) and "status" in answer and "items_collected" in answer:
        return _run_text(answer)
    if isinstance(answer, dict):
        for key in ("items", "results", "ledger"):
            if isinstance(answer.get(key), list):
                answer = answer[key]
                break
    if isinstance(answer, list) and all(isinstance(i, dict) for i in answer):
        return "\n".join(_line(item) for item in answer) or "(none)"
    return json.dumps(answer, indent=2)


def _run_text(run: dict[str, Any]) -> str:
    """A run as a person reads it: its state, what it did, and where to read its ledger."""
    lines = [f"run {run['id']} of session {run['session_id']}: {run['status']} ({run['plugin']})"]
    if run.get("error"):
        lines.append(f"error: {run['error']}")
    if run["status"] in ("queued", "running"):
        lines.append(f"follow it with: jaato-gc show-run {run['id']}")
        return "\n".join(lines)
    if run.get("tokens_after") is not None:
        limit = run.get("context_limit")

        def share(tokens: int) -> str:
            return f" ({tokens / limit * 100:.1f} %)" if limit else ""

        before, after = run["tokens_before"], run["tokens_after"]
        lines.append(
            f"{before:,}{share(before)} -> {after:,}{share(after)} tokens, "
            f"freed {run['tokens_freed']:,}" + (f" of a {limit:,}-token window" if limit else "")
        )
        items = run.get("items_collected") or 0
        turns = run.get("turns_after")
        lines.append(
            f"{items:,} item{'' if items == 1 else 's'} removed"
            + (f"; {turns:,} turn{'' if turns == 1 else 's'} left" if turns is not None else "")
        )
    lines.append(f"its ledger: jaato-gc ledger {run['id']} (--json: the run as the API gives it)")
    return "\n".join(lines)


def _line(item: dict[str, Any]) -> str:
    """One row of a list, with the columns its kind has."""
    if "state" in item and "filename" in item:  # one file of an upload
        session = item.get("session") or {}
        if session:
            where = f"session {session['id']}"
        elif item.get("job"):
            where = f"upload job {item['job']['id']}"
        else:
            where = item.get("reason", "")
            if item.get("json_path"):
                where += f" (at {item['json_path']})"
        return "\t".join((item["filename"], item["state"], where))
    if "tokens_freed" in item and "reason" in item:  # a ledger item
        # The dashboard's number for the turn (from 1), as its pages show turns.
        turn = "-" if item.get("turn_number") is None else f"turn {item['turn_number']}"
        return "\t".join(
            (
                str(item["seq"]),
                item["reason"],
                item["source"],
                turn,
                f"{item['tokens_freed']:,} tokens",
                item.get("child_key") or "",
            )
        )
    if "turn_count" in item and "total_tokens" in item:  # a session
        return "\t".join(
            (
                str(item["id"]),
                item["label"],
                item["source_format"],
                f"{item['turn_count']:,} turns",
                f"{item['total_tokens']:,} tokens",
                f"{item['utilization_percent']:.1f} % of {item['context_limit']:,}",
            )
        )
    if "latest" in item and "is_default" in item:  # a policy
        latest = item.get("latest") or {}
        version = f"version {latest['number']} (id {latest['id']})" if latest else "no version"
        strategy = (latest.get("config") or {}).get("type", "")
        default = "default" if item["is_default"] else ""
        return "\t".join((str(item["id"]), item["name"], version, strategy, default)).rstrip()
    shown = ("id", "name", "label", "role", "status", "action", "actor", "target", "created_at")
    return "\t".join(str(item[k]) for k in shown if k in item)


def _show(answer: Any, as_json: bool) -> None:
    print(
        json.dumps(answer, indent=2) if as_json and not isinstance(answer, str) else _text(answer)
    )
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "hook":
        return _hook(args)
    token = os.environ.get("JAATO_TOKEN", "").strip()
    if not token:
        print(
            "jaato-gc: set JAATO_TOKEN to a token from the dashboard's Tokens page", file=sys.stderr
        )
        return EXIT_USAGE
    code = EXIT_OK
    try:
        try:
            answer = args.func(Api(args.url, token), args)
        except PartlyRefused as problem:
            answer, code = problem.answer, problem.code
            print(f"jaato-gc: {problem}", file=sys.stderr)
        _show(answer, args.json)
    except ClientError as problem:
        print(f"jaato-gc: {problem}", file=sys.stderr)
        return problem.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (``head``) has what it wanted; say nothing more, and keep Python from
        # complaining while it flushes the closed stdout on the way out.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE
    return code


if __name__ == "__main__":
    sys.exit(main())
