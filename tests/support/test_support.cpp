#include "test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

extern char** environ;

namespace inprof::test {

std::string SourceDir() {
  if (const char* dir = std::getenv("INPROF_SOURCE_DIR"); dir && *dir) return dir;
  return INPROF_TEST_SOURCE_DIR;
}

std::string Data(const std::string& relative) { return SourceDir() + "/tests/data/" + relative; }

std::string Portable(std::string text) {
  const std::string dir = SourceDir();
  for (size_t at; (at = text.find(dir)) != std::string::npos;) text.replace(at, dir.size(), "<src>");
  return text;
}

bool Blessing() {
  const char* bless = std::getenv("INPROF_BLESS");
  return bless && std::string(bless) == "1";
}

void CheckGolden(const std::string& relative, const std::string& actual) {
  const std::string path = SourceDir() + "/tests/data/" + relative;
  if (Blessing()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with INPROF_BLESS=1 to create it)";
  std::ostringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "output differs from " << path
                                    << " (INPROF_BLESS=1 rewrites it if the change is intended)";
}

const std::vector<std::string>& EmulatorPrefix() {
  static const std::vector<std::string> prefix = [] {
    std::vector<std::string> words;
    const std::string joined = INPROF_TEST_EMULATOR;  // words separated by '|'
    size_t start = 0;
    while (start < joined.size()) {
      size_t bar = joined.find('|', start);
      if (bar == std::string::npos) bar = joined.size();
      if (bar > start) words.push_back(joined.substr(start, bar - start));
      start = bar + 1;
    }
    return words;
  }();
  return prefix;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

ChildCommand MakeChildCommand(const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    // The test's own INPROF_* variables (INPROF_SOURCE_DIR, INPROF_BLESS) are not profiler
    // configuration: the child would reject them as unknown.
    if (entry.rfind("INPROF_", 0) == 0) continue;
    merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  ChildCommand command;
  command.argv = argv;
  if (!EmulatorPrefix().empty()) {
    // A cross build's test runs inside qemu-user, which does not follow an exec of a foreign
    // binary (that needs binfmt_misc, which a container usually may not register): launch
    // the child through the emulator too. LD_PRELOAD goes to the guest with -E; in the
    // emulator's own environment the host loader would try (and loudly fail) to preload an
    // arm64 library into the x86-64 emulator.
    std::vector<std::string> prefixed = EmulatorPrefix();
    if (auto preload = merged.find("LD_PRELOAD"); preload != merged.end()) {
      prefixed.push_back("-E");
      prefixed.push_back("LD_PRELOAD=" + preload->second);
      merged.erase(preload);
    }
    command.argv.insert(command.argv.begin(), prefixed.begin(), prefixed.end());
  }
  for (const auto& [k, v] : merged) command.env.push_back(k + "=" + v);
  return command;
}

bool LeakCheckerCrashed(const std::string& err) {
  return err.find("Tracer caught signal") != std::string::npos &&
         err.find("LeakSanitizer has encountered a fatal error") != std::string::npos;
}

namespace {

ProcessResult RunProcessOnce(const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env,
                             void (*on_started)(int pid)) {
  ProcessResult result;
  ChildCommand command = MakeChildCommand(argv, env);
  std::vector<char*> args = Pointers(command.argv), envp = Pointers(command.env);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = std::string("posix_spawn: ") + std::strerror(rc);
    return result;
  }
  if (on_started != nullptr) on_started(pid);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         void (*on_started)(int pid)) {
  ProcessResult result = RunProcessOnce(argv, env, on_started);
  if (result.exit_code == 1 && LeakCheckerCrashed(result.err)) {
    // Said in the test's own output, so that a log shows the first run was not counted.
    std::fprintf(stderr,
                 "test support: LeakSanitizer's tracer crashed at the exit of %s (no leak check "
                 "ran); running it once more\n",
                 argv.empty() ? "?" : argv[0].c_str());
    result = RunProcessOnce(argv, env, on_started);
  }
  return result;
}

std::string MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/inprof-test-XXXXXX";
  char* dir = mkdtemp(templ.data());
  EXPECT_NE(dir, nullptr);
  return templ;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace inprof::test
