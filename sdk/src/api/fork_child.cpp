// A forked child's bootstrap sampler, control side (internal/fork_child.h). BootstrapArm runs
// inside fork() in the child: system calls and stores only.
#include "internal/fork_child.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "internal/bootstrap.h"

extern "C" void* __libc_stack_end;  // the C library's: the main thread's stack top

namespace inprof::internal {
namespace {

// This thread's stack bounds and the code ranges, as the parent's session knew them: the
// slot whose stack holds a local of ours.
void FindBounds(const Sampler& parent) {
  Bootstrap& b = g_bootstrap;
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  b.bounds = StackBounds{};
  for (uint32_t i = 0; i < parent.slot_count && parent.slots != nullptr; ++i) {
    const ThreadSlot& slot = parent.slots[i];
    if (slot.state.load(std::memory_order_relaxed) != SlotState::kActive) continue;
    const uintptr_t lo = slot.stack_lo.load(std::memory_order_relaxed);
    const uintptr_t hi = slot.stack_hi.load(std::memory_order_relaxed);
    if (hi != 0 && lo <= here && here < hi) {
      b.bounds = StackBounds{lo, hi};
      break;
    }
  }
  b.code.store(parent.code.load(std::memory_order_acquire), std::memory_order_seq_cst);
}

int64_t NowNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Maps the table and arms the calling thread's CPU-time timer; b.bounds and b.code are set.
// System calls and stores only.
bool ArmTable(int signal, double frequency, uint32_t max_depth) {
  Bootstrap& b = g_bootstrap;
  b.max_depth = max_depth < BootstrapTable::kMaxDepth ? max_depth : BootstrapTable::kMaxDepth;
  b.tid = static_cast<int32_t>(syscall(SYS_gettid));
  b.start_realtime_ns = NowNs(CLOCK_REALTIME);
  b.start_monotonic_ns = NowNs(CLOCK_MONOTONIC);
  b.start_cpu_ns = NowNs(CLOCK_PROCESS_CPUTIME_ID);
  // Untouched pages cost nothing: a child that takes a few samples touches a few pages.
  void* table = mmap(nullptr, sizeof(BootstrapTable), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (table == MAP_FAILED) return false;
  b.table = static_cast<BootstrapTable*>(table);
  struct sigevent event;
  std::memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal;
  event.sigev_value.sival_ptr = reinterpret_cast<void*>(kBootstrapTimerToken);
  event._sigev_un._tid = b.tid;
  int timer = -1;
  if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0) {
    munmap(table, sizeof(BootstrapTable));
    b.table = nullptr;
    return false;
  }
  b.timer = timer;
  const long period_ns = frequency > 0 ? static_cast<long>(1e9 / frequency) : 10000000;
  struct itimerspec spec;
  spec.it_interval.tv_sec = period_ns / 1000000000;
  spec.it_interval.tv_nsec = period_ns % 1000000000;
  spec.it_value = spec.it_interval;
  b.active.store(true, std::memory_order_seq_cst);
  syscall(SYS_timer_settime, timer, 0, &spec, nullptr);
  return true;
}

}  // namespace

bool BootstrapArm(const Sampler* parent, int signal, double frequency, uint32_t max_depth) {
  Bootstrap& b = g_bootstrap;
  b.active.store(false, std::memory_order_seq_cst);
  b.busy.store(0, std::memory_order_relaxed);
  // The parent's table and timer, when the parent was a child still bootstrapping: the
  // mapping is a copy of no use here, the timer was not inherited. The parent's watcher is
  // not in this process: the child's session starts at its safe points.
  if (b.table != nullptr) munmap(b.table, sizeof(BootstrapTable));
  b.table = nullptr;
  b.timer = -1;
  b.wake_fd = -1;
  if (parent != nullptr) FindBounds(*parent);
  return ArmTable(signal, frequency, max_depth);
}

bool BootstrapArmDeferred(int signal, double frequency, uint32_t max_depth, int wake_fd) {
  Bootstrap& b = g_bootstrap;
  b.active.store(false, std::memory_order_seq_cst);
  b.busy.store(0, std::memory_order_relaxed);
  b.table = nullptr;
  b.timer = -1;
  b.bounds = StackBounds{};
  struct rlimit limit;
  if (getpid() == static_cast<pid_t>(syscall(SYS_gettid)) && __libc_stack_end != nullptr &&
      getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    // The main thread: every frame lies below the loader's __libc_stack_end, and the stack
    // grows down at most RLIMIT_STACK from its top. (pthread_getattr_np finds the same from
    // /proc/self/maps, a tenth of the cost of this whole start.)
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(__libc_stack_end) + page - 1) & ~(page - 1);
    b.bounds = StackBounds{hi > limit.rlim_cur ? hi - limit.rlim_cur : 0, hi};
  } else if (pthread_attr_t attr; pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.bounds = StackBounds{reinterpret_cast<uintptr_t>(addr),
                             reinterpret_cast<uintptr_t>(addr) + size};
    }
    pthread_attr_destroy(&attr);
  }
  // No code ranges yet (the module map is the session's): frames are checked against the
  // stack bounds only, as after a forked child's first dlclose.
  b.code.store(nullptr, std::memory_order_seq_cst);
  b.wake_fd = wake_fd;
  return ArmTable(signal, frequency, max_depth);
}

uint64_t BootstrapSamples() {
  const Bootstrap& b = g_bootstrap;
  if (b.table == nullptr) return 0;
  return __atomic_load_n(&b.table->samples, __ATOMIC_RELAXED);
}

void BootstrapDisarm() {
  Bootstrap& b = g_bootstrap;
  b.active.store(false, std::memory_order_seq_cst);
  if (b.timer >= 0) {
    syscall(SYS_timer_delete, b.timer);
    b.timer = -1;
  }
  // A signal already queued finds the table inactive; one running now finishes first.
  while (b.busy.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void BootstrapForEach(
    const std::function<void(std::span<const uintptr_t>, WalkStop, uint64_t)>& f) {
  const BootstrapTable* t = g_bootstrap.table;
  if (t == nullptr) return;
  for (uint32_t i = 0; i < BootstrapTable::kEntries; ++i) {
    const BootstrapTable::Entry& e = t->entries[i];
    if (e.used == 0) continue;
    f(std::span<const uintptr_t>(t->frames + e.offset, e.length), static_cast<WalkStop>(e.stop),
      e.weight);
  }
}

uint64_t BootstrapOverflowWeight() {
  return g_bootstrap.table != nullptr ? g_bootstrap.table->overflow_weight : 0;
}

void BootstrapForgetCode() {
  Bootstrap& b = g_bootstrap;
  b.code.store(nullptr, std::memory_order_seq_cst);
  // A handler that loaded the old pointer is counted in busy.
  while (b.busy.load(std::memory_order_seq_cst) != 0) sched_yield();
}

BootstrapTotals BootstrapTotalsNow() {
  const BootstrapTable* t = g_bootstrap.table;
  return t != nullptr ? BootstrapTotals{t->samples, t->weight} : BootstrapTotals{};
}

void BootstrapRelease() {
  Bootstrap& b = g_bootstrap;
  if (b.table != nullptr) munmap(b.table, sizeof(BootstrapTable));
  b.table = nullptr;
}

}  // namespace inprof::internal
