// The floor under any in-process sampler that takes its samples in a signal handler: preloaded,
// it opens the perf task-clock event the perf engine uses on the main thread, at
// SIGNAL_FLOOR_HZ, with the signal as the sample (O_ASYNC, F_SETSIG, F_SETOWN_EX), and handles
// each signal by counting it. What a program loses under it is the kernel's part of a sample
// (the event's timer interrupt, the signal's delivery and return) and nothing of a profiler's:
// bench/sqlite_overhead.sh runs it beside the runtime. Main thread only (sqlite3 has one).
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned long signals;

static void OnSignal(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)info;
  (void)context;
  signals += 1;
}

__attribute__((constructor)) static void StartFloor(void) {
  const char* hz = getenv("SIGNAL_FLOOR_HZ");
  if (hz == NULL || atol(hz) <= 0) return;
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = 1000000000UL / (unsigned long)atol(hz);
  attr.exclude_kernel = 1;
  attr.disabled = 1;
  const int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    perror("signal_floor: perf_event_open");
    return;
  }
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = OnSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &action, NULL);
  struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
    perror("signal_floor: arming the event");
  }
}

__attribute__((destructor)) static void ReportFloor(void) {
  if (getenv("SIGNAL_FLOOR_REPORT") != NULL) fprintf(stderr, "signal_floor: %lu signals\n", signals);
}
