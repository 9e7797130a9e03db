// `inprof symbolize-profile`: raw profiles into symbolized outputs, one Symbolizer for all
// of them (symbolize_profile.h).
#include "symbolize_profile.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "inprof/formats.h"
#include "inprof/merge.h"
#include "inprof/raw_profile.h"
#include "inprof/saturating.h"
#include "inprof/symbolize.h"
#include "inprof/symbolize_raw.h"
#include "input_files.h"

namespace inprof::viewer {
namespace {

constexpr const char* kHelp = R"(usage: inprof symbolize-profile [OPTIONS] RAW... -o DIR

Symbolizes raw profiles (*.inprofraw, docs/raw-profile.md: addresses and the module map a
process recorded, written with INPROF_OUTPUT=x.inprofraw or kept by inprof record
--keep-raw) and writes what the process would have written itself: annotation JSON,
perf.log, folded stacks, a flame graph and pprof. A directory stands for every *.inprofraw
file in it. Later or on another machine: the binaries are found at their recorded paths,
else by build-id (and name) under each --debug-dir, with separate debug files found the
usual way (build-id, .gnu_debuglink, /usr/lib/debug).

One RAW gives exactly the profile the process would have written. Several give one profile:
each process's stacks under a root frame named after the process (its command name, as
perf shows comm), every binary they share symbolized once. A raw file without its end (the
process was killed, or was still running) still counts: its samples are used and the
summary says it ended early.

options:
  -o, --output DIR      where the outputs go (created if missing; required)
      --debug-dir DIR   where to look for binaries and debug files (repeatable)
      --per-pid         root frames "comm-PID" (stackcollapse-perf --pid style), one
                        per process instead of one per command name
      --process-roots   a root frame per process even for one RAW
      --formats LIST    which outputs: json,log,folded,svg,pprof,speedscope (default: all)
  -q, --quiet           only errors and processes whose samples are missing
  -h, --help            this text

examples:
  inprof symbolize-profile app.inprofraw -o out
  inprof symbolize-profile --debug-dir ~/debug spool/ -o out
  inprof symbolize-profile --per-pid --formats folded,pprof a.inprofraw b.inprofraw -o out
)";

// The file names of the formats, by the names --formats takes.
const std::vector<std::pair<std::string, std::string>>& FormatNames() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"json", "profile.json"},     {"log", "perf.log"},
      {"folded", "profile.folded"}, {"svg", "flame.svg"},
      {"pprof", "profile.pb.gz"},   {"speedscope", "profile.speedscope.json"},
  };
  return names;
}

double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The raw files an input stands for: itself, or a directory's *.inprofraw files by name.
Status ExpandInput(const std::string& input, std::vector<std::string>* files) {
  struct stat st {};
  if (stat(input.c_str(), &st) != 0) {
    return Status::NotFound("cannot read " + input + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(input);
    return Status::Ok();
  }
  DIR* d = opendir(input.c_str());
  if (d == nullptr) return Status::Io("cannot read " + input + ": " + std::strerror(errno));
  std::vector<std::string> found;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 10 && name.ends_with(".inprofraw")) found.push_back(input + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  files->insert(files->end(), found.begin(), found.end());
  return Status::Ok();
}

// What names a process in the profile: its comm, else its program's file name.
std::string ProcessName(const RawProfile& raw) {
  if (!raw.comm.empty()) return raw.comm;
  const std::string& program = raw.meta.program;
  if (!program.empty()) return program.substr(program.rfind('/') + 1);
  return "pid " + std::to_string(raw.meta.pid);
}


int64_t FirstEventWeight(const RawProfile& raw) {
  int64_t sum = 0;
  for (const RawStack& stack : raw.stacks) {
    if (!stack.weights.empty()) AddSaturating(sum, stack.weights[0]);
  }
  return sum;
}

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", seconds);
  return text;
}

std::string Percent(int64_t part, int64_t total) {
  char text[32];
  std::snprintf(text, sizeof text, "%6.2f%%",
                total > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0);
  return text;
}

// Writes every output of `profile` into `dir`: folded stacks, perf.log and flame graphs hold
// one event, so with several events each gets its own file (profile.cpu.folded); annotation
// JSON last, so its health reports how long the other writes took.
Status WriteOutputs(Profile& profile, const std::string& dir, const std::vector<std::string>& names,
                    std::vector<std::string>* written) {
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return Status::Io("cannot create " + dir + ": " + std::strerror(errno));
  }
  std::vector<std::string> ordered;
  for (int json = 0; json < 2; ++json) {
    for (const std::string& name : names) {
      if ((FormatFromPath(name) == Format::kAnnotationJson) == (json == 1)) ordered.push_back(name);
    }
  }
  const double start = MonotonicSeconds();
  for (const std::string& name : ordered) {
    const std::optional<Format> format = FormatFromPath(name);
    if (!format) return Status::InvalidArgument("no output format is named like " + name);
    const bool all_events = *format == Format::kAnnotationJson || *format == Format::kPprof;
    std::vector<std::pair<std::string, size_t>> files;
    if (profile.events.size() <= 1 || all_events) {
      files.emplace_back(dir + "/" + name, 0);
    } else {
      for (size_t e = 0; e < profile.events.size(); ++e) {
        files.emplace_back(dir + "/" + InsertBeforeExtension(name, profile.events[e].name), e);
      }
    }
    for (const auto& [file, event] : files) {
      ExportOptions options;
      options.event = event;
      // The profile of a recorded tree is private like the processes' own outputs (and
      // perf.data): 0600 whatever the umask (docs/security.md).
      options.mode = 0600;
      profile.health.write_seconds = MonotonicSeconds() - start;
      if (Status s = WriteProfileFile(profile, *format, file, options); !s.ok()) return s;
      written->push_back(file);
    }
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& DefaultOutputNames() {
  static const std::vector<std::string> names = {"profile.json",  "perf.log",
                                                 "profile.folded", "flame.svg",
                                                 "profile.pb.gz", "profile.speedscope.json"};
  return names;
}

Status SymbolizeProfiles(const SymbolizeProfileOptions& o, SymbolizeProfileReport* report) {
  std::vector<std::string> files;
  for (const std::string& input : o.inputs) {
    if (Status s = ExpandInput(input, &files); !s.ok()) return s;
  }
  if (files.empty()) {
    if (o.recording) return Status::NotFound("no process took a sample: nothing written");
    return Status::NotFound("no raw profiles (*.inprofraw) in " +
                            (o.inputs.empty() ? std::string("the input") : o.inputs[0]));
  }

  // Every file first: a malformed one fails the run before anything is symbolized.
  std::vector<std::pair<RawProfile, std::string>> raws;
  for (const std::string& file : files) {
    // Bounded, regular files or pipes named on the command line (input_files.h); a FIFO
    // found in a directory is refused rather than waited on.
    ProfileFile bytes;
    const bool named = std::find(o.inputs.begin(), o.inputs.end(), file) != o.inputs.end();
    RawProfile raw;
    Status s = bytes.Load(file, /*pipes=*/named);
    if (s.ok()) {
      std::istringstream in{std::string(bytes.text())};
      s = ReadRawProfile(in, file, &raw);
    }
    if (!s.ok()) {
      if (!o.recording) return s;
      report->notes.push_back(s.message() + " (left out)");
      continue;
    }
    raws.emplace_back(std::move(raw), file);
  }
  // The order processes started in: the command first, then its descendants.
  std::stable_sort(raws.begin(), raws.end(), [](const auto& a, const auto& b) {
    if (a.first.meta.start_time_ns != b.first.meta.start_time_ns) {
      return a.first.meta.start_time_ns < b.first.meta.start_time_ns;
    }
    return a.first.meta.pid < b.first.meta.pid;
  });

  const bool roots = o.process_roots || o.per_pid || files.size() > 1;
  SymbolizerOptions symbolizer_options;
  symbolizer_options.debug_dirs = o.debug_dirs;
  // The per-user cache by build-id: a compiler symbolized for yesterday's build answers
  // today's from it.
  symbolizer_options.cache_dir = DefaultSymbolCacheDir();
  Symbolizer symbolizer(symbolizer_options);
  std::vector<Profile> profiles;
  std::vector<std::string> root_names;
  const double start = MonotonicSeconds();
  for (auto& [raw, file] : raws) {
    ProcessRecord p;
    p.file = file;
    p.pid = raw.meta.pid;
    p.comm = ProcessName(raw);
    p.root = o.per_pid ? p.comm + "-" + std::to_string(p.pid) : p.comm;
    p.complete = raw.complete;
    p.stacks = raw.stacks.size();
    p.weight = FirstEventWeight(raw);
    if (!raw.complete && raw.meta.pid == 0) {
      // Cut before its header: the process is not known, only the file.
      report->notes.push_back(file + ": cut before its header (its process ended while "
                                     "writing it); no samples");
    } else if (!raw.complete) {
      report->notes.push_back(
          "process " + std::to_string(p.pid) + " (" + p.comm +
          "): ended before writing its profile (killed?); " +
          (p.stacks == 0 ? std::string("no samples") : std::to_string(p.weight) + " samples kept"));
    }
    report->processes.push_back(p);
    if (raw.stacks.empty()) continue;  // nothing to symbolize, no root frame of its own
    symbolizer.UseRecordedModules(raw.modules);
    profiles.push_back(SymbolizeRawProfile(raw, symbolizer));
    root_names.push_back(p.root);
  }
  symbolizer.SaveCache();
  const SymbolizerStats stats = symbolizer.Stats();
  report->seconds = MonotonicSeconds() - start;
  report->binaries = stats.files;
  report->addresses = stats.addresses;
  report->cache_hits = stats.cache_hits;
  report->warnings = symbolizer.Warnings();

  if (profiles.empty()) {
    return Status::NotFound(raws.size() == 1 && !o.recording
                                ? "the process took no sample: nothing written"
                                : "no process took a sample: nothing written");
  }
  Profile profile =
      roots ? MergeProfiles(std::move(profiles), root_names, "process") : std::move(profiles.front());
  // The recorder's health: what it symbolized and at what cost, then what is missing.
  profile.health.symbolize_seconds = report->seconds;
  profile.health.symbol_cache_hits = stats.cache_hits;
  profile.health.symbol_cache_misses = stats.cache_misses;
  std::vector<std::string>& warnings = profile.health.warnings;
  warnings.push_back(
      "symbolized by inprof symbolize-profile: " + std::to_string(raws.size()) +
      (raws.size() == 1 ? " process, " : " processes, ") + std::to_string(report->binaries) +
      (report->binaries == 1 ? " binary, " : " binaries, ") + std::to_string(report->addresses) +
      " distinct addresses in " + Seconds(report->seconds) + " s (" +
      std::to_string(report->cache_hits) + " from the symbol cache)");
  for (const std::string& note : report->notes) warnings.push_back(note);
  for (const std::string& warning : report->warnings) warnings.push_back(warning);

  const std::vector<std::string>& names = o.outputs.empty() ? DefaultOutputNames() : o.outputs;
  Status s = WriteOutputs(profile, o.dir, names, &report->written);
  report->profile = std::move(profile);
  return s;
}

void PrintProcessShares(const SymbolizeProfileReport& report, size_t limit, std::ostream& out) {
  struct Group {
    std::string root;
    int64_t weight = 0;
    size_t processes = 0;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> index;
  int64_t total = 0;
  // A process that exec'd wrote one raw profile per image: it is one process (one pid) whose
  // frames, and root frame, change at the exec.
  std::set<int64_t> pids;
  for (const ProcessRecord& p : report.processes) {
    if (p.stacks == 0) continue;
    pids.insert(static_cast<int64_t>(p.pid));
    auto [it, added] = index.emplace(p.root, groups.size());
    if (added) groups.push_back({p.root, 0, 0});
    AddSaturating(groups[it->second].weight, p.weight);
    groups[it->second].processes += 1;
    AddSaturating(total, p.weight);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.weight > b.weight; });
  const std::string event =
      report.profile.events.empty() ? std::string("samples") : report.profile.events[0].name;
  const size_t sampled = pids.size();
  out << "Processes by " << event << " (" << sampled << (sampled == 1 ? " process" : " processes")
      << " in the profile)\n";
  for (size_t i = 0; i < groups.size() && i < limit; ++i) {
    out << "  " << Percent(groups[i].weight, total) << "  " << groups[i].root;
    if (groups[i].processes > 1) out << " (" << groups[i].processes << " processes)";
    out << '\n';
  }
  if (groups.size() > limit) {
    int64_t rest = 0;
    size_t processes = 0;
    for (size_t i = limit; i < groups.size(); ++i) {
      AddSaturating(rest, groups[i].weight);
      processes += groups[i].processes;
    }
    std::string share = Percent(rest, total);
    share.erase(0, share.find_first_not_of(' '));
    out << "  and " << processes << " more " << (processes == 1 ? "process" : "processes") << ": "
        << share << '\n';
  }
}

void PrintNotes(const SymbolizeProfileReport& report, std::ostream& out) {
  for (const std::string& note : report.notes) out << "inprof: " << note << '\n';
  for (const std::string& warning : report.warnings) out << "inprof: warning: " << warning << '\n';
}

int RunSymbolizeProfile(const std::vector<std::string>& args) {
  SymbolizeProfileOptions o;
  std::string formats;
  bool quiet = false;
  std::vector<OptionSpec> specs = {
      Text({"-o", "--output"}, "a directory", &o.dir),
      {{"--debug-dir"},
       "a directory",
       [&o](const std::string& dir) {
         return !dir.empty() && (o.debug_dirs.push_back(dir), true);
       }},
      Flag({"--per-pid"}, &o.per_pid),
      Flag({"--process-roots"}, &o.process_roots),
      Text({"--formats"}, "a list of json, log, folded, svg, pprof, speedscope", &formats),
      Flag({"-q", "--quiet"}, &quiet),
  };
  bool help = false;
  if (Status s = ParseOptions(args[0], args, 1, specs, &o.inputs, &help); !s.ok()) {
    return UsageError(args[0], s.message());
  }
  if (help) {
    std::cout << kHelp;
    return 0;
  }
  if (o.inputs.empty()) return UsageError(args[0], "symbolize-profile needs RAW files");
  if (o.dir.empty()) return UsageError(args[0], "symbolize-profile needs -o DIR");
  if (!formats.empty()) {
    std::stringstream list(formats);
    for (std::string name; std::getline(list, name, ',');) {
      const auto& known = FormatNames();
      auto it = std::find_if(known.begin(), known.end(),
                             [&](const auto& entry) { return entry.first == name; });
      if (it == known.end()) {
        return UsageError(
            args[0],
            "--formats takes json, log, folded, svg, pprof and speedscope, not '" + name + "'");
      }
      o.outputs.push_back(it->second);
    }
  }

  SymbolizeProfileReport report;
  const Status s = SymbolizeProfiles(o, &report);
  PrintNotes(report, std::cerr);
  if (!s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return kExitBadInput;
  }
  if (quiet) return 0;
  std::cerr << "inprof: " << report.processes.size()
            << (report.processes.size() == 1 ? " process" : " processes") << ", " << report.binaries
            << (report.binaries == 1 ? " binary, " : " binaries, ") << report.addresses
            << " distinct addresses in " << Seconds(report.seconds) << " s (" << report.cache_hits
            << " from the symbol cache)\n";
  std::vector<std::string> written = report.written;
  std::sort(written.begin(), written.end());
  for (const std::string& file : written) std::cerr << "  " << file << '\n';
  if (report.processes.size() > 1) {
    std::cerr << '\n';
    PrintProcessShares(report, 5, std::cerr);
  }
  return 0;
}

}  // namespace inprof::viewer
