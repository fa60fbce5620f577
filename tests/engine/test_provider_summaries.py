"""Model-written summaries through the user's provider (OpenAI-compatible or Anthropic, each
through its official SDK), against a server on the loopback: bounded in time and tokens, the
call's cost on the run, and the deterministic summary with the reason when the provider fails."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import gcengine
from gcengine import MessageKind, Session
from gcengine.errors import SummarizerError
from gcengine.gc.provider_summaries import ProviderSettings, ProviderSummarizer
from gcengine.gc.summarizers import ExtractiveSummarizer, Summarizer
from gcengine.running import load_gc_plugin, run_gc
from gcengine.synthetic import SessionShape, generate_session_file
from gcengine.tokens import TokenCounter
from tests.chat_server import FakeChatServer

SUMMARY = "Decided: fix parser.py (3 bugs)."


def long_session(counter: TokenCounter) -> Session:
    session = gcengine.load_session(
        generate_session_file(SessionShape(turns=30, seed=21)), counter=counter
    )
    session = session.model_copy(update={"context_limit": 20_000})
    session.budget = gcengine.rebuild_budget(session, counter)
    return session


def settings(chat_server: str, protocol: str, **fields: Any) -> ProviderSettings:
    # The Anthropic SDK adds /v1 itself; OpenAI-compatible endpoints are named with it.
    base = chat_server if protocol == "openai" else chat_server.removesuffix("/v1")
    model = "gpt-5-mini" if protocol == "openai" else "claude-haiku-4-5"
    return ProviderSettings.model_validate(
        {"protocol": protocol, "model": model, "base_url": base, "api_key": "sk-test", **fields}
    )


def summarized(session: Session, summarizer: Summarizer) -> tuple[gcengine.Message, dict[str, Any]]:
    plugin = load_gc_plugin("summarize", {"summarizer": summarizer})
    config = gcengine.load_gc_config({"type": "summarize", "max_summary_tokens": 300}, env={})
    outcome = run_gc(session, config, plugin=plugin)
    assert outcome.result.success
    summary = next(m for m in outcome.session.history if m.kind is MessageKind.SUMMARY)
    return summary, outcome.result.details


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_the_provider_writes_the_summary_within_the_cap_and_its_cost_is_recorded(
    protocol: str, chat_server: str, counter: TokenCounter
) -> None:
    FakeChatServer.reply = {
        "choices": [{"message": {"role": "assistant", "content": SUMMARY}}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240},
    }
    summarizer = ProviderSummarizer(
        settings(chat_server, protocol), ExtractiveSummarizer(), price_per_mtok=(1.0, 5.0)
    )
    summary, details = summarized(long_session(counter), summarizer)
    assert SUMMARY in summary.text
    request = FakeChatServer.requests[-1]
    body = request["body"]
    if protocol == "openai":
        assert request["path"] == "/v1/chat/completions"
        assert request["auth"] == "Bearer sk-test"
        assert "[Called" in body["messages"][1]["content"]
    else:
        assert request["path"] == "/v1/messages"
        assert request["api_key"] == "sk-test"
        assert "[Called" in body["messages"][0]["content"]
    # Bounded in tokens: the call's output cap is the summary's room (at most the cap).
    assert 0 < body["max_tokens"] <= 300
    call = details["summary_call"]
    assert (call["input_tokens"], call["output_tokens"]) == (1200, 40)
    assert call["dollars"] == pytest.approx((1200 * 1.0 + 40 * 5.0) / 1e6)
    assert call["fallback_reason"] is None
    assert summary.metadata["summarizer"] == f"{protocol}:{call['model']}"


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        ({"status": 500}, "HTTP 500"),
        ({"raw": b"<html>not json"}, "not"),
        ({"delay": 30.0}, "no answer within 0.5 s"),
    ],
)
def test_a_failing_provider_leaves_the_deterministic_summary_and_says_why(
    protocol: str,
    failure: dict[str, Any],
    reason: str,
    chat_server: str,
    counter: TokenCounter,
) -> None:
    for name, value in failure.items():
        setattr(FakeChatServer, name, value)
    session = long_session(counter)
    summarizer = ProviderSummarizer(
        settings(chat_server, protocol, timeout=0.5), ExtractiveSummarizer()
    )
    summary, details = summarized(session, summarizer)
    call = details["summary_call"]
    assert reason in call["fallback_reason"]
    assert call["written_by"] == "extractive"
    assert summary.metadata["summarizer"] == "extractive"
    assert SUMMARY not in summary.text
    # What the deterministic summarizer writes for the same turns, after one request (no
    # retries), bounded by the timeout rather than the server's delay: the server answers
    # after 30 s; a loaded machine adds seconds of its own (the SDK's import, the fallback
    # summary), never that.
    assert len(FakeChatServer.requests) == 1
    if "delay" in failure:
        assert call["seconds"] < failure["delay"] / 3
    expected, _ = summarized(session, ExtractiveSummarizer())
    assert summary.text == expected.text


@pytest.mark.parametrize(
    ("protocol", "reply", "reason"),
    [
        (
            "openai",
            {"choices": [{"message": {"role": "assistant", "content": None, "refusal": "No."}}]},
            "refused",
        ),
        ("openai", {"choices": [{"message": {"role": "assistant", "content": "  "}}]}, "empty"),
        ("openai", {"choices": []}, "no choices"),
        (
            "anthropic",
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": [],
                "stop_reason": "refusal",
                "usage": {"input_tokens": 10, "output_tokens": 0},
            },
            "refused",
        ),
        (
            "anthropic",
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": ""}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 0},
            },
            "empty",
        ),
    ],
)
def test_a_refusal_or_an_empty_answer_falls_back(
    protocol: str, reply: dict[str, Any], reason: str, chat_server: str, counter: TokenCounter
) -> None:
    if protocol == "openai":
        FakeChatServer.reply = reply
    else:
        FakeChatServer.anthropic_reply = reply
    summarizer = ProviderSummarizer(settings(chat_server, protocol), ExtractiveSummarizer())
    _, details = summarized(long_session(counter), summarizer)
    assert reason in details["summary_call"]["fallback_reason"]


def test_the_provider_is_chosen_by_the_policy_and_set_by_the_environment(
    chat_server: str, monkeypatch: pytest.MonkeyPatch, counter: TokenCounter
) -> None:
    monkeypatch.setenv("JAATO_GC_PROVIDER", "openai")
    monkeypatch.setenv("JAATO_GC_PROVIDER_MODEL", "llama3")
    monkeypatch.setenv("JAATO_GC_PROVIDER_BASE_URL", chat_server)
    config = gcengine.load_gc_config(
        {"type": "summarize", "plugin_config": {"summarizer": "provider"}}, env={}
    )
    outcome = run_gc(long_session(counter), config)
    assert outcome.result.success
    assert outcome.result.details["summary_call"]["written_by"] == "openai:llama3"
    assert FakeChatServer.requests[-1]["body"]["model"] == "llama3"


def test_the_settings_are_checked_and_the_key_never_shown() -> None:
    with pytest.raises(SummarizerError, match="JAATO_GC_PROVIDER"):
        ProviderSettings.from_environment({})
    with pytest.raises(SummarizerError, match="timeout"):
        ProviderSettings.from_environment(
            {
                "JAATO_GC_PROVIDER": "openai",
                "JAATO_GC_PROVIDER_MODEL": "m",
                "JAATO_GC_PROVIDER_TIMEOUT": "soon",
            }
        )
    with pytest.raises(SummarizerError, match="protocol"):
        ProviderSettings.from_environment(
            {"JAATO_GC_PROVIDER": "gemini", "JAATO_GC_PROVIDER_MODEL": "m"}
        )
    chosen = ProviderSettings(protocol="anthropic", model="m", api_key="sk-secret")  # type: ignore[arg-type]
    assert "sk-secret" not in repr(chosen)
    assert "sk-secret" not in chosen.model_dump_json()


def test_the_engine_imports_without_the_sdks() -> None:
    code = (
        "import sys; sys.modules['openai'] = None; sys.modules['anthropic'] = None\n"
        "import gcengine, gcengine.gc.provider_summaries\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
