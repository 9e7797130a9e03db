// The LuaJIT splicer on its own (the static part inprof_sdk_lua, no shared library): Lua
// stacks as LuaJIT's profiler dumps them become interned frames, and native samples of the
// VM's thread get the Lua stack that was running spliced in where the VM was.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "collector/stack_table.h"
#include "lua/lua_splicer.h"

namespace inprof::internal {
namespace {

// luaJIT_profile_dumpstack's format as the bridge asks for it: "name\x01location\n" per frame,
// root first.
constexpr char kDump[] =
    "main\x01/nonexistent/app/t.lua:3\n"
    "print\x01@0x55d0aa\n"  // a C function: not a Lua frame
    "work\x01/nonexistent/app/t.lua:12\n";

TEST(LuaSplicerTest, ParseInternsLuaFramesLeafFirst) {
  LuaSplicer splicer;
  const std::vector<uintptr_t> stack = [&] {
    auto s = splicer.Parse(kDump);
    return std::vector<uintptr_t>(s.begin(), s.end());
  }();
  ASSERT_EQ(stack.size(), 2u);  // the C function left out
  for (uintptr_t id : stack) EXPECT_TRUE(IsLuaFrameMarker(id));
  const Frame leaf = splicer.FrameOf(stack[0]);
  EXPECT_EQ(leaf.function, "work");
  EXPECT_EQ(leaf.file, "/nonexistent/app/t.lua");
  EXPECT_EQ(leaf.line, 12u);
  EXPECT_EQ(leaf.module, "[lua]");
  EXPECT_EQ(splicer.FrameOf(stack[1]).function, "main");
  EXPECT_EQ(splicer.FrameOf(stack[1]).line, 3u);

  // The same frame is one id, however often it is seen.
  auto again = splicer.Parse(kDump);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0], stack[0]);
  EXPECT_EQ(again[1], stack[1]);
}

TEST(LuaSplicerTest, NamelessFunctionsAndVmStatesGetReadableNames) {
  LuaSplicer splicer;
  auto stack = splicer.Parse(
      "/nonexistent/t.lua:0\x01/nonexistent/t.lua:1\n"
      "/nonexistent/t.lua:7\x01/nonexistent/t.lua:9\n");
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(splicer.FrameOf(stack[0]).function, "(anonymous L7)");
  EXPECT_EQ(splicer.FrameOf(stack[1]).function, "(main chunk)");
  const Frame gc = splicer.FrameOf(splicer.VmStateFrame('G'));
  EXPECT_EQ(gc.function, "[lua GC]");
  EXPECT_EQ(gc.kind, FrameKind::kSynthetic);
  // An id that was never handed out still resolves, to a frame that says what it is.
  EXPECT_EQ(splicer.FrameOf(kLuaFrameMarker | 999).function, "[lua]");
}

constexpr uintptr_t kVmLo = 0x100000, kVmHi = 0x200000;  // "the LuaJIT library"
constexpr uintptr_t kHostMain = 0x401000, kHostLoop = 0x401100, kNativeLeaf = 0x402000;
constexpr pid_t kVmTid = 4242;

std::vector<std::vector<uintptr_t>> SpliceAll(LuaSplicer& splicer, const CodeRanges* code) {
  std::vector<std::vector<uintptr_t>> out;
  splicer.SplicePending(code, [&](std::span<const uintptr_t> stack, const SampleMeta&) {
    out.emplace_back(stack.begin(), stack.end());
  });
  return out;
}

TEST(LuaSplicerTest, MixedModeSplicesTheLuaStackWhereTheVmWas) {
  LuaSplicer splicer;
  splicer.Attach(kVmTid, {{kVmLo, kVmHi}}, /*mixed=*/true, /*event=*/-1);
  EXPECT_TRUE(splicer.Splices(kVmTid));
  EXPECT_FALSE(splicer.Splices(kVmTid + 1));

  // A native function Lua called (leaf), the VM's interpreter frames, the host below.
  const uintptr_t in_vm[] = {kNativeLeaf, kVmLo + 0x10, kVmLo + 0x20, kHostLoop, kHostMain};
  SampleMeta meta;
  meta.weight = 1;
  meta.labels = 7;
  EXPECT_TRUE(splicer.Defer(in_vm, meta, nullptr));
  // Outside the VM: an ordinary native sample, not held back.
  const uintptr_t host_only[] = {kHostLoop, kHostMain};
  EXPECT_FALSE(splicer.Defer(host_only, meta, nullptr));
  EXPECT_TRUE(splicer.has_pending());

  auto lua = splicer.Parse(kDump);
  const std::vector<uintptr_t> lua_stack(lua.begin(), lua.end());
  splicer.SetLatest(lua_stack);
  const auto spliced = SpliceAll(splicer, nullptr);
  ASSERT_EQ(spliced.size(), 1u);
  const std::vector<uintptr_t> expected = {kNativeLeaf,    lua_stack[0],
                                           lua_stack[1],   kHostLoop,
                                           kHostMain,      kThreadMarker | kVmTid,
                                           kLabelsMarker | 7};
  EXPECT_EQ(spliced[0], expected);
  EXPECT_FALSE(splicer.has_pending());
  EXPECT_EQ(splicer.unspliced(), 0u);
}

TEST(LuaSplicerTest, SamplesBeforeTheFirstLuaStackLoseOnlyTheVmFrames) {
  LuaSplicer splicer;
  splicer.Attach(kVmTid, {{kVmLo, kVmHi}}, true, -1);
  const uintptr_t in_vm[] = {kVmLo + 0x10, kHostMain};
  ASSERT_TRUE(splicer.Defer(in_vm, SampleMeta{}, nullptr));
  const auto spliced = SpliceAll(splicer, nullptr);
  ASSERT_EQ(spliced.size(), 1u);
  EXPECT_EQ(spliced[0], (std::vector<uintptr_t>{kHostMain, kThreadMarker | kVmTid}));
  EXPECT_EQ(splicer.unspliced(), 1u);
}

TEST(LuaSplicerTest, CodeNoModuleHasIsLuaJitsCompiledCode) {
  LuaSplicer splicer;
  splicer.Attach(kVmTid, {{kVmLo, kVmHi}}, true, -1);
  // The modules the collector knows: the host's code only.
  const uintptr_t ranges[][2] = {{0x400000, 0x403000}};
  CodeRanges code;
  code.ranges = ranges;
  code.count = 1;
  const uintptr_t jit_code = 0x7f0000001000;  // in no module: a trace LuaJIT compiled
  const uintptr_t in_trace[] = {jit_code, kHostMain};
  EXPECT_TRUE(splicer.Defer(in_trace, SampleMeta{}, &code));
  const uintptr_t host_only[] = {kHostLoop, kHostMain};
  EXPECT_FALSE(splicer.Defer(host_only, SampleMeta{}, &code));
  // Without the code ranges an unknown address is not taken for compiled Lua.
  EXPECT_FALSE(splicer.Defer(in_trace, SampleMeta{}, nullptr));
}

}  // namespace
}  // namespace inprof::internal
