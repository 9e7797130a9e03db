/* Profiling a region of a program through the C API.
 *   build/examples/api_example            writes api.folded and api.perf.log
 */
#include <inprof/inprof.h>
#include <stdio.h>

static volatile double sink;

__attribute__((noinline)) static void busy_region(long iterations) {
  double x = 0;
  for (long i = 0; i < iterations; ++i) x += (double)(i % 7) * 0.5;
  sink = x;
}

int main(void) {
  int rc = inprof_start("frequency=250,output=api.folded,api.perf.log");
  if (rc != INPROF_OK) {
    fprintf(stderr, "inprof_start: %s: %s\n", inprof_strerror(rc), inprof_last_error());
    return 1;
  }
  busy_region(300000000L);
  if (inprof_dump("api.partial.folded") != INPROF_OK) {
    fprintf(stderr, "inprof_dump: %s\n", inprof_last_error());
  }
  busy_region(100000000L);
  rc = inprof_stop(); /* writes api.folded and api.perf.log, prints the summary line */
  return rc == INPROF_OK ? 0 : 1;
}
