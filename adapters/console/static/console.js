// Callsign console: small conveniences on pages that work without it.
// - A live indicator: it listens to /console/stream/ (EventSource; without
//   it, it asks /console/pulse/ every 10 seconds) and says when mail or
//   texts arrived, with a link that reloads the page.
// - Copy buttons: <button data-copy="element-id"> copies that element's text.
// - Keyboard shortcuts: a link with data-key="c" follows on the key c,
//   unless a field has the focus.
// - Message frames fit their content: the frame runs no script (sandbox
//   without allow-scripts, and its CSP), but keeps the console's origin,
//   so this script measures it and sets its height as it changes (images
//   loading, a narrower window). Without it, the frame keeps a fixed height
//   and scrolls.
(function () {
  "use strict";
  var fit = function (frame) {
    var doc;
    try { doc = frame.contentDocument; } catch (e) { return; }
    if (!doc || !doc.documentElement || frame.dataset.fitted) { return; }
    frame.dataset.fitted = "1";
    var size = function () {
      var root = doc.documentElement;
      // The content's own height (not the frame's), its borders, and a
      // horizontal scroll bar when a wide table needs one.
      var bar = root.scrollWidth > root.clientWidth ? (frame.contentWindow.innerHeight - root.clientHeight) || 16 : 0;
      var height = Math.ceil(root.getBoundingClientRect().height) + (frame.offsetHeight - frame.clientHeight) + bar;
      if (frame.style.height !== height + "px") { frame.style.height = height + "px"; }
    };
    size();
    if (window.ResizeObserver) { new ResizeObserver(size).observe(doc.documentElement); }
    window.addEventListener("resize", size);
  };
  Array.prototype.forEach.call(document.querySelectorAll("iframe.body-html"), function (frame) {
    frame.addEventListener("load", function () { frame.dataset.fitted = ""; fit(frame); });
    var doc = frame.contentDocument;
    if (doc && doc.readyState === "complete" && doc.URL !== "about:blank") { fit(frame); }
  });

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
