// `inprof record [OPTIONS] -- CMD ARGS...`: runs an unmodified, dynamically linked program
// with libinprof.so preloaded, waits for it, and summarises the profile of its process tree.
//
// The runtime does the profiling (autostart from INPROF_* variables, forks and execs
// followed). By default every process of the tree hands its raw samples over in a spool
// directory (one `*.inprofraw` file per process that took a sample, written at its exit, a
// first incomplete one at its first sample) and does not symbolize; when the command ends,
// the spool becomes one profile (symbolize_profile.h), each binary symbolized once for the
// whole tree. A spool of files rather than a socket or shared memory: a process that dies
// loses only its own samples (its file says who it was), nothing in the tree waits on the
// recorder, and the files are the same raw profiles `symbolize-profile` reads later.
// --per-process keeps the older layout: each process symbolizes and writes its own files.
// This file prepares the environment, passes signals on and reports. Not async-signal-safe,
// except ForwardSignal.
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cli.h"
#include "config/config.h"
#include "inprof/annotations.h"
#include "inprof/formats.h"
#include "symbolize_profile.h"
#include "viewer.h"

extern char** environ;

namespace inprof::viewer {
namespace {

constexpr const char* kRecordHelp = R"(usage: inprof record [OPTIONS] -- COMMAND [ARGS...]

Runs COMMAND with inprof preloaded (no privileges, no rebuild; it must be dynamically
linked), follows its forks and execs, writes one profile of the whole process tree into a
directory (each process a root frame named after its command) and prints where the time
went. The exit status is COMMAND's (128+N when it died of signal N). SIGINT and SIGTERM sent
to inprof are passed on to COMMAND, which still writes its profile.

options:
  -o, --output DIR   where the files go (default: a new inprof-<program>-<time>/)
  -F, --frequency HZ samples per CPU-second per thread (default 99)
      --events LIST  what to sample: cpu, wall, alloc, lock, cond, task-clock, ...
                     (INPROF_EVENTS)
      --engine E     auto, timer, perf or itimer (INPROF_ENGINE)
      --unwind U     unwinder (INPROF_UNWIND)
      --per-pid      root frames "comm-PID", one per process, instead of one per command
      --per-process  no tree profile: each process writes its own files (profile.<pid>.json)
      --keep-raw     keep the processes' raw profiles in DIR/raw/ (inprof symbolize-profile)
  -n N               entries in the summary (default 5)
  -q, --quiet        only the files written, and errors
  -h, --help         this text

files in DIR: profile.json (annotation JSON: `inprof top DIR/profile.json`), perf.log
(perfanno.nvim), profile.folded and flame.svg (flame graphs), profile.pb.gz (`go tool
pprof`), profile.speedscope.json (every sample's time and thread: speedscope, `inprof
timeline`). With several events the per-event formats get the event in their name
(profile.cpu.folded). Processes that took no sample leave nothing. libinprof.so is looked up
next to inprof (../sdk/ in a build tree, ../lib/ when installed) unless INPROF_LIBRARY names
it.

examples:
  inprof record -- sort -o /dev/null big.txt
  inprof record -o out -F 499 --events cpu,wall -- ./server --port 8080
  inprof record -o build-prof -- make -j8
)";

struct RecordOptions {
  std::string dir;
  std::string frequency, events, engine, unwind;
  size_t limit = 5;
  bool quiet = false;
  bool per_pid = false;
  bool per_process = false;
  bool keep_raw = false;
  std::vector<std::string> command;
};

int Usage(const std::string& message) { return UsageError("record", message); }

// Resolves COMMAND like execvp does: a name with a slash as is, otherwise through PATH.
// Returns the path, or empty with errno-like `*err` (ENOENT, EACCES).
std::string FindCommand(const std::string& name, int* err) {
  auto executable = [&](const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode) || access(path.c_str(), X_OK) != 0) {
      *err = EACCES;
      return false;
    }
    return true;
  };
  *err = ENOENT;
  if (name.find('/') != std::string::npos) return executable(name) ? name : std::string();
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  int first_error = ENOENT;
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
    if (*err == EACCES) first_error = EACCES;
    *err = ENOENT;
  }
  *err = first_error;
  return {};
}

// True when `path` is an ELF executable without a program interpreter: the dynamic loader
// never runs, so LD_PRELOAD cannot bring the runtime in. Scripts and unreadable files are
// left to exec.
bool IsStaticElf(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh{};
  bool is_static = false;
  if (pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      eh.e_phentsize == sizeof(Elf64_Phdr)) {
    is_static = true;
    for (uint16_t i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph{};
      if (pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) !=
          static_cast<ssize_t>(sizeof ph)) {
        is_static = false;
        break;
      }
      if (ph.p_type == PT_INTERP) {
        is_static = false;
        break;
      }
    }
  }
  close(fd);
  return is_static;
}

std::string SelfDir() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  std::string path(buffer, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// libinprof.so: INPROF_LIBRARY, else next to this binary in a build tree (viewer/../sdk/)
// or an installation (bin/../lib/).
std::string FindLibrary(std::string* tried) {
  if (const char* lib = std::getenv("INPROF_LIBRARY"); lib && *lib) {
    *tried = lib;
    return access(lib, R_OK) == 0 ? lib : std::string();
  }
  const std::string dir = SelfDir();
  std::string libdir = INPROF_INSTALL_LIBDIR;
  if (!libdir.starts_with("/")) libdir = dir + "/../" + libdir;
  for (const std::string& candidate : {dir + "/../sdk/libinprof.so", libdir + "/libinprof.so"}) {
    *tried += (tried->empty() ? "" : ", ") + candidate;
    char resolved[4096];
    if (realpath(candidate.c_str(), resolved) && access(resolved, R_OK) == 0) return resolved;
  }
  return {};
}

std::string Absolute(const std::string& path) {
  if (path.starts_with("/")) return path;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

// A new directory named after the program and the time; -2, -3... when it exists.
StatusOr<std::string> MakeDefaultDir(const std::string& program) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  const std::string base = "inprof-" + program.substr(program.rfind('/') + 1) + "-" + stamp;
  std::string dir;
  for (int i = 1; i < 100; ++i) {
    dir = i == 1 ? base : base + "-" + std::to_string(i);
    if (mkdir(dir.c_str(), 0777) == 0) return dir;
    if (errno != EEXIST) break;
  }
  return Status::FromErrno(errno, "cannot create " + dir);
}

std::atomic<pid_t> g_child{0};
std::atomic<int> g_pending{0};  // a signal that came before the child existed
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

// Signals a user sends to inprof (kill, a supervisor) go on to the program. Signals from the
// terminal (Ctrl-C: si_code SI_KERNEL) already reached the whole foreground process group,
// the program included; sending them again could interrupt it while it writes its profile.
// Async-signal-safe.
void ForwardSignal(int signal, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  const pid_t child = g_child.load(std::memory_order_acquire);
  if (child > 0) {
    kill(child, signal);
  } else {
    g_pending.store(signal, std::memory_order_release);
  }
}

// -F, --events, --engine and --unwind become INPROF_* variables of the program; the runtime
// parses them only once the program runs, and a value it refuses leaves the program running
// unprofiled. So each value is checked here first, by the runtime's own parser (the same
// code, linked in), and a bad one is a usage error naming the option, before anything runs.
// Returns -1 when the value is good, else the usage exit code after saying why.
int CheckRuntimeValue(const std::string& option, const char* key, const std::string& value) {
  // In a configuration string ',' and '=' separate items; a variable's value has no items,
  // so they must not make a bad value pass ("cpu,frequency=9" is one bad list of events).
  std::string checked = value;
  std::replace(checked.begin(), checked.end(), '=', '?');
  internal::Config config;
  const Status s = internal::ParseConfig(std::string(key) + "=" + checked, &config,
                                         /*check_outputs=*/false);
  if (s.ok()) return -1;
  std::string why = s.message();
  const size_t expected = why.find(": expected ");
  why = expected != std::string::npos ? why.substr(expected + 2) : why;
  return Usage(option + " " + ShellQuote(value) + ": " + why);
}

int ParseRecordArgs(const std::vector<std::string>& args, RecordOptions* o) {
  size_t i = 1;
  for (; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (!arg.starts_with("-")) break;  // the command starts without "--"
    std::string value;
    bool has_value = false;
    if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_value = true;
    }
    auto take = [&](std::string* out) {
      if (!has_value) {
        if (i + 1 >= args.size()) return false;
        value = args[++i];
      }
      *out = value;
      return !out->empty();
    };
    if (arg == "-h" || arg == "--help") {
      std::cout << kRecordHelp;
      return 0;
    } else if (arg == "-o" || arg == "--output") {
      if (!take(&o->dir)) return Usage(arg + " needs a directory");
    } else if (arg == "-F" || arg == "--frequency") {
      if (!take(&o->frequency)) return Usage(arg + " needs a rate in Hz");
    } else if (arg == "--events") {
      if (!take(&o->events)) return Usage("--events needs a list of events, e.g. cpu,wall");
    } else if (arg == "--engine") {
      if (!take(&o->engine)) return Usage("--engine needs auto, timer, perf or itimer");
    } else if (arg == "--unwind") {
      if (!take(&o->unwind)) return Usage("--unwind needs an unwinder, e.g. fp");
    } else if (arg == "-n") {
      std::string n;
      if (!take(&n) || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(n) == 0) {
        return Usage("-n needs a positive number");
      }
      o->limit = std::stoul(n);
    } else if (arg == "-q" || arg == "--quiet" || arg == "--per-pid" || arg == "--per-process" ||
               arg == "--keep-raw") {
      if (has_value) return Usage(arg + " takes no value");
      bool* flag = arg == "--per-pid"       ? &o->per_pid
                   : arg == "--per-process" ? &o->per_process
                   : arg == "--keep-raw"    ? &o->keep_raw
                                            : &o->quiet;
      *flag = true;
    } else {
      return Usage("unknown option '" + args[i] + "'");
    }
  }
  for (const auto& [option, key, value] :
       {std::tuple<const char*, const char*, const std::string*>{"-F", "frequency", &o->frequency},
        {"--events", "events", &o->events},
        {"--engine", "engine", &o->engine},
        {"--unwind", "unwind", &o->unwind}}) {
    if (value->empty()) continue;
    if (int rc = CheckRuntimeValue(option, key, *value); rc >= 0) return rc;
  }
  o->command.assign(args.begin() + static_cast<long>(std::min(i, args.size())), args.end());
  if (o->command.empty()) return Usage("missing the command to run (inprof record -- COMMAND ...)");
  if (o->per_process && (o->per_pid || o->keep_raw)) {
    return Usage(std::string(o->per_pid ? "--per-pid" : "--keep-raw") +
                 " is about the tree profile, which --per-process does not write");
  }
  return -1;
}

// The environment of the child: ours, with the runtime preloaded and configured. `outputs`
// is INPROF_OUTPUT: the raw file in the spool, or (--per-process) the outputs in DIR.
std::vector<std::string> ChildEnvironment(const RecordOptions& o, const std::string& library,
                                          const std::string& outputs) {
  std::vector<std::string> env;
  std::string preload;
  bool user_quiet = false;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    user_quiet = user_quiet || entry.starts_with("INPROF_QUIET=");
    if (entry.starts_with("LD_PRELOAD=")) {
      preload = std::string(entry.substr(11));
      continue;
    }
    // The runtime rejects unknown INPROF_* variables; these are inprof's own.
    // INPROF_ROOT_PID marks a recording's descendants: a record run inside one starts its own.
    if (entry.starts_with("INPROF_OUTPUT=") || entry.starts_with("INPROF_FOLLOW_FORK=") ||
        entry.starts_with("INPROF_LIBRARY=") || entry.starts_with("INPROF_ROOT_PID=") ||
        (o.quiet && entry.starts_with("INPROF_QUIET="))) {
      continue;
    }
    if ((!o.frequency.empty() && entry.starts_with("INPROF_FREQUENCY=")) ||
        (!o.events.empty() && entry.starts_with("INPROF_EVENTS=")) ||
        (!o.engine.empty() && entry.starts_with("INPROF_ENGINE=")) ||
        (!o.unwind.empty() && entry.starts_with("INPROF_UNWIND="))) {
      continue;
    }
    env.emplace_back(entry);
  }
  // After what is already preloaded: a sanitizer runtime, for one, must come first.
  env.push_back("LD_PRELOAD=" + (preload.empty() ? library : preload + ":" + library));
  env.push_back("INPROF_OUTPUT=" + outputs);
  env.push_back("INPROF_FOLLOW_FORK=1");
  if (!o.frequency.empty()) env.push_back("INPROF_FREQUENCY=" + o.frequency);
  if (!o.events.empty()) env.push_back("INPROF_EVENTS=" + o.events);
  if (!o.engine.empty()) env.push_back("INPROF_ENGINE=" + o.engine);
  if (!o.unwind.empty()) env.push_back("INPROF_UNWIND=" + o.unwind);
  // A tree's processes hand their samples to the recorder, which reports for all of them:
  // their own one-line summaries (40 of them in a build) are noise, unless asked for.
  if (o.quiet || (!o.per_process && !user_quiet)) env.push_back("INPROF_QUIET=1");
  return env;
}

int ExitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The file of a kind among `names` (files in one directory): `exact` when it is there, else
// the first with `suffix` whose name holds `infix` (a process's ".1234."; "" for any), so a
// hint names a file this run wrote: "profile.cpu.folded" with several events,
// "profile.1234.pb.gz" with --per-process. Empty when there is none.
std::string FindWritten(const std::vector<std::string>& names, const std::string& exact,
                        const std::string& prefix, const std::string& suffix,
                        const std::string& infix) {
  if (infix.empty() && std::find(names.begin(), names.end(), exact) != names.end()) return exact;
  for (const std::string& name : names) {
    if (name.size() > prefix.size() + suffix.size() && name.starts_with(prefix) &&
        name.ends_with(suffix) && name.find(infix) != std::string::npos &&
        !(suffix == ".json" && name.ends_with(".speedscope.json"))) {
      return name;
    }
  }
  return {};
}

// "more:" and the commands to run next, on files this run wrote: each can be pasted as it is.
// `infix` picks one process's files with --per-process (".1234.").
void PrintMore(const std::string& dir, const std::vector<std::string>& names,
               const std::string& infix, std::ostream& out) {
  auto path = [&](const std::string& name) { return ShellQuote(dir + "/" + name); };
  std::vector<std::string> lines;
  const std::string json = FindWritten(names, "profile.json", "profile.", ".json", infix);
  if (!json.empty()) {
    lines.push_back("inprof top " + path(json));
    lines.push_back("inprof annotate " + path(json));
  }
  if (const std::string pprof = FindWritten(names, "profile.pb.gz", "profile.", ".pb.gz", infix);
      !pprof.empty()) {
    lines.push_back("go tool pprof -http=: " + path(pprof));
  }
  if (const std::string timed =
          FindWritten(names, "profile.speedscope.json", "profile.", ".speedscope.json", infix);
      !timed.empty()) {
    lines.push_back("inprof timeline " + path(timed) + " -o timeline.html");
  }
  if (const std::string svg = FindWritten(names, "flame.svg", "flame.", ".svg", infix);
      !svg.empty()) {
    lines.push_back("open " + path(svg) + " in a browser (the flame graph)");
  }
  if (lines.empty()) return;
  out << "\nmore:\n";
  for (const std::string& line : lines) out << "  " << line << '\n';
}

// --per-process: every process wrote its own files; the command's own profile summarised.
void Summarize(const RecordOptions& o, const std::string& dir) {
  std::cerr << "\ninprof: profile in " << dir << "/\n";
  DIR* d = opendir(dir.c_str());
  std::vector<std::string> files;
  if (d) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') files.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) std::cerr << "  " << f << '\n';
  if (o.quiet) return;
  // The program's own profile; when it left none (it ended in _exit(), as dash does), the
  // first child's.
  std::string json = dir + "/profile.json";
  if (std::find(files.begin(), files.end(), "profile.json") == files.end()) {
    for (const std::string& f : files) {
      if (f.starts_with("profile.") && f.ends_with(".json")) {
        json = dir + "/" + f;
        break;
      }
    }
  }
  Annotations a;
  if (Status s = LoadAnnotations(json, &a); !s.ok()) {
    std::cerr << "inprof: no profile to summarise: " << s.message() << '\n';
    return;
  }
  std::cerr << '\n';
  TopOptions v;
  v.limit = o.limit;
  v.profile = json;
  RunTop(v, a, 0, std::cerr);
  // The hints name the summarised process's own files ("profile.1234.pb.gz").
  const std::string name = json.substr(json.rfind('/') + 1);
  std::string infix;
  if (name != "profile.json") infix = name.substr(7, name.size() - 7 - 4);  // ".1234."
  PrintMore(dir, files, infix, std::cerr);
}

// The spool the processes write their raw profiles into: DIR/raw/ when it is kept (it must
// not hold an earlier run's files), else a hidden directory of its own in DIR, removed after.
bool MakeSpool(const std::string& dir, bool keep, std::string* spool) {
  if (keep) {
    *spool = dir + "/raw";
    if (mkdir(spool->c_str(), 0777) == 0) return true;
    std::cerr << "inprof: record: cannot create " << *spool << ": "
              << (errno == EEXIST ? "it exists (an earlier recording's raw profiles?)"
                                  : std::strerror(errno))
              << '\n';
    return false;
  }
  std::string name = dir + "/.inprof-raw-XXXXXX";
  if (mkdtemp(name.data()) == nullptr) {
    std::cerr << "inprof: record: cannot create a directory in " << dir << ": "
              << std::strerror(errno) << '\n';
    return false;
  }
  *spool = name;
  return true;
}

// Removes the spool and the raw files in it (nothing else is written there). A process that
// outlived the command may still write into it; its file is lost with the directory.
void RemoveSpool(const std::string& spool) {
  if (DIR* d = opendir(spool.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") unlink((spool + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(spool.c_str());
}

// Symbolizes the spool into DIR and prints what a user wants to know: the files, the
// processes by their share, the hottest lines and functions over the tree, and which
// processes' samples are missing (also with -q). False when nothing was written.
bool FinishTree(const RecordOptions& o, const std::string& dir, const std::string& spool) {
  SymbolizeProfileOptions so;
  so.inputs = {spool};
  so.dir = dir;
  so.process_roots = true;
  so.per_pid = o.per_pid;
  so.recording = true;
  SymbolizeProfileReport report;
  const Status s = SymbolizeProfiles(so, &report);
  PrintNotes(report, std::cerr);
  if (!s.ok()) {
    std::cerr << "inprof: record: " << s.message();
    if (s.code() == StatusCode::kNotFound) {
      // The rate the processes ran at: -F, else the INPROF_FREQUENCY they inherited, else
      // the runtime's default.
      const char* env = std::getenv("INPROF_FREQUENCY");
      const std::string hz =
          !o.frequency.empty() ? o.frequency : (env != nullptr && *env != '\0' ? env : "99");
      const double rate = std::strtod(hz.c_str(), nullptr);
      std::cerr << " (at " << hz << " Hz a process takes its first sample after about ";
      if (rate > 0) {
        std::cerr << std::max<long long>(1, std::llround(1000.0 / rate)) << " ms";
      } else {
        std::cerr << "one sampling period";
      }
      std::cerr << " of CPU time; raise -F for shorter commands)";
    }
    std::cerr << '\n';
    return false;
  }
  std::cerr << "\ninprof: profile in " << dir << "/\n";
  std::vector<std::string> names;
  for (const std::string& file : report.written) names.push_back(file.substr(file.rfind('/') + 1));
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) std::cerr << "  " << name << '\n';
  if (o.keep_raw) std::cerr << "  raw/ (the processes' raw profiles)\n";
  if (o.quiet) return true;
  std::cerr << "symbolized " << report.binaries
            << (report.binaries == 1 ? " binary, " : " binaries, ") << report.addresses
            << " distinct addresses in " << std::fixed << std::setprecision(2) << report.seconds
            << std::defaultfloat << " s (" << report.cache_hits << " from the symbol cache)\n\n";
  PrintProcessShares(report, o.limit, std::cerr);
  std::cerr << '\n';
  TopOptions v;
  v.limit = o.limit;
  v.profile = dir + "/profile.json";
  const Annotations a = BuildAnnotations(report.profile);
  RunTop(v, a, 0, std::cerr);
  PrintMore(dir, names, "", std::cerr);
  return true;
}

// The output directory: `*dir` as given (created if missing), or a new default one named
// after the program. False after saying why it cannot be used. `*created` says whether this
// run made it.
bool PrepareOutputDir(const std::string& program, std::string* dir_out, bool* created) {
  std::string& dir = *dir_out;
  *created = true;
  if (dir.empty()) {
    StatusOr<std::string> made = MakeDefaultDir(program);
    if (!made.ok()) {
      std::cerr << "inprof: record: " << made.status().message() << '\n';
      return false;
    }
    dir = std::move(*made);
  } else if (mkdir(dir.c_str(), 0777) != 0) {
    if (errno != EEXIST) {
      std::cerr << "inprof: record: " << Status::FromErrno(errno, "cannot create " + dir).message()
                << '\n';
      return false;
    }
    *created = false;
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      std::cerr << "inprof: record: " << dir << " is not a directory\n";
      return false;
    }
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    std::cerr << "inprof: record: " << Status::FromErrno(errno, "cannot write into " + dir).message()
              << '\n';
    return false;
  }
  return true;
}

// Runs `program` with `command` as its argv and `env` as its environment, forwarding SIGINT
// and SIGTERM to it, and waits for it. False after saying why it could not be run.
bool RunChild(const std::string& program, std::vector<std::string> command,
              std::vector<std::string> env, int* status) {
  std::vector<char*> envp, argv;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Handlers first, so a signal that arrives right after fork is not lost; the child resets
  // them (exec does) and starts with the mask we had.
  struct sigaction action {
  }, old_int{}, old_term{};
  action.sa_sigaction = &ForwardSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  std::cout.flush();
  std::cerr.flush();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "inprof: record: fork: " << std::strerror(errno) << '\n';
    return false;
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    execve(program.c_str(), argv.data(), envp.data());
    const int e = errno;
    const std::string message =
        "inprof: record: cannot run " + program + ": " + std::strerror(e) + "\n";
    [[maybe_unused]] ssize_t n = write(STDERR_FILENO, message.data(), message.size());
    _exit(e == ENOENT ? 127 : 126);
  }
  g_child.store(child, std::memory_order_release);
  if (const int pending = g_pending.exchange(0); pending != 0) kill(child, pending);
  while (waitpid(child, status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "inprof: record: waitpid: " << std::strerror(errno) << '\n';
      return false;
    }
  }
  g_child.store(0, std::memory_order_release);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return true;
}

}  // namespace

int RunRecord(const std::vector<std::string>& args) {
  RecordOptions o;
  if (int rc = ParseRecordArgs(args, &o); rc >= 0) return rc;

  int err = 0;
  const std::string program = FindCommand(o.command[0], &err);
  if (program.empty()) {
    std::cerr << "inprof: record: " << o.command[0] << ": "
              << (err == EACCES ? "permission denied" : "command not found") << '\n';
    return err == EACCES ? 126 : 127;  // what a shell returns
  }
  if (IsStaticElf(program)) {
    std::cerr << "inprof: record: " << program
              << " is statically linked: the dynamic loader never runs, so libinprof.so cannot "
                 "be preloaded into it. Link the runtime into the program instead "
                 "(target_link_libraries(app PRIVATE inprof::sdk) and INPROF_OUTPUT=..., or "
                 "inprof_start(); see the README), or build it dynamically linked.\n";
    return 1;
  }
  std::string tried;
  const std::string library = FindLibrary(&tried);
  if (library.empty()) {
    std::cerr << "inprof: record: cannot find libinprof.so (tried " << tried
              << "); set INPROF_LIBRARY to its path\n";
    return 1;
  }
  std::string dir = o.dir;
  bool created = false;
  if (!PrepareOutputDir(program, &dir, &created)) return 1;
  const std::string abs_dir = Absolute(dir);
  // INPROF_OUTPUT is a comma-separated list: each path escaped, so that a directory (or a
  // working directory) with a comma, a backslash or a newline in its name is one output.
  std::string outputs, spool;
  if (o.per_process) {
    for (const std::string& name : DefaultOutputNames())
      outputs += (outputs.empty() ? "" : ",") + EscapeOutputListItem(abs_dir + "/" + name);
  } else {
    if (!MakeSpool(abs_dir, o.keep_raw, &spool)) return 1;
    outputs = EscapeOutputListItem(spool + "/profile.inprofraw");
  }
  int status = 0;
  if (!RunChild(program, o.command, ChildEnvironment(o, library, outputs), &status)) {
    if (!spool.empty() && !o.keep_raw) RemoveSpool(spool);
    return 1;
  }
  const int rc = ExitStatus(status);
  if (rc != 0) {
    std::cerr << "inprof: record: " << o.command[0]
              << (WIFSIGNALED(status) ? " was killed by signal " + std::to_string(WTERMSIG(status))
                                      : " exited with status " + std::to_string(rc))
              << '\n';
  }
  if (o.per_process) {
    Summarize(o, dir);
  } else {
    const bool written = FinishTree(o, dir, spool);
    if (!o.keep_raw) RemoveSpool(spool);
    // Nothing to show: a directory this run made is not left behind empty.
    if (!written && created && rmdir(dir.c_str()) == 0) {
      std::cerr << "inprof: record: removed " << dir << "/ (empty)\n";
    }
  }
  return rc;
}

}  // namespace inprof::viewer
