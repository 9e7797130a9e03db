// The perf_event engine: one software task-clock event per thread, user space only, whose
// overflow signal the kernel routes to that thread. No ring buffer is mapped: the signal
// itself is the sample (measured accurate at 1-4 kHz without one). Control path.
//
// The program owns every fd number: it may close ours (closefrom(3), close_range) or put a
// file of its own on the number (dup2, a shell's exec 3<file). The event behind a closed fd
// is gone; the number may be the program's by the time we use it. So every use of an fd here
// first checks that our event still answers on it (Owns), and a lost event is reported and
// opened again by the registry's scan (Lost), never closed or ioctl'd by number.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engines/engine.h"

namespace inprof::internal {
namespace {

perf_event_attr EventAttr(uint32_t type, uint64_t config, uint64_t period, bool include_kernel) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;  // task-clock counts nanoseconds of the thread's CPU time
  attr.sample_period = period;
  attr.disabled = 1;
  // Unprivileged perf_event (paranoid 2) only allows user-space sampling.
  attr.exclude_kernel = include_kernel ? 0 : 1;
  attr.exclude_hv = 1;
  attr.wakeup_events = 1;
  return attr;
}

int OpenEvent(perf_event_attr* attr, pid_t tid) {
  return static_cast<int>(syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

// The event behind `fd` as PERF_EVENT_IOC_ID names it: the kernel numbers every perf event
// once (a counter since boot), so no other event, ours or the program's, ever has the same
// id. 0 when `fd` is closed (EBADF) or is no perf event (ENOTTY). System calls only.
uint64_t EventId(int fd) {
  uint64_t id = 0;
  return ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

// Whether `source`'s fd still holds the event opened on it. fstat first: every
// anonymous-inode file (perf events, eventfds, epoll) shares one device and inode, but a
// regular file, pipe, socket or device the program put on the number does not, and then
// never receives perf's ioctl; the event id then tells our event from any other. (Measured
// here: fstat 0.37 us, PERF_EVENT_IOC_ID 0.37-0.40 us.) Between this check and the use the
// program could still close the number on another thread and open a file there: a window of
// a system call, where before it was the whole run. System calls only (fork's child uses it).
bool Owns(const ThreadSource& source) {
  if (source.fd < 0 || source.perf_id == 0) return false;
  struct stat st;
  if (fstat(source.fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != source.perf_dev ||
      static_cast<uint64_t>(st.st_ino) != source.perf_ino) {
    return false;
  }
  return EventId(source.fd) == source.perf_id;
}

class PerfEngine final : public Engine {
 public:
  PerfEngine(Sampler* sampler, int signal, uint32_t type, uint64_t config, uint64_t period,
             bool include_kernel, bool dithered)
      : signal_(signal), type_(type), config_(config), period_(period),
        include_kernel_(include_kernel), dithered_(dithered),
        tokens_(sampler->fd_tokens), ids_(sampler->fd_ids),
        token_count_(sampler->fd_token_count) {}
  EngineKind kind() const override { return EngineKind::kPerf; }

  // The event's overflows are exact (an hrtimer on the thread's CPU time for time events), so
  // a first period drawn from where a thread started within a stream of periods makes every
  // thread's expected sample count its CPU time (or count) x rate: the distance from a
  // random point to the next sample. Fixed periods: uniform in (0, P]. Dithered periods
  // (uniform in [P/2, 3P/2)): that distance has density (1 - F(x)) / P, uniform 1/P below
  // P/2 (half the mass), then falling linearly to 0 at 3P/2; drawn from (0, P] instead its
  // mean would be P/24 short, and a thread of one period would get 4 % too many samples.
  FirstPeriod DrawFirstPeriod(double u1, double u2) const override {
    const double period = static_cast<double>(period_ > 0 ? period_ : 1);
    double first;
    if (!dithered_) {
      first = 1 + u1 * period;
    } else if (u1 < 0.5) {
      first = 1 + u2 * period / 2;
    } else {
      first = 1.5 * period - period * std::sqrt(u2);
    }
    FirstPeriod draw;
    draw.first_ns = static_cast<long>(std::min(std::max(first, 1.0), 1.5 * period));
    return draw;
  }

  int Create(pid_t tid, uint64_t token, ThreadSource* source) override {
    perf_event_attr attr = EventAttr(type_, config_, period_, include_kernel_);
    const int fd = OpenEvent(&attr, tid);
    if (fd < 0) return errno;
    // Which event we opened, asked at once: another thread of the program may close every
    // fd (closefrom) or dup2 over this number while we set it up. If the number no longer
    // holds a perf event by the time we ask, it is the program's, and it is not closed
    // (ProbePerfEvent made sure this kernel answers the question). What is left is the program
    // putting a perf event of its own on the number within these few system calls.
    struct stat st;
    const uint64_t id = EventId(fd);
    if (id == 0 || fstat(fd, &st) != 0) return EBADF;
    source->fd = fd;
    source->perf_id = id;
    source->perf_dev = static_cast<uint64_t>(st.st_dev);
    source->perf_ino = static_cast<uint64_t>(st.st_ino);
    if (tokens_ == nullptr || ids_ == nullptr || static_cast<uint32_t>(fd) >= token_count_) {
      CloseIfOwned(source);
      return EMFILE;
    }
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) != 0 || fcntl(fd, F_SETSIG, signal_) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
      const int error = errno;
      CloseIfOwned(source);
      return error;
    }
    // Published before the event can fire, so the handler recognises its first signal.
    ids_[fd].store(id, std::memory_order_release);
    tokens_[fd].store(token, std::memory_order_release);
    return 0;
  }

  int Start(ThreadSource* source, long first_ns) override {
    if (!Owns(*source)) return EBADF;  // the program closed it already
    // The first period (DrawFirstPeriod) is the event's period until its first overflow;
    // the handler then redraws it (dithered) or restores the event's own
    // (ThreadSlot::perf_first_pending). On a disabled event PERF_EVENT_IOC_PERIOD only sets
    // the period the event starts with. Should it fail, the thread starts with a whole period,
    // as it did before: sampled, only less fairly if it is short.
    //
    // Not shorter than FirstPeriodFloor() (PerfTimePeriodFloorNs: 2,000 threads of 0.3 ms
    // took 29 s instead of 0.6 s at 1 kHz without it). The handler takes the lengthening off
    // the next period (RedrawPeriod), so only a thread that ends within the floor loses its
    // chance of a sample: at 1 kHz one of under 0.1 ms, whose expected count was below 0.1.
    uint64_t first = first_ns > 0 ? static_cast<uint64_t>(first_ns) : period_;
    first = std::max(first, FirstPeriodFloor());
    ioctl(source->fd, PERF_EVENT_IOC_PERIOD, &first);
    if (ioctl(source->fd, PERF_EVENT_IOC_RESET, 0) != 0) return errno;
    return ioctl(source->fd, PERF_EVENT_IOC_ENABLE, 0) == 0 ? 0 : errno;
  }

  void Destroy(ThreadSource* source) override {
    if (source->fd < 0) return;
    // The token stays: a signal still queued for this fd is recognised as ours and dropped
    // as stale (its slot has left kActive), instead of reaching the program's handler.
    // A number that no longer holds our event is the program's: left alone.
    if (Owns(*source)) {
      ioctl(source->fd, PERF_EVENT_IOC_DISABLE, 0);
      close(source->fd);
    }
    source->fd = -1;
  }

  // The child's copies of the fds still control the parent's events: close them without
  // disabling anything, but only those that are still ours (the parent's program may have
  // put its own files on those numbers).
  __attribute__((hot)) void ForgetInChild(ThreadSource* source) override {
    if (source->fd < 0) return;
    tokens_[source->fd].store(0, std::memory_order_relaxed);
    if (Owns(*source)) close(source->fd);
    source->fd = -1;
  }

  // Closes the source's fd if it still holds our event; forgets it either way.
  static void CloseIfOwned(ThreadSource* source) {
    if (Owns(*source)) close(source->fd);
    source->fd = -1;
  }

  bool Lost(ThreadSource* source) override {
    if (source->fd < 0 || Owns(*source)) return false;
    source->fd = -1;
    return true;
  }

 private:
  // A time event's floor in ns; a count event's period is in events: a quarter of it.
  uint64_t FirstPeriodFloor() const {
    const bool time = type_ == PERF_TYPE_SOFTWARE &&
                      (config_ == PERF_COUNT_SW_TASK_CLOCK || config_ == PERF_COUNT_SW_CPU_CLOCK);
    return time ? PerfTimePeriodFloorNs(period_) : period_ / 4;
  }

  int signal_;
  uint32_t type_;
  uint64_t config_;
  uint64_t period_;
  bool include_kernel_;
  bool dithered_;
  std::atomic<uint64_t>* tokens_;  // owned by the session, shared by its perf engines
  std::atomic<uint64_t>* ids_;     // the same, for the events' ids (Sampler::fd_ids)
  uint32_t token_count_;
};

}  // namespace

std::unique_ptr<Engine> MakePerfEngine(Sampler* sampler, int signal, uint32_t type,
                                       uint64_t config, uint64_t period, bool include_kernel,
                                       bool dithered) {
  return std::make_unique<PerfEngine>(sampler, signal, type, config, period, include_kernel,
                                      dithered);
}

int ProbePerfEvent(uint32_t type, uint64_t config, bool include_kernel) {
  // Test seam: INPROF_TEST_PERF_ERRNO=EACCES|ENOENT|ENOSYS makes the probe fail as the
  // kernel would, so the fallback chain can be tested where perf_event works. Never for a
  // privileged program (secure_getenv, docs/security.md).
  if (const char* forced = secure_getenv("INPROF_TEST_PERF_ERRNO")) {
    if (std::strcmp(forced, "EACCES") == 0) return EACCES;
    if (std::strcmp(forced, "ENOENT") == 0) return ENOENT;
    if (std::strcmp(forced, "ENOSYS") == 0) return ENOSYS;
  }
  perf_event_attr attr = EventAttr(type, config, 1000000, include_kernel);
  const int fd = OpenEvent(&attr, 0);
  if (fd < 0) return errno;
  // The engine tells its events from the program's fds by their ids (Owns): a kernel without
  // PERF_EVENT_IOC_ID (before 3.12) cannot run it safely. (Without an id the number is not
  // closed either: it may be a file the program put there meanwhile.)
  if (EventId(fd) == 0) return ENOTTY;
  close(fd);
  return 0;
}

std::string PerfErrorAdvice(int error) {
  std::string text = std::string("perf_event_open: ") + strerrorname_np(error);
  switch (error) {
    case EACCES:
    case EPERM: {
      int paranoid = -99;
      if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "re")) {
        if (std::fscanf(f, "%d", &paranoid) != 1) paranoid = -99;
        std::fclose(f);
      }
      if (paranoid > 2) {
        text += " (perf_event_paranoid is " + std::to_string(paranoid) +
                ": sampling your own threads needs 2 or less, or CAP_PERFMON; e.g. sysctl "
                "kernel.perf_event_paranoid=2)";
      } else {
        text += " (perf_event_paranoid allows it" +
                (paranoid == -99 ? std::string("?") : " (" + std::to_string(paranoid) + ")") +
                ": a seccomp filter or container policy is refusing perf_event_open)";
      }
      break;
    }
    case ENOENT:
      text += " (this machine has no such event: no PMU, e.g. in a VM)";
      break;
    case ENOSYS:
      text += " (the kernel or an emulator such as qemu-user does not provide perf_event_open)";
      break;
    case ENOTTY:
      text +=
          " (the kernel does not name its events (PERF_EVENT_IOC_ID, Linux 3.12): the "
          "engine could not tell its fds from the program's)";
      break;
    case EMFILE:
    case ENFILE:
      text += " (out of file descriptors: perf needs one per thread; raise ulimit -n)";
      break;
    default:
      text += std::string(" (") + std::strerror(error) + ")";
      break;
  }
  return text;
}

}  // namespace inprof::internal
