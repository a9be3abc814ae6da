// Callsign console: small conveniences on pages that work without it.
// - A live indicator: it listens to /console/stream/ (EventSource; without
//   it, it asks /console/pulse/ every 10 seconds) and says when mail or
//   texts arrived, with a link that reloads the page.
// - Copy buttons: <button data-copy="element-id"> copies that element's text.
// - Keyboard shortcuts: a link with data-key="c" follows on the key c,
//   unless a field has the focus.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var live = document.getElementById("live");

  if (live && main) {
    var identity = main.getAttribute("data-identity") || "";
    var query = identity ? "?identity=" + encodeURIComponent(identity) : "";
    var announce = function () {
      if (!live.hidden) { return; }
      live.textContent = "";
      var a = document.createElement("a");
      a.href = location.href;
      a.textContent = "New messages: reload";
      live.appendChild(a);
      live.hidden = false;
    };
    if (window.EventSource) {
      // The server says "changed" when this person's mail or texts change.
      var source = new EventSource("/console/stream/" + query);
      source.addEventListener("changed", announce);
    } else {
      var first = null;
      var poll = function () {
        fetch("/console/pulse/" + query, { credentials: "same-origin", headers: { "Accept": "application/json" } })
          .then(function (r) { return r.ok ? r.json() : null; })
          .then(function (p) {
            if (!p) { return; }
            if (first === null) { first = p.stamp; } else if (p.stamp !== first) { announce(); }
          })
          .catch(function () {});
      };
      poll();
      setInterval(poll, 10000);
    }
  }

  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button[data-copy]") : null;
    if (!b) { return; }
    var source = document.getElementById(b.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      b.textContent = "Copied";
    });
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(t.tagName))) { return; }
    var link = document.querySelector('[data-key="' + (e.key === "/" ? "slash" : e.key) + '"]');
    if (!link) { return; }
    e.preventDefault();
    if (link.tagName === "INPUT") { link.focus(); } else { link.click(); }
  });
})();
