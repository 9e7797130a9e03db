// Every unwinder runs the same known-stack test on the same code built three ways: with frame
// pointers, without frame pointers, and without unwind tables (fixtures/matrix_fixture.cpp).
// Real timer signals sample the fixture's spinning leaf; each sample keeps both the handler's
// frame-pointer walk and a stack copy for DWARF. A sample is "complete" when its symbolized
// chain starts with exactly leaf, c, b, a, MatrixDriver: nothing skipped, nothing invented.
// The per-cell expectations below are the degradation docs/unwinding.md documents.
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures/matrix_fixture.h"
#include "inprof/dwarf_unwind.h"
#include "inprof/symbolize.h"
#include "sampler.h"

using Entry = unsigned (*)(const std::atomic<unsigned>*);

// The fixture's caller: built with the project's flags (frame pointers), so the frame above
// the fixture is known to every unwinder and a walk that skips the fixture shows.
extern "C" __attribute__((noinline)) unsigned MatrixDriver(Entry entry,
                                                           const std::atomic<unsigned>* n) {
  unsigned r = entry(n);
  asm volatile("" ::: "memory");
  return r;
}

namespace inprof {
namespace {

using testing::Sampler;

constexpr uint32_t kMaxFrames = 128;
constexpr size_t kStackBytes = 64 * 1024;
constexpr long kIntervalUs = 500;
constexpr unsigned kCalls = 200;  // one known sample per call

enum class Unwinder { kFp, kLibunwind, kLibdwfl, kAuto };
enum class Fixture { kFp, kNoFp, kNoUnwind };

// What a cell must show, over the known samples:
enum class Expect {
  kComplete,          // >= 95 % complete
  kDefeated,          // <= 5 % complete: the fixture defeats this unwinder (proves the fixture)
  kNoUnwindInfoStop,  // >= 95 % stop with kNoUnwindInfo, every frame before it right
  kAsGoodAsFp,        // at least as many complete as the fp walk on the same samples
};

struct Cell {
  Unwinder unwinder;
  Fixture fixture;
  Expect expect;
};

// The matrix (docs/unwinding.md). Without unwind tables, DWARF stops at the fixture's leaf
// with kNoUnwindInfo rather than let libunwind's or elfutils' frame-pointer fallback guess a
// chain that skips the frameless leaf's caller and claims the root; auto then keeps the fp
// walk, which gets the whole chain.
const Cell kCells[] = {
    {Unwinder::kFp, Fixture::kFp, Expect::kComplete},
    {Unwinder::kFp, Fixture::kNoFp, Expect::kDefeated},
    {Unwinder::kFp, Fixture::kNoUnwind, Expect::kComplete},
    {Unwinder::kLibunwind, Fixture::kFp, Expect::kComplete},
    {Unwinder::kLibunwind, Fixture::kNoFp, Expect::kComplete},
    {Unwinder::kLibunwind, Fixture::kNoUnwind, Expect::kNoUnwindInfoStop},
    {Unwinder::kLibdwfl, Fixture::kFp, Expect::kComplete},
    {Unwinder::kLibdwfl, Fixture::kNoFp, Expect::kComplete},
    {Unwinder::kLibdwfl, Fixture::kNoUnwind, Expect::kNoUnwindInfoStop},
    {Unwinder::kAuto, Fixture::kFp, Expect::kComplete},
    {Unwinder::kAuto, Fixture::kNoFp, Expect::kComplete},
    {Unwinder::kAuto, Fixture::kNoUnwind, Expect::kAsGoodAsFp},
};

const char* Name(Unwinder u) {
  switch (u) {
    case Unwinder::kFp:
      return "fp";
    case Unwinder::kLibunwind:
      return "libunwind";
    case Unwinder::kLibdwfl:
      return "libdwfl";
    case Unwinder::kAuto:
      return "auto";
  }
  return "?";
}

const char* Name(Fixture f) {
  switch (f) {
    case Fixture::kFp:
      return "fp";
    case Fixture::kNoFp:
      return "nofp";
    case Fixture::kNoUnwind:
      return "nounwind";
  }
  return "?";
}

struct Variant {
  Entry entry;
  std::vector<std::string> chain;  // leaf first, then MatrixDriver
};

Variant VariantOf(Fixture f) {
  switch (f) {
    case Fixture::kFp:
      return {mx_fp_a, {"mx_fp_leaf", "mx_fp_c", "mx_fp_b", "mx_fp_a", "MatrixDriver"}};
    case Fixture::kNoFp:
      return {mx_nofp_a, {"mx_nofp_leaf", "mx_nofp_c", "mx_nofp_b", "mx_nofp_a", "MatrixDriver"}};
    case Fixture::kNoUnwind:
      return {
          mx_nounwind_a,
          {"mx_nounwind_leaf", "mx_nounwind_c", "mx_nounwind_b", "mx_nounwind_a", "MatrixDriver"}};
  }
  return {};
}

// The runtime's auto rule (sdk/src/collector.cpp, Session::UnwindCopy): keep the DWARF chain
// when the handler got no fp chain, DWARF reached the root, or DWARF went at least as deep.
bool AutoKeepsDwarf(uint32_t fp_depth, UnwindResult dwarf) {
  return fp_depth == 0 || dwarf.stop == UnwindStop::kRoot || dwarf.depth >= fp_depth;
}

struct Chain {
  std::vector<uintptr_t> pcs;
  bool dwarf = false;
  UnwindStop stop = UnwindStop::kRoot;  // when dwarf
};

// The executable segments of the loaded modules, sorted: what the runtime gives FpWalk
// (sdk/src/collector.cpp, Session::RefreshCodeRanges) for its frameless-leaf recovery, which
// code built with frame pointers needs (GCC sets up no frame in leaves that need no stack).
const CodeRanges& LoadedCode() {
  using Ranges = std::vector<std::pair<uintptr_t, uintptr_t>>;
  // Executable segments, and readable ones (a PLT stub's GOT slot is read only there).
  static std::pair<Ranges, Ranges> ranges = [] {
    std::pair<Ranges, Ranges> out;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* out = static_cast<std::pair<Ranges, Ranges>*>(data);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
            if ((ph.p_flags & PF_X) != 0) out->first.emplace_back(lo, hi);
            if ((ph.p_flags & PF_R) != 0) out->second.emplace_back(lo, hi);
          }
          return 0;
        },
        &out);
    std::sort(out.first.begin(), out.first.end());
    std::sort(out.second.begin(), out.second.end());
    return out;
  }();
  static_assert(sizeof(ranges.first[0]) == sizeof(uintptr_t[2]));
  static const CodeRanges code{reinterpret_cast<const uintptr_t(*)[2]>(ranges.first.data()),
                               ranges.first.size(),
                               reinterpret_cast<const uintptr_t(*)[2]>(ranges.second.data()),
                               ranges.second.size()};
  return code;
}

// Symbolizes the innermost `max` frames (the known chain and one more are all that matter).
std::vector<std::string> Names(Symbolizer& symbolizer, const Chain& chain, size_t max = 6) {
  std::vector<std::string> names;
  for (size_t i = 0; i < chain.pcs.size() && i < max; ++i) {
    names.push_back(symbolizer.Symbolize(i == 0 ? chain.pcs[i] : chain.pcs[i] - 1).back().function);
  }
  return names;
}

std::string Describe(const std::vector<std::string>& names, const Chain& chain) {
  std::string out;
  for (const auto& name : names) out += "  " + name + "\n";
  if (chain.pcs.size() > names.size()) out += "  ...\n";
  return out + "  " +
         (chain.dwarf ? std::string("dwarf stop: ") + UnwindStopName(chain.stop)
                      : std::string("fp chain")) +
         "\n";
}

class UnwindMatrixTest : public ::testing::TestWithParam<Cell> {
 protected:
  Chain Unwind(const testing::CapturedStack& sample) {
    Chain fp;
    fp.pcs.assign(sample.fp_frames, sample.fp_frames + sample.fp.depth);
    if (GetParam().unwinder == Unwinder::kFp) return fp;
    Chain d;
    d.dwarf = true;
    d.pcs.resize(kMaxFrames);
    DwarfUnwinder& unwinder = GetParam().unwinder == Unwinder::kLibdwfl ? *libdwfl_ : *libunwind_;
    const UnwindResult r =
        unwinder.Unwind(sample.copy, sample.data.get(), d.pcs.data(), kMaxFrames);
    d.pcs.resize(r.depth);
    d.stop = r.stop;
    if (GetParam().unwinder != Unwinder::kAuto || AutoKeepsDwarf(sample.fp.depth, r)) return d;
    return fp;
  }

  void SetUp() override {
    auto libunwind = DwarfUnwinder::Create(DwarfBackend::kLibunwind);
    ASSERT_TRUE(libunwind.ok()) << libunwind.status().message();
    libunwind_ = std::move(*libunwind);
    auto libdwfl = DwarfUnwinder::Create(DwarfBackend::kLibdwfl);
    ASSERT_TRUE(libdwfl.ok()) << libdwfl.status().message();
    libdwfl_ = std::move(*libdwfl);
  }

  std::unique_ptr<DwarfUnwinder> libunwind_, libdwfl_;
  Symbolizer symbolizer_;
};

bool IsComplete(const std::vector<std::string>& names, const std::vector<std::string>& chain) {
  if (names.size() < chain.size()) return false;
  return std::equal(chain.begin(), chain.end(), names.begin());
}

// The frames a walk did produce are the expected chain's first frames.
bool IsRightPrefix(const std::vector<std::string>& names, const std::vector<std::string>& chain) {
  if (names.empty() || names.size() > chain.size()) return false;
  return std::equal(names.begin(), names.end(), chain.begin());
}

TEST_P(UnwindMatrixTest, KnownStack) {
  const Cell cell = GetParam();
  const Variant variant = VariantOf(cell.fixture);
  Sampler sampler(kCalls * 3 + 8, kStackBytes);
  sampler.SetCodeRanges(&LoadedCode());
  std::vector<unsigned> known;
  sampler.Start(kIntervalUs);
  for (unsigned i = 0; i < kCalls; ++i)
    known.push_back(MatrixDriver(variant.entry, &sampler.taken()));
  sampler.Stop();

  unsigned complete = 0, complete_fp = 0, no_info_right = 0;
  std::string example, incomplete;
  for (unsigned index : known) {
    ASSERT_LT(index, sampler.taken().load());
    const auto& sample = sampler.sample(index);
    const Chain chain = Unwind(sample);
    const auto names = Names(symbolizer_, chain);
    const bool ok = IsComplete(names, variant.chain);
    complete += ok;
    Chain fp;
    fp.pcs.assign(sample.fp_frames, sample.fp_frames + sample.fp.depth);
    complete_fp += IsComplete(Names(symbolizer_, fp), variant.chain);
    no_info_right += chain.dwarf && chain.stop == UnwindStop::kNoUnwindInfo &&
                     IsRightPrefix(names, variant.chain);
    const bool expected_ok = cell.expect == Expect::kDefeated ? !ok
                             : cell.expect == Expect::kNoUnwindInfoStop
                                 ? chain.dwarf && chain.stop == UnwindStop::kNoUnwindInfo
                                 : ok;
    if (!expected_ok && example.empty()) example = Describe(names, chain);
    if (!ok && incomplete.empty()) {
      for (const auto& name : names) incomplete += (incomplete.empty() ? "" : " <- ") + name;
      if (chain.dwarf) incomplete += std::string(" [") + UnwindStopName(chain.stop) + "]";
    }
  }
  const unsigned n = static_cast<unsigned>(known.size());
  std::printf("matrix %s x %s: %u of %u complete (%.1f %%), fp walk %u, no-unwind-info stops %u\n",
              Name(cell.unwinder), Name(cell.fixture), complete, n, 100.0 * complete / n,
              complete_fp, no_info_right);
  if (!incomplete.empty()) std::printf("  first incomplete: %s\n", incomplete.c_str());
  switch (cell.expect) {
    case Expect::kComplete:
      EXPECT_GE(complete, n * 95 / 100) << "e.g.\n" << example;
      break;
    case Expect::kDefeated:
      EXPECT_LE(complete, n * 5 / 100) << "e.g.\n" << example;
      break;
    case Expect::kNoUnwindInfoStop:
      EXPECT_GE(no_info_right, n * 95 / 100) << "e.g.\n" << example;
      break;
    case Expect::kAsGoodAsFp:
      EXPECT_GE(complete, complete_fp) << "e.g.\n" << example;
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, UnwindMatrixTest, ::testing::ValuesIn(kCells),
                         [](const auto& info) {
                           return std::string(Name(info.param.unwinder)) + "_x_" +
                                  Name(info.param.fixture);
                         });

}  // namespace
}  // namespace inprof
