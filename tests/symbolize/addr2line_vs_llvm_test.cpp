// Differential test of `inprof addr2line -a -f -i -C` against llvm-symbolizer, with
// binutils addr2line measured the same way: on random addresses of an inline-heavy C++
// binary and of the C library, the basename:line of every inline level and the outermost
// function must agree with llvm-symbolizer at least as often as binutils agrees with it.
// The classes of disagreement, who is right and why, are in docs/symbolizer.md; this test
// prints a sample of each so a new class is seen.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "addr2line_cli_targets.h"
#include "symbolizer_outputs.h"
#include "test_util.h"

namespace inprof_test {
namespace {

constexpr size_t kAddresses = 3000;

std::vector<ToolAnswer> RunTool(const std::string& command, const std::string& input,
                                bool llvm_style) {
  bool ok = false;
  int status = -1;
  const std::string output = RunCommand(command + " < " + input, &ok, &status);
  EXPECT_TRUE(ok && status == 0) << command << " failed (status " << status << ")";
  return ParseAnswers(output, llvm_style);
}

class VsLlvmTest : public testing::TestWithParam<CliTarget> {};

TEST_P(VsLlvmTest, AgreesWithLlvmSymbolizerAtLeastAsOftenAsBinutils) {
  const CliTarget& target = GetParam();
  if (!target.skip_reason.empty()) GTEST_SKIP() << target.skip_reason;
  if (!HaveProgram("llvm-symbolizer-14")) GTEST_SKIP() << "llvm-symbolizer-14 not installed";
  if (!HaveProgram("addr2line")) GTEST_SKIP() << "binutils addr2line not installed";
  ASSERT_FALSE(InprofPath().empty());

  const std::vector<uint64_t> addresses = RandomCodeAddresses(target.path, kAddresses, 42);
  ASSERT_EQ(addresses.size(), kAddresses);
  const std::string input = WriteAddressFile(addresses);
  const std::string file = " -e '" + target.path + "'";
  const auto ours = RunTool(InprofPath() + " addr2line -a -f -i -C" + file, input, false);
  const auto binutils = RunTool("addr2line -a -f -i -C" + file, input, false);
  const auto llvm = RunTool("llvm-symbolizer-14 --obj='" + target.path +
                                "' --addresses --functions=linkage --inlines --demangle",
                            input, true);
  std::remove(input.c_str());
  ASSERT_EQ(ours.size(), kAddresses);
  ASSERT_EQ(binutils.size(), kAddresses);
  ASSERT_EQ(llvm.size(), kAddresses);

  SymbolAliases aliases;
  aliases.Load(target.path);
  if (!target.debug_path.empty()) aliases.Load(target.debug_path);
  size_t ours_agree = 0;
  size_t binutils_agree = 0;
  std::map<std::string, std::vector<std::string>> samples;  // kind -> examples
  for (size_t i = 0; i < kAddresses; ++i) {
    ASSERT_EQ(ours[i].address, addresses[i]);
    ASSERT_EQ(llvm[i].address, addresses[i]);
    const std::string reference = Summary(llvm[i]);
    const std::string mine = Summary(ours[i]);
    const bool agree = SameSummary(ours[i], llvm[i], aliases);
    if (agree) ++ours_agree;
    if (SameSummary(binutils[i], llvm[i], aliases)) ++binutils_agree;
    if (!agree) {
      const std::string kind = ours[i].frames.size() != llvm[i].frames.size()
                                   ? "inline chain length"
                                   : (ours[i].frames.empty() ? "unknown" : "file:line or function");
      auto& list = samples[kind];
      if (list.size() < 3) list.push_back("ours: " + mine + "\n    llvm: " + reference);
    }
  }
  for (const auto& [kind, list] : samples) {
    for (const std::string& sample : list)
      std::printf("[%s] %s\n    %s\n", target.name.c_str(), kind.c_str(), sample.c_str());
  }
  std::printf(
      "[%s] agreement with llvm-symbolizer-14 on %zu addresses: inprof %.2f%%, binutils %.2f%%\n",
      target.name.c_str(), kAddresses, 100.0 * ours_agree / kAddresses,
      100.0 * binutils_agree / kAddresses);
  EXPECT_GE(ours_agree, binutils_agree);
  // A regression in the line or scope lookup shows up as a drop of whole percents below
  // what was measured (docs/symbolizer.md): 98.9% on inline_heavy; on libc ~96%, where
  // llvm-symbolizer names no function for code that only the symbol table covers.
  EXPECT_GE(ours_agree, kAddresses * target.min_agreement_percent / 100);
}

INSTANTIATE_TEST_SUITE_P(Binaries, VsLlvmTest, testing::ValuesIn(CliTargets()),
                         [](const testing::TestParamInfo<CliTarget>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace inprof_test
