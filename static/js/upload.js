// The upload form's drop zone: files dropped on it are handed to the file input, as if
// picked with the file chooser, and the chosen names are listed. The form itself posts
// normally (or through htmx when it is loaded), so nothing here is needed to upload.
(function () {
  "use strict";

  function listFiles(input, list) {
    if (!list) {
      return;
    }
    list.textContent = "";
    Array.prototype.forEach.call(input.files || [], function (file) {
      var item = document.createElement("li");
      item.textContent = file.name;
      list.appendChild(item);
    });
  }

  function setUp(zone) {
    var input = zone.querySelector('input[type="file"]');
    var list = zone.querySelector("[data-file-list]");
    if (!input) {
      return;
    }
    ["dragenter", "dragover"].forEach(function (type) {
      zone.addEventListener(type, function (event) {
        event.preventDefault();
        zone.classList.add("is-dragover");
      });
    });
    ["dragleave", "dragend", "drop"].forEach(function (type) {
      zone.addEventListener(type, function () {
        zone.classList.remove("is-dragover");
      });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (!event.dataTransfer || !event.dataTransfer.files.length) {
        return;
      }
      input.files = event.dataTransfer.files;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    });
    input.addEventListener("change", function () {
      listFiles(input, list);
    });

    // After an htmx upload that was taken, clear the picker for the next files.
    var form = zone.closest("form");
    if (form) {
      form.addEventListener("htmx:afterRequest", function (event) {
        if (event.detail.xhr && event.detail.xhr.status < 400) {
          form.reset();
          listFiles(input, list);
        }
      });
    }
  }

  document.querySelectorAll("[data-dropzone]").forEach(setUp);
})();
