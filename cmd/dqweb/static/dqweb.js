// dqweb: auto-refresh and confirmation dialogs. Served as a file so that the
// Content-Security-Policy can forbid inline scripts. Without it the pages
// still work: actions then ask on a confirmation page.
"use strict";
(function () {
  // Actions: ask, then post with confirmed=yes (the server asks otherwise).
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.matches || !f.matches("form.act")) return;
    e.preventDefault();
    if (window.confirm(f.getAttribute("data-confirm"))) {
      f.elements.confirmed.value = "yes";
      f.submit();
    }
  });

  // Auto-refresh: reload every data-refresh seconds while the tab is
  // visible, nothing is selected and the user has not paused it.
  var secs = Number(document.body.getAttribute("data-refresh"));
  if (!secs) return;
  var key = "dqweb.paused";
  var btn = document.getElementById("refresh");
  var paused = function () { return window.localStorage && localStorage.getItem(key) === "1"; };
  var show = function () {
    if (!btn) return;
    btn.textContent = paused() ? "auto-refresh paused" : "auto-refresh " + secs + "s";
    btn.classList.toggle("off", paused());
  };
  if (btn) btn.addEventListener("click", function () {
    if (window.localStorage) localStorage.setItem(key, paused() ? "0" : "1");
    show();
  });
  show();
  window.setInterval(function () {
    var sel = window.getSelection && String(window.getSelection());
    if (paused() || document.hidden || sel) return;
    window.location.reload();
  }, secs * 1000);
})();
