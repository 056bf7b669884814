// Clarion's hand-written script. Everything it shows comes from server-rendered partials; it keeps
// the thread scrolled sensibly, gives the question cards their keys, shows messages queued while
// the socket is down, and displays the countdown of a deadline the server stores and enforces.
(function () {
  "use strict";

  var IDLE_RESUME_MS = 5000; // typing pauses the clock; 5 s without typing resumes it
  var FLASH_MS = 500;        // the default option flashes for the last 500 ms, then is submitted
  var KEYS = "abcdefghij";   // the key printed on an option: its place on the card
  var NEAR_BOTTOM_PX = 48;   // "at the bottom" allows for a line of slack

  // A dropped socket comes back quickly and never waits more than 8 s between tries.
  if (window.htmx) {
    htmx.config.wsReconnectDelay = function (retries) {
      return Math.min(500 * Math.pow(2, retries), 8000) * (0.5 + Math.random() / 2);
    };
  }

  // --- a reply that began streaming before this page was loaded -----------------------------------
  // The page was drawn without that reply's bubble, so the stream's late pieces have nowhere to
  // go (htmx would log an error for each): they are dropped. The saved reply, which replaces the
  // bubble when it exists, is added to the end of the thread instead.
  if (window.htmx) {
    htmx.defineExtension("stream-frames", {
      transformResponse: function (text) {
        if (text.indexOf("stream-") < 0) return text;
        var template = document.createElement("template");
        template.innerHTML = text;
        Array.prototype.slice.call(template.content.children).forEach(function (element) {
          var oob = element.getAttribute("hx-swap-oob") || "";
          var colon = oob.indexOf(":#stream-");
          var target = colon >= 0 ? oob.slice(colon + 1) : (/^stream-/.test(element.id) ? "#" + element.id : "");
          if (!target || document.querySelector(target)) return;
          if (colon >= 0 && oob.indexOf("outerHTML") === 0) {
            var list = document.createElement("div");
            list.id = "message-list";
            list.setAttribute("hx-swap-oob", "beforeend");
            element.removeAttribute("hx-swap-oob");
            element.replaceWith(list);
            list.appendChild(element);
          } else {
            element.remove();
          }
        });
        return template.innerHTML;
      }
    });
  }

  function composer() { return document.getElementById("composer-input"); }
  function messageList() { return document.getElementById("message-list"); }

  // --- keyboard: composer and question cards ---------------------------------------------------
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.id === "composer-input" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (target.value.trim() !== "") target.form.requestSubmit();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    var card = currentQuestion();
    if (!card) return;
    // Keys pick options when nothing is being typed: a letter (the key printed on the option) or
    // its number. In the empty chat box only numbers pick — a letter there starts a sentence.
    var inEmptyComposer = target.id === "composer-input" && target.value === "";
    if (isTyping(target) && !inEmptyComposer) return;
    var place = -1;
    if (/^[1-9]$/.test(event.key)) place = parseInt(event.key, 10) - 1;
    else if (!inEmptyComposer && event.key.length === 1 && KEYS.indexOf(event.key.toLowerCase()) >= 0) place = KEYS.indexOf(event.key.toLowerCase());
    if (place >= 0) {
      var choice = card.querySelectorAll(".options .option")[place];
      if (!choice) return;
      event.preventDefault();
      if (!inEmptyComposer) lastFocusArea = "card";
      var box = choice.querySelector("input[type=checkbox]");
      if (box) { box.checked = !box.checked; box.focus(); } else choice.click();
    } else if (event.key === "Enter" && !isTyping(target)) {
      var confirm = card.querySelector(".confirm-multi");
      if (confirm && target.tagName !== "BUTTON") { event.preventDefault(); confirm.click(); }
    }
  });

  function isTyping(el) {
    if (!el || !el.tagName) return false;
    if (el.tagName === "INPUT") return ["checkbox", "radio", "button", "submit", "reset"].indexOf(el.type) < 0;
    return el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable;
  }

  function currentQuestion() {
    var all = document.querySelectorAll(".question-pending");
    return all.length ? all[all.length - 1] : null;
  }

  // --- focus after a swap: back where the person was working -------------------------------------
  // Only when a swap took away the element that had focus (an answered card, a fresh composer):
  // a reader who clicked into the thread keeps their place and their selection.
  var lastFocusArea = "composer";
  var lastFocused = null;
  document.addEventListener("focusin", function (event) {
    lastFocused = event.target;
    if (event.target.closest && event.target.closest(".question-card")) lastFocusArea = "card";
    else if (event.target.id === "composer-input") lastFocusArea = "composer";
  });

  function restoreFocus() {
    var active = document.activeElement;
    if (!lastFocused || lastFocused.isConnected || (active && active !== document.body)) return;
    var card = currentQuestion();
    var option = card && card.querySelector(".options .option input, .options .option");
    var target = lastFocusArea === "card" && option ? option : composer();
    if (target) target.focus({ preventScroll: true });
  }
  // New content has been swapped in (over HTTP or the socket): settle focus once it is all there.
  document.addEventListener("htmx:load", function () { setTimeout(restoreFocus, 0); });

  // --- a card rendered late never replaces a newer one ---------------------------------------------
  // Every change to a card raises its revision; renders of one card can reach a tab out of order
  // (the guesser's hints, an answer from another tab), and an older one is dropped.
  function revisionOf(el) {
    var value = el && el.getAttribute ? el.getAttribute("data-revision") : null;
    return value === null ? NaN : parseInt(value, 10);
  }
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (detail && detail.fragment && revisionOf(detail.fragment.firstElementChild) < revisionOf(detail.target)) {
      detail.shouldSwap = false;
    }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var found = detail && typeof detail.serverResponse === "string" && /data-revision="(\d+)"/.exec(detail.serverResponse);
    if (found && parseInt(found[1], 10) < revisionOf(detail.target)) detail.shouldSwap = false;
  });

  // --- what the person did in a card survives its re-render (a pause, a guess, another tab) ------
  // Cards are re-rendered whole over the socket. What someone is typing into one must not vanish
  // (the field they are in keeps the focus even before they type: their next key is text), and
  // neither must the boxes they ticked or unticked: options of a multiple choice (rendered
  // unticked), changes of a confirmation (rendered ticked).
  var typedBeforeSwap = [];
  var ticksBeforeSwap = [];
  function tickKey(box) { return (box.form ? box.form.id : "") + "|" + box.name + "|" + box.value; }
  function rememberCardState() {
    typedBeforeSwap = [];
    document.querySelectorAll(".custom-answer input").forEach(function (input) {
      var focused = document.activeElement === input;
      if (!input.value && !focused) return;
      typedBeforeSwap.push({
        id: input.id, value: input.value, focused: focused,
        start: input.selectionStart, end: input.selectionEnd,
      });
    });
    ticksBeforeSwap = [];
    document.querySelectorAll('.question-card input[type="checkbox"]').forEach(function (box) {
      if (box.checked !== box.defaultChecked) ticksBeforeSwap.push({ key: tickKey(box), checked: box.checked });
    });
  }
  function restoreCardState() {
    typedBeforeSwap.forEach(function (typed) {
      var input = document.getElementById(typed.id);
      if (!input) return;
      // The swapped-in field is empty; htmx may already have given it the focus (a card that came
      // back over HTTP), so having the focus does not mean the person typed into it.
      if (!input.value) input.value = typed.value;
      if (typed.focused) {
        input.focus({ preventScroll: true });
        try { input.setSelectionRange(typed.start, typed.end); } catch (e) { /* not a text input */ }
      }
    });
    if (ticksBeforeSwap.length) {
      var boxes = {};
      document.querySelectorAll('.question-card input[type="checkbox"]').forEach(function (box) { boxes[tickKey(box)] = box; });
      ticksBeforeSwap.forEach(function (tick) { if (boxes[tick.key]) boxes[tick.key].checked = tick.checked; });
    }
    document.querySelectorAll(".question-confirm").forEach(showTickedChanges);
  }
  document.addEventListener("htmx:oobBeforeSwap", rememberCardState);
  document.addEventListener("htmx:oobAfterSwap", restoreCardState);
  // A card can also come back as an HTTP response (its clock resumed): the same care.
  function isCardSwap(event) { return event.detail && event.detail.target && event.detail.target.classList.contains("question-card"); }
  document.addEventListener("htmx:beforeSwap", function (event) { if (isCardSwap(event)) rememberCardState(); });
  document.addEventListener("htmx:afterSwap", function (event) { if (isCardSwap(event)) restoreCardState(); });

  // --- a press that lands as its card is drawn again still counts ---------------------------------
  // When a card is swapped in between the press on one of its controls and the release (its clock
  // starting, the guesser's hints, another tab), the two fall on different elements: a mouse's
  // click then goes to an element around them, or nowhere. Unless the browser's click reaches the
  // control that took the pressed one's place (a tap's may), the release clicks it.
  var CARD_CONTROLS = ".question-card button, .question-card label.option";
  var pressed = null;
  function controlAt(el) { return el && el.closest ? el.closest(CARD_CONTROLS) : null; }
  function controlKey(el) {
    var question = el.closest("[data-question]");
    var name = el.getAttribute("name");
    return (question ? question.dataset.question : "") + "|" + el.tagName + "|" +
      (name ? name + "=" + el.getAttribute("value") : el.dataset.key || el.textContent.trim());
  }
  document.addEventListener("pointerdown", function (event) { pressed = controlAt(event.target); });
  document.addEventListener("pointerup", function (event) {
    var was = pressed;
    pressed = null;
    if (!was || was.isConnected) return;  // not swapped: the browser's own click follows
    var now = controlAt(event.target);
    if (!now || now.disabled || controlKey(now) !== controlKey(was)) return;
    var settled = false;
    function settle(click) {
      if (settled) return;
      settled = true;
      document.removeEventListener("click", settle, true);
      if (!(click && now.contains(click.target))) now.click();
    }
    document.addEventListener("click", settle, true);
    setTimeout(settle, 400);  // no click at all
  });

  // --- a confirmation applies the ticked changes ------------------------------------------------
  // Each change has a tick (all ticked as rendered) tied to the card's Apply form; the Apply
  // button says how many it will make (the ticks survive a re-render: see above).
  function changeBoxes(root) { return root.querySelectorAll('.operation-list input[name="changes"]'); }

  function showTickedChanges(card) {
    var boxes = changeBoxes(card);
    var note = card.querySelector(".apply-count");
    if (!boxes.length || !note) return;
    var ticked = Array.prototype.filter.call(boxes, function (box) { return box.checked; }).length;
    if (ticked === boxes.length) note.textContent = note.dataset.all;
    else if (ticked === 0) note.textContent = "Tick at least one change to apply";
    else note.textContent = "Apply " + ticked + " of " + boxes.length + " changes";
    note.closest("button").disabled = ticked === 0;
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    if (box.name !== "changes" || !box.closest(".question-card")) return;
    showTickedChanges(box.closest(".question-card"));
  });

  // --- the person's time zone goes with each message ----------------------------------------------
  // "What's due today?" means the person's today: the server keeps the zone on the message.
  document.addEventListener("htmx:wsConfigSend", function (event) {
    if (!event.target || event.target.id !== "composer" || !window.Intl) return;
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone) event.detail.parameters.time_zone = zone;
  });

  // --- connection state and messages queued while it is down ------------------------------------
  document.addEventListener("htmx:wsOpen", function () { document.body.dataset.ws = "open"; });
  document.addEventListener("htmx:wsClose", function () { document.body.dataset.ws = "closed"; });

  // --- a card's answer (and its clock) goes over the open socket -----------------------------------
  // The socket that brings the receipt and the reply takes the answer too, as an `answer` frame with
  // the form's fields, instead of a request of its own. The form posts as before when the socket is
  // not open. Nothing is lost in between: an answer sent on a socket that then closes, or that
  // brought no change to its card within ANSWER_WAIT_MS, is posted (answering twice is safe: an
  // answered question returns its receipt). Any render of the card (its receipt, the card with the
  // reason an answer was refused, new hints) settles it: a card shown again can be answered again.
  var ANSWER_WAIT_MS = 15000;
  var INDEX = /^-?[0-9]{1,9}$/;    // what the server reads as an option's index
  var openSocket = null;
  var unsettled = new Set();       // answers sent on the socket whose card has not changed yet
  document.addEventListener("htmx:wsOpen", function (event) { openSocket = event.detail.socketWrapper; });
  document.addEventListener("htmx:wsClose", function () {
    openSocket = null;
    unsettled.forEach(function (post) { post(); });
  });

  function answerFrame(questionId, data) {
    var frame = { action: "answer", question_id: questionId };
    var indexes = function (name) {
      var values = data.getAll(name);
      return values.every(function (v) { return INDEX.test(v); }) ? values.map(Number) : null;
    };
    if (data.has("option")) {
      var option = indexes("option");
      if (!option || option.length !== 1) return null; // the form's own post says what is wrong
      frame.option = option[0];
    }
    if (data.has("options") && !(frame.options = indexes("options"))) return null;
    if (data.has("choose_changes") && !(frame.changes = indexes("changes"))) return null;
    if (data.has("custom")) frame.custom = String(data.get("custom"));
    if (data.has("label")) frame.label = data.getAll("label").map(String);
    return frame;
  }

  document.addEventListener("htmx:configRequest", function (event) {
    var form = event.detail.elt;
    var card = form && form.closest ? form.closest(".question-pending") : null;
    if (!card || !openSocket || form.dataset.viaHttp || !/\/answer\/$/.test(event.detail.path)) return;
    var data = event.detail.formData;
    var frame = data && answerFrame(card.dataset.question, data);
    if (!frame) return;
    event.preventDefault();
    var option = data.get("option");
    var submitter = option === null ? null : form.querySelector('button[name="option"][value="' + option + '"]');
    var timer = null;
    var post = function () {
      clearTimeout(timer);
      unsettled.delete(post);
      if (!card.isConnected || !form.isConnected) return; // the card changed: the answer arrived
      form.dataset.viaHttp = "1";
      form.requestSubmit(submitter);
    };
    unsettled.add(post);
    timer = setTimeout(post, ANSWER_WAIT_MS);
    openSocket.send(JSON.stringify(frame), form);
  });

  // Stopping, restarting and running out a card's clock go the same way, as `pause`/`resume`/
  // `expire` frames: every tab, this one too, is sent the card with its clock or its receipt. With
  // the socket closed, as the card's requests. A lost frame costs only the clock's accuracy: the
  // server keeps the deadline, and its own timer resolves the question when it passes.
  function changeClock(el, action, requestOptions) {
    if (openSocket) {
      openSocket.send(JSON.stringify({ action: action, question_id: el.dataset.question }), el);
      return;
    }
    htmx.ajax("POST", el.dataset[action + "Url"], requestOptions || { source: el, swap: "none" });
  }

  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target;
    if (!form || form.id !== "composer" || document.body.dataset.ws === "open") return;
    // The ws extension keeps the frame and sends it on reconnect; show it as queued meanwhile.
    var text = (event.detail.parameters && event.detail.parameters.message) || "";
    if (!String(text).trim()) return;
    var list = messageList();
    if (!list) return;
    var bubble = document.createElement("article");
    bubble.className = "message message-user message-queued";
    bubble.dataset.queued = "waiting";
    bubble.setAttribute("aria-live", "polite");
    var meta = document.createElement("div");
    meta.className = "message-meta";
    meta.textContent = "You · ";
    var status = document.createElement("span");
    status.className = "queued-status";
    status.textContent = "Queued — sends when the connection is back";
    meta.appendChild(status);
    var body = document.createElement("div");
    body.className = "message-body";
    body.textContent = text;
    bubble.appendChild(meta);
    bubble.appendChild(body);
    list.appendChild(bubble);
    following = true;
    var input = composer();
    if (input) input.value = "";
  });

  document.addEventListener("htmx:wsAfterSend", function (event) {
    if (!event.target || event.target.id !== "composer") return;
    var bubble = document.querySelector('.message-queued[data-queued="waiting"]');
    if (!bubble) return;
    bubble.dataset.queued = "sent";
    bubble.querySelector(".queued-status").textContent = "Sending…";
  });

  // The server answers every message it takes with a fresh composer (and a rejected one with an
  // error): the oldest queued bubble has then been delivered — or is handed back to be edited.
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || (target.id !== "composer" && target.id !== "composer-error")) return;
    var bubble = document.querySelector('.message-queued[data-queued="sent"]');
    if (!bubble) return;
    if (target.id === "composer-error") {
      if (!target.textContent.trim()) return;
      var input = composer();
      if (input && !input.value) input.value = bubble.querySelector(".message-body").textContent;
    }
    bubble.remove();
  });

  // --- a request the server could not serve right now (503: no database connection in time) ------
  // Nothing was written; the card or form stays as it was, answerable, with the server's message
  // where the person is looking: in the card that sent it, or under the composer.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail && event.detail.xhr;
    if (!xhr || xhr.status !== 503) return;
    var message = xhr.responseText || "Clarion is busy right now. Try again in a moment.";
    var card = event.detail.elt && event.detail.elt.closest ? event.detail.elt.closest(".question-pending") : null;
    var slot = card ? card.querySelector(".question-error") : null;
    if (card && !slot) {
      slot = document.createElement("p");
      slot.className = "question-error";
      slot.setAttribute("role", "alert");
      var title = card.querySelector(".question-text");
      if (title) title.after(slot); else card.prepend(slot);
    }
    if (!slot) slot = document.getElementById("composer-error");
    if (slot) slot.textContent = message;
  });

  // --- the thread follows the newest reply while the reader is at the bottom ---------------------
  var following = true;

  function distanceFromBottom(list) { return list.scrollHeight - list.scrollTop - list.clientHeight; }

  function jumpButton() {
    var button = document.getElementById("jump-latest");
    var list = messageList();
    if (!button && list && list.parentNode) {
      button = document.createElement("button");
      button.type = "button";
      button.id = "jump-latest";
      button.className = "jump-latest";
      button.hidden = true;
      button.textContent = "↓ Jump to latest";
      button.addEventListener("click", function () {
        following = true;
        scrollToEnd();
        var input = composer();
        if (input) input.focus({ preventScroll: true });
      });
      list.parentNode.insertBefore(button, list.nextSibling);
    }
    return button;
  }

  function scrollToEnd() {
    var list = messageList();
    if (list) list.scrollTop = list.scrollHeight;
    updateJump();
  }

  function updateJump() {
    var list = messageList();
    var button = jumpButton();
    if (!list || !button) return;
    button.hidden = following || distanceFromBottom(list) <= NEAR_BOTTOM_PX;
    if (!button.hidden) {
      // Float just above the list's lower edge, whatever is laid out beneath it.
      var below = list.parentNode.getBoundingClientRect().bottom - list.getBoundingClientRect().bottom;
      button.style.bottom = Math.round(below + 12) + "px";
    }
  }

  function followThread() {
    var list = messageList();
    if (!list || list.dataset.following) return;
    list.dataset.following = "1";
    list.addEventListener("scroll", function () {
      // Only the reader moves away from the bottom: while following, growth is scrolled away at once.
      following = distanceFromBottom(list) <= NEAR_BOTTOM_PX;
      updateJump();
    }, { passive: true });
    var onChange = function () { if (following) scrollToEnd(); else updateJump(); };
    new MutationObserver(onChange).observe(list, { childList: true, subtree: true, characterData: true });
    if (window.ResizeObserver) new ResizeObserver(onChange).observe(list);
    openAtLatest(list);
    revealLinkedMessage();
  }

  // Opening or reloading a conversation shows the latest message — or the top of a pending card
  // that is taller than the view.
  function openAtLatest(list) {
    following = true;
    scrollToEnd();
    var card = currentQuestion();
    var group = card && card.closest(".question-card");
    if (group && group.getBoundingClientRect().top < list.getBoundingClientRect().top) {
      list.scrollTop += group.getBoundingClientRect().top - list.getBoundingClientRect().top - 8;
      following = distanceFromBottom(list) <= NEAR_BOTTOM_PX;
      updateJump();
    }
  }

  // --- earlier messages load above the reader without moving what they see ----------------------
  // The thread opens on its newest page; a sentinel at its top (#thread-earlier) loads the page
  // before when it scrolls into view. What is added above would push the reader's place down, so
  // the distance from the bottom is kept instead.
  var earlierFromBottom = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    var list = messageList();
    if (target && target.id === "thread-earlier" && list && event.detail.shouldSwap) {
      earlierFromBottom = list.scrollHeight - list.scrollTop;
    }
  });
  document.addEventListener("htmx:afterSwap", function () {
    var list = messageList();
    if (earlierFromBottom === null || !list) return;
    list.scrollTop = list.scrollHeight - earlierFromBottom;
    earlierFromBottom = null;
    revealLinkedMessage();
  });

  // A link to a message (#message-42) that is older than the loaded pages loads the thread back
  // to it, once per link.
  var linkTried = null;
  function revealLinkedMessage() {
    var found = /^#message-(\d+)$/.exec(window.location.hash);
    if (!found) return;
    var message = document.getElementById("message-" + found[1]);
    if (message) {
      following = false;
      message.scrollIntoView({ block: "start" });
      updateJump();
      return;
    }
    var sentinel = document.getElementById("thread-earlier");
    if (!sentinel || linkTried === window.location.hash) return;
    linkTried = window.location.hash;
    htmx.ajax("GET", sentinel.dataset.earlierUrl + "through/" + found[1] + "/", { source: sentinel, target: sentinel, swap: "outerHTML" });
  }
  window.addEventListener("hashchange", revealLinkedMessage);

  // --- a resized message box keeps its height when a fresh composer is swapped in ---------------
  // htmx would copy the style attribute across, which the Content-Security-Policy refuses (so
  // _htmx_head.html leaves "style" out of attributesToSettle); the height goes through the CSSOM.
  var composerHeight = "";
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    var input = composer();
    if (target && target.id === "composer" && input) composerHeight = input.style.height;
  });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail && event.detail.target;
    var input = composer();
    if (target && target.id === "composer" && input && composerHeight) input.style.height = composerHeight;
  });

  // --- keyboard hints only in the keyboard layout ----------------------------------------------
  // On a phone the message box's placeholder drops "Enter to send, Shift+Enter…" (app.css hides
  // the cards' key hints there); the server renders both wordings.
  var phoneLayout = window.matchMedia("(max-width: 720px)");
  function fitComposerPlaceholder() {
    var input = composer();
    if (!input || !input.dataset.phonePlaceholder) return;
    if (!input.dataset.keyboardPlaceholder) input.dataset.keyboardPlaceholder = input.placeholder;
    input.placeholder = phoneLayout.matches ? input.dataset.phonePlaceholder : input.dataset.keyboardPlaceholder;
  }
  phoneLayout.addEventListener("change", fitComposerPlaceholder);
  document.addEventListener("htmx:load", fitComposerPlaceholder);

  // Sending a message is reading the end of the thread again.
  document.addEventListener("submit", function (event) {
    if (event.target && event.target.id === "composer") { following = true; scrollToEnd(); }
  }, true);

  // A form swapped in moments ago (a card, the rename field) is bound by htmx when the swap
  // settles. A submit that beats the binding would leave the page as a plain form post; bind the
  // form and send it the htmx way instead — on the next task, since a form ignores a submit
  // requested while its own submit event is firing. Once per form, so nothing can loop. A card
  // can be drawn again in that moment (the same change, from the socket after the HTTP response):
  // the submit then goes to the form that took this one's place, which keeps what was typed.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !window.htmx || !form.matches("form[hx-post], form[hx-get], form[ws-send]")) return;
    if (form.dataset.boundOnSubmit) return;
    event.preventDefault();
    form.dataset.boundOnSubmit = "1";
    var submitter = event.submitter || null;
    htmx.process(form);
    setTimeout(function () {
      var now = form.isConnected ? form : formInPlaceOf(form);
      if (!now) return;
      var button = submitter && submitter.name
        ? now.querySelector('button[name="' + submitter.name + '"][value="' + submitter.value + '"]') : null;
      now.requestSubmit(button || (now === form ? submitter : null));
    }, 0);
  });

  function formInPlaceOf(form) {
    var post = form.getAttribute("hx-post");
    if (!post || !form.classList.length) return null;
    return document.querySelector('form.' + form.classList[0] + '[hx-post="' + post + '"]');
  }

  // --- countdowns ------------------------------------------------------------------------------
  var clocks = new Map(); // question id → {el, remaining, total, paused, startedAt, fired}

  function scan() {
    document.querySelectorAll(".question-pending[data-remaining]").forEach(function (el) {
      var id = el.dataset.question;
      var known = clocks.get(id);
      if (known && known.el === el) return;
      var clock = {
        el: el,
        remaining: parseFloat(el.dataset.remaining),
        total: Math.max(parseFloat(el.dataset.total) || 1, 0.001),
        paused: el.dataset.paused === "1" || pausedByMe.has(id),
        startedAt: performance.now(),
        fired: known ? known.fired : false,
      };
      clocks.set(id, clock);
      draw(clock); // a card swapped in shows its own time from its first paint, not a full bar
      watchOnScreen(el);
    });
    clocks.forEach(function (clock, id) { if (!document.body.contains(clock.el)) clocks.delete(id); });
  }

  function left(clock) {
    if (clock.paused) return clock.remaining;
    return Math.max(0, clock.remaining - (performance.now() - clock.startedAt) / 1000);
  }

  function tick() {
    clocks.forEach(draw);
    requestAnimationFrame(tick);
  }

  function draw(clock) {
    var remaining = left(clock);
    var bar = clock.el.querySelector(".countdown-bar");
    if (bar) bar.style.width = (100 * remaining / clock.total).toFixed(2) + "%";
    var readout = clock.el.querySelector(".countdown-time");
    var text = clockText(remaining);
    if (readout && readout.textContent !== text) readout.textContent = text;
    clock.el.classList.toggle("countdown-low", remaining < Math.min(5, clock.total / 3));
    // The default flashes through the last 500 ms, so the flash ends as the server's deadline
    // arrives: its own timer resolves the question right then and would cut a later flash short.
    showReconnecting(clock);
    var top = clock.el.querySelector(".option.is-default");
    if (top) top.classList.toggle("flash", !clock.paused && remaining <= FLASH_MS / 1000);
    if (!clock.paused && remaining <= 0 && !clock.fired) {
      clock.fired = true;
      expire(clock);
    }
  }

  function clockText(seconds) {
    var whole = Math.ceil(seconds);
    if (whole < 60) return whole + " s";
    var rest = whole % 60;
    return Math.floor(whole / 60) + ":" + (rest < 10 ? "0" : "") + rest;
  }

  function expire(clock) {
    var group = clock.el.closest(".question-card");
    changeClock(clock.el, "expire", { source: clock.el, target: "#" + group.id, swap: "outerHTML" });
  }

  // --- the clock runs only while someone can see the card ------------------------------------------
  // A card whose default would answer for the person starts paused (questions.services.ask:
  // starts_when_shown). This tab starts its clock once the card is on screen, the tab is visible
  // and no reply above it is still streaming, and pauses it while the tab is hidden. The server
  // keeps the deadline: a tab that never comes back uses up the pause budget and the question
  // times out; a reload shows what is left. A pause belongs to whoever caused it: a card paused by
  // typing (here or in another tab) is left to that typing's idle timer, except that a page
  // opening on it with nothing typed lets it run (the tab that typed may be gone).
  var startedHere = new Set(); // questions whose clock this tab started or found running
  var pausedAway = new Set();  // questions this tab paused because it was hidden
  var onScreen = new Set();    // questions whose card is in the viewport
  var watched = new WeakSet();
  var screenWatch = window.IntersectionObserver ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      var id = entry.target.dataset.question;
      if (!entry.target.isConnected) return;
      if (entry.isIntersecting) onScreen.add(id); else onScreen.delete(id);
    });
    startWhenSeen();
  }) : null;

  function watchOnScreen(el) {
    if (watched.has(el)) return;
    watched.add(el);
    if (screenWatch) screenWatch.observe(el); else onScreen.add(el.dataset.question);
  }

  function streamingAbove(el) {
    return Array.prototype.some.call(document.querySelectorAll(".message.streaming"), function (stream) {
      return Boolean(stream.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING);
    });
  }

  // Text typed on this page; a draft kept from an earlier page (static/js/drafts.js) is not typing.
  var typedInComposer = false;
  document.addEventListener("input", function (event) {
    if (event.target.id === "composer-input") typedInComposer = true;
  });

  function somethingTyped(el) {
    var input = composer();
    var custom = el.querySelector(".custom-answer input");
    return (typedInComposer && input && input.value.trim() !== "") || (custom && custom.value.trim() !== "");
  }

  function startWhenSeen() {
    var el = currentQuestion();
    if (!el || !el.dataset.remaining) return;
    var id = el.dataset.question;
    if (el.dataset.paused !== "1") { startedHere.add(id); return; }
    if (pausedByMe.has(id) || (startedHere.has(id) && !pausedAway.has(id))) return;
    if (document.visibilityState !== "visible" || !onScreen.has(id) || streamingAbove(el) || somethingTyped(el)) return;
    startedHere.add(id);
    pausedAway.delete(id);
    // Without the socket, the card comes back in the response: this page cannot receive the
    // broadcast of the running clock yet.
    var group = el.closest(".question-card");
    changeClock(el, "resume", { source: el, target: "#" + group.id, swap: "outerHTML" });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") { startWhenSeen(); return; }
    var el = currentQuestion();
    if (!el || !el.dataset.remaining || el.dataset.paused === "1") return;
    var id = el.dataset.question;
    var clock = clocks.get(id);
    if (clock) { clock.remaining = left(clock); clock.paused = true; }
    pausedAway.add(id);
    changeClock(el, "pause");
  });

  // While the socket is down the countdown says so instead of looking frozen; the server keeps
  // the time (its label is hidden meanwhile, in app.css).
  function showReconnecting(clock) {
    var countdown = clock.el.querySelector(".countdown");
    if (!countdown) return;
    var note = countdown.querySelector(".countdown-reconnecting");
    var away = document.body.dataset.ws === "closed";
    if (away && !note) {
      note = document.createElement("span");
      note.className = "countdown-reconnecting";
      note.textContent = "Reconnecting…";
      countdown.insertBefore(note, countdown.querySelector(".countdown-time"));
    } else if (!away && note) {
      note.remove();
    }
  }

  // The socket is back: a countdown that reached zero while the server was unreachable asks again.
  document.addEventListener("htmx:wsOpen", function () {
    clocks.forEach(function (clock) { if (clock.fired && clock.el.isConnected) clock.fired = false; });
  });

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
      changeClock(card, "pause");
    }
    clearTimeout(idleTimer);
    idleTimer = setTimeout(function () {
      pausedByMe.delete(id);
      var current = document.querySelector('.question-pending[data-question="' + id + '"]');
      if (current) changeClock(current, "resume");
    }, IDLE_RESUME_MS);
  });

  document.addEventListener("htmx:load", function () { scan(); startWhenSeen(); });
  document.addEventListener("DOMContentLoaded", function () {
    fitComposerPlaceholder();
    scan();
    followThread();
    requestAnimationFrame(tick);
  });
})();
