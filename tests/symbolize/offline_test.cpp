// Offline symbolization: a Symbolizer given the modules another process recorded
// (RecordedModules -> UseRecordedModules) answers as the live Symbolizer did in that
// process, finds files moved since by build-id, and never answers from a file that is not
// the recorded one.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures/known_frames.h"
#include "frames_text.h"
#include "inprof/symbolize.h"
#include "test_util.h"

namespace inprof_test {
namespace {

using inprof::RawModule;
using inprof::Symbolizer;
using inprof::SymbolizerOptions;

using CaptureFn = uintptr_t (*)(int*);

std::vector<uint64_t> Spread(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                             size_t per_range) {
  std::vector<uint64_t> out;
  for (const auto& [begin, end] : ranges) {
    const uint64_t step = std::max<uint64_t>((end - begin) / per_range, 1);
    for (uint64_t a = begin + step / 2; a < end; a += step) out.push_back(a);
  }
  return out;
}

const RawModule* FindModule(const std::vector<RawModule>& modules, const std::string& path) {
  for (const RawModule& m : modules) {
    if (m.path == path) return &m;
  }
  return nullptr;
}

TEST(Symbolizer, RecordedModulesDescribeThisProcess) {
  const known::Capture capture = known::DirectCall();
  Symbolizer symbolizer;
  const std::vector<RawModule> modules = symbolizer.RecordedModules();
  const RawModule* main = FindModule(modules, RealPath("/proc/self/exe"));
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->kind, RawModule::Kind::kMainExecutable);
  EXPECT_EQ(main->bias, MainProgram().bias);
  EXPECT_FALSE(main->build_id.empty());
  EXPECT_EQ(main->build_id.find_first_not_of("0123456789abcdef"), std::string::npos);
  bool covered = false;
  for (const inprof::RawSegment& s : main->segments) {
    covered = covered || (s.executable && capture.pc >= s.begin && capture.pc < s.end);
  }
  EXPECT_TRUE(covered);
  bool libc = false;
  bool vdso = false;
  for (const RawModule& m : modules) {
    libc = libc || m.path.find("/libc.so.6") != std::string::npos;
    vdso = vdso || (m.kind == RawModule::Kind::kVdso && m.path == "[vdso]");
  }
  EXPECT_TRUE(libc);
  EXPECT_EQ(vdso, getauxval(AT_SYSINFO_EHDR) != 0);
}

// The answers a raw profile gets later must be the ones the process would have given: same
// names, canonical files, lines, inline chains, module paths and offsets.
TEST(OfflineSymbolizer, AnswersAsTheLiveSymbolizerDid) {
  void* fixture = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fixture, nullptr) << dlerror();
  int line = 0;
  std::vector<uint64_t> addresses = {
      known::DirectCall().pc - 1,
      known::InlineCall().inner.pc - 1,
      known::InlineCallTwoLevels().inner.pc - 1,
      reinterpret_cast<CaptureFn>(dlsym(fixture, "inprof_fixture_capture_first"))(&line) - 1,
      reinterpret_cast<CaptureFn>(dlsym(fixture, "inprof_fixture_capture_second"))(&line) - 1,
  };
  for (uint64_t a : SpreadAddresses("libc.so.6", 300)) addresses.push_back(a);
  for (uint64_t a : Spread(MainProgram().exec_ranges, 100)) addresses.push_back(a);
  if (const uint64_t vdso = getauxval(AT_SYSINFO_EHDR); vdso != 0) {
    for (uint64_t a : Spread(ObjectContaining(vdso).exec_ranges, 20)) addresses.push_back(a);
  }

  Symbolizer live;
  std::vector<std::string> expected;
  size_t with_line = 0;
  for (uint64_t a : addresses) {
    const auto& frames = live.Symbolize(a);
    expected.push_back(FramesText(frames));
    if (frames.front().line != 0) ++with_line;
  }
  const std::vector<RawModule> recorded = live.RecordedModules();
  dlclose(fixture);
#if defined(__aarch64__)
  // The cross lane has no separate debug info for the arm64 libc: only this program's
  // addresses have lines.
  ASSERT_GT(with_line, 0u) << "no answer with lines to compare";
#else
  ASSERT_GT(with_line, addresses.size() / 2) << "too few answers with lines to compare";
#endif

  Symbolizer offline;
  offline.UseRecordedModules(recorded);
  for (size_t i = 0; i < addresses.size(); ++i) {
    EXPECT_EQ(FramesText(offline.Symbolize(addresses[i])), expected[i])
        << "address 0x" << std::hex << addresses[i];
  }
  EXPECT_TRUE(offline.Warnings().empty()) << offline.Warnings().front();
  const inprof::SymbolizerStats stats = offline.Stats();
  EXPECT_EQ(stats.files, live.Stats().files);  // executable, libc, fixture (and the vDSO)
  EXPECT_GE(stats.files, 3u);
  EXPECT_GT(stats.addresses, addresses.size() / 2);
  EXPECT_GT(stats.seconds, 0);
  EXPECT_EQ(stats.cache_hits + stats.cache_misses, 0u);  // no cache directory given
}

TEST(OfflineSymbolizer, FollowsNoLoaderAfterwards) {
  const uint64_t address = known::DirectCall().pc - 1;
  Symbolizer offline;
  offline.UseRecordedModules({});
  offline.RefreshModules();
  EXPECT_EQ(offline.Symbolize(address).front().function, "[unknown]");
  EXPECT_TRUE(offline.ExecutableRanges().empty());
}

enum class Place { kBuildIdFile, kBasename, kBuildIdDebugFile };

class OfflineMovedFile : public testing::TestWithParam<Place> {};

TEST_P(OfflineMovedFile, IsFoundByBuildIdInDebugDirs) {
  TempDir tmp;
  LoadedCopy copy(tmp, INPROF_DL_FIXTURE_PATH, "inprof_fixture_capture_first");
  ASSERT_NE(copy.address, 0u) << copy.path;
  Symbolizer live;
  const std::string expected = FramesText(live.Symbolize(copy.address));
  ASSERT_NE(live.Symbolize(copy.address).front().line, 0u) << expected;
  const std::vector<RawModule> recorded = live.RecordedModules();
  const RawModule* module = FindModule(recorded, copy.path);
  ASSERT_NE(module, nullptr);
  ASSERT_EQ(module->build_id.size(), 40u);

  const std::string debug_dir = tmp.path() + "/debug";
  const std::string id_path =
      "/.build-id/" + module->build_id.substr(0, 2) + "/" + module->build_id.substr(2);
  std::string moved;
  switch (GetParam()) {
    case Place::kBuildIdFile:
      moved = debug_dir + id_path;
      break;
    case Place::kBasename:
      moved = debug_dir + "/libinprof_copy.so";
      break;
    case Place::kBuildIdDebugFile:
      moved = debug_dir + id_path + ".debug";
      break;
  }
  ASSERT_TRUE(CopyFile(copy.path, moved));
  ASSERT_EQ(std::remove(copy.path.c_str()), 0);

  SymbolizerOptions options;
  options.debug_dirs = {tmp.path() + "/elsewhere", debug_dir};
  Symbolizer offline(options);
  offline.UseRecordedModules(recorded);
  EXPECT_EQ(FramesText(offline.Symbolize(copy.address)), expected);
  EXPECT_TRUE(offline.Warnings().empty()) << offline.Warnings().front();
  EXPECT_EQ(offline.Stats().files, 1u);

  // Without the directory: an offset, never a guess, and one warning that says why.
  Symbolizer without;
  without.UseRecordedModules(recorded);
  const auto& frames = without.Symbolize(copy.address);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function.rfind("libinprof_copy.so+0x", 0), 0u) << frames[0].function;
  EXPECT_EQ(frames[0].file, "");
  EXPECT_EQ(frames[0].module, copy.path);
  without.Symbolize(copy.address + 1);
  ASSERT_EQ(without.Warnings().size(), 1u);
  EXPECT_NE(without.Warnings()[0].find(copy.path + ": No such file"), std::string::npos)
      << without.Warnings()[0];
  EXPECT_NE(without.Warnings()[0].find("/usr/lib/debug"), std::string::npos)
      << without.Warnings()[0];
}

INSTANTIATE_TEST_SUITE_P(Places, OfflineMovedFile,
                         testing::Values(Place::kBuildIdFile, Place::kBasename,
                                         Place::kBuildIdDebugFile));

TEST(OfflineSymbolizer, FileWithAnotherBuildIdIsNotUsed) {
  TempDir tmp;
  LoadedCopy copy(tmp, INPROF_DL_FIXTURE_PATH, "inprof_fixture_capture_first");
  ASSERT_NE(copy.address, 0u) << copy.path;
  Symbolizer live;
  live.Symbolize(copy.address);
  const std::vector<RawModule> recorded = live.RecordedModules();
  const RawModule* module = FindModule(recorded, copy.path);
  ASSERT_NE(module, nullptr);
  // "Rebuilt since": another library at the recorded path (a new file renamed over it, as
  // installs do: the loaded one stays mapped).
  ASSERT_TRUE(CopyFile(INPROF_NODEBUG_FIXTURE_PATH, copy.path + ".new"));
  ASSERT_EQ(std::rename((copy.path + ".new").c_str(), copy.path.c_str()), 0);

  Symbolizer offline;
  offline.UseRecordedModules(recorded);
  for (uint64_t a : {copy.address, copy.address + 1, copy.address + 2}) {
    const auto& frames = offline.Symbolize(a);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function.rfind("libinprof_copy.so+0x", 0), 0u) << frames[0].function;
    EXPECT_EQ(frames[0].file, "");
    EXPECT_EQ(frames[0].module_offset, a - module->bias);
  }
  ASSERT_EQ(offline.Warnings().size(), 1u);
  const std::string warning = offline.Warnings()[0];
  EXPECT_NE(warning.find(copy.path + ": build-id " + module->build_id + " expected, the file has "),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("(rebuilt since?)"), std::string::npos) << warning;
  EXPECT_NE(warning.find("frames show as libinprof_copy.so+0x"), std::string::npos) << warning;
  EXPECT_EQ(offline.Stats().files, 0u);
}

#ifdef INPROF_SPLIT_DEBUG_NOBUILDID_FIXTURE_PATH
// Without a build-id, the file at the recorded path is used only when its segments are the
// recorded ones.
TEST(OfflineSymbolizer, FileWithoutBuildIdIsCheckedByItsSegments) {
  TempDir tmp;
  LoadedCopy copy(tmp, INPROF_SPLIT_DEBUG_NOBUILDID_FIXTURE_PATH, "inprof_split_capture");
  ASSERT_NE(copy.address, 0u) << copy.path;
  Symbolizer live;
  const std::string expected = FramesText(live.Symbolize(copy.address));
  ASSERT_EQ(live.Symbolize(copy.address).front().function, "split_debug::Capture(int*)");
  const std::vector<RawModule> recorded = live.RecordedModules();
  const RawModule* module = FindModule(recorded, copy.path);
  ASSERT_NE(module, nullptr);
  ASSERT_EQ(module->build_id, "");

  Symbolizer same;
  same.UseRecordedModules(recorded);
  EXPECT_EQ(FramesText(same.Symbolize(copy.address)), expected);
  EXPECT_TRUE(same.Warnings().empty());

  ASSERT_TRUE(CopyFile(INPROF_DL_FIXTURE_PATH, copy.path + ".new"));
  ASSERT_EQ(std::rename((copy.path + ".new").c_str(), copy.path.c_str()), 0);
  Symbolizer replaced;
  replaced.UseRecordedModules(recorded);
  EXPECT_EQ(replaced.Symbolize(copy.address).front().function.rfind("libinprof_copy.so+0x", 0), 0u);
  ASSERT_EQ(replaced.Warnings().size(), 1u);
  EXPECT_NE(replaced.Warnings()[0].find("segments differ from the recorded ones"),
            std::string::npos)
      << replaced.Warnings()[0];
  EXPECT_NE(replaced.Warnings()[0].find("no build-id to look it up by"), std::string::npos);
}
#endif

TEST(OfflineSymbolizer, LibraryOfManyProcessesIsOpenedOnce) {
  void* fixture = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fixture, nullptr) << dlerror();
  int line = 0;
  const uint64_t first =
      reinterpret_cast<CaptureFn>(dlsym(fixture, "inprof_fixture_capture_first"))(&line) - 1;
  const uint64_t second =
      reinterpret_cast<CaptureFn>(dlsym(fixture, "inprof_fixture_capture_second"))(&line) - 1;
  Symbolizer live;
  const std::string expected_first = FramesText(live.Symbolize(first));
  const std::string expected_second = FramesText(live.Symbolize(second));
  const std::vector<RawModule> recorded = live.RecordedModules();
  dlclose(fixture);
  const RawModule* library = FindModule(recorded, RealPath(INPROF_DL_FIXTURE_PATH));
  ASSERT_NE(library, nullptr);

  // A second process with only that library, 1 TiB higher.
  constexpr uint64_t kDelta = uint64_t{1} << 40;
  RawModule moved = *library;
  moved.bias += kDelta;
  for (inprof::RawSegment& s : moved.segments) {
    s.begin += kDelta;
    s.end += kDelta;
  }

  Symbolizer offline;
  offline.UseRecordedModules(recorded);
  EXPECT_EQ(FramesText(offline.Symbolize(first)), expected_first);
  EXPECT_EQ(offline.Stats().files, 1u);
  offline.UseRecordedModules({moved});
  EXPECT_EQ(FramesText(offline.Symbolize(first + kDelta)), expected_first);
  EXPECT_EQ(FramesText(offline.Symbolize(second + kDelta)), expected_second);
  EXPECT_EQ(offline.Symbolize(first).front().function, "[unknown]");  // not in this process
  offline.UseRecordedModules(recorded);
  EXPECT_EQ(FramesText(offline.Symbolize(second)), expected_second);
  const inprof::SymbolizerStats stats = offline.Stats();
  EXPECT_EQ(stats.files, 1u);
  EXPECT_EQ(stats.addresses, 4u);
  EXPECT_TRUE(offline.Warnings().empty());
}

// Where modules overlap (a library unloaded, another loaded at its place), addresses land in
// the module listed first; RecordedModules lists the loaded ones first, as the live
// Symbolizer looks them up.
TEST(OfflineSymbolizer, OverlappingModulesResolveToTheOneListedFirst) {
  void* fixture = dlopen(INPROF_DL_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fixture, nullptr) << dlerror();
  int line = 0;
  const uint64_t address =
      reinterpret_cast<CaptureFn>(dlsym(fixture, "inprof_fixture_capture_first"))(&line) - 1;
  Symbolizer live;
  live.Symbolize(address);
  const std::vector<RawModule> recorded = live.RecordedModules();
  dlclose(fixture);
  live.RefreshModules();
  const std::string path = RealPath(INPROF_DL_FIXTURE_PATH);
  const std::vector<RawModule> after = live.RecordedModules();
  ASSERT_FALSE(after.empty());
  if (ObjectContaining(address).found) GTEST_SKIP() << "the fixture stayed mapped";
  EXPECT_EQ(after.back().path, path) << "the unloaded library comes after the loaded ones";

  const RawModule* library = FindModule(recorded, path);
  ASSERT_NE(library, nullptr);
  RawModule other = *library;  // another file at the same place
  other.path = RealPath(INPROF_NODEBUG_FIXTURE_PATH);
  other.build_id.clear();
  Symbolizer first;
  first.UseRecordedModules({*library, other});
  EXPECT_EQ(first.Symbolize(address).front().module, path);
  EXPECT_EQ(first.Symbolize(address).front().function, "fixture_lib::CaptureFirst(int*)");
  Symbolizer second;
  second.UseRecordedModules({other, *library});
  EXPECT_EQ(second.Symbolize(address).front().module, other.path);
}

TEST(OfflineSymbolizer, VdsoOfAnotherKernelIsNotUsed) {
  const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso == 0) GTEST_SKIP() << "no vDSO";
  const std::vector<uint64_t> addresses = Spread(ObjectContaining(vdso).exec_ranges, 4);
  ASSERT_FALSE(addresses.empty());
  Symbolizer live;
  std::vector<RawModule> recorded = live.RecordedModules();
  bool changed = false;
  for (RawModule& m : recorded) {
    if (m.kind == RawModule::Kind::kVdso) {
      m.build_id = std::string(40, '0');
      changed = true;
    }
  }
  ASSERT_TRUE(changed);
  Symbolizer offline;
  offline.UseRecordedModules(recorded);
  for (uint64_t a : addresses) {
    EXPECT_EQ(offline.Symbolize(a).front().function.rfind("[vdso]+0x", 0), 0u)
        << offline.Symbolize(a).front().function;
  }
  ASSERT_EQ(offline.Warnings().size(), 1u);
  EXPECT_NE(offline.Warnings()[0].find("[vdso]: build-id 0000"), std::string::npos)
      << offline.Warnings()[0];
}

#ifdef INPROF_SPLIT_DEBUG_FIXTURE_PATH
// Separate debug info in a debug directory (DIR/.build-id/xx/rest.debug) serves the live
// Symbolizer and the offline one alike.
TEST(OfflineSymbolizer, SeparateDebugInfoInDebugDirs) {
  TempDir tmp;
  LoadedCopy copy(tmp, INPROF_SPLIT_DEBUG_FIXTURE_PATH, "inprof_split_capture");
  ASSERT_NE(copy.address, 0u) << copy.path;
  Symbolizer plain;
  EXPECT_EQ(plain.Symbolize(copy.address).front().line, 0u) << "the .debug file is not copied";
  const std::vector<RawModule> modules = plain.RecordedModules();
  const RawModule* module = FindModule(modules, copy.path);
  ASSERT_NE(module, nullptr);
  const std::string debug_dir = tmp.path() + "/debug";
  ASSERT_TRUE(CopyFile(std::string(INPROF_SPLIT_DEBUG_FIXTURE_PATH) + ".debug",
                       debug_dir + "/.build-id/" + module->build_id.substr(0, 2) + "/" +
                           module->build_id.substr(2) + ".debug"));

  SymbolizerOptions options;
  options.debug_dirs = {debug_dir};
  Symbolizer live(options);
  const auto& frames = live.Symbolize(copy.address);
  EXPECT_EQ(frames.front().function, "split_debug::Capture(int*)");
  EXPECT_EQ(frames.front().line, static_cast<uint32_t>(copy.line));
  Symbolizer offline(options);
  offline.UseRecordedModules(live.RecordedModules());
  EXPECT_EQ(FramesText(offline.Symbolize(copy.address)), FramesText(frames));
}
#endif

}  // namespace
}  // namespace inprof_test
