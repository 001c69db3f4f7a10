// dqweb: auto-refresh, confirmation dialogs and the selection of items.
// Served as a file so that the Content-Security-Policy can forbid inline
// scripts. Without it the pages still work: actions then ask on a
// confirmation page, with the number of items selected.
"use strict";
(function () {
  // The checkboxes of a selection form (they name it with form="sel").
  var boxes = function (f) {
    return Array.prototype.filter.call(f.elements, function (el) {
      return (el.name === "idx" || el.name === "pidx") && el.type === "checkbox";
    });
  };
  var checked = function (f) {
    return boxes(f).filter(function (el) { return el.checked; }).length;
  };

  // Actions: ask, then post with confirmed=yes (the server asks otherwise).
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.matches) return;
    if (f.matches("form.act")) {
      e.preventDefault();
      if (window.confirm(f.getAttribute("data-confirm"))) {
        f.elements.confirmed.value = "yes";
        f.submit();
      }
      return;
    }
    if (!f.matches("form.sel")) return;
    // A selection: the question says how many items, which action.
    e.preventDefault();
    var b = e.submitter;
    var n = checked(f);
    if (!b || !b.value || n === 0) return;
    var q = n === 1 ? b.getAttribute("data-one") : b.getAttribute("data-many").replace("{n}", String(n));
    if (!window.confirm(q)) return;
    var op = document.createElement("input");
    op.type = "hidden";
    op.name = "op";
    op.value = b.value;
    f.appendChild(op);
    f.elements.confirmed.value = "yes";
    f.submit();
  });

  // The selection's count, its buttons (off with nothing selected), and
  // "all on this page".
  var sel = document.getElementById("sel");
  if (sel) {
    var all = sel.querySelector("input.all");
    var count = sel.querySelector(".selected");
    var update = function () {
      var n = checked(sel);
      count.textContent = n === 0 ? "select items to act on them" : n + " selected";
      Array.prototype.forEach.call(sel.querySelectorAll("button[data-op]"), function (b) { b.disabled = n === 0; });
      if (all) all.checked = n > 0 && n === boxes(sel).length;
    };
    document.addEventListener("change", function (e) {
      if (e.target === all) {
        boxes(sel).forEach(function (el) { el.checked = all.checked; });
      }
      update();
    });
    if (all) all.parentNode.hidden = false;
    update();
  }

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
  // A limit being typed (or its form opened) would be lost by a reload.
  var editingLimit = function () {
    var a = document.activeElement;
    if (a && a.form && a.form.matches("form.limit")) return true;
    if (document.querySelector("details.setlimit[open]")) return true;
    return Array.prototype.some.call(document.querySelectorAll("form.limit input[type=text]"), function (el) {
      return el.value !== el.defaultValue;
    });
  };
  window.setInterval(function () {
    var text = window.getSelection && String(window.getSelection());
    var typing = document.activeElement && document.activeElement.matches("input[type=search]") && document.activeElement.value;
    if (paused() || document.hidden || text || typing || editingLimit()) return;
    window.location.reload();
  }, secs * 1000);
})();
