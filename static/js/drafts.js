// What is typed in the message box is kept per conversation (in this browser's localStorage) until
// it is sent: a reload, or a visit to another conversation and back, finds it there again.
(function () {
  "use strict";

  var PREFIX = "clarion:draft:";

  function draftKey() {
    var layout = document.querySelector(".chat-layout[data-conversation]");
    return layout ? PREFIX + layout.dataset.conversation : null;
  }

  function store(text) {
    var key = draftKey();
    if (!key) return;
    try {
      if (text.trim()) localStorage.setItem(key, text); else localStorage.removeItem(key);
    } catch (e) { /* storage full or disabled: the draft is only lost on reload */ }
  }

  function saved() {
    var key = draftKey();
    try { return key ? localStorage.getItem(key) : null; } catch (e) { return null; }
  }

  document.addEventListener("input", function (event) {
    if (event.target.id === "composer-input") store(event.target.value);
  });

  // The server answers a message it took with a fresh, empty composer: the draft has been sent.
  // (A rejected message keeps its composer, and its draft.)
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "composer") return;
    var input = document.getElementById("composer-input");
    if (input && !input.value) store("");
  });

  // Put back after clarion.js (an earlier script) has looked at the message box: a kept draft is
  // not typing, so a card paused by the typing of a page now gone gets its clock back.
  document.addEventListener("DOMContentLoaded", function () {
    var input = document.getElementById("composer-input");
    var text = saved();
    if (input && text && !input.value) input.value = text;
  });
})();
