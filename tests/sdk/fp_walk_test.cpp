// Known-stack tests of the frame-pointer walker: a chain of noinline functions records its
// own return addresses, takes a context with getcontext(), and the walk must reproduce them.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
#include <pthread.h>
#include <ucontext.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "inprof/unwind.h"

namespace inprof {
namespace {

StackBounds CurrentStack() {
  pthread_attr_t attr;
  EXPECT_EQ(pthread_getattr_np(pthread_self(), &attr), 0);
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  return StackBounds{reinterpret_cast<uintptr_t>(addr), reinterpret_cast<uintptr_t>(addr) + size};
}

struct Captured {
  ucontext_t context;
  uintptr_t returns[3];  // return addresses of live_c, live_b, live_a (innermost first)
};

// The walk runs inside live_c, while the whole chain is still on the stack.
std::vector<uintptr_t> g_frames(64);
WalkResult g_result;
Captured g_cap;

extern "C" {
__attribute__((noinline)) void live_c(StackBounds bounds, uint32_t max_depth) {
  g_cap.returns[0] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  getcontext(&g_cap.context);
  g_result = FpWalk(&g_cap.context, bounds, nullptr, g_frames.data(), max_depth);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void live_b(StackBounds bounds, uint32_t max_depth) {
  g_cap.returns[1] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  live_c(bounds, max_depth);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void live_a(StackBounds bounds, uint32_t max_depth) {
  g_cap.returns[2] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  live_b(bounds, max_depth);
  asm volatile("" ::: "memory");
}
}

TEST(FpWalkTest, WalksALiveChainFromAContext) {
  live_a(CurrentStack(), 64);
  ASSERT_GE(g_result.depth, 4u);
  EXPECT_EQ(g_frames[0], ContextPc(&g_cap.context));
  EXPECT_EQ(g_frames[1], g_cap.returns[0]) << "return into live_b";
  EXPECT_EQ(g_frames[2], g_cap.returns[1]) << "return into live_a";
  EXPECT_EQ(g_frames[3], g_cap.returns[2]) << "return into the test body";
  EXPECT_NE(g_result.stop, WalkStop::kDepthLimit);
}

TEST(FpWalkTest, StopsAtTheDepthLimit) {
  live_a(CurrentStack(), 3);
  EXPECT_EQ(g_result.depth, 3u);
  EXPECT_EQ(g_result.stop, WalkStop::kDepthLimit);
  EXPECT_EQ(g_frames[2], g_cap.returns[1]);
}

TEST(FpWalkTest, TakesOnlyThePcWithoutStackBounds) {
  live_a(StackBounds{}, 64);
  EXPECT_EQ(g_result.depth, 1u);
  EXPECT_EQ(g_result.stop, WalkStop::kNoBounds);
}

TEST(FpWalkTest, RefusesFramePointersOutsideTheStack) {
  // A fake context whose frame pointer points outside the stack, at a misaligned address,
  // and at a frame that does not move towards the base: each must stop the walk, not crash.
  alignas(16) uintptr_t stack[64] = {};
  ucontext_t uc = {};
  const StackBounds bounds{reinterpret_cast<uintptr_t>(stack),
                           reinterpret_cast<uintptr_t>(stack + 64)};
#if defined(__x86_64__)
  uc.uc_mcontext.gregs[REG_RIP] = 0x1000;
  uc.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(stack));
  uc.uc_mcontext.gregs[REG_RBP] = 0x10;  // far outside
#else
  uc.uc_mcontext.pc = 0x1000;
  uc.uc_mcontext.sp = reinterpret_cast<uintptr_t>(stack);
  uc.uc_mcontext.regs[29] = 0x10;
#endif
  uintptr_t out[8];
  WalkResult r = FpWalk(&uc, bounds, nullptr, out, 8);
  EXPECT_EQ(r.depth, 1u);
  EXPECT_EQ(r.stop, WalkStop::kLeftStack);

  // A loop: frame 8 points back to itself.
  stack[8] = reinterpret_cast<uintptr_t>(&stack[8]);
  stack[9] = 0x2000;
#if defined(__x86_64__)
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(&stack[8]));
#else
  uc.uc_mcontext.regs[29] = reinterpret_cast<uintptr_t>(&stack[8]);
#endif
  r = FpWalk(&uc, bounds, nullptr, out, 8);
  EXPECT_EQ(r.depth, 2u);
  EXPECT_EQ(r.stop, WalkStop::kNotIncreasing);

#if defined(__x86_64__)
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(&stack[8]) + 3);
#else
  uc.uc_mcontext.regs[29] = reinterpret_cast<uintptr_t>(&stack[8]) + 3;
#endif
  r = FpWalk(&uc, bounds, nullptr, out, 8);
  EXPECT_EQ(r.stop, WalkStop::kMisaligned);
}

#if defined(__x86_64__)
std::vector<uintptr_t> ExecutableRanges() {
  std::vector<uintptr_t> flat;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* out = static_cast<std::vector<uintptr_t>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            out->push_back(info->dlpi_addr + ph.p_vaddr);
            out->push_back(info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
        }
        return 0;
      },
      &flat);
  std::vector<std::pair<uintptr_t, uintptr_t>> pairs;
  for (size_t i = 0; i < flat.size(); i += 2) pairs.emplace_back(flat[i], flat[i + 1]);
  std::sort(pairs.begin(), pairs.end());
  flat.clear();
  for (auto& p : pairs) {
    flat.push_back(p.first);
    flat.push_back(p.second);
  }
  return flat;
}

uintptr_t g_leaf_return = 0;
extern "C" {
__attribute__((noinline)) void frameless_leaf() {
  g_leaf_return = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
}
__attribute__((noinline)) void calls_leaf() {
  frameless_leaf();
  asm volatile("" ::: "memory");
}
}

TEST(FpWalkTest, RecoversTheCallerOfAFramelessLeaf) {
  calls_leaf();  // learn the return address that follows `call frameless_leaf`
  ASSERT_NE(g_leaf_return, 0u);
  std::vector<uintptr_t> flat = ExecutableRanges();
  CodeRanges code{reinterpret_cast<const uintptr_t(*)[2]>(flat.data()), flat.size() / 2};
  ASSERT_TRUE(code.Contains(g_leaf_return));

  // Interrupted inside frameless_leaf before it pushed anything: [sp] is its return
  // address, rbp still holds calls_leaf's caller's frame.
  alignas(16) uintptr_t stack[64] = {};
  stack[0] = g_leaf_return;
  stack[16] = 0;  // outer frame: end of chain
  stack[17] = 0x7777;
  ucontext_t uc = {};
  uc.uc_mcontext.gregs[REG_RIP] =
      static_cast<greg_t>(reinterpret_cast<uintptr_t>(&frameless_leaf) + 1);
  uc.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(stack));
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(&stack[16]));
  const StackBounds bounds{reinterpret_cast<uintptr_t>(stack),
                           reinterpret_cast<uintptr_t>(stack + 64)};
  uintptr_t out[8];
  WalkResult r = FpWalk(&uc, bounds, &code, out, 8);
  ASSERT_GE(r.depth, 3u);
  EXPECT_TRUE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], g_leaf_return);
  EXPECT_EQ(out[2], 0x7777u);

  // The same word at sp is not taken when the pc is far from the called function.
  uc.uc_mcontext.gregs[REG_RIP] = 0x1000;
  r = FpWalk(&uc, bounds, &code, out, 8);
  EXPECT_FALSE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], 0x7777u);
}
extern "C" __attribute__((noinline)) int calls_getpid_through_plt() {
  return getpid() + 1;  // `call getpid@plt`: libc is built without frame pointers
}

TEST(FpWalkTest, RecoversTheCallerOfALibraryLeafCalledThroughThePlt) {
  // Find the call instruction in our function and the return address after it.
  const auto* code_bytes = reinterpret_cast<const uint8_t*>(&calls_getpid_through_plt);
  uintptr_t return_address = 0;
  for (int i = 0; i < 64; ++i) {
    if (code_bytes[i] == 0xE8) {
      return_address = reinterpret_cast<uintptr_t>(code_bytes + i + 5);
      break;
    }
  }
  ASSERT_NE(return_address, 0u);
  ASSERT_EQ(calls_getpid_through_plt(), getpid() + 1);  // binds the PLT slot
  const uintptr_t getpid_address = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "getpid"));
  ASSERT_NE(getpid_address, 0u);
  std::vector<uintptr_t> flat = ExecutableRanges();
  CodeRanges code{reinterpret_cast<const uintptr_t(*)[2]>(flat.data()), flat.size() / 2};

  alignas(16) uintptr_t stack[64] = {};
  stack[0] = return_address;
  stack[16] = 0;
  stack[17] = 0x7777;
  ucontext_t uc = {};
  uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(getpid_address + 4);
  uc.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(stack));
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(&stack[16]));
  const StackBounds bounds{reinterpret_cast<uintptr_t>(stack),
                           reinterpret_cast<uintptr_t>(stack + 64)};
  uintptr_t out[8];
  WalkResult r = FpWalk(&uc, bounds, &code, out, 8);
  ASSERT_GE(r.depth, 2u);
  EXPECT_TRUE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], return_address);
}
#endif

}  // namespace
}  // namespace inprof
