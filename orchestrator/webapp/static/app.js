// guilds operator app: the little the pages need besides htmx. Every form works without it.
(function () {
  "use strict";

  // With this script running, a control that saves on change needs no Save button (.nojs).
  document.documentElement.classList.add("js");

  // A form is sent once: a second submit (a double click) before the answer is dropped. The
  // server also answers a form's second sending with the first's result (its once token).
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!(form instanceof HTMLFormElement)) return;
    if (!checkJSON(form)) {
      e.preventDefault();
      e.stopImmediatePropagation();
      return;
    }
    if (form.hasAttribute("hx-post") || form.hasAttribute("hx-put") || form.hasAttribute("hx-delete") || form.hasAttribute("hx-get")) return;
    if (form.dataset.sent === "1") {
      e.preventDefault();
      return;
    }
    form.dataset.sent = "1";
  }, true);

  // Coming back to a page (the back button) makes its forms usable again.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[data-sent]").forEach(function (f) { delete f.dataset.sent; });
  });

  // htmx requests from a form check its JSON fields first.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt && e.detail.elt.closest ? e.detail.elt.closest("form") : null;
    if (form && !checkJSON(form)) e.preventDefault();
  });

  // checkJSON validates every textarea marked data-json (an object or array argument of a tool)
  // before the form is sent, and says what is wrong beside the field.
  function checkJSON(form) {
    var ok = true;
    form.querySelectorAll("textarea[data-json]").forEach(function (ta) {
      var msg = "";
      var text = ta.value.trim();
      if (text !== "") {
        try {
          var v = JSON.parse(text);
          var want = ta.dataset.json;
          if (want === "object" && (v === null || typeof v !== "object" || Array.isArray(v))) msg = "must be a JSON object, such as {\"key\": \"value\"}";
          if (want === "array" && !Array.isArray(v)) msg = "must be a JSON array, such as [1, 2]";
        } catch (err) {
          msg = "is not valid JSON: " + err.message;
        }
      }
      var box = document.getElementById("j-" + ta.id);
      if (msg) {
        ok = false;
        ta.setAttribute("aria-invalid", "true");
        if (box) { box.textContent = ta.dataset.name + " " + msg; box.hidden = false; }
      } else {
        ta.removeAttribute("aria-invalid");
        if (box) { box.textContent = ""; box.hidden = true; }
      }
    });
    if (!ok) {
      var first = form.querySelector("textarea[aria-invalid='true']");
      if (first) first.focus();
    }
    return ok;
  }
  // The coin picker: a ticked search result joins the chosen coins (and keeps the focus), so a
  // new search keeps it; Enter in the search box searches instead of sending the form.
  document.addEventListener("change", function (e) {
    var box = e.target;
    if (!(box instanceof HTMLInputElement) || box.type !== "checkbox" || !box.checked) return;
    var results = box.closest("[data-coin-results]");
    if (!results) return;
    var chosen = document.getElementById(results.dataset.coinResults);
    if (!chosen) return;
    chosen.querySelectorAll("input[name='coin']").forEach(function (o) {
      if (o.value === box.value && o !== box) o.closest(".check").remove();
    });
    chosen.appendChild(box.closest(".check"));
    box.focus();
    countCoins(chosen);
  });
  document.addEventListener("change", function (e) {
    var chosen = e.target instanceof Element ? e.target.closest("[data-coins-chosen]") : null;
    if (chosen) countCoins(chosen);
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && e.target instanceof HTMLInputElement && e.target.hasAttribute("data-search")) e.preventDefault();
  });

  function countCoins(chosen) {
    var out = document.getElementById("coins-count");
    if (out) out.textContent = chosen.querySelectorAll("input[name='coin']:checked").length + " chosen.";
  }
})();
