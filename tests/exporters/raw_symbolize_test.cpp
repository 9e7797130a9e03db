// Symbolizing raw profiles (SymbolizeRawProfile) with the live symbolizer, on functions of this
// test program, and merging processes' profiles (MergeProfiles).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "inprof/merge.h"
#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"
#include "inprof/symbolize_raw.h"
#include "raw_test_util.h"
#include "test_support.h"

// Known functions for the live symbolizer: not inlined, not merged, not tail-called.
extern "C" __attribute__((noinline)) int InprofRawTestLeaf(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}
extern "C" __attribute__((noinline)) int InprofRawTestCaller(int x) {
  const int r = InprofRawTestLeaf(x) + 1;
  asm volatile("" ::: "memory");
  return r;
}

namespace inprof::test {
namespace {

// ---------------------------------------------------------------------------------------------
// SymbolizeRawProfile with the live symbolizer, on functions of this test program.

uint64_t Address(int (*function)(int)) { return reinterpret_cast<uint64_t>(function); }

TEST(SymbolizeRawProfile, BuildsFramesSamplesAndTotalsFromStacks) {
  const uint64_t leaf = Address(InprofRawTestLeaf);
  const uint64_t caller = Address(InprofRawTestCaller);
  RawProfile raw;
  raw.meta = {"/bin/test", 77, 1000, 2000};
  raw.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 999}, EventInfo{"wall", "ns", 20, 50, 1}};
  raw.health.samples = 5;
  raw.health.unknown_frames = 12345;  // recomputed
  raw.health.threads = {ThreadHealth{11, "old", 1, 1, 1, 1}, ThreadHealth{12, "kept", 1, 1, 1, 1}};
  raw.health.warnings = {"w"};
  raw.threads = {RawThread{11, "worker"}, RawThread{12, ""}, RawThread{13, "other"}};
  Frame lua;
  lua.function = "tick";
  lua.file = "/g/main.lua";
  lua.line = 7;
  lua.module = "[lua]";
  raw.lua_frames = {lua};
  const uint64_t unknown = 0x10;  // in no module
  raw.stacks = {
      {{leaf, caller, kRawThreadTag | 11}, {3, 1}},
      {{caller, kRawTruncated, kRawThreadTag | 12}, {4, 0}},
      {{kRawLuaTag | 0, kRawOverflow, leaf}, {5, 2}},
      {{kRawLuaTag | 9, unknown, unknown}, {1, 1}},
  };

  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  const Profile p = SymbolizeRawProfile(raw, symbolizer);

  EXPECT_EQ(p.meta.program, "/bin/test");
  EXPECT_EQ(p.meta.pid, 77);
  EXPECT_EQ(p.meta.start_time_ns, 1000);
  EXPECT_EQ(p.meta.duration_ns, 2000);
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[0].total_weight, 13);  // the samples' sum, not the raw 999
  EXPECT_EQ(p.events[1].total_weight, 4);
  EXPECT_EQ(p.events[1].period, 20u);
  EXPECT_EQ(p.health.samples, 5u);
  EXPECT_EQ(p.health.warnings, raw.health.warnings);
  ASSERT_EQ(p.health.threads.size(), 2u);
  EXPECT_EQ(p.health.threads[0].name, "worker");
  EXPECT_EQ(p.health.threads[1].name, "kept");
  EXPECT_EQ(p.health.unknown_frames, 1u);  // one frame created for the unknown address

  // Frames: per distinct address its chain, in the order stacks meet them (root first).
  auto name = [&](const Sample& s, size_t i) { return p.frames.at(s.frames.at(i)).function; };
  ASSERT_EQ(p.samples.size(), 4u);
  const Sample& s0 = p.samples[0];
  EXPECT_EQ(s0.tid, 11);
  EXPECT_EQ(s0.weights, (std::vector<int64_t>{3, 1}));
  ASSERT_GE(s0.frames.size(), 2u);
  EXPECT_NE(name(s0, 0).find("InprofRawTestCaller"), std::string::npos) << name(s0, 0);
  EXPECT_NE(name(s0, s0.frames.size() - 1).find("InprofRawTestLeaf"), std::string::npos);
  const Frame& leaf_frame = p.frames[s0.frames.back()];
  EXPECT_EQ(leaf_frame.address, leaf);
  EXPECT_EQ(leaf_frame.kind, FrameKind::kNative);
  EXPECT_TRUE(leaf_frame.file.ends_with("raw_symbolize_test.cpp")) << leaf_frame.file;
  EXPECT_GT(leaf_frame.line, 0u);
  EXPECT_FALSE(leaf_frame.module.empty());

  const Sample& s1 = p.samples[1];
  EXPECT_EQ(s1.tid, 12);
  ASSERT_EQ(s1.frames.size(), 2u);
  EXPECT_EQ(name(s1, 0), "[truncated]");
  EXPECT_EQ(p.frames[s1.frames[0]].kind, FrameKind::kSynthetic);
  EXPECT_EQ(s1.frames[1], s0.frames[0]) << "one frame per distinct address";

  const Sample& s2 = p.samples[2];
  EXPECT_EQ(s2.tid, 0);
  ASSERT_EQ(s2.frames.size(), 3u);
  EXPECT_EQ(s2.frames[0], s0.frames.back());
  EXPECT_EQ(name(s2, 1), "[overflow]");
  EXPECT_EQ(p.frames[s2.frames[2]], lua);

  const Sample& s3 = p.samples[3];
  ASSERT_EQ(s3.frames.size(), 3u);
  EXPECT_EQ(s3.frames[0], s3.frames[1]);
  EXPECT_EQ(name(s3, 0), "[unknown]");
  EXPECT_EQ(name(s3, 2), "[lua]");  // an index past lua_frames
  EXPECT_EQ(p.frames[s3.frames[2]].kind, FrameKind::kSynthetic);

  // Each address's frames are exactly the symbolizer's chain, outermost first.
  Symbolizer reference;
  reference.RefreshModules();
  const std::vector<SymbolizedFrame> chain = reference.Symbolize(leaf);
  std::vector<uint32_t> leaf_frames(s0.frames.end() - static_cast<long>(chain.size()),
                                    s0.frames.end());
  for (size_t i = 0; i < chain.size(); ++i) {
    const Frame& f = p.frames[leaf_frames[chain.size() - 1 - i]];
    EXPECT_EQ(f.function, chain[i].function);
    EXPECT_EQ(f.file, chain[i].file);
    EXPECT_EQ(f.line, chain[i].line);
    EXPECT_EQ(f.kind, chain[i].inlined ? FrameKind::kInlined : FrameKind::kNative);
  }

  // Modules: the symbolizer's, only those the frames are in.
  ASSERT_FALSE(p.modules.empty());
  for (const Module& m : p.modules) {
    bool used = false;
    for (const Frame& f : p.frames) used |= f.module == m.path;
    EXPECT_TRUE(used) << m.path;
  }
  bool has_leaf_module = false;
  for (const Module& m : p.modules) {
    has_leaf_module |= m.path == leaf_frame.module && leaf >= m.start && leaf < m.limit;
  }
  EXPECT_TRUE(has_leaf_module);
}

void ExpectSameThreads(const std::vector<ThreadInfo>& a, const std::vector<ThreadInfo>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tid, b[i].tid) << i;
    EXPECT_EQ(a[i].name, b[i].name) << i;
  }
}

// Labels select samples and the timeline places them in time: the labels tag becomes
// Sample::labels and no frame, the timeline indexes the samples as it indexed the stacks.
TEST(SymbolizeRawProfile, LabelsTimelineAndThreadNames) {
  const uint64_t leaf = Address(InprofRawTestLeaf);
  const uint64_t caller = Address(InprofRawTestCaller);
  RawProfile raw;
  raw.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 0}, EventInfo{"wall", "ns", 1, 0, 0}};
  raw.label_sets = {{Label{"a", "1"}}, {Label{"a", "2"}, Label{"b", "x"}}};
  raw.threads = {RawThread{13, "c"}, RawThread{11, "w"}, RawThread{12, ""}};
  raw.stacks = {
      {{leaf, caller, kRawThreadTag | 11, kRawLabelsTag | 2}, {2, 0}},
      {{caller, kRawThreadTag | 12}, {1, 0}},
      {{leaf, kRawLabelsTag | 9}, {1, 0}},  // no such set (a hand-made profile)
      {{leaf, kRawThreadTag | 11, kRawLabelsTag | 1}, {0, 2}},
      {{leaf, caller, kRawThreadTag | 11}, {1, 0}},  // stack 0 without its labels
  };
  // Out of time order (drained thread by thread), and two that name nothing.
  raw.timeline = {{30, 0, 0, 1}, {10, 3, 1, 2}, {20, 5, 0, 1},
                  {20, 1, 2, 1}, {10, 1, 0, 1}, {5, 0, 0, 1}};

  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  const Profile p = SymbolizeRawProfile(raw, symbolizer);

  EXPECT_EQ(p.label_sets, raw.label_sets);
  ASSERT_EQ(p.samples.size(), 5u);
  EXPECT_EQ(p.samples[0].labels, 2u);
  EXPECT_EQ(p.samples[0].tid, 11);
  EXPECT_EQ(p.samples[0].frames, p.samples[4].frames) << "the labels tag adds no frame";
  EXPECT_EQ(p.samples[4].labels, 0u);
  EXPECT_EQ(p.samples[1].labels, 0u);
  EXPECT_EQ(p.samples[2].labels, 0u);
  EXPECT_EQ(p.samples[2].frames.size(), p.samples[3].frames.size());
  EXPECT_EQ(p.samples[3].labels, 1u);

  ExpectSameTimeline(p.timeline, {{5, 0, 0, 1}, {10, 3, 1, 2}, {10, 1, 0, 1}, {30, 0, 0, 1}});
  ExpectSameThreads(p.threads, {{11, "w"}, {12, ""}, {13, "c"}});
}

TEST(SymbolizeRawProfile, ReadBackRawProfileSymbolizesLikeTheOriginal) {
  RawProfile raw;
  raw.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 0}};
  raw.label_sets = {{Label{"phase", "load"}}};
  raw.threads = {RawThread{5, "main"}};
  raw.stacks = {{{Address(InprofRawTestLeaf), Address(InprofRawTestCaller), kRawThreadTag | 5,
                  kRawLabelsTag | 1},
                 {7}}};
  raw.timeline = {{100, 0, 0, 3}, {250, 0, 0, 4}};
  RawProfile read;
  ASSERT_TRUE(Read(Write(raw), &read).ok());
  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  const Profile a = SymbolizeRawProfile(raw, symbolizer);
  const Profile b = SymbolizeRawProfile(read, symbolizer);
  EXPECT_EQ(a.frames, b.frames);
  ASSERT_EQ(a.samples.size(), b.samples.size());
  EXPECT_EQ(a.samples[0].frames, b.samples[0].frames);
  EXPECT_EQ(a.samples[0].tid, 5);
  EXPECT_EQ(b.samples[0].labels, 1u);
  EXPECT_EQ(b.label_sets, raw.label_sets);
  ExpectSameTimeline(b.timeline, a.timeline);
  ExpectSameTimeline(b.timeline, raw.timeline);
  ExpectSameThreads(b.threads, {{5, "main"}});
}

// What `inprof symbolize-profile` does: the raw profile's own module map, written and read
// back, drives an offline symbolizer, which gives what the live one gave.
TEST(SymbolizeRawProfile, OfflineFromTheRecordedModulesMatchesLive) {
  Symbolizer live;
  live.RefreshModules();
  RawProfile raw;
  raw.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 0}};
  raw.modules = live.RecordedModules();
  raw.stacks = {
      {{Address(InprofRawTestLeaf), Address(InprofRawTestCaller), kRawThreadTag | 5}, {7}},
      {{Address(InprofRawTestCaller) + 4, kRawTruncated}, {1}}};
  const Profile expected = SymbolizeRawProfile(raw, live);

  RawProfile read;
  ASSERT_TRUE(Read(Write(raw), &read).ok());
  Symbolizer offline;
  offline.UseRecordedModules(read.modules);
  const Profile p = SymbolizeRawProfile(read, offline);
  EXPECT_EQ(p.frames, expected.frames);
  ASSERT_EQ(p.samples.size(), expected.samples.size());
  for (size_t i = 0; i < p.samples.size(); ++i) {
    EXPECT_EQ(p.samples[i].frames, expected.samples[i].frames);
    EXPECT_EQ(p.samples[i].tid, expected.samples[i].tid);
  }
  ASSERT_EQ(p.modules.size(), expected.modules.size());
  for (size_t i = 0; i < p.modules.size(); ++i) {
    EXPECT_EQ(p.modules[i].path, expected.modules[i].path);
    EXPECT_EQ(p.modules[i].build_id, expected.modules[i].build_id);
  }
}

// ---------------------------------------------------------------------------------------------
// MergeProfiles on hand-made profiles.

Frame Native(std::string function, std::string file = "/src/a.cpp", uint32_t line = 1) {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  return f;
}

TEST(RawProfileMerge, RootsFramesEventsHealthModulesAndTime) {
  Profile a;
  a.meta = {"/bin/a", 10, 1000, 500};
  a.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 7}};
  a.frames = {Native("main"), Native("work")};
  a.samples = {Sample{{0, 1}, {5}, 10}, Sample{{0}, {2}, 11}};
  a.health.engine = "timer";
  a.health.unwinder = "fp";
  a.health.requested_hz = 100;
  a.health.achieved_hz = 90;
  a.health.samples = 7;
  a.health.dropped = 1;
  a.health.truncated = 2;
  a.health.unknown_frames = 3;
  a.health.threads = {ThreadHealth{11, "a2", 1, 100, 90, 90},
                      ThreadHealth{10, "a1", 1, 100, 90, 90}};
  a.health.warnings = {"slow"};
  a.modules = {Module{"/bin/a", 0x1000, 0x2000, 0, "aa"},
               Module{"/lib/libc.so.6", 0x7000, 0x8000, 0, "cc"},
               Module{"/lib/libc.so.6", 0x9000, 0xa000, 0x2000, "cc"}};

  Profile b;
  b.meta = {"/bin/b", 20, 1200, 900};
  b.events = {EventInfo{"wall", "nanoseconds", 20, 50, 4},
              EventInfo{"cpu", "nanoseconds", 10, 100, 3}};
  b.frames = {Native("other"), Native("main")};  // "main" equals a's frame 0
  b.samples = {Sample{{1, 0}, {4, 3}, 20}};
  b.health.engine = "perf";
  b.health.unwinder = "fp";
  b.health.achieved_hz = 60;
  b.health.samples = 3;
  b.health.dropped = 4;
  b.health.threads = {ThreadHealth{5, "b", 2, 200, 120, 120}};
  b.health.warnings = {"late"};
  b.modules = {Module{"/lib/libc.so.6", 0x5000, 0x6000, 0, "cc"},
               Module{"/lib/libc.so.6", 0x5000, 0x6000, 0, "dd"}};

  const Profile m = MergeProfiles({a, b}, {"a [10]", "b [20]"});

  EXPECT_EQ(m.meta.program, "/bin/a");
  EXPECT_EQ(m.meta.pid, 10);
  EXPECT_EQ(m.meta.start_time_ns, 1000);
  EXPECT_EQ(m.meta.duration_ns, 1100);  // to b's end at 2100

  ASSERT_EQ(m.events.size(), 2u);
  EXPECT_EQ(m.events[0].name, "cpu");
  EXPECT_EQ(m.events[1].name, "wall");
  EXPECT_EQ(m.events[1].period, 20u);
  EXPECT_EQ(m.events[0].total_weight, 10);
  EXPECT_EQ(m.events[1].total_weight, 4);

  // Frames: main, work, the root "a [10]", other, the root "b [20]" -- main once.
  ASSERT_EQ(m.frames.size(), 5u);
  auto index = [&](const Frame& f) {
    for (size_t i = 0; i < m.frames.size(); ++i) {
      if (m.frames[i] == f) return static_cast<uint32_t>(i);
    }
    ADD_FAILURE() << "no frame " << f.function;
    return uint32_t{0};
  };
  Frame root_a;
  root_a.function = "a [10]";
  root_a.kind = FrameKind::kSynthetic;
  Frame root_b = root_a;
  root_b.function = "b [20]";
  const uint32_t main_i = index(Native("main")), work_i = index(Native("work"));
  const uint32_t other_i = index(Native("other"));
  ASSERT_EQ(m.samples.size(), 3u);
  EXPECT_EQ(m.samples[0].frames, (std::vector<uint32_t>{index(root_a), main_i, work_i}));
  EXPECT_EQ(m.samples[0].weights, (std::vector<int64_t>{5, 0}));
  EXPECT_EQ(m.samples[0].tid, 10);
  EXPECT_EQ(m.samples[1].frames, (std::vector<uint32_t>{index(root_a), main_i}));
  EXPECT_EQ(m.samples[2].frames, (std::vector<uint32_t>{index(root_b), main_i, other_i}));
  EXPECT_EQ(m.samples[2].weights, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(m.samples[2].tid, 20);

  EXPECT_EQ(m.health.samples, 10u);
  EXPECT_EQ(m.health.dropped, 5u);
  EXPECT_EQ(m.health.truncated, 2u);
  EXPECT_EQ(m.health.unknown_frames, 3u);
  EXPECT_EQ(m.health.engine, "timer, perf");
  EXPECT_EQ(m.health.unwinder, "fp");
  EXPECT_EQ(m.health.requested_hz, 100);
  EXPECT_DOUBLE_EQ(m.health.achieved_hz, (90.0 * 2 + 60.0 * 2) / 4);
  ASSERT_EQ(m.health.threads.size(), 3u);
  EXPECT_EQ(m.health.threads[0].tid, 5);
  EXPECT_EQ(m.health.threads[1].tid, 10);
  EXPECT_EQ(m.health.threads[2].tid, 11);
  EXPECT_EQ(m.health.warnings, (std::vector<std::string>{"a [10]: slow", "b [20]: late"}));

  // Modules by (path, build-id): a's libc (both segments), not b's; b's other build-id.
  ASSERT_EQ(m.modules.size(), 4u);
  EXPECT_EQ(m.modules[1].start, 0x7000u);
  EXPECT_EQ(m.modules[2].start, 0x9000u);
  EXPECT_EQ(m.modules[3].build_id, "dd");
}

// A parent and the child it started 200 ns later, and a process that started 100 ns before
// the first profile: one timeline, every time counted from the merged start, in time order.
TEST(RawProfileMerge, LabelSetsThreadsAndTimelines) {
  Profile a;
  a.meta = {"/bin/a", 10, 1000, 500};
  a.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 7}};
  a.frames = {Native("main")};
  a.label_sets = {{Label{"k", "x"}}, {Label{"k", "y"}}};
  a.samples = {Sample{{0}, {5}, 10, 2}, Sample{{0}, {2}, 11, 0}};
  a.threads = {ThreadInfo{10, "a1"}, ThreadInfo{11, "a2"}};
  a.timeline = {{0, 0, 0, 3}, {100, 1, 0, 2}, {250, 0, 0, 2}, {260, 7, 0, 1}};  // 7: no sample

  Profile b;
  b.meta = {"/bin/b", 20, 1200, 900};
  b.events = {EventInfo{"wall", "nanoseconds", 20, 50, 4},
              EventInfo{"cpu", "nanoseconds", 10, 100, 3}};
  b.frames = {Native("main")};
  b.label_sets = {{Label{"k", "z"}}, {Label{"k", "y"}}};  // {k=y} is a's second set
  b.samples = {Sample{{0}, {0, 3}, 20, 2}, Sample{{0}, {4, 0}, 21, 1}, Sample{{0}, {1, 0}, 20, 7}};
  b.threads = {ThreadInfo{21, "b2"}, ThreadInfo{20, "b"}, ThreadInfo{10, "a1"}};
  b.timeline = {{0, 0, 1, 3}, {60, 1, 0, 4}, {70, 0, 2, 1}};  // event 2: none

  Profile c;
  c.meta = {"/bin/c", 30, 900, 100};
  c.events = {EventInfo{"cpu", "nanoseconds", 10, 100, 1}};
  c.frames = {Native("main")};
  c.samples = {Sample{{0}, {1}, 5, 0}};
  c.threads = {ThreadInfo{5, "c"}};
  c.timeline = {{50, 0, 0, 1}};

  const Profile m = MergeProfiles({a, b, c}, {"a", "b", "c"});

  EXPECT_EQ(m.meta.start_time_ns, 1000);
  ASSERT_EQ(m.events.size(), 2u);  // cpu, wall
  EXPECT_EQ(m.label_sets, (std::vector<std::vector<Label>>{
                              {Label{"k", "x"}}, {Label{"k", "y"}}, {Label{"k", "z"}}}));
  ASSERT_EQ(m.samples.size(), 6u);
  EXPECT_EQ(m.samples[0].labels, 2u);
  EXPECT_EQ(m.samples[1].labels, 0u);
  EXPECT_EQ(m.samples[2].labels, 2u) << "b's {k=y} is a's";
  EXPECT_EQ(m.samples[3].labels, 3u);
  EXPECT_EQ(m.samples[4].labels, 0u) << "a number past b's label sets";
  EXPECT_EQ(m.samples[5].labels, 0u);

  // b's times are 200 ns later than they read in b, c's 100 ns earlier; samples and events
  // are the merged profile's (b's sample 0 is merged sample 2, its event 1 merged event 0).
  ExpectSameTimeline(m.timeline, {{-50, 5, 0, 1},
                                  {0, 0, 0, 3},
                                  {100, 1, 0, 2},
                                  {200, 2, 0, 3},
                                  {250, 0, 0, 2},
                                  {260, 3, 1, 4}});
  ExpectSameThreads(m.threads, {{5, "c"}, {10, "a1"}, {11, "a2"}, {20, "b"}, {21, "b2"}});
  // Totals stay the samples' sums.
  EXPECT_EQ(m.events[0].total_weight, 5 + 2 + 3 + 1);
}

// A profile whose start is unknown keeps its times as they are; so do all of them when the
// first profile's start is unknown. Equal times keep the profiles' order.
TEST(RawProfileMerge, TimesOfProfilesWithoutAStartAreNotMoved) {
  Profile a;
  a.meta.start_time_ns = 1000;
  a.events = {EventInfo{"cpu", "nanoseconds", 1, 0, 2}};
  a.frames = {Native("f")};
  a.samples = {Sample{{0}, {2}, 1, 0}};
  a.timeline = {{10, 0, 0, 1}, {20, 0, 0, 1}};
  Profile b = a;
  b.meta.start_time_ns = 0;
  ExpectSameTimeline(MergeProfiles({a, b}, {}).timeline,
                     {{10, 0, 0, 1}, {10, 1, 0, 1}, {20, 0, 0, 1}, {20, 1, 0, 1}});
  Profile unknown = a;
  unknown.meta.start_time_ns = 0;
  b.meta.start_time_ns = 5000;
  ExpectSameTimeline(MergeProfiles({unknown, b}, {}).timeline,
                     {{10, 0, 0, 1}, {10, 1, 0, 1}, {20, 0, 0, 1}, {20, 1, 0, 1}});
  // Far apart starts saturate instead of overflowing.
  Profile early = a;
  early.meta.start_time_ns = std::numeric_limits<int64_t>::min() + 1;
  b.meta.start_time_ns = std::numeric_limits<int64_t>::max();
  b.timeline = {{std::numeric_limits<int64_t>::max() - 1, 0, 0, 1}};
  const Profile m = MergeProfiles({early, b}, {});
  ASSERT_EQ(m.timeline.size(), 3u);
  EXPECT_EQ(m.timeline.back().time_ns, std::numeric_limits<int64_t>::max());
}

// With a process label, every sample of a named profile carries process=NAME in its own set
// (sorted by key); a label of that key the program set itself is kept; nameless profiles get
// none; control characters in a name become '?'.
TEST(RawProfileMerge, AProcessLabelJoinsEachSamplesOwnLabels) {
  Profile a;
  a.events = {EventInfo{"cpu", "nanoseconds", 1, 0, 4}};
  a.frames = {Native("f")};
  a.label_sets = {{Label{"endpoint", "/x"}, Label{"tenant", "t1"}}, {Label{"process", "own"}}};
  a.samples = {Sample{{0}, {1}, 1, 0}, Sample{{0}, {1}, 1, 1}, Sample{{0}, {1}, 1, 2},
               Sample{{0}, {1}, 2, 0}};
  Profile b;
  b.events = a.events;
  b.frames = {Native("g")};
  b.samples = {Sample{{0}, {3}, 7, 0}};
  Profile nameless = b;

  const Profile m = MergeProfiles({a, b, nameless}, {"sh", "cc\x01plus", ""}, "process");
  ASSERT_EQ(m.samples.size(), 6u);
  auto labels = [&](size_t i) {
    return m.samples[i].labels == 0 ? std::vector<Label>{} : m.label_sets[m.samples[i].labels - 1];
  };
  EXPECT_EQ(labels(0), (std::vector<Label>{{"process", "sh"}}));
  EXPECT_EQ(labels(1), (std::vector<Label>{{"endpoint", "/x"}, {"process", "sh"}, {"tenant", "t1"}}));
  EXPECT_EQ(labels(2), (std::vector<Label>{{"process", "own"}})) << "the program's own label";
  EXPECT_EQ(m.samples[3].labels, m.samples[0].labels) << "one set for the process label alone";
  EXPECT_EQ(labels(4), (std::vector<Label>{{"process", "cc?plus"}}));
  EXPECT_EQ(m.samples[5].labels, 0u) << "a nameless profile gets no process label";
  // Without the key, nothing is added.
  const Profile plain = MergeProfiles({a, b}, {"sh", "cc"});
  EXPECT_EQ(plain.label_sets.size(), 2u);
  EXPECT_EQ(plain.samples[4].labels, 0u);
}

TEST(RawProfileMerge, NamelessProfilesGetNoRootAndNothingMergesToEmpty) {
  EXPECT_TRUE(MergeProfiles({}, {}).samples.empty());
  Profile a;
  a.events = {EventInfo{"cpu", "nanoseconds", 1, 0, 1}};
  a.frames = {Native("f")};
  a.samples = {Sample{{0}, {1}, 0}};
  const Profile m = MergeProfiles({a, a}, {""});
  ASSERT_EQ(m.frames.size(), 1u);
  ASSERT_EQ(m.samples.size(), 2u);
  EXPECT_EQ(m.samples[1].frames, (std::vector<uint32_t>{0}));
  EXPECT_EQ(m.events[0].total_weight, 2);
}

}  // namespace
}  // namespace inprof::test
