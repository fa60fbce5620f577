"""The agent tools of the local server (``gcengine mcp``), over session files in a folder:
through the SDK's in-memory client for every tool, and once over stdio as an agent runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from gcengine import generate_session_file, load_gc_config, load_session
from gcengine.mcp_tools import FileStore, build_server
from gcengine.synthetic import SessionShape
from tests.event_loops import run_async
from tests.mcp_results import CheckedCalls, ToolSamples, call_every_tool, refusal_of

SHAPE = SessionShape(turns=6, user_chars=200, model_chars=300, tool_result_chars=600, seed=3)
TOOLS = {
    "context_analyze_usage",
    "context_gc_pin",
    "context_gc_unpin",
    "context_gc_configure",
    "context_gc_analyze",
    "context_gc_prune",
    "context_stash_search",
    "context_stash_retrieve",
}
STASH_TOOLS = {"context_stash_search", "context_stash_retrieve"}
OPENAI_MESSAGES = [
    {"role": "system", "content": "You fix failing tests."},
    {"role": "user", "content": "The billing tests fail since this morning."},
    {"role": "assistant", "content": "Let me run them and read the first failure."},
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "agent").mkdir()
    data = generate_session_file(SHAPE)
    (tmp_path / "agent" / "session.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


def first_message_id(folder: Path) -> str:
    return load_session(folder / "agent" / "session.json").history[0].message_id


def calls(folder: Path, *requests: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    """Each request answered by one in-memory server over ``folder``, in order."""

    async def run() -> list[CallToolResult]:
        async with Client(build_server(FileStore(folder)), raise_exceptions=True) as client:
            return [await client.call_tool(name, arguments) for name, arguments in requests]

    return run_async(run)


def call(folder: Path, name: str, arguments: dict[str, Any]) -> CallToolResult:
    return calls(folder, (name, arguments))[0]


def data_of(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_every_tool_is_listed_with_schemas_written_for_a_model(folder: Path) -> None:
    async def run() -> Any:
        async with Client(build_server(FileStore(folder))) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in run_async(run)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description
        assert len(tool.description) > 200
        assert tool.output_schema is not None
        properties = tool.input_schema["properties"]
        assert "session_id" in properties
        # A stash named inline is the stash an inline prune returned.
        assert ("stash" if tool.name in STASH_TOOLS else "messages") in properties
        assert all(p.get("description") for k, p in properties.items() if k != "message")
    assert tools["context_analyze_usage"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["context_gc_pin"].annotations.idempotent_hint is True  # type: ignore[union-attr]
    assert tools["context_gc_configure"].annotations.read_only_hint is False  # type: ignore[union-attr]
    assert tools["context_gc_analyze"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["context_gc_prune"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert "confirm" in tools["context_gc_prune"].input_schema["properties"]
    pressure = tools["context_gc_configure"].input_schema["properties"]["pressure_percent"]
    assert "continuous" in pressure["description"]


def test_usage_of_a_session_file_under_the_folder(folder: Path) -> None:
    result = call(folder, "context_analyze_usage", {"session_id": "agent/session.json"})
    report = data_of(result)
    assert report["health"] == "ok"
    assert report["policy"]["threshold_percent"] == 80
    assert report["turns"] == SHAPE.turns
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.endswith("Policy: JAATO's defaults (no gc.json yet).")


def test_usage_of_inline_messages_stores_nothing(folder: Path) -> None:
    before = sorted(p.name for p in folder.rglob("*"))
    report = data_of(
        call(folder, "context_analyze_usage", {"messages": OPENAI_MESSAGES, "context_limit": 4000})
    )
    assert report["context_limit"] == 4000
    assert report["context_limit_origin"] == "override"
    assert report["sources"][0] == {**report["sources"][0], "source": "system"}
    assert report["sources"][0]["tokens"] > 0  # the system prompt counts, as in an upload
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_a_jaato_history_inline_is_read_as_its_session_file(folder: Path) -> None:
    history = json.loads((folder / "agent" / "session.json").read_text())["history"]
    report = data_of(call(folder, "context_analyze_usage", {"messages": history}))
    stored = data_of(call(folder, "context_analyze_usage", {"session_id": "agent/session.json"}))
    assert (report["turns"], report["messages"]) == (stored["turns"], stored["messages"])
    # The same conversation, token for token (the window differs: the history names no model).
    assert report["sources"][3]["tokens"] == stored["sources"][3]["tokens"]


def test_usage_reads_the_folders_policy(folder: Path) -> None:
    (folder / "gc.json").write_text('{"threshold_percent": 0.2, "target_percent": 0.1}')
    report = data_of(call(folder, "context_analyze_usage", {"session_id": "agent/session.json"}))
    assert report["percent_used"] > 0.2  # a few thousand tokens of a 200,000-token window
    assert report["policy"]["threshold_percent"] == 0.2
    assert (report["health"], report["gc_would_start"]) == ("collect", True)


@pytest.mark.parametrize(
    ("arguments", "status", "words"),
    [
        ({}, 400, "give either session_id"),
        ({"session_id": "agent/session.json", "messages": OPENAI_MESSAGES}, 400, "not both"),
        ({"session_id": "../outside.json"}, 404, "no session file '../outside.json' under"),
        ({"session_id": "agent/missing.json"}, 404, "no session file"),
        ({"messages": {"nothing": "here"}}, 400, "the session cannot be read"),
        ({"session_id": "agent/session.json", "policy_id": 3}, 400, "has one policy"),
    ],
)
def test_usage_refusals_say_what_to_fix(
    folder: Path, arguments: dict[str, Any], status: int, words: str
) -> None:
    (folder / "outside.json").write_text("{}")
    error = refusal_of(call(folder, "context_analyze_usage", arguments))
    assert error["status"] == status
    assert words in error["message"]


def test_arguments_outside_the_schema_are_a_tool_error_not_a_crash(folder: Path) -> None:
    for name, arguments in [
        ("context_analyze_usage", {"session_id": "agent/session.json", "context_limit": -5}),
        ("context_gc_pin", {"session_id": "agent/session.json", "turn_indices": [-1]}),
        ("context_gc_configure", {"target_percent": "most of it"}),
    ]:
        result = call(folder, name, arguments)
        assert result.is_error is True
        text = result.content[0].text  # type: ignore[union-attr]
        assert f"Error executing tool {name}: 1 validation error" in text


def test_pins_are_kept_per_session_file_and_read_by_the_policy(folder: Path) -> None:
    message_id = first_message_id(folder)
    pinned, again, unpinned = calls(
        folder,
        (
            "context_gc_pin",
            {
                "session_id": "agent/session.json",
                "turn_indices": [1, 3],
                "message_ids": [message_id],
            },
        ),
        ("context_gc_pin", {"session_id": "agent/session.json", "turn_indices": [3]}),
        ("context_gc_unpin", {"session_id": "agent/session.json", "turn_indices": [1]}),
    )
    assert data_of(pinned)["changed"] == [
        "pinned turn index 1",
        "pinned turn index 3",
        f"pinned message {message_id}",
    ]
    assert data_of(again)["changed"] == []
    state = data_of(unpinned)
    assert (state["pinned_turn_indices"], state["pinned_message_ids"]) == ([3], [message_id])
    stored = json.loads((folder / ".gcengine-pins.json").read_text())
    assert stored == {"agent/session.json": {"turn_indices": [3], "message_ids": [message_id]}}
    policy = FileStore(folder).policy("agent/session.json", None)
    assert (policy.config.pinned_turn_indices, policy.config.pinned_message_ids) == (
        [3],
        [message_id],
    )


@pytest.mark.parametrize(
    ("arguments", "status", "words"),
    [
        ({"messages": OPENAI_MESSAGES, "turn_indices": [0]}, 400, "inline messages are not stored"),
        ({"session_id": "agent/session.json"}, 400, "name at least one turn index, message id or"),
        ({"session_id": "agent/gone.json", "turn_indices": [0]}, 404, "no session file"),
    ],
)
def test_pin_refusals_change_nothing(
    folder: Path, arguments: dict[str, Any], status: int, words: str
) -> None:
    error = refusal_of(call(folder, "context_gc_pin", arguments))
    assert (error["status"], words in error["message"]) == (status, True)
    assert not (folder / ".gcengine-pins.json").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"turn_indices": [0, 99]}, "turn_index: agent/session.json has no turn 99"),
        ({"message_ids": ["nope"]}, "message_id: agent/session.json has no message 'nope'"),
    ],
)
def test_a_turn_or_message_the_session_lacks_is_refused_as_the_dashboard_refuses_it(
    folder: Path, arguments: dict[str, Any], message: str
) -> None:
    """The dashboard's words and code (tests/web/test_mcp_tools.py), and its API's 400."""
    error = refusal_of(
        call(folder, "context_gc_pin", {"session_id": "agent/session.json", **arguments})
    )
    assert error == {"status": 400, "code": "bad_input", "message": message}
    assert not (folder / ".gcengine-pins.json").exists()


def test_configure_rewrites_the_folders_gc_json(folder: Path) -> None:
    result = call(
        folder,
        "context_gc_configure",
        {"threshold_percent": 85, "pressure_percent": 0, "preserve_recent_turns": 3},
    )
    saved = data_of(result)
    assert {c["key"]: (c["before"], c["after"]) for c in saved["changes"]} == {
        "threshold_percent": (80.0, 85.0),
        "pressure_percent": (90.0, 0),
        "preserve_recent_turns": (5, 3),
    }
    config = load_gc_config(folder / "gc.json", env={})
    assert (config.threshold_percent, config.continuous_mode) == (85, True)
    assert saved["config"] == json.loads((folder / "gc.json").read_text())
    same = data_of(call(folder, "context_gc_configure", {"threshold_percent": 85}))
    assert same["changes"] == []


@pytest.mark.parametrize(
    ("arguments", "code", "words"),
    [
        ({}, "bad_input", "name at least one setting"),
        ({"target_percent": 95}, "bad_policy", "target_percent: must be below threshold_percent"),
        ({"messages": OPENAI_MESSAGES, "target_percent": 50}, "bad_input", "not stored"),
        ({"session_id": "agent/gone.json", "target_percent": 50}, "not_found", "no session file"),
    ],
)
def test_configure_refusals_leave_the_policy_alone(
    folder: Path, arguments: dict[str, Any], code: str, words: str
) -> None:
    error = refusal_of(call(folder, "context_gc_configure", arguments))
    assert error["code"] == code
    assert words in error["message"]
    assert not (folder / "gc.json").exists()


# --- context_gc_analyze, context_gc_prune, context_stash_search / retrieve --------------------

LONG = SessionShape(
    turns=12, user_chars=200, model_chars=300, tool_result_chars=900, tool_every=2, seed=3
)
TIGHT = '{"threshold_percent": 1, "target_percent": 0.5, "preserve_recent_turns": 2}'


@pytest.fixture
def long_folder(tmp_path: Path) -> Path:
    """Twelve turns, a tool call every other one, under a policy with work to do."""
    (tmp_path / "agent").mkdir()
    data = generate_session_file(LONG)
    (tmp_path / "agent" / "long.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "gc.json").write_text(TIGHT)
    return tmp_path


def test_analyze_proposes_what_a_prune_takes_and_writes_nothing(long_folder: Path) -> None:
    before = sorted(p.name for p in long_folder.rglob("*"))
    result = call(long_folder, "context_gc_analyze", {"session_id": "agent/long.json", "limit": 2})
    found = data_of(result)
    assert found["plan"]["stash"]["segments"] == found["candidates_total"] > 2
    assert [c["proposed"] for c in found["candidates"]] == ["stash", "stash"]
    assert found["candidates"][0]["reason"].startswith("unreachable: ")
    assert found["tokens_after"] < found["tokens_before"]
    assert sorted(p.name for p in long_folder.rglob("*")) == before


def test_analyze_counts_every_segment_once(long_folder: Path) -> None:
    """What may be taken and what is kept, by what keeps it, add up to every segment."""
    session = "agent/long.json"
    pinned = call(long_folder, "context_gc_pin", {"session_id": session, "turn_indices": [1]})
    assert data_of(pinned)["pinned_turn_indices"] == [1]
    result = call(long_folder, "context_gc_analyze", {"session_id": session})
    found = data_of(result)
    kept = found["kept"]
    assert found["candidates_total"] + sum(kept.values()) == found["segments"]
    assert kept["pinned"] > 0  # turn 2, pinned
    assert kept["recent"] > 0  # the latest 2 turns
    assert found["roots"] <= sum(kept.values())  # a root is never taken
    reachable = [c for c in found["candidates"] if c["reachable"]]
    assert found["candidates_reachable"] == len(reachable)
    text = result.content[0].text  # type: ignore[union-attr]
    assert (
        f"{found['segments']} segments: {found['candidates_total']} may be taken "
        f"({found['candidates_reachable']} of them reachable), {sum(kept.values())} kept: "
    ) in text
    assert f"{kept['pinned']} in pinned turns" in text
    assert f"{kept['recent']} in the latest turns" in text


def test_prune_search_and_retrieve_on_session_files(long_folder: Path) -> None:
    original = (long_folder / "agent" / "long.json").read_text()
    pruned = data_of(call(long_folder, "context_gc_prune", {"session_id": "agent/long.json"}))
    assert pruned["new_session_id"] == "agent/long.pruned-1.json"
    assert pruned["run_id"] == "agent/long.pruned-1.stash.json"
    assert pruned["tokens_after"] < pruned["tokens_before"]
    assert (long_folder / "agent" / "long.json").read_text() == original  # never changed
    after = load_session(long_folder / pruned["new_session_id"])
    assert after.budget.total_tokens() == pruned["tokens_after"]
    first = pruned["ledger"][0]
    found, by_run, restored, content = calls(
        long_folder,
        (
            "context_stash_search",
            {"session_id": pruned["new_session_id"], "turn_index": first["turn_index"]},
        ),
        ("context_stash_search", {"run_id": pruned["run_id"], "kind": "decision"}),
        (
            "context_stash_retrieve",
            {"session_id": pruned["new_session_id"], "segment_ids": [first["segment_id"]]},
        ),
        (
            "context_stash_retrieve",
            {"run_id": pruned["run_id"], "segment_ids": [first["segment_id"]], "into": "content"},
        ),
    )
    assert first["segment_id"] in [hit["segment_id"] for hit in data_of(found)["segments"]]
    assert all(hit["kind"] == "decision" for hit in data_of(by_run)["segments"])
    back = data_of(restored)
    assert back["new_session_id"] == "agent/long.pruned-1.restored-1.json"
    assert len(load_session(long_folder / back["new_session_id"]).history) > len(after.history)
    assert data_of(content)["segments"][0]["text"]


def test_retrieving_the_same_segments_again_gives_the_same_session(long_folder: Path) -> None:
    pruned = data_of(call(long_folder, "context_gc_prune", {"session_id": "agent/long.json"}))
    first, second = (item["segment_id"] for item in pruned["ledger"][:2])
    ask = {"run_id": pruned["run_id"], "segment_ids": [first]}
    once = data_of(call(long_folder, "context_stash_retrieve", ask))
    written = long_folder / once["new_session_id"]
    stamp = written.stat().st_mtime_ns
    again, other = calls(
        long_folder,
        ("context_stash_retrieve", ask),
        ("context_stash_retrieve", {**ask, "segment_ids": [second]}),
    )
    assert data_of(again)["new_session_id"] == once["new_session_id"]
    assert written.stat().st_mtime_ns == stamp  # not written again
    assert data_of(other)["new_session_id"] == "agent/long.pruned-1.restored-2.json"
    assert sorted(p.name for p in (long_folder / "agent").glob("*restored*")) == [
        "long.pruned-1.restored-1.json",
        "long.pruned-1.restored-2.json",
    ]


def test_pins_take_the_segment_ids_analyze_lists(long_folder: Path) -> None:
    session = "agent/long.json"
    found = data_of(call(long_folder, "context_gc_analyze", {"session_id": session}))
    exchange = next(c for c in found["candidates"] if "/" in c["segment_id"])
    pinned, pruned, missing = calls(
        long_folder,
        ("context_gc_pin", {"session_id": session, "segment_ids": [exchange["segment_id"]]}),
        ("context_gc_prune", {"session_id": session, "segment_ids": [exchange["segment_id"]]}),
        ("context_gc_pin", {"session_id": session, "segment_ids": ["turn_99/x"]}),
    )
    assert data_of(pinned)["pinned_turn_indices"] == [exchange["turn_index"]]
    assert refusal_of(pruned)["code"] == "protected"  # the pin keeps it
    assert refusal_of(missing) == {
        "status": 404,
        "code": "not_found",
        "message": "the session has no segment 'turn_99/x'",
    }
    unpinned = call(
        long_folder,
        "context_gc_unpin",
        {"session_id": session, "segment_ids": [exchange["segment_id"]]},
    )
    assert data_of(unpinned)["pinned_turn_indices"] == []


def test_files_a_prune_and_a_restore_write_keep_the_pins(long_folder: Path) -> None:
    session = "agent/long.json"
    message_id = load_session(long_folder / session).history[0].message_id
    pin = {"session_id": session, "turn_indices": [1], "message_ids": [message_id]}
    pinned = data_of(call(long_folder, "context_gc_pin", pin))
    pruned = data_of(call(long_folder, "context_gc_prune", {"session_id": session}))
    first = pruned["ledger"][0]["segment_id"]
    restored = data_of(
        call(
            long_folder,
            "context_stash_retrieve",
            {"run_id": pruned["run_id"], "segment_ids": [first]},
        )
    )
    pins = json.loads((long_folder / ".gcengine-pins.json").read_text())
    for derived in (pruned["new_session_id"], restored["new_session_id"]):
        assert pins[derived] == {"turn_indices": [1], "message_ids": [message_id]}
        config = FileStore(long_folder).policy(derived, None).config
        assert config.pinned_turn_indices == pinned["pinned_turn_indices"]


def test_a_search_says_how_many_it_did_not_list(long_folder: Path) -> None:
    pruned = data_of(call(long_folder, "context_gc_prune", {"session_id": "agent/long.json"}))
    result = call(long_folder, "context_stash_search", {"run_id": pruned["run_id"], "limit": 2})
    found = data_of(result)
    assert found["found"] > 2
    listed = [hit["segment_id"] for hit in found["segments"]]
    assert len(listed) == 2
    summary = result.content[0].text
    assert summary.endswith(f"{', '.join(listed)} and {found['found'] - 2:,} more.")


@pytest.mark.parametrize(
    ("arguments", "status", "code"),
    [
        ({"session_id": "agent/long.json", "segment_ids": ["turn_11"]}, 409, "protected"),
        ({"session_id": "agent/long.json", "segment_ids": ["turn_99"]}, 404, "not_found"),
        ({"session_id": "agent/long.json", "action": "auto"}, 400, "confirm_needed"),
        ({"session_id": "agent/gone.json"}, 404, "not_found"),
        ({}, 400, "bad_input"),
    ],
)
def test_prune_refusals_write_nothing(
    long_folder: Path, arguments: dict[str, Any], status: int, code: str
) -> None:
    before = sorted(p.name for p in long_folder.rglob("*"))
    error = refusal_of(call(long_folder, "context_gc_prune", arguments))
    assert (error["status"], error["code"]) == (status, code)
    assert sorted(p.name for p in long_folder.rglob("*")) == before


def test_an_inline_prune_hands_back_its_stash_to_search_and_restore(long_folder: Path) -> None:
    before = sorted(p.name for p in long_folder.rglob("*"))
    conversation = json.loads((long_folder / "agent" / "long.json").read_text())
    pruned = data_of(call(long_folder, "context_gc_prune", {"messages": conversation}))
    assert (pruned["new_session_id"], pruned["run_id"]) == (None, None)
    ids = [item["segment_id"] for item in pruned["ledger"]]
    found, restored = calls(
        long_folder,
        ("context_stash_search", {"stash": pruned["stash"]}),
        (
            "context_stash_retrieve",
            {"stash": pruned["stash"], "messages": pruned["session"], "segment_ids": ids},
        ),
    )
    assert data_of(found)["found"] == len(ids)
    history = data_of(restored)["session"]["history"]
    assert len(history) == len(load_session(long_folder / "agent" / "long.json").history)
    assert sorted(p.name for p in long_folder.rglob("*")) == before


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"session_id": "agent/long.json"}, "was not made by a prune"),
        ({"run_id": "gc.json"}, "is not a stash file a prune wrote"),
        ({"stash": {"segments": "nope"}}, "stash is not a stash a prune returned"),
        ({"run_id": "a", "stash": {}}, "name one stash"),
    ],
)
def test_stash_refusals_say_what_to_give(
    long_folder: Path, arguments: dict[str, Any], words: str
) -> None:
    assert words in refusal_of(call(long_folder, "context_stash_search", arguments))["message"]


def test_configure_changes_roots_and_batches(long_folder: Path) -> None:
    saved = data_of(
        call(
            long_folder,
            "context_gc_configure",
            {"roots": {"active_file_turns": 0}, "incremental": True, "batch_size": 5},
        )
    )
    assert [c["key"] for c in saved["changes"]] == [
        "roots.active_file_turns",
        "incremental",
        "batch_size",
    ]
    config = load_gc_config(long_folder / "gc.json", env={})
    assert (config.roots.active_file_turns, config.incremental, config.batch_size) == (0, True, 5)
    assert config.roots.recent_turns == 3  # the roots not named stay


def test_every_answer_and_refusal_matches_the_tools_output_schema(long_folder: Path) -> None:
    """What a client on the TypeScript SDK checks: each tool's structured content, answers and
    refusals alike, against the output schema it publishes."""
    samples = ToolSamples(
        session="agent/long.json",
        missing_session="agent/gone.json",
        unpin_turn=0,
        protected_segment="turn_11",
        other_stash={"session_id": "agent/long.json"},
        configure={},
    )

    async def run() -> CheckedCalls:
        async with Client(build_server(FileStore(long_folder)), raise_exceptions=True) as client:
            return await call_every_tool(client, samples)

    checked = run_async(run)
    assert checked.listed == TOOLS
    checked.check()


def test_no_answer_names_the_servers_folder(long_folder: Path) -> None:
    """Answers name files by their path under the folder, never where the folder is."""
    (long_folder / "agent" / "broken.json").write_text("{not json", encoding="utf-8")
    session = "agent/long.json"
    results = calls(
        long_folder,
        ("context_analyze_usage", {"session_id": session}),
        ("context_analyze_usage", {"session_id": "agent/broken.json"}),
        ("context_analyze_usage", {"session_id": "agent/gone.json"}),
        ("context_analyze_usage", {"session_id": session, "policy_id": 1}),
        ("context_gc_analyze", {"session_id": session, "limit": 1}),
        ("context_gc_prune", {"session_id": session}),
        ("context_gc_configure", {"threshold_percent": 2}),
        ("context_gc_configure", {"session_id": "../elsewhere.json", "threshold_percent": 3}),
    )
    for result in results:
        shown = json.dumps([result.structured_content, result.model_dump(mode="json")["content"]])
        assert str(long_folder) not in shown
    assert data_of(results[0])["policy"]["threshold_percent"] == 1  # the folder's gc.json
    assert results[0].content[0].text.endswith("Policy: gc.json.")  # type: ignore[union-attr]
    assert data_of(results[6])["policy"] == "gc.json"


def gcengine_command() -> str:
    """The ``gcengine`` console script of the interpreter running the tests."""
    script = Path(sys.executable).with_name("gcengine")
    assert script.exists(), "the project is installed (./dev setup) with its console scripts"
    return str(script)


def test_the_stdio_server_lists_and_calls_its_tools(folder: Path) -> None:
    """``gcengine mcp`` as Claude Code or Codex start it: a subprocess on stdin/stdout."""
    parameters = StdioServerParameters(
        command=gcengine_command(), args=["mcp", "--root", str(folder)]
    )

    async def run() -> tuple[set[str], CallToolResult, CallToolResult]:
        async with Client(parameters) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            usage = await client.call_tool(
                "context_analyze_usage", {"session_id": "agent/session.json"}
            )
            pin = await client.call_tool(
                "context_gc_pin", {"session_id": "agent/session.json", "turn_indices": [0]}
            )
            return names, usage, pin

    names, usage, pin = run_async(run)
    assert names == TOOLS  # the pruning and stash tools too
    assert data_of(usage)["turns"] == SHAPE.turns
    assert data_of(pin)["pinned_turn_indices"] == [0]
    assert (folder / ".gcengine-pins.json").exists()


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from gcengine.cli import main\n"
        f"sys.exit(main(['mcp', '--root', {str(tmp_path)!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert result.stderr == "error: `gcengine mcp` needs the mcp extra: pip install '.[mcp]'\n"


def test_a_root_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [gcengine_command(), "mcp", "--root", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr) == (
        2,
        f"error: {tmp_path / 'nowhere'}: not a folder\n",
    )
