"""The policy editor's pages: list, editor, save and conflicts, import and export, versions,
live preview, pins, compare and apply."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

import gcengine
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import GCRun, JobStatus, Policy
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, signed_in_client
from tests.web.policy_data import (
    DESIGN_SHAPE_FILE,
    JAATO_REPO_FILE,
    JAATO_TUI_EXAMPLE_FILE,
    TRUNCATE_POLICY,
    form_data,
    stored_session,
)

pytestmark = pytest.mark.django_db

pytest_plugins = ["tests.web.policy_fixtures"]

HTMX = {"HX-Request": "true"}


def errors_for(html: str, field: str) -> str:
    """The text of the messages box next to ``field``."""
    match = re.search(
        rf'<div id="errors-{field}" class="field-errors"[^>]*>(.*?)</div>', html, re.S
    )
    assert match, f"no error box for {field}"
    return match.group(1)


def edit_url(policy: Policy) -> str:
    return reverse("policy_edit", args=[policy.pk])


# --- List and default ------------------------------------------------------------------------


def test_list_shows_strategy_figures_latest_version_and_default(client: Client, project, policy):
    services.project_set_default_policy(project=project, policy=policy)

    html = client.get(reverse("policy_list")).content.decode()

    assert policy.name in html
    assert "truncate" in html
    assert "40 %" in html
    assert "v1" in html
    assert "badge--default" in html
    assert reverse("policy_new") in html
    assert reverse("policy_import") in html


def test_list_costs_the_same_queries_however_many_policies_and_versions(
    client: Client, project, policy, django_assert_num_queries
):
    url = reverse("policy_list")
    client.get(url)
    # Sign-in (browser session, user, roles), the project, the newest versions, the header's
    # project list.
    with django_assert_num_queries(6) as one:
        client.get(url)
    for n in range(3):
        other = services.policy_create(project=project, name=f"p{n}", config=TRUNCATE_POLICY)
        services.policy_pins_change(policy=other, change=services.PinChange(pin_turns=(n,)))

    with django_assert_num_queries(len(one.captured_queries)):
        html = client.get(url).content.decode()

    assert html.count("data-policy-id=") == 4


def test_mark_and_unmark_the_default(client: Client, project, policy):
    url = reverse("policy_default", args=[policy.pk])

    client.post(url, {"default": "on"})
    project.refresh_from_db()
    assert project.default_policy == policy

    client.post(url, {"default": "off"})
    project.refresh_from_db()
    assert project.default_policy is None


def test_policies_nav_link_is_on_every_page(client: Client):
    html = client.get(reverse("session_list")).content.decode()

    assert reverse("policy_list") in html


# --- Editor: create, save, validation --------------------------------------------------------


def test_new_policy_is_created_as_version_one(client: Client, agent_session):
    data = form_data(TRUNCATE_POLICY, name="Mine", message="first cut")

    answer = client.post(reverse("policy_new"), data)

    policy = Policy.objects.get(name="Mine")
    version = policy.versions.get()
    assert answer.status_code == 302
    assert answer["Location"] == edit_url(policy)
    assert version.message == "first cut"
    assert version.author == "ann"
    assert version.config == services.config_canonical(TRUNCATE_POLICY)


def test_editor_shows_only_options_and_rules_the_page_needs(client: Client, policy, agent_session):
    html = client.get(edit_url(policy)).content.decode()

    assert 'data-percent-slider="threshold_percent"' in html
    assert 'data-percent-number="threshold_percent"' in html
    assert 'id="preview"' in html
    # Every control's label and help are the engine's table of gc.json keys (plugin_config is
    # edited as two controls: the summarizer, and the other options as JSON).
    edited = [f for f in gcengine.GC_JSON_FIELDS if f.key != "plugin_config"]
    for field in (*edited, *gcengine.PLUGIN_CONFIG_FIELDS):
        if field.kind != "turn_list":  # typed as the session page numbers turns, said below
            assert escape(field.help) in html, field.key
        assert escape(field.label.removesuffix(" %")) in html, field.key
    assert "numbered as the session page shows them" in html
    assert 'data-applies="gc_hybrid"' in html  # summarize_middle_turns, hidden unless hybrid
    assert 'name="base_version" value="1"' in html
    assert "<script" not in html.split("</head>")[1]  # no inline script under the CSP
    assert 'style="' not in html


def test_save_makes_version_two(client: Client, policy, agent_session):
    data = form_data(
        {**TRUNCATE_POLICY, "target_percent": 50}, message="stop at half", base_version=1
    )

    answer = client.post(edit_url(policy), data)

    assert answer.status_code == 302
    latest = policy.versions.order_by("-number").first()
    assert latest.number == 2
    assert latest.config["target_percent"] == 50
    assert latest.message == "stop at half"


def test_the_pinned_turns_field_takes_the_numbers_the_session_page_shows(
    client: Client, project, agent_session
):
    pinned = services.policy_create(
        project=project, name="Pins", config={**TRUNCATE_POLICY, "pinned_turn_indices": [2]}
    )
    html = client.get(edit_url(pinned)).content.decode()
    field = html[html.index('data-pin-list="pinned_turn_indices"') :]
    field = field[: field.index("</ul>")]

    assert 'data-pin-value="3"' in field  # the session page's turn 3 is stable index 2
    assert "turn 3" in field

    data = form_data(TRUNCATE_POLICY, message="keep turn 5", base_version=1)
    client.post(edit_url(pinned), {**data, "pinned_turn_indices": ["3", "5"]})
    refused = client.post(edit_url(pinned), {**data, "pinned_turn_indices": ["0"]})

    latest = pinned.versions.order_by("-number").first()
    assert latest.config["pinned_turn_indices"] == [2, 4]
    assert "turn number" in errors_for(refused.content.decode(), "pinned_turn_indices")


def test_recent_exchanges_left_empty_keep_recent_turns_whole(client: Client, policy):
    """The key's default is a count, so an empty field must be written as null (JAATO's
    whole recent turns), not dropped back to the default."""
    data = form_data(TRUNCATE_POLICY, message="whole recent turns", base_version=1)
    assert data["preserve_recent_exchanges"] == 10  # the default, shown
    client.post(edit_url(policy), {**data, "preserve_recent_exchanges": ""})
    latest = policy.versions.order_by("-number").first()
    assert latest.config["preserve_recent_exchanges"] is None
    html = client.get(edit_url(policy)).content.decode()
    control = html[html.index('name="preserve_recent_exchanges"') :].split(">", 1)[0]
    assert "required" not in control
    assert 'value="' not in control


def test_save_needs_a_message(client: Client, policy):
    answer = client.post(edit_url(policy), form_data(TRUNCATE_POLICY, base_version=1))

    assert answer.status_code == 200
    assert "Say what changed" in errors_for(answer.content.decode(), "message")
    assert policy.versions.count() == 1


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"target_percent": 85}, "target_percent", "must be below threshold_percent"),
        ({"threshold_percent": 120}, "threshold_percent", "between 0 and 100"),
        ({"preserve_recent_turns": -1}, "preserve_recent_turns", "at least 0"),
        (
            {"notify_on_gc": True, "notification_template": "Dropped {bytes}"},
            "notification_template",
            "{bytes}",
        ),
        ({"pinned_turn_indices": [-3]}, "pinned_turn_indices", "turn number"),
    ],
)
def test_engine_messages_appear_next_to_their_field(client: Client, policy, change, field, text):
    data = form_data({**TRUNCATE_POLICY, **change}, message="try", base_version=1)

    html = client.post(edit_url(policy), data).content.decode()

    assert text in errors_for(html, field)
    assert policy.versions.count() == 1


def test_other_plugin_options_must_be_a_json_object(client: Client, policy):
    data = form_data(TRUNCATE_POLICY, message="m", base_version=1, plugin_options="[1, 2]")

    html = client.post(edit_url(policy), data).content.decode()

    assert "JSON object" in errors_for(html, "plugin_options")


def test_options_for_another_strategy_are_kept(client: Client, policy):
    hybrid_options = {**TRUNCATE_POLICY, "summarize_middle_turns": 7, "max_summary_tokens": 300}

    client.post(edit_url(policy), form_data(hybrid_options, message="m", base_version=1))

    stored = policy.versions.get(number=2).config
    assert stored["summarize_middle_turns"] == 7
    assert stored["max_summary_tokens"] == 300


# --- Concurrent saves ------------------------------------------------------------------------


def test_a_save_on_an_older_version_is_refused_with_the_difference_and_edits_kept(
    client: Client, policy, agent_session, project
):
    ann = client
    bob = signed_in_client(make_member(project, "bob", Role.EDITOR))
    for person in (ann, bob):
        assert 'name="base_version" value="1"' in person.get(edit_url(policy)).content.decode()
    ann.post(
        edit_url(policy),
        form_data(
            {**TRUNCATE_POLICY, "target_percent": 50},
            message="ann: stop at half",
            base_version=1,
        ),
    )

    bob_edit = form_data(
        {**TRUNCATE_POLICY, "preserve_recent_turns": 9},
        message="bob: keep more",
        base_version=1,
    )
    answer = bob.post(edit_url(policy), bob_edit)

    html = answer.content.decode()
    assert answer.status_code == 200
    assert policy.versions.count() == 2
    assert 'id="conflict"' in html
    assert "version 2" in html
    diff = html[
        html.index('id="conflict-diff"') : html.index("</table>", html.index("conflict-diff"))
    ]
    assert 'data-key="target_percent"' in diff
    assert 'data-key="preserve_recent_turns"' in diff
    assert ">40<" in diff
    assert ">50<" in diff
    assert 'name="preserve_recent_turns" value="9"' in html  # bob's edit is still there
    assert "bob: keep more" in html
    assert 'name="base_version" value="2"' in html

    bob_edit["base_version"] = 2
    again = bob.post(edit_url(policy), bob_edit)

    assert again.status_code == 302
    assert policy.versions.get(number=3).config["preserve_recent_turns"] == 9


# --- Import and export -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [JAATO_REPO_FILE, JAATO_TUI_EXAMPLE_FILE, DESIGN_SHAPE_FILE], ids=lambda p: p.stem
)
def test_import_file_then_export_gives_the_same_config(client: Client, path):
    answer = client.post(
        reverse("policy_import"),
        {"file": SimpleUploadedFile("gc.json", path.read_bytes()), "name": path.stem},
    )

    policy = Policy.objects.get(name=path.stem)
    assert answer.status_code == 302
    exported = client.get(reverse("policy_export", args=[policy.pk, 1]))
    assert exported["Content-Disposition"] == 'attachment; filename="gc.json"'
    body = exported.content
    # JAATO's plugin named, no rules: read as JAATO runs it, and exported to run so in JAATO.
    read_as_jaato, jaatos = gcengine.load_jaato_gc_config(path.read_bytes(), env={})
    assert jaatos
    assert read_as_jaato.rules == "jaato"
    assert gcengine.load_gc_config(body, env={}) == read_as_jaato
    document = json.loads(body)
    assert document["type"] == f"gcengine_{read_as_jaato.strategy_name}"
    assert document["plugin_config"]["rules"] == "jaato"

    again = client.post(
        reverse("policy_import"),
        {"file": SimpleUploadedFile("gc.json", body), "name": f"{path.stem} again"},
    )

    assert again.status_code == 302
    copy = Policy.objects.get(name=f"{path.stem} again").versions.get()
    assert copy.config == policy.versions.get().config


def test_import_pasted_text_takes_the_file_name_when_unnamed(client: Client):
    client.post(
        reverse("policy_import"),
        {"file": SimpleUploadedFile("team-budget.json", JAATO_REPO_FILE.read_bytes())},
    )
    pasted = client.post(
        reverse("policy_import"),
        {"text": json.dumps({"type": "hybrid", "summarize_middle_turns": 4}), "name": "pasted"},
    )

    assert Policy.objects.filter(name="team-budget").exists()
    assert pasted.status_code == 302
    assert Policy.objects.get(name="pasted").versions.get().config["type"] == "hybrid"


def test_import_of_a_bad_value_opens_the_editor_with_the_message_at_its_field(client: Client):
    bad = {**json.loads(JAATO_REPO_FILE.read_text()), "target_percent": 95}

    answer = client.post(reverse("policy_import"), {"text": json.dumps(bad), "name": "from jaato"})

    html = answer.content.decode()
    assert answer.status_code == 400
    assert 'id="import-problem"' in html
    assert "must be below threshold_percent" in errors_for(html, "target_percent")
    assert re.search(r'name="target_percent"[^>]*value="95"', html)
    assert 'value="from jaato"' in html
    assert not Policy.objects.exists()


_BUDGET = {"type": "budget", "threshold_percent": 80, "target_percent": 60}


def _gc_json(**changes: Any) -> bytes:
    return json.dumps({**_BUDGET, **changes}).encode()


# gc.json files the engine refuses, and the key each refusal must name (None: the file as a
# whole is wrong, before any key is read).
REFUSED_GC_JSON: list[tuple[str, bytes, str | None]] = [
    ("not JSON", b'{"type": "budget",', None),
    ("not UTF-8", b'{"type": "budget", "x": "\xff\xfe"}', None),
    ("empty", b"", None),
    ("only whitespace", b"   \n", None),
    ("a list", b"[1, 2]", None),
    ("a string", b'"budget"', None),
    ("a number", b"42", None),
    ("null", b"null", None),
    ("too big", b'{"type": "budget", "x": "' + b"a" * 300_000 + b'"}', None),
    ("unknown key", _gc_json(treshold_percent=80), "treshold_percent"),
    ("unknown type", _gc_json(type="nonesuch"), "type"),
    ("type not text", _gc_json(type=3), "type"),
    ("threshold text", _gc_json(threshold_percent="high"), "threshold_percent"),
    ("threshold over 100", _gc_json(threshold_percent=150), "threshold_percent"),
    ("threshold negative", _gc_json(threshold_percent=-5), "threshold_percent"),
    ("threshold NaN", b'{"type": "budget", "threshold_percent": NaN}', "threshold_percent"),
    ("target above threshold", _gc_json(target_percent=95), "target_percent"),
    ("pressure text", _gc_json(pressure_percent="x"), "pressure_percent"),
    ("recent turns fraction", _gc_json(preserve_recent_turns=2.5), "preserve_recent_turns"),
    ("recent turns negative", _gc_json(preserve_recent_turns=-1), "preserve_recent_turns"),
    ("max turns text", _gc_json(max_turns="many"), "max_turns"),
    ("auto trigger text", _gc_json(auto_trigger="yes please"), "auto_trigger"),
    ("pinned turns not a list", _gc_json(pinned_turn_indices=3), "pinned_turn_indices"),
    ("pinned turns text", _gc_json(pinned_turn_indices=["a"]), "pinned_turn_indices"),
    ("pinned messages not a list", _gc_json(pinned_message_ids=5), "pinned_message_ids"),
    ("plugin_config not an object", _gc_json(plugin_config=3), "plugin_config"),
]


@pytest.mark.parametrize(
    ("data", "key"), [c[1:] for c in REFUSED_GC_JSON], ids=[c[0] for c in REFUSED_GC_JSON]
)
def test_a_refused_gc_json_is_a_4xx_naming_its_key_on_the_page_as_in_the_api(
    client: Client, data: bytes, key: str | None
) -> None:
    api = client.post("/api/policies/import", {"file": SimpleUploadedFile("x.json", data)})
    uploaded = client.post(reverse("policy_import"), {"file": SimpleUploadedFile("x.json", data)})
    pages = [uploaded]
    if data.strip() and data.isascii():  # what a person can paste (a blank paste is no file)
        pages.append(client.post(reverse("policy_import"), {"text": data.decode()}))

    refusal = api.json()
    assert api.status_code in (400, 413)
    assert refusal["key"] == key
    for page in pages:
        assert page.status_code == api.status_code
        html = page.content.decode()
        # The import form's errors, or the notice on top of the editor the file was opened in.
        shown = re.findall(r'class="field-error">([^<]*)<', html)
        shown += re.findall(r'id="import-problem">(.*?)</div>', html, re.DOTALL)
        assert any(escape(refusal["detail"]) in message for message in shown), shown
    assert not Policy.objects.exists()


def test_import_of_an_unknown_key_names_it_on_top(client: Client):
    answer = client.post(
        reverse("policy_import"),
        {"text": json.dumps({"type": "budget", "treshold_percent": 70}), "name": "typo"},
    )

    html = answer.content.decode()
    top = html[html.index('id="import-errors"') :]
    assert "treshold_percent: unknown key" in top
    assert not Policy.objects.exists()


def test_a_key_named_like_a_control_is_still_unknown(client: Client):
    answer = client.post(
        reverse("policy_import"),
        {"text": json.dumps({"strategy": "budget"}), "name": "x"},
    )

    html = answer.content.decode()
    assert 'id="import-errors"' in html
    assert "strategy: unknown key" in html


def test_import_of_text_that_is_not_json_says_where(client: Client):
    answer = client.post(reverse("policy_import"), {"text": "{oops", "name": "x"})

    assert "not valid JSON" in answer.content.decode()


def test_import_needs_a_file_or_text(client: Client):
    answer = client.post(reverse("policy_import"), {"name": "x"})

    assert "Upload a gc.json file or paste its text" in answer.content.decode()


# --- Versions --------------------------------------------------------------------------------


def test_versions_list_compare_and_restore(client: Client, policy, project):
    services.policy_save(
        policy=policy,
        config={**TRUNCATE_POLICY, "target_percent": 50},
        base_number=1,
        message="half",
        actor=make_member(project, "bob", Role.EDITOR),
    )

    listing = client.get(reverse("policy_versions", args=[policy.pk])).content.decode()
    compared = client.get(
        reverse("policy_versions_compare", args=[policy.pk]), {"a": 1, "b": 2}
    ).content.decode()
    restored = client.post(
        reverse("policy_restore", args=[policy.pk, 1]),
        {"base_version": 2},
    )

    assert "half" in listing
    assert "bob" in listing
    assert 'data-key="target_percent" data-differs' in compared
    assert 'data-key="threshold_percent" data-differs' not in compared
    assert restored.status_code == 302
    v3 = policy.versions.get(number=3)
    assert v3.message == "restored version 1"
    assert v3.config == policy.versions.get(number=1).config


def test_long_histories_are_paged(client: Client, policy, monkeypatch):
    from jaato_web.pages import policies as policy_pages

    monkeypatch.setattr(policy_pages, "VERSIONS_PER_PAGE", 2)
    for turn in range(4):
        services.policy_pins_change(policy=policy, change=services.PinChange(pin_turns=(turn,)))
    url = reverse("policy_versions", args=[policy.pk])

    first = client.get(url).content.decode()
    last = client.get(url, {"page": 3}).content.decode()

    assert re.findall(r'data-version="(\d+)"', first) == ["5", "4"]
    assert re.findall(r'data-version="(\d+)"', last) == ["1"]
    assert "page 1 of 3" in first


def test_restore_over_an_unseen_save_is_refused(client: Client, policy):
    services.policy_save(policy=policy, config=TRUNCATE_POLICY, base_number=1, message="same")

    answer = client.post(
        reverse("policy_restore", args=[policy.pk, 1]), {"base_version": 1}, follow=True
    )

    assert "Not restored" in answer.content.decode()
    assert policy.versions.count() == 2


# --- Live preview ----------------------------------------------------------------------------


def preview(client: Client, session, config: dict[str, Any]) -> str:
    answer = client.post(
        reverse("policy_preview"), form_data(config, session=session.pk), headers=HTMX
    )
    assert answer.status_code == 200
    return answer.content.decode()


def ledger_turns(html: str) -> list[int]:
    table = html[html.index('id="preview-ledger"') :]
    table = table[: table.index("</table>")]
    return [int(t) for t in re.findall(r'data-turn="(\d+)"', table)]


def test_preview_shows_the_ledger_and_tokens_after(client: Client, agent_session):
    from jaato_web.dashboard import previews

    expected = previews.preview(agent_session, services.config_validated(TRUNCATE_POLICY))

    html = preview(client, agent_session, TRUNCATE_POLICY)

    assert 'data-preview-state="ok"' in html
    assert f'data-tokens-after="{expected.tokens_after}"' in html
    assert ledger_turns(html) == [item.turn_index for item in expected.items]
    assert "truncated" in html
    assert "<html" not in html


def test_changing_the_target_changes_the_preview(client: Client, agent_session):
    at_40 = preview(client, agent_session, TRUNCATE_POLICY)
    at_55 = preview(client, agent_session, {**TRUNCATE_POLICY, "target_percent": 55})

    assert len(ledger_turns(at_55)) < len(ledger_turns(at_40))


def test_a_pin_takes_its_turn_out_of_the_preview_ledger(client: Client, agent_session):
    first = ledger_turns(preview(client, agent_session, TRUNCATE_POLICY))[0]

    pinned = preview(client, agent_session, {**TRUNCATE_POLICY, "pinned_turn_indices": [first]})

    assert first not in ledger_turns(pinned)


def test_invalid_input_shows_the_message_instead_of_a_preview(client: Client, agent_session):
    html = preview(client, agent_session, {**TRUNCATE_POLICY, "target_percent": 90})

    assert 'data-preview-state="invalid"' in html
    assert "must be below threshold_percent" in html
    assert 'id="preview-ledger"' not in html
    # The same message goes next to the target control, out of band.
    box = re.search(r'<div id="errors-target_percent"[^>]*hx-swap-oob="true">(.*?)</div>', html)
    assert box
    assert "must be below threshold_percent" in box.group(1)


def test_preview_asks_for_the_replay_then_draws_it(client: Client, agent_session):
    html = preview(client, agent_session, TRUNCATE_POLICY)
    assert reverse("policy_preview_chart") in html

    chart = client.post(
        reverse("policy_preview_chart"),
        form_data(TRUNCATE_POLICY, session=agent_session.pk),
        headers=HTMX,
    ).content.decode()

    assert "<svg" in chart
    assert "<polyline" in chart
    assert 'data-mode="threshold"' in chart
    assert "GC event" in chart
    # A second preview draws the now cached replay at once.
    assert "<svg" in preview(client, agent_session, TRUNCATE_POLICY)


def test_preview_without_sessions_says_so(client: Client, project):
    answer = client.post(reverse("policy_preview"), form_data(TRUNCATE_POLICY))

    assert 'data-preview-state="no-session"' in answer.content.decode()


# --- Pins ------------------------------------------------------------------------------------


def toggle(client: Client, session, turn: int, **extra: Any):
    return client.post(
        reverse("session_pin", args=[session.pk]), {"turn": turn, **extra}, headers=HTMX
    )


def test_pin_toggle_pins_in_the_session_and_writes_no_policy_version(
    client: Client, project, policy, agent_session
):
    services.project_set_default_policy(project=project, policy=policy)

    pinned = toggle(client, agent_session, 5).content.decode()
    unpinned = toggle(client, agent_session, 5).content.decode()

    assert 'aria-pressed="true"' in pinned
    assert "Pinned in this session" in pinned
    assert "<html" not in pinned
    assert 'aria-pressed="false"' in unpinned
    assert policy.versions.count() == 1
    assert services.session_pins(session=agent_session) == (set(), set())


def test_pin_toggle_of_a_missing_turn_says_so(client: Client, agent_session):
    html = toggle(client, agent_session, 999).content.decode()

    assert "has no turn 999" in html
    assert not agent_session.pins.exists()


def test_pin_toggle_without_javascript_redirects_back_with_a_message(client: Client, agent_session):
    page = reverse("session_detail", args=[agent_session.pk])

    answer = client.post(
        reverse("session_pin", args=[agent_session.pk]),
        {"turn": 3, "next": f"{page}?turns=1"},
        follow=True,
    )

    assert answer.redirect_chain[-1][0] == f"{page}?turns=1"
    # The form names the turn by its index; the message by the session page's number.
    assert "Turn 4 is pinned in this session." in answer.content.decode()


def test_pinned_turn_leaves_the_preview_of_that_session(
    client: Client, project, policy, agent_session
):
    first = ledger_turns(preview(client, agent_session, TRUNCATE_POLICY))[0]

    toggle(client, agent_session, first)

    html = preview(client, agent_session, TRUNCATE_POLICY)
    assert first not in ledger_turns(html)
    assert "It keeps what is pinned in this session" in html


def test_session_pins_go_into_a_policy_as_one_version(
    client: Client, project, policy, agent_session
):
    toggle(client, agent_session, 2)
    toggle(client, agent_session, 4)

    answer = client.post(
        reverse("session_pins_to_policy", args=[agent_session.pk]),
        {"policy": policy.pk, "message": "the task and its clarification"},
        follow=True,
    )

    newest = policy.versions.order_by("-number").first()
    assert (newest.number, newest.message) == (2, "the task and its clarification")
    assert newest.config["pinned_turn_indices"] == [2, 4]
    assert "apply to every session the policy runs on" in answer.content.decode()


# --- Compare and apply -----------------------------------------------------------------------


def test_compare_page_shows_what_only_one_policy_removes(client: Client, project, agent_session):
    a = services.policy_create(project=project, name="plain", config=TRUNCATE_POLICY)
    first = ledger_turns(preview(client, agent_session, TRUNCATE_POLICY))[0]
    b = services.policy_create(
        project=project, name="pinned", config={**TRUNCATE_POLICY, "pinned_turn_indices": [first]}
    )

    html = client.get(
        reverse("policy_compare"),
        {"session": agent_session.pk, "a": a.versions.get().pk, "b": b.versions.get().pk},
    ).content.decode()

    only_a = html[html.index('id="only-a"') : html.index('id="both"')]
    only_b = html[html.index('id="only-b"') : html.index('class="compare-columns"')]
    assert re.search(rf'data-turns="[^"]*\b{first}\b', only_a)
    assert not re.search(rf'data-turns="[^"]*\b{first}\b', only_b)
    assert reverse("policy_version_chart") in html


def test_compare_page_lists_turns_by_the_numbers_the_session_page_shows(
    client: Client, project, agent_session
):
    a = services.policy_create(project=project, name="plain", config=TRUNCATE_POLICY)
    b = services.policy_create(
        project=project, name="keep", config={**TRUNCATE_POLICY, "preserve_recent_turns": 9}
    )

    html = client.get(
        reverse("policy_compare"),
        {"session": agent_session.pk, "a": a.versions.get().pk, "b": b.versions.get().pk},
    ).content.decode()

    lists = re.findall(r'<span class="turn-list" data-turns="([^"]*)">([^<]*)</span>', html)
    assert lists
    for indices, shown in lists:
        numbers = [int(n) for n in re.findall(r"\d+", shown.split("…")[0])]
        assert numbers == [int(i) + 1 for i in indices.split()][: len(numbers)]


def test_version_chart_draws_a_stored_version(client: Client, policy, agent_session):
    html = client.get(
        reverse("policy_version_chart"),
        {"session": agent_session.pk, "version": policy.versions.get().pk},
        headers=HTMX,
    ).content.decode()

    assert "<svg" in html
    assert f"{policy.name} v1" in html


def test_bulk_apply_runs_each_selected_session_and_shows_progress(
    client: Client, project, policy, django_capture_on_commit_callbacks
):
    sessions = [stored_session(project, turns=12, seed=seed) for seed in (1, 2)]

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            reverse("policy_apply", args=[policy.pk]),
            {"version": 1, "sessions": [s.pk for s in sessions]},
        )

    runs = GCRun.objects.filter(policy_version__policy=policy).order_by("pk")
    assert answer.status_code == 302
    assert [r.session_id for r in runs] == [s.pk for s in sessions]
    assert all(r.status == JobStatus.DONE for r in runs)
    page = client.get(answer["Location"]).content.decode()
    assert "2 of 2 runs done" in page
    assert 'hx-trigger="every 2s"' not in page  # nothing left to poll


def test_progress_polls_while_runs_are_pending(client: Client, project, policy):
    session = stored_session(project, turns=12)
    run = background.run_start(session=session, policy_version=policy.versions.get())

    html = client.get(reverse("policy_runs"), {"ids": str(run.pk)}, headers=HTMX).content.decode()

    assert "0 of 1 run done" in html
    assert 'hx-trigger="every 2s"' in html
    assert "<html" not in html


def test_apply_needs_a_session(client: Client, policy):
    answer = client.post(reverse("policy_apply", args=[policy.pk]), {"version": 1})

    assert "Choose at least one session" in answer.content.decode()
    assert not GCRun.objects.exists()


def test_the_session_history_has_a_pin_toggle_per_turn(client: Client, project, stored_session):
    html = client.get(reverse("session_detail", args=[stored_session.pk])).content
    text = html.decode()

    assert text.count("data-pin-toggle") == stored_session.turn_count
    assert 'data-turn="0"' in text
