"""Forms of the Plan tab and the planner config editor: widgets and coercion only.

What a valid caps figure or planner setting is, the engine decides (``gcengine.ModelCaps``,
``gcengine.PlannerConfig``, through the services); these turn request data into the values
they take, and give a refusal its place next to the field it names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms

import gcengine
from jaato_web.dashboard import previews
from jaato_web.dashboard.models import PolicyVersion
from jaato_web.dashboard.presenters import PLANNER_LABELS
from jaato_web.pages.forms import MAX_CONTEXT_LIMIT, DashboardForm

TTL_WORDS = {"unlimited": gcengine.TTLState.UNLIMITED}
# Model names the picker suggests: every prefix of the engine's model table.
MODEL_CHOICES = sorted(gcengine.KNOWN_MODEL_LIMITS)


def _normal_first(priority: gcengine.Priority) -> bool:
    return priority is not gcengine.Priority.NORMAL


def _tokens_field(label: str, help_text: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        required=False,
        min_value=1,
        max_value=MAX_CONTEXT_LIMIT,
        help_text=help_text,
        widget=forms.NumberInput(attrs={"step": 1}),
    )


class PlanForm(DashboardForm):
    """What to plan the session for: a model (or typed caps), a planner config, and the TTL
    and priority of the session's pins. Every field is optional: left empty, the session's own
    model and window, the engine's default settings, and pins that never expire."""

    model = forms.CharField(
        label="Model",
        required=False,
        max_length=200,
        help_text="Its window and output limit come from the model table; type any name.",
        widget=forms.TextInput(attrs={"list": "plan-models", "autocomplete": "off"}),
    )
    context_length = _tokens_field("Context window (L)", "Tokens; instead of the model's.")
    max_completion_tokens = _tokens_field(
        "Output limit", "The most the model writes in one answer; instead of the table's."
    )
    max_prompt_tokens = _tokens_field(
        "Endpoint prompt limit", "Some endpoints accept fewer prompt tokens than the window."
    )
    request_max_tokens = _tokens_field(
        "Request max_tokens", "Set by the caller: the completion reservation (C) is then this."
    )
    config = forms.ChoiceField(
        label="Planner config",
        required=False,
        help_text="Stored settings; the engine's defaults when none is chosen.",
    )
    pin_priority = forms.ChoiceField(
        label="Pin priority",
        required=False,
        # Normal first: the form is always bound, and an empty value shows the first choice.
        choices=[(p.value, p.value) for p in sorted(gcengine.Priority, key=_normal_first)],
        help_text="Pins are taken by priority, then newest first.",
    )
    pin_ttl = forms.CharField(
        label="Pin TTL",
        required=False,
        max_length=20,
        help_text="Turns each pin is sent for; empty: never expires; 'unlimited': always sent.",
        widget=forms.TextInput(attrs={"list": "plan-ttls", "autocomplete": "off"}),
    )
    start = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    repin = forms.BooleanField(
        label="Re-pin when a review is asked (Ask policy)",
        required=False,
        help_text="Answer every review request by pinning the item again.",
    )

    def __init__(
        self, *args: Any, versions: Sequence[PolicyVersion], session_model: str, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.config_labels = {str(v.pk): f"{v.policy.name} v{v.number}" for v in versions}
        config = self.fields["config"]
        assert isinstance(config, forms.ChoiceField)
        config.choices = [("", "Engine defaults"), *self.config_labels.items()]
        self.fields["model"].widget.attrs["placeholder"] = session_model or "the session's"

    def clean_pin_ttl(self) -> int | gcengine.TTLState | None:
        value = str(self.cleaned_data.get("pin_ttl") or "").strip().lower()
        if not value:
            return None
        if value in TTL_WORDS:
            return TTL_WORDS[value]
        if value.isascii() and value.isdigit() and int(value) >= 1:
            return int(value)
        raise forms.ValidationError("Give a number of turns (1 or more), or 'unlimited'.")

    def caps(self) -> previews.CapsChoice:
        data = self.cleaned_data
        return previews.CapsChoice(
            model=data.get("model") or None,
            context_length=data.get("context_length"),
            max_completion_tokens=data.get("max_completion_tokens"),
            max_prompt_tokens=data.get("max_prompt_tokens"),
            request_max_tokens=data.get("request_max_tokens"),
        )

    def pins(self) -> previews.PinChoice:
        priority = self.cleaned_data.get("pin_priority") or gcengine.Priority.NORMAL.value
        return previews.PinChoice(
            priority=gcengine.Priority(priority), ttl=self.cleaned_data.get("pin_ttl")
        )

    def config_label(self) -> str:
        """The planner config chosen, as the budget names it."""
        chosen = self.cleaned_data.get("config") or ""
        return self.config_labels.get(chosen, "the engine's defaults")

    def config_version_id(self) -> int | None:
        chosen = self.cleaned_data.get("config")
        return int(chosen) if chosen else None


# --- The planner config editor ---------------------------------------------------------------

SHARES = ("system_pinned", "conversation", "rag")


def planner_help(key: str) -> str:
    """What a setting does, in the engine's own words (its field's description)."""
    return str(gcengine.PlannerConfig.model_fields[key].description)


def _setting_field(key: str, minimum: int) -> forms.IntegerField:
    return forms.IntegerField(
        label=PLANNER_LABELS[key],
        min_value=minimum,
        help_text=planner_help(key),
        widget=forms.NumberInput(attrs={"step": 1}),
    )


def _share_field(section: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=PLANNER_LABELS[f"shares.{section}"],
        min_value=0,
        max_value=100,
        widget=forms.NumberInput(attrs={"step": 1}),
    )


class PlannerConfigForm(DashboardForm):
    """Every setting of ``gcengine.PlannerConfig``; the shares as three fields."""

    default_context_length = _setting_field("default_context_length", 1)
    default_max_completion_tokens = _setting_field("default_max_completion_tokens", 0)
    safety_buffer = _setting_field("safety_buffer", 0)
    shares_system_pinned = _share_field("system_pinned")
    shares_conversation = _share_field("conversation")
    shares_rag = _share_field("rag")
    ttl_policy = forms.ChoiceField(
        label=PLANNER_LABELS["ttl_policy"],
        choices=[(p.value, p.value) for p in gcengine.TTLPolicy],
        help_text=planner_help("ttl_policy"),
        widget=forms.RadioSelect,
    )
    spillover = forms.BooleanField(
        label=PLANNER_LABELS["spillover"], required=False, help_text=planner_help("spillover")
    )
    default_pin_ttl = _setting_field("default_pin_ttl", 1)

    def config(self) -> dict[str, Any]:
        """The planner settings as the engine reads them."""
        data = self.cleaned_data
        return {
            "default_context_length": data["default_context_length"],
            "default_max_completion_tokens": data["default_max_completion_tokens"],
            "safety_buffer": data["safety_buffer"],
            "shares": {s: data[f"shares_{s}"] for s in SHARES},
            "ttl_policy": data["ttl_policy"],
            "spillover": data["spillover"],
            "default_pin_ttl": data["default_pin_ttl"],
        }

    def add_setting_error(self, key: str | None, reason: str) -> None:
        """A refusal of the engine next to the field of the setting it names (``shares.rag``;
        ``shares`` as a whole goes under the last share)."""
        name = (key or "").replace(".", "_")
        if name == "shares":
            name = "shares_rag"
        self.add_error(name if name in self.fields else None, reason)


def planner_form_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """A stored planner config as the editor's initial values."""
    values = {k: v for k, v in config.items() if k != "shares"}
    for section in SHARES:
        values[f"shares_{section}"] = (config.get("shares") or {}).get(section)
    return values


def planner_defaults() -> dict[str, Any]:
    return planner_form_values(gcengine.PlannerConfig().model_dump(mode="json"))
