// Small conveniences on top of htmx; every action also works without this file.
// Loaded as a file (never inline) so the Content Security Policy can forbid inline script.
(function () {
  "use strict";

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
    form.elements.spans.value = spans.map((s) => s[0] + "-" + s[1]).join(",");
    // The claim text starts as the selection without citation markers.
    form.elements.text.value = spans
      .map((s) => s[2].replace(/\[[^\]]{1,20}\]/g, "").replace(/\s+/g, " ").trim())
      .join(" ");
  }

  // --- Merging suggestions --------------------------------------------------------------
  document.addEventListener("change", function (event) {
    const box = event.target;
    if (!box.matches || !box.matches('input[name="pick"]')) {
      return;
    }
    const picks = Array.from(document.querySelectorAll('input[name="pick"]:checked'));
    const spans = document.getElementById("merge-spans");
    const text = document.getElementById("merge-text");
    if (spans && text) {
      spans.value = picks.map((p) => p.value).join(",");
      text.value = picks.map((p) => p.dataset.text).join(" ");
    }
  });

  // --- Keyboard ----------------------------------------------------------------------------
  let current = null;

  function cards() {
    return Array.from(document.querySelectorAll("article.card"));
  }

  function focusCard(card) {
    if (!card) {
      return;
    }
    current = card.id;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function currentCard() {
    const active = document.activeElement && document.activeElement.closest("article.card");
    return active || (current && document.getElementById(current)) || null;
  }

  function verdictForm(card) {
    return card && card.querySelector("form[data-verdict-form]");
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
    } else if (event.key === "n") {
      const next = document.querySelector('[data-key="n"]');
      if (next) {
        window.location.assign(next.href);
      }
    } else if (event.key === "?") {
      toggleKeys();
    } else {
      return;
    }
  });

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

  // After htmx swaps a card in, keep the keyboard where it was.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (current && event.detail.target && event.detail.target.id === current) {
      focusCard(document.getElementById(current));
    }
  });
  document.addEventListener("verdict-saved", function (event) {
    const card = document.getElementById("card-" + event.detail.key);
    focusCard(card);
  });
})();
