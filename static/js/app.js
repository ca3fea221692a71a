// Small conveniences on top of htmx; every action also works without this file.
// Loaded as a file (never inline) so the Content Security Policy can forbid inline script.
(function () {
  "use strict";

  // What this file says, in the page's language: base.html's #js-texts, English if absent.
  function text(name, english) {
    const texts = document.getElementById("js-texts");
    return (texts && texts.dataset[name]) || english;
  }

  // --- Selecting text in the answer fills the "Add claim" form --------------------------
  // Spans are code points (Python str indices, bundle.md), as are the pieces' data-start;
  // the DOM counts UTF-16 units, two for a character outside the BMP (an emoji, say).
  function codePointOffset(text, utf16Offset) {
    return Array.from(text.slice(0, utf16Offset)).length;
  }

  function codePointLength(text) {
    return codePointOffset(text, text.length);
  }

  function offsetIn(answer, node, offset) {
    const piece = (node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement).closest("[data-start]");
    if (!piece || !answer.contains(piece)) {
      return null;
    }
    const range = document.createRange();
    range.setStart(piece, 0);
    range.setEnd(node, offset);
    return Number(piece.dataset.start) + codePointLength(range.toString());
  }

  function selectionSpans(answer) {
    const selection = window.getSelection();
    const spans = [];
    for (let i = 0; i < selection.rangeCount; i++) {
      const range = selection.getRangeAt(i);
      if (range.collapsed || !answer.contains(range.commonAncestorContainer)) {
        continue;
      }
      let start = offsetIn(answer, range.startContainer, range.startOffset);
      let end = offsetIn(answer, range.endContainer, range.endOffset);
      if (start === null || end === null) {
        continue;
      }
      const text = range.toString();
      // Trim blanks at the edges so the span covers only words.
      start += codePointLength(text) - codePointLength(text.trimStart());
      end -= codePointLength(text) - codePointLength(text.trimEnd());
      if (end > start) {
        spans.push([start, end, text.trim()]);
      }
    }
    return spans;
  }

  // For the browser tests of the conversion.
  window.evidenceReview = Object.freeze({ codePointOffset: codePointOffset });

  document.addEventListener("mouseup", fillFromSelection);
  document.addEventListener("keyup", function (event) {
    if (event.shiftKey) {
      fillFromSelection();
    }
  });

  function fillFromSelection() {
    const answer = document.getElementById("answer");
    const form = document.getElementById("add-claim");
    if (!answer || !form) {
      return;
    }
    const spans = selectionSpans(answer);
    if (!spans.length) {
      return;
    }
    // The spans are a hidden field: derived from the selection, never typed.
    form.elements.spans.value = spans.map((s) => s[0] + "-" + s[1]).join(",");
    const readout = document.getElementById("add-claim-selection");
    if (readout) {
      readout.textContent = text("fromAnswer", "From the answer at") + " " + spans.map((s) => s[0] + "–" + s[1]).join(", ");
    }
    // The claim text starts as the selection without citation markers.
    form.elements.text.value = spans
      .map((s) => s[2].replace(/\[[^\]]{1,20}\]/g, "").replace(/\s+/g, " ").trim())
      .join(" ");
  }

  // --- Merging suggestions --------------------------------------------------------------
  // Ticking suggestions writes their texts into the merged claim, unless the reviewer has
  // edited it since; their spans go with the form (the boxes belong to it).
  let mergedText = "";
  document.addEventListener("change", function (event) {
    const box = event.target;
    if (!box.matches || !box.matches('input[name="pick"]')) {
      return;
    }
    const text = document.getElementById("merge-text");
    if (!text || (text.value !== "" && text.value !== mergedText)) {
      return;
    }
    const picks = Array.from(document.querySelectorAll('input[name="pick"]:checked'));
    mergedText = picks.map((p) => p.dataset.text).join(" ");
    text.value = mergedText;
  });

  // --- Keyboard ----------------------------------------------------------------------------
  let current = null;

  function cards() {
    return Array.from(document.querySelectorAll("article.card"));
  }

  function cardByKey(key) {
    // By id, never by a CSS selector: a claim key such as k.1 or a:b is no CSS identifier.
    return document.getElementById("card-" + key);
  }

  function focusCard(card) {
    if (!card) {
      return;
    }
    current = card.id;
    card.focus({ preventScroll: true });
    // Smooth, unless the reviewer asked the system for less motion.
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    card.scrollIntoView({ block: "nearest", behavior: still ? "auto" : "smooth" });
  }

  function currentCard() {
    const active = document.activeElement && document.activeElement.closest("article.card");
    return active || (current && document.getElementById(current)) || null;
  }

  function verdictForm(card) {
    return card && card.querySelector("form[data-verdict-form]");
  }

  function keyed(key) {
    return document.querySelector('[data-key="' + key + '"]');
  }

  // Keys that act on the verdict form wait for a compact card to arrive whole (it loads
  // itself on focus), then act: pressing j then 1 quickly still picks a label.
  let pending = null;
  const FORM_KEYS = /^[0-9rs]$/;

  function isCompact(card) {
    return Boolean(card && card.hasAttribute("data-compact"));
  }

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const typing = target.matches && target.matches("input, textarea, select, [contenteditable]");
    if (typing) {
      if (event.key === "Escape") {
        target.blur();
        const card = target.closest("article.card");
        if (card) {
          focusCard(card);
        }
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target.form) {
        event.preventDefault();
        target.form.requestSubmit();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    const list = cards();
    const index = list.indexOf(currentCard());
    const card = currentCard() || list[0] || null; // with no card chosen yet, the first one
    if (FORM_KEYS.test(event.key) && isCompact(card)) {
      event.preventDefault();
      pending = { id: card.id, key: event.key };
      focusCard(card); // its focus loads it whole; the key acts once it is there
      return;
    }
    act(event, card, list, index);
  });

  function act(event, card, list, index) {
    if (event.key === "j") {
      focusCard(list[Math.min(index + 1, list.length - 1)] || list[0]);
    } else if (event.key === "k") {
      focusCard(list[Math.max(index - 1, 0)]);
    } else if (/^[0-9]$/.test(event.key) && verdictForm(card)) {
      // The form says which key picks which label (aria-keyshortcuts, from cards.labels).
      const radio = verdictForm(card).querySelector('input[name="support"][aria-keyshortcuts="' + event.key + '"]');
      if (radio) {
        radio.checked = true;
        radio.dispatchEvent(new Event("change", { bubbles: true }));
      }
    } else if (event.key === "r" && verdictForm(card)) {
      event.preventDefault();
      verdictForm(card).querySelector("textarea[data-reason]").focus();
    } else if (event.key === "s" && verdictForm(card)) {
      event.preventDefault();
      verdictForm(card).requestSubmit();
    } else if (event.key === "a" && keyed("a")) {
      // Add claim: with a text (from the selection, say) it adds it; else the text comes first.
      event.preventDefault();
      const form = keyed("a").form;
      if (form.elements.text.value.trim()) {
        form.requestSubmit(keyed("a"));
      } else {
        form.elements.text.focus();
      }
    } else if (event.key === "p" && keyed("p")) {
      event.preventDefault();
      keyed("p").click(); // htmx loads the suggestions; without it, the link's page
    } else if ((event.key === "c" || event.key === "d") && keyed(event.key)) {
      // Decomposition complete; done: submit and open the next case.
      event.preventDefault();
      keyed(event.key).form.requestSubmit(keyed(event.key));
    } else if (event.key === "n" && keyed("n")) {
      window.location.assign(keyed("n").href);
    } else if (event.key === "?") {
      toggleKeys();
    }
  }

  // A key pressed while its card was loading, once the card is whole.
  function replayPending(card) {
    const key = pending && card && pending.id === card.id ? pending.key : null;
    pending = null;
    if (key && !isCompact(card)) {
      act({ key: key, preventDefault: function () {} }, card, cards(), cards().indexOf(card));
    }
  }

  function toggleKeys() {
    const dialog = document.getElementById("keys");
    if (!dialog) {
      return;
    }
    if (dialog.open) {
      dialog.close();
    } else {
      dialog.showModal();
    }
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-toggle-keys]")) {
      toggleKeys();
    }
  });

  // --- Where the focus goes after an action --------------------------------------------------
  function nextUnjudged(after) {
    const list = cards();
    const at = list.indexOf(after);
    const order = list.slice(at + 1).concat(list.slice(0, Math.max(at, 0)));
    return order.find((card) => card.hasAttribute("data-unjudged")) || null;
  }

  function suggestionField(item) {
    return item && item.querySelector(":scope > form textarea");
  }

  function nextSuggestion(number) {
    const items = Array.from(document.querySelectorAll("#suggestions [data-suggestion]"));
    const at = items.findIndex((item) => item.dataset.suggestion === number);
    const order = items.slice(at + 1).concat(items.slice(0, at + 1));
    return suggestionField(order.find((item) => !item.hasAttribute("data-taken") && suggestionField(item)));
  }

  // After htmx swaps a card in, keep the keyboard where it was. Only once the swap has
  // settled: htmx makes the new forms its own then, and a form used before would post
  // without it (a whole page, where the fragment was meant).
  document.addEventListener("htmx:afterSettle", function (event) {
    const target = event.detail.target;
    const elt = source(event);
    const opened = elt && elt.closest && elt.closest("article.card[data-compact]");
    if (opened && opened.id && document.getElementById(opened.id)) {
      // A compact card came whole: it keeps the focus it had (j/k, a click), and a key
      // pressed meanwhile acts now.
      const card = document.getElementById(opened.id);
      if (!card.contains(document.activeElement) && (current === card.id || document.activeElement === document.body)) {
        focusCard(card);
      }
      replayPending(card);
    } else if (savedCompact(event)) {
      // A save answered with the card compact: "verdict-saved" moves the focus on.
    } else if (current && target && target.id === current && document.getElementById(current)) {
      if (!document.activeElement || !document.getElementById(current).contains(document.activeElement)) {
        focusCard(document.getElementById(current));
      }
    } else if (target && target.classList && target.classList.contains("revise-slot")) {
      const field = target.querySelector("textarea");
      if (field) {
        field.focus();
      }
    } else if (elt && elt.matches && elt.matches('[data-key="p"]')) {
      // The suggestions arrived: the first one not taken yet, ready to edit or accept.
      const field = nextSuggestion("");
      const heading = document.getElementById("suggestions-h");
      (field || heading || document.body).focus();
    }
  });

  // A saved verdict: on to the next card not judged yet, or to "Decomposition complete".
  // Only the card came back: the answer's pieces this claim colours take its label here.
  document.addEventListener("verdict-saved", function (event) {
    const saved = cardByKey(event.detail.key);
    const support = event.detail.support;
    document.querySelectorAll("#answer .piece[data-claims]").forEach(function (piece) {
      const keys = piece.dataset.claims.split(" ");
      if (support && keys[0] === event.detail.key) {
        piece.className = piece.className.replace(/\bsupport-\S+/, "support-" + support);
        piece.title = "claim " + keys.join(", ") + ": " + support;
      }
    });
    const next = nextUnjudged(saved);
    if (next) {
      focusCard(next);
    } else if (keyed("c")) {
      keyed("c").focus();
    } else {
      focusCard(saved);
    }
  });

  // An added claim: the next suggestion when it came from one, else its new card.
  document.addEventListener("claim-added", function (event) {
    const field = event.detail.number ? nextSuggestion(event.detail.number) : null;
    if (field) {
      field.focus();
    } else {
      focusCard(cardByKey(event.detail.key));
    }
  });

  // --- A saved card comes back compact --------------------------------------------------------
  // Once saved, the focus moves on, and a card the reviewer is not in is compact: a save asks
  // for its card back compact (no forms, no history rendered: a fraction of the work) when
  // nothing else is typed or open in the card, nothing refused is shown in it, and the focus
  // has somewhere to move on to; otherwise it comes back whole, with what was typed carried
  // over (below). While it is in flight, the card's other forms, its details and its rewrite
  // slot are inert, so nothing can be typed that the compact card would drop. Focused again,
  // a compact card loads whole.
  function quiet(card, sent) {
    if (card.querySelector('details[open], .revise-slot form, [role="alert"], .error')) {
      return false;
    }
    if (!nextUnjudged(card) && !keyed("c")) {
      return false; // the focus would come back to this card, which would load whole again
    }
    return !Array.from(card.querySelectorAll("form")).some(function (form) {
      return form !== sent && Array.from(form.elements).some((f) => f.name && f.type !== "hidden" && changed(f));
    });
  }

  function stilled(card, sent) {
    return Array.from(card.querySelectorAll("form, details, .revise-slot")).filter(
      (part) => part !== sent && !part.contains(sent)
    );
  }

  document.addEventListener("htmx:configRequest", function (event) {
    const form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("form[data-verdict-form]");
    const card = form && form.closest("article.card");
    if (card && quiet(card, form)) {
      event.detail.parameters.card = "compact";
      stilled(card, form).forEach((part) => part.setAttribute("inert", ""));
    }
  });

  // The save answered (or failed): what was stilled for it can be used again.
  document.addEventListener("htmx:afterRequest", function (event) {
    const form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("form[data-verdict-form]");
    const card = form && form.closest("article.card");
    if (card) {
      stilled(card, form).forEach((part) => part.removeAttribute("inert"));
    }
  });

  // A save answered compact: "verdict-saved" moves the focus on (htmx gives it back to the
  // card by its id first, before the card could load itself whole on focus).
  function savedCompact(event) {
    const xhr = event.detail.xhr;
    return Boolean(xhr && xhr.getResponseHeader("X-Card") === "compact");
  }

  // --- What is typed in a card survives its swap -------------------------------------------
  // An action on a card answers with the whole card (its verdicts, history and forms
  // change). The form that was sent comes back as the server says (saved, or refused with
  // what was typed); what was typed in the card's other forms is carried over, and an open
  // rewrite form stays open when a verdict was saved beside it.
  let carried = null;

  function changed(field) {
    if (field.type === "checkbox" || field.type === "radio") {
      return field.checked !== field.defaultChecked;
    }
    if (field.tagName === "SELECT") {
      const options = Array.from(field.options);
      if (!field.multiple && !options.some((option) => option.defaultSelected)) {
        return field.selectedIndex > 0; // none marked selected: the first one is the default
      }
      return options.some((option) => option.selected !== option.defaultSelected);
    }
    return field.value !== field.defaultValue;
  }

  // A card's forms by action, in order: a lead's verdict and adjudication share one.
  function formsWithAction(card, action) {
    return Array.from(card.querySelectorAll("form")).filter((form) => form.getAttribute("action") === action);
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    const card = event.detail.target;
    carried = null;
    if (!event.detail.shouldSwap || !card || !card.matches || !card.matches("article.card")) {
      return;
    }
    const sent = source(event) && source(event).closest("form");
    const drafts = [];
    card.querySelectorAll("form").forEach(function (form) {
      if (form === sent) {
        return;
      }
      form.querySelectorAll("textarea, input, select").forEach(function (field) {
        if (field.name && field.type !== "hidden" && changed(field)) {
          const action = form.getAttribute("action");
          drafts.push({ action: action, index: formsWithAction(card, action).indexOf(form), field: field });
        }
      });
    });
    const slot = card.querySelector(".revise-slot");
    const open = Array.from(card.querySelectorAll("details[open]")).map((details) => details.className);
    // Only a verdict leaves the claim as it was: then an open rewrite form is still right.
    const keepSlot = sent && sent.classList.contains("verdict-form") && slot && slot.querySelector("form") ? slot : null;
    carried = { id: card.id, drafts: drafts, slot: keepSlot, open: open };
  });

  document.addEventListener("htmx:afterSwap", function () {
    const kept = carried;
    carried = null;
    const card = kept && document.getElementById(kept.id);
    if (!card) {
      return;
    }
    const slot = card.querySelector(".revise-slot");
    if (kept.slot && slot && !slot.querySelector("form")) {
      slot.replaceWith(kept.slot);
    }
    kept.drafts.forEach(function (draft) {
      const form = formsWithAction(card, draft.action)[draft.index];
      const old = draft.field;
      if (!form || form.contains(old)) {
        return; // gone, or the very form kept above
      }
      if (old.type === "checkbox" || old.type === "radio") {
        const field = Array.from(form.elements).find((f) => f.name === old.name && f.value === old.value);
        if (field && !changed(field)) {
          field.checked = old.checked;
        }
      } else {
        const field = Array.from(form.elements).find((f) => f.name === old.name && f.tagName === old.tagName);
        if (field && !changed(field)) {
          field.value = old.value;
        }
      }
    });
    kept.open.forEach(function (name) {
      const details = Array.from(card.querySelectorAll("details")).find((d) => d.className === name);
      if (details) {
        details.open = true;
      }
    });
  });

  // --- A request that could not be answered in place ------------------------------------------
  // Refused and stale forms (400, 403, 409) come back as fragments that htmx swaps in
  // place (base.html). Anything else (a server failure, a lost connection, a whole page
  // such as the login form when the session has ended) is never swapped into the card:
  // its form says what happened, and everything typed stays where it is.
  function source(event) {
    // The element that made the request; a swap event's own elt is its target.
    const config = event.detail.requestConfig;
    return (config && config.elt) || event.detail.elt;
  }

  function say(event, text) {
    const elt = source(event);
    const form = elt && elt.closest && (elt.closest("form") || elt.parentElement);
    if (!form) {
      return;
    }
    let box = form.querySelector(":scope > .request-problem");
    if (!box) {
      box = document.createElement("p");
      box.className = "error request-problem";
      box.setAttribute("role", "alert");
      form.prepend(box);
    }
    box.textContent = text;
  }

  function verb(event) {
    const config = event.detail.requestConfig;
    return config && config.verb === "get" ? text("notLoaded", "Not loaded") : text("notSaved", "Not saved");
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    const elt = source(event);
    const form = elt && elt.closest && (elt.closest("form") || elt.parentElement);
    const box = form && form.querySelector(":scope > .request-problem");
    if (box) {
      box.remove();
    }
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    const body = event.detail.serverResponse;
    if (!event.detail.shouldSwap || typeof body !== "string" || !/^\s*<!doctype html/i.test(body)) {
      return;
    }
    // A whole page, where a fragment was expected: the login page after the session
    // ended, or a page that refuses the form (an expired CSRF token).
    event.detail.shouldSwap = false;
    const xhr = event.detail.xhr;
    const page = new DOMParser().parseFromString(body, "text/html");
    const alert = page.querySelector("[role=alert]");
    let reason;
    if ((xhr.responseURL && new URL(xhr.responseURL).pathname.startsWith("/login/")) || page.querySelector('input[name="password"]')) {
      reason = text("sessionEnded", "your session has ended. Log in again in another tab, then send this again");
    } else {
      reason = (alert ? alert.textContent : page.title).trim() + " (" + xhr.status + ")";
    }
    say(event, verb(event) + ": " + reason + ". " + text("kept", "What you typed is still here."));
  });

  document.addEventListener("htmx:responseError", function (event) {
    const status = event.detail.xhr.status;
    let reason = text("refused", "the server refused it (%s)").replace("%s", status);
    if (status >= 500) {
      reason = text("failed", "the server failed (%s)").replace("%s", status);
    } else if (status === 404) {
      reason = text("noPage", "the server found no such page (404): reload to see what changed");
    }
    say(event, verb(event) + ": " + reason + ". " + text("keptRetry", "What you typed is still here: try again."));
  });

  document.addEventListener("htmx:sendError", function (event) {
    say(event, verb(event) + ": " + text("unreachable", "the server could not be reached") + ". " + text("keptRetry", "What you typed is still here: try again."));
  });
})();
