// What `inprof hot`, `inprof grep` and `inprof query` share: options, loading the profile
// into a HeatIndex, and how a line's heat is printed.
#include "codesearch.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli.h"
#include "viewer.h"

namespace inprof::viewer {

int ParseSearchOption(const std::vector<std::string>& args, size_t* i, bool short_event,
                      SearchOptions* o, std::string* error) {
  std::string arg = args[*i], value;
  bool inline_value = false;
  if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
    value = arg.substr(arg.find('=') + 1);
    arg = arg.substr(0, arg.find('='));
    inline_value = true;
  }
  auto take = [&](const char* what) {
    if (inline_value) return true;
    if (*i + 1 >= args.size()) {
      *error = arg + " needs " + what;
      return false;
    }
    value = args[++*i];
    return true;
  };
  auto flag = [&](bool* out) {
    if (inline_value) {
      *error = arg + " takes no value";
      return -1;
    }
    *out = true;
    return 1;
  };
  if (arg == "--event" || (short_event && arg == "-e")) {
    if (!take("an event name")) return -1;
    o->event = value;
    return 1;
  }
  if (arg == "--map") {
    if (!take("OLD=NEW")) return -1;
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = "--map needs OLD=NEW (a profile path prefix and its local replacement)";
      return -1;
    }
    o->maps.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    return 1;
  }
  if (arg == "--root") {
    if (!take("a directory")) return -1;
    if (value.empty()) {
      *error = "--root needs a directory";
      return -1;
    }
    o->root = value;
    return 1;
  }
  if (arg == "--level") {
    double level = 0;
    if (!take("a level 1-5")) return -1;
    if (!ParseDecimal(value, &level) || level < 1 || level > 5 || level != static_cast<int>(level)) {
      *error = "--level needs a heat level from 1 to 5, not '" + value + "'";
      return -1;
    }
    o->criterion.min_level = static_cast<int>(level);
    return 1;
  }
  if (arg == "--min-percent") {
    double percent = 0;
    if (!take("a percentage")) return -1;
    if (!ParseDecimal(value, &percent) || !(percent >= 0 && percent <= 100)) {
      *error = "--min-percent needs a share from 0 to 100, not '" + value + "'";
      return -1;
    }
    o->criterion.min_percent = percent;
    return 1;
  }
  if (arg == "--heat") {
    HeatMethod method;
    if (!take("share or perf-heatmap")) return -1;
    if (!ParseHeatMethod(value, &method)) {
      *error = "--heat needs share or perf-heatmap, not '" + value + "'";
      return -1;
    }
    o->heat_method = method;
    return 1;
  }
  if (arg == "--threshold") {
    if (!take("a value in (0, 1]")) return -1;
    if (!ParseDecimal(value, &o->threshold) || !(o->threshold > 0 && o->threshold <= 1)) {
      *error = "--threshold needs a value in (0, 1], not '" + value + "'";
      return -1;
    }
    return 1;
  }
  if (arg == "--color" || arg == "--colour") {
    if (!inline_value) value = "auto";
    if (value == "auto")
      o->color_mode = -1;
    else if (value == "always")
      o->color_mode = 1;
    else if (value == "never")
      o->color_mode = 0;
    else {
      *error = "--color takes auto, always or never, not '" + value + "'";
      return -1;
    }
    return 1;
  }
  if (arg == "--local") return flag(&o->criterion.local);
  if (arg == "--json") return flag(&o->json);
  if (arg == "--absolute") return flag(&o->absolute);
  return 0;
}

bool LoadSearchProfile(const std::string& path, SearchOptions& o, SearchProfile* out) {
  if (o.root.empty()) o.root = CurrentDirectory();
  o.root = NormalizePath(o.root, CurrentDirectory());
  const char* no_color = std::getenv("NO_COLOR");
  o.color = !o.json && (o.color_mode == 1 ||
                        (o.color_mode == -1 && !(no_color && *no_color) && isatty(STDOUT_FILENO)));
  if (Status s = LoadAnnotations(path, &out->annotations); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return false;
  }
  RemapPaths(o.maps, out->annotations);
  std::string error;
  if (!FindEvent(out->annotations, o.event, &out->event, &error)) {
    std::cerr << "inprof: " << path << ": " << error << '\n';
    return false;
  }
  if (o.heat_method || o.threshold > 0) {
    // A threshold only means something to perf-heatmap's ranking, so it asks for it.
    AssignHeat(out->annotations, o.heat_method.value_or(HeatMethod::kPerfHeatmap),
               o.threshold > 0 ? o.threshold : out->annotations.heat_threshold);
  }
  out->index = std::make_unique<HeatIndex>(out->annotations, out->event, o.criterion, o.root);
  return true;
}

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
