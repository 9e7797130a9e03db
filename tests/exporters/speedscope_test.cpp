// speedscope files: what the writer puts where speedscope reads it (checked with a JSON
// parser of this test's own, not the exporters' cursor), the exact round trip through
// inprof's extra members, files other tools write (sampled and evented), and the reader's
// refusals. The real speedscope app loads a written file in tests/browser/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/speedscope.h"

namespace inprof::test {
namespace {

// ---- A small strict JSON parser (RFC 8259), so the checks do not trust the reader --------

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // strings; numbers as written
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in file order

  bool Has(const std::string& key) const {
    for (const auto& m : members) {
      if (m.first == key) return true;
    }
    return false;
  }
  const Json& operator[](const std::string& key) const {
    for (const auto& m : members) {
      if (m.first == key) return m.second;
    }
    static const Json null;
    ADD_FAILURE() << "no member " << key;
    return null;
  }
  const Json& operator[](size_t i) const { return items.at(i); }
  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const auto& m : members) keys.push_back(m.first);
    return keys;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  // Fails the test (and returns null) on anything that is not one strict JSON value.
  Json Parse() {
    Json v = Value(0);
    Space();
    if (i_ != s_.size()) Error("trailing text");
    return v;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  void Error(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(i_);
    i_ = s_.size();
  }
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  Json Value(int depth) {
    Json v;
    Space();
    if (depth > 200 || i_ >= s_.size()) {
      Error("value expected");
      return v;
    }
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type = Json::kObject;
      if (Eat('}')) return v;
      do {
        Space();
        std::string key = String();
        if (!Eat(':')) Error("':' expected");
        v.members.emplace_back(std::move(key), Value(depth + 1));
      } while (ok() && Eat(','));
      if (!Eat('}')) Error("'}' expected");
    } else if (c == '[') {
      ++i_;
      v.type = Json::kArray;
      if (Eat(']')) return v;
      do {
        v.items.push_back(Value(depth + 1));
      } while (ok() && Eat(','));
      if (!Eat(']')) Error("']' expected");
    } else if (c == '"') {
      v.type = Json::kString;
      v.text = String();
    } else if (s_.compare(i_, 4, "true") == 0 || s_.compare(i_, 5, "false") == 0) {
      v.type = Json::kBool;
      v.boolean = c == 't';
      i_ += v.boolean ? 4 : 5;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else {
      // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
      const size_t start = i_;
      auto digits = [&] {
        const size_t from = i_;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        return i_ - from;
      };
      if (s_[i_] == '-') ++i_;
      const size_t int_start = i_;
      const size_t n = digits();
      if (n == 0 || (n > 1 && s_[int_start] == '0')) Error("bad number");
      if (i_ < s_.size() && s_[i_] == '.') {
        ++i_;
        if (digits() == 0) Error("bad fraction");
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
        if (digits() == 0) Error("bad exponent");
      }
      v.type = Json::kNumber;
      v.text = s_.substr(start, i_ - start);
      v.number = std::strtod(v.text.c_str(), nullptr);
    }
    return v;
  }
  std::string String() {
    std::string out;
    if (i_ >= s_.size() || s_[i_] != '"') {
      Error("string expected");
      return out;
    }
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) {
        Error("raw control character in a string");
        return out;
      }
      if (c == '\\') {
        const char e = s_[++i_];
        ++i_;
        static const std::string kSimple = "\"\\/bfnrt", kValue = "\"\\/\b\f\n\r\t";
        if (const size_t k = kSimple.find(e); k != std::string::npos) {
          out += kValue[k];
        } else if (e == 'u' && i_ + 4 <= s_.size()) {
          const unsigned cp = std::stoul(s_.substr(i_, 4), nullptr, 16);
          i_ += 4;
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else {
            out += "\\u" + std::to_string(cp);  // not needed by these tests beyond < 0x80
          }
        } else {
          Error("bad escape");
          return out;
        }
        continue;
      }
      out += static_cast<char>(c);
      ++i_;
    }
    if (i_ >= s_.size()) {
      Error("unterminated string");
      return out;
    }
    ++i_;
    return out;
  }

  const std::string& s_;
  size_t i_ = 0;
  std::string error_;
};

// Strict UTF-8 (what JSON text must be, and what speedscope's TextDecoder expects).
bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : b & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = cp << 6 | (c & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

Json ParseJson(const std::string& text) {
  JsonParser parser(text);
  Json v = parser.Parse();
  EXPECT_TRUE(parser.ok()) << parser.error() << "\n" << text.substr(0, 2000);
  EXPECT_TRUE(ValidUtf8(text));
  return v;
}

// ---- Profiles ------------------------------------------------------------------------------

// A string from a literal with NUL bytes in it, all of them kept.
template <size_t N>
std::string Bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

// The 1-based line of the first `needle` in `text`.
size_t LineOf(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<size_t>(
                 std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(at), '\n'));
}

std::string Write(const Profile& p, size_t event = 0) {
  std::ostringstream out;
  ExportOptions options;
  options.event = event;
  WriteSpeedscope(p, options, out);
  return out.str();
}

Profile Read(const std::string& text) {
  Profile p;
  const Status s = ReadSpeedscope(text, "t.speedscope.json", &p);
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << text.substr(0, 3000);
  return p;
}

std::string ReadError(const std::string& text) {
  Profile p;
  const Status s = ReadSpeedscope(text, "bad.json", &p);
  EXPECT_FALSE(s.ok()) << text;
  return s.message();
}

uint32_t AddFrame(Profile& p, std::string function, std::string file = {}, uint32_t line = 0,
                  FrameKind kind = FrameKind::kNative) {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.kind = kind;
  p.frames.push_back(std::move(f));
  return static_cast<uint32_t>(p.frames.size() - 1);
}

// Two threads sampled at 100 Hz (period 10 ms, one period per signal), interleaved in time,
// with labels on some samples and a second event (wall) that is written separately.
Profile TwoThreads() {
  Profile p;
  p.meta.program = "/opt/app/bin/server";
  p.meta.pid = 4242;
  p.meta.start_time_ns = 1700000000123456789;
  p.meta.duration_ns = 90000000;
  p.events.push_back({"cpu", "nanoseconds", 10000000, 100, 6});
  p.events.push_back({"wall", "nanoseconds", 10000000, 100, 1});
  const uint32_t main = AddFrame(p, "main", "/src/main.cpp", 12);
  p.frames[main].column = 5;
  p.frames[main].module = "/opt/app/bin/server";
  p.frames[main].address = 0xffffffffff601234;  // past 2^63: written as a hex string
  const uint32_t loop = AddFrame(p, "event_loop()", "/src/loop.cpp", 40);
  const uint32_t parse =
      AddFrame(p, "parse(std::string_view)", "/src/parse.cpp", 7, FrameKind::kInlined);
  const uint32_t worker = AddFrame(p, "worker_entry", "/src/worker.cpp", 3);
  const uint32_t hash = AddFrame(p, "hash_block", "/src/hash.cpp", 99);
  const uint32_t truncated = AddFrame(p, "[truncated]", {}, 0, FrameKind::kSynthetic);
  p.label_sets = {{{"endpoint", "/api"}}, {{"endpoint", "/health"}, {"tenant", "7"}}};
  p.threads = {{101, "main-loop"}, {107, "worker-7"}};
  // samples: 0 main;loop;parse (101, /api)  1 main;loop (101)  2 worker;hash (107)
  //          3 truncated;hash (107, /health+tenant)  4 main (101, wall only)
  p.samples.push_back({{main, loop, parse}, {2, 0}, 101, 1});
  p.samples.push_back({{main, loop}, {1, 0}, 101, 0});
  p.samples.push_back({{worker, hash}, {2, 0}, 107, 0});
  p.samples.push_back({{truncated, hash}, {1, 0}, 107, 2});
  p.samples.push_back({{main}, {0, 1}, 101, 0});
  p.timeline = {
      {1000000, 0, 0, 1},  {5000000, 2, 0, 1},  {11000000, 1, 0, 1}, {15000000, 3, 0, 1},
      {21000000, 0, 0, 1}, {25000000, 2, 0, 1}, {30000000, 4, 1, 1},
  };
  return p;
}

std::vector<std::string> StackNames(const Json& file, const Json& stack) {
  std::vector<std::string> names;
  for (const Json& index : stack.items) {
    names.push_back(file["shared"]["frames"][static_cast<size_t>(index.number)]["name"].text);
  }
  return names;
}

// ---- The writer ------------------------------------------------------------------------------

TEST(SpeedscopeWriter, FileHasTheFieldsSpeedscopeReads) {
  const std::string text = Write(TwoThreads());
  EXPECT_TRUE(
      text.starts_with("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
  EXPECT_TRUE(LooksLikeSpeedscope(text));
  const Json file = ParseJson(text);
  EXPECT_EQ(file["$schema"].text, "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(file["exporter"].text, "inprof");
  EXPECT_EQ(file["name"].text, "server: cpu");
  ASSERT_EQ(file["shared"]["frames"].items.size(), 6u);
  const Json& main = file["shared"]["frames"][0];
  EXPECT_EQ(main["name"].text, "main");
  EXPECT_EQ(main["file"].text, "/src/main.cpp");
  EXPECT_EQ(main["line"].number, 12);
  EXPECT_EQ(main["col"].number, 5);
  // Unknown file, line and column are left out, not written as "" or 0.
  const Json& truncated = file["shared"]["frames"][5];
  EXPECT_EQ(truncated.Keys(), (std::vector<std::string>{"name", "inprof"}));
  for (const Json& p : file["profiles"].items) {
    EXPECT_EQ(p["type"].text, "sampled");
    EXPECT_EQ(p["unit"].text, "nanoseconds");
    EXPECT_EQ(p["startValue"].number, 0);
    ASSERT_EQ(p["samples"].items.size(), p["weights"].items.size());
    double sum = 0;
    for (const Json& w : p["weights"].items) {
      EXPECT_GT(w.number, 0);  // speedscope throws on negative weights and drops zero ones
      sum += w.number;
    }
    EXPECT_EQ(p["endValue"].number, sum);
    for (const Json& stack : p["samples"].items) {
      for (const Json& index : stack.items) EXPECT_LT(index.number, 6);
    }
  }
  // Both threads have 30 ms of CPU; the first with the most weight is the one shown first.
  EXPECT_EQ(file["activeProfileIndex"].number, 0);
}

TEST(SpeedscopeWriter, OneProfilePerThreadInTidOrderWithSamplesInTimeOrder) {
  const Json file = ParseJson(Write(TwoThreads()));
  ASSERT_EQ(file["profiles"].items.size(), 2u);
  EXPECT_EQ(file["profiles"][0]["name"].text, "main-loop (tid 101)");
  EXPECT_EQ(file["profiles"][1]["name"].text, "worker-7 (tid 107)");
  const Json& main = file["profiles"][0];
  ASSERT_EQ(main["samples"].items.size(), 3u);
  EXPECT_EQ(StackNames(file, main["samples"][0]),
            (std::vector<std::string>{"main", "event_loop()", "parse(std::string_view)"}));
  EXPECT_EQ(StackNames(file, main["samples"][1]),
            (std::vector<std::string>{"main", "event_loop()"}));
  EXPECT_EQ(StackNames(file, main["samples"][2]),
            (std::vector<std::string>{"main", "event_loop()", "parse(std::string_view)"}));
  // One signal = one period of 10 ms, so speedscope shows times.
  for (const Json& w : main["weights"].items) EXPECT_EQ(w.text, "10000000");
  EXPECT_EQ(main["endValue"].text, "30000000");
  const Json& extra = main["inprof"];
  EXPECT_EQ(extra["tid"].number, 101);
  EXPECT_EQ(extra["thread"].text, "main-loop");
  ASSERT_EQ(extra["times_ns"].items.size(), 3u);
  EXPECT_EQ(extra["times_ns"][0].text, "1000000");
  EXPECT_EQ(extra["times_ns"][1].text, "11000000");
  EXPECT_EQ(extra["times_ns"][2].text, "21000000");
  ASSERT_EQ(extra["labels"].items.size(), 3u);
  EXPECT_EQ(extra["labels"][0].number, 1);
  EXPECT_EQ(extra["labels"][1].number, 0);

  const Json& worker = file["profiles"][1];
  ASSERT_EQ(worker["samples"].items.size(), 3u);
  EXPECT_EQ(StackNames(file, worker["samples"][1]),
            (std::vector<std::string>{"[truncated]", "hash_block"}));
  EXPECT_EQ(worker["inprof"]["times_ns"][1].text, "15000000");

  const Json& header = file["inprof"];
  EXPECT_EQ(header["version"].number, 1);
  EXPECT_EQ(header["program"].text, "/opt/app/bin/server");
  EXPECT_EQ(header["start_time_ns"].text, "1700000000123456789");
  EXPECT_EQ(header["event"]["name"].text, "cpu");
  EXPECT_EQ(header["weight_scale"].text, "10000000");
  EXPECT_TRUE(header["timeline"].boolean);
  ASSERT_EQ(header["label_sets"].items.size(), 2u);
  EXPECT_EQ(header["label_sets"][1][1][0].text, "tenant");
  EXPECT_EQ(header["label_sets"][1][1][1].text, "7");
}

TEST(SpeedscopeWriter, AnotherEventHasOnlyItsOwnSamples) {
  const Json file = ParseJson(Write(TwoThreads(), 1));
  ASSERT_EQ(file["profiles"].items.size(), 1u);
  EXPECT_EQ(file["name"].text, "server: wall");
  EXPECT_EQ(file["profiles"][0]["name"].text, "main-loop (tid 101)");
}

TEST(SpeedscopeWriter, WithoutATimelineSamplesKeepProfileOrderAndTotals) {
  Profile p;
  p.events.push_back({"samples", "count", 0, 0, 10});
  const uint32_t a = AddFrame(p, "a");
  const uint32_t b = AddFrame(p, "b", "/x/b.c", 3);
  p.samples.push_back({{a, b}, {7}, 0, 0});
  p.samples.push_back({{a}, {0}, 0, 0});  // no weight: left out
  p.samples.push_back({{b}, {3}, 0, 0});
  const std::string text = Write(p);
  const Json file = ParseJson(text);
  ASSERT_EQ(file["profiles"].items.size(), 1u);
  const Json& all = file["profiles"][0];
  EXPECT_EQ(all["name"].text, "all threads");
  EXPECT_EQ(all["unit"].text, "none");
  EXPECT_EQ(StackNames(file, all["samples"][0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(StackNames(file, all["samples"][1]), (std::vector<std::string>{"b"}));
  EXPECT_EQ(all["weights"][0].number, 7);
  EXPECT_EQ(all["weights"][1].number, 3);
  EXPECT_FALSE(all["inprof"].Has("times_ns"));
  EXPECT_FALSE(file["inprof"]["timeline"].boolean);
  // Read back: the same samples, and still no timeline (none is made up).
  const Profile back = Read(text);
  EXPECT_TRUE(back.timeline.empty());
  ASSERT_EQ(back.samples.size(), 2u);
  EXPECT_EQ(back.samples[0].weights, std::vector<int64_t>{7});
  EXPECT_EQ(back.events[0].total_weight, 10);
  EXPECT_EQ(Write(back), text);
}

TEST(SpeedscopeWriter, NoTimelineButThreadsGivesOneProfilePerThread) {
  Profile p;
  p.events.push_back({"cpu", "nanoseconds", 1000000, 1000, 0});
  const uint32_t a = AddFrame(p, "a");
  p.samples.push_back({{a}, {4}, 30, 0});
  p.samples.push_back({{a}, {2}, 20, 0});
  p.threads = {{30, "thirty"}};
  const Json file = ParseJson(Write(p));
  ASSERT_EQ(file["profiles"].items.size(), 2u);
  EXPECT_EQ(file["profiles"][0]["name"].text, "tid 20");
  EXPECT_EQ(file["profiles"][1]["name"].text, "thirty (tid 30)");
  EXPECT_EQ(file["profiles"][1]["weights"][0].text, "4000000");
  EXPECT_EQ(file["activeProfileIndex"].number, 1);
}

TEST(SpeedscopeWriter, AnyStringGivesValidJson) {
  Profile p;
  p.meta.program = Bytes("/bin/\"quoted\"\\\x01\xff");
  p.events.push_back({"c\"p\nu", "nanoseconds", 0, 0, 1});
  const uint32_t f = AddFrame(p, Bytes("na\"me\\\n\t\x7f\x1f\xc3\x28 \xe2\x82\xac\0end"),
                              "/a\"b/\xf0\x9f\x98\x80.cpp", 1);
  p.label_sets = {{{"k\"", "v\n\xff"}}};
  p.threads = {{9, "th\"read\x02"}};
  p.samples.push_back({{f, 77}, {1}, 9, 1});  // 77: a frame the profile lacks
  const std::string text = Write(p);
  const Json file = ParseJson(text);
  ASSERT_EQ(file["shared"]["frames"].items.size(), 2u);
  EXPECT_EQ(file["shared"]["frames"][1]["name"].text, "[unknown]");
  EXPECT_EQ(file["profiles"][0]["name"].text, "th\"read\x02 (tid 9)");
  const Profile back = Read(text);
  ASSERT_EQ(back.frames.size(), 2u);
  // Invalid UTF-8 becomes U+FFFD, as in every JSON inprof writes; the rest comes back.
  EXPECT_EQ(back.frames[0].function, Bytes("na\"me\\\n\t\x7f\x1f\xef\xbf\xbd( \xe2\x82\xac\0end"));
  EXPECT_EQ(back.frames[0].file, "/a\"b/\xf0\x9f\x98\x80.cpp");
  EXPECT_EQ(back.meta.program, "/bin/\"quoted\"\\\x01\xef\xbf\xbd");
  EXPECT_EQ(back.label_sets[0][0].value, "v\n\xef\xbf\xbd");
  EXPECT_EQ(back.threads[0].name, "th\"read\x02");
  EXPECT_EQ(Write(back), text);
}

TEST(SpeedscopeWriter, Deterministic) { EXPECT_EQ(Write(TwoThreads()), Write(TwoThreads())); }

TEST(SpeedscopeWriter, HugeWeightsFallBackToCountsOfPeriods) {
  Profile p;
  p.events.push_back({"cpu", "nanoseconds", 10000000, 100, 0});
  p.samples.push_back({{AddFrame(p, "a")}, {INT64_MAX / 1000}, 1, 0});
  const Json file = ParseJson(Write(p));
  EXPECT_EQ(file["profiles"][0]["unit"].text, "none");
  EXPECT_EQ(file["inprof"]["weight_scale"].number, 1);
  const Profile back = Read(Write(p));
  EXPECT_EQ(back.samples[0].weights[0], INT64_MAX / 1000);
  EXPECT_EQ(back.events[0].period, 10000000u);
}

// ---- Round trip --------------------------------------------------------------------------

TEST(SpeedscopeRoundTrip, InprofFilesReadBackExactly) {
  const Profile p = TwoThreads();
  const std::string text = Write(p);
  const Profile back = Read(text);
  EXPECT_EQ(back.meta.program, p.meta.program);
  EXPECT_EQ(back.meta.pid, p.meta.pid);
  EXPECT_EQ(back.meta.start_time_ns, p.meta.start_time_ns);
  EXPECT_EQ(back.meta.duration_ns, p.meta.duration_ns);
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.events[0].name, "cpu");
  EXPECT_EQ(back.events[0].unit, "nanoseconds");
  EXPECT_EQ(back.events[0].period, 10000000u);
  EXPECT_EQ(back.events[0].frequency_hz, 100);
  EXPECT_EQ(back.events[0].total_weight, 6);
  EXPECT_EQ(back.frames, p.frames);  // names, files, lines, columns, kinds, modules, addresses
  EXPECT_EQ(back.threads, p.threads);
  EXPECT_EQ(back.label_sets, p.label_sets);
  // The cpu samples, each with its own weight, tid and labels (the wall-only one is gone).
  ASSERT_EQ(back.samples.size(), 4u);
  std::map<std::vector<uint32_t>, const Sample*> by_stack;
  for (const Sample& s : back.samples) by_stack[s.frames] = &s;
  for (size_t i = 0; i < 4; ++i) {
    const Sample* s = by_stack[p.samples[i].frames];
    ASSERT_NE(s, nullptr) << i;
    EXPECT_EQ(s->weights, std::vector<int64_t>{p.samples[i].weights[0]}) << i;
    EXPECT_EQ(s->tid, p.samples[i].tid) << i;
    EXPECT_EQ(s->labels, p.samples[i].labels) << i;
  }
  // The timeline: every cpu entry, at its exact time, in time order.
  ASSERT_EQ(back.timeline.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const TimedSample& want = p.timeline[i];
    const TimedSample& got = back.timeline[i];
    EXPECT_EQ(got.time_ns, want.time_ns) << i;
    EXPECT_EQ(got.weight, want.weight) << i;
    EXPECT_EQ(got.event, 0u);
    EXPECT_EQ(back.samples[got.sample].frames, p.samples[want.sample].frames) << i;
  }
  EXPECT_EQ(Write(back), text);
}

// The runtime's timeline has a bound (docs/timeline.md): past it, samples count in the weights
// but have no time. Their weight is written after the timed samples and comes back untimed.
TEST(SpeedscopeRoundTrip, WeightTheTimelineLacksIsKeptWithoutATime) {
  Profile p;
  p.events.push_back({"cpu", "nanoseconds", 1000000, 1000, 7});
  const uint32_t a = AddFrame(p, "a");
  const uint32_t b = AddFrame(p, "b");
  p.samples.push_back({{a}, {3}, 5, 0});
  p.samples.push_back({{a, b}, {4}, 5, 0});
  p.timeline = {{100, 1, 0, 1}, {200, 0, 0, 1}, {300, 1, 0, 1}};
  const std::string text = Write(p);
  const Json file = ParseJson(text);
  const Json& thread = file["profiles"][0];
  // 3 timed, then the untimed rest: a;b (first seen on the timeline) 2, a 2.
  ASSERT_EQ(thread["samples"].items.size(), 5u);
  EXPECT_EQ(thread["inprof"]["times_ns"].items.size(), 3u);
  EXPECT_EQ(StackNames(file, thread["samples"][3]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(StackNames(file, thread["samples"][4]), std::vector<std::string>{"a"});
  EXPECT_EQ(thread["weights"][3].text, "2000000");
  EXPECT_EQ(thread["weights"][4].text, "2000000");
  EXPECT_EQ(thread["endValue"].text, "7000000");
  const Profile back = Read(text);
  ASSERT_EQ(back.samples.size(), 2u);
  EXPECT_EQ(back.samples[0].frames, (std::vector<uint32_t>{a, b}));
  EXPECT_EQ(back.samples[0].weights[0], 4);
  EXPECT_EQ(back.samples[1].weights[0], 3);
  ASSERT_EQ(back.timeline.size(), 3u);
  EXPECT_EQ(back.timeline[1].time_ns, 200);
  EXPECT_EQ(back.timeline[1].sample, 1u);
  EXPECT_EQ(Write(back), text);
}

TEST(SpeedscopeRoundTrip, WriteProfileFileNamesAndWritesIt) {
  const std::string dir = ::testing::TempDir();
  const std::string path = InsertBeforeExtension(dir + "/out.speedscope.json", "cpu");
  EXPECT_EQ(path, dir + "/out.cpu.speedscope.json");
  EXPECT_EQ(FormatFromPath(path), Format::kSpeedscope);
  ASSERT_TRUE(WriteProfileFile(TwoThreads(), Format::kSpeedscope, path).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), Write(TwoThreads()));
}

// ---- Files from other tools -----------------------------------------------------------------

// As speedscope's own exporter and the tools that follow its spec write them: members in
// another order ("shared" after "profiles", "$schema" not first), fractional weights in a
// unit other than nanoseconds, frames without files.
constexpr const char* kThirdPartySampled = R"({
  "exporter": "speedscope@1.25.0",
  "name": "simple.txt",
  "activeProfileIndex": 1,
  "$schema": "https://www.speedscope.app/file-format-schema.json",
  "profiles": [
    {"type": "sampled", "name": "Main Thread", "unit": "milliseconds",
     "startValue": 100, "endValue": 104.5,
     "samples": [[0, 1], [0, 1, 2], [0, 1], [3]],
     "weights": [1.5, 2, 1.5, 0.25]},
    {"type": "sampled", "name": "Worker", "unit": "seconds",
     "startValue": 0.1005, "endValue": 0.2,
     "samples": [[3], [3, 2]],
     "weights": [0.001, 0.002]}
  ],
  "shared": {"frames": [
    {"name": "main", "file": "/app/main.py", "line": 1, "col": 1},
    {"name": "run", "file": "/app/main.py", "line": 10.0},
    {"name": "work"},
    {"name": "idle", "extra": [1, {"x": null}]}
  ]}
})";

TEST(SpeedscopeReader, SampledProfilesFromOtherTools) {
  ASSERT_TRUE(LooksLikeSpeedscope(kThirdPartySampled));
  const Profile p = Read(kThirdPartySampled);
  ASSERT_EQ(p.frames.size(), 4u);
  EXPECT_EQ(p.frames[1].function, "run");
  EXPECT_EQ(p.frames[1].file, "/app/main.py");
  EXPECT_EQ(p.frames[1].line, 10u);
  EXPECT_EQ(p.frames[0].column, 1u);
  EXPECT_EQ(p.frames[2].file, "");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].name, "time");
  EXPECT_EQ(p.events[0].unit, "nanoseconds");
  // Profiles are threads 1, 2, ... named after them; identical stacks merge.
  EXPECT_EQ(p.threads, (std::vector<ThreadInfo>{{1, "Main Thread"}, {2, "Worker"}}));
  ASSERT_EQ(p.samples.size(), 5u);
  EXPECT_EQ(p.samples[0].frames, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(p.samples[0].weights[0], 3000000);  // 1.5 ms twice
  EXPECT_EQ(p.samples[0].tid, 1);
  EXPECT_EQ(p.samples[3].tid, 2);
  EXPECT_EQ(p.events[0].total_weight, 3000000 + 2000000 + 250000 + 1000000 + 2000000);
  // Times: running sums of the weights from each profile's startValue, time 0 at the earliest
  // start (100 ms); the two threads interleave.
  std::vector<std::pair<int64_t, int64_t>> times;  // (time, tid)
  for (const TimedSample& t : p.timeline) times.push_back({t.time_ns, p.samples[t.sample].tid});
  EXPECT_EQ(times,
            (std::vector<std::pair<int64_t, int64_t>>{
                {0, 1}, {500000, 2}, {1500000, 1}, {1500000, 2}, {3500000, 1}, {5000000, 1}}));
  EXPECT_EQ(p.meta.program, "simple.txt");
  EXPECT_EQ(p.meta.duration_ns, 5250000);
  // Written again, it is an inprof file that reads back to the same profile.
  const std::string text = Write(p);
  EXPECT_EQ(Write(Read(text)), text);
}

TEST(SpeedscopeReader, EventedProfilesBecomeSamplesOfTheOpenStack) {
  const std::string file = R"({"$schema": "https://www.speedscope.app/file-format-schema.json",
    "shared": {"frames": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
    "profiles": [{"type": "evented", "name": "js", "unit": "microseconds",
      "startValue": 10, "endValue": 40, "events": [
        {"type": "O", "frame": 0, "at": 10},
        {"type": "O", "frame": 1, "at": 12},
        {"type": "C", "frame": 1, "at": 15},
        {"type": "O", "frame": 2, "at": 15},
        {"type": "O", "frame": 1, "at": 16},
        {"type": "C", "frame": 1, "at": 19},
        {"type": "C", "frame": 2, "at": 20},
        {"type": "O", "frame": 1, "at": 20},
        {"type": "C", "frame": 1, "at": 22},
        {"type": "C", "frame": 0, "at": 25},
        {"type": "O", "frame": 2, "at": 30}]}]})";
  const Profile p = Read(file);
  std::map<std::vector<uint32_t>, int64_t> weights;
  for (const Sample& s : p.samples) weights[s.frames] = s.weights[0];
  EXPECT_EQ(weights, (std::map<std::vector<uint32_t>, int64_t>{
                         {{0}, 2000 + 3000},     // a alone: 10-12, 22-25
                         {{0, 1}, 3000 + 2000},  // a;b: 12-15, 20-22
                         {{0, 2}, 1000 + 1000},  // a;c: 15-16, 19-20
                         {{0, 2, 1}, 3000},      // a;c;b: 16-19
                         {{2}, 10000}}));        // c, left open: 30 to endValue
  ASSERT_FALSE(p.timeline.empty());
  EXPECT_EQ(p.timeline.front().time_ns, 0);
  EXPECT_EQ(p.timeline.back().time_ns, 20000);
  EXPECT_EQ(p.meta.duration_ns, 30000);
}

// Two event times within 2^63 ns whose distance is not: the weight saturates, as totals do,
// instead of wrapping to a negative weight (fuzz/corpus/speedscope/evented_span_overflow).
TEST(SpeedscopeReader, AnIntervalPast2To63NanosecondsSaturates) {
  const Profile p = Read(R"({"$schema": "https://www.speedscope.app/file-format-schema.json",
    "shared": {"frames": [{"name": "a"}]},
    "profiles": [{"type": "evented", "name": "t", "unit": "nanoseconds",
      "startValue": -9000000000000000000, "endValue": 9000000000000000000, "events": [
        {"type": "O", "frame": 0, "at": -9000000000000000000},
        {"type": "C", "frame": 0, "at": 9000000000000000000}]}]})");
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].weights[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(p.events.at(0).total_weight, std::numeric_limits<int64_t>::max());
  ASSERT_EQ(p.timeline.size(), 1u);
  EXPECT_EQ(p.timeline[0].weight, std::numeric_limits<int64_t>::max());
}

TEST(SpeedscopeReader, NonTimeUnitsHaveNoTimeline) {
  const Profile p = Read(R"({"$schema": "https://www.speedscope.app/file-format-schema.json",
    "shared": {"frames": [{"name": "malloc"}]},
    "profiles": [{"type": "sampled", "name": "heap", "unit": "bytes", "startValue": 0,
                  "endValue": 96, "samples": [[0], [0]], "weights": [64, 32]}]})");
  EXPECT_TRUE(p.timeline.empty());
  EXPECT_EQ(p.events[0].unit, "bytes");
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].weights[0], 96);
}

TEST(SpeedscopeReader, LooksLikeSpeedscopeSniffsTheSchema) {
  EXPECT_TRUE(LooksLikeSpeedscope(
      " \n{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\"}"));
  EXPECT_FALSE(LooksLikeSpeedscope("{\"format\":\"inprof-annotations\",\"version\":1}"));
  EXPECT_FALSE(LooksLikeSpeedscope("main;run 12\n"));
  EXPECT_FALSE(LooksLikeSpeedscope(""));
  EXPECT_FALSE(LooksLikeSpeedscope(std::string(5000, ' ') +
                                   "{\"$schema\":\"https://www.speedscope.app/x\"}"));
}

// ---- Refusals ----------------------------------------------------------------------------

constexpr const char* kHead =
    "{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n";

TEST(SpeedscopeReader, RefusalsNameTheLineAndWhatWasExpected) {
  EXPECT_EQ(ReadError("{\"shared\": {\"frames\": []}, \"profiles\": []}"),
            "bad.json:1: expected a top-level \"$schema\": "
            "\"https://www.speedscope.app/file-format-schema.json\"");
  EXPECT_EQ(
      ReadError("{\n\"$schema\": \"https://example.com/schema.json\"}"),
      "bad.json:2: expected \"$schema\": \"https://www.speedscope.app/file-format-schema.json\"");
  EXPECT_EQ(ReadError(std::string(kHead) + "\"profiles\": []}"),
            "bad.json:1: expected a top-level \"shared\" object with \"frames\"");
  EXPECT_EQ(
      ReadError(std::string(kHead) + "\"shared\": {\"frames\": [{\"name\": \"a\"}]},\n"
                                     "\"profiles\": [{\"type\": \"sampled\", \"name\": \"x\",\n"
                                     "\"unit\": \"none\", \"samples\": [[0], [0,\n1]], "
                                     "\"weights\": [1, 1]}]}"),
      "bad.json:5: expected a frame index below 1 (the number of frames in \"shared\")");
  EXPECT_EQ(
      ReadError(std::string(kHead) + "\"shared\": {\"frames\": [{\"name\": \"a\"}]},\n"
                                     "\"profiles\": [{\"type\": \"sampled\", \"unit\": \"none\",\n"
                                     "\"samples\": [[0]],\n\"weights\": [1, 2]}]}"),
      "bad.json:5: expected as many weights as samples (1 samples, 2 weights) (profile 1)");
  EXPECT_EQ(ReadError(std::string(kHead) + "\"shared\": {\"frames\": []},\n\"profiles\": [\n"
                                           "{\"type\": \"flame\", \"unit\": \"none\"}]}"),
            "bad.json:4: expected \"type\": \"sampled\" or \"evented\" (profile 1)");
  EXPECT_EQ(ReadError(std::string(kHead) + "\"shared\": {\"frames\": []},\n\"profiles\": [\n"
                                           "{\"type\": \"sampled\", \"unit\": \"furlongs\"}]}"),
            "bad.json:4: expected \"unit\": \"none\", \"nanoseconds\", \"microseconds\", "
            "\"milliseconds\", \"seconds\" or \"bytes\"");
  EXPECT_EQ(
      ReadError(std::string(kHead) + "\"shared\": {\"frames\": [{\"name\": \"a\"}]},\n"
                                     "\"profiles\": [{\"type\": \"sampled\", \"unit\": \"none\",\n"
                                     "\"samples\": [[0]], \"weights\": [\n-1]}]}"),
      "bad.json:5: expected a weight of at least 0");
  // Frames named before "shared" are checked once it is known, at the samples' line.
  EXPECT_EQ(
      ReadError(std::string(kHead) + "\"profiles\": [{\"type\": \"sampled\", \"unit\": \"none\",\n"
                                     "\"samples\": [[3]], \"weights\": [1]}],\n"
                                     "\"shared\": {\"frames\": [{\"name\": \"a\"}]}}"),
      "bad.json:3: expected frame indices below 1 (the number of frames in \"shared\") "
      "(profile 1)");
  EXPECT_EQ(ReadError(std::string(kHead) + "\"shared\": {\"frames\": [{\"file\": \"a.c\"}]}}"),
            "bad.json:2: expected a frame with a \"name\"");
  EXPECT_EQ(ReadError(std::string(kHead) + "\"inprof\": {\"version\": 2}}"),
            "bad.json:2: expected \"version\": 1 in \"inprof\" (this reader reads version 1)");
  EXPECT_EQ(ReadError("{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\"} x"),
            "bad.json:1: expected nothing after the top-level object");
  EXPECT_EQ(ReadError("[1, 2]"), "bad.json:1: expected an object ('{')");
}

TEST(SpeedscopeReader, EventedRefusalsNameTheEvent) {
  const std::string head = std::string(kHead) +
                           "\"shared\": {\"frames\": [{\"name\": \"a\"}, {\"name\": \"b\"}]},\n"
                           "\"profiles\": [{\"type\": \"evented\", \"name\": \"e\", \"unit\": "
                           "\"none\", \"startValue\": 0, \"endValue\": 9, \"events\": [\n";
  EXPECT_EQ(ReadError(head + "{\"type\": \"O\", \"frame\": 0, \"at\": 1},\n"
                             "{\"type\": \"C\", \"frame\": 1, \"at\": 2}]}]}"),
            "bad.json:5: expected \"C\" to close frame 0, the innermost open frame, not frame 1 "
            "(profile 1)");
  EXPECT_EQ(ReadError(head + "{\"type\": \"C\", \"frame\": 0, \"at\": 1}]}]}"),
            "bad.json:4: expected an open frame for this \"C\" event to close (profile 1)");
  EXPECT_EQ(ReadError(head + "{\"type\": \"O\", \"frame\": 0, \"at\": 5},\n"
                             "{\"type\": \"C\", \"frame\": 0, \"at\": 4}]}]}"),
            "bad.json:5: expected events in order of \"at\" (profile 1)");
  EXPECT_EQ(ReadError(head + "{\"type\": \"X\", \"frame\": 0, \"at\": 5}]}]}"),
            "bad.json:4: expected an event \"type\": \"O\" (open a frame) or \"C\" (close it)");
}

TEST(SpeedscopeReader, InprofFieldsAreChecked) {
  Profile p = TwoThreads();
  std::string text = Write(p);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_EQ(ReadError(replaced("\"times_ns\":[1000000,11000000,21000000]",
                               "\"times_ns\":[1000000,21000000,11000000]")),
            "bad.json:" + std::to_string(LineOf(text, "\"times_ns\"")) +
                ": expected \"times_ns\" in time order (profile 1)");
  EXPECT_NE(ReadError(replaced("\"labels\":[1,0,1]", "\"labels\":[1,0,3]"))
                .find("expected label set indices up to 2 (0: none) (profile 1)"),
            std::string::npos);
  EXPECT_NE(ReadError(replaced("\"weights\":[10000000,", "\"weights\":[10000001,"))
                .find("multiples of \"weight_scale\" (10000000)"),
            std::string::npos);
  EXPECT_NE(ReadError(replaced("\"kind\":\"inlined\"", "\"kind\":\"inline\""))
                .find("expected \"kind\": \"native\", \"inlined\" or \"synthetic\""),
            std::string::npos);
}

// ---- Bounds ------------------------------------------------------------------------------

std::string DeepEvented(int depth, bool toggles) {
  std::string s = std::string(kHead) +
                  "\"shared\": {\"frames\": [{\"name\": \"f\"}]},\n"
                  "\"profiles\": [{\"type\": \"evented\", \"name\": \"deep\", \"unit\": \"none\", "
                  "\"startValue\": 0, \"endValue\": 0, \"events\": [\n";
  int at = 0;
  for (int i = 0; i < depth; ++i) {
    // Each level open for one unit before the next opens: a distinct stack per level.
    s += "{\"type\":\"O\",\"frame\":0,\"at\":" + std::to_string(toggles ? at++ : 0) + "},\n";
  }
  for (int i = 0; i < depth; ++i) {
    s += std::string(i ? "," : "") +
         "{\"type\":\"C\",\"frame\":0,\"at\":" + std::to_string(at + 1) + "}";
  }
  return s + "]}]}";
}

TEST(SpeedscopeReader, DeepEventedNestingIsBoundedByTheInputSize) {
  // 1,000 levels: 500,000 frames spelled out, well inside the budget.
  const Profile p = Read(DeepEvented(1000, true));
  EXPECT_EQ(p.samples.size(), 1000u);
  EXPECT_EQ(p.samples.back().frames.size(), 1000u);
  // Nested without time in between: one sample, however deep.
  EXPECT_EQ(Read(DeepEvented(20000, false)).samples.size(), 1u);
  // 6,000 levels each with time: 18 million frames from 400 KB, refused.
  const std::string message = ReadError(DeepEvented(6000, true));
  EXPECT_NE(message.find("expected the stacks of evented profiles to hold at most 4 frames per "
                         "byte of input in all"),
            std::string::npos)
      << message;
}

TEST(SpeedscopeReader, DeepJsonNestingIsRefused) {
  std::string text = std::string(kHead) + "\"x\": ";
  for (int i = 0; i < 100000; ++i) text += '[';
  EXPECT_EQ(ReadError(text), "bad.json:2: expected at most 64 levels of nesting");
}

}  // namespace
}  // namespace inprof::test
