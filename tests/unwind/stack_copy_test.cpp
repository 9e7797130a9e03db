// CopyStack: what the handler copies, and what it refuses to read.
#include <signal.h>
#include <ucontext.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "inprof/unwind.h"

namespace inprof {
namespace {

// A context whose stack pointer is inside a buffer we own, filled with a known pattern.
struct FakeStack {
  std::vector<uint64_t> words = std::vector<uint64_t>(512);
  ucontext_t context{};
  FakeStack() {
    for (size_t i = 0; i < words.size(); ++i) words[i] = 0x1000 + i;
    getcontext(&context);
  }
  uintptr_t lo() const { return reinterpret_cast<uintptr_t>(words.data()); }
  uintptr_t hi() const { return lo() + words.size() * 8; }
  void SetSp(uintptr_t sp);
};

#if defined(__x86_64__)
void FakeStack::SetSp(uintptr_t sp) {
  context.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
}
#elif defined(__aarch64__)
void FakeStack::SetSp(uintptr_t sp) { context.uc_mcontext.sp = sp; }
#endif

TEST(StackCopyTest, CopiesFromSpToTheStackEnd) {
  FakeStack stack;
  stack.SetSp(stack.lo() + 100 * 8);
  std::vector<uint8_t> buffer(64 * 1024);
  StackCopy copy;
  const uint32_t n =
      CopyStack(&stack.context, {stack.lo(), stack.hi()}, buffer.data(), buffer.size(), &copy);
  EXPECT_EQ(n, 412u * 8);
  EXPECT_EQ(copy.bytes, n);
  EXPECT_EQ(copy.sp_base, stack.lo() + 800);
  EXPECT_EQ(copy.regs.sp, copy.sp_base);
  EXPECT_EQ(copy.stack_hi, stack.hi());
  EXPECT_FALSE(copy.window_full);
  EXPECT_FALSE(copy.sp_outside_bounds);
  EXPECT_EQ(std::memcmp(buffer.data(), &stack.words[100], n), 0);
}

TEST(StackCopyTest, StopsAtCapacityAndSaysSo) {
  FakeStack stack;
  stack.SetSp(stack.lo());
  std::vector<uint8_t> buffer(1001, 0xee);
  StackCopy copy;
  EXPECT_EQ(CopyStack(&stack.context, {stack.lo(), stack.hi()}, buffer.data(), 999, &copy), 992u);
  EXPECT_TRUE(copy.window_full);
  EXPECT_EQ(std::memcmp(buffer.data(), stack.words.data(), 992), 0);
  EXPECT_EQ(buffer[992], 0xee);  // rounded down to whole words: nothing written past them
}

TEST(StackCopyTest, SpOutsideBoundsCopiesOnlyRegisters) {
  FakeStack stack;
  stack.SetSp(stack.hi() + 64);
  std::vector<uint8_t> buffer(1024);
  StackCopy copy;
  EXPECT_EQ(CopyStack(&stack.context, {stack.lo(), stack.hi()}, buffer.data(), 1024, &copy), 0u);
  EXPECT_TRUE(copy.sp_outside_bounds);
  EXPECT_EQ(copy.bytes, 0u);
  EXPECT_EQ(copy.regs.sp, stack.hi() + 64);

  stack.SetSp(stack.lo());
  EXPECT_EQ(CopyStack(&stack.context, StackBounds{}, buffer.data(), 1024, &copy), 0u);
  EXPECT_TRUE(copy.sp_outside_bounds);
}

TEST(StackCopyTest, RegistersInDwarfOrder) {
  FakeStack stack;
  stack.SetSp(stack.lo());
  std::vector<uint8_t> buffer(64);
  StackCopy copy;
#if defined(__x86_64__)
  stack.context.uc_mcontext.gregs[REG_RIP] = 0x401000;
  stack.context.uc_mcontext.gregs[REG_RBP] = 0x6666;
  stack.context.uc_mcontext.gregs[REG_RDX] = 0x1111;
  CopyStack(&stack.context, {stack.lo(), stack.hi()}, buffer.data(), buffer.size(), &copy);
  EXPECT_EQ(copy.regs.count, 17u);
  EXPECT_EQ(copy.regs.regs[16], 0x401000u);
  EXPECT_EQ(copy.regs.regs[6], 0x6666u);
  EXPECT_EQ(copy.regs.regs[1], 0x1111u);
  EXPECT_EQ(copy.regs.regs[7], stack.lo());
#elif defined(__aarch64__)
  stack.context.uc_mcontext.pc = 0x401000;
  stack.context.uc_mcontext.regs[29] = 0x2929;
  stack.context.uc_mcontext.regs[30] = 0x3030;
  CopyStack(&stack.context, {stack.lo(), stack.hi()}, buffer.data(), buffer.size(), &copy);
  EXPECT_EQ(copy.regs.count, 33u);
  EXPECT_EQ(copy.regs.regs[32], 0x401000u);
  EXPECT_EQ(copy.regs.regs[29], 0x2929u);
  EXPECT_EQ(copy.regs.regs[30], 0x3030u);
  EXPECT_EQ(copy.regs.regs[31], stack.lo());
#endif
  EXPECT_EQ(copy.regs.pc, 0x401000u);
}

}  // namespace
}  // namespace inprof
