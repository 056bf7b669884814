// The chat page around the thread: the tab's title and the conversation list follow what the
// server swaps in; Edit on the person's last message; a copy button on every code block.
(function () {
  "use strict";

  function currentConversation() {
    var layout = document.querySelector(".chat-layout[data-conversation]");
    return layout ? layout.dataset.conversation : "";
  }

  // --- the tab's title is the conversation's (its first message names it; a rename) -------------
  function syncTitle() {
    var heading = document.querySelector("#conversation-header .conversation-title");
    if (heading) document.title = heading.textContent.trim() + " · Clarion";
  }

  // --- the list: sent to every tab of the user in its new order (a new message, a pin) ----------
  // It comes unmarked, since each tab shows another conversation; a tab showing search results
  // keeps them, searched again so they follow the change too.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (!detail || !detail.target || detail.target.id !== "conversation-list") return;
    var search = document.getElementById("conversation-search");
    if (search && search.value.trim() !== "" && search.form) {
      detail.shouldSwap = false;
      htmx.trigger(search.form, "search");
    }
  });

  function markCurrent() {
    var link = document.getElementById("conv-" + currentConversation());
    if (link) link.classList.add("current");
  }

  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target) return;
    // After the swap settles: settling gives swapped-in elements back the class they came with.
    if (target.id === "conversation-list") setTimeout(markCurrent, 0);
    if (target.id === "conversation-header") syncTitle();
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id === "conversation-header") syncTitle();
  });

  // --- edit and resend the last message -----------------------------------------------------------
  function openEdit(article) {
    var form = article && article.querySelector(".edit-message");
    if (!form) return;
    var field = form.querySelector("textarea");
    field.value = field.defaultValue;
    form.hidden = false;
    article.classList.add("editing");
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }

  function closeEdit(article) {
    var form = article && article.querySelector(".edit-message");
    if (!form) return;
    form.hidden = true;
    article.classList.remove("editing");
    var button = article.querySelector("[data-edit-message]");
    if (button) button.focus();
  }

  document.addEventListener("click", function (event) {
    var edit = event.target.closest("[data-edit-message]");
    if (edit) { openEdit(edit.closest(".message")); return; }
    var cancel = event.target.closest("[data-edit-cancel]");
    if (cancel) { closeEdit(cancel.closest(".message")); return; }
    var copy = event.target.closest(".code-copy");
    if (copy) copyCode(copy);
  });

  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (!field.closest || !field.closest(".edit-message") || field.tagName !== "TEXTAREA" || event.isComposing) return;
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      if (field.value.trim() !== "") field.form.requestSubmit();
    } else if (event.key === "Escape") {
      event.preventDefault();
      closeEdit(field.closest(".message"));
    }
  });

  // --- code blocks: the language and a copy button, on replies as they stream and once saved ----
  function decorateCodeBlocks() {
    document.querySelectorAll(".message .markdown pre").forEach(function (pre) {
      if (pre.parentNode.classList.contains("code-block")) return;
      var code = pre.querySelector("code");
      var wrap = document.createElement("div");
      wrap.className = "code-block";
      var head = document.createElement("div");
      head.className = "code-block-head";
      var language = code && /(?:^|\s)language-(\S+)/.exec(code.className);
      if (language) {
        var label = document.createElement("span");
        label.textContent = language[1];
        head.appendChild(label);
      }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "small-button code-copy";
      button.textContent = "Copy code";
      head.appendChild(button);
      pre.tabIndex = 0; // a long line scrolls sideways: the keyboard must reach it too
      pre.parentNode.insertBefore(wrap, pre);
      wrap.appendChild(head);
      wrap.appendChild(pre);
    });
  }

  function copyCode(button) {
    var code = button.closest(".code-block").querySelector("pre");
    var done = function (label) {
      button.textContent = label;
      setTimeout(function () { button.textContent = "Copy code"; }, 2000);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(code.textContent).then(function () { done("Copied"); }, function () { done("Copy failed"); });
    } else {
      done("Copy failed");
    }
  }

  document.addEventListener("htmx:load", decorateCodeBlocks);
  document.addEventListener("DOMContentLoaded", function () {
    decorateCodeBlocks();
    syncTitle();
  });
})();
