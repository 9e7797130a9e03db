// Known-answer tests of the public Symbolizer API on this test binary, libc and the vDSO.
#include <dlfcn.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/auxv.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "fixtures/known_frames.h"
#include "inprof/symbolize.h"
#include "test_util.h"

namespace inprof_test {
namespace {

using inprof::SymbolizedFrame;
using inprof::Symbolizer;
using inprof::SymbolizerOptions;

std::string KnownFramesFile() { return RealPath(known::SourceFile()); }

std::string DirectoryOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string Describe(const std::vector<SymbolizedFrame>& frames) {
  std::string out;
  for (const SymbolizedFrame& f : frames) {
    out += "  " + f.function + " at " + f.file + ":" + std::to_string(f.line) + ":" +
           std::to_string(f.column) + (f.inlined ? " (inlined)" : "") + " in " + f.module + "\n";
  }
  return out;
}

TEST(Symbolizer, ExactFileAndLineOfKnownCall) {
  const known::Capture capture = known::DirectCall();
  const uint64_t address = capture.pc - 1;  // inside the call instruction
  Symbolizer symbolizer;
  const auto& frames = symbolizer.Symbolize(address);
  ASSERT_EQ(frames.size(), 1u) << Describe(frames);
  const SymbolizedFrame& frame = frames[0];
  EXPECT_EQ(frame.function, "inprof_test::known::DirectCall()");
  ASSERT_FALSE(KnownFramesFile().empty());
  EXPECT_EQ(frame.file, KnownFramesFile());
  EXPECT_EQ(frame.line, static_cast<uint32_t>(capture.line));
  EXPECT_FALSE(frame.inlined);

  const LoaderObject object = ObjectContaining(address);
  ASSERT_TRUE(object.found);
  EXPECT_EQ(frame.module, RealPath("/proc/self/exe"));
  EXPECT_EQ(frame.module_offset, address - object.bias);
}

TEST(Symbolizer, InlineChainOfAlwaysInlineHelper) {
  const known::InlineCapture capture = known::InlineCall();
  Symbolizer symbolizer;
  const auto& frames = symbolizer.Symbolize(capture.inner.pc - 1);
  ASSERT_EQ(frames.size(), 2u) << Describe(frames);

  EXPECT_EQ(frames[0].function, "inprof_test::known::InlinedHelper()");
  EXPECT_EQ(frames[0].file, KnownFramesFile());
  EXPECT_EQ(frames[0].line, static_cast<uint32_t>(capture.inner.line));
  EXPECT_TRUE(frames[0].inlined);

  EXPECT_EQ(frames[1].function, "inprof_test::known::InlineCall()");
  EXPECT_EQ(frames[1].file, KnownFramesFile());
  EXPECT_EQ(frames[1].line, static_cast<uint32_t>(capture.outer_line));
  EXPECT_FALSE(frames[1].inlined);
  EXPECT_EQ(frames[0].module, frames[1].module);
  EXPECT_EQ(frames[0].module_offset, frames[1].module_offset);
}

TEST(Symbolizer, TwoLevelInlineChainIsInnermostFirst) {
  const known::InlineCapture capture = known::InlineCallTwoLevels();
  Symbolizer symbolizer;
  const auto& frames = symbolizer.Symbolize(capture.inner.pc - 1);
  ASSERT_EQ(frames.size(), 3u) << Describe(frames);
  EXPECT_EQ(frames[0].function, "inprof_test::known::InlinedHelper()");
  EXPECT_EQ(frames[0].line, static_cast<uint32_t>(capture.inner.line));
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(frames[1].function, "inprof_test::known::InlinedMiddle()");
  EXPECT_EQ(frames[1].line, static_cast<uint32_t>(capture.middle_line));
  EXPECT_TRUE(frames[1].inlined);
  EXPECT_EQ(frames[2].function, "inprof_test::known::InlineCallTwoLevels()");
  EXPECT_EQ(frames[2].line, static_cast<uint32_t>(capture.outer_line));
  EXPECT_FALSE(frames[2].inlined);
  for (const SymbolizedFrame& f : frames) EXPECT_EQ(f.file, KnownFramesFile());
}

TEST(Symbolizer, LibcFunctionHasNameAndLibcModule) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr) << dlerror();
  // libc's own qsort, not an interposer (sanitizers intercept qsort in the main program).
  void* qsort_address = dlsym(libc, "qsort");
  ASSERT_NE(qsort_address, nullptr);
  Dl_info info{};
  ASSERT_NE(dladdr(qsort_address, &info), 0);
  dlclose(libc);

  Symbolizer symbolizer;
  // A few bytes in: still qsort, and not an entry point shared with another symbol.
  const auto& frames = symbolizer.Symbolize(reinterpret_cast<uint64_t>(qsort_address) + 4);
  ASSERT_FALSE(frames.empty());
  // With libc6-dbg installed this comes from DWARF (qsort, or __qsort_r inlined into it);
  // without, from the ELF symbol table. Either way the outermost frame is qsort.
  EXPECT_NE(frames.back().function.find("qsort"), std::string::npos) << Describe(frames);
  EXPECT_FALSE(frames.back().inlined);
  for (const SymbolizedFrame& f : frames) EXPECT_EQ(f.module, RealPath(info.dli_fname));
}

TEST(Symbolizer, AddressInNoModuleIsUnknown) {
  Symbolizer symbolizer;
  for (uint64_t address : {uint64_t{0x10}, uint64_t{0}, ~uint64_t{0}}) {
    const auto& frames = symbolizer.Symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "[unknown]");
    EXPECT_TRUE(frames[0].file.empty());
    EXPECT_EQ(frames[0].line, 0u);
    EXPECT_TRUE(frames[0].module.empty());
    EXPECT_FALSE(frames[0].inlined);
  }
}

TEST(Symbolizer, VdsoFunctionsResolveToTheirSymbols) {
  const uint64_t ehdr_address = getauxval(AT_SYSINFO_EHDR);
  if (ehdr_address == 0) GTEST_SKIP() << "no vDSO in this process";
  // Ground truth straight from the vDSO's dynamic symbol table.
  ASSERT_NE(elf_version(EV_CURRENT), EV_NONE);
  const auto* ehdr = reinterpret_cast<const ElfW(Ehdr)*>(ehdr_address);
  const size_t image_size = ehdr->e_shoff + size_t{ehdr->e_shnum} * ehdr->e_shentsize;
  Elf* elf = elf_memory(reinterpret_cast<char*>(ehdr_address), image_size);
  ASSERT_NE(elf, nullptr);
  const LoaderObject vdso = ObjectContaining(ehdr_address);
  ASSERT_TRUE(vdso.found);

  std::vector<std::pair<std::string, uint64_t>> functions;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data != nullptr && i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size < 2) continue;
      functions.emplace_back(elf_strptr(elf, shdr.sh_link, sym.st_name), sym.st_value);
    }
  }
  elf_end(elf);
  ASSERT_FALSE(functions.empty());

  Symbolizer symbolizer;
  for (const auto& function : functions) {
    const std::string& name = function.first;
    const uint64_t value = function.second;
    const auto& frames = symbolizer.Symbolize(vdso.bias + value + 1);
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().module, "[vdso]");
    // Aliases (clock_gettime / __vdso_clock_gettime) share an address: either name.
    const std::string& got = frames.back().function;
    const bool alias = std::any_of(functions.begin(), functions.end(), [&](const auto& f) {
      return f.first == got && f.second == value;
    });
    EXPECT_TRUE(alias) << name << " resolved to " << got;
  }
}

TEST(Symbolizer, PathMapRewritesWholeComponentsLongestPrefixFirst) {
  const known::Capture capture = known::DirectCall();
  const std::string file = KnownFramesFile();
  const std::string dir = DirectoryOf(file);
  const std::string parent = DirectoryOf(dir);
  const std::string leaf = file.substr(dir.size());  // "/known_frames.cpp"
  ASSERT_FALSE(parent.empty());

  {
    SymbolizerOptions options;
    options.path_map = {{parent, "/short"}, {dir + "/", "/long/checkout"}};
    Symbolizer symbolizer(options);
    EXPECT_EQ(symbolizer.Symbolize(capture.pc - 1)[0].file, "/long/checkout" + leaf);
  }
  {
    SymbolizerOptions options;
    options.path_map = {{parent, "/short/"}};
    Symbolizer symbolizer(options);
    EXPECT_EQ(symbolizer.Symbolize(capture.pc - 1)[0].file, "/short" + file.substr(parent.size()));
  }
  {
    // "/a/fixture" must not match "/a/fixtures/...": only whole components.
    SymbolizerOptions options;
    options.path_map = {{dir.substr(0, dir.size() - 1), "/wrong"}};
    Symbolizer symbolizer(options);
    EXPECT_EQ(symbolizer.Symbolize(capture.pc - 1)[0].file, file);
  }
}

TEST(Symbolizer, CachedResultIsTheSameObject) {
  const known::Capture capture = known::DirectCall();
  Symbolizer symbolizer;
  const std::vector<SymbolizedFrame>& first = symbolizer.Symbolize(capture.pc - 1);
  const std::vector<SymbolizedFrame> copy = first;
  // Enough other entries to force the cache to rehash: addresses of this program's code.
  const LoaderObject main_program = MainProgram();
  ASSERT_TRUE(main_program.found);
  ASSERT_FALSE(main_program.exec_ranges.empty());
  const auto [begin, end] = main_program.exec_ranges.front();
  ASSERT_GT(end - begin, 5000u);
  for (uint64_t a = 0; a < 5000; ++a) symbolizer.Symbolize(begin + a);
  const std::vector<SymbolizedFrame>& second = symbolizer.Symbolize(capture.pc - 1);
  EXPECT_EQ(&first, &second);
  ASSERT_EQ(second.size(), copy.size());
  EXPECT_EQ(second[0].function, copy[0].function);
  EXPECT_EQ(second[0].line, copy[0].line);
}

TEST(Symbolizer, RefreshModulesIsIdempotent) {
  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  const auto ranges = symbolizer.ExecutableRanges();
  symbolizer.RefreshModules();
  symbolizer.RefreshModules();
  EXPECT_EQ(symbolizer.ExecutableRanges(), ranges);

  // Sorted, non-empty, non-overlapping: no module is listed twice.
  ASSERT_FALSE(ranges.empty());
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_LT(ranges[i].first, ranges[i].second);
    if (i > 0) {
      EXPECT_LE(ranges[i - 1].second, ranges[i].first);
    }
  }
  // Every executable segment the loader reports is there, this test's own code included.
  const uint64_t own_code = known::DirectCall().pc;
  const LoaderObject main_program = ObjectContaining(own_code);
  ASSERT_TRUE(main_program.found);
  for (const auto& range : main_program.exec_ranges) {
    EXPECT_NE(std::find(ranges.begin(), ranges.end(), range), ranges.end());
  }

  // Unchanged module lists cost one loader-counter probe.
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRounds = 2000;
  for (int i = 0; i < kRounds; ++i) symbolizer.RefreshModules();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      kRounds;
  RecordProperty("refresh_unchanged_us", std::to_string(us));
  EXPECT_LT(us, 20.0);
}

size_t OpenFileDescriptors() {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++count;
  }
  return count;
}

TEST(Symbolizer, DestructionClosesEveryFileItOpened) {
  const size_t before = OpenFileDescriptors();
  {
    Symbolizer symbolizer;
    symbolizer.Symbolize(known::DirectCall().pc - 1);
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(libc, nullptr);
    symbolizer.Symbolize(reinterpret_cast<uint64_t>(dlsym(libc, "qsort")) + 4);
    dlclose(libc);
    EXPECT_GT(OpenFileDescriptors(), before);  // modules are held open while in use
  }
  EXPECT_EQ(OpenFileDescriptors(), before);
}

#if defined(INPROF_SANITIZED_BUILD)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// JIT code (LuaJIT's traces, a JVM's, V8's) lives in anonymous memory no module covers, and
// a long-running program samples ever new addresses in it: their "[unknown]" answers must
// not pile up in the cache. Asked for 100k distinct addresses in a real anonymous mapping,
// the heap does not grow with them.
TEST(Symbolizer, AddressesInNoModuleCostNoMemory) {
  if (kSanitized) GTEST_SKIP() << "the sanitizer's allocator does not report mallinfo2";
  constexpr size_t kBytes = 1 << 20;
  void* arena = mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(arena, MAP_FAILED);
  const uint64_t base = reinterpret_cast<uint64_t>(arena);
  Symbolizer symbolizer;
  symbolizer.Symbolize(base);  // the module map and its first answer
  const size_t before = mallinfo2().uordblks;
  for (uint64_t a = 0; a < 100000; ++a) {
    const std::vector<SymbolizedFrame>& frames = symbolizer.Symbolize(base + a * 8);
    ASSERT_EQ(frames.size(), 1u);
    ASSERT_EQ(frames[0].function, "[unknown]");
    ASSERT_TRUE(frames[0].module.empty());
  }
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + (256 << 10)) << "heap in use grew from " << before << " to " << after;
  // Answers for code in modules are still cached (the same object each time).
  const known::Capture capture = known::DirectCall();
  const std::vector<SymbolizedFrame>& first = symbolizer.Symbolize(capture.pc - 1);
  symbolizer.Symbolize(base + 16);
  EXPECT_EQ(&first, &symbolizer.Symbolize(capture.pc - 1));
  EXPECT_EQ(first.back().function, "inprof_test::known::DirectCall()") << Describe(first);
  munmap(arena, kBytes);
}

}  // namespace
}  // namespace inprof_test
