// Unit tests of the symbolizer's internal pieces whose edge cases are hard to reach through
// the public API: path handling, demangling, note parsing, the module map.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "inprof/symbolize.h"
#include "demangle.h"
#include "dwfl_session.h"
#include "loaded_objects.h"
#include "module_map.h"
#include "source_paths.h"

namespace inprof::internal {
namespace {

TEST(SymbolizeInternals, LexicallyNormal) {
  EXPECT_EQ(LexicallyNormal("/a/./b//c/../d/"), "/a/b/d");
  EXPECT_EQ(LexicallyNormal("/../a"), "/a");
  EXPECT_EQ(LexicallyNormal("/"), "/");
  EXPECT_EQ(LexicallyNormal("a/../../b"), "../b");
  EXPECT_EQ(LexicallyNormal("./"), ".");
}

TEST(SymbolizeInternals, JoinPath) {
  EXPECT_EQ(JoinPath("/build", "src/a.c"), "/build/src/a.c");
  EXPECT_EQ(JoinPath("/build/", "src/a.c"), "/build/src/a.c");
  EXPECT_EQ(JoinPath("/build", "/abs/a.c"), "/abs/a.c");
  EXPECT_EQ(JoinPath("", "a.c"), "a.c");
}

TEST(SymbolizeInternals, PathMapMatchesWholeComponentsLongestFirst) {
  PathMap map(std::vector<std::pair<std::string, std::string>>{
      {"/build", "/src"}, {"/build/root/", "/home/me/checkout"}, {"/x", "/y/"}});
  std::string p = "/build/root/lib/a.c";
  EXPECT_TRUE(map.Apply(&p));
  EXPECT_EQ(p, "/home/me/checkout/lib/a.c");
  p = "/build/rootfs/a.c";
  EXPECT_TRUE(map.Apply(&p));
  EXPECT_EQ(p, "/src/rootfs/a.c");
  p = "/buildx/a.c";
  EXPECT_FALSE(map.Apply(&p));
  EXPECT_EQ(p, "/buildx/a.c");
  p = "/build";
  EXPECT_TRUE(map.Apply(&p));
  EXPECT_EQ(p, "/src");
  p = "/x/a.c";
  EXPECT_TRUE(map.Apply(&p));
  EXPECT_EQ(p, "/y/a.c");

  PathMap root(std::vector<std::pair<std::string, std::string>>{{"/", "/mnt/"}});
  p = "/a.c";
  EXPECT_TRUE(root.Apply(&p));
  EXPECT_EQ(p, "/mnt/a.c");
}

TEST(SymbolizeInternals, SourcePathResolverJoinsCanonicalisesAndMaps) {
  SourcePathResolver resolver(
      PathMap(std::vector<std::pair<std::string, std::string>>{{"/nonexistent/build", "/mapped"}}));
  // Relative names are joined with the compilation directory, then normalised.
  EXPECT_EQ(resolver.Resolve("../src/./a.c", "/nonexistent/build/obj"), "/mapped/src/a.c");
  // Existing files are realpath()ed: /proc/self/exe is a symlink to this binary.
  char exe[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
  EXPECT_EQ(resolver.Resolve("exe", "/proc/self"), std::string(exe));
  const std::string& once = resolver.Resolve("/nonexistent/x//y.c", nullptr);
  EXPECT_EQ(once, "/nonexistent/x/y.c");
  EXPECT_EQ(&once, &resolver.Resolve("/nonexistent/x//y.c", nullptr));  // cached
  EXPECT_EQ(resolver.Resolve("", "/a"), "");
  EXPECT_EQ(resolver.Resolve(nullptr, nullptr), "");
}

TEST(SymbolizeInternals, Demangle) {
  EXPECT_EQ(DemangleString("_ZN2ns1fEi"), "ns::f(int)");
  EXPECT_EQ(DemangleString("_ZN2ns1fEi.cold"), "ns::f(int) [clone .cold]");
  EXPECT_EQ(DemangleString("memcpy@@GLIBC_2.14"), "memcpy");
  EXPECT_EQ(DemangleString("main"), "main");
  EXPECT_EQ(DemangleString("_Znot a name"), "_Znot a name");
  EXPECT_EQ(DemangleString(nullptr), "");
  DemangleCache cache;
  const char* name = "_ZN2ns1fEi";
  EXPECT_EQ(&cache.Get(name), &cache.Get(name));
}

// One ELF note laid out as the gABI says: 12-byte header, name and descriptor each
// starting at the next `align` boundary counted from the note's start.
std::vector<unsigned char> Note(uint32_t type, const std::string& name,
                                const std::vector<unsigned char>& desc, size_t align) {
  const uint32_t header[3] = {static_cast<uint32_t>(name.size() + 1),
                              static_cast<uint32_t>(desc.size()), type};
  std::vector<unsigned char> out(sizeof header);
  std::memcpy(out.data(), header, sizeof header);
  for (char c : name) out.push_back(static_cast<unsigned char>(c));
  out.push_back(0);
  while (out.size() % align) out.push_back(0);
  for (unsigned char c : desc) out.push_back(c);
  while (out.size() % align) out.push_back(0);
  return out;
}

TEST(SymbolizeInternals, FindGnuBuildIdSkipsOtherNotesAndSurvivesGarbage) {
  const std::vector<unsigned char> id = {0xde, 0xad, 0xbe, 0xef, 0x01};
  for (size_t align : {size_t{4}, size_t{8}}) {
    std::vector<unsigned char> notes = Note(NT_GNU_ABI_TAG, "GNU", {0, 0, 0, 0, 3, 0, 0, 0}, align);
    const auto build_id = Note(NT_GNU_BUILD_ID, "GNU", id, align);
    notes.insert(notes.end(), build_id.begin(), build_id.end());
    EXPECT_EQ(FindGnuBuildId(notes.data(), notes.size(), align), id);
    // Every truncation is handled without reading past the end.
    for (size_t size = 0; size < notes.size(); ++size) {
      std::vector<unsigned char> truncated(notes.begin(), notes.begin() + size);
      const auto found = FindGnuBuildId(truncated.data(), truncated.size(), align);
      EXPECT_TRUE(found.empty() || found == id);
    }
  }
  std::vector<unsigned char> huge = Note(NT_GNU_BUILD_ID, "GNU", id, 4);
  const uint32_t bad = 0xfffffff0u;
  std::memcpy(&huge[4], &bad, 4);  // descsz far beyond the buffer
  EXPECT_TRUE(FindGnuBuildId(huge.data(), huge.size(), 4).empty());
  std::memcpy(&huge[0], &bad, 4);  // namesz too
  EXPECT_TRUE(FindGnuBuildId(huge.data(), huge.size(), 4).empty());
  EXPECT_TRUE(FindGnuBuildId(nullptr, 0, 4).empty());
}

TEST(SymbolizeInternals, DebuglinkCrcIsZlibCrc32) {
  const char* check = "123456789";
  EXPECT_EQ(DebuglinkCrc32(0, reinterpret_cast<const unsigned char*>(check), 9), 0xcbf43926u);
  // Incremental use gives the same result.
  uint32_t crc = DebuglinkCrc32(0, reinterpret_cast<const unsigned char*>(check), 4);
  crc = DebuglinkCrc32(crc, reinterpret_cast<const unsigned char*>(check) + 4, 5);
  EXPECT_EQ(crc, 0xcbf43926u);
}

TEST(SymbolizeInternals, ModuleMapSeesEachObjectOnceAndKeepsIdsStable) {
  ModuleMap map;
  std::vector<size_t> added;
  EXPECT_TRUE(map.Refresh(&added));
  ASSERT_FALSE(added.empty());
  EXPECT_EQ(added.size(), map.size());
  const uint64_t generation = map.generation();

  bool saw_main = false;
  for (size_t id = 0; id < map.size(); ++id) {
    const Module& m = map.at(id);
    EXPECT_EQ(m.id, id);
    EXPECT_TRUE(m.loaded);
    EXPECT_FALSE(m.path.empty());
    EXPECT_TRUE(m.path == "[vdso]" || m.path.front() == '/') << m.path;
    if (m.kind == ObjectKind::kMainExecutable) {
      saw_main = true;
      char exe[4096] = {};
      ASSERT_GT(readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
      EXPECT_EQ(m.path, exe);
      EXPECT_FALSE(m.build_id.empty());  // GCC/binutils on Debian always emit one
    }
    for (size_t other = 0; other < id; ++other) {
      EXPECT_FALSE(map.at(other).path == m.path && map.at(other).bias == m.bias) << m.path;
    }
  }
  EXPECT_TRUE(saw_main);

  added.clear();
  EXPECT_FALSE(map.Refresh(&added));
  EXPECT_TRUE(added.empty());
  EXPECT_EQ(map.generation(), generation);

  // Our own code is found in the main program.
  const uint64_t own = reinterpret_cast<uint64_t>(&LexicallyNormal);
  const Module* found = map.Find(own);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->kind, ObjectKind::kMainExecutable);
  EXPECT_EQ(map.Find(0x10), nullptr);
}

// Symbolizing must never load libdebuginfod (and with it libcurl, gnutls, krb5, ...) into
// the profiled program, whether or not DEBUGINFOD_URLS is set.
TEST(SymbolizeInternals, NeverLoadsTheDebuginfodClient) {
  for (const char* urls : {static_cast<const char*>(nullptr), "http://192.0.2.1:9/"}) {
    if (urls != nullptr) setenv("DEBUGINFOD_URLS", urls, 1);
    inprof::Symbolizer symbolizer;
    // Addresses in libc and libstdc++: modules whose debug info is separate, if any.
    symbolizer.Symbolize(reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "qsort")));
    symbolizer.Symbolize(reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "_ZdlPv")));
    if (urls != nullptr) unsetenv("DEBUGINFOD_URLS");
  }
  bool loaded = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (info->dlpi_name != nullptr &&
            std::strstr(info->dlpi_name, "libdebuginfod") != nullptr) {
          *static_cast<bool*>(data) = true;
        }
        return 0;
      },
      &loaded);
  EXPECT_FALSE(loaded);
}

}  // namespace
}  // namespace inprof::internal
