// Clarion's only hand-written script. Everything it shows comes from server-rendered partials;
// the countdown is a display of a deadline the server stores and enforces.
(function () {
  "use strict";

  var IDLE_RESUME_MS = 5000; // seed 001: typing pauses the clock, 5 s idle resumes it
  var FLASH_MS = 500;        // the default option flashes for the last 500 ms, then is submitted

  // --- composer: Enter sends, Shift+Enter is a new line -------------------------------------
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.id === "composer-input" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (target.value.trim() !== "") target.form.requestSubmit();
      return;
    }
    if (isTyping(target) || event.ctrlKey || event.metaKey || event.altKey) return;
    var card = currentQuestion();
    if (!card) return;
    // Digits pick the option shown in that place; Enter confirms a multi-select.
    if (/^[1-9]$/.test(event.key)) {
      var choices = card.querySelectorAll(".options .option");
      var choice = choices[parseInt(event.key, 10) - 1];
      if (choice) {
        event.preventDefault();
        var box = choice.querySelector("input[type=checkbox]");
        if (box) box.checked = !box.checked; else choice.click();
      }
    } else if (event.key === "Enter") {
      var confirm = card.querySelector(".confirm-multi");
      if (confirm) { event.preventDefault(); confirm.click(); }
    }
  });

  function isTyping(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }

  function currentQuestion() {
    var all = document.querySelectorAll(".question-pending");
    return all.length ? all[all.length - 1] : null;
  }

  // --- connection state (status line; tests wait for it) -------------------------------------
  document.addEventListener("htmx:wsOpen", function () { document.body.dataset.ws = "open"; });
  document.addEventListener("htmx:wsClose", function () { document.body.dataset.ws = "closed"; });

  // Keep the newest message in view as frames arrive.
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var list = document.getElementById("message-list");
    if (list && event.detail && event.detail.target === list && list.lastElementChild) {
      list.lastElementChild.scrollIntoView({ block: "end" });
    }
  });

  // --- countdowns ------------------------------------------------------------------------------
  var clocks = new Map(); // question id → {el, remaining, total, paused, startedAt, fired}

  function scan() {
    document.querySelectorAll(".question-pending[data-remaining]").forEach(function (el) {
      var id = el.dataset.question;
      var known = clocks.get(id);
      if (known && known.el === el) return;
      clocks.set(id, {
        el: el,
        remaining: parseFloat(el.dataset.remaining),
        total: Math.max(parseFloat(el.dataset.total) || 1, 0.001),
        paused: el.dataset.paused === "1" || pausedByMe.has(id),
        startedAt: performance.now(),
        fired: known ? known.fired : false,
      });
    });
    clocks.forEach(function (clock, id) { if (!document.body.contains(clock.el)) clocks.delete(id); });
  }

  function left(clock) {
    if (clock.paused) return clock.remaining;
    return Math.max(0, clock.remaining - (performance.now() - clock.startedAt) / 1000);
  }

  function tick() {
    clocks.forEach(function (clock) {
      var remaining = left(clock);
      var bar = clock.el.querySelector(".countdown-bar");
      if (bar) bar.style.width = (100 * remaining / clock.total).toFixed(2) + "%";
      var readout = clock.el.querySelector(".countdown-time");
      if (readout) readout.textContent = clockText(remaining);
      clock.el.classList.toggle("countdown-low", remaining < Math.min(5, clock.total / 3));
      // The default flashes through the last 500 ms, so the flash ends as the server's deadline
      // arrives: its own timer resolves the question right then and would cut a later flash short.
      var top = clock.el.querySelector(".option.is-default");
      if (top) top.classList.toggle("flash", !clock.paused && remaining <= FLASH_MS / 1000);
      if (!clock.paused && remaining <= 0 && !clock.fired) {
        clock.fired = true;
        expire(clock);
      }
    });
    requestAnimationFrame(tick);
  }

  function clockText(seconds) {
    var whole = Math.ceil(seconds);
    if (whole < 60) return whole + " s";
    var rest = whole % 60;
    return Math.floor(whole / 60) + ":" + (rest < 10 ? "0" : "") + rest;
  }

  function expire(clock) {
    var group = clock.el.closest(".question-card");
    htmx.ajax("POST", clock.el.dataset.expireUrl, { source: clock.el, target: "#" + group.id, swap: "outerHTML" });
  }

  // --- pause while typing ----------------------------------------------------------------------
  var pausedByMe = new Set();
  var idleTimer = null;

  document.addEventListener("input", function (event) {
    var el = event.target;
    if (!(el.id === "composer-input" || el.closest(".custom-answer"))) return;
    var card = currentQuestion();
    if (!card || !card.dataset.remaining) return;
    var id = card.dataset.question;
    var clock = clocks.get(id);
    if (!pausedByMe.has(id)) {
      pausedByMe.add(id);
      if (clock) { clock.remaining = left(clock); clock.paused = true; }
      htmx.ajax("POST", card.dataset.pauseUrl, { source: card, swap: "none" });
    }
    clearTimeout(idleTimer);
    idleTimer = setTimeout(function () {
      pausedByMe.delete(id);
      var current = document.querySelector('.question-pending[data-question="' + id + '"]');
      if (current) htmx.ajax("POST", current.dataset.resumeUrl, { source: current, swap: "none" });
    }, IDLE_RESUME_MS);
  });

  document.addEventListener("htmx:load", scan);
  document.addEventListener("DOMContentLoaded", function () { scan(); requestAnimationFrame(tick); });
})();
