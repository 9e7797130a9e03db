// `inprof heat`: perf-heatmap `stat`-style listing. Per function, one row per sampled line:
//   "  line %4d: <self> <inclusive> L=<local> G=<global>"
// --heat and --threshold recompute the levels first (main.cpp).
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/annotations.h"
#include "viewer.h"

namespace inprof::viewer {

int RunHeat(const HeatOptions& o, Annotations& a, size_t event, std::ostream& out) {
  const int64_t total = EventTotal(a, event);
  if (o.json) {
    out << "{\"event\":" << JsonString(a.events[event].name) << ",\n\"functions\":[";
  }
  bool first_function = true;
  for (const FileStats& file : a.files) {
    // The file's sampled lines by function, in line order, found once: matching every line
    // against every function cost functions x lines, minutes for a file of 200,000
    // one-line functions.
    std::unordered_map<std::string_view, std::vector<const LineStats*>> by_function;
    for (const LineStats& line : file.lines) {
      if (WeightAt(line.inclusive, event) > 0) by_function[line.function].push_back(&line);
    }
    for (const FunctionStats& fn : file.functions) {
      const auto found = by_function.find(fn.name);
      if (found == by_function.end()) continue;
      const std::vector<const LineStats*>& lines = found->second;
      if (o.json) {
        out << (first_function ? "\n" : ",\n") << "{\"file\":" << JsonString(file.path)
            << ",\"lines\":[";
        for (size_t i = 0; i < lines.size(); ++i) {
          const LineStats& line = *lines[i];
          out << (i ? "," : "") << "{\"global_heat\":" << LevelAt(line.global_heat, event)
              << ",\"inclusive\":" << JsonWeight(WeightAt(line.inclusive, event), total, o.absolute)
              << ",\"line\":" << line.line
              << ",\"local_heat\":" << LevelAt(line.local_heat, event)
              << ",\"self\":" << JsonWeight(WeightAt(line.self, event), total, o.absolute) << '}';
        }
        out << "],\"name\":" << JsonString(fn.name) << '}';
      } else {
        out << Printable(fn.name) << " (" << Printable(file.path) << ")\n";
        for (const LineStats* line : lines) {
          char number[32];
          std::snprintf(number, sizeof number, "  line %4u: ", line->line);
          const int level = LevelAt(line->global_heat, event);
          out << HeatColor(level, o.color) << number
              << FormatWeight(WeightAt(line->self, event), total, o.absolute, 0) << ' '
              << FormatWeight(WeightAt(line->inclusive, event), total, o.absolute, 0)
              << " L=" << LevelAt(line->local_heat, event) << " G=" << level
              << ResetColor(o.color) << '\n';
        }
      }
      first_function = false;
    }
  }
  if (!o.json && first_function) {
    out << "no sampled source lines for event " << a.events[event].name << " ("
        << (o.no_lines_hint.empty() ? NoLinesHint(InputKind::kFolded) : o.no_lines_hint.c_str())
        << ")\n";
  }
  if (o.json) {
    out << "],\n\"method\":\"" << HeatMethodName(a.heat_method) << '"';
    if (a.heat_method == HeatMethod::kPerfHeatmap) out << ",\"threshold\":" << a.heat_threshold;
    out << ",\"total\":" << total
        << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"") << "}\n";
  }
  return 0;
}

}  // namespace inprof::viewer
