// `inprof top`: the hottest source lines and the hottest functions of one event, or
// (--by-label KEY) the event's total per value of a label.
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "inprof/annotations.h"
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
    out << "],\n\"total\":" << total << ",\"unit\":" << JsonString(WeightUnit(info))
        << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"") << "}\n";
    return 0;
  }

  const char* rank = o.inclusive ? "inclusive" : "self";
  out << EventHeading(info, total) << "; ranked by " << rank;
  // Hidden frames change what "self" means: say so where the numbers are read.
  if (!o.filter.hide.empty()) {
    ProfileFilter hidden;
    hidden.hide = o.filter.hide;
    out << "; " << Printable(FilterSummary(hidden)) << " (their weight is their callers')";
  }
  out << "\n\nHottest lines\n";
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
    out << "  (no source lines: "
        << (o.no_lines_hint.empty() ? NoLinesHint(InputKind::kFolded) : o.no_lines_hint.c_str())
        << ")\n";
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

namespace {

struct LabelRow {
  std::string value;
  bool unset = false;  // the "(no KEY)" row
  int64_t weight = 0;
};

// Totals per value of `key` from the samples' label sets; false when no sample set has the key
// (`keys` then lists those there are).
bool TotalsFromStacks(const Profile& p, const std::string& key, size_t event,
                      std::map<std::string, int64_t>* by_value, int64_t* total,
                      std::set<std::string>* keys) {
  bool known = false;
  for (const auto& set : p.label_sets) {
    for (const Label& label : set) {
      keys->insert(label.key);
      known |= label.key == key;
    }
  }
  for (const Sample& s : p.samples) {
    const int64_t w = WeightAt(s.weights, event);
    if (w <= 0) continue;
    *total += w;
    if (s.labels == 0 || s.labels > p.label_sets.size()) continue;
    for (const Label& label : p.label_sets[s.labels - 1]) {
      if (label.key == key) (*by_value)[label.value] += w;
    }
  }
  return known;
}

// The same from annotation JSON's label totals: the samples without the key are what the
// values leave of the event's total.
bool TotalsFromAnnotations(const Annotations& a, const std::string& key, size_t event,
                           std::map<std::string, int64_t>* by_value, int64_t* total,
                           std::set<std::string>* keys) {
  bool known = false;
  for (const LabelTotal& label : a.labels) {
    keys->insert(label.key);
    if (label.key != key) continue;
    known = true;
    (*by_value)[label.value] += WeightAt(label.weight, event);
  }
  *total = EventTotal(a, event);
  return known;
}

std::string Share(int64_t weight, int64_t total) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f",
                total > 0 ? 100.0 * static_cast<double>(weight) / static_cast<double>(total) : 0.0);
  return buffer;
}

}  // namespace

int RunTopByLabel(const TopOptions& o, const Annotations& a, const Profile* stacks, size_t event,
                  std::ostream& out, std::ostream& err) {
  const std::string& key = o.by_label;
  std::map<std::string, int64_t> by_value;
  std::set<std::string> keys;
  int64_t total = 0;
  const bool known = stacks ? TotalsFromStacks(*stacks, key, event, &by_value, &total, &keys)
                            : TotalsFromAnnotations(a, key, event, &by_value, &total, &keys);
  if (!known) {
    err << "inprof: " << o.profile << ": ";
    if (keys.empty()) {
      err << "the profile has no labels (a program sets them with inprof_label_set; "
             "*.speedscope.json and annotation JSON profiles inprof writes keep them)\n";
    } else {
      err << "no label '" << Printable(key) << "' in the profile (its label keys:";
      for (const std::string& k : keys) err << ' ' << Printable(k);
      err << ")\n";
    }
    return kExitBadInput;
  }
  std::vector<LabelRow> rows;
  int64_t labelled = 0;
  for (const auto& [value, weight] : by_value) {
    rows.push_back({value, false, weight});
    labelled += weight;
  }
  if (total > labelled) rows.push_back({"(no " + key + ")", true, total - labelled});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const LabelRow& x, const LabelRow& y) { return x.weight > y.weight; });
  const size_t shown = std::min(rows.size(), o.limit);
  int64_t omitted = 0;
  for (size_t i = shown; i < rows.size(); ++i) omitted += rows[i].weight;
  const EventInfo& info = a.events[event];

  if (o.json) {
    out << "{\"event\":" << JsonString(info.name) << ",\"key\":" << JsonString(key)
        << ",\"omitted\":" << rows.size() - shown << ",\"total\":" << total
        << ",\"unit\":" << JsonString(WeightUnit(info)) << ",\n\"values\":[";
    for (size_t i = 0; i < shown; ++i) {
      out << (i ? ",\n" : "\n") << "{\"share\":" << Share(rows[i].weight, total)
          << ",\"value\":" << (rows[i].unset ? "null" : JsonString(rows[i].value))
          << ",\"weight\":" << rows[i].weight << '}';
    }
    out << "]}\n";
    return 0;
  }
  out << EventHeading(info, total) << "; by label " << Printable(key)
      << "\n\n   share          weight  " << Printable(key) << '\n';
  char line[96];
  for (size_t i = 0; i < shown; ++i) {
    std::snprintf(line, sizeof line, "%7s%% %15lld  ", Share(rows[i].weight, total).c_str(),
                  static_cast<long long>(rows[i].weight));
    out << line << Printable(rows[i].value) << '\n';
  }
  if (shown < rows.size()) {
    out << "  (" << rows.size() - shown << " more value" << (rows.size() - shown == 1 ? "" : "s")
        << ": " << Share(omitted, total) << "%; -n shows more)\n";
  }
  return 0;
}

}  // namespace inprof::viewer
