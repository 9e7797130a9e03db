// Atomic file writing: complete new file or the old one, never a partial file, never a stray
// temporary file, and an error that names the path and the reason.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "inprof/atomic_write.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "test_profiles.h"
#include "test_support.h"

namespace inprof::test {
namespace {

namespace fs = std::filesystem;

class AtomicWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "inprof_atomic_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Every name in the directory, so a leftover temporary file is seen.
  std::set<std::string> Entries() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  static void Put(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }

  fs::path dir_;
};

std::string Reason(int err) { return std::strerror(err); }

TEST_F(AtomicWrite, CreatesTheFile) {
  const std::string path = Path("out.folded");
  const Status s = WriteFileAtomically(path, "a;b 1\n");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(path), "a;b 1\n");
  EXPECT_EQ(Entries(), std::set<std::string>{"out.folded"});
}

TEST_F(AtomicWrite, ReplacesAnExistingFile) {
  const std::string path = Path("perf.log");
  Put(path, "old contents that are longer than the new ones\n");
  ASSERT_TRUE(WriteFileAtomically(path, "new\n").ok());
  EXPECT_EQ(ReadFile(path), "new\n");
  EXPECT_EQ(Entries(), std::set<std::string>{"perf.log"});
}

TEST_F(AtomicWrite, WritesEmptyAndLargeContents) {
  ASSERT_TRUE(WriteFileAtomically(Path("empty.log"), "").ok());
  EXPECT_TRUE(fs::exists(Path("empty.log")));
  EXPECT_EQ(fs::file_size(Path("empty.log")), 0u);
  const std::string big(8 << 20, 'x');
  ASSERT_TRUE(WriteFileAtomically(Path("big.folded"), big).ok());
  EXPECT_EQ(ReadFile(Path("big.folded")), big);
}

TEST_F(AtomicWrite, NewFilesGetTheUsualPermissions) {
  // Not mkstemp's 0600: a profile is meant to be read by others (or by the editor of another
  // user on a shared machine).
  const mode_t old_mask = umask(022);
  const Status s = WriteFileAtomically(Path("out.folded"), "x 1\n");
  umask(old_mask);
  ASSERT_TRUE(s.ok()) << s.message();
  struct stat st {};
  ASSERT_EQ(stat(Path("out.folded").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(AtomicWrite, MissingDirectory) {
  const std::string path = Path("missing/out.folded");
  const Status s = WriteFileAtomically(path, "x 1\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + Reason(ENOENT));
  EXPECT_TRUE(Entries().empty());
}

TEST_F(AtomicWrite, ParentIsARegularFile) {
  // Works as root too, unlike a read-only directory.
  Put(Path("file"), "keep me\n");
  const std::string path = Path("file/out.folded");
  const Status s = WriteFileAtomically(path, "x 1\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + Reason(ENOTDIR));
  EXPECT_EQ(ReadFile(Path("file")), "keep me\n");
  EXPECT_EQ(Entries(), std::set<std::string>{"file"});
}

TEST_F(AtomicWrite, TargetIsADirectory) {
  fs::create_directory(Path("out.folded"));
  Put(Path("out.folded/inside"), "keep\n");
  const Status s = WriteFileAtomically(Path("out.folded"), "x 1\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot write " + Path("out.folded") + ": "), std::string::npos)
      << s.message();
  EXPECT_TRUE(fs::is_directory(Path("out.folded")));
  EXPECT_EQ(ReadFile(Path("out.folded/inside")), "keep\n");
  EXPECT_EQ(Entries(), std::set<std::string>{"out.folded"}) << "temporary file left behind";

  const Status slash = WriteFileAtomically(dir_.string() + "/", "x 1\n");
  EXPECT_FALSE(slash.ok());
  EXPECT_NE(slash.message().find(Reason(EISDIR)), std::string::npos) << slash.message();
}

// Restores the file size limit and SIGXFSZ disposition it changed.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_limit_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);  // so write() fails with EFBIG instead
    rlimit limit = old_limit_;
    limit.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &limit) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_limit_);
    signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit old_limit_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

TEST_F(AtomicWrite, FailedWriteKeepsTheOldFileAndRemovesTheTemporary) {
  // A write that fails half-way (disk full, quota, file size limit) after the temporary file
  // was created. RLIMIT_FSIZE binds root as well.
  const std::string path = Path("perf.log");
  Put(path, "old 1\n");
  Status s;
  {
    FileSizeLimit limit(4096);
    ASSERT_TRUE(limit.ok());
    s = WriteFileAtomically(path, std::string(100000, 'x'));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + Reason(EFBIG));
  EXPECT_EQ(ReadFile(path), "old 1\n");
  EXPECT_EQ(Entries(), std::set<std::string>{"perf.log"}) << "temporary file left behind";
}

TEST_F(AtomicWrite, RelativePath) {
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_);
  const Status s = WriteFileAtomically("rel.folded", "r 1\n");
  fs::current_path(old_cwd);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(Path("rel.folded")), "r 1\n");
  EXPECT_EQ(Entries(), std::set<std::string>{"rel.folded"});
}

TEST_F(AtomicWrite, NameNearTheLengthLimit) {
  // The temporary name must not exceed NAME_MAX when the final name does not.
  const std::string name = std::string(248, 'n') + ".folded";  // 255 characters
  const Status s = WriteFileAtomically(Path(name), "n 1\n");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Entries(), std::set<std::string>{name});
}

TEST_F(AtomicWrite, EmptyPath) {
  const Status s = WriteFileAtomically("", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(s.message().empty());
}

TEST_F(AtomicWrite, ProfileFileInEachFormat) {
  const Profile profile = GoldenProfile();
  ExportOptions options;
  options.event = 1;
  options.folded_lines = true;
  ASSERT_TRUE(WriteProfileFile(profile, Format::kFolded, Path("a.folded"), options).ok());
  ASSERT_TRUE(WriteProfileFile(profile, Format::kPerfLog, Path("perf.log"), options).ok());
  std::ostringstream folded;
  std::ostringstream perf_log;
  WriteFolded(profile, options, folded);
  WritePerfLog(profile, options, perf_log);
  EXPECT_EQ(ReadFile(Path("a.folded")), folded.str());
  EXPECT_EQ(ReadFile(Path("perf.log")), perf_log.str());
  EXPECT_NE(folded.str(), "");
}

TEST_F(AtomicWrite, ProfileFileWithUnknownEvent) {
  ExportOptions options;
  options.event = 2;
  const std::string path = Path("out.folded");
  const Status s = WriteProfileFile(GoldenProfile(), Format::kFolded, path, options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("event #2"), std::string::npos) << s.message();
  EXPECT_TRUE(Entries().empty());
}

TEST_F(AtomicWrite, ProfileFileErrorNamesThePath) {
  const std::string path = Path("missing/perf.log");
  const Status s = WriteProfileFile(GoldenProfile(), Format::kPerfLog, path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + Reason(ENOENT));
}

// A mode given is the file's exact permission bits: the umask neither narrows nor widens it.
// Without one, a new file gets 0666 less the umask, as any program's would.
TEST_F(AtomicWrite, ModeIsExactWhateverTheUmask) {
  struct Case {
    mode_t umask;
    int mode;
    mode_t expected;
  };
  const mode_t saved = umask(0);
  for (const Case& c : {Case{022, 0600, 0600}, Case{0, 0600, 0600}, Case{077, 0640, 0640},
                        Case{0, 0644, 0644}, Case{022, -1, 0644}, Case{077, -1, 0600}}) {
    umask(c.umask);
    const std::string path = Path("out.folded");
    const Status s = WriteFileAtomically(path, "a 1\n", true, false, c.mode);
    umask(0);
    ASSERT_TRUE(s.ok()) << s.message();
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, c.expected)
        << "umask " << std::oct << c.umask << ", mode " << c.mode;
    EXPECT_EQ(Entries(), std::set<std::string>{"out.folded"});
    fs::remove(path);
  }
  umask(saved);
}

TEST_F(AtomicWrite, ProfileFileTakesTheModeOfItsOptions) {
  const mode_t saved = umask(022);
  ExportOptions options;
  options.mode = 0640;
  for (Format format : {Format::kFolded, Format::kPerfLog, Format::kAnnotationJson, Format::kPprof,
                        Format::kFlameSvg}) {
    const std::string path = Path("out");
    ASSERT_TRUE(WriteProfileFile(GoldenProfile(), format, path, options).ok());
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u) << static_cast<int>(format);
    fs::remove(path);
  }
  umask(saved);
}

}  // namespace
}  // namespace inprof::test
