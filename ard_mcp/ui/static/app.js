// ard-mcp web page: conveniences only. Searching, filtering, paging and reading all work without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // "/" focuses the task box, as on most search pages (not while typing in a field).
  const box = document.getElementById("q");
  document.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLElement && event.target.closest("input, textarea, select");
    if (box && event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });
  // Copy buttons for the host configurations: shown only where the clipboard can be written.
  for (const button of document.querySelectorAll("button.copy[data-copy]")) {
    if (!navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      await navigator.clipboard.writeText(source.textContent);
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
  // A crawl takes a while: say so, and keep the form from being sent twice.
  for (const form of document.querySelectorAll("form[data-busy]")) {
    form.addEventListener("submit", () => {
      const status = form.querySelector(".busy");
      if (status) status.textContent = form.dataset.busy;
      for (const button of form.querySelectorAll("button")) button.disabled = true;
    });
  }
});
