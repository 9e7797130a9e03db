// dlopen'ed libraries: resolution, fallbacks without debug info, survival across dlclose,
// separate debug files.
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "inprof/symbolize.h"
#include "module_map.h"
#include "test_util.h"

namespace inprof_test {
namespace {

using inprof::SymbolizedFrame;
using inprof::Symbolizer;

using CaptureFn = uintptr_t (*)(int*);
using SourceFileFn = const char* (*)();
using AddressFn = uintptr_t (*)();

bool InRanges(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t address) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const auto& r) { return address >= r.first && address < r.second; });
}

uint64_t LoadBias(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return 0;
  return map->l_addr;
}

TEST(SymbolizerDlopen, ResolvesLibraryAndKeepsItAfterDlclose) {
  const std::string library = INPROF_DL_FIXTURE_PATH;
  // A relative name, as programs often pass it: the loader reports it verbatim.
  const std::string relative = RelativeToCwd(library);
  void* handle = dlopen(relative.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture_first = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
  auto capture_second = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_second"));
  auto source_file = reinterpret_cast<SourceFileFn>(dlsym(handle, "inprof_fixture_source_file"));
  ASSERT_TRUE(capture_first && capture_second && source_file);
  int first_line = 0;
  int second_line = 0;
  const uint64_t first = capture_first(&first_line) - 1;
  const uint64_t second = capture_second(&second_line) - 1;
  const std::string source = RealPath(source_file());
  const uint64_t bias = LoadBias(handle);
  ASSERT_FALSE(source.empty());

  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  EXPECT_TRUE(InRanges(symbolizer.ExecutableRanges(), first));
  {
    const auto& frames = symbolizer.Symbolize(first);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "fixture_lib::CaptureFirst(int*)");
    EXPECT_EQ(frames[0].file, source);
    EXPECT_EQ(frames[0].line, static_cast<uint32_t>(first_line));
    EXPECT_EQ(frames[0].module, RealPath(library));
    EXPECT_EQ(frames[0].module_offset, first - bias);
  }

  ASSERT_EQ(dlclose(handle), 0);
  void* still_there = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (still_there != nullptr) {
    dlclose(still_there);
    GTEST_SKIP() << "the loader kept the fixture mapped after dlclose";
  }
  symbolizer.RefreshModules();
  EXPECT_FALSE(InRanges(symbolizer.ExecutableRanges(), first));

  // Never looked up while the library was loaded: resolved from the kept module.
  const auto& frames = symbolizer.Symbolize(second);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture_lib::CaptureSecond(int*)");
  EXPECT_EQ(frames[0].file, source);
  EXPECT_EQ(frames[0].line, static_cast<uint32_t>(second_line));
  EXPECT_EQ(frames[0].module, RealPath(library));
  EXPECT_EQ(frames[0].module_offset, second - bias);
}

TEST(SymbolizerDlopen, FirstLookupAfterDlcloseStillResolves) {
  void* handle = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_second"));
  ASSERT_NE(capture, nullptr);
  int line = 0;
  const uint64_t address = capture(&line) - 1;
  Symbolizer symbolizer;
  symbolizer.RefreshModules();  // sees the library; reads nothing of it yet
  ASSERT_EQ(dlclose(handle), 0);
  void* still_there = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (still_there != nullptr) {
    dlclose(still_there);
    GTEST_SKIP() << "the loader kept the fixture mapped after dlclose";
  }
  symbolizer.RefreshModules();
  const auto& frames = symbolizer.Symbolize(address);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture_lib::CaptureSecond(int*)");
  EXPECT_EQ(frames[0].line, static_cast<uint32_t>(line));
  EXPECT_EQ(frames[0].module, RealPath(INPROF_DL_FIXTURE_PATH));
}

// The address span a loaded library's segments take, page-aligned.
std::pair<uint64_t, uint64_t> LoadedSpan(void* handle) {
  struct Search {
    uint64_t bias = 0;
    uint64_t begin = UINT64_MAX;
    uint64_t end = 0;
  } search;
  search.bias = LoadBias(handle);
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_addr != s->bias) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          s->begin = std::min<uint64_t>(s->begin, info->dlpi_addr + ph.p_vaddr);
          s->end = std::max<uint64_t>(s->end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        return 1;
      },
      &search);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return {search.begin & ~(page - 1), (search.end + page - 1) & ~(page - 1)};
}

size_t OpenDescriptors() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator()));
}

// A program that loads and unloads many distinct libraries (plugins, generated code), each
// sampled: the symbolizer keeps a bounded number of them open (descriptors, libdw state),
// not one per library ever loaded, and an unloaded library it closed still answers for its
// old addresses (opened again by path).
TEST(SymbolizerDlopen, ManyLibrariesLoadedInTurnKeepDescriptorsBounded) {
  TempDir dir;
  constexpr int kLibraries = 300;  // more than the unloaded modules the map keeps (256)
  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  const size_t before = OpenDescriptors();
  size_t peak = before;
  std::vector<uint64_t> second_addresses;
  std::vector<int> second_lines;
  std::vector<std::pair<void*, size_t>> reservations;
  const size_t opened_before = symbolizer.Stats().files;
  for (int i = 0; i < kLibraries; ++i) {
    const std::string path = dir.path() + "/libplugin" + std::to_string(i) + ".so";
    std::filesystem::copy_file(INPROF_DL_FIXTURE_PATH, path);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto first = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
    auto second = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_second"));
    ASSERT_TRUE(first && second);
    int line = 0;
    const uint64_t address = first(&line) - 1;
    second_addresses.push_back(second(&line) - 1);
    second_lines.push_back(line);
    const auto& frames = symbolizer.Symbolize(address);  // opens this library's file
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames[0].function, "fixture_lib::CaptureFirst(int*)") << path;
    peak = std::max(peak, OpenDescriptors());
    const auto [begin, end] = LoadedSpan(handle);
    ASSERT_EQ(dlclose(handle), 0);
    symbolizer.RefreshModules();
    // Its addresses stay its own: the next library is loaded elsewhere, so each address
    // asked is new (an address answered once keeps its answer while its module is known).
    void* reserved = begin < end ? mmap(reinterpret_cast<void*>(begin), end - begin, PROT_NONE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
                                 : MAP_FAILED;
    ASSERT_NE(reserved, MAP_FAILED) << "could not keep an unloaded library's addresses";
    reservations.emplace_back(reserved, end - begin);
  }
  EXPECT_EQ(symbolizer.Stats().files, static_cast<size_t>(kLibraries) + opened_before);
  // 16 unloaded files stay open (and libdwfl may hold a separate debug file's too).
  EXPECT_LE(peak - before, 2u * 16 + 2) << "descriptors opened for " << kLibraries << " libraries";
  // A library unloaded 20 loads ago was closed; its address not asked before is answered
  // from its file, opened again.
  const size_t old = kLibraries - 20;
  void* still_there = dlopen((dir.path() + "/libplugin" + std::to_string(old) + ".so").c_str(),
                             RTLD_NOW | RTLD_NOLOAD);
  if (still_there != nullptr) {
    dlclose(still_there);
    GTEST_SKIP() << "the loader kept the library mapped after dlclose";
  }
  const auto& frames = symbolizer.Symbolize(second_addresses[old]);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0].function, "fixture_lib::CaptureSecond(int*)");
  EXPECT_EQ(frames[0].line, static_cast<uint32_t>(second_lines[old]));
  EXPECT_NE(frames[0].module.find("libplugin" + std::to_string(old) + ".so"), std::string::npos)
      << frames[0].module << " " << frames[0].function;
  EXPECT_LE(OpenDescriptors() - before, 2u * 16 + 2);
  for (const auto& [address, size] : reservations) munmap(address, size);
}

TEST(SymbolizerDlopen, LibraryLoadedAfterFirstRefreshIsFoundOnMiss) {
  Symbolizer symbolizer;
  symbolizer.RefreshModules();
  void* handle = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
  ASSERT_NE(capture, nullptr);
  int line = 0;
  const uint64_t address = capture(&line) - 1;
  const auto& frames = symbolizer.Symbolize(address);  // no explicit RefreshModules()
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture_lib::CaptureFirst(int*)");
  EXPECT_EQ(frames[0].line, static_cast<uint32_t>(line));
  dlclose(handle);
}

TEST(SymbolizerDlopen, UnknownAddressIsRetriedAfterModulesChange) {
  Symbolizer symbolizer;
  void* handle = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
  int line = 0;
  const uint64_t address = capture(&line) - 1;
  ASSERT_EQ(dlclose(handle), 0);
  void* still_there = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (still_there != nullptr) {
    dlclose(still_there);
    GTEST_SKIP() << "the loader kept the fixture mapped after dlclose";
  }
  // This symbolizer never saw the library: unknown for now.
  const std::vector<SymbolizedFrame>& before = symbolizer.Symbolize(address);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].function, "[unknown]");

  handle = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
  const uint64_t again = capture(&line) - 1;
  symbolizer.RefreshModules();
  // At the same place or not, the earlier "[unknown]" was not kept as the answer.
  const std::vector<SymbolizedFrame>& after = symbolizer.Symbolize(again);
  EXPECT_EQ(after[0].function, "fixture_lib::CaptureFirst(int*)");
  EXPECT_EQ(symbolizer.Symbolize(address)[0].function,
            again == address ? "fixture_lib::CaptureFirst(int*)" : "[unknown]");
  dlclose(handle);
}

TEST(SymbolizerDlopen, LibraryWithoutDebugInfoFallsBackToElfSymbolThenOffset) {
  void* handle = dlopen(INPROF_NODEBUG_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto exported = reinterpret_cast<AddressFn>(dlsym(handle, "inprof_nodebug_exported_address"));
  auto hidden = reinterpret_cast<AddressFn>(dlsym(handle, "inprof_nodebug_hidden_address"));
  ASSERT_TRUE(exported && hidden);
  const uint64_t bias = LoadBias(handle);
  const std::string module = RealPath(INPROF_NODEBUG_FIXTURE_PATH);

  Symbolizer symbolizer;
  {
    const auto& frames = symbolizer.Symbolize(exported() + 1);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "nodebug::Exported(int)");  // demangled .dynsym name
    EXPECT_TRUE(frames[0].file.empty());
    EXPECT_EQ(frames[0].line, 0u);
    EXPECT_EQ(frames[0].module, module);
  }
  {
    const uint64_t address = hidden() + 1;
    const auto& frames = symbolizer.Symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    char expected[256];
    std::snprintf(expected, sizeof expected, "%s+0x%" PRIx64,
                  module.substr(module.rfind('/') + 1).c_str(), address - bias);
    EXPECT_EQ(frames[0].function, expected);
    EXPECT_TRUE(frames[0].file.empty());
    EXPECT_EQ(frames[0].module, module);
    EXPECT_EQ(frames[0].module_offset, address - bias);
  }
  dlclose(handle);
}

// A private copy of a fixture in a fresh directory, removed (with whatever is left in the
// directory) at the end of the test.
class TempLibrary {
 public:
  explicit TempLibrary(const std::string& source) {
    char dir[] = "/tmp/inprof-symbolize-XXXXXX";
    if (mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    path_ = dir_ + "/libcopied_fixture.so";
    std::filesystem::copy_file(source, path_);
  }
  ~TempLibrary() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string path_;
};

// Long-running programs outlive their files: package upgrades replace libraries (rename
// over the old path) or remove them. The symbolizer must read what is mapped, not what
// the path names now.
class SymbolizerChangedFile : public ::testing::TestWithParam<bool> {};

TEST_P(SymbolizerChangedFile, ResolvesTheMappedImage) {
  const bool replace = GetParam();
  TempLibrary library(INPROF_DL_FIXTURE_PATH);
  ASSERT_FALSE(library.path().empty());
  void* handle = dlopen(library.path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
  auto source_file = reinterpret_cast<SourceFileFn>(dlsym(handle, "inprof_fixture_source_file"));
  ASSERT_TRUE(capture && source_file);
  int line = 0;
  const uint64_t address = capture(&line) - 1;

  if (replace) {
    // Another library under the same name, swapped in atomically like dpkg does.
    const std::string staged = library.dir() + "/staged.so";
    std::filesystem::copy_file(INPROF_NODEBUG_FIXTURE_PATH, staged);
    ASSERT_EQ(rename(staged.c_str(), library.path().c_str()), 0);
  } else {
    ASSERT_EQ(unlink(library.path().c_str()), 0);
  }
  {
    Symbolizer symbolizer;
    const auto& frames = symbolizer.Symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].module, library.path());
    const std::string function = frames[0].function;
    if (function.rfind("libcopied_fixture.so+0x", 0) == 0) {
      // No /proc/self/map_files here (old kernel, restricted /proc): the file is
      // recognised as unusable and the address still gets a module+offset name.
      dlclose(handle);
      GTEST_SKIP() << "mapped file not reachable through /proc/self/map_files";
    }
    EXPECT_EQ(function, "fixture_lib::CaptureFirst(int*)");
    EXPECT_EQ(frames[0].file, RealPath(source_file()));
    EXPECT_EQ(frames[0].line, static_cast<uint32_t>(line));
  }
  dlclose(handle);
}

INSTANTIATE_TEST_SUITE_P(Library, SymbolizerChangedFile, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Replaced" : "Deleted"; });

struct SectionSpan {
  std::string name;
  uint64_t offset;
  uint64_t size;
};

std::vector<SectionSpan> DebugSections(const std::string& path) {
  std::vector<SectionSpan> sections;
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sections;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t shstrndx = 0;
  if (elf != nullptr && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
      const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (name != nullptr && std::string(name).rfind(".debug_", 0) == 0 && shdr.sh_size > 0) {
        sections.push_back({name, shdr.sh_offset, shdr.sh_size});
      }
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return sections;
}

// Malformed debug info must cost lines, never the process: every .debug_* section of the
// fixture is damaged in turn (random bytes, all ones, truncated to zeros) and every byte of
// the library's code is symbolized.
TEST(SymbolizerDlopen, DamagedDebugInfoNeverCrashes) {
  const std::vector<SectionSpan> sections = DebugSections(INPROF_DL_FIXTURE_PATH);
  ASSERT_GE(sections.size(), 3u);  // at least .debug_info, .debug_abbrev, .debug_line
  std::string original;
  {
    std::ifstream in(INPROF_DL_FIXTURE_PATH, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_FALSE(original.empty());
  std::mt19937 rng(12345);
  TempLibrary workspace(INPROF_DL_FIXTURE_PATH);
  ASSERT_FALSE(workspace.dir().empty());
  int variant = 0;
  for (const SectionSpan& section : sections) {
    for (int mode = 0; mode < 3; ++mode) {
      SCOPED_TRACE(section.name + " mode " + std::to_string(mode));
      std::string damaged = original;
      char* bytes = damaged.data() + section.offset;
      if (mode == 0) {
        for (int i = 0; i < 16; ++i) bytes[rng() % section.size] = static_cast<char>(rng());
      } else if (mode == 1) {
        std::memset(bytes, 0xff, section.size);
      } else {
        std::memset(bytes + section.size / 2, 0, section.size - section.size / 2);
      }
      // A new name each time: the loader would hand back the already-loaded copy.
      const std::string path = workspace.dir() + "/damaged" + std::to_string(variant++) + ".so";
      std::ofstream(path, std::ios::binary) << damaged;
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(handle, nullptr) << dlerror();
      auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
      ASSERT_NE(capture, nullptr);
      int line = 0;
      const uint64_t captured = capture(&line) - 1;
      const LoaderObject object = ObjectContaining(captured);
      ASSERT_TRUE(object.found);
      {
        Symbolizer symbolizer;
        for (const auto& [begin, end] : object.exec_ranges) {
          for (uint64_t address = begin; address < end; ++address) {
            const auto& frames = symbolizer.Symbolize(address);
            ASSERT_FALSE(frames.empty());
            EXPECT_FALSE(frames.back().function.empty());
            EXPECT_EQ(frames.back().module, RealPath(path));
          }
        }
      }
      dlclose(handle);
    }
  }
}

#ifdef INPROF_NOARANGES_FIXTURE_PATH
TEST(SymbolizerDlopen, LibraryWithoutDebugArangesStillHasLines) {
  void* handle = dlopen(INPROF_NOARANGES_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_second"));
  auto source_file = reinterpret_cast<SourceFileFn>(dlsym(handle, "inprof_fixture_source_file"));
  ASSERT_TRUE(capture && source_file);
  int line = 0;
  const uint64_t address = capture(&line) - 1;
  {
    Symbolizer symbolizer;
    const auto& frames = symbolizer.Symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "fixture_lib::CaptureSecond(int*)");
    EXPECT_EQ(frames[0].file, RealPath(source_file()));
    EXPECT_EQ(frames[0].line, static_cast<uint32_t>(line));
  }
  dlclose(handle);
}
#endif

#if defined(INPROF_SPLIT_DEBUG_FIXTURE_PATH) && defined(INPROF_SPLIT_DEBUG_NOBUILDID_FIXTURE_PATH)
// DEBUGINFOD_URLS decides which find_debuginfo callback is used (libdwfl's own, or ours
// that never touches the network); both must find a .gnu_debuglink'ed file next to the
// library, validated by build-id or, without one, by the link's CRC.
struct SplitDebugCase {
  bool debuginfod_urls_set;
  bool build_id;
};

class SymbolizerSplitDebug : public ::testing::TestWithParam<SplitDebugCase> {};

TEST_P(SymbolizerSplitDebug, FindsDebuglinkFile) {
  const SplitDebugCase param = GetParam();
  const char* saved = getenv("DEBUGINFOD_URLS");
  const std::string saved_value = saved != nullptr ? saved : "";
  if (param.debuginfod_urls_set) {
    // Unroutable: if anything tried the network here, the test would hang or fail.
    setenv("DEBUGINFOD_URLS", "http://192.0.2.1:9/", 1);
  } else {
    unsetenv("DEBUGINFOD_URLS");
  }
  const char* library =
      param.build_id ? INPROF_SPLIT_DEBUG_FIXTURE_PATH : INPROF_SPLIT_DEBUG_NOBUILDID_FIXTURE_PATH;
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto capture = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_split_capture"));
  auto source_file = reinterpret_cast<SourceFileFn>(dlsym(handle, "inprof_split_source_file"));
  ASSERT_TRUE(capture && source_file);
  int line = 0;
  const uint64_t address = capture(&line) - 1;
  {
    Symbolizer symbolizer;
    const auto& frames = symbolizer.Symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "split_debug::Capture(int*)");
    EXPECT_EQ(frames[0].file, RealPath(source_file()));
    EXPECT_EQ(frames[0].line, static_cast<uint32_t>(line));
  }
  dlclose(handle);
  if (saved != nullptr) {
    setenv("DEBUGINFOD_URLS", saved_value.c_str(), 1);
  } else {
    unsetenv("DEBUGINFOD_URLS");
  }
}

INSTANTIATE_TEST_SUITE_P(Callbacks, SymbolizerSplitDebug,
                         ::testing::Values(SplitDebugCase{false, true}, SplitDebugCase{true, true},
                                           SplitDebugCase{false, false},
                                           SplitDebugCase{true, false}),
                         [](const auto& info) {
                           return std::string(info.param.debuginfod_urls_set ? "DebuginfodUrlsSet"
                                                                             : "Unset") +
                                  (info.param.build_id ? "WithBuildId" : "WithoutBuildId");
                         });
#endif


// Loads the fixture, calls `while_loaded`, takes the addresses of its two capture functions'
// call sites, unloads it and occupies its first page, so the next load lands somewhere else.
// Returns false when the loader kept the library mapped.
struct Placement {
  uint64_t bias = 0;
  uint64_t first = 0, second = 0;  // return addresses - 1
  int first_line = 0, second_line = 0;
};
bool LoadAndUnloadElsewhere(Placement* out, std::vector<std::pair<void*, size_t>>* blockers,
                            const std::function<void()>& while_loaded) {
  void* handle = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  auto first = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_first"));
  auto second = reinterpret_cast<CaptureFn>(dlsym(handle, "inprof_fixture_capture_second"));
  if (first == nullptr || second == nullptr) return false;
  out->first = first(&out->first_line) - 1;
  out->second = second(&out->second_line) - 1;
  out->bias = LoadBias(handle);
  while_loaded();
  if (dlclose(handle) != 0) return false;
  if (void* still = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(still);
    return false;
  }
  const size_t span = 4096;  // its first page: the loader needs a hole for the whole library
  void* block = mmap(reinterpret_cast<void*>(out->bias), span, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (block != MAP_FAILED) blockers->emplace_back(block, span);
  return true;
}

// A plugin loaded, unloaded and loaded again at another address, looked up only after both
// unloads: both placements resolve to the same function and line (libdwfl reads the file once
// and the second placement is looked up relative to the first).
TEST(SymbolizerDlopen, ALibraryReloadedElsewhereResolvesAtBothPlacements) {
  Symbolizer symbolizer;
  std::vector<std::pair<void*, size_t>> blockers;
  Placement a, b;
  ASSERT_TRUE(LoadAndUnloadElsewhere(&a, &blockers, [&] { symbolizer.RefreshModules(); }));
  symbolizer.RefreshModules();
  ASSERT_TRUE(LoadAndUnloadElsewhere(&b, &blockers, [&] { symbolizer.RefreshModules(); }));
  symbolizer.RefreshModules();
  for (auto& [p, n] : blockers) munmap(p, n);
  if (a.bias == b.bias) GTEST_SKIP() << "the loader put the library at the same place again";
  for (const Placement* p : {&a, &b}) {
    const auto& frames = symbolizer.Symbolize(p->second);
    ASSERT_EQ(frames.size(), 1u) << std::hex << p->second;
    EXPECT_EQ(frames[0].function, "fixture_lib::CaptureSecond(int*)");
    EXPECT_EQ(frames[0].line, static_cast<uint32_t>(a.second_line));
    EXPECT_EQ(frames[0].module, RealPath(INPROF_DL_FIXTURE_PATH));
    EXPECT_EQ(frames[0].module_offset, a.second - a.bias);
  }
}

// The map keeps only the most recently unloaded modules: a program that loads and unloads
// libraries forever does not grow it. Forgotten ids are reported and reused.
TEST(SymbolizerDlopen, TheModuleMapForgetsTheOldestUnloadedModules) {
  inprof::internal::ModuleMap map(/*max_unloaded=*/1);
  std::vector<size_t> added, forgotten;
  map.Refresh(&added, &forgotten);
  const size_t base = map.size();
  std::vector<std::pair<void*, size_t>> blockers;
  std::vector<Placement> placements(4);
  for (Placement& p : placements) {
    ASSERT_TRUE(LoadAndUnloadElsewhere(&p, &blockers, [&] { map.Refresh(&added, &forgotten); }));
    map.Refresh(&added, &forgotten);
  }
  for (auto& [p, n] : blockers) munmap(p, n);
  std::set<uint64_t> places;
  for (const Placement& p : placements) places.insert(p.bias);
  if (places.size() < 3) GTEST_SKIP() << "the loader reused its places despite the blockers";
  // Unloaded placements, one kept: the newest. The map holds it and nothing more.
  ASSERT_GE(forgotten.size(), 2u);
  EXPECT_NE(map.Find(placements[3].second), nullptr);
  EXPECT_EQ(map.Find(placements[0].second), nullptr);
  EXPECT_LE(map.size(), base + 2);
  // A module loaded now takes a forgotten id instead of growing the map.
  const size_t size = map.size();
  void* handle = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  added.clear();
  map.Refresh(&added, &forgotten);
  dlclose(handle);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(map.size(), size);
  EXPECT_NE(std::find(forgotten.begin(), forgotten.end(), added[0]), forgotten.end());
  EXPECT_FALSE(map.at(added[0]).forgotten);
}

}  // namespace
}  // namespace inprof_test
