"""JAATO's own tests of the shared GC pieces, ported: configuration, budget model, counting.

These cases come from JAATO's ``shared/tests``: ``test_gc_config.py`` (16),
``test_instruction_budget.py`` (43) and ``test_two_phase_budget.py`` (9). Our budget is
JAATO's model figure for figure and ``snapshot()`` writes JAATO's JSON, so most of them carry
over unchanged; many are already covered by ``test_budget.py``, ``test_config.py``,
``test_tokens.py`` and the properties in ``test_properties.py``, and are listed below rather
than copied.

Of the 68 cases, 13 are ported here and these 55 are not:

==============================  ==================================================================
JAATO case                      why it is not ported
==============================  ==================================================================
``TestGCProfileConfig`` (5),    subagent profiles and their ``gc`` block are not part of the
``TestSubagentProfileWithGC``   engine: a policy is a ``gc.json``
(2), ``TestDiscoverProfiles``
``WithGC`` (2)
``test_load_gc_json_missing_``  deliberately different and already covered by ``test_config``:
``file``, ``_invalid_json``,    JAATO returns None and leaves GC silently off (B17); ours raises
``_plugin_not_found``           ``ConfigError`` naming the file, the line and column, or the key
``test_load_gc_json_type_``     already covered by ``test_config::``
``prefix_handling``,            ``test_every_type_spelling_selects_its_plugin``
``_already_prefixed``
``test_load_gc_json_default_``  ``load_gc_config`` reads the source it is given: the engine
``path``                        reads files only when handed a path
``test_all_policies_have_``     already covered by ``test_budget::test_policy_indicators``
``indicators``, ``test_``
``indicator``
``TestSourceEntry`` figures     already covered by ``test_budget::``
(7: leaf and parent totals,     ``test_figures_exclude_thinking_and_follow_policies``,
eligible when locked,           ``test_a_container_counts_its_children_not_its_own_tokens`` and
ephemeral, partial; locked      ``test_jaato_quirks_of_the_buckets_are_kept``
and preservable tokens)
``test_effective_gc_policy_*``  already covered by the property ``test_properties::``
(4) and ``test_to_dict_gc_``    ``test_a_container_shows_its_childrens_policy_when_they_agree``
``policy_uses_effective``       (leaf, agreeing, mixed and nested children, ``to_dict``)
``test_update_tokens``          there is no ``update_tokens``: ``entry.tokens`` is set directly
``test_add_child``,             already covered by ``test_budget::test_add_and_remove_child``
``_to_missing_parent``,
``test_remove_child``
``test_utilization_percent``,   already covered by ``test_budget::``
``test_available_tokens``,      ``test_figures_exclude_thinking_and_follow_policies``
``test_gc_headroom_percent``
``test_create_default``         already covered by ``test_budget::``
                                ``test_create_default_has_every_source_in_jaato_order``
``TestConversationTurnType``    there are no turn-type, tool-type or child-type enums: a message
(2), ``TestPluginToolType``     gets its policy from what it is (original request locked, turn
(2), ``TestSystemChildType``    summaries and collector summaries preservable, the rest
(3)                             ephemeral), checked by ``test_properties::test_only_the_``
                                ``original_request_is_locked_and_summaries_are_preservable``;
                                JAATO never assigns its clarification types (B12)
``TestEstimateTokens::test_``   already covered by ``test_tokens::``
``empty_string``, ``_default_`` ``test_approx_counter_is_chars_over_four``
``ratio``
``TestTwoPhasePopulate`` (6)    there is no live session filling a budget from a provider's
                                ``count_tokens`` in a background thread: the engine counts
                                offline, with tiktoken, when a session is loaded
``TestCountTokensCache`` (3)    already covered by ``test_tokens::``
                                ``test_each_distinct_text_is_counted_once`` and
                                ``test_approx_counter_is_chars_over_four`` (empty text is 0)
==============================  ==================================================================
"""

from __future__ import annotations

import gcengine
from gcengine import ApproxCounter, GCPolicy, InstructionBudget, InstructionSource, SourceEntry
from gcengine.budget import DEFAULT_SOURCE_POLICIES
from gcengine.running import load_gc_plugin, plugin_options

SYSTEM, PLUGIN = InstructionSource.SYSTEM, InstructionSource.PLUGIN


# --- gc.json ---------------------------------------------------------------------------------


def test_a_jaato_gc_json_loads_the_strategy_with_its_options() -> None:
    """JAATO: ``test_load_valid_gc_json``: the plugin gets preserve, notify and middle turns,
    the policy the threshold and preserve."""
    config = gcengine.load_gc_config(
        {
            "type": "hybrid",
            "threshold_percent": 75.0,
            "preserve_recent_turns": 10,
            "notify_on_gc": True,
            "summarize_middle_turns": 15,
        },
        env={},
    )
    assert (config.plugin, config.threshold_percent, config.preserve_recent_turns) == (
        "gc_hybrid",
        75.0,
        10,
    )
    options = plugin_options(config)
    assert options == {
        "preserve_recent_turns": 10,
        "notify_on_gc": True,
        "summarize_middle_turns": 15,
    }
    assert load_gc_plugin(config.plugin, options).name == "gc_hybrid"


# --- enums -----------------------------------------------------------------------------------


def test_policy_and_source_values_are_jaatos() -> None:
    """JAATO: ``test_policy_values`` and ``test_source_values``: the strings in its files."""
    assert [p.value for p in GCPolicy] == [
        "locked",
        "preservable",
        "partial",
        "ephemeral",
        "conditional",
    ]
    assert [s.value for s in InstructionSource] == [
        "system",
        "plugin",
        "enrichment",
        "conversation",
        "thinking",
    ]


def test_every_source_has_jaatos_default_policy() -> None:
    """JAATO: ``test_all_sources_have_default_policies``."""
    assert DEFAULT_SOURCE_POLICIES == {
        InstructionSource.SYSTEM: GCPolicy.LOCKED,
        InstructionSource.PLUGIN: GCPolicy.PARTIAL,
        InstructionSource.ENRICHMENT: GCPolicy.EPHEMERAL,
        InstructionSource.CONVERSATION: GCPolicy.PARTIAL,
        InstructionSource.THINKING: GCPolicy.EPHEMERAL,
    }


# --- entries and the budget ------------------------------------------------------------------


def test_to_dict_has_jaatos_keys_and_nests_children() -> None:
    """JAATO: ``test_to_dict`` and ``test_to_dict_with_children``."""
    leaf = SourceEntry(source=SYSTEM, tokens=500, gc_policy=GCPolicy.LOCKED, label="Base")
    assert leaf.to_dict() == {
        "source": "system",
        "tokens": 500,
        "total_tokens": 500,
        "gc_policy": "locked",
        "gc_eligible_tokens": 0,
        "indicator": "🔒",
        "label": "Base",
    }
    parent = SourceEntry(source=PLUGIN, gc_policy=GCPolicy.PARTIAL)
    parent.add_child("search", 300, GCPolicy.EPHEMERAL)
    data = parent.to_dict()
    assert data["total_tokens"] == 300
    assert data["children"]["search"]["total_tokens"] == 300
    assert data["children"]["search"]["gc_policy"] == "ephemeral"


def test_an_empty_budget_is_all_zeros() -> None:
    """JAATO: ``test_empty_budget``."""
    budget = InstructionBudget()
    figures = (budget.total_tokens(), budget.gc_eligible_tokens(), budget.locked_tokens())
    assert figures == (0, 0, 0)
    assert budget.utilization_percent() == 0.0
    assert budget.available_tokens() == budget.context_limit == 128_000


def test_set_entry_uses_the_sources_default_policy_unless_given_one() -> None:
    """JAATO: ``test_set_entry``, ``test_set_entry_custom_policy`` and ``test_get_entry``."""
    budget = InstructionBudget()
    assert budget.get_entry(SYSTEM) is None
    budget.set_entry(SYSTEM, 500)
    entry = budget.get_entry(SYSTEM)
    assert entry is not None
    assert (entry.gc_policy, entry.total_tokens()) == (GCPolicy.LOCKED, 500)
    custom = budget.set_entry(PLUGIN, 200, GCPolicy.EPHEMERAL)
    assert budget.get_entry(PLUGIN) is custom
    assert custom.gc_policy is GCPolicy.EPHEMERAL


def test_snapshot_carries_the_identity_the_totals_and_the_tree() -> None:
    """JAATO: ``test_snapshot`` (total 1,300 from a system entry and a plugin child)."""
    budget = InstructionBudget(session_id="sess", agent_id="main", context_limit=100_000)
    budget.set_entry(SYSTEM, 1000)
    budget.set_entry(PLUGIN, 0)
    budget.add_child(PLUGIN, "cli", 300, GCPolicy.LOCKED)
    snapshot = budget.snapshot()
    assert (snapshot["session_id"], snapshot["agent_id"], snapshot["context_limit"]) == (
        "sess",
        "main",
        100_000,
    )
    assert snapshot["total_tokens"] == 1300
    assert snapshot["utilization_percent"] == 1.3
    assert set(snapshot["entries"]) == {"system", "plugin"}
    assert snapshot["entries"]["plugin"]["children"]["cli"]["total_tokens"] == 300


def test_create_default_takes_the_agent_type_from_the_agent_id() -> None:
    """JAATO: ``test_create_default_agent_type_defaults_to_agent_id``."""
    budget = InstructionBudget.create_default(session_id="s", agent_id="explorer")
    assert (budget.agent_id, budget.agent_type) == ("explorer", "explorer")


def test_the_approximate_counter_takes_a_custom_ratio() -> None:
    """JAATO: ``test_custom_ratio`` (100 characters at 2 per token is 50 tokens)."""
    assert ApproxCounter(chars_per_token=2.0).count("x" * 100) == 50
