// `inprof top`: the hottest source lines and the hottest functions of one event.
#include <ostream>
#include <string>

#include "names.h"
#include "viewer.h"

namespace inprof::viewer {

int RunTop(const TopOptions& o, const Annotations& a, size_t event, std::ostream& out) {
  const int64_t total = EventTotal(a, event);
  const auto lines = HottestLines(a, event, o.inclusive, o.limit);
  const auto functions = HottestFunctions(a, event, o.inclusive, o.limit);
  const EventInfo& info = a.events[event];

  if (o.json) {
    out << "{\"event\":" << JsonString(info.name) << ",\n\"functions\":[";
    for (size_t i = 0; i < functions.size(); ++i) {
      const FunctionStats& fn = *functions[i];
      out << (i ? ",\n" : "\n") << "{\"file\":" << (fn.file.empty() ? "null" : JsonString(fn.file))
          << ",\"first_line\":" << fn.first_line
          << ",\"inclusive\":" << JsonWeight(WeightAt(fn.inclusive, event), total, o.absolute)
          << ",\"last_line\":" << fn.last_line << ",\"name\":" << JsonString(fn.name)
          << ",\"self\":" << JsonWeight(WeightAt(fn.self, event), total, o.absolute) << '}';
    }
    out << "],\n\"lines\":[";
    for (size_t i = 0; i < lines.size(); ++i) {
      const FileStats& file = a.files[lines[i].first];
      const LineStats& line = file.lines[lines[i].second];
      out << (i ? ",\n" : "\n") << "{\"file\":" << JsonString(file.path)
          << ",\"function\":" << JsonString(line.function)
          << ",\"global_heat\":" << LevelAt(line.global_heat, event)
          << ",\"inclusive\":" << JsonWeight(WeightAt(line.inclusive, event), total, o.absolute)
          << ",\"line\":" << line.line << ",\"local_heat\":" << LevelAt(line.local_heat, event)
          << ",\"self\":" << JsonWeight(WeightAt(line.self, event), total, o.absolute) << '}';
    }
    out << "],\n\"total\":" << total << ",\"unit\":" << JsonString(info.unit)
        << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"") << "}\n";
    return 0;
  }

  const char* rank = o.inclusive ? "inclusive" : "self";
  out << "event " << info.name << " (" << info.unit << "), total " << total << "; ranked by "
      << rank << "\n\nHottest lines\n";
  const int width = o.absolute ? 10 : 8;
  auto header = [&](const char* what) {
    out << std::string(static_cast<size_t>(width - 4), ' ') << "self "
        << std::string(static_cast<size_t>(width - 4), ' ') << "incl  " << what << '\n';
  };
  header("location");
  for (const auto& [f, l] : lines) {
    const FileStats& file = a.files[f];
    const LineStats& line = file.lines[l];
    const int heat = LevelAt(line.global_heat, event);
    out << HeatColor(heat, o.color)
        << FormatWeight(WeightAt(line.self, event), total, o.absolute, width) << ' '
        << FormatWeight(WeightAt(line.inclusive, event), total, o.absolute, width) << "  "
        << Printable(file.path) << ':' << line.line << "  "
        << Printable(DisplayName(line.function, o.full_names)) << ResetColor(o.color) << '\n';
  }
  if (lines.empty())
    out << "  (no source lines: folded stacks need 'function (file:line)' frames)\n";
  out << "\nHottest functions\n";
  header("function");
  for (const FunctionStats* fn : functions) {
    out << FormatWeight(WeightAt(fn->self, event), total, o.absolute, width) << ' '
        << FormatWeight(WeightAt(fn->inclusive, event), total, o.absolute, width) << "  "
        << Printable(DisplayName(fn->name, o.full_names));
    if (!fn->file.empty()) {
      out << "  " << Printable(fn->file) << ':' << fn->first_line;
      if (fn->last_line != fn->first_line) out << '-' << fn->last_line;
    }
    out << '\n';
  }
  return 0;
}

}  // namespace inprof::viewer
