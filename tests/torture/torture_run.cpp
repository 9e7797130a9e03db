// The runner's process driver: starts one command in its own process group, with its output
// in files, a core-size limit and a deadline, optionally sends it signals at given delays after
// it prints a given line, and reports on stdout how it ended, in one line:
//   exited N | signaled N core=0|1 | hung
// followed by " sent=K" when signals were asked for (how many were sent while it still ran).
// A hang kills the whole process group. Exit status: 0 when it could run the command, 2 on a
// usage or start-up error. (The shell cannot see WCOREDUMP, and coreutils' timeout re-raises
// a child's signal without the core flag: this is why the runner is not shell alone.)
//   torture_run [--timeout S] [--core-limit BYTES] [--cwd DIR] [--out FILE] [--err FILE]
//               [--signal N --after TEXT --delays MS[,MS...]] -- COMMAND [ARGS...]
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr, "torture_run: %s\n", why);
  std::exit(2);
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int OpenOutput(const std::string& path) {
  const int fd = open(path.empty() ? "/dev/null" : path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Usage(("cannot open " + path + ": " + std::strerror(errno)).c_str());
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  double timeout = 60;
  long long core_limit = -1;
  std::string cwd, out_path, err_path, after;
  int signal_number = 0;
  std::vector<double> delays;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) Usage(("missing value for " + arg).c_str());
    const char* value = argv[++i];
    if (arg == "--timeout") timeout = std::atof(value);
    else if (arg == "--core-limit") core_limit = std::atoll(value);
    else if (arg == "--cwd") cwd = value;
    else if (arg == "--out") out_path = value;
    else if (arg == "--err") err_path = value;
    else if (arg == "--signal") signal_number = std::atoi(value);
    else if (arg == "--after") after = value;
    else if (arg == "--delays") {
      for (const char* p = value; *p != '\0';) {
        char* end = nullptr;
        delays.push_back(std::strtod(p, &end) / 1000.0);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p != '\0') Usage("bad --delays");
      }
    } else {
      Usage(("unknown option " + arg).c_str());
    }
  }
  if (i >= argc) Usage("no command");
  const bool watch = signal_number > 0 && !after.empty();

  const int out_fd = OpenOutput(out_path);
  const int err_fd = OpenOutput(err_path);
  int pipe_fds[2] = {-1, -1};
  if (watch && pipe2(pipe_fds, O_CLOEXEC) != 0) Usage("pipe2");
  const double start = Now();
  const pid_t pid = fork();
  if (pid < 0) Usage("fork");
  if (pid == 0) {
    setpgid(0, 0);
    if (core_limit >= 0) {
      rlimit limit{static_cast<rlim_t>(core_limit), static_cast<rlim_t>(core_limit)};
      rlimit current;
      getrlimit(RLIMIT_CORE, &current);
      if (current.rlim_max != RLIM_INFINITY && limit.rlim_max > current.rlim_max) {
        limit.rlim_cur = limit.rlim_max = current.rlim_max;
      }
      if (setrlimit(RLIMIT_CORE, &limit) != 0) _exit(125);
    }
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(125);
    dup2(watch ? pipe_fds[1] : out_fd, 1);
    dup2(err_fd, 2);
    // The driver's own SIGPIPE/SIGINT dispositions are not the command's business.
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "torture_run: cannot run %s: %s\n", argv[i], std::strerror(errno));
    _exit(126);
  }
  setpgid(pid, pid);
  if (watch) close(pipe_fds[1]);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) Usage("pidfd_open");

  // Watch the command's stdout for the announcement (copying it to the output file), then
  // send the signals at their delays; all the while wait for the command's end or the deadline.
  std::string line;
  double announced = -1;
  size_t next_delay = 0;
  int sent = 0;
  bool ended = false, hung = false;
  while (!ended) {
    const double now = Now();
    if (now - start >= timeout) {
      hung = true;
      break;
    }
    double wait = timeout - (now - start);
    if (announced >= 0 && next_delay < delays.size()) {
      const double due = announced + delays[next_delay];
      if (now >= due) {
        // Only while it runs: a zombie cannot take a signal, and a reaped pid may be reused.
        pollfd check{pidfd, POLLIN, 0};
        if (poll(&check, 1, 0) == 0 && kill(pid, signal_number) == 0) ++sent;
        ++next_delay;
        continue;
      }
      wait = std::min(wait, due - now);
    }
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {pipe_fds[0], POLLIN, 0}};
    const int nfds = pipe_fds[0] >= 0 ? 2 : 1;
    const int rc = poll(fds, nfds, static_cast<int>(wait * 1000) + 1);
    if (rc < 0 && errno != EINTR) Usage("poll");
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      char buf[4096];
      const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
      if (n <= 0) {
        close(pipe_fds[0]);
        pipe_fds[0] = -1;
      } else {
        [[maybe_unused]] ssize_t w = write(out_fd, buf, static_cast<size_t>(n));
        line.append(buf, static_cast<size_t>(n));
        if (announced < 0 && line.find(after + "\n") != std::string::npos) announced = Now();
      }
    }
    if ((fds[0].revents & POLLIN) != 0) ended = true;
  }
  if (hung) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever it left behind in its group (a forked child still running) goes too.
  kill(-pid, SIGKILL);
  if (hung) {
    std::printf("hung");
  } else if (WIFSIGNALED(status)) {
    std::printf("signaled %d core=%d", WTERMSIG(status), WCOREDUMP(status) ? 1 : 0);
  } else {
    std::printf("exited %d", WEXITSTATUS(status));
  }
  if (watch) std::printf(" sent=%d", sent);
  std::printf("\n");
  return 0;
}
