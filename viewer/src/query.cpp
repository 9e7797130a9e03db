// `inprof query`: heat of a source line or line range (perf-heatmap's QueryLine and
// QueryLineRange), for editor plugins and scripts. Paths resolve like `inprof hot`'s.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "codesearch.h"
#include "inprof/heat.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr const char* kQueryHelp = R"(usage: inprof query [OPTIONS] PROFILE FILE:LINE[-LINE]...

Heat of each sampled line in the range: function, self and inclusive share, the level within
the function (L) and over the profile (G), and whether it is hot (see `inprof hot --help`).
FILE resolves like `inprof hot` resolves hit paths (relative to --root, --map, realpath,
base name).

options:
      --level N, --local, --min-percent X, --heat M, --threshold T
                       what counts as hot (as for hot)
      --root DIR       base of relative paths (default: the current directory); when
                       given, files are read only from inside DIR
      --map OLD=NEW    the profile's OLD/... is NEW/... here (repeatable)
  -e, --event NAME     the event to use (default: the profile's first)
      --absolute       weights instead of shares
      --from T, --to T, --thread NAME, --label K=V
                       only the samples of a time range (seconds since the start), of
                       threads, with labels (perf script output, *.speedscope.json)
      --hide REGEX     frames whose function name matches REGEX leave every stack;
                       their weight goes to the caller (repeatable; not annotation JSON)
      --json           {"event", "total", "queries": [{"query", "file", "match", "lines": [...],
                       "max_global_heat", "max_local_heat", "hot"}]}
Exit status: 0 when a queried line was sampled, 1 when none was, 2 on an error.

examples:
  inprof query profile.json src/parse.cpp:120
  inprof query --json --map /build/app=. profile.json parse.cpp:100-140
)";

int Usage(const std::string& message) { return UsageError("query", message); }

struct Query {
  std::string text, path;
  uint32_t first = 0, last = 0;
};

bool ParseQuery(const std::string& text, Query* q) {
  SourceRange range;
  if (!ParseSourceRange(text, &range)) return false;
  q->text = text;
  q->path = range.file;
  q->first = range.first;
  q->last = range.last;
  return true;
}

// What one query found: the match, the sampled lines of its range, their highest levels.
struct QueryAnswer {
  HitHeat heat;
  std::pair<const LineHeat*, const LineHeat*> lines{nullptr, nullptr};
  int max_global = 0, max_local = 0;
  std::string file;  // the profile file it resolved to; empty when none
};

QueryAnswer Answer(HeatIndex& index, const Query& q) {
  QueryAnswer a;
  a.heat = index.Lookup(q.path, q.first, q.last);
  if (a.heat.file >= 0) {
    a.lines = index.Lines(a.heat.file, q.first, q.last);
    a.file = index.files()[static_cast<size_t>(a.heat.file)].path;
  }
  for (const LineHeat* l = a.lines.first; l != a.lines.second; ++l) {
    a.max_global = std::max<int>(a.max_global, l->global);
    a.max_local = std::max<int>(a.max_local, l->local);
  }
  return a;
}

void PrintAnswerJson(const SearchOptions& o, const HeatIndex& index, const Query& q,
                     const QueryAnswer& a, bool first, std::ostream& out) {
  const HitHeat& heat = a.heat;
  const int64_t total = index.total();
  out << (first ? "\n" : ",\n") << "{\"candidates\":[";
  for (size_t i = 0; i < heat.candidates.size(); ++i) {
    out << (i ? "," : "")
        << JsonString(index.files()[static_cast<size_t>(heat.candidates[i])].path);
  }
  out << "],\"file\":" << (heat.file >= 0 ? JsonString(a.file) : "null") << ",\"first\":" << q.first
      << ",\"hot\":" << (heat.hot ? "true" : "false") << ",\"last\":" << q.last << ",\"lines\":[";
  for (const LineHeat* l = a.lines.first; l != a.lines.second; ++l) {
    out << (l != a.lines.first ? "," : "")
        << "{\"function\":" << JsonString(l->function ? *l->function : std::string())
        << ",\"global_heat\":" << int{l->global}
        << ",\"hot\":" << (index.IsHot(*l) ? "true" : "false")
        << ",\"inclusive\":" << JsonWeight(l->inclusive, total, o.absolute)
        << ",\"line\":" << l->line << ",\"local_heat\":" << int{l->local}
        << ",\"self\":" << JsonWeight(l->self, total, o.absolute) << "}";
  }
  out << "],\"match\":" << JsonString(MatchKindName(heat.match))
      << ",\"max_global_heat\":" << a.max_global << ",\"max_local_heat\":" << a.max_local
      << ",\"query\":" << JsonString(q.text) << "}";
}

void PrintAnswerText(const SearchOptions& o, const HeatIndex& index, const Query& q,
                     const QueryAnswer& a, std::ostream& out) {
  const HitHeat& heat = a.heat;
  const int64_t total = index.total();
  if (!heat.candidates.empty()) {
    std::cerr << AmbiguityMessage(index, q.path, q.first, heat.candidates) << '\n';
    return;
  }
  if (heat.file < 0) {
    out << Printable(q.text) << ": not in the profile\n";
    return;
  }
  out << Printable(q.text) << ": " << Printable(a.file) << " (" << MatchKindName(heat.match)
      << " match), G=" << a.max_global << " L=" << a.max_local << (heat.hot ? ", hot" : ", not hot")
      << '\n';
  if (a.lines.first == a.lines.second) out << "  no sampled line\n";
  for (const LineHeat* l = a.lines.first; l != a.lines.second; ++l) {
    char number[32];
    std::snprintf(number, sizeof number, "  line %4u: ", l->line);
    out << HeatColor(o.criterion.local ? l->local : l->global, o.color) << number
        << FormatWeight(l->self, total, o.absolute, 0) << ' '
        << FormatWeight(l->inclusive, total, o.absolute, 0) << " L=" << int{l->local}
        << " G=" << int{l->global} << ResetColor(o.color) << "  "
        << Printable(l->function ? *l->function : std::string()) << '\n';
  }
}

}  // namespace

int RunQuery(const std::vector<std::string>& args) {
  SearchOptions o;
  std::vector<std::string> positional;
  bool help = false;
  if (Status s = ParseOptions("query", args, 1, SearchSpecs(&o, /*short_event=*/true), &positional,
                              &help);
      !s.ok()) {
    return Usage(s.message());
  }
  if (help) {
    std::cout << kQueryHelp;
    return 0;
  }
  if (positional.size() < 2) return Usage("query needs a PROFILE and FILE:LINE[-LINE]");
  std::vector<Query> queries;
  for (size_t i = 1; i < positional.size(); ++i) {
    Query q;
    if (!ParseQuery(positional[i], &q)) {
      return Usage("'" + positional[i] + "' is not FILE:LINE or FILE:FIRST-LAST");
    }
    queries.push_back(q);
  }
  SearchProfile profile;
  if (!LoadSearchProfile(positional[0], o, &profile)) return kSearchError;
  HeatIndex& index = *profile.index;
  const int64_t total = index.total();

  std::ostringstream out;
  bool any_sampled = false;
  if (o.json) {
    out << "{\"event\":" << JsonString(profile.annotations.events[profile.event].name)
        << ",\"queries\":[";
  }
  for (size_t qi = 0; qi < queries.size(); ++qi) {
    const QueryAnswer answer = Answer(index, queries[qi]);
    any_sampled |= answer.lines.first != answer.lines.second;
    if (o.json) {
      PrintAnswerJson(o, index, queries[qi], answer, qi == 0, out);
    } else {
      PrintAnswerText(o, index, queries[qi], answer, out);
    }
  }
  if (o.json) {
    out << "],\"method\":\"" << HeatMethodName(profile.annotations.heat_method) << '"';
    if (profile.annotations.heat_method == HeatMethod::kPerfHeatmap) {
      out << ",\"threshold\":" << profile.annotations.heat_threshold;
    }
    out << ",\"total\":" << total << ",\"values\":" << (o.absolute ? "\"absolute\"" : "\"percent\"")
        << "}\n";
  }
  std::cout << out.str();
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "inprof: cannot write the output\n";
    return kSearchError;
  }
  ReportRefusedSources(index);
  return any_sampled ? kSearchPassed : kSearchNothing;
}

}  // namespace inprof::viewer
