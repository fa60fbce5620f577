// The upload form's drop zone: files dropped on it are handed to the file input, as if
// picked with the file chooser, and the chosen names are listed. A dropped folder is read
// for the files in it and its subfolders (a Claude Code session with its subagents folder). The form itself posts
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

  // The files of a dropped entry: itself, or everything under a folder.
  function filesOf(entry) {
    if (entry.isFile) {
      return new Promise(function (resolve) {
        entry.file(function (file) { resolve([file]); }, function () { resolve([]); });
      });
    }
    return new Promise(function (resolve) {
      var reader = entry.createReader();
      var all = [];
      (function readMore() {
        reader.readEntries(function (batch) {
          if (!batch.length) {
            Promise.all(all.map(filesOf)).then(function (nested) {
              resolve([].concat.apply([], nested));
            });
            return;
          }
          all = all.concat(batch);
          readMore();
        }, function () { resolve([]); });
      })();
    });
  }

  function setUp(zone) {
    var input = zone.querySelector('input[type="file"]');
    var folder = zone.querySelector("[data-choose-folder]");
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
      var entries = Array.prototype.map.call(event.dataTransfer.items || [], function (item) {
        return item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
      });
      if (!entries.some(function (entry) { return entry && entry.isDirectory; })) {
        input.files = event.dataTransfer.files;
        input.dispatchEvent(new Event("change", { bubbles: true }));
        return;
      }
      Promise.all(entries.filter(Boolean).map(filesOf)).then(function (found) {
        var chosen = new DataTransfer();
        found.forEach(function (files) {
          files.forEach(function (file) { chosen.items.add(file); });
        });
        input.files = chosen.files;
        input.dispatchEvent(new Event("change", { bubbles: true }));
      });
    });
    input.addEventListener("change", function () {
      listFiles(input, list);
    });
    // The same picker, for a folder: every file in it and its subfolders is sent.
    if (folder && "webkitdirectory" in input) {
      folder.hidden = false;
      folder.addEventListener("click", function () {
        input.setAttribute("webkitdirectory", "");
        input.click();
      });
      input.addEventListener("change", function () {
        input.removeAttribute("webkitdirectory");
      });
    }

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
