"""The prompt-cache cost model, against a replay worked out by hand."""

from __future__ import annotations

import json

import pytest

import gcengine
from gcengine import ModelPrice, PromptRequest

# Every message is 400 characters: 100 tokens at four characters a token, and 3 of framing.
MESSAGE = 103
TURN = 2 * MESSAGE

SONNET = ModelPrice(
    model="claude-sonnet-4",
    input_per_mtok=3.0,
    cache_write_per_mtok=3.75,
    cache_read_per_mtok=0.30,
)


def seven_turns() -> gcengine.Session:
    """Seven turns of a user message and an answer, in a 1,000-token window, counted at four
    characters a token so every figure can be worked out by hand."""
    messages = []
    for turn in range(1, 8):
        messages.append({"role": "user", "content": f"u{turn}" + "x" * 398})
        messages.append({"role": "assistant", "content": f"a{turn}" + "y" * 398})
    session = gcengine.load_session(json.dumps(messages).encode(), counter=gcengine.ApproxCounter())
    return gcengine.with_context_limit(session, 1_000)


def truncate_80_60() -> gcengine.GCConfig:
    return gcengine.load_gc_config(
        {
            "type": "truncate",
            "threshold_percent": 80,
            "target_percent": 60,
            "preserve_recent_turns": 1,
        },
        env={},
    )


def test_a_replay_records_each_request_and_the_prefix_it_shares_with_the_one_before() -> None:
    # After turn 4 the window holds 4 turns (824 tokens, 82.4 %): the truncation keeps turn 1
    # (the original request) and turn 4 (the recent one) and removes turns 2 and 3, which
    # breaks the prefix right after turn 1. The same again after turn 6.
    replay = gcengine.simulate(seven_turns(), truncate_80_60())
    assert [(r.tokens, r.shared_prefix_tokens) for r in replay.requests] == [
        (MESSAGE, 0),  # turn 1: the user's message
        (TURN + MESSAGE, MESSAGE),
        (2 * TURN + MESSAGE, TURN + MESSAGE),
        (3 * TURN + MESSAGE, 2 * TURN + MESSAGE),
        (2 * TURN + MESSAGE, TURN),  # turns 1 and 4, then turn 5's message: only turn 1 shared
        (3 * TURN + MESSAGE, 2 * TURN + MESSAGE),
        (2 * TURN + MESSAGE, TURN),  # turns 1 and 6 after the second collection
    ]
    assert [r.turn_index for r in replay.requests] == list(range(7))


def test_without_gc_every_request_starts_with_the_whole_request_before() -> None:
    requests = gcengine.requests_without_gc(seven_turns())
    assert [r.tokens for r in requests] == [TURN * n + MESSAGE for n in range(7)]
    assert [r.shared_prefix_tokens for r in requests] == [0] + [
        TURN * n + MESSAGE for n in range(6)
    ]


def test_a_smaller_prompt_can_cost_more_once_the_cache_is_counted() -> None:
    policy = gcengine.cache_cost(
        gcengine.simulate(seven_turns(), truncate_80_60()).requests, SONNET
    )
    without = gcengine.cache_cost(gcengine.requests_without_gc(seven_turns()), SONNET)
    assert policy.usage.model_dump() == {
        "requests": 7,
        "tokens_sent": 3399,  # 103 + 309 + 515 + 721 + 515 + 721 + 515
        "cache_read_tokens": 1854,  # 103 + 309 + 515 + 206 + 515 + 206
        "cache_write_tokens": 1545,  # 103 + 206 + 206 + 206 + 309 + 206 + 309
        "uncached_tokens": 0,
    }
    assert without.usage.model_dump() == {
        "requests": 7,
        "tokens_sent": 5047,
        "cache_read_tokens": 3708,  # each request reads the whole one before
        "cache_write_tokens": 1339,  # and writes its last turn
        "uncached_tokens": 0,
    }
    assert policy.dollars == pytest.approx((1854 * 0.30 + 1545 * 3.75) / 1e6)
    assert without.dollars == pytest.approx((3708 * 0.30 + 1339 * 3.75) / 1e6)
    # 33 % fewer tokens sent, and more money.
    assert policy.usage.tokens_sent < 0.7 * without.usage.tokens_sent
    assert policy.dollars > without.dollars
    assert policy.dollars_without_cache == pytest.approx(3399 * 3.0 / 1e6)


def test_prompts_under_the_minimum_are_neither_read_nor_written() -> None:
    requests = gcengine.simulate(seven_turns(), truncate_80_60()).requests
    usage = gcengine.prompt_cache_usage(requests, min_cacheable_tokens=500)
    # 103 and 309 are too short; 515 is written whole (nothing cached before it); 721 reads
    # 515; after each collection only 206 is shared, under the minimum, so 515 is written.
    assert usage.model_dump() == {
        "requests": 7,
        "tokens_sent": 3399,
        "cache_read_tokens": 515 + 515,
        "cache_write_tokens": 515 + 206 + 515 + 206 + 515,
        "uncached_tokens": 103 + 309,
    }
    assert gcengine.prompt_cache_usage(requests, 1_024).uncached_tokens == 3399


def test_a_prefix_is_read_only_from_what_the_request_before_wrote() -> None:
    requests = [
        PromptRequest(turn_index=0, tokens=2_000, shared_prefix_tokens=0),
        PromptRequest(turn_index=1, tokens=500, shared_prefix_tokens=500),  # too short
        PromptRequest(turn_index=2, tokens=3_000, shared_prefix_tokens=500),  # nothing cached
    ]
    usage = gcengine.prompt_cache_usage(requests, min_cacheable_tokens=1_024)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.uncached_tokens) == (
        0,
        5_000,
        500,
    )


def test_the_default_prices_say_where_they_come_from_and_when() -> None:
    for price in gcengine.DEFAULT_PRICES:
        assert price.source.startswith("https://")
        assert price.as_of == "2026-11-25"
        assert price.cache_read_per_mtok < price.input_per_mtok <= price.cache_write_per_mtok


def test_a_model_takes_the_price_of_the_longest_name_it_starts_with() -> None:
    table = [
        SONNET,
        SONNET.model_copy(update={"model": "claude-sonnet-4-5", "input_per_mtok": 9.0}),
    ]
    assert gcengine.price_for_model("claude-sonnet-4-5-20250929", table).input_per_mtok == 9.0
    assert gcengine.price_for_model("Claude-Sonnet-4", table) is SONNET
    assert gcengine.price_for_model("gpt-5", table) is None
    assert gcengine.price_for_model(None, table) is None


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"model": "x"}, "prices"),
        ([{"model": "x", "input_per_mtok": 1}], "prices[0].cache_write_per_mtok"),
        (
            [
                {
                    "model": "x",
                    "input_per_mtok": -1,
                    "cache_write_per_mtok": 1,
                    "cache_read_per_mtok": 1,
                }
            ],
            "prices[0].input_per_mtok",
        ),
        (
            [
                {
                    "model": "x",
                    "input_per_mtok": 1,
                    "cache_write_per_mtok": 1,
                    "cache_read_per_mtok": 1,
                    "currency": "EUR",
                }
            ],
            "prices[0].currency",
        ),
        (
            [
                {
                    "model": "x",
                    "input_per_mtok": 1,
                    "cache_write_per_mtok": 1,
                    "cache_read_per_mtok": 1,
                },
                {
                    "model": "X",
                    "input_per_mtok": 2,
                    "cache_write_per_mtok": 2,
                    "cache_read_per_mtok": 2,
                },
            ],
            "prices[1].model",
        ),
    ],
)
def test_a_bad_price_table_is_refused_naming_the_entry_and_field(data: object, key: str) -> None:
    with pytest.raises(gcengine.PriceTableError) as raised:
        gcengine.load_price_table(data)
    assert raised.value.key == key


def test_the_default_table_loads_back_from_its_json() -> None:
    dumped = [price.model_dump() for price in gcengine.DEFAULT_PRICES]
    assert gcengine.load_price_table(json.loads(json.dumps(dumped))) == list(
        gcengine.DEFAULT_PRICES
    )
