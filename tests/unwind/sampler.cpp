#include "sampler.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace inprof::testing {
namespace {

std::atomic<Sampler*> g_sampler{nullptr};

}  // namespace

Sampler::Sampler(size_t slots, size_t stack_bytes) : slots_(slots), stack_bytes_(stack_bytes) {
  for (auto& slot : slots_) {
    slot.data = std::make_unique<uint8_t[]>(stack_bytes);
    std::memset(slot.data.get(), 0, stack_bytes);  // prefault: the handler must not fault
  }
  bounds_ = CurrentThreadStack();
}

Sampler::~Sampler() { Stop(); }

StackBounds Sampler::CurrentThreadStack() {
  pthread_attr_t attr;
  StackBounds bounds;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return bounds;
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  bounds.lo = reinterpret_cast<uintptr_t>(addr);
  bounds.hi = bounds.lo + size;
  return bounds;
}

void Sampler::Handler(int, siginfo_t* info, void* context) {
  if (info->si_code != SI_TIMER) return;
  Sampler* self = g_sampler.load(std::memory_order_acquire);
  if (self == nullptr) return;
  const unsigned index = self->taken_.load(std::memory_order_relaxed);
  if (index >= self->slots_.size()) return;
  CapturedStack& slot = self->slots_[index];
  CopyStack(static_cast<const ucontext_t*>(context), self->bounds_, slot.data.get(),
            self->stack_bytes_, &slot.copy);
  slot.fp = FpWalk(static_cast<const ucontext_t*>(context), self->bounds_, self->code_,
                   slot.fp_frames, CapturedStack::kMaxFpFrames);
  self->taken_.store(index + 1, std::memory_order_release);
}

void Sampler::Start(long interval_us) {
  g_sampler.store(this, std::memory_order_release);
  struct sigaction sa {};
  sa.sa_sigaction = Handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, nullptr) != 0) throw std::runtime_error("sigaction");
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) throw std::runtime_error("timer_create");
  timer_ = timer;
  itimerspec spec{};
  spec.it_interval.tv_nsec = interval_us * 1000;
  spec.it_value.tv_nsec = interval_us * 1000;
  timer_settime(timer, 0, &spec, nullptr);
  timer_armed_ = true;
}

void Sampler::Stop() {
  if (!timer_armed_) return;
  timer_delete(static_cast<timer_t>(timer_));
  timer_armed_ = false;
  // Discard an expiry already queued, so that no sample lands after Stop().
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGPROF);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  const timespec zero{};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Sampler::Reset() { taken_.store(0, std::memory_order_release); }

}  // namespace inprof::testing
