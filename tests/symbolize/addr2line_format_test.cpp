// `inprof addr2line` prints exactly what binutils addr2line 2.40 prints, byte for byte, for
// every combination of options perf and people use, on the addresses where binutils is
// right (where it agrees with llvm-symbolizer: see docs/symbolizer.md for where it is not).
// Also: section-relative addresses, command-line addresses, odd input lines, answers
// flushed per line on a pipe, and errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "addr2line_cli_targets.h"
#include "symbolizer_outputs.h"
#include "test_util.h"

namespace inprof_test {
namespace {

constexpr size_t kAddresses = 1500;

std::string Output(const std::string& command, int* status = nullptr) {
  bool ok = false;
  int exit_status = -1;
  std::string output = RunCommand(command, &ok, &exit_status);
  EXPECT_TRUE(ok) << command;
  if (status != nullptr) *status = exit_status;
  return output;
}

// The first line where two outputs differ, for a readable failure.
std::string FirstDifference(const std::string& expected, const std::string& actual) {
  size_t line = 1;
  size_t begin = 0;
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    if (expected[i] != actual[i]) {
      const size_t end_e = expected.find('\n', i);
      const size_t end_a = actual.find('\n', i);
      return "line " + std::to_string(line) +
             ":\n  binutils: " + expected.substr(begin, end_e - begin) +
             "\n  inprof:   " + actual.substr(begin, end_a - begin);
    }
    if (expected[i] == '\n') {
      ++line;
      begin = i + 1;
    }
  }
  return "one output is a prefix of the other (" + std::to_string(expected.size()) + " vs " +
         std::to_string(actual.size()) + " bytes)";
}

class FormatTest : public testing::TestWithParam<CliTarget> {
 protected:
  void SetUp() override {
    const CliTarget& target = GetParam();
    if (!target.skip_reason.empty()) GTEST_SKIP() << target.skip_reason;
    if (!HaveProgram("addr2line")) GTEST_SKIP() << "binutils addr2line not installed";
    if (!HaveProgram("llvm-symbolizer-14")) GTEST_SKIP() << "llvm-symbolizer-14 not installed";
    ASSERT_FALSE(InprofPath().empty());
    file_ = " -e '" + target.path + "'";

    // The addresses where binutils is right, by llvm-symbolizer's independent reading.
    const std::vector<uint64_t> random = RandomCodeAddresses(target.path, kAddresses, 7);
    const std::string all = WriteAddressFile(random);
    const auto binutils =
        ParseAnswers(Output("addr2line -a -f -i -C" + file_ + " < " + all), false);
    const auto llvm = ParseAnswers(Output("llvm-symbolizer-14 --obj='" + target.path +
                                          "' --addresses --functions=linkage --inlines "
                                          "--demangle < " +
                                          all),
                                   true);
    std::remove(all.c_str());
    ASSERT_EQ(binutils.size(), kAddresses);
    ASSERT_EQ(llvm.size(), kAddresses);
    SymbolAliases aliases;
    aliases.Load(target.path);
    if (!target.debug_path.empty()) aliases.Load(target.debug_path);
    for (size_t i = 0; i < kAddresses; ++i) {
      // Full file names too: binutils 2.40 names the compile unit's main file for rows
      // before the first file change of a line sequence, often with the same basename.
      if (SameSummary(binutils[i], llvm[i], aliases) && SameFiles(binutils[i], llvm[i])) {
        agreeing_.push_back(random[i]);
      }
    }
    // Most addresses qualify, or the exact comparison below would prove little.
    ASSERT_GE(agreeing_.size(), kAddresses * (target.min_agreement_percent - 5) / 100);
    // Repeats matter: bfd names some functions differently on a second lookup.
    std::vector<uint64_t> with_repeats = agreeing_;
    for (size_t i = 0; i < agreeing_.size(); i += 5) with_repeats.push_back(agreeing_[i]);
    input_ = WriteAddressFile(with_repeats);
  }

  void TearDown() override {
    if (!input_.empty()) std::remove(input_.c_str());
  }

  void ExpectSameOutput(const std::string& options, const std::string& input_redirect) {
    const std::string expected = Output("addr2line " + options + file_ + input_redirect);
    const std::string actual =
        Output(InprofPath() + " addr2line " + options + file_ + input_redirect);
    EXPECT_FALSE(expected.empty());
    EXPECT_TRUE(expected == actual)
        << "options '" << options << "' differ at " << FirstDifference(expected, actual);
  }

  std::string file_;
  std::string input_;
  std::vector<uint64_t> agreeing_;
};

TEST_P(FormatTest, SameBytesAsBinutilsForEachOptionSet) {
  for (const char* options :
       {"-a -f -i", "-i -f", "-f -i -C -p", "-a -f -C -s", "-i", "", "-a -p -i -f -C -s", "-fiCa",
        "--functions --inlines --demangle --addresses --pretty-print --basenames"}) {
    ExpectSameOutput(options, " < " + input_);
  }
}

TEST_P(FormatTest, AddressesOnTheCommandLine) {
  std::string arguments;
  for (size_t i = 0; i < agreeing_.size() && i < 200; ++i) {
    char text[32];
    std::snprintf(text, sizeof text, " %llx", static_cast<unsigned long long>(agreeing_[i]));
    arguments += text;
  }
  ExpectSameOutput("-a -f -i -C", arguments);
  ExpectSameOutput("-p -f -i", arguments);
}

TEST_P(FormatTest, UnknownAndOddInput) {
  // Not a number, outside every section, "0x"/"0X" prefixes, signs, spaces, perf's ","
  // sentinel, an empty line, trailing junk, overflow, symbol names with and without an
  // offset, an over-long line (read in 99-byte pieces), and a missing final newline.
  char name[] = "/tmp/inprof-odd-input-XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  const std::string odd =
      std::string(",\nzzz\n0\n0xffffffffffff\n0X10\n+0x10\n+10\n-10\n 0x20\n0x\n\n") +
      "0x1g\n123456789abcdef012\nmain\nmain+0x10\nmain+10\n" + std::string(150, '0') + "1\n10";
  ASSERT_EQ(write(fd, odd.data(), odd.size()), static_cast<ssize_t>(odd.size()));
  close(fd);
  for (const char* options : {"-a -f -i", "-f -i -p", "-i", "-a -p"}) {
    ExpectSameOutput(options, std::string(" < ") + name);
  }
  std::remove(name);
}

TEST_P(FormatTest, SectionRelativeAddresses) {
  // -j .text: offsets from the start of .text, and offsets past its end (not found).
  std::string arguments;
  for (unsigned long long offset : {0ULL, 0x10ULL, 0x123ULL, 0x777ULL, 0x1000ULL, 0xfffffffULL}) {
    arguments += " " + std::to_string(offset);
  }
  ExpectSameOutput("-a -f -i -j .text", arguments);
}

INSTANTIATE_TEST_SUITE_P(Binaries, FormatTest, testing::ValuesIn(CliTargets()),
                         [](const testing::TestParamInfo<CliTarget>& info) {
                           return info.param.name;
                         });

// perf keeps one addr2line process per binary and writes an address, then waits for the
// answer: each answer must arrive without more input or the end of input.
TEST(Addr2lineCli, AnswersEachLineBeforeReadingTheNext) {
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const std::string inprof = InprofPath();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    execl(inprof.c_str(), "inprof", "addr2line", "-e", INPROF_INLINE_HEAVY_FIXTURE_PATH, "-f", "-i",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  for (int round = 0; round < 3; ++round) {
    // "," resolves to nothing: exactly "??\n??:0\n" comes back (perf's sentinel).
    ASSERT_EQ(write(to_child[1], ",\n", 2), 2);
    std::string answer;
    while (answer.size() < 8) {
      pollfd fds{from_child[0], POLLIN, 0};
      ASSERT_EQ(poll(&fds, 1, 20000), 1) << "no answer within 20 s; got '" << answer << "'";
      char buffer[64];
      const ssize_t n = read(from_child[0], buffer, sizeof buffer);
      ASSERT_GT(n, 0);
      answer.append(buffer, static_cast<size_t>(n));
    }
    EXPECT_EQ(answer, "??\n??:0\n");
  }
  close(to_child[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(from_child[0]);
}

TEST(Addr2lineCli, MissingFileAndSectionAreErrors) {
  int status = 0;
  const std::string missing =
      Output(InprofPath() + " addr2line -e /nonexistent/file 0x10 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(missing.find("/nonexistent/file"), std::string::npos) << missing;
  const std::string section = Output(
      InprofPath() + " addr2line -e " INPROF_INLINE_HEAVY_FIXTURE_PATH " -j .nosuch 0x10 2>&1",
      &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(section.find(".nosuch"), std::string::npos) << section;
  const std::string not_elf =
      Output(InprofPath() + " addr2line -e " + INPROF_SOURCE_FILE + " 0x10 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(not_elf.find("file format not recognized"), std::string::npos) << not_elf;
}

// Run as `addr2line` through a link of that name, as perf finds it on PATH.
TEST(Addr2lineCli, RunsUnderTheNameAddr2line) {
  char dir[] = "/tmp/inprof-addr2line-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string link = std::string(dir) + "/addr2line";
  ASSERT_EQ(symlink(InprofPath().c_str(), link.c_str()), 0);
  int status = 0;
  const std::string output =
      Output(link + " -e " INPROF_INLINE_HEAVY_FIXTURE_PATH " -f ,", &status);
  unlink(link.c_str());
  rmdir(dir);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(output, "??\n??:0\n");
}

}  // namespace
}  // namespace inprof_test

namespace inprof_test {
namespace {

// perf 6.1 itself, driving `addr2line` from PATH for `perf script -F +srcline`: with an
// `addr2line` first on PATH that runs `inprof addr2line` (and logs each start), perf uses it
// and prints the same source lines as with binutils, except where binutils names the wrong
// file (class 1 in docs/symbolizer.md). Skipped without perf or perf_event permission.
TEST(Addr2lineCli, PerfScriptSrclineWithInprofFirstOnPath) {
  if (!HaveProgram("perf")) GTEST_SKIP() << "perf not installed";
  char dir_template[] = "/tmp/inprof-perf-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string data = dir + "/perf.data";
  bool ok = false;
  int status = -1;
  RunCommand("perf record -q -N -F 4999 -g -o " + data +
                 " -- sh -c 'for i in 1 2 3 4 5 6 7 8; do " + INPROF_INLINE_HEAVY_FIXTURE_PATH +
                 "; done' >/dev/null 2>&1",
             &ok, &status);
  if (!ok || status != 0) {
    RunCommand("rm -rf " + dir, &ok);
    GTEST_SKIP() << "perf record is not permitted here";
  }
  // A wrapper named addr2line that records that perf ran it, then becomes inprof.
  const std::string bin = dir + "/bin";
  const std::string wrapper = bin + "/addr2line";
  RunCommand("mkdir -p " + bin + " && printf '#!/bin/sh\\necho run >> " + dir + "/runs\\nexec " +
                 InprofPath() + " addr2line \"$@\"\\n' > " + wrapper + " && chmod +x " + wrapper,
             &ok);
  const std::string script = "perf script -F ip,sym,srcline -i " + data + " 2>/dev/null";
  const std::string reference = RunCommand(script, &ok);
  const std::string ours = RunCommand("PATH=" + bin + ":$PATH " + script, &ok, &status);
  const std::string runs = RunCommand("cat " + dir + "/runs 2>/dev/null", &ok);
  RunCommand("rm -rf " + dir, &ok);
  EXPECT_EQ(status, 0);
  EXPECT_NE(runs.find("run"), std::string::npos) << "perf did not run the addr2line on PATH";

  std::istringstream a(reference);
  std::istringstream b(ours);
  std::string x;
  std::string y;
  size_t lines = 0;
  size_t same = 0;
  size_t srclines = 0;
  while (std::getline(a, x)) {
    ASSERT_TRUE(std::getline(b, y)) << "inprof's run printed fewer lines";
    ++lines;
    if (x == y) ++same;
    if (y.find(".cpp:") != std::string::npos || y.find(".h:") != std::string::npos) ++srclines;
  }
  EXPECT_FALSE(std::getline(b, y)) << "inprof's run printed more lines";
  ASSERT_GT(lines, 20u);
  EXPECT_GT(srclines, 5u) << ours;
  EXPECT_GE(same * 100, lines * 95) << same << " of " << lines << " lines identical";
}

}  // namespace
}  // namespace inprof_test
