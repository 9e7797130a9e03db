/* inprof — in-process sampling profiler. C API.
 *
 * Start sampling every thread of the process, dump the profile so far to files, stop.
 * The same library also starts by itself when INPROF_OUTPUT, INPROF_HTTP or INPROF_PUSH_URL
 * is set in the environment (preloaded with LD_PRELOAD or linked), and writes its outputs at
 * exit.
 *
 * Configuration: a string of `key=value` items separated by commas, with the same keys as
 * the INPROF_* environment variables in lower case without the prefix. Every key, its
 * default and its accepted values are described in one place: the table under
 * "Configuration" in README.md at the root of the source tree.
 *
 * Because output lists contain commas, an item without '=' continues the previous value:
 * "output=out.folded,perf.log,frequency=250" has two outputs.
 *
 * Errors: every function returns INPROF_OK (0) or a negative inprof_error code;
 * inprof_strerror() names the code and inprof_last_error() gives the full message of the
 * calling thread's most recent failure (which key, which path, what to do).
 *
 * Thread-safety: all functions may be called from any thread, concurrently.
 * None of them is async-signal-safe.
 */
#ifndef INPROF_INPROF_H_
#define INPROF_INPROF_H_

#if defined(__GNUC__)
#define INPROF_EXPORT __attribute__((visibility("default")))
#else
#define INPROF_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum inprof_error {
  INPROF_OK = 0,
  INPROF_ERR_CONFIG = -1,          /* malformed configuration: unknown key, bad value */
  INPROF_ERR_ALREADY_STARTED = -2, /* inprof_start while a profile is running */
  INPROF_ERR_NOT_STARTED = -3,     /* inprof_stop without a running profile, inprof_dump
                                      before the first inprof_start */
  INPROF_ERR_OUTPUT = -4,          /* an output could not be written */
  INPROF_ERR_SYSTEM = -5,          /* the system refused a resource (timer, signal, thread) */
  INPROF_ERR_INTERNAL = -6         /* a bug in inprof: please report it */
};

/* Starts profiling every thread of the process. `config` is a key=value list as described
 * above, or NULL to read the INPROF_* environment variables. */
INPROF_EXPORT int inprof_start(const char* config);

/* Writes the profile collected so far to `outputs` (comma-separated paths, formats by
 * name; in a path, "\\," is a comma, "\\\\" a backslash and "\\xHH" the byte HH, as in
 * INPROF_OUTPUT), or to the configured outputs when `outputs` is NULL. Profiling continues. After
 * inprof_stop it writes the profile that was stopped, until the next inprof_start. Each
 * output is written atomically; when one fails the others are still written and the call
 * returns INPROF_ERR_OUTPUT. */
INPROF_EXPORT int inprof_dump(const char* outputs);

/* With allocation sampling on (events=alloc): writes the sampled allocations live now, and
 * everything allocated so far, to `path` (one path; format by name, e.g. "heap.pb.gz"):
 * events inuse_space, inuse_objects, alloc_space, alloc_objects, in that order. Profiling
 * continues. INPROF_ERR_NOT_STARTED when no profile is running or it does not sample
 * allocations. */
INPROF_EXPORT int inprof_heap_snapshot(const char* path);

/* Stops profiling, writes the configured outputs (if any) and prints the summary line on
 * stderr unless quiet. A profile that took no sample writes no file (inprof_dump still
 * writes it on request). Everything the profiler installed is removed. */
INPROF_EXPORT int inprof_stop(void);

/* 1 while a profile is running, 0 otherwise. */
INPROF_EXPORT int inprof_is_running(void);

/* A short static description of an error code. Never NULL. */
INPROF_EXPORT const char* inprof_strerror(int error);

/* The full message of the calling thread's most recent failed call ("" if none). The
 * pointer stays valid until the next inprof call on this thread. */
INPROF_EXPORT const char* inprof_last_error(void);

/* Labels: key/value context on the calling thread ("endpoint" = "/api/users", "tenant" =
 * "acme"). Every sample the thread takes carries the labels it had at that moment; they reach
 * pprof (sample labels), Pyroscope (one series per label set), the annotation JSON (totals per
 * value), speedscope files and the viewer (`--label KEY=VALUE`, `top --by-label KEY`).
 * Labels may be set whether or not a profile is running, and cost a few nanoseconds when the
 * thread has made the same change before (docs/labels.md).
 *
 * Keys: 1-64 bytes of letters, digits, '_' and '.', starting with a letter or '_'. Values:
 * 1-1024 bytes without control characters. A thread has at most 16 labels, the process at
 * most 4096 distinct sets of them: past that the thread's samples are labelled
 * "[overflow]" (counted in the summary) and INPROF_ERR_SYSTEM is returned.
 * inprof_label_set replaces the key's value if the thread had one; inprof_label_clear(NULL)
 * removes every label. A bad key or value returns INPROF_ERR_CONFIG and changes nothing.
 * These functions never block on the profiler and are not async-signal-safe. */
INPROF_EXPORT int inprof_label_set(const char* key, const char* value);
INPROF_EXPORT int inprof_label_clear(const char* key);

/* The calling thread's labels as one number, and putting them back: what a scope guard
 * does (inprof::ScopedLabel in <inprof/inprof.hpp>). inprof_labels_restore refuses (returns
 * INPROF_ERR_CONFIG) a number inprof_labels_save never returned. */
typedef unsigned int inprof_labels_t;
INPROF_EXPORT inprof_labels_t inprof_labels_save(void);
INPROF_EXPORT int inprof_labels_restore(inprof_labels_t saved);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* INPROF_INPROF_H_ */
