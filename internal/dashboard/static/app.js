// queuey dashboard: live refresh of the overview and the select-all box.
// Plain script, no dependencies; text goes in through textContent only.
"use strict";

(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var EVERY = 2000;

  function count(n) { return n < 0 ? "?" : String(n); }

  function updateTable(queues) {
    var rows = document.querySelectorAll("#queues tr[data-queue]");
    var byName = {};
    queues.forEach(function (q) { byName[q.queue] = q; });
    rows.forEach(function (row) {
      var q = byName[row.getAttribute("data-queue")];
      if (!q) { return; }
      row.querySelectorAll("td[data-f]").forEach(function (td) {
        td.textContent = count(q[td.getAttribute("data-f")]);
      });
    });
  }

  // line draws values (oldest first) as a polyline scaled to top.
  function line(svg, cls, values, top) {
    var p = document.createElementNS(SVG, "polyline");
    var n = values.length;
    var pts = values.map(function (v, i) {
      var x = n < 2 ? 600 : (i / (n - 1)) * 600;
      var y = 115 - (top > 0 ? (v / top) * 105 : 0);
      return x.toFixed(1) + "," + y.toFixed(1);
    });
    p.setAttribute("class", cls);
    p.setAttribute("points", pts.join(" "));
    svg.appendChild(p);
  }

  function chart(id, series) {
    var svg = document.getElementById(id);
    if (!svg) { return; }
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var top = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { top = Math.max(top, v); }); });
    [10, 62.5, 115].forEach(function (y) {
      var g = document.createElementNS(SVG, "line");
      g.setAttribute("class", "grid");
      g.setAttribute("x1", "0"); g.setAttribute("x2", "600");
      g.setAttribute("y1", String(y)); g.setAttribute("y2", String(y));
      svg.appendChild(g);
    });
    series.forEach(function (s) { line(svg, s.cls, s.values, top); });
    svg.setAttribute("data-points", String(series[0].values.length));
    svg.setAttribute("data-max", String(top));
  }

  function draw(samples) {
    var depth = samples.map(function (s) { return s.depth; });
    chart("depth-chart", [{ cls: "depth", values: depth }]);
    var last = samples[samples.length - 1];
    document.getElementById("depth-last").textContent = last ? "now " + last.depth + ", max shown " + Math.max.apply(null, depth) : "";
    var rates = samples.some(function (s) { return s.rates; });
    document.getElementById("rate-note").hidden = rates;
    chart("rate-chart", [
      { cls: "published", values: samples.map(function (s) { return s.published; }) },
      { cls: "handled", values: samples.map(function (s) { return s.handled; }) }
    ]);
    document.getElementById("rate-last").textContent = rates && last ?
      "now " + last.published.toFixed(1) + " in, " + last.handled.toFixed(1) + " done" : "";
  }

  function refresh() {
    var state = document.getElementById("refresh-state");
    fetch("/api/stats", { headers: { "Accept": "application/json" }, cache: "no-store" })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (data) {
        updateTable(data.queues || []);
        draw(data.samples || []);
        var n = Number(document.body.getAttribute("data-refreshes") || "0") + 1;
        document.body.setAttribute("data-refreshes", String(n));
        state.textContent = "Last refresh " + new Date().toLocaleTimeString() + ".";
        state.className = "";
      })
      .catch(function (err) {
        state.textContent = "Refresh failed: " + err.message + "; retrying.";
        state.className = "error";
      })
      .finally(function () { setTimeout(refresh, EVERY); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.getElementById("charts")) { refresh(); }
    var all = document.getElementById("select-all");
    if (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll("#letters input[name=id]").forEach(function (b) { b.checked = all.checked; });
      });
    }
  });
})();
