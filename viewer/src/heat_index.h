// The lookup behind profile-guided code search (`inprof hot`, `inprof grep`, `inprof query`):
// "is PATH:LINE (or a range of lines) hot in this profile, and how hot?" for paths as search
// tools print them.
//
// A search tool prints paths relative to where it ran, while the profile holds the canonical
// absolute paths of the machine that built the program. Resolution, in order:
//   1. the path, made absolute against the root and normalised ("./a/../b" -> "b");
//   2. its realpath(3) on this machine (symlinks, bind mounts of the checkout);
//   3. the file base name, as perf-heatmap keys its index (package or file name plus function,
//      never the full path) so that a profile taken on another machine still applies. A
//      local file that exists never stands for a profile file that exists too (it would have
//      matched by path: it is another file of the same name). When
//      several profile files share the base name, the one sharing the longest path suffix
//      wins; a tie is settled per hit by the function whose line range covers the hit and,
//      if still needed, by that function's name appearing in the local file. What remains
//      ambiguous is reported, never guessed.
// Remapping (--map OLD=NEW) is applied to the profile's paths before any of this.
//
// Thread-safety: none; one index per command. Not async-signal-safe.
#ifndef INPROF_VIEWER_HEAT_INDEX_H_
#define INPROF_VIEWER_HEAT_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/annotations.h"
#include "input_files.h"

namespace inprof::viewer {

// One sampled line of one profile file, for one event.
struct LineHeat {
  uint32_t line = 0;
  uint8_t local = 0;   // heat level within its function, 0-5
  uint8_t global = 0;  // heat level over the whole profile, 0-5
  int64_t self = 0;
  int64_t inclusive = 0;
  const std::string* function = nullptr;
};

struct FileHeat {
  std::string path;             // as in the profile after --map, made absolute
  std::vector<LineHeat> lines;  // sorted by line; lines without weight are left out
  // lines[i].line, packed: the binary search of every hit touches a few cache lines, not the
  // whole LineHeat array (a million hits over thousands of files miss the cache otherwise).
  std::vector<uint32_t> numbers;
  std::vector<const FunctionStats*> functions;
  bool exists = false;  // the path exists on this machine
};

// What makes a line hot: a heat level (global, or local with `local`) of at least `min_level`,
// or, when `min_percent` >= 0, an inclusive share of the event's total of at least that much.
struct HotCriterion {
  int min_level = 1;
  bool local = false;
  double min_percent = -1;
};

enum class MatchKind : uint8_t {
  kNone,       // no profile file has this path or base name
  kExact,      // the normalised path
  kRealPath,   // its realpath
  kBaseName,   // one profile file by base name (and path suffix)
  kFunction,   // several by base name; the function at the hit settled it
  kAmbiguous,  // several by base name and nothing settles it
};
const char* MatchKindName(MatchKind kind);

// A hit's place in the profile. `line` is the hottest line of the hit's range (by the
// criterion's level or share, then inclusive weight); null when no line of it was sampled.
struct HitHeat {
  MatchKind match = MatchKind::kNone;
  int file = -1;  // index into HeatIndex::files(); -1 when none
  const LineHeat* line = nullptr;
  bool hot = false;
  std::vector<int> candidates;  // kAmbiguous: the profile files it could be
};

class HeatIndex {
 public:
  // `root` is the directory relative paths are resolved against (absolute). With `confine`,
  // source files are read only from inside it (input_files.h); otherwise from anywhere.
  HeatIndex(const Annotations& annotations, size_t event, const HotCriterion& criterion,
            std::string root, bool confine = false);

  // The heat of lines first..last (inclusive) of `path` as a search tool printed it.
  HitHeat Lookup(std::string_view path, uint32_t first, uint32_t last);

  // The sampled line numbers of every profile file `path` may stand for, sorted, unique: the
  // only lines a search for hot hits in that file needs to look at.
  std::vector<uint32_t> SampledLines(std::string_view path);

  bool IsHot(const LineHeat& line) const;
  // The lines of `file` between first and last that were sampled.
  std::pair<const LineHeat*, const LineHeat*> Lines(int file, uint32_t first, uint32_t last) const;
  const std::vector<FileHeat>& files() const { return files_; }
  int64_t total() const { return total_; }
  const std::string& root() const { return root_; }
  // Every source file the search reads goes through this: the index itself reads a local
  // file only to settle an ambiguous base name by its function names.
  SourceFiles& sources() { return sources_; }

 private:
  struct Resolution {
    MatchKind match = MatchKind::kNone;
    std::vector<int> files;                   // one for a match, several when settled per hit
    std::string local_path;                   // the path on this machine (for function names)
    std::unique_ptr<std::string> local_text;  // read on first need
    bool local_read = false;
  };
  Resolution& Resolved(std::string_view path);
  Resolution Resolve(std::string_view path) const;
  int SettleByFunction(Resolution& r, uint32_t first, uint32_t last) const;
  const LineHeat* Hottest(int file, uint32_t first, uint32_t last) const;

  std::vector<FileHeat> files_;
  std::unordered_map<std::string, int> by_path_;
  std::unordered_map<std::string, std::vector<int>> by_base_name_;
  // Looked up with the string_view of every input line: no allocation per hit.
  struct PathHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Resolution, PathHash, std::equal_to<>> cache_;  // node-based
  std::pair<const std::string, Resolution>* last_ = nullptr;
  HotCriterion criterion_;
  int64_t total_ = 0;
  std::string root_;
  mutable SourceFiles sources_;  // reading a file for SettleByFunction changes only counts
};

// `path` made absolute against `root` and normalised lexically ("a/./b/../c" -> "/root/a/c").
std::string NormalizePath(std::string_view path, std::string_view root);

// The current directory, or "/" when it cannot be determined.
std::string CurrentDirectory();

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_HEAT_INDEX_H_
