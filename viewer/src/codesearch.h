// Profile-guided code search: `inprof hot`, `inprof grep` and `inprof query`. A code pattern
// matters for performance only where it sits on a hot path; these commands keep the hits of
// any search tool that fall on hot lines of a profile (after perf-heatmap and gogrep, for
// every language and tool). main.cpp hands them the command line before its own parser.
//
// Exit codes, as grep's: 0 something passed, 1 nothing did, 2 an error.
#ifndef INPROF_VIEWER_CODESEARCH_H_
#define INPROF_VIEWER_CODESEARCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli.h"
#include "heat_index.h"
#include "inprof/annotations.h"
#include "inprof/profile_filter.h"
#include "viewer.h"

namespace inprof::viewer {

constexpr int kSearchPassed = 0;
constexpr int kSearchNothing = 1;
constexpr int kSearchError = 2;

// Options the three commands share.
struct SearchOptions {
  std::string event;
  std::vector<std::pair<std::string, std::string>> maps;  // --map OLD=NEW (profile paths)
  std::string root;                                       // --root; default: current directory
  bool root_given = false;  // --root given: source files are read only from inside it
  HotCriterion criterion;
  HeatChoice heat;  // --heat, --threshold: recompute the levels first
  bool json = false;
  bool absolute = false;
  bool color = false;
  int color_mode = -1;   // --color: -1 auto, 0 never, 1 always
  ProfileFilter filter;  // --from, --to, --thread, --label, --hide
};

// The options the three commands share, for ParseOptions (cli.h). `short_event`: whether -e
// means --event (it means a pattern for `grep`).
std::vector<OptionSpec> SearchSpecs(SearchOptions* o, bool short_event);

// The profile as the commands see it: loaded, remapped, re-levelled, indexed.
struct SearchProfile {
  Annotations annotations;
  size_t event = 0;
  std::unique_ptr<HeatIndex> index;
};
// Loads `path`; on failure prints "inprof: ..." to stderr and returns false.
bool LoadSearchProfile(const std::string& path, SearchOptions& o, SearchProfile* out);

// After a search: how many source files were refused (outside --root, not regular, too
// large), one line per kind on stderr.
void ReportRefusedSources(HeatIndex& index);

// "[G5 L4 incl 40.00% self 12.00%]", coloured by the level that decides hotness.
std::string HeatTag(const SearchOptions& o, const HeatIndex& index, const LineHeat& line);
// JSON members (no braces) describing a line's heat in the profile file `file`.
std::string HeatJson(const SearchOptions& o, const HeatIndex& index, int file, const LineHeat& line,
                     MatchKind match);
// One warning per ambiguous path: "PATH:LINE: NAME matches several profile files (...)".
std::string AmbiguityMessage(const HeatIndex& index, std::string_view path, uint32_t line,
                             const std::vector<int>& candidates);

int RunHot(const std::vector<std::string>& args);
int RunGrep(const std::vector<std::string>& args);
int RunQuery(const std::vector<std::string>& args);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_CODESEARCH_H_
