// Budget trees: each node with children has a button that htmx uses to load them once
// (hx-trigger="click once"); this script only shows and hides the loaded list and keeps
// aria-expanded in step, so screen readers hear whether a node is open.
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-tree-toggle]");
    if (!button) {
      return;
    }
    var list = document.getElementById(button.getAttribute("aria-controls"));
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    if (list) {
      list.hidden = !open;
    }
  });
})();
