// Apply page: "select all" / "none" for the session checkboxes ([data-check-all=NAME],
// [data-check-none=NAME] act on input[type=checkbox][name=NAME] of the same form).
(function () {
  "use strict";

  function setAll(button, checked) {
    var name = button.getAttribute(checked ? "data-check-all" : "data-check-none");
    var form = button.closest("form");
    form.querySelectorAll("input[type=checkbox]").forEach(function (box) {
      if (box.name === name) {
        box.checked = checked;
      }
    });
  }

  document.addEventListener("click", function (event) {
    var all = event.target.closest("[data-check-all]");
    var none = event.target.closest("[data-check-none]");
    if (all) {
      setAll(all, true);
    } else if (none) {
      setAll(none, false);
    }
  });
})();
