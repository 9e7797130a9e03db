// The raw profile format (docs/raw-profile.md): exact round trips, files cut at any point,
// strict refusal of malformed lines. Symbolizing and merging: raw_symbolize_test.cpp.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/formats.h"
#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"
#include "inprof/symbolize_raw.h"
#include "raw_test_util.h"
#include "test_support.h"

// The fuzz target's check (fuzz/raw_profile_fuzz.cpp, compiled into this test): the same
// guarantees, replayed on the committed corpus.
namespace inprof::fuzz {
std::string CheckRawProfile(std::string_view input);
}

namespace inprof::test {
namespace {


// Strings that a line-oriented, space-separated format must carry exactly.
const std::vector<std::string> kOddStrings = {
    "",
    "-",
    "a b",
    " lead",
    "trail ",
    "tab\there",
    "new\nline",
    "cr\rx",
    "back\\s",
    "\\",
    "\\x41",
    "ctl\x01\x1f\x7f",
    "utf8 \xc3\xa9\xe2\x82\xac",
    "--",
    "end",
    "stack 1 2",
    std::string("nul\0byte", 8),
    "%s%n",
};

RawProfile OddProfile() {
  RawProfile p;
  p.meta.program = "/opt/my app/bin/prog name";
  p.meta.pid = 4242;
  p.meta.start_time_ns = 1700000000123456789;
  p.meta.duration_ns = 2500000000;
  p.ppid = 1;
  p.comm = "prog name\n";
  EventInfo cpu{"cpu", "nanoseconds", 10101010, 99, 0};
  EventInfo odd{"odd event", "", 1, 0.1, 0};
  p.events = {cpu, odd};
  Health& h = p.health;
  h.engine = "timer";
  h.engine_reason = "perf_event_open: EACCES\tparanoid 3";
  h.unwinder = "fp";
  h.requested_hz = 99;
  h.achieved_hz = 98.76543210987654;
  h.samples = 1000;
  h.dropped = 2;
  h.truncated = 3;
  h.broken = 4;
  h.overflow = 5;
  h.threads_seen = 6;
  h.unknown_frames = 7;
  h.overruns = std::numeric_limits<uint64_t>::max();
  h.symbolize_seconds = 1e-300;
  h.write_seconds = -0.0;
  h.symbol_cache_hits = 8;
  h.symbol_cache_misses = 9;
  for (size_t i = 0; i < kOddStrings.size(); ++i) {
    h.threads.push_back(ThreadHealth{static_cast<int64_t>(100 + i), kOddStrings[i], 0.1 * i,
                                     1.0 / 3 * i, i, 2 * i});
    h.warnings.push_back(kOddStrings[i]);
  }
  RawModule exe;
  exe.kind = RawModule::Kind::kMainExecutable;
  exe.path = "/opt/my app/bin/prog name";
  exe.bias = 0x555555554000;
  exe.build_id = "0123456789abcdef0123456789abcdef01234567";
  exe.segments = {{0x555555554000, 0x555555556000, 0, false},
                  {0x555555556000, 0x55555555a000, 0x2000, true}};
  RawModule so;
  so.path = "/lib/x86_64-linux-gnu/libc.so.6";
  so.bias = 0x7ffff7d80000;
  so.segments = {{0x7ffff7da8000, 0x7ffff7f3d000, 0x28000, true}};
  RawModule vdso;
  vdso.kind = RawModule::Kind::kVdso;
  vdso.path = "[vdso]";
  vdso.bias = 0x7ffff7fc1000;
  vdso.build_id = "ab";
  p.modules = {exe, so, vdso};
  for (size_t i = 0; i < kOddStrings.size(); ++i) {
    Frame f;
    f.function = kOddStrings[i];
    f.file = kOddStrings[(i + 1) % kOddStrings.size()];
    f.module = i % 2 ? "[lua]" : kOddStrings[(i + 2) % kOddStrings.size()];
    f.line = static_cast<uint32_t>(i == 3 ? 0xffffffffu : i);
    f.column = static_cast<uint32_t>(i * 7);
    f.address = i == 4 ? ~uint64_t{0} : i;
    f.kind = static_cast<FrameKind>(i % 3);
    p.lua_frames.push_back(f);
  }
  for (size_t i = 0; i < kOddStrings.size(); ++i) {
    p.threads.push_back(RawThread{static_cast<int64_t>(100 + i), kOddStrings[i]});
  }
  p.threads.push_back(RawThread{(int64_t{1} << 48) - 1, "highest tid"});
  // Label sets: odd strings as keys (sorted, each once) and values, an empty key and value,
  // and an empty set.
  std::vector<Label> odd_labels;
  for (size_t i = 0; i < kOddStrings.size(); ++i) {
    odd_labels.push_back(Label{kOddStrings[i], kOddStrings[(i + 3) % kOddStrings.size()]});
  }
  std::sort(odd_labels.begin(), odd_labels.end());
  p.label_sets = {{Label{"", ""}}, odd_labels, {}, {Label{"request", "/api"}, {"user", "42"}}};
  const uint64_t t100 = kRawThreadTag | 100;
  p.stacks = {
      {{0x555555556123, 0x555555556456, 0x7ffff7da9000, t100, kRawLabelsTag | 2}, {10101010, 1}},
      {{0x555555556124, kRawTruncated, t100}, {0, 0}},
      {{kRawOverflow, t100, kRawLabelsTag | 4}, {-5, std::numeric_limits<int64_t>::min()}},
      {{kRawLuaTag | 0, kRawLuaTag | 17, 0x7ffff7da9000, kRawThreadTag | ((uint64_t{1} << 48) - 1),
        kRawLabelsTag | 1},
       {std::numeric_limits<int64_t>::max(), 3}},
      {{kRawLabelsTag | 3}, {1, 1}},
      {{0, 0xfffbffffffffffff, 0xffffffffffffffff, 3}, {2, 2}},
  };
  // Times at both ends of int64 (the largest step the deltas can take), equal times, both
  // forms of the record (event and weight repeated or given), extreme weights.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  p.timeline = {
      {kMin, 0, 0, 1}, {kMin, 2, 0, 1},    {-5, 1, 1, 0},      {-5, 3, 1, 0},
      {0, 4, 0, kMin}, {1000, 5, 0, kMax}, {1001, 5, 0, kMax}, {kMax, 0, 1, 1},
  };
  // Totals of extreme weights wrap (as unsigned: signed overflow is undefined); the format
  // only has to carry the value.
  auto add = [](int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  };
  for (const RawStack& s : p.stacks) {
    p.events[0].total_weight = add(p.events[0].total_weight, s.weights[0]);
    p.events[1].total_weight = add(p.events[1].total_weight, s.weights[1]);
  }
  return p;
}

void ExpectSameDouble(double a, double b, const std::string& what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what;
  } else {
    EXPECT_EQ(a, b) << what;
  }
  EXPECT_EQ(std::signbit(a), std::signbit(b)) << what;
}


void ExpectEqual(const RawProfile& a, const RawProfile& b) {
  EXPECT_EQ(a.meta.program, b.meta.program);
  EXPECT_EQ(a.meta.pid, b.meta.pid);
  EXPECT_EQ(a.meta.start_time_ns, b.meta.start_time_ns);
  EXPECT_EQ(a.meta.duration_ns, b.meta.duration_ns);
  EXPECT_EQ(a.ppid, b.ppid);
  EXPECT_EQ(a.comm, b.comm);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].name, b.events[i].name);
    EXPECT_EQ(a.events[i].unit, b.events[i].unit);
    EXPECT_EQ(a.events[i].period, b.events[i].period);
    ExpectSameDouble(a.events[i].frequency_hz, b.events[i].frequency_hz, "frequency");
    EXPECT_EQ(a.events[i].total_weight, b.events[i].total_weight);
  }
  const Health& h = a.health;
  const Health& g = b.health;
  EXPECT_EQ(h.engine, g.engine);
  EXPECT_EQ(h.engine_reason, g.engine_reason);
  EXPECT_EQ(h.unwinder, g.unwinder);
  ExpectSameDouble(h.requested_hz, g.requested_hz, "requested_hz");
  ExpectSameDouble(h.achieved_hz, g.achieved_hz, "achieved_hz");
  EXPECT_EQ(h.samples, g.samples);
  EXPECT_EQ(h.dropped, g.dropped);
  EXPECT_EQ(h.truncated, g.truncated);
  EXPECT_EQ(h.broken, g.broken);
  EXPECT_EQ(h.overflow, g.overflow);
  EXPECT_EQ(h.threads_seen, g.threads_seen);
  EXPECT_EQ(h.unknown_frames, g.unknown_frames);
  EXPECT_EQ(h.overruns, g.overruns);
  ExpectSameDouble(h.symbolize_seconds, g.symbolize_seconds, "symbolize_seconds");
  ExpectSameDouble(h.write_seconds, g.write_seconds, "write_seconds");
  EXPECT_EQ(h.symbol_cache_hits, g.symbol_cache_hits);
  EXPECT_EQ(h.symbol_cache_misses, g.symbol_cache_misses);
  EXPECT_EQ(h.warnings, g.warnings);
  ASSERT_EQ(h.threads.size(), g.threads.size());
  for (size_t i = 0; i < h.threads.size(); ++i) {
    EXPECT_EQ(h.threads[i].tid, g.threads[i].tid);
    EXPECT_EQ(h.threads[i].name, g.threads[i].name);
    ExpectSameDouble(h.threads[i].cpu_seconds, g.threads[i].cpu_seconds, "cpu_seconds");
    ExpectSameDouble(h.threads[i].expected, g.threads[i].expected, "expected");
    EXPECT_EQ(h.threads[i].taken, g.threads[i].taken);
    EXPECT_EQ(h.threads[i].weight, g.threads[i].weight);
  }
  ASSERT_EQ(a.modules.size(), b.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    EXPECT_EQ(a.modules[i].kind, b.modules[i].kind);
    EXPECT_EQ(a.modules[i].path, b.modules[i].path);
    EXPECT_EQ(a.modules[i].bias, b.modules[i].bias);
    EXPECT_EQ(a.modules[i].build_id, b.modules[i].build_id);
    ASSERT_EQ(a.modules[i].segments.size(), b.modules[i].segments.size());
    for (size_t s = 0; s < a.modules[i].segments.size(); ++s) {
      const RawSegment& x = a.modules[i].segments[s];
      const RawSegment& y = b.modules[i].segments[s];
      EXPECT_EQ(x.begin, y.begin);
      EXPECT_EQ(x.end, y.end);
      EXPECT_EQ(x.file_offset, y.file_offset);
      EXPECT_EQ(x.executable, y.executable);
    }
  }
  EXPECT_EQ(a.lua_frames, b.lua_frames);
  EXPECT_EQ(a.label_sets, b.label_sets);
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {
    EXPECT_EQ(a.threads[i].tid, b.threads[i].tid);
    EXPECT_EQ(a.threads[i].name, b.threads[i].name);
  }
  ASSERT_EQ(a.stacks.size(), b.stacks.size());
  for (size_t i = 0; i < a.stacks.size(); ++i) {
    EXPECT_EQ(a.stacks[i].addresses, b.stacks[i].addresses) << "stack " << i;
    EXPECT_EQ(a.stacks[i].weights, b.stacks[i].weights) << "stack " << i;
  }
  ExpectSameTimeline(a.timeline, b.timeline);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ---------------------------------------------------------------------------------------------

TEST(RawProfile, RoundTripKeepsEveryField) {
  const RawProfile original = OddProfile();
  const std::string text = Write(original);
  RawProfile read;
  ASSERT_TRUE(Read(text, &read).ok()) << Read(text, &read).message() << "\n" << text;
  EXPECT_TRUE(read.complete);
  ExpectEqual(original, read);
  EXPECT_EQ(Write(read), text);
}

TEST(RawProfile, NonFiniteNumbersRoundTrip) {
  RawProfile p;
  p.events = {EventInfo{"e", "count", 1, std::numeric_limits<double>::infinity(), 0}};
  p.health.requested_hz = std::numeric_limits<double>::quiet_NaN();
  p.health.achieved_hz = -std::numeric_limits<double>::infinity();
  p.health.symbolize_seconds = std::numeric_limits<double>::denorm_min();
  p.health.write_seconds = std::numeric_limits<double>::max();
  RawProfile read;
  ASSERT_TRUE(Read(Write(p), &read).ok());
  ExpectEqual(p, read);
}

TEST(RawProfile, EveryLineIsOneRecordOfSpaceFreeFields) {
  const std::string text = Write(OddProfile());
  ASSERT_TRUE(text.ends_with("\nend\n"));
  for (const std::string& line : Lines(text)) {
    EXPECT_FALSE(line.empty());
    EXPECT_EQ(line.find("  "), std::string::npos) << line;
    EXPECT_NE(line.back(), ' ') << line;
    for (char c : line) {
      const auto u = static_cast<unsigned char>(c);
      EXPECT_FALSE(u < 0x20 || u == 0x7f) << "control character in: " << line;
    }
  }
}

// The format as documented in docs/raw-profile.md, byte for byte.
TEST(RawProfile, WritesTheDocumentedText) {
  RawProfile p;
  p.meta = {"/usr/bin/my prog", 1234, 1700000000000000000, 1500000000};
  p.ppid = 1000;
  p.comm = "my prog";
  p.events = {EventInfo{"cpu", "nanoseconds", 10101010, 99, 30303030}};
  p.health.engine = "timer";
  p.health.unwinder = "fp";
  p.health.requested_hz = 99;
  p.health.achieved_hz = 98.5;
  p.health.samples = 3;
  p.health.threads = {ThreadHealth{1234, "my prog", 0.03, 2.97, 3, 3}};
  p.health.warnings = {"a warning"};
  p.modules = {RawModule{RawModule::Kind::kMainExecutable,
                         "/usr/bin/my prog",
                         0x555555554000,
                         "9f2c",
                         {{0x555555555000, 0x555555556000, 0x1000, true}}}};
  Frame lua;
  lua.function = "update";
  lua.file = "/srv/game/main.lua";
  lua.line = 42;
  lua.module = "[lua]";
  p.lua_frames = {lua};
  p.threads = {RawThread{1234, "my prog"}};
  p.label_sets = {{Label{"request", "/api/users"}, Label{"user", "42"}}};
  p.stacks = {
      {{0x555555555123, 0x555555555456, kRawThreadTag | 1234, kRawLabelsTag | 1}, {20202020}},
      {{kRawLuaTag | 0, kRawTruncated, kRawThreadTag | 1234}, {10101010}}};
  p.timeline = {{1000000, 0, 0, 10101010}, {11101010, 1, 0, 10101010}, {21202020, 0, 0, 10101010}};
  EXPECT_EQ(Write(p),
            "inprof-raw 2\n"
            "meta pid 1234\n"
            "meta ppid 1000\n"
            "meta comm my\\sprog\n"
            "meta program /usr/bin/my\\sprog\n"
            "meta start_ns 1700000000000000000\n"
            "meta duration_ns 1500000000\n"
            "event cpu nanoseconds 10101010 99 30303030\n"
            "health engine timer\n"
            "health engine_reason -\n"
            "health unwinder fp\n"
            "health requested_hz 99\n"
            "health achieved_hz 98.5\n"
            "health samples 3\n"
            "health dropped 0\n"
            "health truncated 0\n"
            "health broken 0\n"
            "health overflow 0\n"
            "health threads_seen 0\n"
            "health unknown_frames 0\n"
            "health overruns 0\n"
            "health symbolize_seconds 0\n"
            "health write_seconds 0\n"
            "health symbol_cache_hits 0\n"
            "health symbol_cache_misses 0\n"
            "thread_health 1234 my\\sprog 0.03 2.97 3 3\n"
            "warning a\\swarning\n"
            "module exe 555555554000 9f2c /usr/bin/my\\sprog\n"
            "segment 555555555000 555555556000 1000 x\n"
            "lua n 42 0 0 update /srv/game/main.lua [lua]\n"
            "thread 1234 my\\sprog\n"
            "labels request /api/users user 42\n"
            "stack 20202020 555555555123 555555555456 t1234 l1\n"
            "stack 10101010 L0 T t1234\n"
            "time 1000000 0 0 10101010\n"
            "time 10101010 1\n"
            "time 10101010 0\n"
            "end\n");
}

// A write cut at a line boundary keeps every record before the cut.
TEST(RawProfile, CutAtEveryLineKeepsWhatCameBefore) {
  const RawProfile original = OddProfile();
  const std::string text = Write(original);
  const std::vector<std::string> lines = Lines(text);
  size_t offset = 0;
  for (size_t n = 0; n + 1 < lines.size(); ++n) {  // every prefix short of the `end` line
    offset += n == 0 ? 0 : lines[n - 1].size() + 1;
    const std::string prefix = text.substr(0, offset);
    RawProfile read;
    const Status s = Read(prefix, &read);
    ASSERT_TRUE(s.ok()) << "cut after " << n << " lines: " << s.message();
    EXPECT_FALSE(read.complete) << n;
    size_t stacks = 0, modules = 0, threads = 0, lua = 0, events = 0, labels = 0, times = 0;
    for (size_t i = 0; i < n; ++i) {
      labels += lines[i].starts_with("labels");
      times += lines[i].starts_with("time ");
      stacks += lines[i].starts_with("stack ");
      modules += lines[i].starts_with("module ");
      threads += lines[i].starts_with("thread ");
      lua += lines[i].starts_with("lua ");
      events += lines[i].starts_with("event ");
    }
    ASSERT_EQ(read.stacks.size(), stacks) << n;
    EXPECT_EQ(read.modules.size(), modules) << n;
    EXPECT_EQ(read.threads.size(), threads) << n;
    EXPECT_EQ(read.lua_frames.size(), lua) << n;
    EXPECT_EQ(read.events.size(), events) << n;
    ASSERT_EQ(read.label_sets.size(), labels) << n;
    ASSERT_EQ(read.timeline.size(), times) << n;
    for (size_t i = 0; i < stacks; ++i) {
      EXPECT_EQ(read.stacks[i].addresses, original.stacks[i].addresses);
    }
    for (size_t i = 0; i < labels; ++i) EXPECT_EQ(read.label_sets[i], original.label_sets[i]);
    for (size_t i = 0; i < times; ++i) {
      EXPECT_EQ(read.timeline[i].time_ns, original.timeline[i].time_ns) << n;
      EXPECT_EQ(read.timeline[i].sample, original.timeline[i].sample) << n;
    }
  }
  RawProfile whole;
  ASSERT_TRUE(Read(text, &whole).ok());
  EXPECT_TRUE(whole.complete);
}

// Cut anywhere, even inside a line: the partial line is never read as a shorter record (a
// cut inside "7f12" must not give the address 0x7f), and the file reads as incomplete.
TEST(RawProfile, CutAtEveryByteReadsAsIncompletePrefix) {
  const RawProfile original = OddProfile();
  const std::string text = Write(original);
  for (size_t cut = 0; cut < text.size(); ++cut) {
    RawProfile read;
    const Status s = Read(std::string_view(text).substr(0, cut), &read);
    ASSERT_TRUE(s.ok()) << "cut at byte " << cut << ": " << s.message();
    ASSERT_FALSE(read.complete) << cut;
    ASSERT_LE(read.stacks.size(), original.stacks.size());
    for (size_t i = 0; i < read.stacks.size(); ++i) {
      ASSERT_EQ(read.stacks[i].addresses, original.stacks[i].addresses) << cut;
      ASSERT_EQ(read.stacks[i].weights, original.stacks[i].weights) << cut;
    }
    for (size_t i = 0; i < read.modules.size(); ++i) {
      ASSERT_EQ(read.modules[i].path, original.modules[i].path) << cut;
    }
    ASSERT_LE(read.label_sets.size(), original.label_sets.size());
    for (size_t i = 0; i < read.label_sets.size(); ++i) {
      ASSERT_EQ(read.label_sets[i], original.label_sets[i]) << cut;
    }
    // A time line cut short is not read as a shorter time (a delta cut from 1000 to 10).
    ASSERT_LE(read.timeline.size(), original.timeline.size());
    for (size_t i = 0; i < read.timeline.size(); ++i) {
      ASSERT_EQ(read.timeline[i].time_ns, original.timeline[i].time_ns) << cut;
      ASSERT_EQ(read.timeline[i].sample, original.timeline[i].sample) << cut;
      ASSERT_EQ(read.timeline[i].event, original.timeline[i].event) << cut;
      ASSERT_EQ(read.timeline[i].weight, original.timeline[i].weight) << cut;
    }
  }
}

TEST(RawProfile, EmptyInputIsACutFileWithNothingInIt) {
  RawProfile read;
  read.comm = "stale";
  ASSERT_TRUE(Read("", &read).ok());
  EXPECT_FALSE(read.complete);
  EXPECT_EQ(read.comm, "");
  EXPECT_TRUE(read.stacks.empty());
}

struct Malformed {
  std::string text;  // appended to a valid header and event
  size_t line;       // the line the error names
  std::string what;  // part of the message
};

TEST(RawProfile, MalformedLinesAreErrorsNamingSourceAndLine) {
  const std::string head = "inprof-raw 1\nevent cpu ns 1 99 0\n";  // lines 1-2
  const std::string meta_head = "inprof-raw 1\nmeta ppid 5\n";
  const std::vector<Malformed> cases = {
      {"\n", 3, "empty line"},
      {"meta  pid 1\n", 3, "empty field"},
      {"meta pid 1 \n", 3, "empty field"},
      {"meta pid 1\r\n", 3, "not a decimal integer"},
      {"bogus 1\n", 3, "unknown record 'bogus'"},
      {"meta pid x\n", 3, "pid: 'x' is not a decimal integer"},
      {"meta pid 99999999999999999999\n", 3, "not a decimal integer"},
      {"meta colour red\n", 3, "unknown meta field"},
      {"meta pid\n", 3, "takes 2 fields, found 1"},
      {"health samples 1\nhealth samples 2\n", 4, "given twice"},
      {"health samples -1\n", 3, "non-negative"},
      {"health achieved_hz fast\n", 3, "is not a number"},
      {"health nonsense 1\n", 3, "unknown health field"},
      {"warning a\tb\n", 3, "control character"},
      {"warning a\\qb\n", 3, "unknown escape"},
      {"warning a\\\n", 3, "lone '\\'"},
      {"warning \\x4\n", 3, "two hex digits"},
      {"thread_health 0 t 1 1 1 1\n", 3, "not a thread id"},
      {"thread_health -3 t 1 1 1 1\n", 3, "not a thread id"},
      {"module elf 0 - /x\n", 3, "module kind"},
      {"module so 0x10 - /x\n", 3, "hex number"},
      {"module so 10 ABCD /x\n", 3, "lower-case hex"},
      {"module so 10 abc /x\n", 3, "lower-case hex"},
      {"module so 10 - -\n", 3, "without a path"},
      {"segment 1 2 0 x\n", 3, "before any 'module'"},
      {"module so 0 - /x\nsegment 20 10 0 x\n", 4, "ends before it begins"},
      {"module so 0 - /x\nsegment 10 20 0 rx\n", 4, "segment flag"},
      {"lua q 1 0 0 f - -\n", 3, "lua frame kind"},
      {"lua n 4294967296 0 0 f - -\n", 3, "below 2^32"},
      {"thread 5 a\nthread 5 b\n", 4, "given twice"},
      {"thread 281474976710656 a\n", 3, "not a thread id"},
      {"stack\n", 3, "without its weights"},
      {"stack 1,2 10\n", 3, "1 weights are expected"},
      {"stack - 10\n", 3, "1 weights are expected"},
      {"stack 1,x 10\n", 3, "not a decimal integer"},
      {"stack 1 zz\n", 3, "expected a hex address"},
      {"stack 1 1\n", 3, "marker written as an address"},
      {"stack 1 fffe0000000004d2\n", 3, "marker written as an address"},
      {"stack 1 L0\n", 3, "has 0 Lua frames"},
      {"lua n 1 0 0 f - -\nstack 1 L1\n", 4, "has 1 Lua frames"},
      {"stack 1 L99999999999999999999999\n", 3, "not a decimal number"},
      {"stack 1 t0\n", 3, "not a thread id"},
      {"stack 1 t281474976710656\n", 3, "not a thread id"},
      {"stack 1 t-1\n", 3, "not a decimal number"},
      {"stack 1 10\nmodule so 0 - /x\n", 4, "after a later section"},
      {"thread 5 a\nlua n 1 0 0 f - -\n", 4, "after a later section"},
      {"end\nstack 1 10\n", 4, "after the 'end' line"},
      {"end\n\n", 4, "after the 'end' line"},
  };
  for (const Malformed& c : cases) {
    RawProfile read;
    // Meta records come before events: their cases follow a meta record instead.
    const Status s = Read((c.text.starts_with("meta") ? meta_head : head) + c.text, &read);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.text;
    const std::string expected = "t.inprofraw:" + std::to_string(c.line) + ": ";
    EXPECT_TRUE(s.message().starts_with(expected)) << c.text << " -> " << s.message();
    EXPECT_NE(s.message().find(c.what), std::string::npos) << c.text << " -> " << s.message();
  }
}

// Label sets and times (version 2), each malformed in the ways a damaged or hostile file can.
TEST(RawProfile, MalformedLabelsAndTimesAreErrorsNamingSourceAndLine) {
  const std::string head = "inprof-raw 2\nevent cpu ns 1 99 0\n";  // lines 1-2
  const std::vector<Malformed> cases = {
      {"labels a\n", 3, "'labels' takes key value pairs, found 1 fields"},
      {"labels a 1 b\n", 3, "takes key value pairs"},
      {"labels b 1 a 2\n", 3, "label key 'a' after 'b' (keys come sorted, each once)"},
      {"labels a 1 a 2\n", 3, "keys come sorted, each once"},
      {"labels a\\q 1\n", 3, "label key: unknown escape"},
      {"labels a \x01\n", 3, "label value: a control character"},
      {"stack 1 10 l1\n", 3, "'l1': label sets count from 1, and the profile has 0"},
      {"labels a 1\nstack 1 10 l2\n", 4, "the profile has 1"},
      {"labels a 1\nstack 1 10 l0\n", 4, "label sets count from 1"},
      {"labels a 1\nstack 1 10 l-1\n", 4, "not a decimal number after 'l'"},
      {"labels a 1\nstack 1 fffc000000000001\n", 4, "marker written as an address"},
      {"stack 1 10\nlabels a 1\n", 4, "after a later section"},
      {"time 5 0\n", 3, "time stack 0: the profile has 0 stacks"},
      {"stack 1 10\ntime 5 1\n", 4, "time stack 1: the profile has 1 stacks"},
      {"stack 1 10\ntime 5 4294967296\n", 4, "below 2^32"},
      {"stack 1 10\ntime 5 0 1 1\n", 4, "time event 1: the profile has 1 events"},
      {"stack 1 10\ntime 5 0 0\n", 4,
       "'time' takes 2 or 4 fields (DT STACK [EVENT WEIGHT]), found 3"},
      {"stack 1 10\ntime 5\n", 4, "takes 2 or 4 fields"},
      {"stack 1 10\ntime 5 0 0 1 1\n", 4, "takes 2 or 4 fields"},
      {"stack 1 10\ntime x 0\n", 4, "time since the start: 'x' is not a decimal integer"},
      {"stack 1 10\ntime 5 0 0 w\n", 4, "time weight: 'w' is not a decimal integer"},
      {"stack 1 10\ntime 5 0\ntime -1 0\n", 5, "records come in time order"},
      {"stack 1 10\ntime 9223372036854775807 0\ntime 1 0\n", 5, "time past 2^63 ns"},
      {"stack 1 10\ntime -9223372036854775808 0\ntime 18446744073709551615 0\ntime 1 0\n", 6,
       "time past 2^63 ns"},
      {"stack 1 10\ntime 5 0\nstack 1 10\n", 5, "after a later section"},
      {"stack 1 10\ntime 5 0\nlabels a 1\n", 5, "after a later section"},
  };
  for (const Malformed& c : cases) {
    RawProfile read;
    const Status s = Read(head + c.text, &read);
    ASSERT_FALSE(s.ok()) << c.text;
    const std::string expected = "t.inprofraw:" + std::to_string(c.line) + ": ";
    EXPECT_TRUE(s.message().starts_with(expected)) << c.text << " -> " << s.message();
    EXPECT_NE(s.message().find(c.what), std::string::npos) << c.text << " -> " << s.message();
  }
  // A profile without events has no time record that can name one.
  RawProfile read;
  const Status s = Read("inprof-raw 2\nstack - 10\ntime 5 0\n", &read);
  EXPECT_NE(s.message().find("t.inprofraw:3: time event 0: the profile has 0 events"),
            std::string::npos)
      << s.message();
}

// What an older inprof reads: a profile without labels and times is version 1, as it always
// was; version 2's records in a file that says version 1 are errors, as they are to a reader
// that knows version 1 only.
TEST(RawProfile, WithoutLabelsAndTimesTheFileIsVersion1) {
  RawProfile p = OddProfile();
  p.label_sets.clear();
  p.timeline.clear();
  for (RawStack& stack : p.stacks) {
    std::erase_if(stack.addresses, [](uint64_t a) { return (a & kRawTagMask) == kRawLabelsTag; });
  }
  const std::string text = Write(p);
  EXPECT_TRUE(text.starts_with("inprof-raw 1\n")) << text.substr(0, 20);
  RawProfile read;
  ASSERT_TRUE(Read(text, &read).ok());
  ExpectEqual(p, read);

  const std::string head = "inprof-raw 1\nevent cpu ns 1 99 0\n";
  const std::vector<Malformed> cases = {
      {"labels a 1\n", 3, "'labels' needs format version 2 (the header says 'inprof-raw 1')"},
      {"stack 1 10 l1\n", 3, "a labels tag (l<set>) needs format version 2"},
      {"stack 1 10\ntime 5 0\n", 4, "'time' needs format version 2"},
  };
  for (const Malformed& c : cases) {
    const Status s = Read(head + c.text, &read);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_TRUE(s.message().starts_with("t.inprofraw:" + std::to_string(c.line) + ": "))
        << s.message();
    EXPECT_NE(s.message().find(c.what), std::string::npos) << s.message();
  }
  // Either one alone makes it version 2.
  RawProfile labels_only;
  labels_only.label_sets = {{Label{"k", "v"}}};
  EXPECT_TRUE(Write(labels_only).starts_with("inprof-raw 2\nmeta "));
  RawProfile times_only;
  times_only.events = {EventInfo{"cpu", "ns", 1, 0, 1}};
  times_only.stacks = {{{0x1000}, {1}}};
  times_only.timeline = {{5, 0, 0, 1}};
  EXPECT_TRUE(Write(times_only).starts_with("inprof-raw 2\nmeta "));
}

TEST(RawProfile, TimeRecordsGiveEventAndWeightOnlyWhenTheyChange) {
  RawProfile read;
  ASSERT_TRUE(Read("inprof-raw 2\nevent a u 1 0 0\nevent b u 1 0 0\n"
                   "stack 1,1 10\nstack 1,1 20\n"
                   "time -3 1\ntime 3 0 1 7\ntime 0 1\ntime 10 0 0 7\nend\n",
                   &read)
                  .ok());
  const std::vector<TimedSample> expected = {
      {-3, 1, 0, 1}, {0, 0, 1, 7}, {0, 1, 1, 7}, {10, 0, 0, 7}};
  ExpectSameTimeline(read.timeline, expected);
  // And the writer leaves them out exactly then.
  const std::vector<std::string> lines = Lines(Write(read));
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(
      std::vector<std::string>(lines.end() - 5, lines.end()),
      (std::vector<std::string>{"time -3 1", "time 3 0 1 7", "time 0 1", "time 10 0 0 7", "end"}));
}

// The runtime drains one thread after another: its timeline is in time order per thread only.
// The file is in time order (stably: equal times keep their order), and timed samples that
// name no stack or event are left out, so the reader never refuses what the writer wrote.
TEST(RawProfile, TimelineIsWrittenInTimeOrderAndOnlyWhatReadsBack) {
  RawProfile p;
  p.events = {EventInfo{"cpu", "ns", 1, 0, 6}};
  p.stacks = {{{0x1000}, {3}}, {{0x2000}, {3}}};
  p.timeline = {{30, 0, 0, 1}, {10, 0, 0, 1}, {20, 1, 0, 1}, {10, 1, 0, 1},
                {15, 2, 0, 1}, {15, 0, 1, 1}, {40, 0, 0, 2}, {40, 1, 0, 1}};
  RawProfile read;
  const std::string text = Write(p);
  ASSERT_TRUE(Read(text, &read).ok()) << text;
  const std::vector<TimedSample> expected = {{10, 0, 0, 1}, {10, 1, 0, 1}, {20, 1, 0, 1},
                                             {30, 0, 0, 1}, {40, 0, 0, 2}, {40, 1, 0, 1}};
  ExpectSameTimeline(read.timeline, expected);
  EXPECT_EQ(Write(read), text);
}

// A process killed among its time lines: its stacks are whole, its times up to the cut kept.
TEST(RawProfile, CutAmongTimesKeepsTheStacksAndEarlierTimes) {
  RawProfile read;
  ASSERT_TRUE(Read("inprof-raw 2\nevent cpu ns 1 0 0\nlabels k v\nstack 2 10 t5 l1\n"
                   "time 100 0\ntime 50 0\ntime 2",
                   &read)
                  .ok());
  EXPECT_FALSE(read.complete);
  ASSERT_EQ(read.stacks.size(), 1u);
  EXPECT_EQ(read.stacks[0].addresses,
            (std::vector<uint64_t>{0x10, kRawThreadTag | 5, kRawLabelsTag | 1}));
  EXPECT_EQ(read.label_sets, (std::vector<std::vector<Label>>{{Label{"k", "v"}}}));
  ExpectSameTimeline(read.timeline, {{100, 0, 0, 1}, {150, 0, 0, 1}});
}

TEST(RawProfile, WeightsMustMatchTheEventsCount) {
  RawProfile read;
  EXPECT_TRUE(Read("inprof-raw 1\nstack - 10\nend\n", &read).ok());
  ASSERT_EQ(read.stacks.size(), 1u);
  EXPECT_TRUE(read.stacks[0].weights.empty());
  const Status s = Read("inprof-raw 1\nstack 5 10\nend\n", &read);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the profile has 0 events, so '-' are expected"), std::string::npos)
      << s.message();
}

TEST(RawProfile, FirstLineMustBeTheHeader) {
  RawProfile read;
  for (const char* text : {"inprof-raw 3\nend\n", "inprof-raw 10\n"}) {
    const Status s = Read(text, &read);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("this reader knows versions 1 to 2 (a newer inprof wrote it)"),
              std::string::npos)
        << s.message();
  }
  // Not newer: no advice to upgrade.
  EXPECT_EQ(Read("inprof-raw 0\n", &read).message(),
            "t.inprofraw:1: raw profile version 0, this reader knows versions 1 to 2");
  for (const char* text : {"inprof-raw 1\nend\n", "inprof-raw 2\nend\n"}) {
    ASSERT_TRUE(Read(text, &read).ok()) << text;
    EXPECT_TRUE(read.complete);
  }
  for (const char* text : {"a;b 1\n", "inprof-raw\n", "inprof-raw 1 \n", "hello", "\n"}) {
    const Status s = Read(text, &read);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_TRUE(s.message().starts_with("t.inprofraw:1: not a raw profile")) << s.message();
  }
  // The start of the header, cut: a process killed as it began to write.
  for (const char* text : {"i", "inprof-ra", "inprof-raw 1", "inprof-raw 2"}) {
    ASSERT_TRUE(Read(text, &read).ok()) << text;
    EXPECT_FALSE(read.complete);
  }
}

// Counts in the text are never trusted for allocation: a claimed Lua index or tid far past
// anything real is refused without allocating, and a weights list far longer than the
// events is refused at its first extra weight.
TEST(RawProfile, HostileNumbersAreRefusedCheaply) {
  std::string many = "inprof-raw 1\nevent e u 1 0 0\nstack 1";
  for (int i = 0; i < 200000; ++i) many += ",1";
  many += " 10\n";
  RawProfile read;
  const auto begin = std::chrono::steady_clock::now();
  const Status s = Read(many, &read);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1 weights are expected"), std::string::npos);
  EXPECT_FALSE(Read("inprof-raw 1\nstack - L281474976710655\n", &read).ok());
  EXPECT_FALSE(Read("inprof-raw 2\nstack - l281474976710655\n", &read).ok());
  EXPECT_FALSE(Read("inprof-raw 2\nevent e u 1 0 0\nstack 1 10\ntime 0 4294967295\n", &read).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(2));
}

TEST(RawProfile, FormatIsChosenByNameAndNotWrittenFromASymbolizedProfile) {
  EXPECT_EQ(FormatFromPath("/tmp/profile.inprofraw"), Format::kRaw);
  EXPECT_EQ(FormatFromPath("p.1234.inprofraw"), Format::kRaw);
  EXPECT_EQ(FormatFromPath(".inprofraw"), std::nullopt);
  EXPECT_EQ(FormatFromPath("profile.inprofraw.gz"), std::nullopt);
  char dir_template[] = "/tmp/inprof-raw-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/p.inprofraw";
  Profile profile;
  profile.events = {EventInfo{"cpu", "nanoseconds", 1, 0, 0}};
  const Status s = WriteProfileFile(profile, Format::kRaw, path);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("unsymbolized"), std::string::npos) << s.message();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "nothing may be written";
  rmdir(dir_template);
}

// Inputs the fuzz target found or was seeded with, through its own checks.
TEST(RawProfile, FuzzCorpusPassesTheFuzzerChecks) {
  const std::string dir = SourceDir() + "/fuzz/corpus/raw_profile";
  size_t files = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      EXPECT_EQ(fuzz::CheckRawProfile(text.str()), "") << e->d_name;
      ++files;
    }
    closedir(d);
  }
  EXPECT_GT(files, 0u) << "no seeds in " << dir;
  EXPECT_EQ(fuzz::CheckRawProfile(Write(OddProfile())), "");
}

}  // namespace
}  // namespace inprof::test
