// Forms marked data-swap-errors are answered with 400 (or 413) and the form again, showing
// what to fix; htmx is configured to swap those answers (see the htmx-config meta tag).
// In debug mode django-htmx's own script replaces the whole page with any 400 answer, to
// show Django's error page; for these forms the answer is not an error page, so it is kept
// from reaching that handler. Other failing requests still show Django's debug page.
(function () {
  "use strict";

  document.body.addEventListener("htmx:beforeOnLoad", function (event) {
    var status = event.detail.xhr && event.detail.xhr.status;
    var element = event.detail.elt;
    if ((status === 400 || status === 413) && element && element.closest("[data-swap-errors]")) {
      event.stopPropagation();
    }
  });
})();

// A select marked data-submit-on-change (the header's project switcher) submits its form as
// soon as a choice is made; without JavaScript its form still has a submit button.
(function () {
  "use strict";

  document.addEventListener("change", function (event) {
    var select = event.target;
    if (select instanceof HTMLSelectElement && select.hasAttribute("data-submit-on-change")) {
      select.form.requestSubmit();
    }
  });
})();
