// Known-stack tests of the DWARF unwinders: real timer signals copy the stack of code built
// without frame pointers (fixtures/nofp_fixture.cpp), the copies are unwound afterwards, and
// the symbolized chains must hold the expected functions in order, up to main. Every test
// runs with every backend.
#include <dlfcn.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures/nofp_fixture.h"
#include "inprof/dwarf_unwind.h"
#include "inprof/symbolize.h"
#include "sampler.h"

namespace inprof {
namespace {

using testing::Sampler;

constexpr uint32_t kMaxFrames = 256;
constexpr size_t kStackBytes = 64 * 1024;
constexpr long kIntervalUs = 500;

struct Chain {
  std::vector<uintptr_t> pcs;
  UnwindStop stop = UnwindStop::kError;
};

Chain UnwindSample(DwarfUnwinder& unwinder, const testing::CapturedStack& sample,
                   uint32_t max = kMaxFrames) {
  Chain chain;
  chain.pcs.resize(max);
  UnwindResult r = unwinder.Unwind(sample.copy, sample.data.get(), chain.pcs.data(), max);
  chain.pcs.resize(r.depth);
  chain.stop = r.stop;
  return chain;
}

// The outermost (non-inlined) function of each frame; return addresses are looked up at
// address - 1 so that a call at the end of a function still resolves to that function.
std::vector<std::string> Names(Symbolizer& symbolizer, const Chain& chain) {
  std::vector<std::string> names;
  for (size_t i = 0; i < chain.pcs.size(); ++i) {
    names.push_back(symbolizer.Symbolize(i == 0 ? chain.pcs[i] : chain.pcs[i] - 1).back().function);
  }
  return names;
}

std::string Describe(const std::vector<std::string>& names, UnwindStop stop) {
  std::string out;
  for (const auto& n : names) out += "  " + n + "\n";
  return out + "  stop: " + UnwindStopName(stop) + "\n";
}

// Index of the first frame whose function contains `needle` at or after `from`, or -1.
int Find(const std::vector<std::string>& names, const std::string& needle, int from = 0) {
  for (int i = std::max(from, 0); i < static_cast<int>(names.size()); ++i) {
    if (names[i].find(needle) != std::string::npos) return i;
  }
  return -1;
}

// Asserts that `expected` appear in this order (not necessarily adjacent), `main` after them.
void ExpectInOrder(const std::vector<std::string>& names, UnwindStop stop,
                   const std::vector<std::string>& expected) {
  int at = 0;
  for (const auto& e : expected) {
    const int found = Find(names, e, at);
    ASSERT_GE(found, 0) << "missing " << e << " after frame " << at << " in\n"
                        << Describe(names, stop);
    at = found + 1;
  }
  const auto main_it = std::find(names.begin() + at, names.end(), "main");
  EXPECT_NE(main_it, names.end()) << "main not reached:\n" << Describe(names, stop);
  EXPECT_EQ(stop, UnwindStop::kRoot) << Describe(names, stop);
}

bool ReachesMain(const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), "main") != names.end();
}

class DwarfUnwindTest : public ::testing::TestWithParam<DwarfBackend> {
 protected:
  void SetUp() override {
    auto created = DwarfUnwinder::Create(GetParam());
    ASSERT_TRUE(created.ok()) << created.status().message();
    unwinder_ = std::move(*created);
    EXPECT_EQ(unwinder_->backend(), GetParam());
  }

  std::unique_ptr<DwarfUnwinder> unwinder_;
  Symbolizer symbolizer_;
};

TEST_P(DwarfUnwindTest, KnownStackWithoutFramePointersReachesMain) {
  Sampler sampler(64, kStackBytes);
  sampler.Start(kIntervalUs);
  const unsigned index = nofp_chain_a(&sampler.taken());
  sampler.Stop();
  ASSERT_LT(index, sampler.taken().load());
  const auto& sample = sampler.sample(index);
  EXPECT_FALSE(sample.copy.sp_outside_bounds);
  EXPECT_GT(sample.copy.bytes, 0u);
  Chain chain = UnwindSample(*unwinder_, sample);
  auto names = Names(symbolizer_, chain);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "nofp_leaf") << Describe(names, chain.stop);
  ExpectInOrder(names, chain.stop,
                {"nofp_leaf", "nofp_chain_c", "nofp_chain_b", "nofp_chain_a", "TestBody"});
}

// Debian's libc is built without frame pointers: only DWARF gets from a qsort comparator
// through qsort back to the caller. The bar: >= 97 % of samples reach main.
TEST_P(DwarfUnwindTest, QsortComparatorSamplesReachMain) {
  constexpr unsigned kSamples = 2000;
  Sampler sampler(kSamples, kStackBytes);
  sampler.Start(kIntervalUs);
  nofp_sort_until(&sampler.taken(), kSamples);
  sampler.Stop();
  unsigned to_main = 0, in_comparator = 0, comparator_through_qsort = 0;
  std::map<std::string, int> failures;
  for (unsigned i = 0; i < kSamples; ++i) {
    Chain chain = UnwindSample(*unwinder_, sampler.sample(i));
    auto names = Names(symbolizer_, chain);
    const bool main = ReachesMain(names);
    to_main += main;
    if (!names.empty() && names[0] == "nofp_compare") {
      ++in_comparator;
      const int qsort = Find(names, "qsort");
      const int caller = Find(names, "nofp_sort_until");
      comparator_through_qsort += main && qsort > 0 && caller > qsort;
    }
    if (!main && failures.size() < 5) failures[Describe(names, chain.stop)]++;
  }
  std::string examples;
  for (const auto& [text, n] : failures) examples += text + "\n";
  std::printf("%u samples: %u reach main, %u in the comparator, %u of those through qsort\n",
              kSamples, to_main, in_comparator, comparator_through_qsort);
  EXPECT_GE(to_main, kSamples * 97 / 100) << "samples not reaching main, e.g.:\n" << examples;
  // The comparator is the hot path, and its samples go through qsort to the caller.
  EXPECT_GE(in_comparator, kSamples / 2);
  EXPECT_GE(comparator_through_qsort, in_comparator * 97 / 100) << examples;
}

TEST_P(DwarfUnwindTest, SmallWindowIsReportedAsTruncated) {
  constexpr int kDepth = 40;  // ~40 frames of 256+ bytes: far more than the window below
  Sampler full(64, kStackBytes);
  full.Start(kIntervalUs);
  const unsigned full_index = nofp_recurse(kDepth, &full.taken());
  full.Stop();
  Chain full_chain = UnwindSample(*unwinder_, full.sample(full_index));
  auto full_names = Names(symbolizer_, full_chain);
  EXPECT_EQ(full_chain.stop, UnwindStop::kRoot) << Describe(full_names, full_chain.stop);
  EXPECT_GE(std::count(full_names.begin(), full_names.end(), "nofp_recurse"), kDepth);

  Sampler small(64, 1024);
  small.Start(kIntervalUs);
  const unsigned index = nofp_recurse(kDepth, &small.taken());
  small.Stop();
  const auto& sample = small.sample(index);
  EXPECT_TRUE(sample.copy.window_full);
  EXPECT_EQ(sample.copy.bytes, 1024u);
  Chain chain = UnwindSample(*unwinder_, sample);
  auto names = Names(symbolizer_, chain);
  EXPECT_EQ(chain.stop, UnwindStop::kTruncated) << Describe(names, chain.stop);
  // What was unwound is right as far as it goes: the leaf and some recursion frames.
  ASSERT_GE(names.size(), 2u) << Describe(names, chain.stop);
  EXPECT_EQ(names[0], "nofp_leaf");
  EXPECT_EQ(names[1], "nofp_recurse");
  EXPECT_LT(names.size(), full_names.size());
  EXPECT_FALSE(ReachesMain(names));
}

// An application's own signal handler interrupted by the sampling signal: the chain goes
// through the handler, the kernel's signal frame, the code that raised the signal, to main.
TEST_P(DwarfUnwindTest, UnwindsThroughAnApplicationSignalFrame) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = nofp_app_handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  Sampler sampler(64, kStackBytes);
  sampler.Start(kIntervalUs);
  const unsigned index = nofp_raise_and_wait(SIGUSR2, &sampler.taken());
  sampler.Stop();
  sigaction(SIGUSR2, &old, nullptr);
  Chain chain = UnwindSample(*unwinder_, sampler.sample(index));
  auto names = Names(symbolizer_, chain);
  Dl_info info;
  if (chain.pcs.size() > 2 && dladdr(reinterpret_cast<void*>(chain.pcs[2]), &info) == 0) {
    // The kernel returns from handlers through libc's __restore_rt (x86-64) or the vDSO's
    // __kernel_rt_sigreturn (aarch64). qemu-user uses a page of its own instead, which is in
    // no module, so nothing can be known about it.
    GTEST_SKIP() << "the signal return trampoline is in no loaded module (qemu-user?)";
  }
  ExpectInOrder(names, chain.stop,
                {"nofp_leaf", "nofp_app_handler", "raise", "nofp_raise_and_wait", "TestBody"});
}

// A library loaded after the unwinder read the module list is unknown until
// RefreshModules(), and unwinds like any other afterwards.
TEST_P(DwarfUnwindTest, DlopenedLibraryAfterRefresh) {
  EXPECT_FALSE(unwinder_->ModulesChanged());
  void* handle = dlopen(INPROF_DL_FIXTURE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using Entry = unsigned (*)(const std::atomic<unsigned>*);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "dl_fixture_entry"));
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(unwinder_->ModulesChanged());

  Sampler sampler(64, kStackBytes);
  sampler.Start(kIntervalUs);
  const unsigned index = entry(&sampler.taken());
  sampler.Stop();
  const auto& sample = sampler.sample(index);

  Chain stale = UnwindSample(*unwinder_, sample);

  symbolizer_.RefreshModules();
  Status refreshed = unwinder_->RefreshModules();
  ASSERT_TRUE(refreshed.ok()) << refreshed.message();
  EXPECT_FALSE(unwinder_->ModulesChanged());
  Chain chain = UnwindSample(*unwinder_, sample);
  auto names = Names(symbolizer_, chain);
  ExpectInOrder(names, chain.stop, {"dl_fixture_leaf", "dl_fixture_entry", "TestBody"});
  // Before the refresh the library's unwind info was unknown: that chain was different
  // (ended early, or skipped frames through a frame-pointer guess).
  EXPECT_NE(stale.pcs, chain.pcs);
  dlclose(handle);
}

TEST_P(DwarfUnwindTest, DepthLimitKeepsTheInnermostFrames) {
  Sampler sampler(64, kStackBytes);
  sampler.Start(kIntervalUs);
  const unsigned index = nofp_chain_a(&sampler.taken());
  sampler.Stop();
  Chain full = UnwindSample(*unwinder_, sampler.sample(index));
  ASSERT_GT(full.pcs.size(), 4u);
  Chain limited = UnwindSample(*unwinder_, sampler.sample(index), 3);
  EXPECT_EQ(limited.stop, UnwindStop::kDepthLimit);
  ASSERT_EQ(limited.pcs.size(), 3u);
  EXPECT_TRUE(std::equal(limited.pcs.begin(), limited.pcs.end(), full.pcs.begin()));
}

TEST_P(DwarfUnwindTest, RegistersOnlyCopyGivesThePc) {
  Sampler sampler(64, kStackBytes);
  sampler.Start(kIntervalUs);
  const unsigned index = nofp_chain_a(&sampler.taken());
  sampler.Stop();
  testing::CapturedStack sample;
  sample.copy = sampler.sample(index).copy;
  sample.copy.bytes = 0;
  sample.copy.sp_outside_bounds = true;
  Chain chain = UnwindSample(*unwinder_, sample);
  EXPECT_EQ(chain.stop, UnwindStop::kNoStack);
  ASSERT_EQ(chain.pcs.size(), 1u);
  EXPECT_EQ(chain.pcs[0], sample.copy.regs.pc);
}

// Corrupt copies end the walk with a reason and never read outside the copy or the modules.
TEST_P(DwarfUnwindTest, GarbageEndsTheWalkSafely) {
  Sampler sampler(64, kStackBytes);
  sampler.Start(kIntervalUs);
  const unsigned index = nofp_chain_a(&sampler.taken());
  sampler.Stop();
  const auto& real = sampler.sample(index);

  testing::CapturedStack bad_pc;
  bad_pc.copy = real.copy;
  bad_pc.data = std::make_unique<uint8_t[]>(real.copy.bytes);
  std::memcpy(bad_pc.data.get(), real.data.get(), real.copy.bytes);
  bad_pc.copy.regs.pc = 0x1234;
  for (uint32_t r = 0; r < bad_pc.copy.regs.count; ++r) {
    if (bad_pc.copy.regs.regs[r] == real.copy.regs.pc) bad_pc.copy.regs.regs[r] = 0x1234;
  }
  Chain chain = UnwindSample(*unwinder_, bad_pc);
  ASSERT_GE(chain.pcs.size(), 1u);
  EXPECT_EQ(chain.pcs[0], 0x1234u);
  // Both backends then guess (a return address at sp, a frame-pointer chain): what they find
  // is best effort, but the walk ends.

  testing::CapturedStack noise;
  noise.copy = real.copy;
  noise.data = std::make_unique<uint8_t[]>(real.copy.bytes);
  uint64_t x = 88172645463325252ull;
  for (uint32_t i = 0; i + 8 <= real.copy.bytes; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(noise.data.get() + i, &x, 8);
  }
  chain = UnwindSample(*unwinder_, noise);
  EXPECT_NE(chain.stop, UnwindStop::kRoot);
  EXPECT_GE(chain.pcs.size(), 1u);
  EXPECT_LT(chain.pcs.size(), 8u);
}

INSTANTIATE_TEST_SUITE_P(Backends, DwarfUnwindTest,
                         ::testing::Values(DwarfBackend::kLibunwind, DwarfBackend::kLibdwfl),
                         [](const auto& info) {
                           return info.param == DwarfBackend::kLibunwind ? "libunwind" : "libdwfl";
                         });

// Both backends give the same chains and stop reasons on the same copies: whole stacks
// through qsort, and 4 KiB windows of a deep recursion (truncated).
unsigned CompareBackends(DwarfUnwinder& a, DwarfUnwinder& b, const Sampler& sampler,
                         unsigned count, std::string* example) {
  Symbolizer symbolizer;
  unsigned same = 0;
  for (unsigned i = 0; i < count; ++i) {
    Chain ca = UnwindSample(a, sampler.sample(i));
    Chain cb = UnwindSample(b, sampler.sample(i));
    if (ca.pcs == cb.pcs && ca.stop == cb.stop) {
      ++same;
    } else if (example->empty()) {
      *example = "libunwind:\n" + Describe(Names(symbolizer, ca), ca.stop) + "libdwfl:\n" +
                 Describe(Names(symbolizer, cb), cb.stop);
    }
  }
  return same;
}

TEST(DwarfBackendsTest, SameChainsOnTheSameCopies) {
  auto created_a = DwarfUnwinder::Create(DwarfBackend::kLibunwind);
  ASSERT_TRUE(created_a.ok()) << created_a.status().message();
  auto created_b = DwarfUnwinder::Create(DwarfBackend::kLibdwfl);
  ASSERT_TRUE(created_b.ok()) << created_b.status().message();
  std::unique_ptr<DwarfUnwinder> a = std::move(*created_a);
  std::unique_ptr<DwarfUnwinder> b = std::move(*created_b);

  constexpr unsigned kSamples = 500;
  Sampler whole(kSamples, kStackBytes);
  whole.Start(kIntervalUs);
  nofp_sort_until(&whole.taken(), kSamples);
  whole.Stop();
  std::string example;
  const unsigned same = CompareBackends(*a, *b, whole, kSamples, &example);
  std::printf("whole stacks: %u of %u identical\n", same, kSamples);
  EXPECT_GE(same, kSamples * 99 / 100) << example;

  constexpr unsigned kWindows = 100;
  Sampler windows(kWindows, 4096);
  windows.Start(kIntervalUs);
  // Each call waits for two more samples: stop while two slots are left.
  while (windows.taken().load() + 2 < kWindows) nofp_recurse(60, &windows.taken());
  windows.Stop();
  unsigned truncated = 0;
  const unsigned taken = windows.taken().load();
  for (unsigned i = 0; i < taken; ++i) {
    truncated += UnwindSample(*a, windows.sample(i)).stop == UnwindStop::kTruncated;
  }
  example.clear();
  const unsigned same_windows = CompareBackends(*a, *b, windows, taken, &example);
  std::printf("4 KiB windows: %u of %u identical, %u truncated\n", same_windows, taken,
              truncated);
  EXPECT_GE(truncated, taken / 2);
  EXPECT_GE(same_windows, taken * 99 / 100) << example;
}

}  // namespace
}  // namespace inprof
