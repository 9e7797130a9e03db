// Bounded reading of the files a profile names and of profiles themselves (input_files.h):
// only regular files (a FIFO refused without waiting for a writer), the size caps, --root
// confinement through symlinks and "..", and pipes for profiles named on the command line.
#include "input_files.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

namespace inprof::viewer {
namespace {

// A fresh directory by its realpath: the tests compare confined paths with it.
std::string TempDir() {
  const std::string made = test::MakeTempDir();
  char* real = realpath(made.c_str(), nullptr);
  std::string dir = real ? real : made;
  free(real);
  return dir;
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(SourceFiles, ReadsARegularFile) {
  const std::string dir = TempDir();
  Write(dir + "/a.cpp", "int main() {}\n");
  SourceFiles files;
  std::string text;
  EXPECT_EQ(files.Read(dir + "/a.cpp", &text), SourceFiles::Outcome::kRead);
  EXPECT_EQ(text, "int main() {}\n");
}

// The open must not block: without O_NONBLOCK, opening a FIFO for reading waits until a
// writer comes, which for a path in a hostile profile is never (this test would hang).
TEST(SourceFiles, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string dir = TempDir();
  const std::string fifo = dir + "/pipe.cpp";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  SourceFiles files;
  std::string text, why;
  EXPECT_EQ(files.Read(fifo, &text, &why), SourceFiles::Outcome::kNotRegular);
  EXPECT_EQ(why, "not a regular file (a FIFO)");
  EXPECT_EQ(files.refused(SourceFiles::Outcome::kNotRegular), 1u);
}

TEST(SourceFiles, RefusesDevicesAndDirectories) {
  SourceFiles files;
  std::string text, why;
  EXPECT_EQ(files.Read("/dev/zero", &text, &why), SourceFiles::Outcome::kNotRegular);
  EXPECT_EQ(why, "not a regular file (a character device)");
  EXPECT_EQ(text, "");
  EXPECT_EQ(files.Read(TempDir(), &text, &why), SourceFiles::Outcome::kNotRegular);
  EXPECT_EQ(why, "not a regular file (a directory)");
  EXPECT_EQ(files.refused(SourceFiles::Outcome::kNotRegular), 2u);
  EXPECT_NE(files.Summary().find("2 source files were not read: not regular files (first: "
                                 "/dev/zero)"),
            std::string::npos)
      << files.Summary();
}

TEST(SourceFiles, SkipsFilesOverTheCapAndNamesIt) {
  const ScopedEnv cap("INPROF_MAX_SOURCE_BYTES", "10");
  const std::string dir = TempDir();
  Write(dir + "/ten.cpp", "0123456789");
  Write(dir + "/eleven.cpp", "0123456789a");
  SourceFiles files;
  std::string text, why;
  EXPECT_EQ(files.Read(dir + "/ten.cpp", &text, &why), SourceFiles::Outcome::kRead);
  EXPECT_EQ(text, "0123456789");
  EXPECT_EQ(files.Read(dir + "/eleven.cpp", &text, &why), SourceFiles::Outcome::kTooLarge);
  EXPECT_EQ(why, "larger than the 10 bytes source file limit (INPROF_MAX_SOURCE_BYTES)");
  EXPECT_EQ(text, "");
}

TEST(SourceFiles, RootConfinesThroughSymlinksAndDotDot) {
  const std::string dir = TempDir();
  ASSERT_EQ(mkdir((dir + "/root").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir + "/root/src").c_str(), 0700), 0);
  Write(dir + "/root/src/a.cpp", "inside\n");
  Write(dir + "/secret", "outside\n");
  ASSERT_EQ(symlink((dir + "/secret").c_str(), (dir + "/root/src/link.cpp").c_str()), 0);
  ASSERT_EQ(symlink((dir + "/root/src/a.cpp").c_str(), (dir + "/root/alias.cpp").c_str()), 0);
  // A sibling whose name starts with the root's: not inside it.
  ASSERT_EQ(mkdir((dir + "/root2").c_str(), 0700), 0);
  Write(dir + "/root2/b.cpp", "sibling\n");

  SourceFiles files(dir + "/root");
  ASSERT_EQ(files.error(), "");
  std::string text, why;
  EXPECT_EQ(files.Read(dir + "/root/src/a.cpp", &text), SourceFiles::Outcome::kRead);
  EXPECT_EQ(text, "inside\n");
  EXPECT_EQ(files.Read("src/a.cpp", &text), SourceFiles::Outcome::kRead) << "relative to root";
  EXPECT_EQ(files.Read(dir + "/root/alias.cpp", &text), SourceFiles::Outcome::kRead);
  EXPECT_EQ(text, "inside\n");
  for (const std::string& path :
       {dir + "/secret", dir + "/root/src/link.cpp", std::string("../secret"),
        std::string("src/../../secret"), dir + "/root2/b.cpp"}) {
    EXPECT_EQ(files.Read(path, &text, &why), SourceFiles::Outcome::kOutsideRoot) << path;
    EXPECT_EQ(text, "") << path;
    EXPECT_EQ(why, "outside --root " + dir + "/root") << path;
  }
  EXPECT_EQ(files.refused(SourceFiles::Outcome::kOutsideRoot), 5u);
  EXPECT_EQ(files.Summary(), "inprof: 5 source files were not read: outside --root " + dir +
                                 "/root (first: " + dir + "/secret)\n");
  EXPECT_EQ(files.Read(dir + "/root/missing.cpp", &text), SourceFiles::Outcome::kMissing);
}

TEST(SourceFiles, ARootThatIsNotADirectoryIsAnError) {
  EXPECT_NE(SourceFiles("/nonexistent/inprof").error(), "");
  EXPECT_EQ(SourceFiles("/dev/null").error(), "--root /dev/null: not a directory");
}

TEST(ProfileFile, RefusesDevicesDirectoriesAndUnnamedPipes) {
  ProfileFile zero;
  Status s = zero.Load("/dev/zero");
  EXPECT_EQ(s.message(), "cannot read /dev/zero: it is a character device, not a file or a pipe");
  const std::string dir = TempDir();
  ProfileFile directory;
  EXPECT_EQ(directory.Load(dir).message(),
            "cannot read " + dir + ": it is a directory, not a file or a pipe");
  // A FIFO that nobody named (found by listing a directory) is refused, not waited on.
  ASSERT_EQ(mkfifo((dir + "/p.inprofraw").c_str(), 0600), 0);
  ProfileFile listed;
  EXPECT_EQ(listed.Load(dir + "/p.inprofraw", /*pipes=*/false).message(),
            "cannot read " + dir + "/p.inprofraw: it is a FIFO, not a regular file");
}

// A named FIFO on the command line is read as a pipe is: its writer may come after the open,
// or come and go before the first read (the writer here races the reader both ways).
TEST(ProfileFile, ReadsANamedFifoWhoseWriterComesLater) {
  const std::string dir = TempDir();
  const std::string fifo = dir + "/profile.folded";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    FILE* f = std::fopen(fifo.c_str(), "w");  // blocks until the reader has it open
    std::fputs("main;work 3\n", f);
    std::fclose(f);
  });
  ProfileFile file;
  const Status s = file.Load(fifo);
  writer.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file.text(), "main;work 3\n");
}

TEST(ProfileFile, APipeIsReadUpToTheCap) {
  const ScopedEnv cap("INPROF_MAX_PROFILE_BYTES", "100");
  signal(SIGPIPE, SIG_IGN);  // the writer may outlive the reader's interest
  const std::string dir = TempDir();
  const std::string fifo = dir + "/big.folded";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    FILE* f = std::fopen(fifo.c_str(), "w");
    for (int i = 0; i < 1000; ++i) std::fputs("main;work 1\n", f);  // 12,000 bytes
    std::fclose(f);
  });
  ProfileFile file;
  const Status s = file.Load(fifo);
  writer.join();
  EXPECT_EQ(s.message(), "cannot read " + fifo +
                             ": it gives more than the 100 bytes a profile may have "
                             "(INPROF_MAX_PROFILE_BYTES raises it)");
  Write(dir + "/small.folded", "main 1\n");
  Write(dir + "/large.folded", std::string(101, 'x'));
  ProfileFile small, large;
  EXPECT_TRUE(small.Load(dir + "/small.folded").ok());
  EXPECT_EQ(small.text(), "main 1\n");
  EXPECT_EQ(large.Load(dir + "/large.folded").message(),
            "cannot read " + dir +
                "/large.folded: it is larger than the 100 bytes a profile may have "
                "(INPROF_MAX_PROFILE_BYTES raises it)");
}

}  // namespace
}  // namespace inprof::viewer
