/* Rows of a console widget (attributes, the password policy): the one script behind their Add and
   Remove buttons, driven by data attributes, so that each widget's template holds markup only.
   A box [data-rows] holds a tbody of rows; a [data-rows-add] button appends an empty copy of the
   last row and focuses it; a [data-rows-remove] button removes its row (the last row is emptied
   instead). A select whose option carries data-default fills in the row's empty value; an option
   with data-no-value makes the value read-only (not disabled: a disabled input is not posted and
   the rows would lose their pairs). The buttons are type="button": Enter in a field saves. */
(function () {
  "use strict";
  if (window.consoleRows) return;  // each widget includes this script; one set of listeners
  window.consoleRows = true;
  function fit(row) {
    const select = row.querySelector("select");
    const input = row.querySelector("input[type=text]");
    if (!select || !input) return;
    input.readOnly = Boolean(select.selectedOptions[0] && select.selectedOptions[0].hasAttribute("data-no-value"));
    if (input.readOnly) input.value = "";
  }
  function empty(row) {
    row.querySelectorAll("input[type=text]").forEach((i) => { i.value = ""; });
    row.querySelectorAll("select").forEach((s) => { s.value = ""; });
    fit(row);
  }
  document.addEventListener("click", (event) => {
    const box = event.target.closest("[data-rows]");
    if (!box) return;
    const body = box.querySelector("tbody");
    const remove = event.target.closest("[data-rows-remove]");
    if (remove) {
      const row = remove.closest("tr");
      if (body.rows.length > 1) row.remove(); else empty(row);
      return;
    }
    if (event.target.closest("[data-rows-add]")) {
      const row = body.lastElementChild.cloneNode(true);
      empty(row);
      body.appendChild(row);
      row.querySelector("select, input[type=text]").focus();
    }
  });
  document.addEventListener("change", (event) => {
    if (event.target.tagName !== "SELECT" || !event.target.closest("[data-rows]")) return;
    const row = event.target.closest("tr");
    const input = row.querySelector("input[type=text]");
    const option = event.target.selectedOptions[0];
    if (input && !input.value && option) input.value = option.dataset.default || "";
    fit(row);
  });
  function start() { document.querySelectorAll("[data-rows] tbody tr").forEach(fit); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
