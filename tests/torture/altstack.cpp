// A program handler on a tiny alternate signal stack: SIGUSR1 with SA_ONSTACK, raised in a
// loop while the program works and is sampled. A sample that lands while the handler runs is
// taken on that small stack too; the program must see every one of its signals handled, on
// the alternate stack, with its work's results unchanged. The stack is `size` bytes (argument:
// "min" = the kernel's minimum for one signal frame (AT_MINSIGSTKSZ) plus 2 KiB for the
// handler, or "sigstksz" = SIGSTKSZ as reported by sysconf) with an inaccessible page below it, so an
// overflow faults instead of corrupting memory silently.
//   altstack min|sigstksz
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <string>

#include "torture.h"

namespace {

char* g_stack_lo = nullptr;
char* g_stack_hi = nullptr;
std::atomic<long> g_handled{0};
std::atomic<long> g_off_stack{0};
std::atomic<long> g_wrong{0};

void Handler(int, siginfo_t* info, void*) {
  const int saved = errno;
  char here;
  if (&here < g_stack_lo || &here >= g_stack_hi) g_off_stack.fetch_add(1);
  // A little work on the small stack, so samples land here.
  if (torture::Mix(static_cast<uint64_t>(info->si_pid), 3000) !=
      torture::Mix(static_cast<uint64_t>(info->si_pid), 3000)) {
    g_wrong.fetch_add(1);
  }
  g_handled.fetch_add(1, std::memory_order_relaxed);
  errno = saved;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  TORTURE_CHECK(mode == "min" || mode == "sigstksz", "usage: altstack min|sigstksz");
  // AT_MINSIGSTKSZ is what the kernel needs for one signal frame on this CPU (3376 bytes with
  // AVX-512); glibc's MINSIGSTKSZ macro is no longer a constant and means SIGSTKSZ here.
  long min = static_cast<long>(getauxval(AT_MINSIGSTKSZ));
  if (min <= 0) min = sysconf(_SC_MINSIGSTKSZ);
  long size = mode == "min" ? min + 2048 : sysconf(_SC_SIGSTKSZ);
  const long page = sysconf(_SC_PAGESIZE);
  size = (size + 15) & ~15L;
  const long mapped = page + ((size + page - 1) / page) * page;
  char* map = static_cast<char*>(
      mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  TORTURE_CHECK(map != MAP_FAILED, "mmap");
  TORTURE_CHECK(mprotect(map, page, PROT_NONE) == 0, "mprotect");
  // The stack's top at the end of the mapping, its bottom `size` bytes lower: the guard page
  // is right below only when size is a page multiple, otherwise a few unused bytes between.
  g_stack_hi = map + mapped;
  g_stack_lo = g_stack_hi - size;
  stack_t ss{};
  ss.ss_sp = g_stack_lo;
  ss.ss_size = static_cast<size_t>(size);
  TORTURE_CHECK(sigaltstack(&ss, nullptr) == 0, "sigaltstack(%ld): %s", size, strerror(errno));
  struct sigaction sa {};
  sa.sa_sigaction = Handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  TORTURE_CHECK(sigaction(SIGUSR1, &sa, nullptr) == 0, "sigaction");

  const double end = torture::ThreadCpuSeconds() + 0.8;
  long raised = 0;
  uint64_t acc = 0, expect = 0, n = 0;
  while (torture::ThreadCpuSeconds() < end) {
    TORTURE_CHECK(raise(SIGUSR1) == 0, "raise");
    ++raised;
    acc += torture::Mix(n, 500);
    ++n;
  }
  for (uint64_t i = 0; i < n; ++i) expect += torture::Mix(i, 500);
  TORTURE_CHECK(g_handled.load() == raised, "%ld SIGUSR1 raised, %ld handled", raised,
                g_handled.load());
  TORTURE_CHECK(g_off_stack.load() == 0, "%ld handler runs were not on the alternate stack",
                g_off_stack.load());
  TORTURE_CHECK(g_wrong.load() == 0, "the handler computed %ld wrong values", g_wrong.load());
  TORTURE_CHECK(acc == expect, "the main loop computed a wrong value");
  stack_t now{};
  TORTURE_CHECK(sigaltstack(nullptr, &now) == 0 && now.ss_sp == g_stack_lo &&
                    now.ss_size == static_cast<size_t>(size) && (now.ss_flags & SS_DISABLE) == 0,
                "the alternate stack changed");
  std::printf("altstack %s: %ld-byte stack, %ld signals handled\n", mode.c_str(), size, raised);
  return 0;
}
