"""Whose rules a policy follows, in the dashboard: JAATO's names keep JAATO's meaning where a
JAATO gc.json is read (the import page and API), policies written here keep the engine's, the
editor shows and sets the rules, previews follow them, and the exported gc.json makes JAATO
run the policy with them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

import gcengine
from jaato_web.dashboard import services
from jaato_web.dashboard.models import Policy
from tests.web.policy_data import TRUNCATE_POLICY, form_data

pytestmark = pytest.mark.django_db

pytest_plugins = ["tests.web.policy_fixtures"]


def imported(client: Client, document: dict[str, Any], name: str) -> Any:
    return client.post(
        reverse("policy_import"),
        {"file": SimpleUploadedFile("gc.json", json.dumps(document).encode()), "name": name},
        follow=True,
    )


def stored_config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = Policy.objects.get(name=name).versions.latest("number").config
    return config


@pytest.mark.parametrize("named", ["truncate", "gc_summarize", "hybrid", "gc_budget"])
def test_a_jaato_file_naming_jaatos_plugin_is_imported_with_jaatos_rules(
    client: Client, named: str
) -> None:
    answer = imported(client, {"type": named, "preserve_recent_turns": 3}, "from jaato")
    assert answer.status_code == 200
    assert stored_config("from jaato")["rules"] == "jaato"
    html = answer.content.decode()
    assert "follows JAATO&#x27;s rules" in html
    # The editor it lands on shows the rules chosen.
    assert '<option value="jaato" selected>jaato</option>' in html


@pytest.mark.parametrize("named", ["budget", "gcengine_budget"])
def test_keys_a_jaato_file_leaves_out_mean_what_jaatos_loader_makes_of_them(
    client: Client, named: str
) -> None:
    # JAATO's loader: no pressure_percent is continuous mode, and notices are on.
    imported(client, {"type": named, "threshold_percent": 80, "target_percent": 60}, "short")
    config = gcengine.load_gc_config(stored_config("short"), env={})
    assert config.pressure_percent is None
    assert config.notify_on_gc is True
    # Keys the file gives are read as given.
    imported(client, {"type": named, "pressure_percent": 85, "notify_on_gc": False}, "full")
    config = gcengine.load_gc_config(stored_config("full"), env={})
    assert (config.pressure_percent, config.notify_on_gc) == (85, False)


def test_the_design_shape_and_no_type_name_jaatos_plugins_too(client: Client) -> None:
    imported(client, {"plugin": "gc_hybrid", "config": {}}, "design")
    imported(client, {"threshold_percent": 85}, "no type")
    assert stored_config("design")["rules"] == "jaato"
    assert stored_config("no type")["rules"] == "jaato"


@pytest.mark.parametrize(
    "document",
    [
        {"type": "gcengine_truncate"},
        {"type": "truncate", "rules": "engine"},
        {"type": "budget", "plugin_config": {"rules": "engine"}},
        {"type": "reachability"},
    ],
    ids=["engines-plugin", "rules-given", "plugin-config-rules", "no-jaato-plugin"],
)
def test_a_file_that_says_its_rules_or_names_the_engines_plugin_is_read_as_it_says(
    client: Client, document: dict[str, Any]
) -> None:
    answer = imported(client, document, "as it says")
    assert "rules" not in stored_config("as it says")
    assert "follows JAATO&#x27;s rules" not in answer.content.decode()


def test_the_api_import_reads_jaatos_names_as_jaato_does(client: Client) -> None:
    answer = client.post(
        "/api/policies/import",
        {"file": SimpleUploadedFile("gc.json", b'{"type": "truncate"}'), "name": "api"},
    )
    assert answer.status_code == 201
    assert answer.json()["latest"]["config"]["rules"] == "jaato"


def test_a_refused_jaato_file_opens_in_the_editor_with_jaatos_rules(client: Client) -> None:
    answer = client.post(
        reverse("policy_import"),
        {
            "file": SimpleUploadedFile("gc.json", b'{"type": "truncate", "target_percent": 95}'),
            "name": "refused",
        },
    )
    assert answer.status_code == 400
    assert '<option value="jaato" selected>jaato</option>' in answer.content.decode()


def test_a_policy_written_here_keeps_the_engines_rules_when_stored_and_read_again(
    client: Client, project: Any, member: Any
) -> None:
    """Stored policies name strategies by JAATO's names (``"type": "truncate"``): read back,
    they are still the engine's."""
    policy = services.policy_create(
        project=project, name="written here", config=TRUNCATE_POLICY, actor=member
    )
    stored = policy.versions.get().config
    assert stored["type"] == "truncate"
    assert "rules" not in stored
    assert services.config_validated(stored).rules == "engine"
    html = client.get(reverse("policy_edit", args=[policy.pk])).content.decode()
    assert '<option value="engine" selected>engine</option>' in html


def test_the_editor_saves_the_rules_chosen(client: Client, policy: Policy) -> None:
    answer = client.post(
        reverse("policy_edit", args=[policy.pk]),
        form_data({**TRUNCATE_POLICY, "rules": "jaato"}, base_version=1, message="jaato's"),
    )
    assert answer.status_code == 302
    assert policy.versions.get(number=2).config["rules"] == "jaato"


def test_the_preview_follows_the_rules(client: Client, agent_session: Any) -> None:
    """The engine's truncate stops at the target; JAATO's takes every turn not recent or
    pinned (the original request's turn stays: the session's budget locks it)."""

    def ledger(config: dict[str, Any]) -> int:
        answer = client.post(
            reverse("policy_preview"),
            form_data(config, session=agent_session.pk),
            headers={"HX-Request": "true"},
        )
        return answer.content.decode().count('data-turn="')

    engine = ledger({**TRUNCATE_POLICY, "target_percent": 60})
    jaato = ledger({**TRUNCATE_POLICY, "target_percent": 60, "rules": "jaato"})
    assert 0 < engine < jaato
    turns = len(services.engine_session_of(agent_session).turns())
    assert jaato == turns - 1 - TRUNCATE_POLICY["preserve_recent_turns"]


@pytest.mark.parametrize("rules", ["engine", "jaato"])
def test_the_exported_gc_json_runs_the_engines_plugin_in_jaato_with_the_policys_rules(
    client: Client, project: Any, member: Any, rules: str
) -> None:
    policy = services.policy_create(
        project=project, name="export", config={**TRUNCATE_POLICY, "rules": rules}, actor=member
    )
    body = client.get(reverse("policy_export", args=[policy.pk, 1])).content
    document = json.loads(body)
    assert document["type"] == "gcengine_truncate"
    assert document["plugin_config"] == {"rules": rules}
    assert "rules" not in document  # JAATO's loader drops a top-level key it does not know
    # Imported back, the same policy, whatever the rules.
    imported(client, document, "back")
    assert stored_config("back") == policy.versions.get().config
    assert gcengine.load_gc_config(body, env={}).rules == rules
