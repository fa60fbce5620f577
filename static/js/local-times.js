// Times are rendered in the server's zone and name it ("2026-11-26 15:11 UTC"). In a browser
// each is shown in the reader's own zone instead, named the way the browser names it, with the
// server's reading kept as its title: a run that finished at 15:11 UTC reads 16:11 CET in
// Berlin, where an unlabelled UTC time read an hour early. Only a <time> holding a time of day
// is changed; fragments htmx swaps in are changed as they settle.
(function () {
  "use strict";

  var TIME_OF_DAY = /\d{2}:\d{2}(:\d{2})?/;

  function twoDigits(number) {
    return String(number).padStart(2, "0");
  }

  var ZONE = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" });

  function zoneName(date) {
    var zone = ZONE.formatToParts(date).find(function (part) {
      return part.type === "timeZoneName";
    });
    return zone ? zone.value : "";
  }

  function showLocally(element) {
    var shown = TIME_OF_DAY.exec(element.textContent);
    var date = new Date(element.getAttribute("datetime"));
    if (element.hasAttribute("data-local") || !shown || isNaN(date.getTime())) {
      return;
    }
    var text =
      date.getFullYear() + "-" + twoDigits(date.getMonth() + 1) + "-" + twoDigits(date.getDate()) +
      " " + twoDigits(date.getHours()) + ":" + twoDigits(date.getMinutes()) +
      (shown[1] ? ":" + twoDigits(date.getSeconds()) : "");
    element.title = element.textContent.trim();
    element.textContent = (text + " " + zoneName(date)).trim();
    element.setAttribute("data-local", "");
  }

  function showAllLocally() {
    document.querySelectorAll("time[datetime]").forEach(showLocally);
  }

  showAllLocally();
  document.body.addEventListener("htmx:afterSettle", showAllLocally);
})();
