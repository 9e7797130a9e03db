// Differential test: our frames against `eu-addr2line -i` (elfutils' own reference use of
// the same libdw data) on addresses spread over whole executable segments.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/known_frames.h"
#include "inprof/symbolize.h"
#include "elf_symbols.h"
#include "source_paths.h"
#include "test_util.h"

namespace inprof_test {
namespace {

using inprof::SymbolizedFrame;
using inprof::Symbolizer;

struct RefFrame {
  std::string function;
  std::string file;  // "" for ??
  uint32_t line = 0;
  uint32_t column = 0;
};

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// "func at /path/file.cc:12:7", "func at /path/file.cc:12", "func at ??:0".
RefFrame ParseFrame(const std::string& text) {
  RefFrame frame;
  const size_t at = text.rfind(" at ");
  if (at == std::string::npos) {
    frame.function = text;
    return frame;
  }
  frame.function = text.substr(0, at);
  std::string location = text.substr(at + 4);
  std::vector<std::string> numbers;
  for (int i = 0; i < 2; ++i) {
    const size_t colon = location.rfind(':');
    if (colon == std::string::npos || !AllDigits(location.substr(colon + 1))) break;
    numbers.insert(numbers.begin(), location.substr(colon + 1));
    location.resize(colon);
  }
  if (location == "??" || numbers.empty()) return frame;
  frame.file = location;
  frame.line = static_cast<uint32_t>(std::stoul(numbers[0]));
  if (numbers.size() > 1) frame.column = static_cast<uint32_t>(std::stoul(numbers[1]));
  return frame;
}

// Canonicalised the way the symbolizer documents it, so the comparison is about which
// file DWARF names, not about spelling.
std::string Canonical(const std::string& file) {
  if (file.empty()) return file;
  std::string real = RealPath(file);
  return real.empty() ? inprof::internal::LexicallyNormal(file) : real;
}

// Output of `eu-addr2line --pretty-print -a`: one "0xADDR: frame" line per address,
// followed by " (inlined by) frame" lines. Run in batches to keep command lines short.
std::vector<std::vector<RefFrame>> RunEuAddr2line(const std::string& module,
                                                  const std::vector<uint64_t>& offsets, bool* ok) {
  std::vector<std::vector<RefFrame>> results;
  *ok = true;
  constexpr size_t kBatch = 1000;
  for (size_t first = 0; first < offsets.size() && *ok; first += kBatch) {
    std::string command = "eu-addr2line -a -i -f -C -A --pretty-print -e '" + module + "'";
    for (size_t i = first; i < std::min(offsets.size(), first + kBatch); ++i) {
      char hex[32];
      std::snprintf(hex, sizeof hex, " 0x%" PRIx64, offsets[i]);
      command += hex;
    }
    command += " 2>/dev/null";
    // The exit status is 1 whenever some address has no DWARF; the output is what counts.
    const std::string output = RunCommand(command, ok);
    std::istringstream lines(output);
    std::string line;
    constexpr char kInlinedBy[] = " (inlined by) ";
    while (std::getline(lines, line)) {
      if (line.rfind(kInlinedBy, 0) == 0) {
        if (!results.empty()) {
          results.back().push_back(ParseFrame(line.substr(sizeof kInlinedBy - 1)));
        }
        continue;
      }
      const size_t colon = line.find(": ");
      if (line.rfind("0x", 0) != 0 || colon == std::string::npos) continue;
      results.push_back({ParseFrame(line.substr(colon + 2))});
    }
  }
  if (results.size() != offsets.size()) *ok = false;
  return results;
}

// Whether binutils addr2line has a line number for `offset` in `module` (it prints
// "FILE:LINE", with "?" or "0" for none).
bool BinutilsHasLine(const std::string& module, uint64_t offset) {
  char hex[32];
  std::snprintf(hex, sizeof hex, " 0x%" PRIx64, offset);
  bool ok = false;
  std::string output = RunCommand("addr2line -e '" + module + "'" + hex + " 2>/dev/null", &ok);
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  const size_t colon = output.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string line = output.substr(colon + 1, output.find(' ', colon) - colon - 1);
  return !line.empty() && line != "?" && line != "0";
}

std::string Show(const std::vector<SymbolizedFrame>& ours, const std::vector<RefFrame>& ref) {
  std::string out = "ours:\n";
  for (const auto& f : ours) {
    out += "  " + f.function + " at " + f.file + ":" + std::to_string(f.line) + ":" +
           std::to_string(f.column) + "\n";
  }
  out += "eu-addr2line:\n";
  for (const auto& f : ref) {
    out += "  " + f.function + " at " + f.file + ":" + std::to_string(f.line) + ":" +
           std::to_string(f.column) + "\n";
  }
  return out;
}

// ELF symbol names from the two sides may differ in a symbol version suffix only.
std::string WithoutVersion(std::string name) {
  const size_t at = name.find('@');
  if (at != std::string::npos && at != 0) name.resize(at);
  return name;
}

struct Tally {
  int compared = 0;
  int with_line = 0;
  int with_inlines = 0;
  int chain_at_row_start = 0;
  int symbol_only = 0;  // no DWARF: ELF symbol names compared
  int eu_tombstoned_rows = 0;  // a line from eu-addr2line only, binutils has none either
};

bool SameLocation(const SymbolizedFrame& ours, const RefFrame& ref) {
  if (ours.file != Canonical(ref.file)) return false;
  return ref.file.empty() || (ours.line == ref.line && ours.column == ref.column);
}

bool SameFrame(const SymbolizedFrame& ours, const RefFrame& ref, bool inlined) {
  return WithoutVersion(ours.function) == WithoutVersion(ref.function) && SameLocation(ours, ref) &&
         ours.inlined == inlined;
}

// Whether the chain's shape and frames 1.. (the callers of inlined code) agree.
bool SameCallers(const std::vector<SymbolizedFrame>& ours, const std::vector<RefFrame>& ref) {
  if (ours.size() != ref.size() || ours[0].inlined != (ref.size() > 1)) return false;
  for (size_t k = 1; k < ref.size(); ++k) {
    if (!SameFrame(ours[k], ref[k], k + 1 < ref.size())) return false;
  }
  return true;
}

// eu-addr2line 0.188 computes the "(inlined by)" part at the start address of the line
// table row (dwfl_lineinfo overwrites its address variable before the -i code runs), so
// where two inlined instances share a row its callers can be those of an address a few
// bytes earlier. When ours at the exact address differ, look for that row start: an
// earlier address with the same innermost location whose callers match.
bool CallersMatchAtRowStart(Symbolizer& symbolizer, uint64_t address,
                            const std::vector<RefFrame>& ref) {
  const SymbolizedFrame innermost = symbolizer.Symbolize(address)[0];
  for (uint64_t back = 1; back <= 64 && back <= address; ++back) {
    const std::vector<SymbolizedFrame>& earlier = symbolizer.Symbolize(address - back);
    if (earlier[0].file != innermost.file || earlier[0].line != innermost.line ||
        earlier[0].column != innermost.column) {
      return false;  // left the row
    }
    if (SameCallers(earlier, ref)) return true;
  }
  return false;
}

// Symbolizes `addresses` (absolute, all in the module loaded at `bias`) both ways.
Tally Compare(const std::string& module, uint64_t bias, const std::vector<uint64_t>& addresses) {
  std::vector<uint64_t> offsets;
  for (uint64_t a : addresses) offsets.push_back(a - bias);
  bool ok = false;
  const auto reference = RunEuAddr2line(module, offsets, &ok);
  Tally tally;
  EXPECT_TRUE(ok) << "eu-addr2line failed on " << module;
  if (!ok) return tally;

  Symbolizer symbolizer;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const std::vector<RefFrame>& ref = reference[i];
    if (ref[0].function == "??") continue;  // PLT stubs, padding: nothing to compare
    const std::vector<SymbolizedFrame> ours = symbolizer.Symbolize(addresses[i]);
    // eu-addr2line names an address after the arm64 mapping symbol before it ($x: code
    // starts, $d: data); those name no function: we answer with the sized symbol that holds
    // the address, or module+offset, never with the mapping symbol.
    if (ref[0].file.empty() && inprof::internal::IsMappingSymbol(ref[0].function.c_str())) {
      EXPECT_FALSE(inprof::internal::IsMappingSymbol(ours[0].function.c_str()))
          << ours[0].function;
      continue;
    }
    SCOPED_TRACE(testing::Message() << module << " +0x" << std::hex << offsets[i] << "\n"
                                    << Show(ours, ref));
    ++tally.compared;
    if (ours[0].file.empty() && !ref[0].file.empty() && !BinutilsHasLine(module, offsets[i])) {
      // eu-addr2line 0.188 also reads the line rows of sequences the linker tombstoned at
      // address 0 (functions in discarded COMDAT groups; GNU ld on arm64 leaves them
      // there): it answers even for 0x10, which is no code. binutils addr2line and
      // llvm-symbolizer-14 give no line there, and neither do we. Its function there may be
      // an arm64 mapping symbol, which names no function: then ours must not be one.
      if (inprof::internal::IsMappingSymbol(ref[0].function.c_str())) {
        EXPECT_FALSE(inprof::internal::IsMappingSymbol(ours[0].function.c_str()))
            << ours[0].function;
      } else {
        EXPECT_EQ(WithoutVersion(ours[0].function), WithoutVersion(ref[0].function));
      }
      ++tally.eu_tombstoned_rows;
      continue;
    }
    // The innermost frame is computed at the exact address by both.
    EXPECT_EQ(WithoutVersion(ours[0].function), WithoutVersion(ref[0].function));
    EXPECT_EQ(ours[0].file, Canonical(ref[0].file));
    if (!ref[0].file.empty()) {
      EXPECT_EQ(ours[0].line, ref[0].line);
      EXPECT_EQ(ours[0].column, ref[0].column);
    }
    if (!SameCallers(ours, ref)) {
      const bool row_start = CallersMatchAtRowStart(symbolizer, addresses[i], ref);
      EXPECT_TRUE(row_start) << "callers differ";
      if (row_start) ++tally.chain_at_row_start;
    }
    if (!ref[0].file.empty()) ++tally.with_line;
    if (ref[0].file.empty() && ref.size() == 1) ++tally.symbol_only;
    if (ref.size() > 1) ++tally.with_inlines;
  }
  return tally;
}

// Evenly spread over the executable segments, each jittered inside its slot.
std::vector<uint64_t> SpreadOver(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                                 int count, uint32_t seed) {
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.second - r.first;
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> addresses;
  if (total == 0) return addresses;
  const uint64_t slot = std::max<uint64_t>(1, total / count);
  for (int i = 0; i < count; ++i) {
    uint64_t offset = std::min<uint64_t>(total - 1, i * slot + rng() % slot);
    for (const auto& r : ranges) {
      if (offset < r.second - r.first) {
        addresses.push_back(r.first + offset);
        break;
      }
      offset -= r.second - r.first;
    }
  }
  return addresses;
}

// INPROF_SYMBOLIZE_DIFF_SCALE=N compares N times as many addresses (for local soak runs).
int Scaled(int count) {
  const char* scale = std::getenv("INPROF_SYMBOLIZE_DIFF_SCALE");
  const int factor = scale != nullptr ? std::atoi(scale) : 1;
  return count * std::max(1, factor);
}

// arm64 binaries are linked without -z separate-code: their executable segment also holds
// the dynamic symbol table, relocations, read-only data and unwind tables, and about two of
// three spread addresses land outside any function. Spread more to compare as many.
int PerCodeDensity(int count) {
#if defined(__aarch64__)
  return count * 3;
#else
  return count;
#endif
}

bool HaveEuAddr2line() { return std::system("command -v eu-addr2line >/dev/null 2>&1") == 0; }

TEST(SymbolizerDifferential, MatchesEuAddr2lineOnThisExecutable) {
  if (!HaveEuAddr2line()) GTEST_SKIP() << "eu-addr2line (elfutils) is not installed";
  const LoaderObject main_program = MainProgram();
  ASSERT_TRUE(main_program.found);
  std::vector<uint64_t> addresses =
      SpreadOver(main_program.exec_ranges, Scaled(PerCodeDensity(64)), 20240601);
  // Known inline chains, so chains are compared even if the spread misses them.
  addresses.push_back(known::InlineCall().inner.pc - 1);
  addresses.push_back(known::InlineCallTwoLevels().inner.pc - 1);
  addresses.push_back(known::DirectCall().pc - 1);

  // eu-addr2line 0.188 finds CUs only through .debug_aranges, which clang does not emit by
  // default; there is no reference to compare with for such a binary.
  const uint64_t known = known::DirectCall().pc - 1;
  bool ok = false;
  const auto probe = RunEuAddr2line(RealPath("/proc/self/exe"), {known - main_program.bias}, &ok);
  if (!ok || probe[0][0].file.empty()) {
    GTEST_SKIP() << "eu-addr2line has no line for a function built with -g "
                    "(no .debug_aranges in this binary?)";
  }
  const Tally tally = Compare(RealPath("/proc/self/exe"), main_program.bias, addresses);
  ::testing::Test::RecordProperty("compared", tally.compared);
  ::testing::Test::RecordProperty("chain_at_row_start", tally.chain_at_row_start);
  ::testing::Test::RecordProperty("symbol_only", tally.symbol_only);
  ::testing::Test::RecordProperty("eu_tombstoned_rows", tally.eu_tombstoned_rows);
  // The comparison must not be vacuous: most of this binary has DWARF, and eu-addr2line's
  // tombstoned rows are the exception.
  EXPECT_LE(tally.eu_tombstoned_rows * 10, tally.compared);
  EXPECT_GE(tally.compared, 40);
  EXPECT_GE(tally.with_line, 30);
  EXPECT_GE(tally.with_inlines, 2);
}

// Compares over the executable segments of the shared object that contains `symbol`.
void CompareLibraryContaining(const void* symbol, int count, uint32_t seed, int min_compared) {
  const LoaderObject object = ObjectContaining(reinterpret_cast<uint64_t>(symbol));
  ASSERT_TRUE(object.found);
  ASSERT_FALSE(object.name.empty());
  const std::vector<uint64_t> addresses =
      SpreadOver(object.exec_ranges, Scaled(PerCodeDensity(count)), seed);
  const Tally tally = Compare(RealPath(object.name), object.bias, addresses);
  ::testing::Test::RecordProperty("compared", tally.compared);
  ::testing::Test::RecordProperty("with_line", tally.with_line);
  ::testing::Test::RecordProperty("symbol_only", tally.symbol_only);
  ::testing::Test::RecordProperty("chain_at_row_start", tally.chain_at_row_start);
  ::testing::Test::RecordProperty("eu_tombstoned_rows", tally.eu_tombstoned_rows);
  EXPECT_GE(tally.compared, min_compared);
  EXPECT_LE(tally.eu_tombstoned_rows * 10, tally.compared);
}

// With or without libc6-dbg: DWARF chains or ELF symbols, the two must agree.
TEST(SymbolizerDifferential, MatchesEuAddr2lineOnLibc) {
  if (!HaveEuAddr2line()) GTEST_SKIP() << "eu-addr2line (elfutils) is not installed";
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  void* qsort_address = dlsym(libc, "qsort");
  dlclose(libc);
  CompareLibraryContaining(qsort_address, 48, 7, 30);
}

// Usually without debug info: a large C++ symbol table (aliases, clones, .cold parts)
// against dwfl_module_addrinfo's choices.
TEST(SymbolizerDifferential, MatchesEuAddr2lineOnLibstdcxx) {
  if (!HaveEuAddr2line()) GTEST_SKIP() << "eu-addr2line (elfutils) is not installed";
  void (*terminate)() noexcept = &std::terminate;
  CompareLibraryContaining(reinterpret_cast<const void*>(terminate), 48, 11, 30);
}

}  // namespace
}  // namespace inprof_test
