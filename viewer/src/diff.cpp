// `inprof diff BEFORE AFTER`: what got hotter or colder, by function and by line.
//
// Weights are compared as percentages of each profile's event total by default: two runs of
// different length (or sampling rate) are then comparable, and a function that doubled its
// share stands out whatever the totals. --absolute compares raw weights.
//
// Functions are matched by name across files (two builds rarely agree on absolute paths);
// lines by path and line number, so --map can bring the two profiles' source trees together.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "inprof/annotations.h"
#include "inprof/atomic_write.h"
#include "inprof/flame.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr int kBadInput = 1;

struct Side {
  double self = 0, inclusive = 0;
};

struct Entry {
  std::string name;  // function name, or the line's function
  std::string file;  // lines only
  uint32_t line = 0;
  Side before, after;
  double self_change() const { return after.self - before.self; }
  double inclusive_change() const { return after.inclusive - before.inclusive; }
};

struct Scale {
  int64_t total = 0;
  bool absolute = false;
  double operator()(int64_t w) const {
    if (absolute) return static_cast<double>(w);
    return total > 0 ? 100.0 * static_cast<double>(w) / static_cast<double>(total) : 0.0;
  }
};

void Collect(const Annotations& a, size_t event, const Scale& scale, bool after,
             std::map<std::string, Entry>& functions,
             std::map<std::pair<std::string, uint32_t>, Entry>& lines) {
  auto add_function = [&](const FunctionStats& fn) {
    Entry& e = functions[fn.name];
    e.name = fn.name;
    Side& side = after ? e.after : e.before;
    side.self += scale(WeightAt(fn.self, event));
    side.inclusive += scale(WeightAt(fn.inclusive, event));
  };
  for (const FileStats& file : a.files) {
    for (const FunctionStats& fn : file.functions) add_function(fn);
    for (const LineStats& line : file.lines) {
      Entry& e = lines[{file.path, line.line}];
      e.file = file.path;
      e.line = line.line;
      if (after || e.name.empty()) e.name = line.function;
      Side& side = after ? e.after : e.before;
      side.self += scale(WeightAt(line.self, event));
      side.inclusive += scale(WeightAt(line.inclusive, event));
    }
  }
  for (const FunctionStats& fn : a.functions_without_source) add_function(fn);
}

template <typename Map>
std::vector<const Entry*> Ranked(const Map& entries, bool by_inclusive, size_t limit) {
  std::vector<const Entry*> out;
  for (const auto& [key, e] : entries) {
    // Below half a unit of the last printed digit the change is rounding noise.
    if (std::fabs(e.self_change()) >= 1e-9 || std::fabs(e.inclusive_change()) >= 1e-9) {
      out.push_back(&e);
    }
  }
  std::stable_sort(out.begin(), out.end(), [&](const Entry* x, const Entry* y) {
    const double x1 = std::fabs(by_inclusive ? x->inclusive_change() : x->self_change());
    const double y1 = std::fabs(by_inclusive ? y->inclusive_change() : y->self_change());
    if (x1 != y1) return x1 > y1;
    const double x2 = std::fabs(by_inclusive ? x->self_change() : x->inclusive_change());
    const double y2 = std::fabs(by_inclusive ? y->self_change() : y->inclusive_change());
    if (x2 != y2) return x2 > y2;
    return std::tie(x->file, x->line, x->name) < std::tie(y->file, y->line, y->name);
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string Value(double v, bool absolute, bool sign) {
  char buffer[64];
  if (absolute) {
    std::snprintf(buffer, sizeof buffer, sign ? "%+.0f" : "%.0f", v);
  } else {
    std::snprintf(buffer, sizeof buffer, sign ? "%+.2f%%" : "%.2f%%", v);
  }
  return buffer;
}

std::string JsonNumber(double v, bool absolute) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, absolute ? "%.0f" : "%.2f", v);
  // "-0.00" would read as a change where there is none.
  if (std::string(buffer) == "-0.00" || std::string(buffer) == "-0") return absolute ? "0" : "0.00";
  return buffer;
}

std::string Column(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// Picks the event: -e NAME in both; else the first event of BEFORE, and the event of that
// name in AFTER or, when AFTER has none of that name (say "cpu" against perf's "cpu-clock"),
// AFTER's first event.
Status PickEvents(const DiffOptions& o, const Annotations& before, const Annotations& after,
                  size_t* b, size_t* a) {
  StatusOr<size_t> in_before = FindEvent(before, o.event);
  if (!in_before.ok()) return Status::NotFound(o.profile + ": " + in_before.status().message());
  *b = *in_before;
  StatusOr<size_t> in_after = FindEvent(after, before.events[*b].name);
  if (!in_after.ok() && o.event.empty()) in_after = FindEvent(after, "");
  if (!in_after.ok()) return Status::NotFound(o.other + ": " + in_after.status().message());
  *a = *in_after;
  return Status::Ok();
}

// The differential flame graph (exporters' WriteDiffFlameSvg): widths from `after`, colour
// by the change, with the diff's event choice and the flame options (title, width, ...).
Status WriteDifferentialFlameGraph(const DiffOptions& o, const Profile& before,
                                   const Profile& after, size_t before_event, size_t after_event) {
  FlameOptions options = o.flame_options;
  options.event = after_event;
  options.before_event = before_event;
  std::string svg;
  if (Status s = WriteDiffFlameSvg(before, after, options, &svg); !s.ok()) return s;
  return WriteFileAtomically(o.output, svg);
}

// What a diff listing shows: the ranked entries and what each side was measured against.
struct DiffTables {
  std::vector<const Entry*> functions, lines;
  const EventInfo& before_event;
  const EventInfo& after_event;
  Scale before_scale, after_scale;
};

void PrintDiffJson(const DiffOptions& o, const DiffTables& t, std::ostream& out) {
  const auto& [fns, lns, ib, ia, sb, sa] = t;
  const char* sort = o.inclusive ? "inclusive" : "self";
  auto side = [&](const Side& b, const Side& a, double change_self, double change_inclusive) {
    out << "\"inclusive\":{\"after\":" << JsonNumber(a.inclusive, o.absolute)
        << ",\"before\":" << JsonNumber(b.inclusive, o.absolute)
        << ",\"change\":" << JsonNumber(change_inclusive, o.absolute)
        << "},\"self\":{\"after\":" << JsonNumber(a.self, o.absolute)
        << ",\"before\":" << JsonNumber(b.self, o.absolute)
        << ",\"change\":" << JsonNumber(change_self, o.absolute) << "}";
  };
  out << "{\"after\":{\"event\":" << JsonString(ia.name) << ",\"file\":" << JsonString(o.other)
      << ",\"total\":" << sa.total << "},\n\"before\":{\"event\":" << JsonString(ib.name)
      << ",\"file\":" << JsonString(o.profile) << ",\"total\":" << sb.total
      << "},\n\"functions\":[";
  for (size_t i = 0; i < fns.size(); ++i) {
    out << (i ? ",\n" : "\n") << '{';
    side(fns[i]->before, fns[i]->after, fns[i]->self_change(), fns[i]->inclusive_change());
    out << ",\"name\":" << JsonString(fns[i]->name) << '}';
  }
  out << "],\n\"lines\":[";
  for (size_t i = 0; i < lns.size(); ++i) {
    out << (i ? ",\n" : "\n") << "{\"file\":" << JsonString(lns[i]->file)
        << ",\"function\":" << JsonString(lns[i]->name) << ',';
    side(lns[i]->before, lns[i]->after, lns[i]->self_change(), lns[i]->inclusive_change());
    out << ",\"line\":" << lns[i]->line << '}';
  }
  out << "],\n\"sort\":\"" << sort
      << "\",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"") << "}\n";
}

void PrintDiffText(const DiffOptions& o, const DiffTables& t, std::ostream& out) {
  const auto& [fns, lns, ib, ia, sb, sa] = t;
  const char* sort = o.inclusive ? "inclusive" : "self";
  // "total 89 samples", "total 50251250 nanoseconds"; a plain count needs no word.
  auto unit = [](const EventInfo& e) {
    const std::string u = WeightUnit(e);
    return u == "count" ? std::string() : " " + u;
  };
  out << "before: " << o.profile << " (event " << ib.name << ", total " << sb.total << unit(ib)
      << ")\n"
      << "after:  " << o.other << " (event " << ia.name << ", total " << sa.total << unit(ia)
      << ")\n"
      << (o.absolute ? "absolute weights" : "percent of each profile's total")
      << "; sorted by the change in " << sort << " weight\n";
  const size_t w = o.absolute ? 11 : 8;
  auto header = [&](const char* what) {
    out << '\n'
        << what << '\n'
        << Column("self", w) << Column("", w) << Column("", w + 1) << "  " << Column("inclusive", w)
        << '\n'
        << Column("before", w) << Column("after", w) << Column("change", w + 1) << "  "
        << Column("before", w) << Column("after", w) << Column("change", w + 1) << "  "
        << (what[0] == 'F' ? "function" : "location") << '\n';
  };
  auto row = [&](const Entry& e) {
    out << Column(Value(e.before.self, o.absolute, false), w)
        << Column(Value(e.after.self, o.absolute, false), w)
        << Column(Value(e.self_change(), o.absolute, true), w + 1) << "  "
        << Column(Value(e.before.inclusive, o.absolute, false), w)
        << Column(Value(e.after.inclusive, o.absolute, false), w)
        << Column(Value(e.inclusive_change(), o.absolute, true), w + 1) << "  ";
  };
  header("Functions");
  for (const Entry* e : fns) {
    row(*e);
    out << Printable(e->name) << '\n';
  }
  if (fns.empty()) out << "  (no change)\n";
  header("Lines");
  for (const Entry* e : lns) {
    row(*e);
    out << Printable(e->file) << ':' << e->line << "  " << Printable(e->name) << '\n';
  }
  if (lns.empty()) out << "  (no change in lines with source information)\n";
}

}  // namespace

int RunDiff(const DiffOptions& o, std::ostream& out, std::ostream& err) {
  Input before, after;
  for (auto [path, input] : {std::pair{&o.profile, &before}, std::pair{&o.other, &after}}) {
    if (Status s = LoadInput(*path, o.progress, input, true, o.filter); !s.ok()) {
      err << "inprof: " << s.message() << '\n';
      return kBadInput;
    }
    RemapPaths(o.maps, input->annotations);
  }
  size_t eb = 0, ea = 0;
  if (Status s = PickEvents(o, before.annotations, after.annotations, &eb, &ea); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }

  if (o.flame) {
    for (const auto& [path, input] :
         {std::pair{&o.profile, &before}, std::pair{&o.other, &after}}) {
      if (!input->has_stacks) {
        err << "inprof: " << *path
            << ": annotation JSON has no stacks; a differential flame graph needs stacks "
               "(folded, perf.log, perf script)\n";
        return kBadInput;
      }
    }
    if (Status s = WriteDifferentialFlameGraph(o, before.profile, after.profile, eb, ea); !s.ok()) {
      err << "inprof: " << s.message() << '\n';
      return kBadInput;
    }
    return 0;
  }

  const Scale sb{EventTotal(before.annotations, eb), o.absolute};
  const Scale sa{EventTotal(after.annotations, ea), o.absolute};
  std::map<std::string, Entry> functions;
  std::map<std::pair<std::string, uint32_t>, Entry> lines;
  Collect(before.annotations, eb, sb, false, functions, lines);
  Collect(after.annotations, ea, sa, true, functions, lines);
  const DiffTables tables{Ranked(functions, o.inclusive, o.limit),
                          Ranked(lines, o.inclusive, o.limit),
                          before.annotations.events[eb],
                          after.annotations.events[ea],
                          sb,
                          sa};
  if (o.json) {
    PrintDiffJson(o, tables, out);
  } else {
    PrintDiffText(o, tables, out);
  }
  return 0;
}

}  // namespace inprof::viewer
