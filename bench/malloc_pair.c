/* alloc_overhead.sh: PAIRS malloc(SIZE) + free pairs in a tight loop, timed in the program
 * (so start-up and the profile's write at exit are left out); prints nanoseconds per pair.
 *   inprof_malloc_pair [PAIRS] [SIZE]
 * Defaults: 20,000,000 pairs of 32 bytes. The pointer escapes through an empty asm, so the
 * compiler cannot drop the pair. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void Pairs(long n, size_t size) {
  for (long i = 0; i < n; ++i) {
    void* p = malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
}

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? atol(argv[1]) : 20000000L;
  const long size = argc > 2 ? atol(argv[2]) : 32;
  if (pairs <= 0 || size <= 0) {
    fprintf(stderr, "usage: inprof_malloc_pair [PAIRS > 0] [SIZE > 0]\n");
    return 2;
  }
  Pairs(pairs / 20 + 1, (size_t)size); /* warm the allocator's caches and the runtime's state */
  const double start = Now();
  Pairs(pairs, (size_t)size);
  printf("%.3f\n", (Now() - start) / (double)pairs);
  return 0;
}
