// pthread_create interposition: every thread the program creates registers itself for
// sampling before its start routine runs, so no thread needs a call from the user and
// short-lived threads are sampled from their first instruction. Works preloaded and
// linked: the executable's references to pthread_create bind to the first definition in
// load order, which is ours whenever libinprof precedes libc (always for LD_PRELOAD, and for
// a link with -linprof). Control path.
#include <dlfcn.h>
#include <pthread.h>

#include <new>

#include "internal/runtime.h"
#include "internal/session.h"

namespace inprof::internal {
namespace {

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

PthreadCreateFn NextPthreadCreate() {
  static PthreadCreateFn next = [] {
    auto fn = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
    if (fn == nullptr) fn = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_DEFAULT, "pthread_create"));
    return fn;
  }();
  return next;
}

struct StartArgs {
  void* (*start)(void*);
  void* arg;
};

void* Trampoline(void* p) {
  StartArgs args = *static_cast<StartArgs*>(p);
  delete static_cast<StartArgs*>(p);
  RuntimeOnThreadStart();
  return args.start(args.arg);
}

}  // namespace

int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                      void* arg) {
  return NextPthreadCreate()(thread, attr, start, arg);
}

}  // namespace inprof::internal

extern "C" __attribute__((visibility("default"))) int pthread_create(
    pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using namespace inprof::internal;
  auto* args = new (std::nothrow) StartArgs{start, arg};
  if (args == nullptr) return RealPthreadCreate(thread, attr, start, arg);
  const int rc = RealPthreadCreate(thread, attr, &Trampoline, args);
  if (rc != 0) delete args;
  return rc;
}
