// Writes a large synthetic annotation JSON (or folded / perf.log) for the viewer benchmarks,
// through the real writers, so the file has exactly the shape the runtime produces.
//
//   inprof_viewer_profile_gen OUT.json [SCALE]
//
// The profile is a call graph of files x functions x lines with long C++-style names, two
// events (cpu in nanoseconds, wall), inlined frames, functions without source, and stacks
// that are random walks through the graph with a skewed (hot path) choice of callees. The
// walk uses its own generator (splitmix64) rather than <random>'s distributions, whose
// output is not specified across standard libraries: the same SCALE gives the same bytes
// everywhere. SCALE 1 is about 100 MB of annotation JSON.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "inprof/formats.h"

namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n).
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>((Next() >> 32) * n >> 32); }
  // Skewed towards 0: a few entries take most picks, as in a real profile's hot paths.
  uint32_t Skewed(uint32_t n) {
    const double u = static_cast<double>(Next() >> 11) / static_cast<double>(1ULL << 53);
    return static_cast<uint32_t>(u * u * u * n) % n;
  }

 private:
  uint64_t state_;
};

struct Function {
  uint32_t first_frame = 0;  // frames of lines first_line .. first_line + lines - 1
  uint32_t lines = 0;
  bool inlined = false;
  std::vector<uint32_t> callees;     // function indices
  std::vector<uint32_t> call_sites;  // the frame (line) each callee is called from
};

const char* const kNamespaces[] = {"engine", "net", "storage", "query", "render", "util"};
const char* const kClasses[] = {"Parser",  "Planner",   "Executor", "Cache", "Buffer",
                                "Session", "Scheduler", "Encoder",  "Index", "Allocator"};
const char* const kMethods[] = {"run",    "step",  "flush", "lookup",  "insert",  "decode",
                                "encode", "visit", "merge", "compact", "resolve", "emit"};
const char* const kArgs[] = {"(int)",
                             "(std::basic_string_view<char, std::char_traits<char> >)",
                             "(unsigned long, bool)",
                             "()",
                             "(std::vector<int, std::allocator<int> > const&)",
                             "(char const*, unsigned long)"};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s OUT.json|OUT.folded|OUT.log [SCALE]\n", argv[0]);
    return 2;
  }
  const double scale = argc == 3 ? std::atof(argv[2]) : 1.0;
  if (!(scale > 0 && scale <= 100)) {
    std::fprintf(stderr, "SCALE must be in (0, 100]\n");
    return 2;
  }
  const auto files = static_cast<uint32_t>(1850 * scale) + 1;
  const uint32_t functions_per_file = 24;
  const auto samples = static_cast<uint32_t>(660000 * scale) + 1;

  SplitMix64 rng(20261122);
  inprof::Profile p;
  p.meta = {"/opt/app/bin/server", 4242, 1763800000000000000, 60000000000};
  p.events = {{"cpu", "nanoseconds", 10101010, 99, 0}, {"wall", "nanoseconds", 10101010, 99, 0}};
  p.health.engine = "timer";
  p.health.engine_reason = "per-thread CPU timers";
  p.health.unwinder = "dwarf";
  p.health.requested_hz = 99;
  p.health.achieved_hz = 98.7;
  p.health.samples = samples;
  p.health.threads_seen = 48;

  std::vector<Function> fns;
  for (uint32_t f = 0; f < files; ++f) {
    const std::string ns = kNamespaces[f % 6];
    const std::string path = "/home/dev/src/server/" + ns + "/module_" + std::to_string(f) +
                             (f % 5 == 0 ? ".h" : ".cpp");
    uint32_t line = 20 + rng.Below(40);
    for (uint32_t k = 0; k < functions_per_file; ++k) {
      Function fn;
      fn.first_frame = static_cast<uint32_t>(p.frames.size());
      fn.lines = 4 + rng.Below(20);
      fn.inlined = rng.Below(6) == 0;
      const std::string name = ns + "::" + kClasses[rng.Below(10)] + "<" + std::to_string(f) +
                               ">::" + kMethods[rng.Below(12)] + "_" + std::to_string(k) +
                               kArgs[rng.Below(6)];
      for (uint32_t l = 0; l < fn.lines; ++l) {
        inprof::Frame frame;
        frame.function = name;
        frame.file = path;
        frame.line = line + l;
        frame.module = "/opt/app/bin/server";
        frame.kind = fn.inlined ? inprof::FrameKind::kInlined : inprof::FrameKind::kNative;
        p.frames.push_back(std::move(frame));
      }
      line += fn.lines + 2 + rng.Below(30);
      fns.push_back(std::move(fn));
    }
  }
  // Library functions without debug information.
  const auto no_source_first = static_cast<uint32_t>(p.frames.size());
  const uint32_t no_source = 200;
  for (uint32_t i = 0; i < no_source; ++i) {
    inprof::Frame frame;
    frame.function = "libc.so.6+0x" + std::to_string(0x9a000 + 0x40 * i);
    frame.module = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    p.frames.push_back(std::move(frame));
  }
  const auto n = static_cast<uint32_t>(fns.size());
  for (Function& fn : fns) {
    const uint32_t callees = 1 + rng.Below(4);
    for (uint32_t i = 0; i < callees; ++i) {
      fn.callees.push_back(rng.Below(n));
      fn.call_sites.push_back(fn.first_frame + rng.Below(fn.lines));
    }
  }

  int64_t cpu_total = 0, wall_total = 0;
  for (uint32_t s = 0; s < samples; ++s) {
    inprof::Sample sample;
    uint32_t fn = rng.Skewed(n);
    const uint32_t depth = 4 + rng.Below(28);
    for (uint32_t d = 0; d + 1 < depth; ++d) {
      const Function& f = fns[fn];
      const uint32_t call = rng.Skewed(static_cast<uint32_t>(f.callees.size()));
      sample.frames.push_back(f.call_sites[call]);
      fn = f.callees[call];
    }
    // The leaf: lines near the top of a function are hotter, as loops usually are.
    sample.frames.push_back(fns[fn].first_frame + rng.Skewed(fns[fn].lines));
    if (rng.Below(8) == 0) sample.frames.push_back(no_source_first + rng.Skewed(no_source));
    const int64_t ticks = 1 + rng.Below(3);
    const int64_t cpu = ticks * 10101010;
    const int64_t wall = (ticks + rng.Below(2)) * 10101010;
    sample.weights = {cpu, wall};
    cpu_total += cpu;
    wall_total += wall;
    p.samples.push_back(std::move(sample));
  }
  p.events[0].total_weight = cpu_total;
  p.events[1].total_weight = wall_total;

  const std::string out = argv[1];
  const std::optional<inprof::Format> format = inprof::FormatFromPath(out);
  if (!format) {
    std::fprintf(stderr, "%s: not a .json, .folded or .log name\n", out.c_str());
    return 2;
  }
  inprof::ExportOptions options;
  options.folded_lines = true;
  const inprof::Status s = inprof::WriteProfileFile(p, *format, out, options);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
