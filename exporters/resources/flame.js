"use strict";
var fg = { frames: [], root: null, zoomed: null, term: null, ignorecase: false,
           xpad: 10, width: 1200, fontsize: 12, fontwidth: 0.59 };
var searchcolor = "rgb(230,0,230)";

function init(evt) {
  var svg = document.documentElement;
  fg.xpad = parseFloat(svg.getAttribute("data-xpad"));
  fg.width = parseFloat(svg.getAttribute("width"));
  fg.fontsize = parseFloat(svg.getAttribute("data-fontsize"));
  fg.fontwidth = parseFloat(svg.getAttribute("data-fontwidth"));
  fg.details = document.getElementById("details").firstChild;
  fg.unzoom = document.getElementById("unzoom");
  fg.search = document.getElementById("search");
  fg.ignorecaseBtn = document.getElementById("ignorecase");
  fg.matched = document.getElementById("matched");
  var groups = document.getElementById("frames").children;
  for (var i = 0; i < groups.length; i++) {
    var g = groups[i], rect = g.querySelector("rect"), text = g.querySelector("text");
    g.fgIndex = i;
    fg.frames.push({ g: g, rect: rect, text: text, name: null,
                     x: Number(g.getAttribute("data-x")), w: Number(g.getAttribute("data-w")),
                     d: Number(g.getAttribute("data-d")),
                     x0: rect.getAttribute("x"), w0: rect.getAttribute("width"),
                     tx0: text.getAttribute("x"), label0: text.textContent,
                     fill0: rect.getAttribute("fill") });
  }
  fg.root = fg.frames.length ? fg.frames[0] : null;
  var params = new URLSearchParams(window.location.search);
  if (params.get("s")) search(params.get("s"));
}

// The box (a <g> in #frames) an event happened in, or null.
function frameOf(node) {
  while (node && node.parentNode) {
    if (node.parentNode.id === "frames") return fg.frames[node.fgIndex];
    node = node.parentNode;
  }
  return null;
}

function titleOf(f) { return f.g.querySelector("title").textContent; }

// The function name: the title without its trailing "(N samples, P%)".
function nameOf(f) {
  if (f.name === null) {
    var m = /^([\s\S]*) \([^()]*\)$/.exec(titleOf(f));
    f.name = m ? m[1] : titleOf(f);
  }
  return f.name;
}

function fitLabel(name, width) {
  var room = (width - 3) / (fg.fontsize * fg.fontwidth);
  if (room < 3) return "";
  var chars = Math.floor(room);
  if (name.length <= chars) return name;
  return name.substring(0, chars - 2) + "..";
}

function place(f, x, w) {
  f.rect.setAttribute("x", x.toFixed(2));
  f.rect.setAttribute("width", w.toFixed(2));
  f.text.setAttribute("x", (x + 3).toFixed(2));
  f.text.textContent = fitLabel(nameOf(f), w);
}

function restore(f) {
  f.rect.setAttribute("x", f.x0);
  f.rect.setAttribute("width", f.w0);
  f.text.setAttribute("x", f.tx0);
  f.text.textContent = f.label0;
  f.g.classList.remove("hide", "parent");
}

// Shows `z` at full width with its callees scaled to it; its callers stay shown (faded, full
// width) so the path to it is never lost; everything else is hidden.
function zoom(z) {
  if (z === fg.root) { unzoom(); return; }
  fg.zoomed = z;
  var full = fg.width - 2 * fg.xpad, scale = full / z.w;
  for (var i = 0; i < fg.frames.length; i++) {
    var f = fg.frames[i];
    if (f.d >= z.d && f.x >= z.x && f.x + f.w <= z.x + z.w) {
      place(f, fg.xpad + (f.x - z.x) * scale, f.w * scale);
      f.g.classList.remove("hide", "parent");
    } else if (f.d < z.d && f.x <= z.x && f.x + f.w >= z.x + z.w) {
      place(f, fg.xpad, full);
      f.g.classList.remove("hide");
      f.g.classList.add("parent");
    } else {
      f.g.classList.add("hide");
    }
  }
  fg.unzoom.classList.remove("hide");
  if (fg.term !== null) search(fg.term);
}

function unzoom() {
  fg.zoomed = null;
  for (var i = 0; i < fg.frames.length; i++) restore(fg.frames[i]);
  fg.unzoom.classList.add("hide");
  if (fg.term !== null) search(fg.term);
}

// Highlights every box whose name matches the regular expression `term`, and shows the share
// of the samples in view (the zoomed box, or everything) that have a match anywhere in their
// stack: the union of the matched boxes' ranges, so a match under a match is not counted twice.
function search(term) {
  var re;
  try {
    re = new RegExp(term, fg.ignorecase ? "i" : "");
  } catch (err) {
    fg.details.nodeValue = "Invalid search: " + err.message;
    return;
  }
  fg.term = term;
  var view = fg.zoomed || fg.root;
  var ranges = [];
  for (var i = 0; i < fg.frames.length; i++) {
    var f = fg.frames[i];
    if (re.test(nameOf(f))) {
      f.rect.setAttribute("fill", searchcolor);
      if (!view) continue;
      var start = Math.max(f.x, view.x), end = Math.min(f.x + f.w, view.x + view.w);
      if (start < end) ranges.push([start, end]);
    } else {
      f.rect.setAttribute("fill", f.fill0);
    }
  }
  ranges.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
  var covered = 0, reach = -Infinity;
  for (var j = 0; j < ranges.length; j++) {
    var s = Math.max(ranges[j][0], reach);
    if (ranges[j][1] > s) covered += ranges[j][1] - s;
    reach = Math.max(reach, ranges[j][1]);
  }
  var pct = view && view.w > 0 ? 100 * covered / view.w : 0;
  fg.matched.firstChild.nodeValue = "Matched: " + (pct === 100 ? "100" : pct.toFixed(1)) + "%";
  fg.matched.classList.remove("hide");
  fg.search.firstChild.nodeValue = "Reset Search";
  fg.search.classList.add("show");
  setParam("s", term);
}

function resetSearch() {
  fg.term = null;
  for (var i = 0; i < fg.frames.length; i++) {
    fg.frames[i].rect.setAttribute("fill", fg.frames[i].fill0);
  }
  fg.matched.classList.add("hide");
  fg.matched.firstChild.nodeValue = " ";
  fg.search.firstChild.nodeValue = "Search";
  fg.search.classList.remove("show");
  setParam("s", null);
}

function searchPrompt() {
  if (fg.term !== null) { resetSearch(); return; }
  var term = window.prompt("Search (a regular expression, e.g. ^std::)" +
                           (fg.ignorecase ? ", ignoring case" : ""), "");
  if (term) search(term);
}

function toggleIgnorecase() {
  fg.ignorecase = !fg.ignorecase;
  fg.ignorecaseBtn.classList.toggle("show", fg.ignorecase);
  if (fg.term !== null) search(fg.term);
}

// Keeps the search in the address so a link reopens the same view; not possible everywhere
// (some viewers refuse history changes on file: URLs), and not needed there.
function setParam(key, value) {
  try {
    var url = new URL(window.location.href);
    if (value === null) url.searchParams.delete(key); else url.searchParams.set(key, value);
    history.replaceState(null, "", url.toString());
  } catch (err) {}
}

window.addEventListener("click", function (e) {
  var f = frameOf(e.target);
  if (f) { zoom(f); return; }
  if (e.target.id === "unzoom") unzoom();
  else if (e.target.id === "search") searchPrompt();
  else if (e.target.id === "ignorecase") toggleIgnorecase();
}, false);

window.addEventListener("mouseover", function (e) {
  var f = frameOf(e.target);
  if (f) fg.details.nodeValue = "Function: " + titleOf(f);
}, false);

window.addEventListener("mouseout", function (e) {
  if (frameOf(e.target)) fg.details.nodeValue = " ";
}, false);

// Ctrl-F or F3: search; Ctrl-I: ignore case; Escape: reset zoom and search.
window.addEventListener("keydown", function (e) {
  if (e.key === "F3" || (e.ctrlKey && (e.key === "f" || e.key === "F"))) {
    e.preventDefault();
    searchPrompt();
  } else if (e.ctrlKey && (e.key === "i" || e.key === "I")) {
    e.preventDefault();
    toggleIgnorecase();
  } else if (e.key === "Escape") {
    if (fg.term !== null) resetSearch();
    unzoom();
  }
}, false);
