// The LuaJIT bridge as users run it: the inprof Lua module under the stock luajit
// interpreter, and the example host with mixed native + Lua stacks.
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"

#include "../exporters/perfanno_reader.h"
#include "test_util.h"

namespace inprof::test {
namespace {

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? buf : path;
}

// The line of `file` that contains `marker`.
uint64_t LineOf(const std::string& file, const std::string& marker) {
  std::ifstream in(file);
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  ADD_FAILURE() << marker << " not in " << file;
  return 0;
}

std::map<std::string, std::string> LuaEnv() {
  std::map<std::string, std::string> env = {{"LUA_CPATH", std::string(INPROF_LUA_MODULE_DIR) + "/?.so"}};
  // A sanitizer build's module needs the sanitizer runtime first in the process.
  if (!std::string(INPROF_PRELOAD_PREFIX).empty()) env["LD_PRELOAD"] = INPROF_PRELOAD_PREFIX;
  return env;
}

TEST(LuaModule, TwoFunctionsCostingThreeToOneShowOnTheirLines) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "the host's luajit cannot load an arm64 module";
  const std::string dir = MakeTempDir();
  const std::string script = Canonical(INPROF_LUA_FIXTURES "/three_to_one.lua");
  ProcessResult r = RunProcess(
      {INPROF_LUAJIT, script, dir + "/out.folded," + dir + "/perf.log," + dir + "/p.json", "3"},
      LuaEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // perf.log as perfanno reads it (every rule in docs/formats.md), frames on the script's real path.
  PerfannoLog log = ReadPerfannoLog(dir + "/perf.log");
  ASSERT_TRUE(log.ok()) << log.error;
  const uint64_t hot3 = LineOf(script, "HOT3-LINE"), hot1 = LineOf(script, "HOT1-LINE");
  uint64_t on3 = 0, on1 = 0, total = 0;
  for (const PerfannoStack& s : log.stacks) {
    ASSERT_FALSE(s.frames.empty());
    const PerfannoFrame& leaf = s.frames.back();
    EXPECT_EQ(leaf.path, script);
    total += s.count;
    if (leaf.line == hot3) {
      EXPECT_EQ(leaf.symbol, "hot3");
      on3 += s.count;
    }
    if (leaf.line == hot1) {
      EXPECT_EQ(leaf.symbol, "hot1");
      on1 += s.count;
    }
  }
  // Three seconds at 499 Hz (LuaJIT's 2 ms profiling timer, which the 250 Hz kernel tick
  // caps): about 750 samples.
  ASSERT_GT(on3 + on1, 300u);
  EXPECT_GE(on3 + on1, total * 9 / 10) << "the hot lines hold the time";
  const double n = static_cast<double>(on3 + on1);
  const double share3 = 100.0 * static_cast<double>(on3) / n;
  // ±5 points, unless the samples were too few for that to be more than chance: a share from
  // n samples has a standard error of sqrt(p(1-p)/n) (1.6 points at 750, 3 at 200, where a
  // ±5 bound failed one run in ten on a loaded machine), and 3.5 of them are allowed.
  const double tolerance = std::max(5.0, 3.5 * 100.0 * std::sqrt(0.75 * 0.25 / n));
  EXPECT_NEAR(share3, 75, tolerance) << on3 << " on line " << hot3 << ", " << on1 << " on line " << hot1;
  // Folded stacks and the JSON carry the same, with the VM state as the root frame.
  std::vector<FoldedStack> folded = ReadFolded(dir + "/out.folded");
  int64_t with_state = 0, all = 0;
  for (const FoldedStack& s : folded) {
    all += s.count;
    if (!s.frames.empty() && s.frames[0].rfind("[lua ", 0) == 0) with_state += s.count;
  }
  EXPECT_EQ(with_state, all);
  EXPECT_NE(ReadFile(dir + "/p.json").find("\"lua\""), std::string::npos) << "the lua event";
}

TEST(LuaModule, LabelsSetFromLuaSplitTheProfile) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "the host's luajit cannot load an arm64 module";
  const std::string dir = MakeTempDir();
  ProcessResult r = RunProcess(
      {INPROF_LUAJIT, Canonical(INPROF_LUA_FIXTURES "/labels.lua"), dir + "/p.json", "3"},
      LuaEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("bad key: false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("label key '9bad'"), std::string::npos) << r.out;
  Annotations a;
  const Status s = ReadAnnotationJson(ReadFile(dir + "/p.json"), "p.json", &a);
  ASSERT_TRUE(s.ok()) << s.message();
  int64_t big = 0, small = 0;
  for (const LabelTotal& t : a.labels) {
    if (t.key == "job" && t.value == "big") big = t.weight.at(0);
    if (t.key == "job" && t.value == "small") small = t.weight.at(0);
  }
  ASSERT_GT(big + small, 300);
  const double n = static_cast<double>(big + small);
  const double tolerance = std::max(5.0, 3.5 * 100.0 * std::sqrt(0.75 * 0.25 / n));
  EXPECT_NEAR(100.0 * static_cast<double>(big) / n, 75, tolerance) << big << " big, " << small;
}

TEST(LuaModule, BadOptionsAndUnwritablePathsAreLuaErrorsThatSayWhich) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "the host's luajit cannot load an arm64 module";
  ProcessResult r = RunProcess({INPROF_LUAJIT, INPROF_LUA_FIXTURES "/lua_errors.lua"}, LuaEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("bad option: inprof.start: inprof_lua_start: unknown configuration key 'freqency'"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bad value: inprof.start: inprof_lua_start: invalid frequency='fast'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad type: inprof.start: option 'output' must be"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad dump: inprof.dump: inprof_dump: cannot write /nonexistent-dir/x.folded"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("twice: inprof.start: inprof_lua_start: a LuaJIT VM is already profiled"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stop again: inprof.stop: inprof_lua_stop: this VM is not being profiled"), std::string::npos)
      << r.out;
}

TEST(LuaModule, DumpAfterStopWritesTheStoppedProfile) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "the host's luajit cannot load an arm64 module";
  const std::string dir = MakeTempDir();
  const std::string out = dir + "/out.folded";
  ProcessResult r =
      RunProcess({INPROF_LUAJIT, INPROF_LUA_FIXTURES "/stop_then_dump.lua", out}, LuaEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("before start: inprof.dump: inprof_dump: no profile is running"),
            std::string::npos)
      << r.out;
  uint64_t hot = 0, total = 0;
  for (const auto& s : ReadFolded(out)) {
    total += s.count;
    if (!s.frames.empty() && s.frames.back().find("stop_then_dump_hot") != std::string::npos) {
      hot += s.count;
    }
  }
  EXPECT_GT(total, 50u) << ReadFile(out);
  EXPECT_GT(hot * 10, total * 8) << "the hot function holds the time\n" << ReadFile(out);
}

// Mixed mode: samples inside host_crunch (called from Lua through the C API and through the
// FFI) carry the Lua functions that called it, between the host's frames and the native ones.
TEST(LuaHost, MixedStacksCarryTheCallingLuaFrames) {
  const std::string dir = MakeTempDir();
  const std::string outputs = dir + "/lua.folded," + dir + "/perf.log," + dir + "/lua.json," +
                              dir + "/lua.svg," + dir + "/lua.pb.gz";
  const std::string script = Canonical(INPROF_LUA_WORKLOAD);
  ProcessResult r = RunProcess({INPROF_LUA_HOST, script, "mixed=1,output=" + outputs},
                               {{"WORKLOAD_SECONDS", "3"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"lua.folded", "perf.log", "lua.json", "lua.svg", "lua.pb.gz"}) {
    EXPECT_TRUE(FileExists(dir + "/" + name)) << name;
  }
  int64_t in_crunch = 0, with_lua_caller = 0, capi = 0, ffi = 0, lua_only = 0;
  for (const FoldedStack& s : ReadFolded(dir + "/lua.folded")) {
    bool crunch = false, caller = false;
    size_t caller_at = 0, crunch_at = 0;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (s.frames[i] == "host_crunch") crunch = true, crunch_at = i;
      if (s.frames[i] == "checksum" || s.frames[i] == "ffi_checksum") caller = true, caller_at = i;
    }
    if (s.frames.size() >= 1 && s.frames.back() == "tokenize") lua_only += s.count;
    if (!crunch) continue;
    in_crunch += s.count;
    if (caller && caller_at < crunch_at) {
      with_lua_caller += s.count;
      (s.frames[caller_at] == "checksum" ? capi : ffi) += s.count;
    }
  }
  ASSERT_GT(in_crunch, 100) << "a third of 3 s in each of two native calls, at 99 Hz\n" << r.err;
  EXPECT_GE(with_lua_caller * 100, in_crunch * 90) << with_lua_caller << " of " << in_crunch;
  EXPECT_GT(capi, 0) << "through the C API";
  EXPECT_GT(ffi, 0) << "through the FFI";
  EXPECT_GT(lua_only, 0) << "pure Lua samples keep their Lua frames";
  // The perf.log mixes .lua and .c lines in one stack and still follows perfanno's rules.
  PerfannoLog log = ReadPerfannoLog(dir + "/perf.log");
  ASSERT_TRUE(log.ok()) << log.error;
  const uint64_t call_line = LineOf(script, "LUA-CAPI-CALL-LINE");
  bool mixed_stack = false;
  for (const PerfannoStack& s : log.stacks) {
    bool lua = false, c = false;
    for (const PerfannoFrame& f : s.frames) {
      // The Lua line is where the VM resumed after the call: the call's line, or the next
      // one when the result only goes into a local (docs/luajit.md).
      lua = lua || (f.path == script && (f.line == call_line || f.line == call_line + 1) &&
                    f.symbol == "checksum");
      c = c || (lua && f.symbol == "host_crunch");
    }
    mixed_stack = mixed_stack || c;
  }
  EXPECT_TRUE(mixed_stack) << "checksum " << script << ":" << call_line << " above host_crunch";
}

// The bridge's callback runs on the VM's thread and drains every ring there (mixed mode):
// samples taken while it works are the profiler's, and none of its frames may show in the
// program's profile. At 997 Hz the callback runs every millisecond: before they were left
// out, 2 to 5 of ~1,930 samples of a 2 s run were inside it.
TEST(LuaHost, TheRuntimesOwnFramesNeverShow) {
  const std::string dir = MakeTempDir();
  const std::string script = Canonical(INPROF_LUA_WORKLOAD);
  ProcessResult r =
      RunProcess({INPROF_LUA_HOST, script, "mixed=1,frequency=997,output=" + dir + "/lua.folded"},
                 {{"WORKLOAD_SECONDS", "3"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t total = 0;
  for (const FoldedStack& s : ReadFolded(dir + "/lua.folded")) {
    total += s.count;
    for (const std::string& f : s.frames) {
      EXPECT_TRUE(f.find("inprof::") == std::string::npos && f != "OnLuaSample")
          << f << " in a stack of " << s.count;
    }
  }
  EXPECT_GT(total, 1000) << "3 s at 997 Hz\n" << r.err;
}

}  // namespace
}  // namespace inprof::test
