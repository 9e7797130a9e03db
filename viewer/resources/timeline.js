"use strict";
var D = JSON.parse(document.getElementById("data").textContent);
var tl = { sel: null, pending: null, drag: null, url: null, svg: "" };
var enc = new TextEncoder(), dec = new TextDecoder();
var maps = Array.prototype.slice.call(document.querySelectorAll("svg.map"));
D.symbols = D.symbols.map(function (s) {
  return { name: s[0], kind: s[1], fill: s[2], esc: esc(s[0]), bytes: enc.encode(s[0]) };
});

function esc(s) {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// ---- Numbers as the exporters' writer prints them --------------------------------------------

function fixed2(v) {
  var h = Math.round(v * 100);
  return Math.floor(h / 100) + "." + String(h % 100).padStart(2, "0");
}
function grouped(n) {
  var d = String(n), o = "";
  for (var i = 0; i < d.length; i++) {
    if (i > 0 && (d.length - i) % 3 === 0) o += ",";
    o += d[i];
  }
  return o;
}
function percent(part, total) { return (part === total ? "100" : fixed2(100 * part / total)) + "%"; }
// The label that fits in `width` pixels, counted in bytes and never splitting a character.
function fitLabel(sym, width) {
  var room = (width - 3) / (12 * 0.59);
  if (room < 3) return "";
  var chars = Math.floor(room);
  if (sym.bytes.length <= chars) return sym.esc;
  var cut = chars - 2;
  while (cut > 0 && (sym.bytes[cut] & 0xC0) === 0x80) cut--;
  return cut > 0 ? esc(dec.decode(sym.bytes.subarray(0, cut))) + ".." : "";
}
// Seconds with the decimals they need, as `inprof` prints and reads them.
function seconds(ns) {
  var s = Math.floor(ns / 1e9), f = ns - s * 1e9;
  return f === 0 ? String(s) : s + "." + String(f).padStart(9, "0").replace(/0+$/, "");
}

// ---- Cells and ranges -------------------------------------------------------------------------

// Where cell `i` (column * rows + row) starts, in ns since the start: a row starts at
// ceil(row * 1e9 / rows), the rule `inprof timeline` files samples into rows by.
function cellStart(i) {
  var col = Math.floor(i / D.rows), row = i % D.rows;
  return col * 1e9 + Math.floor((row * 1e9 + D.rows - 1) / D.rows);
}

function cellAt(svg, evt) {
  var pt = svg.createSVGPoint();
  pt.x = evt.clientX;
  pt.y = evt.clientY;
  var p = pt.matrixTransform(svg.getScreenCTM().inverse());
  var x0 = Number(svg.dataset.x0), y0 = Number(svg.dataset.y0);
  var col = Math.floor((p.x - x0) / Number(svg.dataset.cw));
  var row = Math.floor((p.y - y0) / Number(svg.dataset.ch));
  if (col < 0 || col >= D.cols || row < 0 || row >= D.rows) return null;
  return (D.col0 + col) * D.rows + row;
}

// Outlines cells first..last of a map: one rectangle per column they cover.
function outline(svg, first, last, cls) {
  var g = svg.querySelector(".sel");
  var x0 = Number(svg.dataset.x0), y0 = Number(svg.dataset.y0);
  var cw = Number(svg.dataset.cw), ch = Number(svg.dataset.ch);
  for (var col = Math.floor(first / D.rows); col <= Math.floor(last / D.rows); col++) {
    var r0 = Math.max(first - col * D.rows, 0), r1 = Math.min(last - col * D.rows, D.rows - 1);
    var r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    r.setAttribute("x", x0 + (col - D.col0) * cw);
    r.setAttribute("y", y0 + r0 * ch);
    r.setAttribute("width", cw);
    r.setAttribute("height", (r1 - r0 + 1) * ch);
    if (cls) r.setAttribute("class", cls);
    g.appendChild(r);
  }
}

function clearOutlines() {
  maps.forEach(function (svg) { svg.querySelector(".sel").textContent = ""; });
}

// ---- The flame graph of a range -----------------------------------------------------------

function flameSvg(map, first, last, subtitle) {
  var P = D.nodes, n = P.length / 2, S = D.symbols;
  var total = new Float64Array(n), count = 0;
  map.cells.forEach(function (c) {
    var i = c[0] * D.rows + c[1];
    if (i < first || i > last) return;
    count += c[2];
    for (var k = 0; k < c[4].length; k += 2) total[c[4][k]] += c[4][k + 1];
  });
  for (var i = n - 1; i > 0; i--) total[P[2 * i]] += total[i];
  var depth = new Int32Array(n), kids = [];
  for (i = 0; i < n; i++) kids.push([]);
  for (i = 1; i < n; i++) {
    depth[i] = depth[P[2 * i]] + 1;
    if (total[i] > 0) kids[P[2 * i]].push(i);
  }
  kids.forEach(function (k) { k.sort(function (a, b) { return P[2 * a + 1] - P[2 * b + 1]; }); });

  var width = 1200, xpad = 10, fh = 16, all = total[0];
  var scale = all > 0 ? (width - 2 * xpad) / all : 0;
  var drawn = function (i) { return total[i] > 0 && total[i] * scale >= 0.1; };
  var maxDepth = 0;
  for (i = 0; i < n; i++) if (drawn(i) && depth[i] > maxDepth) maxDepth = depth[i];
  var height = 60 + 34 + (maxDepth + 1) * fh;

  var frames = [], stack = [[0, 0]];
  while (stack.length) {
    var item = stack.pop(), node = item[0], x = item[1];
    if (!drawn(node)) continue;
    var sym = S[P[2 * node + 1]], w = total[node];
    var px = xpad + x * scale, pw = w * scale, y = height - 34 - (depth[node] + 1) * fh;
    frames.push('<g data-x="' + x + '" data-w="' + w + '" data-d="' + depth[node] + '"><title>' +
                sym.esc + " (" + (sym.kind === 1 ? "inlined, " : "") + grouped(w) + " samples, " +
                percent(w, all) + ')</title><rect x="' + fixed2(px) + '" y="' + fixed2(y) +
                '" width="' + fixed2(pw) + '" height="15" fill="' + sym.fill +
                '" rx="2" ry="2"/><text x="' + fixed2(px + 3) + '" y="' + fixed2(y + 10.5) + '">' +
                fitLabel(sym, pw) + "</text></g>\n");
    var reversed = [], cx = x;
    kids[node].forEach(function (c) { reversed.push([c, cx]); cx += total[c]; });
    for (var k = reversed.length - 1; k >= 0; k--) stack.push(reversed[k]);
  }
  var text = function (id, x, y, t, cls) {
    return '<text id="' + id + '"' + (cls ? ' class="' + cls + '"' : "") + ' x="' + fixed2(x) +
           '" y="' + Math.floor(y) + '">' + t + "</text>\n";
  };
  var head = D.flame_head.replace(/ height="\d+" viewBox="0 0 (\d+) \d+"/,
                                  ' height="' + height + '" viewBox="0 0 $1 ' + height + '"');
  var svg = head + '<rect x="0" y="0" width="' + width + '" height="' + height +
            '" fill="url(#background)"/>\n' + text("title", width / 2, 24, "Flame Graph") +
            text("subtitle", width / 2, 48, esc(subtitle(all))) +
            text("details", xpad, height - 17, " ") +
            text("unzoom", xpad, 24, "Reset Zoom", "hide") +
            text("search", width - xpad - 100, 24, "Search") +
            text("ignorecase", width - xpad - 6, 24, "ic") +
            text("matched", width - xpad - 100, height - 17, " ", "hide") +
            (all === 0 ? text("empty", width / 2, 60 + fh, "No samples") : "") +
            '<g id="frames">\n' + frames.join("") + "</g>\n</svg>\n";
  return { svg: svg, height: height, total: all, count: count };
}

// ---- Selecting ------------------------------------------------------------------------------

function select(m, a, b) {
  var first = Math.min(a, b), last = Math.max(a, b), map = D.maps[m];
  var from = cellStart(first), to = cellStart(last + 1);
  var range = seconds(from) + "-" + seconds(to) + " s";
  var summary = range + (map.summary ? ", " + map.summary : "");
  var f = flameSvg(map, first, last, function (total) {
    return D.subtitle.replace(/[\d,]+ samples$/, "") + grouped(total) + " samples (" + summary + ")";
  });
  tl.sel = { map: m, first: first, last: last, from: from, to: to };
  tl.pending = null;
  tl.svg = f.svg;
  clearOutlines();
  outline(maps[m], first, last, "");
  var weight = 0;
  map.cells.forEach(function (c) { weight += c[3]; });
  document.getElementById("range").textContent =
      "Selected " + seconds(from) + " s to " + seconds(to) + " s (" + seconds(to - from) + " s" +
      (D.maps.length > 1 ? ", " + map.name : "") + "): " + grouped(f.count) + " samples, " +
      (weight > 0 ? fixed2(100 * f.total / weight) : "0.00") + "% of the map's weight";
  var args = "--from " + seconds(from) + " --to " + seconds(to) + (map.args ? " " + map.args : "");
  document.getElementById("command").textContent =
      D.command + " " + args + " " + D.profile + " -o flame.svg";
  if (tl.url) URL.revokeObjectURL(tl.url);
  tl.url = URL.createObjectURL(new Blob([f.svg], { type: "image/svg+xml" }));
  var frame = document.getElementById("flame");
  frame.style.height = (f.height + 4) + "px";
  frame.src = tl.url;
  var save = document.getElementById("save");
  save.href = tl.url;
  save.download = "flame-" + seconds(from) + "-" + seconds(to) + ".svg";
  document.getElementById("selection").hidden = false;
  document.getElementById("status").textContent =
      "Click two cells or drag for another range; Escape clears.";
}

function clearSelection() {
  tl.sel = null;
  tl.pending = null;
  tl.drag = null;
  clearOutlines();
  document.getElementById("selection").hidden = true;
  document.getElementById("status").textContent =
      "Select a range: click a start cell and an end cell, or drag.";
}

maps.forEach(function (svg) {
  var m = Number(svg.dataset.map);
  svg.addEventListener("mousedown", function (e) {
    if (e.button !== 0) return;
    var cell = cellAt(svg, e);
    if (cell === null) return;
    e.preventDefault();
    tl.drag = { map: m, start: cell, end: cell };
  });
  svg.addEventListener("mousemove", function (e) {
    if (!tl.drag || tl.drag.map !== m) return;
    var cell = cellAt(svg, e);
    if (cell === null || cell === tl.drag.end) return;
    tl.drag.end = cell;
    clearOutlines();
    outline(svg, Math.min(tl.drag.start, cell), Math.max(tl.drag.start, cell), "pending");
  });
});

window.addEventListener("mouseup", function (e) {
  var drag = tl.drag;
  tl.drag = null;
  if (!drag) return;
  var svg = maps[drag.map], cell = cellAt(svg, e);
  if (cell === null) cell = drag.end;
  if (cell !== drag.start) {
    select(drag.map, drag.start, cell);
  } else if (tl.pending && tl.pending.map === drag.map) {
    select(drag.map, tl.pending.cell, cell);
  } else {
    // The first of two clicks: the start, until the end is clicked.
    tl.pending = { map: drag.map, cell: cell };
    clearOutlines();
    outline(svg, cell, cell, "pending");
    document.getElementById("status").textContent =
        "Start at " + seconds(cellStart(cell)) + " s: now click the end cell.";
  }
});

window.addEventListener("keydown", function (e) {
  if (e.key === "Escape") clearSelection();
});
document.getElementById("clear").addEventListener("click", clearSelection);
document.getElementById("copy").addEventListener("click", function () {
  var text = document.getElementById("command").textContent;
  if (navigator.clipboard) navigator.clipboard.writeText(text).catch(function () {});
});
