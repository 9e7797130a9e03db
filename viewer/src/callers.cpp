// `inprof callers` / `inprof callees`: who calls a function (or a range of lines) and what it
// calls, from the annotation's caller -> callee line edges.
//
// TARGET is "=NAME" (exact function name), "FILE:LINE" or "FILE:START-END" (FILE matches a
// profile path exactly or as its trailing components), or else a part of a function name. A
// name part that matches several functions is an error that lists them: summing unrelated
// functions (every "operator()" of a program) would give a plausible, wrong answer. Names
// without source lines take part only when no name with source lines matches.
//
// Rows aggregate edges to the function that owns the other end's line (or, with --lines, to
// that line), separately for inlined and real calls. A function without source lines is
// answered from the stacks when the input has them (perf script without srcline). Edge weights
// count each stack once per line pair, so a row's weight is exact unless recursion crosses the
// target's boundary more than once in a stack.
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cli.h"
#include "inprof/annotations.h"
#include "names.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

struct Target {
  bool lines = false;
  std::string text;  // as given
  std::string name;  // resolved function name
  std::string file;  // FILE part of FILE:LINE
  uint32_t first = 0, last = 0;
};

// "FILE:LINE" / "FILE:START-END"; false when `text` is not of that form.
bool ParseLineTarget(const std::string& text, Target* t) {
  SourceRange range;
  if (!ParseSourceRange(text, &range)) return false;
  t->lines = true;
  t->file = range.file;
  t->first = range.first;
  t->last = range.last;
  return true;
}

bool PathMatches(const std::string& path, const std::string& file) {
  return path == file || (path.size() > file.size() && path.ends_with(file) &&
                          path[path.size() - file.size() - 1] == '/');
}

const LineStats* FindLine(const FileStats& file, uint32_t line) {
  auto it = std::lower_bound(file.lines.begin(), file.lines.end(), line,
                             [](const LineStats& l, uint32_t n) { return l.line < n; });
  return it != file.lines.end() && it->line == line ? &*it : nullptr;
}

struct Candidate {
  int64_t inclusive = 0;
  int64_t self = 0;
  bool has_source = false;
};

// Every function name with its weights summed over the files it appears in.
std::map<std::string, Candidate> FunctionNames(const Annotations& a, size_t event) {
  std::map<std::string, Candidate> names;
  for (const FileStats& file : a.files) {
    for (const FunctionStats& fn : file.functions) {
      Candidate& c = names[fn.name];
      c.inclusive += WeightAt(fn.inclusive, event);
      c.self += WeightAt(fn.self, event);
      c.has_source = true;
    }
  }
  for (const FunctionStats& fn : a.functions_without_source) {
    Candidate& c = names[fn.name];
    c.inclusive += WeightAt(fn.inclusive, event);
    c.self += WeightAt(fn.self, event);
  }
  return names;
}

struct Row {
  std::string function;
  std::string file;   // the row's file (line level), or the file of its first call site
  uint32_t line = 0;  // line level only
  bool inlined = false;
  int64_t weight = 0;
  std::set<std::pair<std::string, uint32_t>> sites;  // (path, line) where the call happens
};

using RowKey = std::tuple<std::string, std::string, uint32_t, bool>;

std::string Sites(const std::set<std::pair<std::string, uint32_t>>& sites) {
  std::string text;
  const std::string* file = nullptr;
  for (const auto& [f, l] : sites) {
    if (!file || f != *file) {
      text += (text.empty() ? "" : " ") + Printable(f) + ":";
      file = &f;
    } else {
      text += ",";
    }
    text += std::to_string(l);
  }
  return text;
}

// Function-level rows straight from the stacks, for a function without source lines (perf
// script without srcline, a library without debug info): every adjacent frame pair that
// crosses into (callers) or out of (callees) the function, once per stack and row.
void RowsFromStacks(const Profile& p, const std::string& name, size_t event, bool callees,
                    std::map<RowKey, Row>& rows) {
  std::vector<RowKey> seen;
  for (const Sample& sample : p.samples) {
    const int64_t weight = WeightAt(sample.weights, event);
    if (weight <= 0) continue;
    seen.clear();
    for (size_t k = 1; k < sample.frames.size(); ++k) {
      if (sample.frames[k - 1] >= p.frames.size() || sample.frames[k] >= p.frames.size()) continue;
      const Frame& caller = p.frames[sample.frames[k - 1]];
      const Frame& callee = p.frames[sample.frames[k]];
      const bool in_caller = caller.function == name, in_callee = callee.function == name;
      if (callees ? !(in_caller && !in_callee) : !(in_callee && !in_caller)) continue;
      const Frame& other = callees ? callee : caller;
      const bool inlined = callee.kind == FrameKind::kInlined;
      RowKey key{other.function, std::string(), 0, inlined};
      Row& row = rows[key];
      row.function = other.function;
      row.inlined = inlined;
      if (caller.has_source()) row.sites.emplace(caller.file, caller.line);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      row.weight += weight;
    }
  }
}

// What TARGET resolved to: its lines (file index, line), its own weights, and whether its
// rows come from the stacks (a function without source lines).
struct Resolved {
  Target t;
  std::set<std::pair<uint32_t, uint32_t>> target;
  int64_t target_self = 0;
  int64_t target_inclusive = -1;
  bool from_stacks = false;
};

// FILE:LINE or FILE:START-END. False (after saying why on `err`) when it names no sampled line.
bool ResolveLines(const Annotations& a, size_t event, const char* command, Resolved* r,
                  std::ostream& err) {
  Target& t = r->t;
  auto& target = r->target;
  int64_t& target_self = r->target_self;
  std::vector<uint32_t> files;
  for (uint32_t f = 0; f < a.files.size(); ++f) {
    if (PathMatches(a.files[f].path, t.file)) files.push_back(f);
  }
  if (files.empty()) {
    err << "inprof: " << command << ": no file '" << t.file << "' in the profile\n";
    return false;
  }
  if (files.size() > 1) {
    err << "inprof: " << command << ": '" << t.file
        << "' matches several files; give more of the path:\n";
    for (uint32_t f : files) err << "  " << Printable(a.files[f].path) << '\n';
    return false;
  }
  for (const LineStats& line : a.files[files[0]].lines) {
    if (line.line >= t.first && line.line <= t.last) {
      target.emplace(files[0], line.line);
      target_self += WeightAt(line.self, event);
    }
  }
  if (target.empty()) {
    err << "inprof: " << command << ": no sampled line in " << Printable(a.files[files[0]].path)
        << ':' << t.first;
    if (t.last != t.first) err << '-' << t.last;
    err << '\n';
    return false;
  }
  return true;
}

// NAME (contained) or =NAME (exact). False (after saying why) when no function, or several,
// match, or the one that does has neither source lines nor stacks to answer from.
bool ResolveFunction(const CallersOptions& o, const Annotations& a, const Profile* stacks,
                     size_t event, const char* command, Resolved* r, std::ostream& err) {
  Target& t = r->t;
  const bool exact = o.target.starts_with('=');
  const std::string wanted = exact ? o.target.substr(1) : o.target;
  const auto names = FunctionNames(a, event);
  std::vector<std::pair<std::string, Candidate>> matches;
  if (auto it = names.find(wanted); it != names.end()) {
    matches.emplace_back(*it);  // an exact name wins over names that merely contain it
  } else if (!exact) {
    for (const auto& entry : names) {
      if (entry.first.find(wanted) != std::string::npos) matches.push_back(entry);
    }
    // Functions without source lines have no edges to follow; they only compete with a
    // function that has some ("run" would otherwise also match "[truncated]").
    if (std::any_of(matches.begin(), matches.end(),
                    [](const auto& m) { return m.second.has_source; })) {
      std::erase_if(matches, [](const auto& m) { return !m.second.has_source; });
    }
  }
  if (matches.empty()) {
    err << "inprof: " << command << ": no function " << (exact ? "named '" : "matching '")
        << Printable(wanted) << "' in the profile\n";
    return false;
  }
  if (matches.size() > 1) {
    std::sort(matches.begin(), matches.end(), [](const auto& x, const auto& y) {
      return std::tie(y.second.inclusive, x.first) < std::tie(x.second.inclusive, y.first);
    });
    err << "inprof: " << command << ": '" << Printable(wanted) << "' matches " << matches.size()
        << " functions; name one exactly with =NAME, or give FILE:LINE (inclusive weight):\n";
    const int64_t total = EventTotal(a, event);
    for (size_t i = 0; i < matches.size() && i < 20; ++i) {
      err << FormatWeight(matches[i].second.inclusive, total, o.absolute, 10) << "  "
          << Printable(matches[i].first) << '\n';
    }
    if (matches.size() > 20) err << "  ... and " << matches.size() - 20 << " more\n";
    return false;
  }
  t.name = matches[0].first;
  r->target_self = matches[0].second.self;
  r->target_inclusive = matches[0].second.inclusive;
  for (uint32_t f = 0; f < a.files.size(); ++f) {
    for (const LineStats& line : a.files[f].lines) {
      if (line.function == t.name) r->target.emplace(f, line.line);
    }
  }
  if (r->target.empty() && stacks && !o.lines) {
    r->from_stacks = true;
  } else if (r->target.empty()) {
    err << "inprof: " << command << ": '" << Printable(t.name)
        << "' has no source lines in this profile; callers and callees follow call edges "
           "between source lines (profiles with file:line frames: annotation JSON, perf.log, "
           "folded 'function (file:line)' stacks, perf script -F +srcline)"
        << (stacks ? "; without --lines the stacks are used" : "") << '\n';
    return false;
  }
  return true;
}

// The rows: the edges (or, from the stacks, the frame pairs) that cross the target's
// boundary, summed per function (or line), heaviest first, at most o.limit.
std::vector<Row> CollectRows(const CallersOptions& o, const Annotations& a, const Profile* stacks,
                             size_t event, const Resolved& r) {
  const bool callees = o.callees;
  const bool from_stacks = r.from_stacks;
  const Target& t = r.t;
  const auto& target = r.target;
  std::map<RowKey, Row> rows;
  if (from_stacks) RowsFromStacks(*stacks, t.name, event, callees, rows);
  for (const CallEdge& e : from_stacks ? std::vector<CallEdge>() : a.edges) {
    const int64_t weight = WeightAt(e.weight, event);
    if (weight == 0) continue;
    const bool caller_in = target.count({e.caller.file, e.caller.line}) > 0;
    const bool callee_in = target.count({e.callee.file, e.callee.line}) > 0;
    if (callees ? !(caller_in && !callee_in) : !(callee_in && !caller_in)) continue;
    const LineRef other = callees ? e.callee : e.caller;
    if (other.file >= a.files.size()) continue;
    const LineStats* line = FindLine(a.files[other.file], other.line);
    const std::string function = line ? line->function : std::string();
    const std::string& path = a.files[other.file].path;
    const RowKey key = o.lines ? RowKey(std::string(), path, other.line, e.inlined)
                               : RowKey(function, std::string(), 0u, e.inlined);
    Row& row = rows[key];
    row.function = function;
    if (row.weight == 0) row.file = path;
    if (o.lines) row.line = other.line;
    row.inlined = e.inlined;
    row.weight += weight;
    // The call site: the caller's line (for callees, the target's line that calls).
    if (e.caller.file < a.files.size())
      row.sites.emplace(a.files[e.caller.file].path, e.caller.line);
  }
  std::vector<Row> sorted;
  for (auto& entry : rows) sorted.push_back(std::move(entry.second));
  std::sort(sorted.begin(), sorted.end(), [&](const Row& x, const Row& y) {
    if (x.weight != y.weight) return x.weight > y.weight;
    return std::tie(x.function, x.file, x.line, x.inlined) <
           std::tie(y.function, y.file, y.line, y.inlined);
  });
  if (sorted.size() > o.limit) sorted.resize(o.limit);
  return sorted;
}

void PrintJson(const CallersOptions& o, const Annotations& a, size_t event, const Resolved& r,
               const std::vector<Row>& rows, std::ostream& out) {
  const char* command = o.callees ? "callees" : "callers";
  const int64_t total = EventTotal(a, event);
  const EventInfo& info = a.events[event];
  const Target& t = r.t;
  out << "{\"event\":" << JsonString(info.name) << ",\"relation\":\"" << command
      << "\",\n\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    out << (i ? ",\n" : "\n") << "{\"file\":" << (row.file.empty() ? "null" : JsonString(row.file))
        << ",\"function\":" << JsonString(row.function)
        << ",\"inlined\":" << (row.inlined ? "true" : "false");
    if (o.lines) out << ",\"line\":" << row.line;
    out << ",\"sites\":[";
    bool first = true;
    for (const auto& [f, l] : row.sites) {
      out << (first ? "" : ",") << "{\"file\":" << JsonString(f) << ",\"line\":" << l << '}';
      first = false;
    }
    out << "],\"weight\":" << JsonWeight(row.weight, total, o.absolute) << '}';
  }
  out << "],\n\"target\":{";
  if (t.lines) {
    out << "\"file\":" << JsonString(t.file) << ",\"first_line\":" << t.first
        << ",\"last_line\":" << t.last;
  } else {
    out << "\"inclusive\":" << JsonWeight(r.target_inclusive, total, o.absolute)
        << ",\"name\":" << JsonString(t.name);
  }
  out << ",\"self\":" << JsonWeight(r.target_self, total, o.absolute) << "},\n\"total\":" << total
      << ",\"unit\":" << JsonString(WeightUnit(info))
      << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"") << "}\n";
}

void PrintText(const CallersOptions& o, const Annotations& a, size_t event, const Resolved& r,
               const std::vector<Row>& rows, std::ostream& out) {
  const bool callees = o.callees;
  const char* command = callees ? "callees" : "callers";
  const int64_t total = EventTotal(a, event);
  const EventInfo& info = a.events[event];
  const Target& t = r.t;
  out << command << " of ";
  if (t.lines) {
    out << Printable(t.file) << ':' << t.first;
    if (t.last != t.first) out << '-' << t.last;
  } else {
    out << Printable(DisplayName(t.name, o.full_names));
  }
  out << "; " << EventHeading(info, total) << '\n';
  if (!t.lines) {
    out << "inclusive " << FormatWeight(r.target_inclusive, total, o.absolute, 0) << ", ";
  }
  out << "self " << FormatWeight(r.target_self, total, o.absolute, 0) << "\n\n";
  const int width = o.absolute ? 10 : 8;
  out << std::string(static_cast<size_t>(width - 6), ' ') << "weight  "
      << (callees ? "callee" : "caller") << (o.lines ? " line" : "") << "  (call sites)\n";
  for (const Row& row : rows) {
    out << FormatWeight(row.weight, total, o.absolute, width) << "  ";
    if (o.lines) {
      out << Printable(row.file) << ':' << row.line << "  "
          << Printable(DisplayName(row.function, o.full_names));
    } else {
      out << Printable(DisplayName(row.function, o.full_names));
    }
    if (row.inlined) out << " [inlined]";
    if (!row.sites.empty()) out << "  (" << Sites(row.sites) << ')';
    out << '\n';
  }
  if (rows.empty()) {
    out << (r.from_stacks ? "  (none)\n" : "  (none with source lines)\n");
  }
}

}  // namespace

int RunCallers(const CallersOptions& o, const Annotations& a, const Profile* stacks, size_t event,
               std::ostream& out, std::ostream& err) {
  const char* command = o.callees ? "callees" : "callers";
  Resolved r;
  r.t.text = o.target;
  const bool lines = !o.target.starts_with('=') && ParseLineTarget(o.target, &r.t);
  if (lines ? !ResolveLines(a, event, command, &r, err)
            : !ResolveFunction(o, a, stacks, event, command, &r, err)) {
    return kExitBadInput;
  }
  const std::vector<Row> rows = CollectRows(o, a, stacks, event, r);
  if (o.json) {
    PrintJson(o, a, event, r, rows, out);
  } else {
    PrintText(o, a, event, r, rows, out);
  }
  return 0;
}

}  // namespace inprof::viewer
