// FilterProfile: a time range recomputes weights from the timeline, threads and labels select
// whole samples, what is left is compacted, and a filter the profile cannot answer is an
// error that says what the profile has.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inprof/perf_script.h"
#include "inprof/profile_filter.h"

namespace inprof {
namespace {

constexpr int64_t kMs = 1000000;

// Two threads (main 10, worker 11), three stacks, two events; timed samples every 10 ms for
// 1 s: main runs `a` before 500 ms and `b` after; the worker runs `c` throughout, labelled
// phase=load before 300 ms and phase=run after. The second event counts only `b`'s samples.
Profile TimedProfile() {
  Profile p;
  p.meta.program = "/bin/app";
  p.events = {{"cpu", "nanoseconds", 1, 100, 0}, {"misses", "count", 1, 0, 0}};
  for (const char* name : {"main", "a", "b", "worker", "c", "unused"}) {
    Frame f;
    f.function = name;
    p.frames.push_back(f);
  }
  p.label_sets = {{{"phase", "load"}}, {{"phase", "run"}, {"user", "7"}}};
  p.threads = {{10, "main"}, {11, "worker"}, {12, "idle"}};
  p.samples = {
      {{0, 1}, {0, 0}, 10, 0},  // main;a
      {{0, 2}, {0, 0}, 10, 0},  // main;b
      {{3, 4}, {0, 0}, 11, 1},  // worker;c [phase=load]
      {{3, 4}, {0, 0}, 11, 2},  // worker;c [phase=run user=7]
  };
  for (int64_t t = 0; t < 1000 * kMs; t += 10 * kMs) {
    p.timeline.push_back({t, t < 500 * kMs ? 0u : 1u, 0, 1000});
    if (t >= 500 * kMs) p.timeline.push_back({t, 1, 1, 3});
    p.timeline.push_back({t + kMs, t < 300 * kMs ? 2u : 3u, 0, 1000});
  }
  for (const TimedSample& t : p.timeline) p.samples[t.sample].weights[t.event] += t.weight;
  for (const Sample& s : p.samples) {
    for (size_t e = 0; e < 2; ++e) p.events[e].total_weight += s.weights[e];
  }
  return p;
}

std::vector<std::string> Stack(const Profile& p, const Sample& s) {
  std::vector<std::string> names;
  for (uint32_t f : s.frames) names.push_back(p.frames.at(f).function);
  return names;
}

// Weight of the first event by stack ("main;a"), summed over samples.
std::map<std::string, int64_t> ByStack(const Profile& p, size_t event = 0) {
  std::map<std::string, int64_t> by;
  for (const Sample& s : p.samples) {
    std::string key;
    for (const std::string& n : Stack(p, s)) key += (key.empty() ? "" : ";") + n;
    by[key] += s.weights.at(event);
  }
  return by;
}

// The invariants every filtered profile keeps: totals are the sum of the samples, the
// timeline adds up to the samples' weights, is in time order and in range.
void CheckConsistent(const Profile& p) {
  std::vector<std::vector<int64_t>> timed(p.samples.size(), std::vector<int64_t>(p.events.size()));
  for (size_t i = 0; i < p.timeline.size(); ++i) {
    const TimedSample& t = p.timeline[i];
    ASSERT_LT(t.sample, p.samples.size());
    ASSERT_LT(t.event, p.events.size());
    if (i > 0) {
      EXPECT_LE(p.timeline[i - 1].time_ns, t.time_ns);
    }
    timed[t.sample][t.event] += t.weight;
  }
  for (size_t e = 0; e < p.events.size(); ++e) {
    int64_t total = 0;
    for (size_t i = 0; i < p.samples.size(); ++i) {
      total += p.samples[i].weights.at(e);
      EXPECT_EQ(timed[i][e], p.samples[i].weights[e]) << "sample " << i << " event " << e;
    }
    EXPECT_EQ(p.events[e].total_weight, total) << p.events[e].name;
  }
  for (const Sample& s : p.samples) {
    bool any = false;
    for (int64_t w : s.weights) any |= w != 0;
    EXPECT_TRUE(any) << "a sample without weight was kept";
    for (uint32_t f : s.frames) EXPECT_LT(f, p.frames.size());
    EXPECT_LE(s.labels, p.label_sets.size());
  }
}

TEST(ProfileFilter, EmptyFilterCopies) {
  const Profile in = TimedProfile();
  Profile out;
  ASSERT_TRUE(FilterProfile(in, {}, &out).ok());
  EXPECT_EQ(out.samples.size(), in.samples.size());
  EXPECT_EQ(out.timeline.size(), in.timeline.size());
  EXPECT_EQ(out.frames.size(), in.frames.size());
  CheckConsistent(out);
}

TEST(ProfileFilter, TimeRangeRecomputesWeightsFromTheTimeline) {
  const Profile in = TimedProfile();
  ProfileFilter f;
  f.from_ns = 450 * kMs;
  f.to_ns = 550 * kMs;
  Profile out;
  const Status s = FilterProfile(in, f, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  CheckConsistent(out);
  // [450, 550): main's a at 450..490 (5), b at 500..540 (5); the worker's c at 451..541 (10).
  const auto by = ByStack(out);
  EXPECT_EQ(by.at("main;a"), 5000);
  EXPECT_EQ(by.at("main;b"), 5000);
  EXPECT_EQ(by.at("worker;c"), 10000);
  EXPECT_EQ(out.events[0].total_weight, 20000);
  EXPECT_EQ(out.events[1].total_weight, 15);
  // Every timed sample kept is in the range, with its time since the start unchanged.
  ASSERT_FALSE(out.timeline.empty());
  EXPECT_EQ(out.timeline.front().time_ns, 450 * kMs);
  EXPECT_EQ(out.timeline.back().time_ns, 541 * kMs);
  // The worker's phase=load sample has nothing in the range: dropped. The label sets stay, so
  // the profile still says which labels it has.
  EXPECT_EQ(out.samples.size(), 3u);
  EXPECT_EQ(out.label_sets, in.label_sets);
  // Frames no kept sample uses are gone; the thread that took nothing is gone.
  EXPECT_EQ(out.frames.size(), 5u);
  EXPECT_EQ(out.threads.size(), 2u);
}

TEST(ProfileFilter, OpenEndedRangesAndAnEmptySelection) {
  const Profile in = TimedProfile();
  ProfileFilter f;
  f.to_ns = 500 * kMs;
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out).count("main;b"), 0u);
  EXPECT_EQ(ByStack(out).at("main;a"), 50000);
  f = {};
  f.from_ns = 500 * kMs;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(ByStack(out).count("main;a"), 0u);
  EXPECT_EQ(ByStack(out).at("main;b"), 50000);
  EXPECT_EQ(ByStack(out, 1).at("main;b"), 150);
  // After the last sample: nothing, and that is not an error.
  f.from_ns = 5000 * kMs;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_TRUE(out.samples.empty());
  EXPECT_TRUE(out.timeline.empty());
  EXPECT_EQ(out.events[0].total_weight, 0);
}

TEST(ProfileFilter, ThreadsByNameOrTid) {
  const Profile in = TimedProfile();
  ProfileFilter f;
  f.threads = {"worker"};
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"worker;c", 100000}}));
  ASSERT_EQ(out.threads.size(), 1u);
  EXPECT_EQ(out.threads[0].name, "worker");
  f.threads = {"10"};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"main;a", 50000}, {"main;b", 50000}}));
  // Several: any of them; with a time range too.
  f.threads = {"10", "worker"};
  f.from_ns = 0;
  f.to_ns = 100 * kMs;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"main;a", 10000}, {"worker;c", 10000}}));
  // A known thread that took no sample selects nothing.
  f = {};
  f.threads = {"idle"};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_TRUE(out.samples.empty());
}

TEST(ProfileFilter, UnknownThreadListsTheThreads) {
  const Profile in = TimedProfile();
  ProfileFilter f;
  f.threads = {"main", "wroker"};
  Profile out;
  const Status s = FilterProfile(in, f, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "no thread 'wroker' in the profile of /bin/app (its 3 threads: main (10), worker (11), "
            "idle (12))");
  f.threads = {"13"};
  EXPECT_FALSE(FilterProfile(in, f, &out).ok());

  Profile untracked = in;
  untracked.threads.clear();
  for (Sample& sample : untracked.samples) sample.tid = 0;
  f.threads = {"main"};
  const Status none = FilterProfile(untracked, f, &out);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("does not say which thread"), std::string::npos) << none.message();
}

TEST(ProfileFilter, LabelsMustAllBeSet) {
  const Profile in = TimedProfile();
  ProfileFilter f;
  f.labels = {{"phase", "run"}};
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"worker;c", 70000}}));
  ASSERT_EQ(out.samples.size(), 1u);
  EXPECT_EQ(out.label_sets.at(out.samples[0].labels - 1), in.label_sets[1]);
  f.labels = {{"phase", "run"}, {"user", "7"}};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"worker;c", 70000}}));
  // Both set, never together: nothing.
  f.labels = {{"phase", "load"}, {"user", "7"}};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_TRUE(out.samples.empty());
  // With a time range: phase=load only before 300 ms.
  f.labels = {{"phase", "load"}};
  f.from_ns = 250 * kMs;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"worker;c", 5000}}));
}

TEST(ProfileFilter, UnknownLabelsSayWhatThereIs) {
  const Profile in = TimedProfile();
  Profile out;
  ProfileFilter f;
  f.labels = {{"phase", "idle"}};
  Status s = FilterProfile(in, f, &out);
  EXPECT_EQ(s.message(),
            "no sample has phase=idle in the profile of /bin/app (values of phase: "
            "load, run)");
  f.labels = {{"tenant", "a"}};
  s = FilterProfile(in, f, &out);
  EXPECT_EQ(s.message(),
            "no label 'tenant' in the profile of /bin/app (its label keys: phase, user)");
  Profile plain = in;
  plain.label_sets.clear();
  for (Sample& sample : plain.samples) sample.labels = 0;
  s = FilterProfile(plain, f, &out);
  EXPECT_EQ(s.message(), "the profile of /bin/app has no labels, so no sample has tenant=a");
}

TEST(ProfileFilter, TimeRangeNeedsATimeline) {
  Profile in = TimedProfile();
  in.timeline.clear();
  ProfileFilter f;
  f.from_ns = 0;
  Profile out;
  const Status s = FilterProfile(in, f, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the profile of /bin/app has no sample times"), std::string::npos)
      << s.message();
  // Threads still work without times, from the samples' own weights.
  f = {};
  f.threads = {"worker"};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(out.events[0].total_weight, 100000);
  EXPECT_TRUE(out.timeline.empty());
  // An empty range is refused whatever the profile.
  f = {};
  f.from_ns = 2 * kMs;
  f.to_ns = 2 * kMs;
  EXPECT_EQ(FilterProfile(TimedProfile(), f, &out).code(), StatusCode::kInvalidArgument);
}

TEST(ProfileFilter, DamagedIndicesAreSkippedNotFollowed) {
  Profile in = TimedProfile();
  in.timeline.push_back({2000 * kMs, 99, 0, 5});  // no such sample
  in.timeline.push_back({2000 * kMs, 0, 9, 5});   // no such event
  in.samples[0].frames.push_back(1000);           // no such frame
  ProfileFilter f;
  f.from_ns = 0;
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(out.events[0].total_weight, in.events[0].total_weight);
  bool past = false;
  for (const Sample& s : out.samples) {
    for (uint32_t frame : s.frames) past |= frame >= out.frames.size();
  }
  EXPECT_TRUE(past) << "an unknown frame stays unknown";
}

// An allocation profile's shape: the user's lines call into the standard library's allocator
// plumbing, where every stack ends. Frame 4 is inlined into std::vector's constructor.
Profile AllocationProfile() {
  Profile p;
  p.meta.program = "/bin/alloc";
  p.events = {{"alloc_objects", "count", 1, 0, 0}, {"alloc_space", "bytes", 1, 0, 0}};
  auto frame = [&](const char* name, uint32_t line, FrameKind kind = FrameKind::kNative) {
    Frame f;
    f.function = name;
    f.file = "/src/app.cpp";
    f.line = line;
    f.kind = kind;
    p.frames.push_back(f);
  };
  frame("main", 10);           // 0
  frame("load(Reader&)", 20);  // 1
  frame("std::vector<unsigned char, std::allocator<unsigned char> >::vector(unsigned long)",
        30);                                                                                // 2
  frame("std::__new_allocator<unsigned char>::allocate(unsigned long, void const*)", 137);  // 3
  frame("fill(std::vector<int>&)", 40, FrameKind::kInlined);                                // 4
  frame("parse(std::string const&)", 50);                                                   // 5
  p.threads = {{7, "main"}};
  p.samples = {
      {{0, 1, 2, 3}, {4, 4096}, 7, 0},    // main;load;vector;allocate
      {{0, 1, 3}, {1, 100}, 7, 0},        // main;load;allocate (a second call site's path)
      {{0, 1}, {2, 50}, 7, 0},            // main;load itself
      {{0, 5, 2, 4, 3}, {3, 300}, 7, 0},  // main;parse;vector;fill (inlined);allocate
  };
  int64_t t = 0;
  for (uint32_t i = 0; i < p.samples.size(); ++i) {
    for (uint32_t e = 0; e < 2; ++e) {
      p.timeline.push_back({t += kMs, i, e, p.samples[i].weights[e]});
      p.events[e].total_weight += p.samples[i].weights[e];
    }
  }
  return p;
}

TEST(ProfileFilter, HideMovesWeightToTheCaller) {
  const Profile in = AllocationProfile();
  ProfileFilter f;
  f.hide = {"^std::"};
  Profile out;
  const Status s = FilterProfile(in, f, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  CheckConsistent(out);
  // The allocator's self weight is now load's and fill's: the first kept frame toward the
  // root. The three stacks that became main;load are one sample.
  EXPECT_EQ(ByStack(out, 1), (std::map<std::string, int64_t>{
                                 {"main;load(Reader&)", 4246},
                                 {"main;parse(std::string const&);fill(std::vector<int>&)", 300}}));
  EXPECT_EQ(ByStack(out, 0)["main;load(Reader&)"], 7);
  EXPECT_EQ(out.samples.size(), 2u);
  for (size_t e = 0; e < in.events.size(); ++e) {
    EXPECT_EQ(out.events[e].total_weight, in.events[e].total_weight) << in.events[e].name;
  }
  for (const Frame& frame : out.frames) EXPECT_FALSE(frame.function.starts_with("std::"));
  // fill was inlined into std::vector's constructor, which is gone: it is its own machine
  // frame now, a native one (a pprof location must not fold it into parse's).
  for (const Frame& frame : out.frames) {
    if (frame.function.starts_with("fill")) {
      EXPECT_EQ(frame.kind, FrameKind::kNative);
    }
    EXPECT_EQ(frame.function.find("[hidden]"), std::string::npos);
  }
  // Several patterns: any of them. Hiding an inlined frame keeps its machine frame's native one.
  f.hide = {"^std::__new", "^fill"};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  const auto by = ByStack(out, 1);
  EXPECT_EQ(
      by.at("main;parse(std::string const&);std::vector<unsigned char, std::allocator<unsigned "
            "char> >::vector(unsigned long)"),
      300);
  EXPECT_EQ(by.at("main;load(Reader&)"), 150);
}

// A function template's full name starts with its return type: "^std::" sees it only in the
// short form a view shows, which the filter is given.
TEST(ProfileFilter, HideMatchesTheShortNameWhenGivenOne) {
  Profile in = AllocationProfile();
  in.frames[3].function = "unsigned char* std::__do_uninit_fill_n<unsigned char*>(unsigned char*)";
  ProfileFilter f;
  f.hide = {"^std::"};
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(ByStack(out, 1).count("main;load(Reader&);unsigned char* "
                                  "std::__do_uninit_fill_n<unsigned char*>(unsigned char*)"),
            1u);
  // A stand-in for the viewer's shortening: the name without its return type and parameters.
  f.short_name = [](std::string_view name) {
    name = name.substr(0, name.find('<'));
    return std::string(name.substr(name.rfind(' ') + 1));
  };
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out, 1).at("main;load(Reader&)"), 4246);
  // The full name still counts: a pattern on the template argument.
  f.hide = {"fill_n<unsigned char\\*>"};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  EXPECT_EQ(ByStack(out, 1).count("main;load(Reader&)"), 1u);
}

TEST(ProfileFilter, HideWithANonMatchingPatternChangesNothing) {
  const Profile in = AllocationProfile();
  ProfileFilter f;
  f.hide = {"^boost::", "no_such_function"};
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out, 1), ByStack(in, 1));
  EXPECT_EQ(out.frames, in.frames);
  EXPECT_EQ(out.samples.size(), in.samples.size());
  EXPECT_EQ(out.timeline.size(), in.timeline.size());
}

TEST(ProfileFilter, HideEveryFrameKeepsTheWeightUnderHidden) {
  const Profile in = AllocationProfile();
  ProfileFilter f;
  f.hide = {"."};
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  // Nothing is dropped: one thread, no labels, so one sample, on a synthetic [hidden] frame.
  EXPECT_EQ(ByStack(out, 1), (std::map<std::string, int64_t>{{"[hidden]", 4546}}));
  EXPECT_EQ(ByStack(out, 0), (std::map<std::string, int64_t>{{"[hidden]", 10}}));
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].kind, FrameKind::kSynthetic);
  EXPECT_EQ(out.events[1].total_weight, in.events[1].total_weight);
  // Samples of different threads or labels stay apart: hiding merges only what is alike.
  const Profile timed = TimedProfile();
  ASSERT_TRUE(FilterProfile(timed, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(out.samples.size(), 3u);  // main; the worker with each of its two label sets
  EXPECT_EQ(out.events[0].total_weight, timed.events[0].total_weight);
}

TEST(ProfileFilter, HideWithTimeRangeAndThreads) {
  const Profile in = TimedProfile();
  ProfileFilter f;
  f.hide = {"^[ab]$"};
  f.from_ns = 450 * kMs;
  f.to_ns = 550 * kMs;
  Profile out;
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"main", 10000}, {"worker;c", 10000}}));
  f.threads = {"main"};
  ASSERT_TRUE(FilterProfile(in, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"main", 10000}}));
  EXPECT_EQ(ByStack(out, 1), (std::map<std::string, int64_t>{{"main", 15}}));
}

TEST(ProfileFilter, HideRefusesWhatIsNotARegularExpression) {
  ProfileFilter f;
  f.hide = {"^std::", "std::vector<(int"};
  Profile out;
  const Status s = FilterProfile(AllocationProfile(), f, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.message().starts_with("'std::vector<(int' is not a regular expression: "))
      << s.message();
  EXPECT_FALSE(CheckHidePattern("a[").ok());
  EXPECT_TRUE(CheckHidePattern("^std::|^__gnu_cxx::").ok());
  // A name too long for std::regex's recursion is matched by its start, without a crash.
  Profile huge = AllocationProfile();
  huge.frames[5].function = "std::" + std::string(200000, 'a');
  f.hide = {"^std::(a|b)*$", "^std::"};
  const Status matched = FilterProfile(huge, f, &out);
  ASSERT_TRUE(matched.ok()) << matched.message();
  EXPECT_EQ(ByStack(out, 1).at("main;fill(std::vector<int>&)"), 300);
}

// perf script input keeps its times through the reader: the timeline (since the first sample,
// in time order even where CPUs' buffers interleave), each sample's thread and the threads'
// names, with stacks of different threads kept apart.
TEST(ProfileFilter, PerfScriptTimesThreadsAndRanges) {
  const std::string text =
      "app 100/100 [000] 5000.000000: 10 cpu-clock:\n"
      "\t1 a (/bin/app)\n\t2 main (/bin/app)\n\n"
      "app 100/101 [001] 5000.250000: 10 cpu-clock:\n"
      "\t1 a (/bin/app)\n\t2 main (/bin/app)\n\n"
      "app 100/100 [000] 5000.500000: 10 cpu-clock:\n"
      "\t3 b (/bin/app)\n\t2 main (/bin/app)\n\n"
      // CPU 1's buffer, flushed late: earlier than the sample before it.
      "my worker 100/101 [001] 5000.400000: 10 cpu-clock:\n"
      "\t1 a (/bin/app)\n\t2 main (/bin/app)\n\n"
      "app 100/100 [000] 5001.000000: 30 cpu-clock:\n"
      "\t3 b (/bin/app)\n\t2 main (/bin/app)\n";
  Profile p;
  const Status read = ReadPerfScript(text, "t.perf-script", &p);
  ASSERT_TRUE(read.ok()) << read.message();
  CheckConsistent(p);
  ASSERT_EQ(p.timeline.size(), 5u);
  std::vector<int64_t> times;
  for (const TimedSample& t : p.timeline) times.push_back(t.time_ns);
  EXPECT_EQ(times, (std::vector<int64_t>{0, 250 * kMs, 400 * kMs, 500 * kMs, 1000 * kMs}));
  EXPECT_EQ(p.samples[p.timeline[2].sample].tid, 101);
  EXPECT_EQ(p.threads, (std::vector<ThreadInfo>{{100, "app"}, {101, "my worker"}}));
  // main;a of thread 100 and of thread 101 are two samples.
  EXPECT_EQ(p.samples.size(), 3u);

  ProfileFilter f;
  f.from_ns = 250 * kMs;
  f.to_ns = 1000 * kMs;
  Profile out;
  ASSERT_TRUE(FilterProfile(p, f, &out).ok());
  CheckConsistent(out);
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"main;a", 20}, {"main;b", 10}}));
  f.threads = {"my worker"};
  ASSERT_TRUE(FilterProfile(p, f, &out).ok());
  EXPECT_EQ(ByStack(out), (std::map<std::string, int64_t>{{"main;a", 20}}));
}

}  // namespace
}  // namespace inprof
