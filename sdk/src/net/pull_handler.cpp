// The pull endpoint's routes (see pull_handler.h). Control path.
#include "inprof/annotation_json.h"
#include "inprof/flame.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "inprof/pprof.h"
#include "inprof/profile_filter.h"
#include "inprof/speedscope.h"
#include "net/pull_handler.h"

#include <charconv>
#include <initializer_list>
#include <span>
#include <sstream>

namespace inprof::internal {
namespace {

HttpResponse Error(int status, std::string message) {
  HttpResponse r;
  r.status = status;
  r.body = "inprof: " + std::move(message) + "\n";
  return r;
}

enum class Output { kPprof, kJson, kFolded, kPerfLog, kFlame, kSpeedscope };

// Which events a route serves: all of them, only the allocation events (as Go's heap and
// allocs profiles), only the lock events (as Go's mutex profile) or only the condition waits
// (as Go's block profile, which in Go holds mutex waits too: here they are in the mutex one).
enum class Events { kAll, kHeap, kAllocs, kMutex, kBlock };

struct Route {
  std::string_view path;
  Output output;
  bool capture_by_default;  // pprof's profile endpoint always captures, as Go's does
  Events events = Events::kAll;
};

constexpr Route kRoutes[] = {
    {"/debug/pprof/profile", Output::kPprof, true},
    {"/debug/pprof/heap", Output::kPprof, false, Events::kHeap},
    {"/debug/pprof/allocs", Output::kPprof, false, Events::kAllocs},
    {"/debug/pprof/mutex", Output::kPprof, false, Events::kMutex},
    {"/debug/pprof/block", Output::kPprof, false, Events::kBlock},
    {"/debug/inprof/profile.pb.gz", Output::kPprof, false},
    {"/debug/inprof/annotations", Output::kJson, false},
    {"/debug/inprof/folded", Output::kFolded, false},
    {"/debug/inprof/perf.log", Output::kPerfLog, false},
    {"/debug/inprof/flame.svg", Output::kFlame, false},
    {"/debug/inprof/speedscope.json", Output::kSpeedscope, false},
};

std::string Index() {
  return "inprof pull endpoint\n\n"
         "/debug/pprof/profile?seconds=N   pprof of the next N seconds (default 30)\n"
         "/debug/pprof/heap                sampled allocations (INPROF_EVENTS=alloc): inuse_*\n"
         "                                 shown first; ?seconds=N: alloc_* of the next N\n"
         "/debug/pprof/allocs              the same, alloc_space shown first\n"
         "/debug/pprof/mutex               sampled lock contention (INPROF_EVENTS=lock):\n"
         "                                 contentions and delay; ?seconds=N: the next N\n"
         "/debug/pprof/block               sampled condition waits (INPROF_EVENTS=cond), as\n"
         "                                 contentions and delay; ?seconds=N: the next N\n"
         "/debug/inprof/profile.pb.gz      pprof of the profile so far (?seconds=N: the next N)\n"
         "/debug/inprof/annotations        annotation JSON (same parameters)\n"
         "/debug/inprof/folded             folded stacks (?event=NAME, ?lines=1,\n"
         "                                 ?root=thread or ?root=label:KEY)\n"
         "/debug/inprof/perf.log           perf.log for perfanno.nvim (?event=NAME)\n"
         "/debug/inprof/flame.svg          interactive flame graph (?event=NAME)\n"
         "/debug/inprof/speedscope.json    per-thread samples in time order, for speedscope\n"
         "                                 (?event=NAME, ?seconds=N)\n";
}

bool ParseSeconds(const std::string& text, int max, int* seconds) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > max) {
    return false;
  }
  *seconds = value;
  return true;
}

}  // namespace

HttpResponse HandlePull(const HttpRequest& request, HttpServer::Context& context,
                        const PullSource& source, const PullOptions& options) {
  if (request.path == "/debug/pprof/" || request.path == "/debug/pprof" ||
      request.path == "/debug/inprof/" || request.path == "/debug/inprof" || request.path == "/") {
    if (request.method != "GET") {
      HttpResponse r = Error(405, "only GET is supported");
      r.headers.emplace_back("Allow", "GET");
      return r;
    }
    HttpResponse r;
    r.body = Index();
    return r;
  }
  const Route* route = nullptr;
  for (const Route& candidate : kRoutes) {
    if (request.path == candidate.path) route = &candidate;
  }
  if (route == nullptr)
    return Error(404, "no such endpoint: " + request.path + " (see /debug/inprof/)");
  if (request.method != "GET") {
    HttpResponse r = Error(405, request.method + " is not supported; use GET");
    r.headers.emplace_back("Allow", "GET");
    return r;
  }

  // Parameters: unknown ones are refused rather than ignored, so a typo does not silently
  // return something other than what was asked.
  std::optional<int> seconds;
  std::string event_name;
  bool lines = false;
  std::string root;
  for (const auto& [key, value] : request.query) {
    if (key == "seconds") {
      int s = 0;
      if (!ParseSeconds(value, options.max_seconds, &s)) {
        return Error(400, "seconds: expected a whole number from 1 to " +
                              std::to_string(options.max_seconds) + ", got '" + value + "'");
      }
      seconds = s;
    } else if (key == "event" && route->output != Output::kPprof &&
               route->output != Output::kJson) {
      event_name = value;
    } else if (key == "lines" && route->output == Output::kFolded) {
      if (value != "0" && value != "1" && !value.empty()) {
        return Error(400, "lines: expected 0 or 1, got '" + value + "'");
      }
      lines = value != "0";
    } else if (key == "root" && route->output == Output::kFolded) {
      if (value != "thread" && !(value.starts_with("label:") && value.size() > 6 &&
                                 value.size() <= 70 &&
                                 value.find_first_of(" \t\r\n;") == std::string::npos)) {
        return Error(400, "root: expected thread or label:KEY, got '" + value + "'");
      }
      root = value;
    } else if (key == "debug" || key == "gc") {
      // Go's pprof handlers take these; nothing to do for a CPU profile.
    } else {
      return Error(400, "unknown parameter '" + key + "' for " + request.path);
    }
  }
  if (!seconds && route->capture_by_default) seconds = options.default_seconds;

  Profile profile;
  if (seconds) {
    const uint64_t capture = source.start_capture();
    if (capture == 0) {
      HttpResponse r = Error(503,
                             "cannot start another capture now (too many running, or the "
                             "memory budget is exhausted); try again later");
      r.headers.emplace_back("Retry-After", "5");
      return r;
    }
    const HttpServer::Context::Wait waited = context.WaitFor(std::chrono::seconds(*seconds));
    // Ended in every case: a tap left open would keep its memory until the profiler stops.
    std::optional<Profile> captured = source.finish_capture(capture);
    if (waited == HttpServer::Context::Wait::kClientGone) {
      HttpResponse r;
      r.abandoned = true;  // nobody is left to read it
      return r;
    }
    if (waited == HttpServer::Context::Wait::kStopped) {
      return Error(503, "the profiler stopped during the capture");
    }
    if (!captured) return Error(503, "the capture was lost (the profiler stopped)");
    profile = std::move(*captured);
  } else {
    profile = source.snapshot();
  }

  if (route->events != Events::kAll) {
    // Go's order: alloc_objects, alloc_space, inuse_objects, inuse_space; the heap profile
    // puts what is live first (pprof shows the first), the allocs profile what was allocated.
    const char* const order_heap[] = {"inuse_space", "inuse_objects", "alloc_space",
                                      "alloc_objects"};
    const char* const order_allocs[] = {"alloc_space", "alloc_objects", "inuse_space",
                                        "inuse_objects"};
    // Go's mutex profile: contentions, then delay (the pprof writer shows the delay).
    const char* const order_mutex[] = {"lock_contentions", "lock_delay"};
    const char* const order_block[] = {"cond_waits", "cond_delay"};
    const std::span<const char* const> order =
        route->events == Events::kHeap     ? std::span<const char* const>(order_heap)
        : route->events == Events::kAllocs ? std::span<const char* const>(order_allocs)
        : route->events == Events::kMutex  ? std::span<const char* const>(order_mutex)
                                           : std::span<const char* const>(order_block);
    std::vector<size_t> keep;
    for (const char* name : order) {
      for (size_t e = 0; e < profile.events.size(); ++e) {
        if (profile.events[e].name == name) keep.push_back(e);
      }
    }
    if (keep.empty() && route->events == Events::kMutex) {
      return Error(404, "lock contention is not sampled (start the profiler with "
                        "INPROF_EVENTS=lock, or events=cpu,lock)");
    }
    if (keep.empty() && route->events == Events::kBlock) {
      return Error(404, "condition waits are not sampled (start the profiler with "
                        "INPROF_EVENTS=cond, or events=cpu,lock,cond)");
    }
    if (keep.empty()) {
      return Error(404, "allocations are not sampled (start the profiler with "
                        "INPROF_EVENTS=alloc, or events=cpu,alloc)");
    }
    profile = KeepEvents(profile, keep);
    // Go's block profile names its types as the mutex profile does.
    if (route->events == Events::kBlock) {
      for (EventInfo& e : profile.events) e.name = e.name == "cond_waits" ? "contentions" : "delay";
    }
  }

  size_t event = 0;
  if (!event_name.empty()) {
    bool found = false;
    std::string known;
    for (size_t e = 0; e < profile.events.size(); ++e) {
      if (profile.events[e].name == event_name) {
        event = e;
        found = true;
      }
      known += (e ? ", " : "") + profile.events[e].name;
    }
    if (!found) return Error(400, "event: no event '" + event_name + "' (profiled: " + known + ")");
  }

  HttpResponse r;
  std::ostringstream out;
  ExportOptions export_options;
  export_options.event = event;
  export_options.folded_lines = lines;
  export_options.folded_root = root;
  switch (route->output) {
    case Output::kPprof:
      if (!WritePprof(profile, out)) return Error(500, "cannot encode the profile");
      r.content_type = "application/octet-stream";
      r.headers.emplace_back("Content-Disposition", "attachment; filename=\"profile\"");
      break;
    case Output::kJson:
      WriteAnnotationJson(profile, out);
      r.content_type = "application/json";
      break;
    case Output::kFolded:
      WriteFolded(profile, export_options, out);
      break;
    case Output::kPerfLog:
      WritePerfLog(profile, export_options, out);
      break;
    case Output::kSpeedscope:
      WriteSpeedscope(profile, export_options, out);
      r.content_type = "application/json";
      break;
    case Output::kFlame: {
      FlameOptions flame;
      flame.event = event;
      std::string svg;
      Status s = WriteFlameSvg(profile, flame, &svg);
      if (!s.ok()) return Error(500, s.message());
      r.content_type = "image/svg+xml";
      r.body = std::move(svg);
      return r;
    }
  }
  r.body = std::move(out).str();
  return r;
}

}  // namespace inprof::internal
