// Writes the speedscope file the browser test loads into the real speedscope app: a profile
// built by hand, so the test knows exactly what the app must show. Two named threads sampled
// at 100 Hz (one period, 10 ms, per signal), each with its own functions at known file:line,
// interleaved on the timeline; worker-7 has more CPU time, so the file opens on it.
//
//   inprof_speedscope_fixture OUT.speedscope.json
#include <cstdio>
#include <string>
#include <vector>

#include "inprof/formats.h"

namespace {

using inprof::Frame;
using inprof::FrameKind;
using inprof::Profile;

uint32_t AddFrame(Profile& p, const char* function, const char* file, uint32_t line,
                  FrameKind kind = FrameKind::kNative) {
  Frame f;
  f.function = function;
  f.file = file;
  f.line = line;
  f.kind = kind;
  p.frames.push_back(f);
  return static_cast<uint32_t>(p.frames.size() - 1);
}

Profile Build() {
  Profile p;
  p.meta.program = "/opt/demo/bin/server";
  p.meta.pid = 4242;
  p.meta.start_time_ns = 1700000000000000000;
  p.meta.duration_ns = 200000000;
  p.events.push_back({"cpu", "nanoseconds", 10000000, 100, 0});
  p.threads = {{101, "main-loop"}, {107, "worker-7"}};

  const uint32_t main = AddFrame(p, "main", "/src/demo/main.cpp", 12);
  const uint32_t loop = AddFrame(p, "event_loop()", "/src/demo/loop.cpp", 40);
  const uint32_t handle = AddFrame(p, "handle_request(Request&)", "/src/demo/handler.cpp", 88);
  const uint32_t parse =
      AddFrame(p, "parse_header(std::string_view)", "/src/demo/parse.h", 17, FrameKind::kInlined);
  const uint32_t worker = AddFrame(p, "worker_main(void*)", "/src/demo/worker.cpp", 9);
  const uint32_t compress =
      AddFrame(p, "compress_block(Block const&)", "/src/demo/compress.cpp", 120);
  const uint32_t crc = AddFrame(p, "crc32_update", "/src/demo/crc.cpp", 33);

  // Signals: main-loop 7 (70 ms), worker-7 13 (130 ms).
  struct Stack {
    std::vector<uint32_t> frames;
    int64_t tid;
  };
  const std::vector<Stack> stacks = {
      {{main, loop}, 101},                 // 0
      {{main, loop, handle}, 101},         // 1
      {{main, loop, handle, parse}, 101},  // 2
      {{worker, compress}, 107},           // 3
      {{worker, compress, crc}, 107},      // 4
  };
  for (const Stack& s : stacks) p.samples.push_back({s.frames, {0}, s.tid, 0});
  // One signal every 5 ms, the threads interleaved (the sample each signal added to).
  const std::vector<uint32_t> order = {0, 3, 1, 4, 2, 4, 1, 3, 2, 4, 0, 4, 1, 3, 4, 3, 4, 4, 3, 4};
  int64_t time_ns = 0;
  for (uint32_t s : order) {
    p.timeline.push_back({time_ns, s, 0, 1});
    p.samples[s].weights[0] += 1;
    p.events[0].total_weight += 1;
    time_ns += 5000000;
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inprof_speedscope_fixture OUT.speedscope.json\n");
    return 2;
  }
  const auto format = inprof::FormatFromPath(argv[1]);
  if (format != inprof::Format::kSpeedscope) {
    std::fprintf(stderr, "%s: not a *.speedscope.json name\n", argv[1]);
    return 2;
  }
  const inprof::Status s = inprof::WriteProfileFile(Build(), *format, argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
