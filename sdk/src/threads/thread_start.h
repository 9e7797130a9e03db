// How threads start: the runtime's own threads (never sampled), and what the pthread_create
// hook leaves of a program thread's start for the sample its exit may take. Control path.
#ifndef INPROF_SDK_THREAD_START_H_
#define INPROF_SDK_THREAD_START_H_

#include <pthread.h>
#include <sys/types.h>

#include <cstdint>

namespace inprof::internal {

// pthread_create as the C library provides it, bypassing our hook. Not async-signal-safe.
int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                      void* arg);

// Starts one of the profiler's own threads: all signals blocked, not registered for
// sampling, and returns only once the thread runs, with its tid (0 on failure) so callers
// can exclude it before any scan could see it. Not async-signal-safe.
pid_t StartInternalThread(pthread_t* thread, void* (*start)(void*), void* arg);

// The calling thread's start routine and the return address into the thread library's start
// function, leaf first, as a sample's frames (pthread_create hook); returns how many, 0 when
// the thread did not start through the hook.
uint32_t ThreadStartFrames(uintptr_t* frames);
// Set by the pthread_create hook's trampoline on the new thread, before anything else.
void SetThreadStartFrames(uintptr_t start, uintptr_t return_address);

}  // namespace inprof::internal

#endif  // INPROF_SDK_THREAD_START_H_
