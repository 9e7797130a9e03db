// Profiler configuration: parsed from "key=value,..." strings or INPROF_* variables.
// Not async-signal-safe (control path only).
#ifndef INPROF_SDK_CONFIG_H_
#define INPROF_SDK_CONFIG_H_

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inprof/status.h"

namespace inprof::internal {

// Parsed once from their names (config.cpp); the engine policy decides by these.
enum class EngineChoice : uint8_t { kAuto, kPerf, kTimer, kItimer };  // for the cpu event
enum class UnwindChoice : uint8_t { kAuto, kFp, kDwarf };
enum class DwarfBackendChoice : uint8_t { kLibunwind, kLibdwfl };

struct Config {
  std::vector<std::string> outputs;
  double frequency = 99;  // off-round so sampling does not lock step with periodic work
  UnwindChoice unwind = UnwindChoice::kAuto;
  uint32_t stack_bytes = 16384;  // stack copied per sample for DWARF unwinding
  DwarfBackendChoice dwarf_backend = DwarfBackendChoice::kLibunwind;
  EngineChoice engine = EngineChoice::kAuto;
  std::vector<std::string> events = {"cpu"};
  double wall_frequency = 19;  // low: each wall sample interrupts blocked threads (EINTR)
  int signal = SIGPROF;
  // perf_event time events draw each period at random around the mean, so sampling cannot
  // lock step with periodic work (Sampler::event_dither_ns); 0 keeps periods fixed.
  bool dither = true;
  // Timer engine, `cpu`: take each sample at a random point within one kernel tick after the
  // CPU timer's signal, off the tick's grid (Sampler::timer_jitter_ns). Experimental.
  bool timer_jitter = false;
  bool quiet = false;
  bool follow_fork = true;  // a fork()ed child profiles into its own files
  // Autostart defers the session (collector thread, module map, engines for every thread)
  // to the process's first sample (docs/lifecycle.md): a process that never takes one costs
  // next to nothing. Only where nothing needs the session earlier (see CanStartLazily).
  bool lazy = true;
  // The symbolizer's per-user cache of answers by build-id (docs/symbolizer.md): a
  // directory, "off", or empty for the default ($XDG_CACHE_HOME/inprof/symbols).
  std::string symbol_cache;
  // How long the profile's write at exit may take before the process ends without it, where
  // that bound is enforced (docs/lifecycle.md): a write stuck on a lock the interrupted code
  // holds must not keep a program from exiting.
  double exit_timeout = 30;
  uint32_t max_depth = 128;
  size_t max_memory = size_t{64} << 20;
  uint32_t max_threads = 4096;
  // Allocation sampling (event `alloc`, docs/allocations.md): mean bytes between samples, the
  // generator's seed (0: from time and thread), and the entries of the live table.
  size_t alloc_rate = size_t{512} << 10;
  size_t alloc_seed = 0;
  uint32_t alloc_live_max = 1u << 18;
  // At exit, when the sampled allocations still live are estimated above this many bytes,
  // the process ends with status kLeakExitStatus instead (0: never).
  size_t leak_limit = 0;
  // Lock contention sampling (event `lock`, docs/locks.md): waits of this many ns or more are
  // all kept; shorter ones with probability wait/lock_rate (Go's block-profile rule).
  uint32_t lock_rate = 10000;
  // The stack-copy rings of all sampled threads together (dwarf/auto unwinding): threads
  // beyond it are sampled with frame-pointer walks only (docs/unwinding.md).
  size_t max_copy_memory = size_t{64} << 20;
  std::vector<std::pair<std::string, std::string>> path_map;
  // Continuous mode (docs/continuous.md): one profile per `window` seconds (0: one profile
  // for the whole run), the newest `keep` files kept per output.
  double window = 0;
  uint32_t keep = 10;
  // Network outputs (docs/continuous.md): the pull endpoint's listening address
  // ("127.0.0.1:6060", empty = off) and the Pyroscope push target with what names the series.
  std::string http;
  // The pull endpoint's access checks (docs/network.md): a bearer token every request must
  // carry (empty: none), and host names accepted in a request's Host header besides the
  // listening address itself (DNS-rebinding defence).
  std::string http_token;
  std::vector<std::string> http_hosts;
  std::string push_url;
  std::string app_name;  // empty: the program's file name
  std::vector<std::pair<std::string, std::string>> labels;
  std::string tenant;    // sent as X-Scope-OrgID when not empty
  // Permission bits of every file the profiler writes (docs/security.md): exactly these,
  // whatever the umask. 0600 like perf.data: a profile shows code paths, file names and
  // timings a program's other users need not see.
  uint32_t output_mode = 0600;
  // Every sample's time (and thread, labels) kept for the outputs that hold them (speedscope,
  // the raw profile): within a quarter of the stack table's memory (docs/timeline.md).
  bool timeline = true;
  // Folded outputs: an extra root frame per stack, "thread" or "label:KEY" (empty: none).
  std::string folded_root;
};

// The longest path an output, the symbol cache or a path_map prefix may have (PATH_MAX less
// its NUL), and the most outputs or path_map entries one configuration may list.
inline constexpr size_t kMaxConfigPath = 4095;
inline constexpr size_t kMaxConfigListItems = 64;

// Parses "key=value,key=value". Unknown keys and bad values are errors naming the key
// ("invalid KEY...", "unknown configuration key 'KEY'" or "invalid configuration item"), on
// one line, with control characters in the echoed text escaped. `check_outputs` false skips
// the one check that looks at the file system (an output's directory must be writable).
Status ParseConfig(std::string_view text, Config* config, bool check_outputs = true);

// The README's table of configuration keys (Markdown: variable, default, meaning), made from
// the same table ParseConfig reads keys with, so that ranges and names cannot drift apart.
// tests/sdk/config_keys_table.cpp prints it and checks README.md against it.
std::string ConfigKeysMarkdown();

// True when this process runs with elevated privileges: setuid, setgid or file capabilities
// (getauxval(AT_SECURE), as glibc's secure_getenv decides). Its environment then belongs to
// whoever started it, who must not choose where the program writes or what it runs with.
bool ProcessIsSecure();

// Reads every INPROF_* variable of the environment. Unknown INPROF_ variables are errors
// (a mistyped name would otherwise be silently ignored). When `secure` (by default: when
// ProcessIsSecure()) the variables are ignored: `config` is left as it is and, if any
// INPROF_ variable is set, one line on stderr says why (once per process).
Status ConfigFromEnvironment(Config* config);
Status ConfigFromEnvironment(Config* config, bool secure);

// Under elevated privileges (`secure`), with an INPROF_* variable set: prints the one line
// saying that the environment is ignored (the first call of the process only) and returns
// true. Otherwise false.
bool EnvironmentIgnored(bool secure);

// Splits a comma-separated output list and checks each output: known format by name and,
// with `check_writable`, a directory that exists and is writable. Items are unescaped as
// UnescapeOutputListItem (inprof/formats.h) says; control characters written as they are
// are refused, escaped they are part of the path.
Status ParseOutputs(std::string_view text, std::vector<std::string>* outputs,
                    bool check_writable = true);

// `path` with `.<event>` inserted before its extension, for files that hold one event of a
// profile with several: out.folded -> out.wall.folded, perf.log -> perf.wall.log.
std::string PathForEvent(const std::string& path, const std::string& event);

// `path` with `.<pid>` inserted before its extension: out.folded -> out.1234.folded,
// perf.log -> perf.1234.log. Used for the files of child processes.
std::string PathForProcess(const std::string& path, long pid);
// `path` with `.exec<segment>` inserted before its extension (`path` itself for segment 0):
// out.folded -> out.exec1.folded. The files of a process's images after the first one that
// wrote before an exec (docs/lifecycle.md, "exec").
std::string PathForExec(const std::string& path, int segment);

// `path` with the window's `stamp` inserted before its extension:
// out.folded -> out.20261122T031500Z.folded.
std::string PathForWindow(const std::string& path, const std::string& stamp);

// Parses an output_mode value: octal permission bits within 0666 that include 0600.
Status ParseOutputMode(std::string_view text, uint32_t* mode);

// Parses a signal given as a number or a name (PROF, SIGPROF, RTMIN+3, ...).
Status ParseSignal(std::string_view text, int* signal);

}  // namespace inprof::internal

#endif  // INPROF_SDK_CONFIG_H_
