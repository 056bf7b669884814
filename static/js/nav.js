// Navigation around the chat: the phone drawer, dialogs, a message's copy button.
// No inline handlers anywhere: everything hangs off data- attributes through delegation.
(function () {
  "use strict";

  // --- phone drawer: the conversation list slides over the thread -----------------------------
  function drawerToggles() { return document.querySelectorAll("[data-drawer-open]"); }

  function openDrawer() {
    document.body.classList.add("drawer-open");
    drawerToggles().forEach(function (b) { b.setAttribute("aria-expanded", "true"); });
    var first = document.querySelector("#sidebar button, #sidebar a[href], #sidebar input:not([type=hidden])");
    if (first) first.focus();
  }

  function closeDrawer(returnFocus) {
    if (!document.body.classList.contains("drawer-open")) return;
    document.body.classList.remove("drawer-open");
    drawerToggles().forEach(function (b) { b.setAttribute("aria-expanded", "false"); });
    if (returnFocus) {
      var toggle = document.querySelector("[data-drawer-open]");
      if (toggle) toggle.focus();
    }
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-drawer-open], [data-drawer-close], [data-dialog-open], [data-dialog-close], [data-copy]");
    if (!target) return;
    if (target.hasAttribute("data-drawer-open")) {
      if (document.body.classList.contains("drawer-open")) closeDrawer(true); else openDrawer();
    } else if (target.hasAttribute("data-drawer-close")) {
      closeDrawer(true);
    } else if (target.hasAttribute("data-dialog-open")) {
      var dialog = document.getElementById(target.getAttribute("data-dialog-open"));
      if (dialog && !dialog.open) dialog.showModal();
    } else if (target.hasAttribute("data-dialog-close")) {
      var open = target.closest("dialog");
      if (open) open.close();
    } else if (target.hasAttribute("data-copy")) {
      copyMessage(target);
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && document.body.classList.contains("drawer-open")) {
      event.preventDefault();
      closeDrawer(true);
    }
  });

  // Leaving the phone layout (rotation, a wider window) must not leave the page covered.
  var wide = window.matchMedia("(min-width: 721px)");
  wide.addEventListener("change", function (e) { if (e.matches) closeDrawer(false); });

  // --- copy a message: its Markdown source (data-copy-text), or else its text ---------------------
  function copyMessage(button) {
    var article = button.closest(".message");
    var body = article && article.querySelector(".message-body");
    if (!body) return;
    var text = button.hasAttribute("data-copy-text") ? button.getAttribute("data-copy-text") : body.innerText.trim();
    var done = function (label) {
      var original = button.dataset.label || button.textContent;
      button.dataset.label = original;
      button.textContent = label;
      setTimeout(function () { button.textContent = original; }, 2000);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done("Copied"); }, function () { done("Copy failed"); });
    } else {
      done("Copy failed");
    }
  }
})();
