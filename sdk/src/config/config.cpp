#include "config/config.h"

#include "inprof/formats.h"
#include "inprof/numbers.h"
#include "inprof/printable.h"

#include "config/events.h"
#include "net/http.h"
#include "net/push_client.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace inprof::internal {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

bool HasControl(std::string_view text) {
  for (char c : text) {
    if (IsControl(c)) return true;
  }
  return false;
}

// Text from the configuration as an error message may show it: control characters escaped
// (\xNN: a newline would forge a second line in a log, an escape sequence would drive the
// terminal), and cut after 200 bytes (the message names the value, it need not repeat it).
// A backslash is escaped too, so an escape in a message is always one Printable wrote.
std::string Printable(std::string_view text, size_t shown = 200) {
  return inprof::Printable(text, {.escape_backslash = true, .max_bytes = shown});
}

Status BadValue(std::string_view key, std::string_view value, std::string_view expected) {
  return Status::Error("invalid " + Printable(key) + "='" + Printable(value) + "': expected " +
                       std::string(expected));
}

// The whole of `text` as a finite number: strtod alone would stop at an embedded NUL.
bool ParseDouble(const std::string& text, double* out) {
  if (text.empty() || text.find('\0') != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A path from the configuration: not empty, no control characters (a newline in a file name
// breaks every line-based tool that lists it), at most kMaxConfigPath bytes.
bool IsConfigPath(std::string_view path) {
  return !path.empty() && path.size() <= kMaxConfigPath && !HasControl(path);
}

// "64M", "1G", "65536", "512K".
bool ParseBytes(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t scale = 1;
  char last = text.back();
  if (last == 'k' || last == 'K') scale = uint64_t{1} << 10;
  if (last == 'm' || last == 'M') scale = uint64_t{1} << 20;
  if (last == 'g' || last == 'G') scale = uint64_t{1} << 30;
  if (scale != 1) text.remove_suffix(1);
  uint64_t v = 0;
  if (!ParseUnsigned(text, &v) || v > UINT64_MAX / scale) return false;
  *out = v * scale;
  return true;
}

bool ParseBool(std::string_view text, bool* out) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") {
    *out = true;
    return true;
  }
  if (text == "0" || text == "false" || text == "no" || text == "off" || text.empty()) {
    *out = false;
    return true;
  }
  return false;
}

// "", "thread" or "label:KEY" with KEY a label key as inprof_label_set takes them.
bool ValidFoldedRoot(std::string_view text) {
  if (text.empty() || text == "thread") return true;
  if (!text.starts_with("label:")) return false;
  const std::string_view key = text.substr(6);
  if (key.empty() || key.size() > 64) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && ((c >= '0' && c <= '9') || c == '.'))) return false;
  }
  return true;
}

// One row of the table of configuration keys (kKeys below): how the value is read, the range
// it must be in, the field of Config it sets and the message a bad value gets, beside the
// default and help text the README's table of keys is generated from (ConfigKeysMarkdown).
struct ConfigKey;
using KeySetter = Status (*)(const ConfigKey& key, const std::string& value, Config* config,
                             bool check_outputs);

// The common shapes of value, read by SetKey from the row alone; kOther rows have a setter.
enum class Shape : uint8_t {
  kBool,    // ParseBool into `flag`
  kNumber,  // a finite number in [min, max] into `number`
  kCount,   // a decimal integer in [min, max] into `count`
  kBytes,   // a size ("64M") of at least min (and at most max when max is not 0) into `size`
  kOther,
};

struct ConfigKey {
  std::string_view name;
  Shape shape = Shape::kOther;
  // The accepted range, inclusive (0 as max: no upper bound); kOther setters may use it.
  // Doubles hold every bound exactly, and a count compared as a double keeps its order
  // against them.
  double min = 0;
  double max = 0;
  bool zero_too = false;  // 0 is accepted outside the range (window=0: one profile)
  bool size_range = false;  // a kOther row whose range is a size (shown as 64K, 1M)
  bool Config::*flag = nullptr;
  double Config::*number = nullptr;
  uint32_t Config::*count = nullptr;
  size_t Config::*size = nullptr;
  KeySetter set = nullptr;
  std::string_view expected;  // what a bad value is told is expected
  // The README's "default" and "meaning" columns, Markdown. "{range}" in help is replaced
  // by the range above, so the documented range is the checked one.
  std::string_view default_text;
  std::string_view help;
};

bool InRange(const ConfigKey& key, double v) {
  return (key.zero_too && v == 0) || (v >= key.min && (key.max == 0 || v <= key.max));
}

Status SetOutput(const ConfigKey&, const std::string& value, Config* config, bool check_outputs) {
  Status s = ParseOutputs(value, &config->outputs, check_outputs);
  if (!s.ok()) return Status::Error("invalid output: " + s.message());
  return Status::Ok();
}

Status SetOutputMode(const ConfigKey&, const std::string& value, Config* config, bool) {
  return ParseOutputMode(value, &config->output_mode);
}

Status SetUnwind(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (value == "fp" || value == "dwarf" || value == "auto") {
    config->unwind = value == "fp"      ? UnwindChoice::kFp
                     : value == "dwarf" ? UnwindChoice::kDwarf
                                        : UnwindChoice::kAuto;
    return Status::Ok();
  }
  return BadValue(key.name, value, key.expected);
}

Status SetDwarfBackend(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (value == "libunwind" || value == "libdwfl") {
    config->dwarf_backend =
        value == "libdwfl" ? DwarfBackendChoice::kLibdwfl : DwarfBackendChoice::kLibunwind;
    return Status::Ok();
  }
  return BadValue(key.name, value, key.expected);
}

// A size as kBytes reads it, rounded down to whole 8-byte words (the handler copies words).
Status SetStackBytes(const ConfigKey& key, const std::string& value, Config* config, bool) {
  uint64_t v = 0;
  if (!ParseBytes(value, &v) || !InRange(key, static_cast<double>(v))) {
    return BadValue(key.name, value, key.expected);
  }
  config->stack_bytes = static_cast<uint32_t>(v) & ~7u;
  return Status::Ok();
}

Status SetSignal(const ConfigKey&, const std::string& value, Config* config, bool) {
  return ParseSignal(value, &config->signal);
}

Status SetEvents(const ConfigKey& key, const std::string& value, Config* config, bool) {
  std::vector<std::string> events;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string name = Trim(std::string_view(value).substr(start, end - start));
    start = end + 1;
    if (name.empty()) continue;
    // `alloc` is four events of the profile: what was allocated and what is still live.
    std::vector<std::string> names;
    // `lock` is two: how many waits for a held lock, and how long they took; `cond` the same
    // for condition waits.
    if (name == "alloc") {
      for (const char* e : kAllocEvents) names.emplace_back(e);
    } else if (name == "lock") {
      for (const char* e : kLockEvents) names.emplace_back(e);
    } else if (name == "cond") {
      for (const char* e : kCondEvents) names.emplace_back(e);
    } else if (FindEvent(name) == nullptr || IsHookEvent(FindEvent(name)->source)) {
      return BadValue(key.name, value, "a list of events from: " + KnownEventNames());
    } else {
      names.push_back(name);
    }
    for (const std::string& e : events) {
      if (e == names.front()) return BadValue(key.name, value, "each event once");
    }
    events.insert(events.end(), names.begin(), names.end());
  }
  if (events.empty() || events.size() > 11) {
    return BadValue(key.name, value, "between 1 and 8 events, e.g. cpu,wall");
  }
  config->events = std::move(events);
  return Status::Ok();
}

Status SetEngine(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (value == "auto" || value == "perf" || value == "timer" || value == "itimer") {
    config->engine = value == "perf"     ? EngineChoice::kPerf
                     : value == "timer"  ? EngineChoice::kTimer
                     : value == "itimer" ? EngineChoice::kItimer
                                         : EngineChoice::kAuto;
    return Status::Ok();
  }
  return BadValue(key.name, value, key.expected);
}

Status SetFoldedRoot(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (!ValidFoldedRoot(value)) return BadValue(key.name, value, key.expected);
  config->folded_root = value;
  return Status::Ok();
}

Status SetSymbolCache(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (!IsConfigPath(value)) return BadValue(key.name, value, key.expected);
  config->symbol_cache = value;
  return Status::Ok();
}

// Network outputs: checked here so a typo fails at start, not at the first window. Their
// values end up in requests and headers: no control characters, whatever the parsers of
// each allow.
Status NoControl(const ConfigKey& key, const std::string& value) {
  if (HasControl(value)) return BadValue(key.name, value, "a value without control characters");
  return Status::Ok();
}

Status SetHttp(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (Status s = NoControl(key, value); !s.ok()) return s;
  config->http.clear();
  if (value.empty()) return Status::Ok();
  ListenAddress address;
  Status s = ParseListenAddress(value, &address);
  if (!s.ok()) return Status::Error("invalid http: " + s.message());
  config->http = address.text;
  return Status::Ok();
}

Status SetHttpToken(const ConfigKey& key, const std::string& value, Config* config, bool) {
  // RFC 6750's token68 characters, no ',' (it would end the value in a configuration
  // string); 16 or more so it cannot be guessed by trying. The value is never shown.
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("-._~+/=").find(c) == std::string_view::npos) {
      return BadValue(key.name, "(not shown)",
                      "a bearer token of letters, digits and - . _ ~ + / = only");
    }
  }
  if (!value.empty() && (value.size() < 16 || value.size() > 4096)) {
    return BadValue(key.name, "(not shown)", "a bearer token of 16 to 4096 characters");
  }
  config->http_token = value;
  return Status::Ok();
}

Status SetHttpHosts(const ConfigKey& key, const std::string& value, Config* config, bool) {
  config->http_hosts.clear();
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string name = Trim(std::string_view(value).substr(start, end - start));
    start = end + 1;
    if (name.empty()) continue;
    for (char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
        return BadValue(key.name, value,
                        "host names (letters, digits, '-' and '.') separated by ','");
      }
    }
    if (name.size() > 253 || config->http_hosts.size() >= kMaxConfigListItems) {
      return BadValue(key.name, value, "at most 64 host names of at most 253 characters each");
    }
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    config->http_hosts.push_back(name);
  }
  return Status::Ok();
}

Status SetPushUrl(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (Status s = NoControl(key, value); !s.ok()) return s;
  config->push_url.clear();
  if (value.empty()) return Status::Ok();
  HttpUrl url;
  Status s = ParseHttpUrl(value, &url);
  if (!s.ok()) return Status::Error("invalid push_url: " + s.message());
  config->push_url = value;
  return Status::Ok();
}

Status SetAppName(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (Status s = NoControl(key, value); !s.ok()) return s;
  Status s = CheckAppName(value);
  if (!s.ok()) return Status::Error("invalid app_name: " + s.message());
  config->app_name = value;
  return Status::Ok();
}

Status SetLabels(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (Status s = NoControl(key, value); !s.ok()) return s;
  Status s = ParsePushLabels(value, &config->labels);
  if (!s.ok()) return Status::Error("invalid labels: " + s.message());
  return Status::Ok();
}

Status SetTenant(const ConfigKey& key, const std::string& value, Config* config, bool) {
  if (HasControl(value) || value.size() > 256) return BadValue(key.name, value, key.expected);
  config->tenant = value;
  return Status::Ok();
}

Status SetPathMap(const ConfigKey& key, const std::string& value, Config* config, bool) {
  config->path_map.clear();
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    std::string item = value.substr(start, end - start);
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        return BadValue(key.name, value, "OLD=NEW prefixes separated by ':'");
      }
      std::string from = item.substr(0, eq), to = item.substr(eq + 1);
      if (!IsConfigPath(from) || HasControl(to) || to.size() > kMaxConfigPath) {
        return BadValue(key.name, value,
                        "OLD=NEW prefixes of at most 4095 bytes without control characters");
      }
      if (config->path_map.size() >= kMaxConfigListItems) {
        return BadValue(key.name, value, "at most 64 OLD=NEW prefixes");
      }
      config->path_map.emplace_back(std::move(from), std::move(to));
    }
    start = end + 1;
  }
  return Status::Ok();
}

// Every key, in the order the "known keys" of an error message and the README list them.
// constexpr: ParseConfig may run from a constructor of the preloaded library, before any
// dynamic initialization of this file.
constexpr ConfigKey kKeys[] = {
    {.name = "output",
     .set = SetOutput,
     .default_text = "—",
     .help = "comma-separated outputs; format by name: `*.folded`, `perf.log` / `*.log`,"
             " `*.json` (annotation JSON), `*.svg` (flame graph), `*.pb.gz` (pprof),"
             " `*.speedscope.json` (per-thread samples in time order,"
             " [docs/speedscope.md](docs/speedscope.md)), `*.inprofraw` (unsymbolized,"
             " [docs/raw-profile.md](docs/raw-profile.md)). Setting it turns on autostart."},
    {.name = "events",
     .set = SetEvents,
     .default_text = "`cpu`",
     .help = "what to sample, comma-separated: `cpu` (CPU time), `wall` (wall-clock time of"
             " every thread, running or blocked: where threads wait), perf_event software"
             " events `task-clock`, `cpu-clock`, `page-faults`, `context-switches`"
             " (kernel-side: needs `perf_event_paranoid` ≤ 1), hardware events `cycles`,"
             " `instructions`, `cache-misses`, `branch-misses` (need a PMU; most VMs have"
             " none), `alloc` (sampled allocations: `alloc_objects`, `alloc_space`,"
             " `inuse_objects`, `inuse_space`; [docs/allocations.md](docs/allocations.md)),"
             " `lock` (sampled lock contention: `lock_contentions`, `lock_delay`;"
             " [docs/locks.md](docs/locks.md)), `cond` (sampled condition waits:"
             " `cond_waits`, `cond_delay`; [docs/locks.md](docs/locks.md))."
             " With several events, `*.folded` and `*.log` outputs are written once"
             " per event: `out.cpu.folded`, `perf.wall.log`; `*.json` holds them all. An"
             " event the machine cannot sample is an error that says why."},
    {.name = "frequency",
     .shape = Shape::kNumber,
     .min = 1,
     .max = 100000,
     .number = &Config::frequency,
     .expected = "a sampling rate in Hz between 1 and 100000, e.g. 99",
     .default_text = "99",
     .help = "samples per CPU-second per thread ({range}). Above the kernel tick (250 Hz"
             " here), samples are weighted by timer overruns so totals stay exact."},
    {.name = "wall_frequency",
     .shape = Shape::kNumber,
     .min = 1,
     .max = 10000,
     .number = &Config::wall_frequency,
     .expected = "a sampling rate in Hz between 1 and 10000, e.g. 19",
     .default_text = "19",
     .help = "rate of the `wall` event ({range}). Kept low on purpose: a wall sample"
             " interrupts blocked threads, and `nanosleep`, `poll`, `epoll_wait` and other"
             " calls that the kernel does not restart return `EINTR` (reads and writes on"
             " pipes and sockets are restarted)."},
    {.name = "engine",
     .set = SetEngine,
     .expected = "auto (the best that works here), perf (perf_event), timer (per-thread CPU"
                 " timers) or itimer (process-wide ITIMER_PROF)",
     .default_text = "`auto`",
     .help = "`timer`: per-thread CPU-time timers (work everywhere, charge syscall time to"
             " the caller, at most one signal per kernel tick, weighted by overruns)."
             " `perf`: per-thread perf_event task-clock (1–4 kHz accurate; needs"
             " `perf_event_paranoid` ≤ 2 or CAP_PERFMON; time inside syscalls is not"
             " sampled). `itimer`: one process-wide `ITIMER_PROF` (the last resort when"
             " `timer_create` fails; SIGPROF only; each sample weighted by its thread's CPU"
             " time since its previous one; a program that arms `ITIMER_PROF` itself takes"
             " it over and gets it back when it disarms it, and the summary says so)."
             " `auto`: perf where perf_event is allowed (at every rate: CPU timers fire on"
             " the kernel tick, so a loop whose round is near a multiple or divisor of it"
             " can be misread,"
             " [docs/platform-facts.md](docs/platform-facts.md#sampling-bias-loops-against-the-tick-short-threads)),"
             " else timers, else the itimer; the summary says which and why. Use `timer`"
             " when time inside system calls matters."},
    {.name = "unwind",
     .set = SetUnwind,
     .expected = "fp (frame pointers, walked in the handler), dwarf (the stack is copied in"
                 " the handler and unwound with DWARF CFI by the collector) or auto (both:"
                 " DWARF where frame pointers do not reach the root)",
     .default_text = "`auto`",
     .help = "`fp`: walk frame pointers in the handler (tens of ns; loses frames in code"
             " built without them, such as Debian's libc). `dwarf`: the handler copies the"
             " registers and the top `INPROF_STACK_BYTES` of the stack (~0.3 µs), the"
             " collector thread unwinds the copy with DWARF CFI (libunwind, ~15–20 µs per"
             " sample, off the program's threads). `auto`: both, keeping the DWARF chain"
             " unless frame pointers got further (code without unwind tables)."},
    {.name = "stack_bytes",
     .min = 1024,
     .max = 1 << 20,
     .size_range = true,
     .set = SetStackBytes,
     .expected = "a stack copy size between 1K and 1M, e.g. 16K",
     .default_text = "16K",
     .help = "stack copied per sample for `dwarf`/`auto` ({range}). Deeper stacks are cut"
             " at a `[truncated]` frame and counted. Memory: 8 copies per sampled thread,"
             " prepared when the thread is registered."},
    {.name = "dwarf_backend",
     .set = SetDwarfBackend,
     .expected = "libunwind (the default) or libdwfl (elfutils; less CPU per sample here,"
                 " see docs/unwinding.md)",
     .default_text = "`libunwind`",
     .help = "DWARF unwinder for `dwarf`/`auto`: `libunwind` (remote API over the copy) or"
             " `libdwfl` (elfutils; 17–26 % less CPU per sample here, see"
             " [docs/unwinding.md](docs/unwinding.md))"},
    {.name = "signal",
     .set = SetSignal,
     .default_text = "`SIGPROF`",
     .help = "signal used for sampling (`PROF`, `VTALRM`, `USR1`, `USR2`, `RTMIN+N`, or a"
             " number)"},
    {.name = "dither",
     .shape = Shape::kBool,
     .flag = &Config::dither,
     .expected = "1 or 0",
     .default_text = "1",
     .help = "perf_event time events (the `perf` engine, `task-clock`, `cpu-clock`) draw"
             " each sampling period at random around the mean, so sampling cannot lock step"
             " with a loop whose cycle is a multiple of the period; 0 keeps the period"
             " fixed ([docs/architecture.md](docs/architecture.md#sampling))"},
    {.name = "timer_jitter",
     .shape = Shape::kBool,
     .flag = &Config::timer_jitter,
     .expected = "1 or 0",
     .default_text = "0",
     .help = "timer engine (CPU time) only: 1 takes each sample a random fraction of a"
             " kernel tick after the CPU timer's signal (with a one-shot `CLOCK_MONOTONIC`"
             " timer), so loops whose round is near a multiple or divisor of the tick are"
             " not misread where perf_event is refused. For long-lived CPU-bound code: a"
             " thread that blocks often gets `EINTR` from some blocking calls and fewer,"
             " heavier samples, and short threads lose most of theirs"
             " ([docs/platform-facts.md](docs/platform-facts.md#sampling-bias-loops-against-the-tick-short-threads))"},
    {.name = "quiet",
     .shape = Shape::kBool,
     .flag = &Config::quiet,
     .expected = "1 or 0",
     .default_text = "0",
     .help = "1 suppresses the summary line (booleans accept `1`/`0`, `true`/`false`,"
             " `yes`/`no`, `on`/`off`)"},
    {.name = "follow_fork",
     .shape = Shape::kBool,
     .flag = &Config::follow_fork,
     .expected = "1 or 0",
     .default_text = "1",
     .help = "a `fork()`ed child profiles into `<name>.<pid>.<ext>`; 0: the child runs"
             " unprofiled"},
    {.name = "lazy",
     .shape = Shape::kBool,
     .flag = &Config::lazy,
     .expected = "1 or 0",
     .default_text = "1",
     .help = "the session (collector thread, module map, engines for every thread) starts"
             " at the first sample, so processes that take none cost ~0.1 ms; 0: at load."
             " Files-only profiles of the `cpu` event with `INPROF_ENGINE=auto`;"
             " [docs/lifecycle.md](docs/lifecycle.md)"},
    {.name = "symbol_cache",
     .set = SetSymbolCache,
     .expected = "a directory (at most 4095 bytes, no control characters) or off",
     .default_text = "`$XDG_CACHE_HOME/inprof/symbols` (`off` in continuous mode and with"
                     " `INPROF_HTTP`)",
     .help = "the per-user cache of symbolizer answers by build-id, or `off`;"
             " [docs/symbolizer.md](docs/symbolizer.md)"},
    {.name = "exit_timeout",
     .shape = Shape::kNumber,
     .min = 0.1,
     .max = 3600,
     .number = &Config::exit_timeout,
     .expected = "seconds from 0.1 to 3600 that the exit-time write may take",
     .default_text = "30",
     .help = "seconds ({range}) the write at `_exit`/`_Exit` may take before the process"
             " ends without it (the write may be stuck on a lock held by the code `_exit`"
             " interrupted); [docs/lifecycle.md](docs/lifecycle.md)"},
    {.name = "max_depth",
     .shape = Shape::kCount,
     .min = 1,
     .max = 128,
     .count = &Config::max_depth,
     .expected = "a number of frames between 1 and 128",
     .default_text = "128",
     .help = "frames per stack ({range}); deeper stacks get a `[truncated]` root frame"},
    {.name = "max_memory",
     .shape = Shape::kBytes,
     .min = 65536,
     .size = &Config::max_memory,
     .expected = "a size of at least 64K, e.g. 64M",
     .default_text = "64M",
     .help = "bytes ({range}) for the tables of distinct stacks (split between the current"
             " window, windows being written and pull captures:"
             " [docs/continuous.md](docs/continuous.md)); past it, samples go to an"
             " `[overflow]` stack and are counted"},
    {.name = "max_copy_memory",
     .shape = Shape::kBytes,
     .min = 1 << 20,
     .size = &Config::max_copy_memory,
     .expected = "a size of at least 1M, e.g. 64M",
     .default_text = "64M",
     .help = "bytes ({range}) for the stack-copy rings of all threads together"
             " (`dwarf`/`auto`); threads registered past it are sampled with frame pointers"
             " only and counted; [docs/unwinding.md](docs/unwinding.md)"},
    {.name = "alloc_rate",
     .shape = Shape::kBytes,
     .min = 1,
     .max = uint64_t{1} << 40,
     .size = &Config::alloc_rate,
     .expected = "a size between 1 and 1T, e.g. 512K",
     .default_text = "512K",
     .help = "event `alloc`: mean bytes allocated between two sampled allocations ({range});"
             " each sample is weighted so totals are estimates without bias:"
             " [docs/allocations.md](docs/allocations.md)"},
    {.name = "alloc_seed",
     .shape = Shape::kBytes,
     .min = 0,
     .size = &Config::alloc_seed,
     .expected = "a number, e.g. 1",
     .default_text = "0",
     .help = "event `alloc`: seed of the sampling draws (0: from time and thread); the same"
             " seed repeats a single-threaded run's samples"},
    {.name = "alloc_live_max",
     .shape = Shape::kCount,
     .min = 1024,
     .max = 1 << 26,
     .count = &Config::alloc_live_max,
     .expected = "a number of entries between 1024 and 67108864",
     .default_text = "262144",
     .help = "event `alloc`: sampled allocations tracked as live at once ({range}; 24 bytes"
             " each, mapped at the first start); past it, samples still count in `alloc_*` and"
             " are counted in the health block"},
    {.name = "leak_limit",
     .shape = Shape::kBytes,
     .min = 0,
     .size = &Config::leak_limit,
     .expected = "a size, e.g. 1M",
     .default_text = "0 (off)",
     .help = "event `alloc`: when the allocations still live at exit are estimated above this"
             " many bytes, the process exits with status 23 (after writing its outputs; the"
             " summary names the biggest stacks), so a test run can fail on leaks; 0: off"},
    {.name = "lock_rate",
     .shape = Shape::kCount,
     .min = 1,
     .max = 1000000000,
     .count = &Config::lock_rate,
     .expected = "a number of nanoseconds between 1 and 1000000000, e.g. 10000",
     .default_text = "10000",
     .help = "events `lock` and `cond`: nanoseconds ({range}); a wait for a held lock (or a"
             " condition) at least this long is always recorded, a shorter one with probability wait/rate and weighted so"
             " totals are estimates without bias: [docs/locks.md](docs/locks.md)"},
    {.name = "max_threads",
     .shape = Shape::kCount,
     .min = 1,
     .max = 65536,
     .count = &Config::max_threads,
     .expected = "a thread count between 1 and 65536",
     .default_text = "4096",
     .help = "threads sampled at once ({range})"},
    {.name = "path_map",
     .set = SetPathMap,
     .default_text = "—",
     .help = "`OLD=NEW[:OLD2=NEW2]` source-path prefix rewrites (build tree → your"
             " checkout)"},
    {.name = "window",
     .shape = Shape::kNumber,
     .min = 0.1,
     .max = 86400,
     .zero_too = true,
     .number = &Config::window,
     .expected = "seconds per window, from 0.1 to 86400 (0: one profile)",
     .default_text = "0",
     .help = "continuous mode: one profile per window of this many seconds ({range}), each"
             " output written as `<stem>.<UTC start>.<ext>` as the window closes, the last"
             " partial one at exit; [docs/continuous.md](docs/continuous.md)"},
    {.name = "keep",
     .shape = Shape::kCount,
     .min = 1,
     .max = 100000,
     .count = &Config::keep,
     .expected = "a number of windows from 1 to 100000",
     .default_text = "10",
     .help = "continuous mode: the newest window files kept per output ({range}; older ones"
             " this process wrote are removed)"},
    {.name = "http",
     .set = SetHttp,
     .default_text = "—",
     .help = "serve profiles while the program runs on `HOST:PORT` (loopback unless the"
             " address says otherwise): `go tool pprof"
             " http://127.0.0.1:6060/debug/pprof/profile?seconds=10`, `curl"
             " …/debug/inprof/folded`; [docs/network.md](docs/network.md). Setting it turns"
             " on autostart."},
    {.name = "http_token",
     .set = SetHttpToken,
     .default_text = "—",
     .help = "a bearer token (16+ characters, e.g. `openssl rand -hex 32`) every pull"
             " request must carry (`Authorization: Bearer …`, 401 otherwise); set it before"
             " binding anywhere but loopback"},
    {.name = "http_hosts",
     .set = SetHttpHosts,
     .default_text = "—",
     .help = "extra names accepted in a pull request's `Host` (comma-separated), for a"
             " reverse proxy or DNS name; other Hosts get 403"},
    {.name = "push_url",
     .set = SetPushUrl,
     .default_text = "—",
     .help = "push every window to Grafana Pyroscope at `http://HOST[:PORT][/PREFIX]`"
             " (`/ingest`, pprof; https is refused: push through a TLS-terminating proxy);"
             " bounded queue, jittered retries, oldest dropped and counted when the server"
             " is down; [docs/network.md](docs/network.md). Setting it turns on autostart."},
    {.name = "app_name",
     .set = SetAppName,
     .default_text = "the program's file name",
     .help = "application name of pushed profiles (letters, digits, `_`, `-`, `.`)"},
    {.name = "labels",
     .set = SetLabels,
     .default_text = "—",
     .help = "labels of pushed profiles, `k=v,k=v`; in a configuration string `k=v;k=v`"
             " (there a `,` ends the value). Names follow Prometheus rules; `service_name`"
             " and `__name__` are reserved"},
    {.name = "tenant",
     .set = SetTenant,
     .expected = "a tenant id of at most 256 bytes without control characters",
     .default_text = "—",
     .help = "tenant id sent as `X-Scope-OrgID` to multi-tenant Pyroscope / Grafana Cloud"},
    {.name = "output_mode",
     .set = SetOutputMode,
     .default_text = "0600",
     .help = "permission bits of every file the profiler writes (outputs, window files, raw"
             " profiles), exactly, whatever the umask; octal within 0666 that includes"
             " 0600, e.g. 0640 to share with the group;"
             " [docs/security.md](docs/security.md)"},
    {.name = "timeline",
     .shape = Shape::kBool,
     .flag = &Config::timeline,
     .expected = "1 or 0",
     .default_text = "1",
     .help = "keep every sample's time for the outputs that hold it (speedscope, raw),"
             " within a quarter of the stack tables' memory; past it samples still count"
             " but have no time, and the summary says so;"
             " [docs/timeline.md](docs/timeline.md)"},
    {.name = "folded_root",
     .set = SetFoldedRoot,
     .expected = "thread, label:KEY (KEY: letters, digits, '_' and '.', at most 64 bytes)"
                 " or empty",
     .default_text = "—",
     .help = "folded outputs get an extra root frame per stack: `thread` (the thread's"
             " name) or `label:KEY` (the value of label KEY, `[no KEY]` without it);"
             " [docs/labels.md](docs/labels.md)"},
};

// "1K-1M", "at least 64K", "0.1-3600": a row's range as the README shows it.
std::string RangeText(const ConfigKey& key) {
  const bool size = key.shape == Shape::kBytes || key.size_range;
  auto text = [size](double v) {
    char buf[32];
    const uint64_t n = static_cast<uint64_t>(v);
    if (size && n != 0 && n % (uint64_t{1} << 20) == 0) {
      std::snprintf(buf, sizeof buf, "%lluM", static_cast<unsigned long long>(n >> 20));
    } else if (size && n != 0 && n % 1024 == 0) {
      std::snprintf(buf, sizeof buf, "%lluK", static_cast<unsigned long long>(n >> 10));
    } else {
      std::snprintf(buf, sizeof buf, "%g", v);
    }
    return std::string(buf);
  };
  if (key.max == 0) return "at least " + text(key.min);
  return text(key.min) + "\u2013" + text(key.max);
}

// "output, events, frequency, ...": every key, as the error for an unknown one lists them.
std::string KnownKeys() {
  std::string out;
  for (const ConfigKey& key : kKeys) {
    if (!out.empty()) out += ", ";
    out += key.name;
  }
  return out;
}

// KnownKeys() as the environment spells them: "INPROF_OUTPUT, INPROF_EVENTS, ...".
std::string KnownEnvironmentVariables() {
  std::string out;
  for (const ConfigKey& key : kKeys) {
    if (!out.empty()) out += ", ";
    out += "INPROF_";
    for (char c : key.name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// Reads `value` as the row of `name` says and sets its field; NotFound for an unknown key.
Status SetKey(const std::string& name, const std::string& value, Config* config,
              bool check_outputs) {
  for (const ConfigKey& key : kKeys) {
    if (key.name != name) continue;
    switch (key.shape) {
      case Shape::kBool:
        if (!ParseBool(value, &(config->*key.flag))) return BadValue(key.name, value, key.expected);
        return Status::Ok();
      case Shape::kNumber: {
        double v = 0;
        if (!ParseDouble(value, &v) || !InRange(key, v)) {
          return BadValue(key.name, value, key.expected);
        }
        config->*key.number = v;
        return Status::Ok();
      }
      case Shape::kCount: {
        uint64_t v = 0;
        if (!ParseUnsigned(value, &v) || !InRange(key, static_cast<double>(v))) {
          return BadValue(key.name, value, key.expected);
        }
        config->*key.count = static_cast<uint32_t>(v);
        return Status::Ok();
      }
      case Shape::kBytes: {
        uint64_t v = 0;
        if (!ParseBytes(value, &v) || !InRange(key, static_cast<double>(v))) {
          return BadValue(key.name, value, key.expected);
        }
        config->*key.size = static_cast<size_t>(v);
        return Status::Ok();
      }
      case Shape::kOther:
        return key.set(key, value, config, check_outputs);
    }
  }
  return Status::NotFound("unknown configuration key '" + Printable(name) +
                          "' (known keys: " + KnownKeys() + ")");
}

}  // namespace

std::string ConfigKeysMarkdown() {
  std::string out = "| variable | default | meaning |\n|---|---|---|\n";
  for (const ConfigKey& key : kKeys) {
    std::string help(key.help);
    if (size_t at = help.find("{range}"); at != std::string::npos) {
      help.replace(at, 7, RangeText(key));
    }
    out += "| `INPROF_";
    for (char c : key.name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += "` | " + std::string(key.default_text) + " | " + help + " |\n";
  }
  return out;
}

std::string PathForEvent(const std::string& path, const std::string& event) {
  return InsertBeforeExtension(path, event);
}

std::string PathForProcess(const std::string& path, long pid) {
  return InsertBeforeExtension(path, std::to_string(pid));
}

std::string PathForExec(const std::string& path, int segment) {
  return segment <= 0 ? path : InsertBeforeExtension(path, "exec" + std::to_string(segment));
}

std::string PathForWindow(const std::string& path, const std::string& stamp) {
  return InsertBeforeExtension(path, stamp);
}

Status ParseOutputMode(std::string_view text, uint32_t* mode) {
  uint32_t bits = 0;
  bool ok = !text.empty() && text.size() <= 4;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '7';
    if (ok) bits = bits * 8 + static_cast<uint32_t>(c - '0');
  }
  // No execute, set-id or sticky bits on a data file; the owner must be able to read back
  // what the process wrote (inprof record reads its spool as the same user).
  if (!ok || (bits & ~0666u) != 0 || (bits & 0600u) != 0600u) {
    return BadValue("output_mode", text,
                    "octal permission bits within 0666 that include 0600 (the owner reads "
                    "and writes), e.g. 0600 (the default) or 0640");
  }
  *mode = bits;
  return Status::Ok();
}

Status ParseSignal(std::string_view text, int* signal) {
  std::string s = Trim(text);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  int number = -1;
  uint64_t v = 0;
  if (ParseUnsigned(s, &v)) {
    number = v < 1000 ? static_cast<int>(v) : -1;
  } else if (s == "PROF") {
    number = SIGPROF;
  } else if (s == "VTALRM") {
    number = SIGVTALRM;
  } else if (s == "ALRM") {
    number = SIGALRM;
  } else if (s == "USR1") {
    number = SIGUSR1;
  } else if (s == "USR2") {
    number = SIGUSR2;
  } else if (s.rfind("RTMIN", 0) == 0) {
    uint64_t off = 0;
    if (s == "RTMIN") {
      number = SIGRTMIN;
    } else if (s[5] == '+' && ParseUnsigned(s.substr(6), &off) && off < 64) {
      number = SIGRTMIN + static_cast<int>(off);
    }
  }
  // Signals whose default meaning a profiler must never take over: faults, termination,
  // job control, debuggers' traps, seccomp's SIGSYS, and the real-time signals below
  // SIGRTMIN that glibc keeps for itself (thread cancellation, and the set*id broadcast a
  // privileged program depends on).
  const bool reserved =
      number == SIGKILL || number == SIGSTOP || number == SIGSEGV || number == SIGBUS ||
      number == SIGILL || number == SIGFPE || number == SIGABRT || number == SIGCHLD ||
      number == SIGTERM || number == SIGINT || number == SIGPIPE || number == SIGQUIT ||
      number == SIGTRAP || number == SIGSYS || number == SIGCONT || number == SIGTSTP ||
      number == SIGTTIN || number == SIGTTOU || (number >= 32 && number < SIGRTMIN);
  if (number < 1 || number > SIGRTMAX || reserved) {
    return Status::Error("invalid signal='" + Printable(text) +
                         "': expected PROF, VTALRM, USR1, USR2, RTMIN+N or a free signal number");
  }
  *signal = number;
  return Status::Ok();
}

Status ParseOutputs(std::string_view text, std::vector<std::string>* outputs, bool check_writable) {
  std::vector<std::string> result;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = FindOutputListSeparator(text, start);
    if (end == std::string_view::npos) end = text.size();
    const std::string written = Trim(text.substr(start, end - start));
    start = end + 1;
    if (written.empty()) continue;
    // Control characters are refused as they are written: a stray newline or escape sequence
    // in a variable is a mistake far more often than part of a name. A path that really holds
    // one says so with \xHH (inprof record does, for a directory the user named).
    std::string path;
    if (HasControl(written) || !UnescapeOutputListItem(written, &path) || path.empty() ||
        path.size() > kMaxConfigPath) {
      return Status::Error("output '" + Printable(written) +
                           "': expected a path of at most 4095 bytes without control characters "
                           "(escapes: \\, for a comma, \\\\ for a backslash, \\xHH for any other "
                           "byte but 00)");
    }
    for (const std::string& earlier : result) {
      if (earlier == path) return Status::Error("output '" + Printable(path) + "' is listed twice");
    }
    if (result.size() >= kMaxConfigListItems) {
      return Status::Error("more than 64 outputs in '" + Printable(text) + "'");
    }
    if (!FormatFromPath(path)) {
      return Status::Error("unknown output format for '" + Printable(path) +
                           "': use a name ending in .folded (folded stacks), .log / perf.log "
                           "(perfanno.nvim), .json (annotation JSON), .speedscope.json (speedscope: "
                           "every sample's time and thread), .svg (flame graph), .pb.gz (pprof) "
                           "or .inprofraw (raw profile, symbolized later)");
    }
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    // The effective ids decide, as they will for the write: a setuid program writes as its
    // owner, not as the user who started it.
    if (check_writable && faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
      return Status::Error("cannot write output '" + Printable(path) + "': directory '" +
                           Printable(dir) + "': " + std::strerror(errno));
    }
    result.push_back(std::move(path));
  }
  *outputs = std::move(result);
  return Status::Ok();
}

Status ParseConfig(std::string_view text, Config* config, bool check_outputs) {
  // Items without '=' continue the previous value, so output lists keep their commas.
  std::vector<std::pair<std::string, std::string>> items;
  size_t start = 0;
  while (start <= text.size()) {
    // An escaped comma (output=/tmp/a\,b/out.folded) separates nothing.
    size_t end = FindOutputListSeparator(text, start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    start = end + 1;
    if (Trim(item).empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (items.empty()) {
        return Status::Error("invalid configuration item '" + Printable(item) +
                             "': expected key=value");
      }
      items.back().second += "," + std::string(item);
      continue;
    }
    std::string key = Trim(item.substr(0, eq));
    if (key.empty()) {
      return Status::Error("invalid configuration item '" + Printable(item) + "': empty key");
    }
    items.emplace_back(key, std::string(item.substr(eq + 1)));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = SetKey(items[i].first, Trim(items[i].second), config, check_outputs);
    // Messages of the network keys' parsers may quote the value as it came.
    if (!s.ok() && HasControl(s.message())) {
      s = Status::Error(Printable(s.message(), std::string::npos), s.code());
    }
    if (!s.ok()) {
      if (i > 0 && items[i - 1].first == "labels" && s.code() == StatusCode::kNotFound) {
        return Status::InvalidArgument(s.message() +
                                       "; in a configuration string, separate labels with ';' "
                                       "(labels=env=prod;region=eu)");
      }
      return s;
    }
  }
  return Status::Ok();
}

bool ProcessIsSecure() { return getauxval(AT_SECURE) != 0; }

bool EnvironmentIgnored(bool secure) {
  if (!secure) return false;
  bool any = false;
  for (char** env = environ; env != nullptr && *env != nullptr && !any; ++env) {
    any = std::strncmp(*env, "INPROF_", 7) == 0;
  }
  if (!any) return false;
  // Once per process: autostart and a later inprof_start(NULL) both come here.
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fputs(
        "inprof: ignoring the INPROF_* environment variables: this program runs with "
        "elevated privileges (setuid, setgid or file capabilities: AT_SECURE); only its "
        "own inprof_start(config) call profiles it\n",
        stderr);
  }
  return true;
}

Status ConfigFromEnvironment(Config* config) {
  return ConfigFromEnvironment(config, ProcessIsSecure());
}

Status ConfigFromEnvironment(Config* config, bool secure) {
  // The environment of a privileged program is its caller's: where it writes (a file name
  // in a directory only the program may write to), the symbol cache and path_map it reads,
  // the signal it takes over. None of it is taken; the program may still start a profile
  // with a configuration of its own.
  if (secure) {
    EnvironmentIgnored(true);
    return Status::Ok();
  }
  constexpr std::string_view kPrefix = "INPROF_";
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    std::string_view entry(*env);
    if (entry.substr(0, kPrefix.size()) != kPrefix) continue;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(entry.substr(kPrefix.size(), eq - kPrefix.size()));
    // Variables the runtime sets for itself, not configuration.
    if (key == "ROOT_PID" || key == "EXEC_SEGMENT" || key == "TEST_PERF_ERRNO" || key == "TEST_TIMER_ERRNO" ||
        key == "TEST_WHOLE_FIRST_PERIOD") {
      continue;
    }
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    Status s = SetKey(key, Trim(entry.substr(eq + 1)), config, /*check_outputs=*/true);
    if (!s.ok()) {
      std::string name = Printable(entry.substr(0, eq));
      if (s.code() == StatusCode::kNotFound) {
        return Status::InvalidArgument("unknown environment variable " + name + " (known: " +
                                       KnownEnvironmentVariables() + ")");
      }
      return Status::Error(name + ": " + Printable(s.message(), std::string::npos));
    }
  }
  return Status::Ok();
}

}  // namespace inprof::internal
