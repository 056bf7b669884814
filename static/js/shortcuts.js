// Keyboard shortcuts of the chat page, listed in its "?" sheet: n (new conversation), / (the
// message box), Esc (stop generating), ? (the sheet). Letters never fire while someone types in a
// field, and the keys of question cards (a, b, …, 1, 2, …) stay theirs (static/js/clarion.js).
(function () {
  "use strict";

  function isTyping(el) {
    if (!el || !el.tagName) return false;
    if (el.tagName === "INPUT") return ["checkbox", "radio", "button", "submit", "reset"].indexOf(el.type) < 0;
    return el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable;
  }

  function openDialog() { return document.querySelector("dialog[open]"); }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.isComposing) return;
    if (event.key === "Escape") {
      // An open dialog or drawer takes Esc for itself (closing it).
      if (openDialog() || document.body.classList.contains("drawer-open")) return;
      var stop = document.querySelector(".stop-generating");
      if (stop && document.querySelector("#message-list .message.streaming")) {
        event.preventDefault();
        stop.requestSubmit();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target) || openDialog()) return;
    if (event.key === "?") {
      event.preventDefault();
      document.getElementById("shortcuts-dialog").showModal();
    } else if (event.key === "/") {
      var input = document.getElementById("composer-input");
      if (input) { event.preventDefault(); input.focus(); }
    } else if (event.key === "n") {
      var form = document.getElementById("new-conversation");
      if (form) { event.preventDefault(); form.requestSubmit(); }
    }
  });
})();
