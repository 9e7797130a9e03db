// libFuzzer target for the runtime's configuration parser (ParseConfig: the string given to
// inprof_start, and through the same keys the INPROF_* environment). What it must guarantee
// on any input (docs/security.md):
// - it returns (no crash, no hang, no undefined behaviour: the sanitizers see to that);
// - a refusal is one printable line that names what was refused: "invalid KEY..." with a key
//   the input has, "unknown configuration key '...'" or "invalid configuration item '...'";
// - what it accepts is within every key's documented range, and parsing it again gives the
//   same configuration.
// The output directories' writability is not checked (it would ask the file system).
// CheckConfig is also compiled into tests/sdk's config test, which replays fuzz/corpus/config/.
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config.h"
#include "inprof/formats.h"

namespace {

using inprof::internal::Config;

bool HasControl(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

bool ReservedSignal(int s) {
  return s == SIGKILL || s == SIGSTOP || s == SIGSEGV || s == SIGBUS || s == SIGILL ||
         s == SIGFPE || s == SIGABRT || s == SIGCHLD || s == SIGTERM || s == SIGINT ||
         s == SIGPIPE || s == SIGQUIT || s == SIGTRAP || s == SIGSYS || s == SIGCONT ||
         s == SIGTSTP || s == SIGTTIN || s == SIGTTOU || (s >= 32 && s < SIGRTMIN);
}

std::string CheckRefusal(const std::string& message, std::string_view input) {
  if (message.empty()) return "a refusal without a message";
  if (HasControl(message)) return "a control character in the message: " + message;
  constexpr std::string_view kUnknown = "unknown configuration key '";
  constexpr std::string_view kItem = "invalid configuration item '";
  constexpr std::string_view kInvalid = "invalid ";
  std::string_view m(message);
  if (m.starts_with(kUnknown) || m.starts_with(kItem)) return "";
  if (!m.starts_with(kInvalid)) return "the message names no key: " + message;
  m.remove_prefix(kInvalid.size());
  const std::string key(m.substr(0, m.find_first_of("=': ")));
  if (key.empty()) return "the message names no key: " + message;
  // The key named is one the input sets (keys are trimmed of blanks before '=').
  if (input.find(key) == std::string_view::npos) {
    return "the message names a key the input does not have: " + message;
  }
  return "";
}

std::string CheckAccepted(const Config& c) {
  std::string failed;
  auto expect = [&](bool ok, const char* what) {
    if (!ok && failed.empty()) failed = std::string("accepted out of range: ") + what;
  };
  expect(c.frequency >= 1 && c.frequency <= 100000, "frequency");
  expect(c.wall_frequency >= 1 && c.wall_frequency <= 10000, "wall_frequency");
  expect(c.stack_bytes >= 1024 && c.stack_bytes <= (1u << 20) && c.stack_bytes % 8 == 0,
         "stack_bytes");
  expect(c.max_depth >= 1 && c.max_depth <= 128, "max_depth");
  expect(c.max_threads >= 1 && c.max_threads <= 65536, "max_threads");
  expect(c.max_memory >= (size_t{1} << 16), "max_memory");
  expect(c.max_copy_memory >= (size_t{1} << 20), "max_copy_memory");
  expect(c.keep >= 1 && c.keep <= 100000, "keep");
  expect(c.exit_timeout >= 0.1 && c.exit_timeout <= 3600, "exit_timeout");
  expect(c.window == 0 || (c.window >= 0.1 && c.window <= 86400), "window");
  expect(c.signal >= 1 && c.signal <= SIGRTMAX && !ReservedSignal(c.signal), "signal");
  expect((c.output_mode & ~0666u) == 0 && (c.output_mode & 0600u) == 0600u, "output_mode");
  expect(!c.events.empty() && c.events.size() <= 8, "events");
  for (size_t i = 0; i < c.events.size(); ++i) {
    for (size_t j = 0; j < i; ++j) expect(c.events[i] != c.events[j], "events (twice)");
  }
  expect(c.outputs.size() <= inprof::internal::kMaxConfigListItems, "output (count)");
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const std::string& o = c.outputs[i];
    // Control characters only through \xHH escapes, which the round trip below checks.
    expect(!o.empty() && o.size() <= inprof::internal::kMaxConfigPath, "output (path)");
    expect(inprof::FormatFromPath(o).has_value(), "output (format)");
    for (size_t j = 0; j < i; ++j) expect(o != c.outputs[j], "output (twice)");
  }
  expect(c.symbol_cache.size() <= inprof::internal::kMaxConfigPath && !HasControl(c.symbol_cache),
         "symbol_cache");
  expect(c.path_map.size() <= inprof::internal::kMaxConfigListItems, "path_map (count)");
  for (const auto& [from, to] : c.path_map) {
    expect(!from.empty() && !HasControl(from) && !HasControl(to), "path_map");
  }
  expect(c.tenant.size() <= 256 && !HasControl(c.tenant), "tenant");
  expect(c.http_token.empty() || (c.http_token.size() >= 16 && c.http_token.size() <= 4096),
         "http_token");
  expect(c.http_hosts.size() <= inprof::internal::kMaxConfigListItems, "http_hosts (count)");
  for (const std::string& h : c.http_hosts) {
    expect(!h.empty() && h.size() <= 253, "http_hosts (name)");
    for (char ch : h) {
      expect((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.',
             "http_hosts (character)");
    }
  }
  expect(!HasControl(c.app_name), "app_name");
  for (const auto& [k, v] : c.labels) expect(!HasControl(k) && !HasControl(v), "labels");
  return failed;
}

bool Same(const Config& a, const Config& b) {
  return a.outputs == b.outputs && a.frequency == b.frequency && a.unwind == b.unwind &&
         a.stack_bytes == b.stack_bytes && a.dwarf_backend == b.dwarf_backend &&
         a.engine == b.engine && a.events == b.events && a.wall_frequency == b.wall_frequency &&
         a.signal == b.signal && a.quiet == b.quiet && a.follow_fork == b.follow_fork &&
         a.lazy == b.lazy && a.symbol_cache == b.symbol_cache && a.exit_timeout == b.exit_timeout &&
         a.max_depth == b.max_depth && a.max_memory == b.max_memory &&
         a.max_copy_memory == b.max_copy_memory &&
         a.max_threads == b.max_threads && a.path_map == b.path_map && a.window == b.window &&
         a.keep == b.keep && a.http == b.http && a.http_token == b.http_token &&
         a.http_hosts == b.http_hosts && a.push_url == b.push_url && a.app_name == b.app_name &&
         a.labels == b.labels && a.tenant == b.tenant && a.output_mode == b.output_mode;
}

}  // namespace

namespace inprof::fuzz {

// Empty when every guarantee above holds for `input`, else what went wrong.
std::string CheckConfig(std::string_view input) {
  Config config;
  const Status s = internal::ParseConfig(input, &config, /*check_outputs=*/false);
  if (!s.ok()) return CheckRefusal(s.message(), input);
  if (std::string failed = CheckAccepted(config); !failed.empty()) return failed;
  Config again;
  if (!internal::ParseConfig(input, &again, false).ok() || !Same(config, again)) {
    return "parsing the same text again gives another configuration";
  }
  return "";
}

}  // namespace inprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string failed = inprof::fuzz::CheckConfig(input);
  if (!failed.empty()) {
    std::fprintf(stderr, "config_fuzz: %s\ninput (%zu bytes): %.*s\n", failed.c_str(), input.size(),
                 static_cast<int>(input.size() > 500 ? 500 : input.size()), input.data());
    std::abort();
  }
  return 0;
}
