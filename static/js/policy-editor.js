// Policy editor: keeps each percentage slider and its number field in step, shows only the
// options the chosen strategy reads, manages the pinned lists, and asks for a new preview
// (an "editor-change" event the form's hx-trigger listens to) when a change does not fire an
// input event of its own. Loaded as a static file: the CSP allows no inline script.
//
// Hooks (stable for tests): form[data-policy-editor]; [data-percent-pair=NAME] holding
// input[data-percent-slider] and input[data-percent-number]; select[data-strategy-select];
// [data-applies="gc_x gc_y"]; [data-mode-label]; [data-pin-list] with [data-pin-items],
// template[data-pin-template], input[data-pin-input], [data-pin-add], [data-pin-remove].
(function () {
  "use strict";

  function changed(form) {
    form.dispatchEvent(new CustomEvent("editor-change", { bubbles: true }));
  }

  function clamp(value) {
    return Math.min(100, Math.max(0, value));
  }

  function setUpPercentPairs(form) {
    form.querySelectorAll("[data-percent-pair]").forEach(function (pair) {
      var slider = pair.querySelector("[data-percent-slider]");
      var number = pair.querySelector("[data-percent-number]");
      if (!slider || !number) {
        return;
      }
      slider.addEventListener("input", function () {
        number.value = slider.value;
      });
      number.addEventListener("input", function () {
        var value = parseFloat(number.value);
        if (!Number.isNaN(value)) {
          slider.value = String(clamp(value));
        }
      });
    });
  }

  function updateMode(form) {
    var pressure = form.querySelector("[data-percent-number='pressure_percent']");
    var label = form.querySelector("[data-mode-label]");
    if (!pressure) {
      return;
    }
    var continuous = parseFloat(pressure.value) === 0;
    form.toggleAttribute("data-continuous", continuous);
    if (label) {
      label.textContent = continuous ? "continuous" : "threshold";
    }
  }

  function updateStrategy(form) {
    var select = form.querySelector("[data-strategy-select]");
    if (!select) {
      return;
    }
    form.querySelectorAll("[data-applies]").forEach(function (element) {
      var strategies = element.getAttribute("data-applies").split(/\s+/);
      element.hidden = strategies.indexOf(select.value) === -1;
    });
  }

  function pinValues(list) {
    return Array.prototype.map.call(list.querySelectorAll("[data-pin-item]"), function (item) {
      return item.getAttribute("data-pin-value");
    });
  }

  function addPin(form, list) {
    var input = list.querySelector("[data-pin-input]");
    var template = list.querySelector("template[data-pin-template]");
    var items = list.querySelector("[data-pin-items]");
    var value = input.value.trim();
    if (!value || pinValues(list).indexOf(value) !== -1) {
      input.value = "";
      return;
    }
    var item = template.content.firstElementChild.cloneNode(true);
    item.setAttribute("data-pin-value", value);
    item.querySelector("input[type=hidden]").value = value;
    var text = item.querySelector(".pins__text");
    text.textContent = text.textContent + value;
    var remove = item.querySelector("[data-pin-remove]");
    remove.setAttribute("aria-label", remove.getAttribute("aria-label") + " " + value);
    items.appendChild(item);
    input.value = "";
    input.focus();
    changed(form);
  }

  function setUpPins(form) {
    form.querySelectorAll("[data-pin-list]").forEach(function (list) {
      var input = list.querySelector("[data-pin-input]");
      list.querySelector("[data-pin-add]").addEventListener("click", function () {
        addPin(form, list);
      });
      input.addEventListener("keydown", function (event) {
        if (event.key === "Enter") {
          event.preventDefault(); // Enter adds the pin instead of saving the whole form
          addPin(form, list);
        }
      });
      list.addEventListener("click", function (event) {
        var button = event.target.closest("[data-pin-remove]");
        if (!button) {
          return;
        }
        var item = button.closest("[data-pin-item]");
        item.parentNode.removeChild(item);
        input.focus();
        changed(form);
      });
    });
  }

  function setUp(form) {
    setUpPercentPairs(form);
    setUpPins(form);
    updateStrategy(form);
    updateMode(form);
    form.addEventListener("input", function () {
      updateStrategy(form);
      updateMode(form);
    });
    // A checkbox's value does not change when it is ticked, so "input changed" misses it.
    form.addEventListener("change", function (event) {
      if (event.target.type === "checkbox") {
        changed(form);
      }
    });
  }

  function start() {
    document.querySelectorAll("form[data-policy-editor]").forEach(setUp);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
