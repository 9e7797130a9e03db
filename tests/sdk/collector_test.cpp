// The collector on its own (the static part inprof_sdk_collector, no shared library, no
// signal): samples left in a thread's ring come out as stacks adjusted for lookup, in order,
// to the sink that aggregates them; a retired thread's ring is drained before its slot is
// released; and the code ranges the handler checks addresses against cover the program's
// code and nothing unmapped.
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "collector/collector.h"
#include "collector/stack_table.h"
#include "engines/engine.h"
#include "inprof/thread_annotations.h"
#include "signal/sample_record.h"
#include "signal/sampler.h"
#include "threads/thread_registry.h"

namespace inprof::internal {
namespace {

// What the session does with a drained sample: the thread marker appended, into its table.
class TableSink : public SampleSink {
 public:
  void OnSample(ThreadSlot& slot, StackBuffer& stack, const SampleMeta& meta) override {
    stack.push(kThreadMarker | static_cast<uintptr_t>(slot.tid.load()));
    table.Add(stack.frames(), meta.weight, meta.event);
    ++samples;
  }
  void OnDrained() override {}
  void OnModulesChanged() override {}
  StackTable table{1 << 20, 1};
  int samples = 0;
};

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

ThreadSlot* SlotOf(Sampler& sampler, pid_t tid) {
  for (uint32_t i = 0; i < sampler.slot_count; ++i) {
    if (sampler.slots[i].tid.load() == tid && sampler.slots[i].state.load() != SlotState::kFree) {
      return &sampler.slots[i];
    }
  }
  return nullptr;
}

// What the handler leaves in the ring: a walked stack, leaf first.
void Leave(ThreadSlot& slot, std::vector<uintptr_t> frames, uint32_t weight) {
  GivenStack given{static_cast<uint32_t>(slot.tid.load()), weight, 0, 0, 0,
                   frames.data(), static_cast<uint32_t>(frames.size()), false};
  ASSERT_TRUE(slot.ring->try_emplace(given));
}

std::vector<std::pair<std::vector<uintptr_t>, uint64_t>> Stacks(const StackTable& table) {
  std::vector<std::pair<std::vector<uintptr_t>, uint64_t>> out;
  table.ForEach([&](std::span<const uintptr_t> frames, std::span<const uint64_t> weights) {
    out.emplace_back(std::vector<uintptr_t>(frames.begin(), frames.end()), weights[0]);
  });
  return out;
}

class CollectorDrainTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> engine_ = MakeNullEngine();
  Sampler sampler_;
  Mutex mu_;
  TableSink sink_;
};

TEST_F(CollectorDrainTest, RingsDrainIntoTheTableAsLookupAddresses) {
  ThreadRegistry registry(&sampler_, {engine_.get()}, 100, 4);
  registry.RegisterCurrentThread();
  ThreadSlot* slot = SlotOf(sampler_, Tid());
  ASSERT_NE(slot, nullptr);
  Collector collector(&sampler_, &mu_, &sink_, nullptr);
  // The same stack twice, one other: the leaf is the interrupted pc itself, every caller a
  // return address looked up at -1 (the call's line, not the next statement's).
  Leave(*slot, {0x401005, 0x402010, 0x403020}, 1);
  Leave(*slot, {0x401005, 0x402010, 0x403020}, 2);
  Leave(*slot, {0x409000, 0x403020}, 1);
  {
    MutexLock lock(&mu_);
    collector.DrainLocked();
  }
  EXPECT_EQ(sink_.samples, 3);
  EXPECT_EQ(slot->ring->peek(), nullptr);
  const uintptr_t thread = kThreadMarker | static_cast<uintptr_t>(Tid());
  auto stacks = Stacks(sink_.table);
  ASSERT_EQ(stacks.size(), 2u);
  EXPECT_EQ(stacks[0].first, (std::vector<uintptr_t>{0x401005, 0x40200f, 0x40301f, thread}));
  EXPECT_EQ(stacks[0].second, 3u);
  EXPECT_EQ(stacks[1].first, (std::vector<uintptr_t>{0x409000, 0x40301f, thread}));
  EXPECT_EQ(stacks[1].second, 1u);
  registry.UnregisterCurrentThread();
}

TEST_F(CollectorDrainTest, AnExitedThreadsSamplesAreDrainedBeforeItsSlotIsReleased) {
  ThreadRegistry registry(&sampler_, {engine_.get()}, 100, 1);
  Collector collector(&sampler_, &mu_, &sink_, nullptr);
  pid_t tid = 0;
  std::thread t([&] {
    registry.RegisterCurrentThread();
    tid = Tid();
    Leave(*SlotOf(sampler_, tid), {0x401005, 0x402010}, 1);
    registry.UnregisterCurrentThread();
  });
  t.join();
  ThreadSlot& slot = sampler_.slots[0];
  ASSERT_EQ(slot.state.load(), SlotState::kRetiring);
  // Not released while its ring holds a sample: the sample would be lost with it.
  registry.ReleaseRetired();
  EXPECT_EQ(slot.state.load(), SlotState::kRetiring);
  {
    MutexLock lock(&mu_);
    collector.DrainLocked();
  }
  EXPECT_EQ(sink_.samples, 1);
  registry.ReleaseRetired();
  EXPECT_EQ(slot.state.load(), SlotState::kFree);
  auto stacks = Stacks(sink_.table);
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0].first.back(), kThreadMarker | static_cast<uintptr_t>(tid));
}

int CodeInThisProgram() { return 42; }

TEST_F(CollectorDrainTest, CodeRangesCoverLoadedCodeAndNothingUnmapped) {
  Collector collector(&sampler_, &mu_, &sink_, nullptr);
  ASSERT_TRUE(collector.RefreshCodeRanges(true));
  const CodeRanges* code = sampler_.code.load();
  ASSERT_NE(code, nullptr);
  ASSERT_GT(code->count, 0u);
  // The table is sorted and its ranges do not overlap: the handler binary-searches it.
  for (size_t i = 0; i < code->count; ++i) {
    EXPECT_LT(code->ranges[i][0], code->ranges[i][1]) << i;
    if (i > 0) {
      EXPECT_LE(code->ranges[i - 1][1], code->ranges[i][0]) << i;
    }
  }
  EXPECT_TRUE(code->Contains(reinterpret_cast<uintptr_t>(&CodeInThisProgram)));
  EXPECT_TRUE(code->Contains(reinterpret_cast<uintptr_t>(&abort)));  // libc
  EXPECT_FALSE(code->Contains(0x10));
  int on_stack = 0;
  EXPECT_FALSE(code->Contains(reinterpret_cast<uintptr_t>(&on_stack)));  // data, not code
  // Nothing was loaded or unloaded since: no new table to publish.
  EXPECT_FALSE(collector.RefreshCodeRanges(false));
  EXPECT_EQ(sampler_.code.load(), code);
}

}  // namespace
}  // namespace inprof::internal
