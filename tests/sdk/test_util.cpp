#include "test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

extern char** environ;

namespace inprof::test {

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

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         void (*on_started)(int pid)) {
  ProcessResult result;
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
  std::vector<std::string> argv_copy = argv;
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
    argv_copy.insert(argv_copy.begin(), prefixed.begin(), prefixed.end());
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

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

std::string PreloadValue() { return PreloadValueFor(INPROF_LIB_PATH); }

std::string PreloadValueFor(const std::string& library) {
  const std::string prefix = INPROF_PRELOAD_PREFIX;
  return prefix.empty() ? library : prefix + ":" + library;
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

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::vector<FoldedStack> ReadFolded(const std::string& path) {
  std::vector<FoldedStack> stacks;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  // flamegraph.pl's line pattern, /^(.*)\s+?(\d+(?:\.\d*)?)$/, checked by hand: std::regex
  // recurses once per character and overflowed the stack on a deep stack's line under
  // AddressSanitizer.
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t space = line.find_last_of(" \t");
    const std::string count = space == std::string::npos ? "" : line.substr(space + 1);
    const size_t dot = count.find('.');
    const bool digits =
        !count.empty() && std::isdigit(static_cast<unsigned char>(count[0])) &&
        count.find_first_not_of("0123456789.") == std::string::npos &&
        (dot == std::string::npos || count.find('.', dot + 1) == std::string::npos);
    if (!digits) {
      ADD_FAILURE() << path << ":" << number << ": not a folded line: " << line;
      continue;
    }
    FoldedStack stack;
    stack.count = std::stoll(count);
    std::string frames = line.substr(0, space);
    size_t start = 0;
    while (true) {
      size_t semi = frames.find(';', start);
      stack.frames.push_back(frames.substr(start, semi - start));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

}  // namespace inprof::test
