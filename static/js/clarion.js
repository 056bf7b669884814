// Clarion's only hand-written script: keyboard sending. Everything else is server-rendered htmx.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.id !== "composer-input" || event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (target.value.trim() === "") return;
    target.form.requestSubmit();
  });
  // Connection state, for the status line and for tests that must not type before the socket is up.
  document.addEventListener("htmx:wsOpen", function () { document.body.dataset.ws = "open"; });
  document.addEventListener("htmx:wsClose", function () { document.body.dataset.ws = "closed"; });
  // Keep the newest message in view as frames arrive.
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var list = document.getElementById("message-list");
    if (list && event.detail && event.detail.target === list) list.lastElementChild && list.lastElementChild.scrollIntoView({block: "end"});
  });
})();
