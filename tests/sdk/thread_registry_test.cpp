// The thread registry on its own (the static part inprof_sdk_threads, no shared library, no
// pthread_create hook): slots given to threads, retired when they exit, and reused only once
// released, under a new generation so that a late signal of the old thread cannot land in
// the new one's ring. The engine delivers nothing (MakeNullEngine): no signal is sent.
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "engines/engine.h"
#include "signal/sampler.h"
#include "threads/thread_registry.h"

namespace inprof::internal {
namespace {

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

struct Seen {
  pid_t tid = 0;
  int32_t index = -1;
  uint32_t generation = 0;
  SlotState state = SlotState::kFree;
};

// The slot of the calling thread, if it has one.
Seen SlotOfCaller(const Sampler& sampler) {
  Seen seen;
  seen.tid = Tid();
  for (uint32_t i = 0; i < sampler.slot_count; ++i) {
    const ThreadSlot& slot = sampler.slots[i];
    if (slot.tid.load() == seen.tid && slot.state.load() == SlotState::kActive) {
      seen.index = static_cast<int32_t>(i);
      seen.generation = slot.generation.load();
      seen.state = SlotState::kActive;
    }
  }
  return seen;
}

// Runs `f` on a new thread that registers itself first and unregisters last, as a thread
// started through the pthread_create hook does; returns what it saw of its slot.
template <typename F>
Seen OnRegisteredThread(ThreadRegistry& registry, const Sampler& sampler, F f) {
  Seen seen;
  std::thread t([&] {
    registry.RegisterCurrentThread();
    seen = SlotOfCaller(sampler);
    f();
    registry.UnregisterCurrentThread();
  });
  t.join();
  return seen;
}

class RegistrySlotTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> engine_ = MakeNullEngine();
  Sampler sampler_;
};

TEST_F(RegistrySlotTest, AnExitedThreadsSlotIsRetiredThenReusedUnderANewGeneration) {
  ThreadRegistry registry(&sampler_, {engine_.get()}, 100, 1);
  // Slots are constructed as threads need them.
  ASSERT_EQ(sampler_.slot_count.load(), 0u);
  const Seen first = OnRegisteredThread(registry, sampler_, [] {});
  ASSERT_EQ(first.index, 0);
  ASSERT_EQ(sampler_.slot_count.load(), 1u);
  EXPECT_EQ(sampler_.slots[0].tid.load(), first.tid);
  // Exited but not released: its ring may still hold samples the collector has not drained.
  EXPECT_EQ(sampler_.slots[0].state.load(), SlotState::kRetiring);
  EXPECT_NE(sampler_.slots[0].ring, nullptr);

  // While it is retiring the slot is no one else's: with one slot, the next thread runs
  // unsampled, counted.
  const Seen crowded = OnRegisteredThread(registry, sampler_, [] {});
  EXPECT_EQ(crowded.index, -1);
  EXPECT_EQ(registry.threads_unsampled(), 1u);

  // Released (its ring is empty): free again, and the next thread gets it.
  registry.ReleaseRetired();
  EXPECT_EQ(sampler_.slots[0].state.load(), SlotState::kFree);
  const Seen second = OnRegisteredThread(registry, sampler_, [] {});
  ASSERT_EQ(second.index, 0);
  EXPECT_NE(second.tid, first.tid);
  EXPECT_NE(second.generation, first.generation);
  EXPECT_EQ(registry.threads_seen(), 2u);
}

TEST_F(RegistrySlotTest, EveryLivingThreadHasItsOwnSlotUpToMaxThreads) {
  ThreadRegistry registry(&sampler_, {engine_.get()}, 100, 4);
  registry.RegisterCurrentThread();
  const Seen self = SlotOfCaller(sampler_);
  ASSERT_GE(self.index, 0);
  const Seen other = OnRegisteredThread(registry, sampler_, [&] {
    // Both alive now: two slots in use.
    EXPECT_NE(SlotOfCaller(sampler_).index, self.index);
  });
  ASSERT_GE(other.index, 0);
  EXPECT_NE(other.index, self.index);
  // Registering again changes nothing.
  registry.RegisterCurrentThread();
  EXPECT_EQ(SlotOfCaller(sampler_).index, self.index);
  EXPECT_EQ(registry.threads_seen(), 2u);
  registry.UnregisterCurrentThread();
  EXPECT_EQ(SlotOfCaller(sampler_).index, -1);
}

TEST_F(RegistrySlotTest, AfterRetireAllNoThreadIsRegistered) {
  ThreadRegistry registry(&sampler_, {engine_.get()}, 100, 4);
  registry.RegisterCurrentThread();
  registry.RetireAll();
  EXPECT_EQ(SlotOfCaller(sampler_).index, -1);
  const Seen late = OnRegisteredThread(registry, sampler_, [] {});
  EXPECT_EQ(late.index, -1);
  for (uint32_t i = 0; i < sampler_.slot_count; ++i) {
    EXPECT_NE(sampler_.slots[i].state.load(), SlotState::kActive) << "slot " << i;
  }
}

TEST_F(RegistrySlotTest, AnExcludedThreadIsNeverSampled) {
  ThreadRegistry registry(&sampler_, {engine_.get()}, 100, 4);
  registry.Exclude(Tid());
  registry.RegisterCurrentThread();
  EXPECT_EQ(SlotOfCaller(sampler_).index, -1);
}

}  // namespace
}  // namespace inprof::internal
