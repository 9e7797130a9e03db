// Known-stack tests of the frame-pointer walker: a chain of noinline functions records its
// own return addresses, takes a context with getcontext(), and the walk must reproduce them.
#include <dlfcn.h>
#include <sys/mman.h>
#include <link.h>
#include <unistd.h>
#include <pthread.h>
#include <ucontext.h>

#include <csignal>
#include <cstdio>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
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

#if defined(__x86_64__)
// Every readable PT_LOAD segment, sorted: what the runtime lists as CodeRanges::readable.
std::vector<uintptr_t> ReadableRanges() {
  std::vector<std::pair<uintptr_t, uintptr_t>> pairs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* out = static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_R)) {
            out->emplace_back(info->dlpi_addr + ph.p_vaddr,
                              info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
        }
        return 0;
      },
      &pairs);
  std::sort(pairs.begin(), pairs.end());
  std::vector<uintptr_t> flat;
  for (auto& p : pairs) {
    flat.push_back(p.first);
    flat.push_back(p.second);
  }
  return flat;
}
#endif  // __x86_64__: only the x86-64 PLT test reads them

#if defined(__x86_64__)
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
  std::vector<uintptr_t> readable = ReadableRanges();
  CodeRanges code{reinterpret_cast<const uintptr_t(*)[2]>(flat.data()), flat.size() / 2,
                  reinterpret_cast<const uintptr_t(*)[2]>(readable.data()), readable.size() / 2};

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

// The PLT step reads a GOT slot whose address comes from code bytes (`jmp *rel32(%rip)`):
// bytes that only look like a stub can point anywhere. The slot is read only inside a
// readable segment the table lists; a slot on an unmapped page is never touched (before the
// check, this walk died of SIGSEGV).
TEST(FpWalkTest, ThePltStepReadsOnlyAGotSlotInsideAListedSegment) {
  const long page = sysconf(_SC_PAGESIZE);
  auto* mem = static_cast<uint8_t*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  ASSERT_EQ(munmap(mem + page, page), 0);  // the page after `mem` is unmapped
  const uintptr_t base = reinterpret_cast<uintptr_t>(mem);
  // base+0: `call base+32` (the candidate return address is base+5); base+8: the "function"
  // the pc is in; base+32: `jmp *slot(%rip)`, its slot at base+56 or on the unmapped page.
  auto put32 = [](uint8_t* at, int32_t v) { std::memcpy(at, &v, 4); };
  mem[0] = 0xE8;
  put32(mem + 1, 27);
  mem[32] = 0xFF;
  mem[33] = 0x25;
  const uintptr_t function = base + 8;
  std::memcpy(mem + 56, &function, sizeof function);
  const uintptr_t ranges[1][2] = {{base, base + 64}};

  alignas(16) uintptr_t stack[64] = {};
  stack[0] = base + 5;
  stack[16] = 0;
  stack[17] = 0x7777;
  ucontext_t uc = {};
  uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(function + 2);  // before the stub
  uc.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(stack));
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(&stack[16]));
  const StackBounds bounds{reinterpret_cast<uintptr_t>(stack),
                           reinterpret_cast<uintptr_t>(stack + 64)};
  uintptr_t out[8];

  // The slot inside a listed segment: read, and the leaf's caller is recovered through it.
  put32(mem + 34, 56 - 38);
  const CodeRanges listed{ranges, 1, ranges, 1};
  WalkResult r = FpWalk(&uc, bounds, &listed, out, 8);
  EXPECT_TRUE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], base + 5);
  // The same slot with no readable segment listed: not read (the stub itself, after the pc,
  // is then the call's target, so nothing is recovered).
  const CodeRanges unlisted{ranges, 1, nullptr, 0};
  r = FpWalk(&uc, bounds, &unlisted, out, 8);
  EXPECT_FALSE(r.recovered_leaf_caller);
  // A slot on the unmapped page, aligned, which only the listed ranges tell apart: not read.
  put32(mem + 34, static_cast<int32_t>(page - 38));
  r = FpWalk(&uc, bounds, &listed, out, 8);
  EXPECT_FALSE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], 0x7777u);
  munmap(mem, page);
}
#endif

#if defined(__aarch64__)
// The return address after the first `BL` in `function`, or 0.
uintptr_t ReturnAfterFirstBl(const void* function) {
  const auto* insn = reinterpret_cast<const uint32_t*>(function);
  for (int i = 0; i < 32; ++i) {
    if ((insn[i] & 0xFC000000u) == 0x94000000u) return reinterpret_cast<uintptr_t>(&insn[i + 1]);
  }
  return 0;
}

CodeRanges RangesOf(const std::vector<uintptr_t>& flat) {
  return CodeRanges{reinterpret_cast<const uintptr_t(*)[2]>(flat.data()), flat.size() / 2};
}

// A fake interrupted context on a local stack: x29 at an outer record [stack + 16] whose
// return address is 0x7777 and which ends the chain.
struct FakeStack {
  alignas(16) uintptr_t words[64] = {};
  ucontext_t uc = {};
  StackBounds bounds{reinterpret_cast<uintptr_t>(words), reinterpret_cast<uintptr_t>(words + 64)};
  FakeStack(uintptr_t pc, uintptr_t lr) {
    words[16] = 0;
    words[17] = 0x7777;
    uc.uc_mcontext.pc = pc;
    uc.uc_mcontext.sp = reinterpret_cast<uintptr_t>(words);
    uc.uc_mcontext.regs[29] = reinterpret_cast<uintptr_t>(&words[16]);
    uc.uc_mcontext.regs[30] = lr;
  }
};

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

TEST(FpWalkTest, RecoversTheCallerOfAFramelessLeafFromLr) {
  calls_leaf();  // learn the return address that follows `bl frameless_leaf`
  ASSERT_NE(g_leaf_return, 0u);
  const std::vector<uintptr_t> flat = ExecutableRanges();
  const CodeRanges code = RangesOf(flat);
  ASSERT_TRUE(code.Contains(g_leaf_return));

  // Interrupted inside frameless_leaf: lr is its return address, x29 still calls_leaf's
  // caller's record.
  FakeStack fake(reinterpret_cast<uintptr_t>(&frameless_leaf) + 4, g_leaf_return);
  uintptr_t out[8];
  WalkResult r = FpWalk(&fake.uc, fake.bounds, &code, out, 8);
  ASSERT_GE(r.depth, 3u);
  EXPECT_TRUE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], g_leaf_return);
  EXPECT_EQ(out[2], 0x7777u);

  // Not when the pc is far from the function the call entered.
  fake.uc.uc_mcontext.pc = 0x1000;
  r = FpWalk(&fake.uc, fake.bounds, &code, out, 8);
  EXPECT_FALSE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], 0x7777u);

  // Not when the newest record already holds lr (the function stored its frame record).
  fake.uc.uc_mcontext.pc = reinterpret_cast<uintptr_t>(&frameless_leaf) + 4;
  fake.words[17] = g_leaf_return;
  r = FpWalk(&fake.uc, fake.bounds, &code, out, 8);
  EXPECT_FALSE(r.recovered_leaf_caller);
  EXPECT_EQ(r.depth, 2u);
}

TEST(FpWalkTest, IgnoresAStaleLrLeftByTheInterruptedFunctionsOwnCall) {
  // calls_leaf, interrupted after its call returned: lr still points just past its own
  // `bl frameless_leaf`, and frameless_leaf starts shortly before the pc. Taking lr would
  // make calls_leaf its own caller.
  calls_leaf();
  const std::vector<uintptr_t> flat = ExecutableRanges();
  const CodeRanges code = RangesOf(flat);
  const uintptr_t pc = g_leaf_return + 4;
  const uintptr_t leaf = reinterpret_cast<uintptr_t>(&frameless_leaf);
  ASSERT_TRUE(leaf <= pc && pc - leaf < 4096) << "the test needs frameless_leaf right before";
  FakeStack fake(pc, g_leaf_return);
  uintptr_t out[8];
  WalkResult r = FpWalk(&fake.uc, fake.bounds, &code, out, 8);
  EXPECT_FALSE(r.recovered_leaf_caller);
  ASSERT_EQ(r.depth, 2u);
  EXPECT_EQ(out[1], 0x7777u);
}

extern "C" __attribute__((noinline)) int calls_getpid_through_plt() {
  return getpid() + 1;  // `bl getpid@plt`: a library leaf stores no frame record
}

TEST(FpWalkTest, RecoversTheCallerOfALibraryLeafCalledThroughThePlt) {
  const uintptr_t return_address =
      ReturnAfterFirstBl(reinterpret_cast<const void*>(&calls_getpid_through_plt));
  ASSERT_NE(return_address, 0u);
  ASSERT_EQ(calls_getpid_through_plt(), getpid() + 1);  // binds the PLT slot
  const uintptr_t getpid_address = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "getpid"));
  ASSERT_NE(getpid_address, 0u);
  const std::vector<uintptr_t> flat = ExecutableRanges();
  const CodeRanges code = RangesOf(flat);

  FakeStack fake(getpid_address + 4, return_address);
  uintptr_t out[8];
  WalkResult r = FpWalk(&fake.uc, fake.bounds, &code, out, 8);
  ASSERT_GE(r.depth, 3u);
  EXPECT_TRUE(r.recovered_leaf_caller);
  EXPECT_EQ(out[1], return_address);
  EXPECT_EQ(out[2], 0x7777u);
}

// Signs `address` with the A key and `modifier`, as `paciasp` signs a return address. A NOP
// (the address comes back unchanged) on cores without pointer authentication.
uintptr_t SignWithPac(uintptr_t address, uintptr_t modifier) {
  register uintptr_t x17 asm("x17") = address;
  register uintptr_t x16 asm("x16") = modifier;
  asm volatile("hint #8" : "+r"(x17) : "r"(x16));  // pacia1716
  return x17;
}

TEST(FpWalkTest, StripsPointerAuthenticationFromReturnAddresses) {
  alignas(16) uintptr_t stack[64] = {};
  const uintptr_t ret1 = reinterpret_cast<uintptr_t>(&calls_leaf) + 8;
  const uintptr_t ret2 = reinterpret_cast<uintptr_t>(&frameless_leaf) + 4;
  // Two records, return addresses signed with the stack pointer of their frame as
  // `paciasp` does.
  stack[8] = reinterpret_cast<uintptr_t>(&stack[20]);
  stack[9] = SignWithPac(ret1, reinterpret_cast<uintptr_t>(&stack[10]));
  stack[20] = 0;
  stack[21] = SignWithPac(ret2, reinterpret_cast<uintptr_t>(&stack[22]));
  if (stack[9] == ret1) {
    std::printf("this core has no pointer authentication: signatures are no-ops\n");
  } else {
    std::printf("signed %#lx as %#lx\n", static_cast<unsigned long>(ret1),
                static_cast<unsigned long>(stack[9]));
  }
  ucontext_t uc = {};
  uc.uc_mcontext.pc = 0x1000;
  uc.uc_mcontext.sp = reinterpret_cast<uintptr_t>(stack);
  uc.uc_mcontext.regs[29] = reinterpret_cast<uintptr_t>(&stack[8]);
  const StackBounds bounds{reinterpret_cast<uintptr_t>(stack),
                           reinterpret_cast<uintptr_t>(stack + 64)};
  uintptr_t out[8];
  const WalkResult r = FpWalk(&uc, bounds, nullptr, out, 8);
  ASSERT_EQ(r.depth, 3u);
  EXPECT_EQ(out[1], ret1);
  EXPECT_EQ(out[2], ret2);
  EXPECT_EQ(r.stop, WalkStop::kRoot);
}

// An application's own signal handler, interrupted by a profiling signal: the walk must go
// through the kernel's signal frame back to the code the application's signal interrupted.
struct SignalCapture {
  ucontext_t interrupted;   // what the kernel saved when SIGUSR1 arrived
  uintptr_t trampoline;     // the handler's return address: the sigreturn trampoline
  uintptr_t victim_return;  // return address of victim() into the test body
  StackBounds bounds;
  uintptr_t frames[64];
  WalkResult result;
};
SignalCapture g_sig;

extern "C" {
__attribute__((noinline)) void app_handler(int, siginfo_t*, void* context) {
  g_sig.trampoline = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  g_sig.interrupted = *static_cast<ucontext_t*>(context);
  ucontext_t here;
  getcontext(&here);
  g_sig.result = FpWalk(&here, g_sig.bounds, nullptr, g_sig.frames, 64);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void victim() {
  g_sig.victim_return = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  raise(SIGUSR1);
  asm volatile("" ::: "memory");
}
}

TEST(FpWalkTest, WalksThroughASignalFrameToTheInterruptedCode) {
  struct sigaction sa = {}, old = {};
  sa.sa_sigaction = app_handler;
  sa.sa_flags = SA_SIGINFO;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  g_sig.bounds = CurrentStack();
  victim();
  sigaction(SIGUSR1, &old, nullptr);

  const WalkResult& r = g_sig.result;
  const uintptr_t* f = g_sig.frames;
  const auto end = f + r.depth;
  const auto tramp = std::find(f, end, g_sig.trampoline);
  ASSERT_NE(tramp, end) << "the sigreturn trampoline is missing from the walk";
  ASSERT_LT(tramp + 1, end);
  // Right after the trampoline: the interrupted instruction (+1, so that the usual
  // return-address adjustment lands on it), not the interrupted x30.
  EXPECT_EQ(tramp[1], static_cast<uintptr_t>(g_sig.interrupted.uc_mcontext.pc) + 1);
  // And the chain goes on through the interrupted code's callers to the test body.
  EXPECT_NE(std::find(tramp + 1, end, g_sig.victim_return), end)
      << "the return into the test body is missing after the signal frame";
}
#endif

}  // namespace
}  // namespace inprof
