// The viewer's subcommands and what they share. main.cpp parses the command line into
// ViewerOptions, loads the profile and calls one Run* function.
#ifndef INPROF_VIEWER_VIEWER_H_
#define INPROF_VIEWER_VIEWER_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "inprof/exporters.h"

namespace inprof::viewer {

struct ViewerOptions {
  std::string profile;                                   // the file to read
  std::vector<std::string> sources;                      // annotate: files to show
  std::string event;                                     // name; empty: the first event
  std::vector<std::pair<std::string, std::string>> maps;  // --map OLD=NEW source prefixes
  bool json = false;
  bool absolute = false;    // weights instead of percentages
  bool inclusive = false;   // top: rank by inclusive weight
  bool all = false;         // annotate: whole files
  size_t limit = 10;        // top: entries; annotate: files when none are named
  bool limit_set = false;
  uint32_t context = 2;     // annotate: lines around hot regions
  std::string function;     // annotate: only functions whose name contains this
  double threshold = 0;     // heat: 0 keeps the profile's own levels
  bool color = false;       // ANSI colours (a terminal, and NO_COLOR unset)
};

// Reads `path` as annotation JSON (content starting with '{'), perf.log (a name ending in
// .log) or folded stacks (anything else). Errors read "PATH:LINE: what was expected".
Status LoadAnnotations(const std::string& path, Annotations* out);

// Rewrites source paths that start with a map's OLD prefix to NEW (first match wins).
void RemapPaths(const std::vector<std::pair<std::string, std::string>>& maps, Annotations& a);

// Index of the event named `name` (empty: 0); false with a message when there is none.
bool FindEvent(const Annotations& a, const std::string& name, size_t* event, std::string* error);

// The weight 100 % stands for: the event's total, or the sum of self weights if unknown.
int64_t EventTotal(const Annotations& a, size_t event);

// "12.34%" or "1234" (right-aligned to `width`); empty weights print as blanks.
std::string FormatWeight(int64_t weight, int64_t total, bool absolute, int width);
// JSON value of a weight: an integer, or a percentage with two decimals.
std::string JsonWeight(int64_t weight, int64_t total, bool absolute);
std::string JsonString(const std::string& text);
// `text` with control characters shown as "\n", "\t" or "\xNN", for terminal output.
std::string Printable(const std::string& text);
// ANSI colour for a heat level (0-5), and the reset sequence; empty when colour is off.
const char* HeatColor(int level, bool color);
const char* ResetColor(bool color);

int64_t WeightAt(const std::vector<int64_t>& weights, size_t event);
int LevelAt(const std::vector<uint8_t>& levels, size_t event);

// Subcommands. They print to `out`, warnings to `err`, and return the exit code.
int RunTop(const ViewerOptions& options, const Annotations& a, size_t event, std::ostream& out);
int RunAnnotate(const ViewerOptions& options, const Annotations& a, size_t event,
                std::ostream& out, std::ostream& err);
int RunHeat(const ViewerOptions& options, Annotations& a, size_t event, std::ostream& out);
// `inprof record ... -- COMMAND`: `args` from "record" on; returns inprof's exit code.
int RunRecord(const std::vector<std::string>& args);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_VIEWER_H_
