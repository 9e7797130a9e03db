// The handler never allocates, locks or enters the loader.
//
// This program defines malloc & co., pthread_mutex_lock/trylock, pthread_rwlock_*lock,
// dl_iterate_phdr, dladdr and clock_gettime (as a clock interposer such as libfaketime does)
// itself, so every call in the process — ours included — goes
// through them. Each checks whether the calling thread is inside inprof's sampling handler
// and records a violation if it is. First a canary proves the detector works (a foreign
// handler chained from ours allocates on purpose); then the program runs a load that
// allocates, locks, throws and dlopens on several threads while being sampled at the
// highest rate, and must finish with zero violations and plenty of samples.
#include <dlfcn.h>
#include <inprof/inprof.hpp>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);
int inprof_internal_in_signal_handler(void);
}

namespace {

std::atomic<int> g_violations{0};
bool g_canary_phase = true;  // the canary's calls are expected: say so in the log

void Check(const char* what) {
  if (inprof_internal_in_signal_handler() != 0) {
    if (g_violations.fetch_add(1) < 5) {
      static const char violation[] = "VIOLATION: called inside the sampling handler: ";
      static const char expected[] = "canary (expected): called inside the handler: ";
      const char* prefix = g_canary_phase ? expected : violation;
      [[maybe_unused]] ssize_t a = write(2, prefix, std::strlen(prefix));
      [[maybe_unused]] ssize_t b = write(2, what, std::strlen(what));
      [[maybe_unused]] ssize_t c = write(2, "\n", 1);
    }
  }
}

template <typename T>
T Next(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

using MutexFn = int (*)(pthread_mutex_t*);
using RwFn = int (*)(pthread_rwlock_t*);
using PhdrFn = int (*)(int (*)(dl_phdr_info*, size_t, void*), void*);
using DladdrFn = int (*)(const void*, Dl_info*);
using ClockFn = int (*)(clockid_t, struct timespec*);
MutexFn g_mutex_lock, g_mutex_trylock;
ClockFn g_clock_gettime;
RwFn g_rdlock, g_wrlock;
PhdrFn g_iterate_phdr;
DladdrFn g_dladdr;

__attribute__((constructor(101))) void ResolveNext() {
  g_mutex_lock = Next<MutexFn>("pthread_mutex_lock");
  g_mutex_trylock = Next<MutexFn>("pthread_mutex_trylock");
  g_rdlock = Next<RwFn>("pthread_rwlock_rdlock");
  g_wrlock = Next<RwFn>("pthread_rwlock_wrlock");
  g_iterate_phdr = Next<PhdrFn>("dl_iterate_phdr");
  g_dladdr = Next<DladdrFn>("dladdr");
  g_clock_gettime = Next<ClockFn>("clock_gettime");
}

}  // namespace

// Default visibility: the build hides every symbol it does not mark (-fvisibility=hidden),
// and a hidden definition interposes nothing (malloc & co. escaped that only through their
// declarations in <stdlib.h>; pthread_mutex_lock, dladdr and the rest did not, and checked
// nothing).
#pragma GCC visibility push(default)
extern "C" {
void* malloc(size_t n) {
  Check("malloc");
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  Check("calloc");
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  Check("realloc");
  return __libc_realloc(p, n);
}
void free(void* p) {
  Check("free");
  __libc_free(p);
}
void* memalign(size_t a, size_t n) {
  Check("memalign");
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  Check("aligned_alloc");
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  Check("posix_memalign");
  *out = __libc_memalign(a, n);
  return *out ? 0 : ENOMEM;
}
int pthread_mutex_lock(pthread_mutex_t* m) {
  Check("pthread_mutex_lock");
  return g_mutex_lock(m);
}
int pthread_mutex_trylock(pthread_mutex_t* m) {
  Check("pthread_mutex_trylock");
  return g_mutex_trylock(m);
}
int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
  Check("pthread_rwlock_rdlock");
  return g_rdlock(l);
}
int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
  Check("pthread_rwlock_wrlock");
  return g_wrlock(l);
}
int dl_iterate_phdr(int (*cb)(dl_phdr_info*, size_t, void*), void* data) {
  Check("dl_iterate_phdr");
  return g_iterate_phdr(cb, data);
}
int dladdr(const void* addr, Dl_info* info) {
  Check("dladdr");
  return g_dladdr(addr, info);
}
int clock_gettime(clockid_t clock, struct timespec* ts) {
  Check("clock_gettime");
  if (g_clock_gettime == nullptr) return static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
  return g_clock_gettime(clock, ts);
}
}
#pragma GCC visibility pop

namespace {

int Fail(const char* what) {
  std::fprintf(stderr, "FAILED: %s\n", what);
  std::printf("0 passed, 1 failed\n");
  return 1;
}

volatile int g_sink;

void Allocator(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::string> keep;
  unsigned seed = 1;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) {
      seed = seed * 1103515245 + 12345;
      void* p = std::malloc(16 + seed % 4096);
      g_sink = g_sink + static_cast<int>(reinterpret_cast<uintptr_t>(p) & 1);
      std::free(p);
      keep.emplace_back(32 + seed % 64, 'x');
      if (keep.size() > 256) keep.clear();
    }
  }
}

void Locker(double seconds) {
  std::mutex mu;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) {
      std::lock_guard<std::mutex> lock(mu);
      g_sink = g_sink + 1;
    }
  }
}

void Thrower(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    try {
      throw std::runtime_error("sampled while unwinding");
    } catch (const std::exception& e) {
      g_sink = g_sink + static_cast<int>(std::strlen(e.what()));
    }
  }
}

void Loader(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    void* h = dlopen("libm.so.6", RTLD_NOW);
    if (h != nullptr) dlclose(h);
    void* h2 = dlopen("libresolv.so.2", RTLD_NOW);
    if (h2 != nullptr) dlclose(h2);
  }
}

// Labels set and cleared all the time, new sets interned (the table's lock, allocation)
// between samples: the handler reads the thread's set id and nothing else.
void Labeller(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  char value[32];
  unsigned n = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) {
      std::snprintf(value, sizeof value, "/api/%u", ++n % 64);
      inprof::ScopedLabel endpoint("endpoint", value);
      inprof_label_set("tenant", (n & 1) != 0 ? "a" : "b");
      g_sink = g_sink + 1;
      inprof_label_clear("tenant");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string engine = argc > 1 ? argv[1] : "timer";
  const std::string unwind = argc > 2 ? argv[2] : "fp";
  // 1. Canary: a handler installed before ours is chained from inside our handler, so its
  //    malloc must be seen as a violation. If it is not, the detector is broken.
  struct sigaction canary = {};
  canary.sa_handler = [](int) {
    void* p = std::malloc(64);
    std::free(p);
  };
  sigemptyset(&canary.sa_mask);
  sigaction(SIGPROF, &canary, nullptr);
  const char* dir = std::getenv("TMPDIR");
  const std::string out = std::string(dir && *dir ? dir : "/tmp") + "/inprof-interposer-" +
                          std::to_string(getpid()) + ".folded";
  const std::string config =
      "quiet=1,frequency=5000,engine=" + engine + ",unwind=" + unwind + ",output=" + out;
  if (inprof_start(config.c_str()) != INPROF_OK) {
    if (engine == "perf" && std::strstr(inprof_last_error(), "perf_event_open") != nullptr) {
      std::printf("skipped: %s\n", inprof_last_error());
      return 0;
    }
    return Fail(inprof_last_error());
  }
  raise(SIGPROF);
  if (g_violations.load() == 0) return Fail("the canary allocation inside the handler went unseen");
  std::printf("canary detected: %d call(s) inside the handler\n", g_violations.load());
  g_violations = 0;
  g_canary_phase = false;

  // 2. Load on every kind of operation the handler must never make.
  const double seconds = 2.0;
  std::vector<std::thread> threads;
  threads.emplace_back(Allocator, seconds);
  threads.emplace_back(Allocator, seconds);
  threads.emplace_back(Locker, seconds);
  threads.emplace_back(Thrower, seconds);
  threads.emplace_back(Loader, seconds);
  threads.emplace_back(Labeller, seconds);
  for (auto& t : threads) t.join();
  if (inprof_stop() != INPROF_OK) return Fail(inprof_last_error());

  long samples = 0;
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) samples += std::atol(line.substr(line.rfind(' ') + 1).c_str());
  std::remove(out.c_str());
  std::printf("violations=%d weighted samples=%ld\n", g_violations.load(), samples);
  if (g_violations.load() != 0) return Fail("the handler called an interposed function");
  if (samples < 1000) return Fail("too few samples: the load was not sampled");
  std::printf("1 passed, 0 failed\n");
  return 0;
}
