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
        var f = td.getAttribute("data-f");
        td.textContent = count(q[f]);
        if (f === "dead") { td.classList.toggle("dead-some", q.dead > 0); }
      });
    });
  }

  // replaceChart swaps the chart in box for the one the server drew. The
  // SVG holds only numbers and fixed words; it is parsed as XML, never as
  // HTML.
  function replaceChart(boxID, svgText) {
    var box = document.getElementById(boxID);
    if (!box || !svgText) { return; }
    var doc = new DOMParser().parseFromString(svgText, "image/svg+xml");
    var svg = doc.documentElement;
    if (!svg || svg.namespaceURI !== SVG) { return; }
    box.replaceChildren(document.importNode(svg, true));
  }

  function drawCharts(c) {
    replaceChart("depth-box", c.depth);
    replaceChart("rate-box", c.rate);
    document.getElementById("depth-last").textContent = c.depth_now || "";
    document.getElementById("rate-last").textContent = c.rate_now || "";
    document.getElementById("rate-note").hidden = !!c.rates;
  }

  function getJSON(url) {
    return fetch(url, { headers: { "Accept": "application/json" }, cache: "no-store" })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      });
  }

  function refresh() {
    var state = document.getElementById("refresh-state");
    var charts = document.getElementById("charts");
    var table = document.getElementById("queues");
    Promise.all([
      getJSON(charts.getAttribute("data-src")).then(drawCharts),
      table ? getJSON("/api/stats").then(function (data) { updateTable(data.queues || []); }) : null
    ])
      .then(function () {
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
    if (document.getElementById("charts")) { setTimeout(refresh, EVERY); }
    var all = document.getElementById("select-all");
    if (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll("#letters input[name=id]").forEach(function (b) { b.checked = all.checked; });
      });
    }
  });
})();
