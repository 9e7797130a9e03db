// lock_overhead.sh: lock-heavy loops, timed inside the program (start-up and the profile's
// write at exit left out).
//   inprof_lock_loop uncontended N    one thread, N pthread_mutex_lock/unlock pairs on a free
//                                     mutex; prints "ns_per_pair X"
//   inprof_lock_loop uncontended_mt N the same with a second, idle thread alive
//   inprof_lock_loop contended N      two threads, N lock/unlock pairs each on one mutex, a
//                                     short critical section (~50 ns) and ~200 ns of work
//                                     outside it; prints "ns_per_pair X" (wall time / 2N)
//   inprof_lock_loop waits ROUNDS     two threads take turns on one mutex, holding it for a
//                                     spread of times from 2 us to 200 us (busy, not sleeping:
//                                     many waits are shorter than the default rate); each
//                                     measures its own waits around pthread_mutex_lock;
//                                     prints "true_wait_ns X"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace {

int64_t NowNs() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
volatile uint64_t g_shared = 0;

void Spin(int64_t ns) {
  const int64_t until = NowNs() + ns;
  while (NowNs() < until) {
  }
}

__attribute__((noinline)) void Work(int iterations) {
  for (int i = 0; i < iterations; ++i) asm volatile("" ::: "memory");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: inprof_lock_loop uncontended|uncontended_mt|contended|waits N\n");
    return 2;
  }
  const long n = atol(argv[2]);
  if (n <= 0) {
    fprintf(stderr, "inprof_lock_loop: N must be a positive number, not '%s'\n", argv[2]);
    return 2;
  }
  if (strcmp(argv[1], "uncontended") == 0 || strcmp(argv[1], "uncontended_mt") == 0) {
    // uncontended_mt: with a second thread alive (blocked, never taking the lock). The C
    // library locks and unlocks a mutex without atomic instructions while a process has one
    // thread; the runtime's own thread ends that, so a single-threaded program's locks cost
    // more under it for that alone. With a thread of the program's own, that cost is the
    // program's and what remains is the hook's.
    pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
    bool idle_done = false;
    std::thread idle;
    if (strcmp(argv[1], "uncontended_mt") == 0) {
      idle = std::thread([&] {
        pthread_mutex_lock(&idle_mu);
        while (!idle_done) pthread_cond_wait(&idle_cv, &idle_mu);
        pthread_mutex_unlock(&idle_mu);
      });
    }
    const int64_t t0 = NowNs();
    for (long i = 0; i < n; ++i) {
      pthread_mutex_lock(&g_mu);
      g_shared = g_shared + 1;
      pthread_mutex_unlock(&g_mu);
    }
    printf("ns_per_pair %.3f\n", static_cast<double>(NowNs() - t0) / static_cast<double>(n));
    if (idle.joinable()) {
      pthread_mutex_lock(&idle_mu);
      idle_done = true;
      pthread_cond_signal(&idle_cv);
      pthread_mutex_unlock(&idle_mu);
      idle.join();
    }
    return 0;
  }
  if (strcmp(argv[1], "contended") == 0) {
    const int64_t t0 = NowNs();
    auto body = [n] {
      for (long i = 0; i < n; ++i) {
        pthread_mutex_lock(&g_mu);
        Work(20);
        g_shared = g_shared + 1;
        pthread_mutex_unlock(&g_mu);
        Work(100);
      }
    };
    std::thread a(body), b(body);
    a.join();
    b.join();
    printf("ns_per_pair %.3f\n",
           static_cast<double>(NowNs() - t0) / (2.0 * static_cast<double>(n)));
    return 0;
  }
  if (strcmp(argv[1], "waits") == 0) {
    std::atomic<int64_t> waited{0};
    auto body = [n, &waited](unsigned seed) {
      for (long i = 0; i < n; ++i) {
        seed = seed * 1103515245u + 12345u;
        const int64_t hold = 2000 + static_cast<int64_t>((seed >> 8) % 198000);
        const int64_t t0 = NowNs();
        pthread_mutex_lock(&g_mu);
        waited.fetch_add(NowNs() - t0);
        Spin(hold);
        pthread_mutex_unlock(&g_mu);
        Spin(hold / 4);
      }
    };
    std::thread a(body, 1u), b(body, 2u);
    a.join();
    b.join();
    printf("true_wait_ns %lld\n", static_cast<long long>(waited.load()));
    return 0;
  }
  fprintf(stderr, "inprof_lock_loop: unknown mode '%s'\n", argv[1]);
  return 2;
}
