// `inprof timeline PROFILE -o OUT.html|OUT.svg`: when the samples were taken, as a
// sub-second heat map (Brendan Gregg's FlameScope): one column per second since the start,
// one row per slice of the second, each cell coloured by the weight of the samples taken in
// it. Bursts, stalls and periodic work show as shapes a flame graph of the whole run hides.
//
// The SVG is the heat map alone. The HTML page adds the step FlameScope exists for: select a
// range of cells and see the flame graph of exactly that range. The page computes the graph
// itself, from data embedded once: the profile's stacks as a tree of (caller path, function)
// nodes (so a range's graph is only weights added up the tree, not stacks merged again), and
// per cell the tree leaves its samples reached, with their weight. The graph is written as
// the same SVG document `inprof flame` writes (its style sheet and script taken from the
// exporters' writer, boxes laid out by the same rules), so it zooms and searches the same way
// and `inprof flame --from A --to B`, which the page prints, draws the same boxes.
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cli.h"
#include "inprof/annotations.h"
#include "inprof/atomic_write.h"
#include "inprof/flame.h"
#include "inprof/profile_filter.h"
#include "inprof/saturating.h"
#include "progress.h"
#include "timeline_page.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

// What a cell's weight counts: samples when each stands for a period of the event's unit (a
// CPU-time sample of 10 ms is 1, not 10,000,000 nanoseconds), else the unit itself (counts).
std::string CellUnit(const EventInfo& event) {
  return event.period > 1 || event.unit.empty() ? std::string("samples") : event.unit;
}

constexpr const char* kTimelineHelp =
    R"(usage: inprof timeline [OPTIONS] PROFILE -o OUT.html|OUT.svg

When the samples were taken, as a sub-second heat map (FlameScope's): one column per second
since the start, one row per slice of the second (50 rows of 20 ms by default), each cell
coloured by the weight of the samples taken in it (the legend gives the scale). Bursts,
stalls and periodic work show as shapes.

OUT.html is a page to explore it: click a start cell and an end cell (or drag from one to the
other) and the page shows the flame graph of exactly that range (hover, click to zoom,
search, as `inprof flame` graphs), the range, and the `inprof flame` command that draws the
same graph. Escape clears the selection. OUT.svg is the heat map alone, a tooltip per cell.
One self-contained file either way: it loads nothing.

Needs the time of each sample: perf script output or a *.speedscope.json profile.

options:
  -o, --output FILE  OUT.html (the interactive page) or OUT.svg (the heat map); required
      --rows N       rows per second, 1-1000 (default 50: 20 ms each)
      --bucket MS    the time a row covers, in milliseconds, instead (rounded to a whole
                     number of rows per second)
      --per-thread   one heat map per thread, busiest first (the commands the page prints
                     then select the thread with --thread TID)
      --thread NAME  only this thread (a name or a tid; repeatable: any of them)
      --label K=V    only samples with this label (repeatable: all of them)
      --from T, --to T
                     only this part of the profile (seconds since the start: 1.5, 300ms);
                     columns still count from the profile's start
      --hide REGEX   frames whose function name matches REGEX leave every stack;
                     their weight goes to the caller (repeatable)
  -e, --event NAME   the event whose weight colours the cells (default: the first)
      --title TEXT   the page's title (default "Timeline of PROGRAM")
      --no-progress  no progress line while a large profile loads
  -h, --help         this text

examples:
  perf record -F 997 -g -- ./server && perf script > perf.script
  inprof timeline perf.script -o timeline.html
  inprof timeline --per-thread --bucket 10 perf.script -o threads.html
  inprof timeline --thread worker --from 10 --to 40 -o worker.svg perf.script
)";

constexpr int64_t kSecond = 1000000000;

// One column per second. The page's size follows the time its samples span, not the size of
// the input: a file of two samples, one at second 0 and one at second 10^10 (a hostile file,
// a clock that jumped), would ask for ten billion columns. Past this many (about 28 hours)
// the user picks a range with --from/--to, as the message says.
constexpr int64_t kMaxColumns = 100000;

struct TimelineOptions {
  std::string profile;
  std::string output;
  std::string event;
  std::string title;
  size_t rows = 50;
  bool per_thread = false;
  bool progress = true;
  ProfileFilter filter;
};

// ---------------------------------------------------------------------------------------------
// The model: cells per map, and the stack tree the page draws flame graphs from.

struct Cell {
  int64_t col = 0;  // seconds since the start: a hostile file's may pass 2^32
  uint32_t row = 0;
  uint64_t count = 0;  // timed samples
  int64_t weight = 0;
  std::map<uint32_t, int64_t> leaves;  // stack tree node -> weight (HTML only)
};

struct HeatMap {
  std::string name;  // "all threads", "worker (1235)"
  int64_t tid = 0;   // the thread of a per-thread map; 0 for all
  int64_t weight = 0;
  std::vector<Cell> cells;  // non-empty cells, in time order
};

struct FlameSymbolInfo {
  std::string name;  // as the flame graph shows it (FlameBoxName)
  FrameKind kind = FrameKind::kNative;
};

struct Timeline {
  uint32_t rows = 50;
  int64_t first_col = 0;   // the second the first column shows (--from's)
  uint32_t cols = 1;       // columns drawn, from first_col on
  int64_t max_cell = 0;
  uint64_t samples = 0;
  std::vector<HeatMap> maps;
  // The stack tree: node 0 is the root ("all"); every node's parent comes before it.
  std::vector<uint32_t> node_parent{0};
  std::vector<uint32_t> node_symbol{0};
  std::vector<FlameSymbolInfo> symbols;  // sorted by (name, kind), as the flame graph orders
};

// Row of a time within its second: the row whose [start, end) holds it, with row r starting
// at ceil(r * 1e9 / rows) ns (RowStart), which the page uses for the range it prints.
uint32_t RowOf(int64_t ns_in_second, uint32_t rows) {
  return static_cast<uint32_t>(ns_in_second * rows / kSecond);
}
int64_t RowStart(uint32_t row, uint32_t rows) {
  return (static_cast<int64_t>(row) * kSecond + rows - 1) / rows;
}

// Builds the stack tree and each sample's leaf in it, with flame graph names and ordering.
class StackTree {
 public:
  StackTree(const Profile& profile, Timeline* timeline) : profile_(profile), t_(*timeline) {
    Intern("all", FrameKind::kSynthetic);
    unknown_ = Intern("[unknown]", FrameKind::kSynthetic);
    frame_symbols_.reserve(profile.frames.size());
    for (const Frame& frame : profile.frames) {
      // As the flame graph names boxes: perf.log frames without a symbol by their line.
      std::string name = frame.function;
      if (name.empty() && frame.has_source()) {
        name = frame.file + ":" + std::to_string(frame.line);
      }
      frame_symbols_.push_back(Intern(name, frame.kind));
    }
    leaf_of_.assign(profile.samples.size(), UINT32_MAX);
  }

  uint32_t Leaf(uint32_t sample) {
    if (leaf_of_[sample] != UINT32_MAX) return leaf_of_[sample];
    const Sample& s = profile_.samples[sample];
    uint32_t node = 0;
    auto step = [&](uint32_t symbol) {
      const uint64_t key = (static_cast<uint64_t>(node) << 32) | symbol;
      auto [it, added] = children_.try_emplace(key, static_cast<uint32_t>(t_.node_parent.size()));
      if (added) {
        t_.node_parent.push_back(node);
        t_.node_symbol.push_back(symbol);
      }
      node = it->second;
    };
    for (uint32_t f : s.frames) step(f < frame_symbols_.size() ? frame_symbols_[f] : unknown_);
    // A sample with no frames still cost time; the flame graph keeps it visible so.
    if (s.frames.empty()) step(unknown_);
    return leaf_of_[sample] = node;
  }

  // Renumbers symbols in flame graph order (name, then kind), as ranks.
  void Finish() {
    std::vector<uint32_t> order(symbols_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (symbols_[a].name != symbols_[b].name) return symbols_[a].name < symbols_[b].name;
      return symbols_[a].kind < symbols_[b].kind;
    });
    std::vector<uint32_t> rank(symbols_.size());
    for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
    for (uint32_t& symbol : t_.node_symbol) symbol = rank[symbol];
    t_.symbols.clear();
    for (uint32_t id : order) t_.symbols.push_back(std::move(symbols_[id]));
  }

 private:
  uint32_t Intern(const std::string& raw, FrameKind kind) {
    std::string name = FlameBoxName(raw);
    std::string key = name;
    key += '\0';
    key += static_cast<char>('0' + static_cast<int>(kind));
    auto [it, added] = ids_.try_emplace(std::move(key), static_cast<uint32_t>(symbols_.size()));
    if (added) symbols_.push_back({std::move(name), kind});
    return it->second;
  }

  const Profile& profile_;
  Timeline& t_;
  uint32_t unknown_ = 0;
  std::vector<uint32_t> frame_symbols_;
  std::vector<uint32_t> leaf_of_;
  std::vector<FlameSymbolInfo> symbols_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<uint64_t, uint32_t> children_;
};

std::string ThreadName(const Profile& profile, int64_t tid) {
  for (const ThreadInfo& t : profile.threads) {
    if (t.tid == tid && !t.name.empty()) return t.name + " (" + std::to_string(tid) + ")";
  }
  return tid == 0 ? "no thread recorded" : "thread " + std::to_string(tid);
}


// The samples BuildTimeline draws: of `event`, with a weight, at or after second `first_col`.
bool Drawn(const Profile& profile, const TimedSample& ts, size_t event, int64_t first_col) {
  return ts.event == event && ts.weight > 0 && ts.sample < profile.samples.size() &&
         ts.time_ns >= first_col * kSecond;
}

// The last second with a sample BuildTimeline draws; -1 when none.
int64_t LastSecond(const Profile& profile, size_t event, int64_t first_col) {
  int64_t last = -1;
  for (const TimedSample& ts : profile.timeline) {
    if (Drawn(profile, ts, event, first_col)) last = std::max(last, ts.time_ns / kSecond);
  }
  return last;
}

// `from_ns`: where the selection starts, so that a map of seconds 100-110 of a long profile
// has ten columns, not 110; columns keep their seconds since the start. The caller has
// checked that the columns are at most kMaxColumns.
Timeline BuildTimeline(const Profile& profile, size_t event, uint32_t rows, bool per_thread,
                       bool stacks, int64_t from_ns) {
  Timeline t;
  t.rows = rows;
  t.first_col = std::max<int64_t>(from_ns, 0) / kSecond;
  StackTree tree(profile, &t);
  std::map<int64_t, size_t> map_of;  // tid (0 when one map) -> index into maps
  std::vector<std::unordered_map<uint64_t, Cell>> cells;
  int64_t last = 0;
  for (const TimedSample& ts : profile.timeline) {
    if (!Drawn(profile, ts, event, t.first_col)) continue;
    const int64_t tid = per_thread ? profile.samples[ts.sample].tid : 0;
    auto [it, added] = map_of.try_emplace(tid, t.maps.size());
    if (added) {
      t.maps.push_back({per_thread ? ThreadName(profile, tid) : "all threads", tid, 0, {}});
      cells.emplace_back();
    }
    const int64_t col = ts.time_ns / kSecond;
    const uint32_t row = RowOf(ts.time_ns % kSecond, rows);
    Cell& cell = cells[it->second][static_cast<uint64_t>(col - t.first_col) * rows + row];
    cell.col = col;
    cell.row = row;
    ++cell.count;
    AddSaturating(cell.weight, ts.weight);
    if (stacks) AddSaturating(cell.leaves[tree.Leaf(ts.sample)], ts.weight);
    AddSaturating(t.maps[it->second].weight, ts.weight);
    ++t.samples;
    last = std::max(last, ts.time_ns);
  }
  tree.Finish();
  t.cols = static_cast<uint32_t>(std::max<int64_t>(last / kSecond - t.first_col, 0)) + 1;
  for (size_t m = 0; m < t.maps.size(); ++m) {
    for (auto& [index, cell] : cells[m]) {
      t.max_cell = std::max(t.max_cell, cell.weight);
      t.maps[m].cells.push_back(std::move(cell));
    }
    std::sort(t.maps[m].cells.begin(), t.maps[m].cells.end(), [](const Cell& a, const Cell& b) {
      return a.col != b.col ? a.col < b.col : a.row < b.row;
    });
  }
  // Busiest thread first; ties by tid, so equal profiles give equal pages.
  std::stable_sort(t.maps.begin(), t.maps.end(), [](const HeatMap& a, const HeatMap& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.tid < b.tid;
  });
  return t;
}

// ---------------------------------------------------------------------------------------------
// The heat map as SVG: the same markup stands alone (.svg) and inside the page (.html).

struct Geometry {
  int cell_w = 10, cell_h = 10;
  int left = 64, top = 8;  // the grid's corner: room for the row labels on the left
  int width = 0, height = 0;
};

Geometry MapGeometry(const Timeline& t) {
  Geometry g;
  g.cell_w = std::clamp(1100 / static_cast<int>(t.cols), 3, 40);
  g.cell_h = std::clamp(500 / static_cast<int>(t.rows), 2, 20);
  // At least as wide as the axis label under the grid ("seconds since the start", ~140 px
  // at its font size): a profile of one second has a grid of one 40 px column.
  g.width = g.left + std::max(g.cell_w * static_cast<int>(t.cols), 150) + 16;
  g.height = g.top + g.cell_h * static_cast<int>(t.rows) + 34;
  return g;
}

// FlameScope's scale: pale yellow for the least, through orange, to dark red for the most.
std::string HeatFill(int64_t weight, int64_t max) {
  static constexpr double kStops[][3] = {
      {255, 250, 205}, {253, 204, 92}, {240, 110, 35}, {200, 30, 20}, {110, 0, 0}};
  constexpr int kLast = 4;
  const double f = max > 0 ? std::clamp(static_cast<double>(weight) / max, 0.0, 1.0) : 0;
  const double at = f * kLast;
  const int i = std::min(static_cast<int>(at), kLast - 1);
  const double u = at - i;
  char buffer[32];
  std::snprintf(
      buffer, sizeof buffer, "rgb(%d,%d,%d)",
      static_cast<int>(std::lround(kStops[i][0] + (kStops[i + 1][0] - kStops[i][0]) * u)),
      static_cast<int>(std::lround(kStops[i][1] + (kStops[i + 1][1] - kStops[i][1]) * u)),
      static_cast<int>(std::lround(kStops[i][2] + (kStops[i + 1][2] - kStops[i][2]) * u)));
  return buffer;
}

std::string Milliseconds(int64_t ns) {
  char buffer[32];
  if (ns % 1000000 == 0) {
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(ns / 1000000));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(ns) / 1e6);
  }
  return buffer;
}

// One map: background, cells (each with its tooltip), row and column labels. `x0`/`y0` place
// it in a larger document.
void WriteMap(const Timeline& t, const HeatMap& map, const Geometry& g, const std::string& unit,
              int x0, int y0, std::string& out) {
  const int gx = x0 + g.left, gy = y0 + g.top;
  const int gw = g.cell_w * static_cast<int>(t.cols), gh = g.cell_h * static_cast<int>(t.rows);
  out += "<rect class=\"grid\" x=\"" + std::to_string(gx) + "\" y=\"" + std::to_string(gy) +
         "\" width=\"" + std::to_string(gw) + "\" height=\"" + std::to_string(gh) + "\"/>\n";
  out += "<g class=\"cells\">\n";
  for (const Cell& cell : map.cells) {
    // A cell's end in the last second an int64_t of nanoseconds reaches lies past it.
    int64_t start = 0, end = 0;
    if (__builtin_add_overflow(cell.col * kSecond, RowStart(cell.row, t.rows), &start)) {
      start = INT64_MAX;
    }
    if (__builtin_add_overflow(cell.col * kSecond, RowStart(cell.row + 1, t.rows), &end)) {
      end = INT64_MAX;
    }
    out += "<rect data-c=\"" + std::to_string(cell.col) + "\" data-r=\"" +
           std::to_string(cell.row) + "\" data-w=\"" + std::to_string(cell.weight) + "\" x=\"" +
           std::to_string(gx + static_cast<int>(cell.col - t.first_col) * g.cell_w) + "\" y=\"" +
           std::to_string(gy + static_cast<int>(cell.row) * g.cell_h) + "\" width=\"" +
           std::to_string(g.cell_w) + "\" height=\"" + std::to_string(g.cell_h) + "\" fill=\"" +
           HeatFill(cell.weight, t.max_cell) + "\"><title>" + FormatSeconds(start) + "-" +
           FormatSeconds(end) + " s: " + GroupedNumber(cell.count) +
           (cell.count == 1 ? " sample, " : " samples, ") +
           GroupedNumber(static_cast<uint64_t>(cell.weight)) + " " + FlameEscapeXml(unit) +
           "</title></rect>\n";
  }
  out += "</g>\n";
  // Row labels: the offset into the second, often enough to read, never crowded.
  const int every = std::max(1, (14 + g.cell_h - 1) / g.cell_h);
  for (uint32_t r = 0; r < t.rows; r += static_cast<uint32_t>(every)) {
    out += "<text class=\"rl\" x=\"" + std::to_string(gx - 4) + "\" y=\"" +
           std::to_string(gy + static_cast<int>(r) * g.cell_h + std::min(g.cell_h, 10)) + "\">" +
           Milliseconds(RowStart(r, t.rows)) + " ms</text>\n";
  }
  const int step = std::max(1, (36 + g.cell_w - 1) / g.cell_w);
  for (uint32_t c = 0; c < t.cols; c += static_cast<uint32_t>(step)) {
    out += "<text class=\"cl\" x=\"" + std::to_string(gx + static_cast<int>(c) * g.cell_w) +
           "\" y=\"" + std::to_string(gy + gh + 14) + "\">" + std::to_string(c + t.first_col) +
           "</text>\n";
  }
  out += "<text class=\"axis\" x=\"" + std::to_string(gx) + "\" y=\"" +
         std::to_string(gy + gh + 28) + "\">seconds since the start</text>\n";
}

// The colour scale: a bar from nothing to the hottest cell, with both ends labelled.
void WriteLegend(const Timeline& t, const std::string& unit, int x, int y, std::string& out) {
  constexpr int kSteps = 20, kStepWidth = 10;
  out += "<g class=\"legend\">\n<text x=\"" + std::to_string(x) + "\" y=\"" +
         std::to_string(y + 10) + "\">weight per cell:</text>\n";
  const int bar = x + 110;
  for (int i = 0; i < kSteps; ++i) {
    const int64_t w = t.max_cell * (i + 1) / kSteps;
    out += "<rect x=\"" + std::to_string(bar + i * kStepWidth) + "\" y=\"" + std::to_string(y) +
           "\" width=\"" + std::to_string(kStepWidth) + "\" height=\"12\" fill=\"" +
           HeatFill(w, t.max_cell) + "\"/>\n";
  }
  out += "<text x=\"" + std::to_string(bar) + "\" y=\"" + std::to_string(y + 26) +
         "\">&gt;0</text>\n<text class=\"end\" x=\"" + std::to_string(bar + kSteps * kStepWidth) +
         "\" y=\"" + std::to_string(y + 26) + "\">" +
         GroupedNumber(static_cast<uint64_t>(t.max_cell)) + " " + FlameEscapeXml(unit) +
         "</text>\n</g>\n";
}

constexpr const char* kMapStyle =
    "text { font-family: Verdana, sans-serif; font-size: 11px; fill: #333; }\n"
    ".grid { fill: #f4f4f4; }\n"
    ".rl { text-anchor: end; }\n"
    ".end { text-anchor: end; }\n"
    ".axis { fill: #777; }\n"
    ".cells rect:hover { stroke: black; stroke-width: 1; }\n"
    ".title { font-size: 16px; }\n";

std::string HeatMapSvg(const Timeline& t, const std::string& title, const std::string& subtitle,
                       const std::string& unit) {
  const Geometry g = MapGeometry(t);
  const int header = 76, heading = 20;
  const int width = std::max(g.width, 420);
  const int height = header + static_cast<int>(t.maps.size()) * (heading + g.height);
  std::string out =
      "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"" +
      std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
      std::to_string(width) + " " + std::to_string(height) +
      "\" xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<!-- Sub-second heat map written by inprof: columns are seconds, rows parts of a "
      "second, colour the weight of the samples taken in a cell. -->\n<style type=\"text/css\">\n";
  out += kMapStyle;
  out += "</style>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text class=\"title\" x=\"8\" y=\"20\">" + FlameEscapeXml(title) + "</text>\n";
  out += "<text x=\"8\" y=\"38\">" + FlameEscapeXml(subtitle) + "</text>\n";
  WriteLegend(t, unit, 8, 48, out);
  int y = header;
  for (const HeatMap& map : t.maps) {
    out +=
        "<text x=\"8\" y=\"" + std::to_string(y + 14) + "\">" + FlameEscapeXml(map.name) + "</text>\n";
    WriteMap(t, map, g, unit, 0, y + heading, out);
    y += heading + g.height;
  }
  out += "</svg>\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// The page: the maps inline, the data for the range flame graphs, the script.

// JSON for inside a <script> element: '<' never appears raw, so no "</script>" can end it.
std::string ScriptSafe(std::string json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// The exporters' flame graph document up to its first box (XML prolog, <svg> with its size,
// gradient, style sheet, script): the page writes range graphs with it, so they look and
// behave as `inprof flame` graphs. Taken from the writer's own output for an empty profile.
std::string FlameHead() {
  Profile empty;
  empty.events.push_back({"samples", "count", 1, 0, 0});
  std::string svg;
  if (!WriteFlameSvg(empty, FlameOptions{}, &svg).ok()) return {};
  const size_t end = svg.find("<rect x=\"0\" y=\"0\"");
  return end == std::string::npos ? std::string() : svg.substr(0, end);
}

std::string PageData(const Timeline& t, const TimelineOptions& o, const Profile& profile,
                     size_t event, const std::string& subtitle_prefix) {
  std::string out = "{\"rows\":" + std::to_string(t.rows) +
                    ",\"col0\":" + std::to_string(t.first_col) +
                    ",\"cols\":" + std::to_string(t.cols);
  out += ",\"unit\":" + JsonString(FlameCleanText(CellUnit(profile.events[event])));
  out += ",\"subtitle\":" + JsonString(FlameCleanText(subtitle_prefix));
  // The command the page prints: inprof flame [-e EVENT] RANGE [FILTER] PROFILE -o OUT.
  std::string head = "inprof flame";
  if (!o.event.empty()) head += " -e " + ShellQuote(o.event);
  out += ",\"command\":" + JsonString(FlameCleanText(head));
  out += ",\"profile\":" + JsonString(FlameCleanText(ShellQuote(o.profile)));
  out += ",\"flame_head\":" + JsonString(FlameHead());
  out += ",\"symbols\":[";
  for (size_t i = 0; i < t.symbols.size(); ++i) {
    out += (i ? ",[" : "[") + JsonString(t.symbols[i].name) + "," +
           std::to_string(static_cast<int>(t.symbols[i].kind)) + ",\"" +
           FlameBoxFill(t.symbols[i].name, t.symbols[i].kind) + "\"]";
  }
  out += "],\"nodes\":[";
  for (size_t i = 0; i < t.node_parent.size(); ++i) {
    out +=
        (i ? "," : "") + std::to_string(t.node_parent[i]) + "," + std::to_string(t.node_symbol[i]);
  }
  out += "],\"maps\":[";
  for (size_t m = 0; m < t.maps.size(); ++m) {
    const HeatMap& map = t.maps[m];
    // What else the map's range graph is of: the timeline's own threads and labels, or the
    // map's thread; spelled as options and as words.
    ProfileFilter rest = o.filter;
    rest.from_ns.reset();
    rest.to_ns.reset();
    if (o.per_thread) rest.threads = {std::to_string(map.tid)};
    out += std::string(m ? "," : "") + "{\"name\":" + JsonString(FlameCleanText(map.name)) +
           ",\"args\":" + JsonString(FlameCleanText(FilterArguments(rest))) +
           ",\"summary\":" + JsonString(FlameCleanText(FilterSummary(rest))) + ",\"cells\":[";
    for (size_t c = 0; c < map.cells.size(); ++c) {
      const Cell& cell = map.cells[c];
      out += (c ? ",[" : "[") + std::to_string(cell.col) + "," + std::to_string(cell.row) + "," +
             std::to_string(cell.count) + "," + std::to_string(cell.weight) + ",[";
      bool first = true;
      for (const auto& [leaf, weight] : cell.leaves) {
        out += (first ? "" : ",") + std::to_string(leaf) + "," + std::to_string(weight);
        first = false;
      }
      out += "]]";
    }
    out += "]}";
  }
  out += "]}";
  return ScriptSafe(std::move(out));
}

std::string HtmlEscape(const std::string& text) { return FlameEscapeXml(text); }

std::string Page(const Timeline& t, const TimelineOptions& o, const Profile& profile, size_t event,
                 const std::string& title, const std::string& subtitle) {
  const std::string unit = CellUnit(profile.events[event]);
  const Geometry g = MapGeometry(t);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + HtmlEscape(title) + "</title>\n<style>\n\n";
  out += kTimelinePageStyle;
  out += kMapStyle;
  out += "</style>\n</head>\n<body>\n<h1>" + HtmlEscape(title) + "</h1>\n";
  out += "<p class=\"sub\">" + HtmlEscape(subtitle) + "</p>\n";
  out += "<p class=\"help\">Each column is one second, each row " +
         Milliseconds(RowStart(1, t.rows)) +
         " ms of it; a cell's colour is the weight of the samples taken in it. Click a start "
         "cell and an end cell, or drag from one to the other, to see the flame graph of that "
         "range. Escape clears the selection.</p>\n";
  out += "<svg class=\"legend\" width=\"420\" height=\"34\">";
  WriteLegend(t, unit, 0, 2, out);
  out += "</svg>\n<div id=\"maps\">\n";
  for (size_t m = 0; m < t.maps.size(); ++m) {
    out += "<h2>" + HtmlEscape(t.maps[m].name) + "</h2>\n";
    out += "<svg class=\"map\" data-map=\"" + std::to_string(m) + "\" data-x0=\"" +
           std::to_string(g.left) + "\" data-y0=\"" + std::to_string(g.top) + "\" data-cw=\"" +
           std::to_string(g.cell_w) + "\" data-ch=\"" + std::to_string(g.cell_h) + "\" width=\"" +
           std::to_string(g.width) + "\" height=\"" + std::to_string(g.height) +
           "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
    WriteMap(t, t.maps[m], g, unit, 0, 0, out);
    out += "<g class=\"sel\"></g>\n</svg>\n";
  }
  out += "</div>\n";
  out += kTimelinePageBody;
  out += "<script type=\"application/json\" id=\"data\">";
  out += PageData(t, o, profile, event, FlameSubtitle(profile, [&] {
                    FlameOptions f;
                    f.event = event;
                    return f;
                  }()));
  out += "</script>\n<script>\n";
  out += kTimelinePageScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

// ---------------------------------------------------------------------------------------------

int Usage(const std::string& message) { return UsageError("timeline", message); }

StatusOr<size_t> FindEventIndex(const Profile& p, const std::string& name) {
  Annotations events_only;
  events_only.events = p.events;
  return FindEvent(events_only, name);
}

}  // namespace

int RunTimeline(const std::vector<std::string>& args) {
  TimelineOptions o;
  double bucket_ms = 0;
  std::vector<OptionSpec> specs = {
      Text({"-o", "--output"}, "a file name ending in .html or .svg", &o.output),
      Count({"--rows"}, "a number of rows from 1 to 1000", &o.rows, 1, 1000),
      {{"--bucket"},
       "a number of milliseconds from 1 to 1000",
       [&](const std::string& text) {
         return ParseDecimal(text, &bucket_ms) && bucket_ms >= 1 && bucket_ms <= 1000;
       }},
      Flag({"--per-thread"}, &o.per_thread),
      Text({"-e", "--event"}, "an event name", &o.event),
      Text({"--title"}, "a text", &o.title),
      {{"--no-progress"}, nullptr, [&](const std::string&) { return !(o.progress = false); }},
  };
  for (OptionSpec& spec : FilterOptionSpecs(&o.filter)) specs.push_back(std::move(spec));
  std::vector<std::string> positional;
  bool help = false;
  if (Status s = ParseOptions("timeline", args, 1, specs, &positional, &help); !s.ok()) {
    return Usage(s.message());
  }
  if (help) {
    std::cout << kTimelineHelp;
    return 0;
  }
  if (positional.empty()) return Usage("timeline needs a PROFILE file");
  if (positional.size() > 1) {
    return Usage("timeline takes one PROFILE, got '" + positional[1] + "' too");
  }
  o.profile = positional[0];
  if (o.output.empty()) return Usage("timeline needs -o OUT.html (the page) or -o OUT.svg");
  const bool html = o.output.ends_with(".html") || o.output.ends_with(".htm");
  if (!html && !o.output.ends_with(".svg")) {
    return Usage("timeline writes OUT.html or OUT.svg, not '" + o.output + "'");
  }
  if (bucket_ms > 0)
    o.rows = static_cast<size_t>(std::clamp(std::lround(1000 / bucket_ms), 1L, 1000L));
  if (const std::string problem = CheckFilter(o.filter); !problem.empty()) return Usage(problem);
  o.progress = o.progress && ProgressAllowed();

  Input input;
  if (Status s = LoadInput(o.profile, o.progress, &input, /*annotate=*/false, o.filter); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return kExitBadInput;
  }
  if (!input.has_stacks || input.profile.timeline.empty()) {
    std::cerr << "inprof: " << o.profile
              << ": a timeline needs the time of each sample, but this is "
              << InputKindName(input.kind)
              << " (no sample times); perf script output (perf script > perf.script) and "
                 "*.speedscope.json profiles have them\n";
    return kExitBadInput;
  }
  const Profile& profile = input.profile;
  StatusOr<size_t> found = FindEventIndex(profile, o.event);
  if (!found.ok()) {
    std::cerr << "inprof: " << o.profile << ": " << found.status().message() << '\n';
    return kExitBadInput;
  }
  const size_t event = *found;
  const int64_t first_col = std::max<int64_t>(o.filter.from_ns.value_or(0), 0) / kSecond;
  if (const int64_t last = LastSecond(profile, event, first_col); last - first_col >= kMaxColumns) {
    std::cerr << "inprof: " << o.profile << ": the samples span " << last - first_col + 1
              << " seconds (second " << first_col << " to second " << last
              << " since the start); a timeline draws one column per second, at most "
              << kMaxColumns << ": choose a part with --from and --to (seconds since the start)\n";
    return kExitBadInput;
  }
  const Timeline t = BuildTimeline(profile, event, static_cast<uint32_t>(o.rows), o.per_thread,
                                   html, o.filter.from_ns.value_or(0));
  if (t.maps.empty()) {
    std::cerr << "inprof: " << o.profile << ": no sample of event " << profile.events[event].name
              << " has a weight\n";
    return kExitBadInput;
  }
  const std::string& program = profile.meta.program;
  const std::string title =
      !o.title.empty()
          ? o.title
          : "Timeline of " + (program.empty() ? o.profile : program.substr(program.rfind('/') + 1));
  std::string subtitle = profile.events[event].name + ": " + GroupedNumber(t.samples) +
                         " samples over " + std::to_string(t.cols) + " s";
  if (!o.filter.empty()) subtitle += " (" + FilterSummary(o.filter) + ")";
  // The runtime's timeline has a bound (docs/timeline.md): weight past it counts in every
  // aggregate but has no time, so no cell shows it. Say how much that is.
  int64_t total = 0, timed = 0;
  for (const Sample& sample : profile.samples)
    AddSaturating(total, std::max<int64_t>(WeightAt(sample.weights, event), 0));
  for (const HeatMap& map : t.maps) AddSaturating(timed, map.weight);
  if (timed < total) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f",
                  100.0 * static_cast<double>(total - timed) / static_cast<double>(total));
    subtitle += "; " + std::string(share) + " % of the weight has no time and is not drawn";
  }
  const std::string document = html ? Page(t, o, profile, event, title, subtitle)
                                    : HeatMapSvg(t, title, subtitle, CellUnit(profile.events[event]));
  if (Status s = WriteFileAtomically(o.output, document); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return kExitBadInput;
  }
  return 0;
}

}  // namespace inprof::viewer
