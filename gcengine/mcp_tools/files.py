"""The local server's store: session files under one folder, one gc.json, pins beside them.

For an agent on one machine with no dashboard (``gcengine mcp``). A session is named by its
path under the folder the server was started in, and nothing outside that folder is read or
written. Pins are kept per session file in ``.gcengine-pins.json`` in that folder; the policy
is one gc.json file, which ``context_gc_configure`` rewrites (JAATO's defaults until there is
one).

A prune never changes the file it reads: it writes the session after it beside it
(``session.pruned-1.json``) and what it stashed beside that (``session.pruned-1.stash.json``,
with the names of both sessions); a restore writes ``session.pruned-1.restored-1.json``.
``.gcengine-stashes.json`` records which stash file each of those sessions came from.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gcengine.analysis.prune import pruning_config
from gcengine.config import GCConfig, dump_gc_config, load_gc_config
from gcengine.errors import ToolRefusal
from gcengine.formats import dump_session, load_session
from gcengine.gc.stash import Stash, restore
from gcengine.mcp_tools.inputs import PolicyChanges, changed_config, setting_changes
from gcengine.mcp_tools.stashes import (
    Pruned,
    PruneRequest,
    Retrieved,
    StashFound,
    StashQuery,
    StashRef,
    pruned_of,
    retrieved_content,
    stash_found,
)
from gcengine.mcp_tools.store import ConfiguredPolicy, PinRequest, PinState, PolicyInUse
from gcengine.running.run import run_gc
from gcengine.session import Session

PINS_FILE = ".gcengine-pins.json"
STASHES_FILE = ".gcengine-stashes.json"


def _write_atomically(path: Path, data: Any) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of one."""
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)


class FileStore:
    """Sessions as files under ``root``; the policy in ``policy_path``."""

    def __init__(self, root: Path, policy_path: Path | None = None) -> None:
        self.root = root.resolve()
        self.policy_path = (policy_path or self.root / "gc.json").resolve()
        self.pins_path = self.root / PINS_FILE
        self.stashes_path = self.root / STASHES_FILE

    def _shown(self, path: str | Path) -> str:
        """A file as answers name it: its path under the folder, else its name alone; where
        the folder is stays with the server."""
        path = Path(path)
        if path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        return path.name

    @contextmanager
    def calling(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            where = self._shown(error.filename) if error.filename else "a file"
            raise ToolRefusal(f"{where}: {error.strerror or error}", code="file_error") from None

    def _path(self, session_id: int | str) -> tuple[Path, str]:
        """The file a session id names, and its key in the pins file (its path under root)."""
        path = (self.root / str(session_id)).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            raise ToolRefusal(
                f"no session file {str(session_id)!r} under the server's folder",
                status=404,
                code="not_found",
            )
        return path, path.relative_to(self.root).as_posix()

    def session(self, session_id: int | str) -> Session:
        return load_session(self._path(session_id)[0])

    def _pins(self) -> dict[str, dict[str, list[Any]]]:
        if not self.pins_path.is_file():
            return {}
        data = json.loads(self.pins_path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}

    def _session_pins(self, key: str) -> tuple[list[int], list[str]]:
        entry = self._pins().get(key) or {}
        return list(entry.get("turn_indices") or []), list(entry.get("message_ids") or [])

    def _config(self) -> GCConfig:
        if not self.policy_path.is_file():
            return GCConfig()
        return load_gc_config(self.policy_path, env={})

    def policy(self, session_id: int | str | None, policy_id: int | None) -> PolicyInUse:
        policy = self._shown(self.policy_path)
        if policy_id is not None:
            raise ToolRefusal(f"this local server has one policy, {policy}; leave policy_id out")
        config = self._config()
        label = policy if self.policy_path.is_file() else f"JAATO's defaults (no {policy} yet)"
        if session_id is None:
            return PolicyInUse(config, label)
        turns, ids = self._session_pins(self._path(session_id)[1])
        data = dump_gc_config(config)
        data["pinned_turn_indices"] = sorted({*config.pinned_turn_indices, *turns})
        data["pinned_message_ids"] = list(dict.fromkeys([*config.pinned_message_ids, *ids]))
        return PolicyInUse(load_gc_config(data, env={}), label)

    def pin(self, session_id: int | str, request: PinRequest) -> PinState:
        path, key = self._path(session_id)
        session = load_session(path)
        known_turns = {turn.index for turn in session.turns()}
        # In the words, status and code the dashboard refuses these with.
        missing = sorted(set(request.turn_indices) - known_turns)
        if missing:
            raise ToolRefusal(f"turn_index: {key} has no turn {missing[0]}")
        known_ids = {message.message_id for message in session.history}
        unknown = [i for i in request.message_ids if i not in known_ids]
        if unknown:
            raise ToolRefusal(f"message_id: {key} has no message {unknown[0]!r}")
        turns, ids = self._session_pins(key)
        changed: list[str] = []
        for index in request.turn_indices:
            if (index in turns) != request.pinned:
                turns = [*turns, index] if request.pinned else [t for t in turns if t != index]
                changed.append(f"{'pinned' if request.pinned else 'unpinned'} turn index {index}")
        for message_id in request.message_ids:
            if (message_id in ids) != request.pinned:
                ids = [*ids, message_id] if request.pinned else [i for i in ids if i != message_id]
                changed.append(f"{'pinned' if request.pinned else 'unpinned'} message {message_id}")
        if changed:
            pins = self._pins()
            pins[key] = {"turn_indices": sorted(turns), "message_ids": ids}
            _write_atomically(self.pins_path, pins)
        return PinState(
            session_id=key,
            pinned_turn_indices=sorted(turns),
            pinned_message_ids=ids,
            changed=changed,
        )

    def _carry_pins(self, source_key: str, derived_key: str, derived: Session) -> None:
        """The pins of the file ``source_key`` on the file a prune or restore derived from it,
        for the turns and messages it holds: a turn keeps its stable index and a message its
        id, so each pin means the same there (and a pinned turn is never taken)."""
        turns, ids = self._session_pins(source_key)
        if not turns and not ids:
            return
        held_turns = {turn.index for turn in derived.turns()}
        held_ids = {message.message_id for message in derived.history}
        pins = self._pins()
        pins[derived_key] = {
            "turn_indices": [t for t in turns if t in held_turns],
            "message_ids": [i for i in ids if i in held_ids],
        }
        _write_atomically(self.pins_path, pins)

    def configure(
        self,
        session_id: int | str | None,
        policy_id: int | None,
        changes: PolicyChanges,
        message: str,
    ) -> ConfiguredPolicy:
        if policy_id is not None:
            self.policy(None, policy_id)  # refuses, naming the one policy there is
        if session_id is not None:
            self._path(session_id)  # a session that is not there is an error, not ignored
        before = dump_gc_config(self._config())
        after = changed_config(before, changes)
        moved = setting_changes(before, after)
        if moved:
            _write_atomically(self.policy_path, after)
        return ConfiguredPolicy(policy=self._shown(self.policy_path), changes=moved, config=after)

    # --- Pruning and stashes --------------------------------------------------------------

    def prune(self, session_id: int | str, request: PruneRequest) -> Pruned:
        path, key = self._path(session_id)
        policy = self.policy(session_id, request.policy_id)
        config = pruning_config(policy.config, request.action, request.segment_ids)
        outcome = run_gc(load_session(path), config)  # refuses what it may not take
        if not outcome.result.removal_list:
            return pruned_of(outcome, policy=policy.label, request=request, session_id=key)
        pruned = _beside(path, "pruned")
        pruned.write_text(dump_session(outcome.session), encoding="utf-8")
        new_key = pruned.relative_to(self.root).as_posix()
        self._carry_pins(key, new_key, outcome.session)
        stash_key = None
        stash = outcome.result.stash
        if stash is not None and stash.segments:
            stash_path = pruned.with_name(_stem(pruned) + ".stash.json")
            record = {"source": key, "session": new_key, "stash": stash.model_dump(mode="json")}
            _write_atomically(stash_path, record)
            stash_key = stash_path.relative_to(self.root).as_posix()
            self._remember_stash(new_key, stash_key)
        return pruned_of(
            outcome,
            policy=policy.label,
            request=request,
            session_id=key,
            new_session_id=new_key,
            run_id=stash_key,
        )

    def stash_search(self, ref: StashRef, query: StashQuery) -> StashFound:
        stash_key, stash, _ = self._stash(ref)
        return stash_found(stash, query, stash_key)

    def stash_retrieve(
        self, ref: StashRef, segment_ids: list[str], into_session: bool
    ) -> Retrieved:
        stash_key, stash, left_key = self._stash(ref)
        if not into_session:
            return retrieved_content(stash, segment_ids, stash_key)
        left, _ = self._path(left_key)
        session = restore(load_session(left), stash, segment_ids)
        restored = dump_session(session)
        written, there = _same_or_beside(left, "restored", restored)
        new_key = written.relative_to(self.root).as_posix()
        if not there:
            written.write_text(restored, encoding="utf-8")
            self._carry_pins(left_key, new_key, session)
        self._remember_stash(new_key, stash_key)
        return Retrieved(
            run_id=stash_key,
            into="session",
            restored=list(dict.fromkeys(segment_ids)),
            new_session_id=new_key,
            segments=[],
        )

    def _stashes(self) -> dict[str, str]:
        if not self.stashes_path.is_file():
            return {}
        data = json.loads(self.stashes_path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}

    def _remember_stash(self, session_key: str, stash_key: str) -> None:
        known = self._stashes()
        if known.get(session_key) != stash_key:
            _write_atomically(self.stashes_path, {**known, session_key: stash_key})

    def _stash(self, ref: StashRef) -> tuple[str, Stash, str]:
        """The stash file a reference names, its stash, and the session the prune left."""
        if ref.run_id is not None:
            stash_key = self._path(ref.run_id)[1]
        elif ref.session_id is not None:
            session_key = self._path(ref.session_id)[1]
            found = self._stashes().get(session_key)
            if found is None:
                raise ToolRefusal(
                    f"{session_key} was not made by a prune or a restore here, so it has no "
                    "stash: give the session a prune wrote (new_session_id) or its run_id",
                    status=404,
                    code="not_found",
                )
            stash_key = found
        else:
            raise ToolRefusal("give run_id (a stash file a prune wrote) or session_id")
        path, _ = self._path(stash_key)
        try:
            record = _StashFile.model_validate_json(path.read_bytes())
        except ValidationError:
            raise ToolRefusal(f"{stash_key} is not a stash file a prune wrote") from None
        return stash_key, record.stash, record.session


class _StashFile(BaseModel):
    """A stash file as a prune writes it."""

    source: str
    session: str
    stash: Stash


def _stem(path: Path) -> str:
    return path.name.removesuffix(".json")


def _numbered(path: Path, what: str) -> Iterator[Path]:
    """``<name>.<what>-1.json``, ``-2``, ... beside ``path``."""
    for number in itertools.count(1):
        yield path.with_name(f"{_stem(path)}.{what}-{number}.json")


def _same_or_beside(path: Path, what: str, text: str) -> tuple[Path, bool]:
    """The ``<name>.<what>-<n>.json`` beside ``path`` that holds ``text`` already (True), else
    the first free one (False): the same restore again gives the same file, as the dashboard
    gives the same session."""
    numbered = _numbered(path, what)
    while (found := next(numbered)).exists():
        if found.read_text(encoding="utf-8") == text:
            return found, True
    return found, False


def _beside(path: Path, what: str) -> Path:
    """The first free ``<name>.<what>-<n>.json`` beside ``path``."""
    return next(found for found in _numbered(path, what) if not found.exists())
