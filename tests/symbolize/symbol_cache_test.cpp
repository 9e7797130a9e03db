// The per-user symbol cache: answers from it are byte-identical to answers from debug info;
// a corrupt, truncated or foreign file is never trusted and gets replaced; a directory that
// cannot be written costs nothing but the cache; concurrent writers never leave a torn file.
#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "elf_symbols.h"
#include "fixtures/known_frames.h"
#include "frames_text.h"
#include "inprof/annotation_json.h"
#include "inprof/symbolize.h"
#include "symbol_cache.h"
#include "test_support.h"
#include "test_util.h"

namespace inprof_test {
namespace {

using inprof::RawModule;
using inprof::Symbolizer;
using inprof::SymbolizerOptions;
using inprof::SymbolizerStats;

SymbolizerOptions WithCache(const std::string& dir) {
  SymbolizerOptions options;
  options.cache_dir = dir;
  return options;
}

std::vector<std::string> Answers(Symbolizer& symbolizer, const std::vector<uint64_t>& addresses) {
  std::vector<std::string> out;
  for (uint64_t a : addresses) out.push_back(FramesText(symbolizer.Symbolize(a)));
  return out;
}

std::string LibcBuildId() {
  Symbolizer symbolizer;
  for (const RawModule& m : symbolizer.RecordedModules()) {
    if (m.path.find("/libc.so.6") != std::string::npos) return m.build_id;
  }
  return {};
}

std::string CacheFile(const std::string& dir, const std::string& build_id) {
  return dir + "/" + build_id.substr(0, 2) + "/" + build_id.substr(2);
}

std::vector<uint8_t> Bytes(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

using inprof::test::ReadFile;

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

bool ValidCacheFile(const std::string& dir, const std::string& build_id) {
  inprof::internal::SymbolCacheFile file(dir, Bytes(build_id));
  file.Load();
  return file.loaded();
}

TEST(SymbolCache, WarmAnswersAreIdenticalToColdOnes) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/cache/inprof/symbols";  // created as needed
  std::vector<uint64_t> addresses = {known::DirectCall().pc - 1, known::InlineCall().inner.pc - 1,
                                     known::InlineCallTwoLevels().inner.pc - 1};
  for (uint64_t a : SpreadAddresses("libc.so.6", 300)) addresses.push_back(a);
  for (const auto& [begin, end] : MainProgram().exec_ranges) {
    for (uint64_t a = begin; a < end; a += std::max<uint64_t>((end - begin) / 50, 1)) {
      addresses.push_back(a);
    }
  }
  if (const uint64_t vdso = getauxval(AT_SYSINFO_EHDR); vdso != 0) {
    for (const auto& [begin, end] : ObjectContaining(vdso).exec_ranges) {
      for (uint64_t a = begin; a < end; a += 64) addresses.push_back(a);
    }
  }
  Symbolizer uncached;
  const std::vector<std::string> expected = Answers(uncached, addresses);

  SymbolizerStats cold_stats;
  {
    Symbolizer cold(WithCache(dir));
    EXPECT_EQ(Answers(cold, addresses), expected);
    cold_stats = cold.Stats();
    // The first address met in a function misses; others in it are answered from the
    // ranges made then.
    EXPECT_GT(cold_stats.cache_misses, 0u);
    EXPECT_EQ(cold_stats.cache_hits + cold_stats.cache_misses, cold_stats.addresses);
    EXPECT_GE(cold_stats.files, 2u);
  }  // saves

  const std::string libc = CacheFile(dir, LibcBuildId());
  struct stat st {};
  ASSERT_EQ(stat(libc.c_str(), &st), 0) << libc;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(libc.substr(0, libc.rfind('/')).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  Symbolizer warm(WithCache(dir));
  EXPECT_EQ(Answers(warm, addresses), expected);
  const SymbolizerStats stats = warm.Stats();
  EXPECT_EQ(stats.addresses, cold_stats.addresses);
  EXPECT_EQ(stats.cache_hits, stats.addresses);
  EXPECT_EQ(stats.cache_misses, 0u);
  EXPECT_EQ(stats.files, 0u) << "answered without opening any file with libdwfl";
  // Path remapping is applied after the cache, so it applies to cached answers too.
  SymbolizerOptions mapped = WithCache(dir);
  mapped.path_map = {{"/", "/mapped/"}};
  Symbolizer remapped(mapped);
  const auto& frames = remapped.Symbolize(addresses[0]);
  EXPECT_EQ(frames.front().file.rfind("/mapped/", 0), 0u) << frames.front().file;
  EXPECT_EQ(remapped.Stats().cache_hits, 1u);
}

// The extent of the function around `address` as libdw's own scope walk finds it
// (dwarf_getscopes, as eu-addr2line does): the ranges of the outermost DW_TAG_subprogram, or
// for code without one the ELF symbol's [value, value + size). Independent of the cache.
class FunctionExtents {
 public:
  FunctionExtents() {
    static const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo,
                                             nullptr, nullptr};
    dwfl_ = dwfl_begin(&callbacks);
    if (dwfl_ != nullptr) {
      dwfl_report_begin(dwfl_);
      dwfl_linux_proc_report(dwfl_, getpid());
      dwfl_report_end(dwfl_, nullptr, nullptr);
    }
  }
  ~FunctionExtents() { dwfl_end(dwfl_); }

  // Absolute [begin, end) ranges; `name` (for messages): the DIE's or symbol's name.
  std::vector<std::pair<uint64_t, uint64_t>> Of(uint64_t address, std::string* name) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    Dwfl_Module* module = dwfl_ != nullptr ? dwfl_addrmodule(dwfl_, address) : nullptr;
    if (module == nullptr) return out;
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* cu = dwfl_module_addrdie(module, address, &bias)) {
      // In inlined code dwarf_getscopes goes on with the inlined function's abstract
      // scopes; the concrete ones around the outermost inlined instance come from
      // dwarf_getscopes_die, as eu-addr2line gets them.
      Dwarf_Die* scopes = nullptr;
      int n = dwarf_getscopes(cu, address - bias, &scopes);
      int outermost_inlined = -1;
      for (int i = 0; i < n; ++i) {
        if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine) outermost_inlined = i;
      }
      if (outermost_inlined >= 0) {
        Dwarf_Die inlined = scopes[outermost_inlined];
        free(scopes);
        scopes = nullptr;
        n = dwarf_getscopes_die(&inlined, &scopes);
      }
      for (int i = 0; i < n; ++i) {
        if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram) continue;
        Dwarf_Attribute attr;
        const char* die_name =
            dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name, &attr));
        *name = die_name != nullptr ? die_name : "?";
        Dwarf_Addr base = 0, low = 0, high = 0;
        ptrdiff_t offset = 0;
        while ((offset = dwarf_ranges(&scopes[i], offset, &base, &low, &high)) > 0) {
          // A range at DWARF address 0 is a discarded COMDAT copy the linker left there
          // (GNU ld on arm64): no code, and not this function's.
          if (high > low && low != 0) out.emplace_back(low + bias, high + bias);
        }
        break;
      }
      free(scopes);
      if (!out.empty()) return out;
    }
    // The sized symbol holding it (not dwfl_module_addrinfo: on arm64 that answers with
    // the mapping symbol $x before the address, which has no size).
    const int count = dwfl_module_getsymtab(module);
    for (int i = 1; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      const char* symbol =
          dwfl_module_getsym_info(module, i, &sym, &value, nullptr, nullptr, nullptr);
      if (symbol == nullptr || inprof::internal::IsMappingSymbol(symbol) ||
          sym.st_shndx == SHN_UNDEF || address < value || address - value >= sym.st_size) {
        continue;
      }
      *name = symbol;
      out.emplace_back(value, value + sym.st_size);
      break;
    }
    return out;
  }

 private:
  Dwfl* dwfl_ = nullptr;
};

// What the cache is for: a later process samples other instructions of the same functions.
// One address per function resolved (and saved) by a first process; a second process then
// asks about every byte of those functions, and gets from the cache alone, without opening
// any file, exactly what debug info gives for each: functions with inlining in this test
// program and in libc, libc assembler routines whose DWARF has lines but no function, and
// code with no DWARF at all in a file that has it, both named by their ELF symbol.
// libc's debug info (libc6-dbg) is what these tests cache from; the emulated arm64 lane has
// none for its cross libc.
bool LibcHasLines(Symbolizer& symbolizer) {
  void* f = dlsym(RTLD_DEFAULT, "qsort_r");
  return f != nullptr && !symbolizer.Symbolize(reinterpret_cast<uint64_t>(f) + 3).front().file.empty();
}
constexpr const char* kNoLibcLines = "libc has no line info here (libc6-dbg not installed)";

TEST(SymbolCache, EveryAddressOfAFunctionMetOnceAnswersAsDebugInfoDoes) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  Symbolizer uncached;
  FunctionExtents extents;
  std::vector<uint64_t> seeds = {known::InlineCall().inner.pc - 1,
                                 known::InlineCallTwoLevels().inner.pc - 1};
  // More functions with inlining (at least two inlined levels at the chosen address) from
  // this program and libc, each function once.
  std::set<std::string> functions;
  for (uint64_t a : seeds) functions.insert(uncached.Symbolize(a).back().function);
  size_t from_program = 0;
  size_t from_libc = 0;
  std::vector<uint64_t> candidates;
  for (const auto& [begin, end] : MainProgram().exec_ranges) {
    for (uint64_t a = begin; a < end; a += std::max<uint64_t>((end - begin) / 400, 1)) {
      candidates.push_back(a);
    }
  }
  for (uint64_t a : SpreadAddresses("libc.so.6", 800)) candidates.push_back(a);
  bool symbol_only = false;  // one libc function named by its symbol alone (no CU covers it)
  for (uint64_t a : candidates) {
    const auto& frames = uncached.Symbolize(a);
    const bool libc = frames.back().module.find("/libc.so.6") != std::string::npos;
    if (libc && !symbol_only && frames.size() == 1 && frames[0].file.empty() &&
        frames[0].function.find("+0x") == std::string::npos &&
        functions.insert(frames[0].function).second) {
      seeds.push_back(a);
      symbol_only = true;
    }
    size_t& taken = libc ? from_libc : from_program;
    if (frames.size() < 3 || taken == 3) continue;
    std::string name;
    if (extents.Of(a, &name).empty()) continue;  // not in a function (a tombstone, above)
    if (!functions.insert(frames.back().function).second) continue;
    seeds.push_back(a);
    ++taken;
  }
  EXPECT_EQ(from_program, 3u);
  // Without libc's debug info its functions are still cached, by their ELF symbols (below).
  const bool libc_lines = LibcHasLines(uncached);
  if (libc_lines) {
    EXPECT_EQ(from_libc, 3u) << "libc6-dbg installed?";
  }
  EXPECT_TRUE(symbol_only) << "libgcc's soft-float routines (__addtf3, ...) in libc?";
  // qsort's and snprintf's workers, and assembler routines (named by their symbol when the
  // DWARF has no function for them: __memcmp_avx2_movbe, __strlen_avx2, ... as IFUNCs pick).
  for (const char* name : {"qsort_r", "memcmp", "strlen", "memcpy"}) {
    void* f = dlsym(RTLD_DEFAULT, name);
    if (f == nullptr) continue;
    // Without libc's symbol table (no libc6-dbg) an IFUNC's pick has no symbol: no extent.
    std::string ignored;
    const uint64_t a = reinterpret_cast<uint64_t>(f) + 3;
    if (libc_lines || !extents.Of(a, &ignored).empty()) seeds.push_back(a);
  }

  {
    Symbolizer cold(WithCache(dir));
    for (uint64_t a : seeds) {
      EXPECT_EQ(FramesText(cold.Symbolize(a)), FramesText(uncached.Symbolize(a)));
    }
    // One address per function, or none when a function's small CU was met before.
    EXPECT_GE(cold.Stats().cache_misses, seeds.size() / 2);
    EXPECT_EQ(cold.Stats().cache_hits + cold.Stats().cache_misses, seeds.size());
  }  // saves

  Symbolizer warm(WithCache(dir));
  size_t bytes = 0;
  for (uint64_t seed : seeds) {
    std::string name;
    const auto ranges = extents.Of(seed, &name);
    ASSERT_FALSE(ranges.empty()) << std::hex << seed;
    size_t differ = 0;
    size_t distinct_lines = 0;
    std::string previous;
    for (const auto& [begin, end] : ranges) {
      for (uint64_t a = begin; a < end; ++a, ++bytes) {
        const std::string expected = FramesText(uncached.Symbolize(a));
        const uint64_t misses = warm.Stats().cache_misses;
        const std::string got = FramesText(warm.Symbolize(a));
        if (warm.Stats().cache_misses != misses) {
          ADD_FAILURE() << name << " +0x" << std::hex << a - begin << " missed the cache:\n"
                        << expected;
        }
        if (got != expected && ++differ <= 3) {
          ADD_FAILURE() << name << " +0x" << std::hex << a - begin << ":\nexpected\n"
                        << expected << "got\n"
                        << got;
        }
        const std::string where = expected.substr(0, expected.find(" in "));
        distinct_lines += where != previous;
        previous = where;
      }
    }
    EXPECT_EQ(differ, 0u) << name;
    if (!uncached.Symbolize(seed).front().file.empty()) {
      EXPECT_GT(distinct_lines, 1u) << name << ": more than one answer in the function";
    }
  }
  const SymbolizerStats stats = warm.Stats();
  EXPECT_EQ(stats.addresses, bytes);
  EXPECT_EQ(stats.cache_misses, 0u) << "every byte of every function from the cache";
  EXPECT_EQ(stats.files, 0u);
}

// The executable sections of an ELF file whose name starts with ".plt" (.plt, .plt.got,
// .plt.sec), as file vaddr ranges.
std::vector<std::pair<uint64_t, uint64_t>> PltSections(const std::string& path) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const std::string data = ReadFile(path);
  if (data.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > data.size()) {
    return out;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), data.data() + eh.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  if (eh.e_shstrndx >= sections.size()) return out;
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  for (const Elf64_Shdr& sh : sections) {
    if (names.sh_offset + sh.sh_name >= data.size()) continue;
    const std::string name(data.c_str() + names.sh_offset + sh.sh_name);
    if (name.rfind(".plt", 0) == 0 && (sh.sh_flags & SHF_EXECINSTR) != 0 && sh.sh_size > 0) {
      out.emplace_back(sh.sh_addr, sh.sh_addr + sh.sh_size);
    }
  }
  return out;
}

// PLT stubs have no symbol and no DWARF: they are named `module+0xoffset`, a different name
// at every address. One miss in a PLT section keeps the whole section as one range marked
// so, and every address read back gets its own offset, exactly as an uncached lookup.
TEST(SymbolCache, EveryAddressOfAPltSectionAnswersAsAnUncachedLookup) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  Symbolizer uncached;
  struct Plt {
    std::string module;
    uint64_t begin, end;  // absolute
    uint64_t bias;
  };
  std::vector<Plt> plts;
  size_t libc = 0;
  size_t program = 0;
  for (const RawModule& m : uncached.RecordedModules()) {
    const bool is_libc = m.path.find("/libc.so.6") != std::string::npos;
    const bool is_program = m.kind == RawModule::Kind::kMainExecutable;
    if (!is_libc && !is_program) continue;
    for (const auto& [begin, end] : PltSections(is_program ? "/proc/self/exe" : m.path)) {
      plts.push_back(Plt{m.path, m.bias + begin, m.bias + end, m.bias});
      ++(is_libc ? libc : program);
    }
  }
  ASSERT_GT(libc, 0u) << "libc has no .plt section";
  ASSERT_GT(program, 0u) << "this program has no .plt section";

  {
    Symbolizer cold(WithCache(dir));
    for (const Plt& plt : plts) {
      const uint64_t seed = plt.begin + (plt.end - plt.begin) / 2;
      EXPECT_EQ(FramesText(cold.Symbolize(seed)), FramesText(uncached.Symbolize(seed)));
    }
    EXPECT_EQ(cold.Stats().cache_misses, plts.size()) << "one range per section";
  }  // saves

  Symbolizer warm(WithCache(dir));
  size_t bytes = 0;
  for (const Plt& plt : plts) {
    const std::string base = plt.module.substr(plt.module.rfind('/') + 1);
    size_t differ = 0;
    for (uint64_t a = plt.begin; a < plt.end; ++a, ++bytes) {
      const auto& expected_frames = uncached.Symbolize(a);
      char name[64];
      std::snprintf(name, sizeof name, "+0x%" PRIx64, a - plt.bias);
      ASSERT_EQ(expected_frames.size(), 1u);
      ASSERT_EQ(expected_frames[0].function, base + name) << "a PLT stub is named module+0x…";
      const std::string expected = FramesText(expected_frames);
      const std::string got = FramesText(warm.Symbolize(a));
      if (got != expected && ++differ <= 3) {
        ADD_FAILURE() << "expected\n" << expected << "got\n" << got;
      }
    }
    EXPECT_EQ(differ, 0u) << base << std::hex << " [0x" << plt.begin - plt.bias << ", 0x"
                          << plt.end - plt.bias << ")";
  }
  const SymbolizerStats stats = warm.Stats();
  EXPECT_EQ(stats.addresses, bytes);
  EXPECT_EQ(stats.cache_misses, 0u) << "every byte of every PLT section from the cache";
  EXPECT_EQ(stats.files, 0u);
}

// A small CU (a C file of libc) is kept whole when one of its functions is resolved: the
// next run of a sampled program meets its neighbours. libio's genops.c: _IO_default_xsputn
// (met by snprintf) and _IO_setb, _IO_no_init, _IO_init_internal (met by others).
TEST(SymbolCache, NeighboursInASmallCompileUnitAreCachedToo) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  std::vector<uint64_t> others;
  for (const char* name : {"_IO_setb", "_IO_no_init", "_IO_init", "_IO_switch_to_get_mode"}) {
    if (void* f = dlsym(RTLD_DEFAULT, name)) others.push_back(reinterpret_cast<uint64_t>(f) + 1);
  }
  void* seed = dlsym(RTLD_DEFAULT, "_IO_default_xsputn");
  if (seed == nullptr || others.empty()) GTEST_SKIP() << "no libio symbols in this libc";
  Symbolizer uncached;
  if (!LibcHasLines(uncached)) GTEST_SKIP() << kNoLibcLines;
  {
    Symbolizer cold(WithCache(dir));
    cold.Symbolize(reinterpret_cast<uint64_t>(seed) + 1);
    EXPECT_EQ(cold.Stats().cache_misses, 1u);
  }
  Symbolizer warm(WithCache(dir));
  EXPECT_EQ(Answers(warm, others), Answers(uncached, others));
  EXPECT_EQ(warm.Stats().cache_hits, others.size());
  EXPECT_EQ(warm.Stats().files, 0u);
}

// The cache file's own rules, below the Symbolizer: an address gets the answer of the range
// that holds it; what was there first stays; neighbours with one answer are one entry.
TEST(SymbolCacheFile, RangesMergeAndLookUp) {
  TempDir tmp;
  using inprof::internal::CachedFrame;
  using inprof::internal::SymbolCacheFile;
  const std::vector<uint8_t> id = {0xab, 0xcd, 0xef, 0x01};
  const std::vector<CachedFrame> a = {{"inner", "a.h", "/src", 3, 1, true},
                                      {"f(int)", "a.cc", "/src", 10, 2, false}};
  const std::vector<CachedFrame> b = {{"f(int)", "a.cc", "/src", 11, 0, false}};
  const std::vector<CachedFrame> c = {{"g", nullptr, nullptr, 0, 0, false}};
  const auto text = [](const SymbolCacheFile& file, uint64_t vaddr) {
    std::vector<CachedFrame> frames;
    if (!file.Find(vaddr, &frames)) return std::string("-");
    std::string out;
    for (const CachedFrame& f : frames) {
      out += std::string(f.function) + "@" + (f.file != nullptr ? f.file : "null") + ":" +
             std::to_string(f.line) + ";";
    }
    return out;
  };
  {
    SymbolCacheFile file(tmp.path(), id);
    file.Load();
    file.Add(0x1000, 0x1010, a, true);
    file.Add(0x1010, 0x1020, b, true);
    file.Add(0x1008, 0x1030, c, true);  // only [0x1020, 0x1030) is new
    file.Add(0x1030, 0x1031, c, true);  // joins the range before it
    EXPECT_EQ(text(file, 0x0fff), "-");
    EXPECT_EQ(text(file, 0x1000), "inner@a.h:3;f(int)@a.cc:10;");
    EXPECT_EQ(text(file, 0x100f), "inner@a.h:3;f(int)@a.cc:10;");
    EXPECT_EQ(text(file, 0x1010), "f(int)@a.cc:11;");
    EXPECT_EQ(text(file, 0x1020), "g@null:0;");
    EXPECT_EQ(file.Save(), SymbolCacheFile::SaveResult::kSaved);
  }
  SymbolCacheFile second(tmp.path(), id);
  second.Load();
  ASSERT_TRUE(second.loaded());
  EXPECT_EQ(text(second, 0x1000), "inner@a.h:3;f(int)@a.cc:10;");
  EXPECT_EQ(text(second, 0x101f), "f(int)@a.cc:11;");
  EXPECT_EQ(text(second, 0x1030), "g@null:0;");
  EXPECT_EQ(text(second, 0x1031), "-");
  second.Add(0x0ff0, 0x1000, b, true);
  second.Add(0x1040, 0x1050, a, true);
  EXPECT_EQ(second.Save(), SymbolCacheFile::SaveResult::kSaved);
  const std::string data = ReadFile(second.Path());
  uint64_t entries = 0;
  uint64_t frames = 0;
  std::memcpy(&entries, data.data() + 16, 8);
  std::memcpy(&frames, data.data() + 24, 8);
  EXPECT_EQ(entries, 5u) << "[ff0,1000) [1000,1010) [1010,1020) [1020,1031) [1040,1050)";
  EXPECT_EQ(frames, 4u) << "a's two frames written once, b's and c's one each";
  SymbolCacheFile third(tmp.path(), id);
  third.Load();
  EXPECT_EQ(text(third, 0x0ff0), "f(int)@a.cc:11;");
  EXPECT_EQ(text(third, 0x1031), "-");
  EXPECT_EQ(text(third, 0x104f), "inner@a.h:3;f(int)@a.cc:10;");
  EXPECT_EQ(text(third, 0x1050), "-");
}

enum class Damage {
  kEmpty,
  kHeaderOnly,
  kTruncated,
  kFlippedByte,
  kBadMagic,
  kOtherBuildId,
  kGarbage,
  kBadOffsetGoodChecksum,
  kOldVersion,
  kOverlappingRanges
};

class SymbolCacheDamage : public testing::TestWithParam<Damage> {};

TEST_P(SymbolCacheDamage, FileIsIgnoredAndReplaced) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  const std::vector<uint64_t> addresses = SpreadAddresses("libc.so.6", 40);
  Symbolizer uncached;
  const std::vector<std::string> expected = Answers(uncached, addresses);
  {
    Symbolizer first(WithCache(dir));
    Answers(first, addresses);
  }
  const std::string build_id = LibcBuildId();
  const std::string path = CacheFile(dir, build_id);
  ASSERT_TRUE(ValidCacheFile(dir, build_id));
  std::string data = ReadFile(path);
  ASSERT_GT(data.size(), 256u);
  switch (GetParam()) {
    case Damage::kEmpty:
      data.clear();
      break;
    case Damage::kHeaderOnly:
      data.resize(128);
      break;
    case Damage::kTruncated:
      data.resize(data.size() - 1);
      break;
    case Damage::kFlippedByte:
      data[data.size() / 2] ^= 0x20;
      break;
    case Damage::kBadMagic:
      data[0] ^= 1;
      break;
    case Damage::kOtherBuildId:
      data[60] ^= 1;
      break;  // inside the header's build-id
    case Damage::kGarbage:
      for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
      break;
    case Damage::kBadOffsetGoodChecksum: {
      // A frame's function string far outside the string table, with the checksum made to
      // match: only the bounds checks stand between this and a wild read.
      uint64_t entries = 0;
      std::memcpy(&entries, data.data() + 16, 8);
      const size_t frame = 128 + entries * 24;
      const uint32_t wild = 0x7ffffff0;
      std::memcpy(data.data() + frame, &wild, 4);
      const uint64_t sum = inprof::internal::SymbolCacheChecksum(
          reinterpret_cast<const unsigned char*>(data.data()) + 128, data.size() - 128);
      std::memcpy(data.data() + 40, &sum, 8);
      break;
    }
    case Damage::kOldVersion: {
      const uint32_t version = 1;  // one entry per address: not read, replaced
      std::memcpy(data.data() + 8, &version, 4);
      break;
    }
    case Damage::kOverlappingRanges: {
      // The second entry starts inside the first (checksum made to match): lookups would
      // be ambiguous.
      uint64_t entries = 0;
      std::memcpy(&entries, data.data() + 16, 8);
      ASSERT_GE(entries, 2u);
      uint64_t first_hi = 0;
      std::memcpy(&first_hi, data.data() + 128 + 8, 8);
      const uint64_t inside = first_hi - 1;
      std::memcpy(data.data() + 128 + 24, &inside, 8);
      const uint64_t sum = inprof::internal::SymbolCacheChecksum(
          reinterpret_cast<const unsigned char*>(data.data()) + 128, data.size() - 128);
      std::memcpy(data.data() + 40, &sum, 8);
      break;
    }
  }
  WriteFile(path, data);
  EXPECT_FALSE(ValidCacheFile(dir, build_id));

  {
    Symbolizer damaged(WithCache(dir));
    EXPECT_EQ(Answers(damaged, addresses), expected);
    EXPECT_EQ(damaged.Stats().cache_hits, 0u);
    EXPECT_EQ(damaged.Stats().files, 1u);
  }
  EXPECT_TRUE(ValidCacheFile(dir, build_id)) << "replaced by the next save";
  Symbolizer again(WithCache(dir));
  EXPECT_EQ(Answers(again, addresses), expected);
  EXPECT_EQ(again.Stats().cache_hits, again.Stats().addresses);
}

INSTANTIATE_TEST_SUITE_P(Kinds, SymbolCacheDamage,
                         testing::Values(Damage::kEmpty, Damage::kHeaderOnly, Damage::kTruncated,
                                         Damage::kFlippedByte, Damage::kBadMagic,
                                         Damage::kOtherBuildId, Damage::kGarbage,
                                         Damage::kBadOffsetGoodChecksum, Damage::kOldVersion,
                                         Damage::kOverlappingRanges));

TEST(SymbolCache, UnwritableDirectoryWorksWithoutCacheQuietly) {
  TempDir tmp;
  const std::string file = tmp.path() + "/not-a-directory";
  WriteFile(file, "x");
  const std::vector<uint64_t> addresses = SpreadAddresses("libc.so.6", 20);
  Symbolizer uncached;
  const std::vector<std::string> expected = Answers(uncached, addresses);
  testing::internal::CaptureStderr();
  {
    Symbolizer symbolizer(WithCache(file + "/symbols"));
    EXPECT_EQ(Answers(symbolizer, addresses), expected);
    symbolizer.SaveCache();
    symbolizer.SaveCache();
    EXPECT_TRUE(symbolizer.Warnings().empty());
    EXPECT_EQ(symbolizer.Stats().cache_misses, symbolizer.Stats().addresses);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(ReadFile(file), "x");
}

TEST(SymbolCache, ReadOnlyDirectoryStillAnswers) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes to read-only directories";
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  const std::vector<uint64_t> addresses = SpreadAddresses("libc.so.6", 20);
  std::vector<std::string> expected;
  {
    Symbolizer first(WithCache(dir));
    expected = Answers(first, addresses);
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_directory()) chmod(entry.path().c_str(), 0500);
  }
  chmod(dir.c_str(), 0500);
  const std::vector<uint64_t> more = SpreadAddresses("libc.so.6", 45);
  Symbolizer reader(WithCache(dir));
  EXPECT_EQ(Answers(reader, addresses), expected);
  EXPECT_EQ(reader.Stats().cache_hits, reader.Stats().addresses);
  Answers(reader, more);  // new answers that cannot be saved
  reader.SaveCache();
  EXPECT_TRUE(reader.Warnings().empty());
}

TEST(SymbolCache, ConcurrentWritersNeverLeaveATornFile) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  const std::string build_id = LibcBuildId();
  const std::string path = CacheFile(dir, build_id);
  const std::vector<uint64_t> all = SpreadAddresses("libc.so.6", 600);
  ASSERT_GE(all.size(), 600u);
  constexpr int kWriters = 6;
  constexpr int kRounds = 3;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int round = 0; round < kRounds; ++round) {
        Symbolizer symbolizer(WithCache(dir));
        for (size_t i = static_cast<size_t>(w * kRounds + round); i < all.size();
             i += kWriters * kRounds) {
          symbolizer.Symbolize(all[i]);
        }
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  // Meanwhile: once the file exists, every read of it must be a whole, valid file.
  int reads = 0;
  int invalid = 0;
  for (;;) {
    int running = 0;
    for (pid_t pid : children) running += waitpid(pid, nullptr, WNOHANG) == 0 ? 1 : 0;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
      ++reads;
      if (!ValidCacheFile(dir, build_id)) ++invalid;
    }
    if (running == 0) break;
  }
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  EXPECT_GT(reads, 0);
  EXPECT_EQ(invalid, 0) << "of " << reads << " reads";
  ASSERT_TRUE(ValidCacheFile(dir, build_id));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    EXPECT_TRUE(entry.is_directory() || entry.path() == path) << "left behind: " << entry.path();
  }
  // Whatever the last writer kept answers as debug info does.
  Symbolizer uncached;
  Symbolizer cached(WithCache(dir));
  EXPECT_EQ(Answers(cached, all), Answers(uncached, all));
  EXPECT_GE(cached.Stats().cache_hits, all.size() / (kWriters * kRounds));
}

#if defined(INPROF_SPLIT_DEBUG_NOBUILDID_FIXTURE_PATH) && defined(INPROF_SPLIT_DEBUG_FIXTURE_PATH)
TEST(SymbolCache, FilesWithoutBuildIdAreNotCached) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  LoadedCopy copy(tmp, INPROF_SPLIT_DEBUG_NOBUILDID_FIXTURE_PATH, "inprof_split_capture");
  ASSERT_NE(copy.address, 0u);
  {
    Symbolizer symbolizer(WithCache(dir));
    symbolizer.Symbolize(copy.address);
    EXPECT_EQ(symbolizer.Stats().cache_hits + symbolizer.Stats().cache_misses, 0u);
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// Answers made from symbols only are made again once the debug info is there (libc6-dbg
// installed after a first run), and replace the old ones.
TEST(SymbolCache, SymbolsOnlyAnswersAreRedoneWhenDebugInfoAppears) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/symbols";
  LoadedCopy copy(tmp, INPROF_SPLIT_DEBUG_FIXTURE_PATH, "inprof_split_capture");
  ASSERT_NE(copy.address, 0u);
  std::string build_id;
  {
    Symbolizer symbols_only(WithCache(dir));
    EXPECT_EQ(symbols_only.Symbolize(copy.address).front().line, 0u);
    for (const RawModule& m : symbols_only.RecordedModules()) {
      if (m.path == copy.path) build_id = m.build_id;
    }
  }
  ASSERT_FALSE(build_id.empty());
  ASSERT_TRUE(ValidCacheFile(dir, build_id));
  const std::string debug_dir = tmp.path() + "/debug";
  ASSERT_TRUE(CopyFile(
      std::string(INPROF_SPLIT_DEBUG_FIXTURE_PATH) + ".debug",
      debug_dir + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug"));
  SymbolizerOptions options = WithCache(dir);
  options.debug_dirs = {debug_dir};
  {
    Symbolizer with_debug(options);
    EXPECT_EQ(with_debug.Symbolize(copy.address).front().line, static_cast<uint32_t>(copy.line));
    EXPECT_EQ(with_debug.Stats().cache_hits, 0u);
  }
  Symbolizer warm(options);
  EXPECT_EQ(warm.Symbolize(copy.address).front().line, static_cast<uint32_t>(copy.line));
  EXPECT_EQ(warm.Stats().cache_hits, 1u);
}
#endif

TEST(SymbolCache, DefaultDirectoryFollowsTheEnvironment) {
  struct Saved {
    const char* name;
    std::string value;
    bool set;
  };
  std::vector<Saved> saved;
  for (const char* name : {"INPROF_SYMBOL_CACHE", "XDG_CACHE_HOME", "HOME"}) {
    const char* v = std::getenv(name);
    saved.push_back({name, v != nullptr ? v : "", v != nullptr});
    unsetenv(name);
  }
  EXPECT_EQ(inprof::DefaultSymbolCacheDir(), "");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(inprof::DefaultSymbolCacheDir(), "/home/u/.cache/inprof/symbols");
  setenv("XDG_CACHE_HOME", "relative", 1);  // ignored, as the XDG specification says
  EXPECT_EQ(inprof::DefaultSymbolCacheDir(), "/home/u/.cache/inprof/symbols");
  setenv("XDG_CACHE_HOME", "/var/cache/u", 1);
  EXPECT_EQ(inprof::DefaultSymbolCacheDir(), "/var/cache/u/inprof/symbols");
  setenv("INPROF_SYMBOL_CACHE", "/elsewhere", 1);
  EXPECT_EQ(inprof::DefaultSymbolCacheDir(), "/elsewhere");
  for (const char* off : {"off", "0"}) {
    setenv("INPROF_SYMBOL_CACHE", off, 1);
    EXPECT_EQ(inprof::DefaultSymbolCacheDir(), "");
  }
  for (const Saved& s : saved) {
    if (s.set) {
      setenv(s.name, s.value.c_str(), 1);
    } else {
      unsetenv(s.name);
    }
  }
}

// What the SDK copies from Stats() into the health block survives the annotation JSON.
TEST(SymbolCache, HealthCountsRoundTripThroughAnnotationJson) {
  inprof::Profile profile;
  profile.events.push_back({"cpu", "nanoseconds", 1, 99, 0});
  for (const uint64_t hits : {uint64_t{0}, uint64_t{977}}) {
    profile.health.symbol_cache_hits = hits;
    profile.health.symbol_cache_misses = hits / 2 + 23 * (hits != 0);
    std::ostringstream out;
    inprof::WriteAnnotationJson(inprof::BuildAnnotations(profile), out);
    EXPECT_EQ(out.str().find("symbol_cache_hits") != std::string::npos, hits != 0) << out.str();
    inprof::Annotations read;
    ASSERT_TRUE(inprof::ReadAnnotationJson(out.str(), "t.json", &read).ok());
    EXPECT_EQ(read.health.symbol_cache_hits, profile.health.symbol_cache_hits);
    EXPECT_EQ(read.health.symbol_cache_misses, profile.health.symbol_cache_misses);
  }
}

}  // namespace
}  // namespace inprof_test
