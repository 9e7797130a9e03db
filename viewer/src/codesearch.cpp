// What `inprof hot`, `inprof grep` and `inprof query` share: options, loading the profile
// into a HeatIndex, and how a line's heat is printed.
#include "codesearch.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli.h"
#include "inprof/status.h"
#include "viewer.h"

namespace inprof::viewer {

std::vector<OptionSpec> SearchSpecs(SearchOptions* o, bool short_event) {
  std::vector<OptionSpec> specs = {
      Text(short_event ? std::vector<std::string>{"-e", "--event"}
                       : std::vector<std::string>{"--event"},
           "an event name", &o->event),
      {{"--map"},
       "OLD=NEW (a profile path prefix and its local replacement)",
       [o](const std::string& text) {
         const size_t eq = text.find('=');
         if (eq == std::string::npos || eq == 0) return false;
         o->maps.emplace_back(text.substr(0, eq), text.substr(eq + 1));
         return true;
       }},
      {{"--root"},
       "a directory",
       [o](const std::string& text) {
         if (text.empty()) return false;
         o->root = text;
         o->root_given = true;
         return true;
       }},
      {{"--level"},
       "a heat level from 1 to 5",
       [o](const std::string& text) {
         size_t level = 0;
         if (!ParseCount(text, &level) || level < 1 || level > 5) return false;
         o->criterion.min_level = static_cast<int>(level);
         return true;
       }},
      {{"--min-percent"},
       "a share from 0 to 100",
       [o](const std::string& text) {
         double percent = 0;
         if (!ParseDecimal(text, &percent) || !(percent >= 0 && percent <= 100)) return false;
         o->criterion.min_percent = percent;
         return true;
       }},
      Flag({"--local"}, &o->criterion.local),
      Flag({"--json"}, &o->json),
      Flag({"--absolute"}, &o->absolute),
  };
  for (OptionSpec& spec : HeatOptionSpecs(&o->heat)) specs.push_back(std::move(spec));
  OptionSpec color{{"--color", "--colour"}, "auto, always or never", [o](const std::string& v) {
                     if (v.empty() || v == "auto") return (o->color_mode = -1), true;
                     if (v == "always") return (o->color_mode = 1), true;
                     if (v == "never") return (o->color_mode = 0), true;
                     return false;
                   }};
  color.optional_value = true;
  specs.push_back(std::move(color));
  for (OptionSpec& spec : FilterOptionSpecs(&o->filter)) specs.push_back(std::move(spec));
  return specs;
}

bool LoadSearchProfile(const std::string& path, SearchOptions& o, SearchProfile* out) {
  if (const std::string problem = CheckFilter(o.filter); !problem.empty()) {
    std::cerr << "inprof: " << problem << '\n';
    return false;
  }
  if (o.root.empty()) o.root = CurrentDirectory();
  if (o.root_given) {
    // Confined: the root as it really is (symlinks resolved), so that realpaths compare.
    SourceFiles check(o.root);
    if (!check.error().empty()) {
      std::cerr << "inprof: " << check.error() << '\n';
      return false;
    }
    o.root = check.root();
  }
  o.root = NormalizePath(o.root, CurrentDirectory());
  const char* no_color = std::getenv("NO_COLOR");
  o.color = !o.json && (o.color_mode == 1 ||
                        (o.color_mode == -1 && !(no_color && *no_color) && isatty(STDOUT_FILENO)));
  if (Status s = LoadAnnotations(path, &out->annotations, false, o.filter); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return false;
  }
  RemapPaths(o.maps, out->annotations);
  StatusOr<size_t> found = FindEvent(out->annotations, o.event);
  if (!found.ok()) {
    std::cerr << "inprof: " << path << ": " << found.status().message() << '\n';
    return false;
  }
  out->event = *found;
  ApplyHeat(o.heat, out->annotations);
  out->index =
      std::make_unique<HeatIndex>(out->annotations, out->event, o.criterion, o.root, o.root_given);
  return true;
}

void ReportRefusedSources(HeatIndex& index) { std::cerr << index.sources().Summary(); }

std::string HeatTag(const SearchOptions& o, const HeatIndex& index, const LineHeat& line) {
  const int level = o.criterion.local ? line.local : line.global;
  std::string tag = HeatColor(level, o.color);
  tag += "[G" + std::to_string(line.global) + " L" + std::to_string(line.local) + " incl " +
         FormatWeight(line.inclusive, index.total(), o.absolute, 0) + " self " +
         FormatWeight(line.self, index.total(), o.absolute, 0) + "]";
  tag += ResetColor(o.color);
  return tag;
}

std::string HeatJson(const SearchOptions& o, const HeatIndex& index, int file, const LineHeat& line,
                     MatchKind match) {
  return "\"file\":" + JsonString(index.files()[static_cast<size_t>(file)].path) +
         ",\"function\":" + JsonString(line.function ? *line.function : std::string()) +
         ",\"global_heat\":" + std::to_string(line.global) +
         ",\"hot_line\":" + std::to_string(line.line) +
         ",\"inclusive\":" + JsonWeight(line.inclusive, index.total(), o.absolute) +
         ",\"local_heat\":" + std::to_string(line.local) +
         ",\"match\":" + JsonString(MatchKindName(match)) +
         ",\"self\":" + JsonWeight(line.self, index.total(), o.absolute);
}

std::string AmbiguityMessage(const HeatIndex& index, std::string_view path, uint32_t line,
                             const std::vector<int>& candidates) {
  std::string message = "inprof: " + Printable(std::string(path)) + ":" + std::to_string(line) +
                        ": ambiguous: the profile has this file name at ";
  for (size_t i = 0; i < candidates.size(); ++i) {
    message += (i ? ", " : "") + Printable(index.files()[static_cast<size_t>(candidates[i])].path);
  }
  return message + " and nothing tells them apart; skipped (say which with --map or --root)";
}

}  // namespace inprof::viewer
