// `inprof annotate`: source files with a gutter of self %, inclusive % and heat level.
// By default only the hot regions (lines with a global heat level or any self weight, plus
// context) are shown; --all shows whole files, --function the line ranges of matching
// functions. Without a file named, the files with the most self weight are shown, each with
// its hottest region first: that is where a reader's eye should land.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "viewer.h"

namespace inprof::viewer {
namespace {

bool ReadSourceLines(const std::string& path, std::vector<std::string>* lines) {
  std::ifstream in(path);
  if (!in) return false;
  for (std::string line; std::getline(in, line);) lines->push_back(std::move(line));
  return true;
}

// Tabs to spaces (stops every 8 columns): the terminal would expand them from the gutter.
std::string ExpandTabs(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\t') {
      out.append(8 - out.size() % 8, ' ');
    } else {
      out += c;
    }
  }
  return out;
}

// The profile's files that `source` names: the exact path, or paths ending in "/source".
std::vector<uint32_t> MatchFiles(const Annotations& a, const std::string& source) {
  std::vector<uint32_t> found;
  for (uint32_t f = 0; f < a.files.size(); ++f) {
    if (a.files[f].path == source) return {f};
  }
  const std::string tail = "/" + (source.starts_with("./") ? source.substr(2) : source);
  for (uint32_t f = 0; f < a.files.size(); ++f) {
    if (a.files[f].path.ends_with(tail)) found.push_back(f);
  }
  return found;
}

// Inclusive [first, last] ranges, merged.
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

Ranges Merge(Ranges ranges) {
  std::sort(ranges.begin(), ranges.end());
  Ranges merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::pair<uint32_t, uint32_t> Around(uint32_t first, uint32_t last, uint32_t context) {
  return {first > context ? first - context : 1, last + context};
}

// Files by self weight (the time spent in their lines), then inclusive, then path.
std::vector<uint32_t> FilesBySelfWeight(const Annotations& a, size_t event) {
  struct Weight {
    int64_t self = 0, inclusive = 0;
  };
  std::vector<Weight> weight(a.files.size());
  std::vector<uint32_t> order;
  for (uint32_t f = 0; f < a.files.size(); ++f) {
    for (const LineStats& line : a.files[f].lines) {
      weight[f].self += WeightAt(line.self, event);
      weight[f].inclusive = std::max(weight[f].inclusive, WeightAt(line.inclusive, event));
    }
    if (weight[f].self > 0 || weight[f].inclusive > 0) order.push_back(f);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    if (weight[x].self != weight[y].self) return weight[x].self > weight[y].self;
    if (weight[x].inclusive != weight[y].inclusive) return weight[x].inclusive > weight[y].inclusive;
    return a.files[x].path < a.files[y].path;
  });
  return order;
}

// Regions ordered by the self weight of their hottest line, then their heat, then position.
void SortHottestFirst(Ranges& ranges, const FileStats& file, size_t event) {
  struct Key {
    int64_t self = 0;
    int heat = 0;
  };
  auto key = [&](const std::pair<uint32_t, uint32_t>& r) {
    Key k;
    for (const LineStats& line : file.lines) {
      if (line.line < r.first || line.line > r.second) continue;
      k.self = std::max(k.self, WeightAt(line.self, event));
      k.heat = std::max(k.heat, LevelAt(line.global_heat, event));
    }
    return k;
  };
  std::vector<std::pair<Key, std::pair<uint32_t, uint32_t>>> keyed;
  for (const auto& r : ranges) keyed.emplace_back(key(r), r);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) {
    if (x.first.self != y.first.self) return x.first.self > y.first.self;
    return x.first.heat > y.first.heat;
  });
  for (size_t i = 0; i < ranges.size(); ++i) ranges[i] = keyed[i].second;
}

}  // namespace

int RunAnnotate(const AnnotateOptions& o, const Annotations& a, size_t event, std::ostream& out,
                std::ostream& err) {
  const int64_t total = EventTotal(a, event);
  int status = 0;

  // Which files, in which order.
  std::vector<uint32_t> files;
  if (!o.sources.empty()) {
    for (const std::string& source : o.sources) {
      const auto found = MatchFiles(a, source);
      if (found.empty()) {
        err << "inprof: " << source << ": no samples in this file (or not in the profile)\n";
        status = 1;
      }
      files.insert(files.end(), found.begin(), found.end());
    }
  } else if (!o.function.empty()) {
    for (uint32_t f = 0; f < a.files.size(); ++f) {
      for (const FunctionStats& fn : a.files[f].functions) {
        if (fn.name.find(o.function) != std::string::npos) {
          files.push_back(f);
          break;
        }
      }
    }
    if (files.empty()) {
      err << "inprof: no function matching '" << o.function << "' has source lines\n";
      return 1;
    }
  } else {
    files = FilesBySelfWeight(a, event);
    files.resize(std::min(files.size(), o.limit));
  }
  {
    std::set<uint32_t> seen;
    std::vector<uint32_t> unique;
    for (uint32_t f : files) {
      if (seen.insert(f).second) unique.push_back(f);
    }
    files.swap(unique);
  }

  if (o.json) out << "{\"event\":" << JsonString(a.events[event].name) << ",\n\"files\":[";
  bool first_file = true;
  for (uint32_t f : files) {
    const FileStats& file = a.files[f];
    std::map<uint32_t, const LineStats*> by_line;
    for (const LineStats& line : file.lines) by_line[line.line] = &line;
    std::vector<std::string> text;
    const bool readable = ReadSourceLines(file.path, &text);
    if (!readable) {
      err << "inprof: cannot read " << file.path << ": " << std::strerror(errno)
          << " (showing profiled lines only; --map OLD=NEW points at moved sources)\n";
    }
    const uint32_t last_line =
        std::max<uint32_t>(static_cast<uint32_t>(text.size()),
                           file.lines.empty() ? 0 : file.lines.back().line);

    Ranges ranges;
    if (o.all) {
      ranges.push_back({1, last_line});
    } else if (!o.function.empty()) {
      for (const FunctionStats& fn : file.functions) {
        if (fn.name.find(o.function) != std::string::npos) {
          ranges.push_back(Around(fn.first_line, fn.last_line, o.context));
        }
      }
    } else {
      // Hot lines, and every line holding self weight even when it is below the heat floor:
      // where the time of a named file went is never hidden.
      for (const LineStats& line : file.lines) {
        if (LevelAt(line.global_heat, event) > 0 || WeightAt(line.self, event) > 0) {
          ranges.push_back(Around(line.line, line.line, o.context));
        }
      }
      if (ranges.empty()) {  // nothing globally hot here: show what was sampled
        for (const LineStats& line : file.lines) {
          if (WeightAt(line.inclusive, event) > 0) {
            ranges.push_back(Around(line.line, line.line, o.context));
          }
        }
      }
    }
    ranges = Merge(std::move(ranges));
    const bool hottest_first = o.sources.empty() && o.function.empty() && !o.all && !o.json;
    if (hottest_first) SortHottestFirst(ranges, file, event);

    if (o.json) {
      out << (first_file ? "\n" : ",\n") << "{\"lines\":[";
    } else {
      out << (first_file ? "" : "\n") << Printable(file.path) << '\n';
      const int width = o.absolute ? 10 : 8;
      out << std::string(static_cast<size_t>(width - 4), ' ') << "self "
          << std::string(static_cast<size_t>(width - 4), ' ') << "incl heat  line\n";
    }
    first_file = false;
    bool first_line = true;
    for (size_t r = 0; r < ranges.size(); ++r) {
      const uint32_t end = std::min(ranges[r].second, last_line);
      if (!o.json && r > 0) out << "  ...\n";
      for (uint32_t n = ranges[r].first; n <= end; ++n) {
        const auto it = by_line.find(n);
        const LineStats* stats = it == by_line.end() ? nullptr : it->second;
        if (!readable && !stats) continue;
        const std::string& source = n <= text.size() ? text[n - 1] : std::string();
        const int heat = stats ? LevelAt(stats->global_heat, event) : 0;
        const int64_t self = stats ? WeightAt(stats->self, event) : 0;
        const int64_t inclusive = stats ? WeightAt(stats->inclusive, event) : 0;
        if (o.json) {
          out << (first_line ? "\n" : ",\n") << "{\"global_heat\":" << heat
              << ",\"inclusive\":" << JsonWeight(inclusive, total, o.absolute) << ",\"line\":" << n
              << ",\"local_heat\":" << (stats ? LevelAt(stats->local_heat, event) : 0)
              << ",\"self\":" << JsonWeight(self, total, o.absolute)
              << ",\"text\":" << JsonString(source) << '}';
          first_line = false;
          continue;
        }
        const int width = o.absolute ? 10 : 8;
        if (stats && (self > 0 || inclusive > 0)) {
          out << HeatColor(heat, o.color) << FormatWeight(self, total, o.absolute, width) << ' '
              << FormatWeight(inclusive, total, o.absolute, width) << "    " << heat;
        } else {
          out << std::string(static_cast<size_t>(2 * width + 5), ' ');
        }
        char number[16];
        std::snprintf(number, sizeof number, "%6u", n);
        out << number << " | " << ExpandTabs(source) << ResetColor(o.color && stats) << '\n';
      }
    }
    if (o.json) out << "],\"path\":" << JsonString(file.path) << '}';
  }
  if (o.json) {
    out << "],\n\"total\":" << total << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"")
        << "}\n";
  }
  return status;
}

}  // namespace inprof::viewer
