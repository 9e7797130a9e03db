#include "config/config.h"

#include "inprof/formats.h"

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
std::string Printable(std::string_view text, size_t shown = 200) {
  const size_t kShown = shown;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    const char c = text[i];
    if (IsControl(c) || c == '\\') {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  if (text.size() > kShown) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
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

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
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

constexpr const char* kKnownKeys =
    "output, events, frequency, wall_frequency, engine, unwind, stack_bytes, dwarf_backend, "
    "signal, dither, timer_jitter, quiet, "
    "follow_fork, lazy, symbol_cache, exit_timeout, max_depth, max_memory, max_copy_memory, "
    "max_threads, path_map, "
    "window, keep, http, http_token, http_hosts, "
    "push_url, "
    "app_name, labels, tenant, output_mode, timeline, folded_root";

// kKnownKeys as the environment spells them: "INPROF_OUTPUT, INPROF_EVENTS, ...".
std::string KnownEnvironmentVariables() {
  std::string out = "INPROF_";
  for (const char* c = kKnownKeys; *c; ++c) {
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    if (*c == ' ') out += "INPROF_";
  }
  return out;
}

// One piece: one short branch per key, each parsing and checking its value with the message
// a user sees; a table of handlers would spread the same lines over twenty functions.
Status SetKey(const std::string& key, const std::string& value, Config* config,
              bool check_outputs) {
  if (key == "output") {
    Status s = ParseOutputs(value, &config->outputs, check_outputs);
    if (!s.ok()) return Status::Error("invalid output: " + s.message());
    return Status::Ok();
  }
  if (key == "output_mode") return ParseOutputMode(value, &config->output_mode);
  if (key == "frequency") {
    double hz = 0;
    if (!ParseDouble(value, &hz) || hz < 1 || hz > 100000) {
      return BadValue(key, value, "a sampling rate in Hz between 1 and 100000, e.g. 99");
    }
    config->frequency = hz;
    return Status::Ok();
  }
  if (key == "unwind") {
    if (value == "fp" || value == "dwarf" || value == "auto") {
      config->unwind = value == "fp"      ? UnwindChoice::kFp
                       : value == "dwarf" ? UnwindChoice::kDwarf
                                          : UnwindChoice::kAuto;
    } else {
      return BadValue(key, value,
                      "fp (frame pointers, walked in the handler), dwarf (the stack is copied in "
                      "the handler and unwound with DWARF CFI by the collector) or auto (both: "
                      "DWARF where frame pointers do not reach the root)");
    }
    return Status::Ok();
  }
  if (key == "dwarf_backend") {
    if (value == "libunwind" || value == "libdwfl") {
      config->dwarf_backend =
          value == "libdwfl" ? DwarfBackendChoice::kLibdwfl : DwarfBackendChoice::kLibunwind;
    } else {
      return BadValue(key, value,
                      "libunwind (the default) or libdwfl (elfutils; less CPU per sample here, "
                      "see docs/unwinding.md)");
    }
    return Status::Ok();
  }
  if (key == "stack_bytes") {
    uint64_t v = 0;
    if (!ParseBytes(value, &v) || v < 1024 || v > (uint64_t{1} << 20)) {
      return BadValue(key, value, "a stack copy size between 1K and 1M, e.g. 16K");
    }
    config->stack_bytes = static_cast<uint32_t>(v) & ~7u;
    return Status::Ok();
  }
  if (key == "signal") return ParseSignal(value, &config->signal);
  if (key == "wall_frequency") {
    double hz = 0;
    if (!ParseDouble(value, &hz) || hz < 1 || hz > 10000) {
      return BadValue(key, value, "a sampling rate in Hz between 1 and 10000, e.g. 19");
    }
    config->wall_frequency = hz;
    return Status::Ok();
  }
  if (key == "events") {
    std::vector<std::string> events;
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string name = Trim(std::string_view(value).substr(start, end - start));
      start = end + 1;
      if (name.empty()) continue;
      if (FindEvent(name) == nullptr) {
        return BadValue(key, value, "a list of events from: " + KnownEventNames());
      }
      for (const std::string& e : events) {
        if (e == name) return BadValue(key, value, "each event once");
      }
      events.push_back(name);
    }
    if (events.empty() || events.size() > 8) {
      return BadValue(key, value, "between 1 and 8 events, e.g. cpu,wall");
    }
    config->events = std::move(events);
    return Status::Ok();
  }
  if (key == "engine") {
    if (value == "auto" || value == "perf" || value == "timer" || value == "itimer") {
      config->engine = value == "perf"    ? EngineChoice::kPerf
                       : value == "timer" ? EngineChoice::kTimer
                       : value == "itimer" ? EngineChoice::kItimer
                                          : EngineChoice::kAuto;
    } else {
      return BadValue(key, value,
                      "auto (the best that works here), perf (perf_event), timer (per-thread "
                      "CPU timers) or itimer (process-wide ITIMER_PROF)");
    }
    return Status::Ok();
  }
  if (key == "quiet") {
    if (!ParseBool(value, &config->quiet)) return BadValue(key, value, "1 or 0");
    return Status::Ok();
  }
  if (key == "follow_fork") {
    if (!ParseBool(value, &config->follow_fork)) return BadValue(key, value, "1 or 0");
    return Status::Ok();
  }
  if (key == "timer_jitter") {
    if (!ParseBool(value, &config->timer_jitter)) return BadValue(key, value, "1 or 0");
    return Status::Ok();
  }
  if (key == "dither") {
    if (!ParseBool(value, &config->dither)) return BadValue(key, value, "1 or 0");
    return Status::Ok();
  }
  if (key == "timeline") {
    if (!ParseBool(value, &config->timeline)) return BadValue(key, value, "1 or 0");
    return Status::Ok();
  }
  if (key == "folded_root") {
    if (!ValidFoldedRoot(value)) {
      return BadValue(key, value,
                      "thread, label:KEY (KEY: letters, digits, '_' and '.', at most 64 bytes) "
                      "or empty");
    }
    config->folded_root = std::string(value);
    return Status::Ok();
  }
  if (key == "lazy") {
    if (!ParseBool(value, &config->lazy)) return BadValue(key, value, "1 or 0");
    return Status::Ok();
  }
  if (key == "symbol_cache") {
    if (!IsConfigPath(value)) {
      return BadValue(key, value, "a directory (at most 4095 bytes, no control characters) or off");
    }
    config->symbol_cache = std::string(value);
    return Status::Ok();
  }
  if (key == "exit_timeout") {
    double seconds = 0;
    if (!ParseDouble(value, &seconds) || seconds < 0.1 || seconds > 3600) {
      return BadValue(key, value, "seconds from 0.1 to 3600 that the exit-time write may take");
    }
    config->exit_timeout = seconds;
    return Status::Ok();
  }
  if (key == "max_depth") {
    uint64_t v = 0;
    if (!ParseUnsigned(value, &v) || v < 1 || v > 128) {
      return BadValue(key, value, "a number of frames between 1 and 128");
    }
    config->max_depth = static_cast<uint32_t>(v);
    return Status::Ok();
  }
  if (key == "window") {
    double seconds = 0;
    if (!ParseDouble(value, &seconds) || (seconds != 0 && (seconds < 0.1 || seconds > 86400))) {
      return BadValue(key, value, "seconds per window, from 0.1 to 86400 (0: one profile)");
    }
    config->window = seconds;
    return Status::Ok();
  }
  if (key == "keep") {
    uint64_t v = 0;
    if (!ParseUnsigned(value, &v) || v < 1 || v > 100000) {
      return BadValue(key, value, "a number of windows from 1 to 100000");
    }
    config->keep = static_cast<uint32_t>(v);
    return Status::Ok();
  }
  if (key == "max_memory") {
    uint64_t v = 0;
    if (!ParseBytes(value, &v) || v < (uint64_t{1} << 16)) {
      return BadValue(key, value, "a size of at least 64K, e.g. 64M");
    }
    config->max_memory = static_cast<size_t>(v);
    return Status::Ok();
  }
  if (key == "max_copy_memory") {
    uint64_t v = 0;
    if (!ParseBytes(value, &v) || v < (uint64_t{1} << 20)) {
      return BadValue(key, value, "a size of at least 1M, e.g. 64M");
    }
    config->max_copy_memory = static_cast<size_t>(v);
    return Status::Ok();
  }
  if (key == "max_threads") {
    uint64_t v = 0;
    if (!ParseUnsigned(value, &v) || v < 1 || v > 65536) {
      return BadValue(key, value, "a thread count between 1 and 65536");
    }
    config->max_threads = static_cast<uint32_t>(v);
    return Status::Ok();
  }
  // Network outputs: checked here so a typo fails at start, not at the first window. Their
  // values end up in requests and headers: no control characters, whatever the parsers of
  // each allow.
  if ((key == "http" || key == "push_url" || key == "app_name" || key == "labels") &&
      HasControl(value)) {
    return BadValue(key, value, "a value without control characters");
  }
  if (key == "http") {
    config->http.clear();
    if (value.empty()) return Status::Ok();
    ListenAddress address;
    Status s = ParseListenAddress(value, &address);
    if (!s.ok()) return Status::Error("invalid http: " + s.message());
    config->http = address.text;
    return Status::Ok();
  }
  if (key == "http_token") {
    // RFC 6750's token68 characters, no ',' (it would end the value in a configuration
    // string); 16 or more so it cannot be guessed by trying.
    for (char c : value) {
      if (!std::isalnum(static_cast<unsigned char>(c)) &&
          std::string_view("-._~+/=").find(c) == std::string_view::npos) {
        return BadValue(key, "(not shown)",
                        "a bearer token of letters, digits and - . _ ~ + / = only");
      }
    }
    if (!value.empty() && (value.size() < 16 || value.size() > 4096)) {
      return BadValue(key, "(not shown)", "a bearer token of 16 to 4096 characters");
    }
    config->http_token = value;
    return Status::Ok();
  }
  if (key == "http_hosts") {
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
          return BadValue(key, value,
                          "host names (letters, digits, '-' and '.') separated by ','");
        }
      }
      if (name.size() > 253 || config->http_hosts.size() >= kMaxConfigListItems) {
        return BadValue(key, value, "at most 64 host names of at most 253 characters each");
      }
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      config->http_hosts.push_back(name);
    }
    return Status::Ok();
  }
  if (key == "push_url") {
    config->push_url.clear();
    if (value.empty()) return Status::Ok();
    HttpUrl url;
    Status s = ParseHttpUrl(value, &url);
    if (!s.ok()) return Status::Error("invalid push_url: " + s.message());
    config->push_url = value;
    return Status::Ok();
  }
  if (key == "app_name") {
    Status s = CheckAppName(value);
    if (!s.ok()) return Status::Error("invalid app_name: " + s.message());
    config->app_name = value;
    return Status::Ok();
  }
  if (key == "labels") {
    Status s = ParsePushLabels(value, &config->labels);
    if (!s.ok()) return Status::Error("invalid labels: " + s.message());
    return Status::Ok();
  }
  if (key == "tenant") {
    if (HasControl(value) || value.size() > 256) {
      return BadValue(key, value, "a tenant id of at most 256 bytes without control characters");
    }
    config->tenant = value;
    return Status::Ok();
  }
  if (key == "path_map") {
    config->path_map.clear();
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = value.find(':', start);
      if (end == std::string::npos) end = value.size();
      std::string item = value.substr(start, end - start);
      if (!item.empty()) {
        size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0) {
          return BadValue(key, value, "OLD=NEW prefixes separated by ':'");
        }
        std::string from = item.substr(0, eq), to = item.substr(eq + 1);
        if (!IsConfigPath(from) || HasControl(to) || to.size() > kMaxConfigPath) {
          return BadValue(key, value,
                          "OLD=NEW prefixes of at most 4095 bytes without control characters");
        }
        if (config->path_map.size() >= kMaxConfigListItems) {
          return BadValue(key, value, "at most 64 OLD=NEW prefixes");
        }
        config->path_map.emplace_back(std::move(from), std::move(to));
      }
      start = end + 1;
    }
    return Status::Ok();
  }
  return Status::NotFound("unknown configuration key '" + Printable(key) +
                          "' (known keys: " + kKnownKeys + ")");
}

}  // namespace

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
