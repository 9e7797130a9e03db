// `inprof annotate`: source files with a gutter of self %, inclusive % and heat level.
// By default only the hot regions (lines with a global heat level or any self weight, plus
// context) are shown; --all shows whole files, --function the line ranges of matching
// functions. Without a file named, the files with the most self weight are shown, each with
// its hottest region first: that is where a reader's eye should land.
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "inprof/annotations.h"
#include "input_files.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

// The lines of `text` without their new lines (a last line without one too).
std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.emplace_back(text, begin, end - begin);
    begin = end + 1;
  }
  return lines;
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
    if (weight[x].inclusive != weight[y].inclusive)
      return weight[x].inclusive > weight[y].inclusive;
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

// Which files, in which order: the named ones, those with a matching function, or the files
// with the most self weight. Sets *status to 1 when a named file is not in the profile.
std::vector<uint32_t> ChooseFiles(const AnnotateOptions& o, const Annotations& a, size_t event,
                                  std::ostream& err, int* status) {
  std::vector<uint32_t> files;
  if (!o.sources.empty()) {
    for (const std::string& source : o.sources) {
      const auto found = MatchFiles(a, source);
      if (found.empty()) {
        err << "inprof: " << source << ": no samples in this file (or not in the profile)\n";
        *status = 1;
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
  } else {
    files = FilesBySelfWeight(a, event);
    files.resize(std::min(files.size(), o.limit));
  }
  std::set<uint32_t> seen;
  std::vector<uint32_t> unique;
  for (uint32_t f : files) {
    if (seen.insert(f).second) unique.push_back(f);
  }
  return unique;
}

// The line ranges of `file` to show, in the order to show them.
Ranges RegionsToShow(const AnnotateOptions& o, const FileStats& file, size_t event,
                     uint32_t last_line) {
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
  return ranges;
}

// Prints one file's regions: a gutter per line, or JSON line objects.
class FilePrinter {
 public:
  FilePrinter(const AnnotateOptions& o, size_t event, int64_t total, SourceFiles& sources,
              std::ostream& out)
      : o_(o),
        event_(event),
        total_(total),
        width_(o.absolute ? 10 : 8),
        sources_(sources),
        out_(out) {}

  void Print(const FileStats& file, bool first_file, std::ostream& err) {
    std::map<uint32_t, const LineStats*> by_line;
    for (const LineStats& line : file.lines) by_line[line.line] = &line;
    std::vector<std::string> text;
    std::string contents, why;
    const SourceFiles::Outcome outcome = sources_.Read(file.path, &contents, &why);
    const bool readable = outcome == SourceFiles::Outcome::kRead;
    // A file that was there but refused (outside --root, not a regular file, too large):
    // its profiled lines are shown with the reason instead of their text.
    const bool refused = !readable && outcome != SourceFiles::Outcome::kMissing;
    if (readable) {
      text = SplitLines(contents);
    } else if (refused) {
      err << "inprof: " << Printable(file.path) << ": not read: " << why
          << " (showing profiled lines only)\n";
    } else {
      err << "inprof: cannot read " << Printable(file.path) << ": " << why
          << " (showing profiled lines only; --map OLD=NEW points at moved sources)\n";
    }
    const uint32_t last_line = std::max<uint32_t>(static_cast<uint32_t>(text.size()),
                                                  file.lines.empty() ? 0 : file.lines.back().line);
    const Ranges ranges = RegionsToShow(o_, file, event_, last_line);
    if (o_.json) {
      out_ << (first_file ? "\n" : ",\n") << "{\"lines\":[";
    } else {
      const std::string pad(static_cast<size_t>(width_ - 4), ' ');
      out_ << (first_file ? "" : "\n") << Printable(file.path) << '\n'
           << pad << "self " << pad << "incl heat  line\n";
      if (refused) out_ << "(source not read: " << why << ")\n";
    }
    first_line_ = true;
    for (size_t r = 0; r < ranges.size(); ++r) {
      if (!o_.json && r > 0) out_ << "  ...\n";
      for (uint32_t n = ranges[r].first; n <= std::min(ranges[r].second, last_line); ++n) {
        const auto it = by_line.find(n);
        const LineStats* stats = it == by_line.end() ? nullptr : it->second;
        if (!readable && !stats) continue;
        PrintLine(n, stats, n <= text.size() ? text[n - 1] : std::string());
      }
    }
    if (o_.json) {
      out_ << "],\"path\":" << JsonString(file.path);
      if (refused) out_ << ",\"unavailable\":" << JsonString(why);
      out_ << '}';
    }
  }

 private:
  void PrintLine(uint32_t n, const LineStats* stats, const std::string& source) {
    const int heat = stats ? LevelAt(stats->global_heat, event_) : 0;
    const int64_t self = stats ? WeightAt(stats->self, event_) : 0;
    const int64_t inclusive = stats ? WeightAt(stats->inclusive, event_) : 0;
    if (o_.json) {
      out_ << (first_line_ ? "\n" : ",\n") << "{\"global_heat\":" << heat
           << ",\"inclusive\":" << JsonWeight(inclusive, total_, o_.absolute) << ",\"line\":" << n
           << ",\"local_heat\":" << (stats ? LevelAt(stats->local_heat, event_) : 0)
           << ",\"self\":" << JsonWeight(self, total_, o_.absolute)
           << ",\"text\":" << JsonString(source) << '}';
      first_line_ = false;
      return;
    }
    if (stats && (self > 0 || inclusive > 0)) {
      out_ << HeatColor(heat, o_.color) << FormatWeight(self, total_, o_.absolute, width_) << ' '
           << FormatWeight(inclusive, total_, o_.absolute, width_) << "    " << heat;
    } else {
      out_ << std::string(static_cast<size_t>(2 * width_ + 5), ' ');
    }
    char number[16];
    std::snprintf(number, sizeof number, "%6u", n);
    out_ << number << " | " << ExpandTabs(source) << ResetColor(o_.color && stats) << '\n';
  }

  const AnnotateOptions& o_;
  const size_t event_;
  const int64_t total_;
  const int width_;
  SourceFiles& sources_;
  std::ostream& out_;
  bool first_line_ = true;
};

}  // namespace

int RunAnnotate(const AnnotateOptions& o, const Annotations& a, size_t event, std::ostream& out,
                std::ostream& err) {
  SourceFiles sources(o.root);
  if (!sources.error().empty()) {
    err << "inprof: " << sources.error() << '\n';
    return 2;
  }
  int status = 0;
  const std::vector<uint32_t> files = ChooseFiles(o, a, event, err, &status);
  if (files.empty() && !o.function.empty()) {
    err << "inprof: no function matching '" << o.function << "' has source lines\n";
    return 1;
  }
  if (files.empty() && o.sources.empty() && !o.json) {
    out << "no sampled source lines for event " << a.events[event].name << " ("
        << (o.no_lines_hint.empty() ? NoLinesHint(InputKind::kFolded) : o.no_lines_hint.c_str())
        << ")\n";
    return status;
  }
  const int64_t total = EventTotal(a, event);
  FilePrinter printer(o, event, total, sources, out);
  if (o.json) out << "{\"event\":" << JsonString(a.events[event].name) << ",\n\"files\":[";
  for (size_t i = 0; i < files.size(); ++i) printer.Print(a.files[files[i]], i == 0, err);
  if (o.json) {
    out << "],\n\"total\":" << total
        << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"") << "}\n";
  }
  err << sources.Summary();
  return status;
}

}  // namespace inprof::viewer
