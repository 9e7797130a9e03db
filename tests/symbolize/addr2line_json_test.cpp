// `inprof symbolize` prints, per address, one JSON line with the same frames `inprof
// addr2line -a -f -i -C` prints (function demangled, file as DWARF names it, line), plus
// the mangled name, column, discriminator and inline flags.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "symbolizer_outputs.h"
#include "test_util.h"

namespace inprof_test {
namespace {

TEST(SymbolizeCli, JsonLinesMatchAddr2lineFrames) {
  std::vector<uint64_t> addresses = RandomCodeAddresses(INPROF_INLINE_HEAVY_FIXTURE_PATH, 300, 11);
  addresses.push_back(0);  // in no section: found false, no frames
  const std::string input = WriteAddressFile(addresses);
  bool ok = false;
  int status = -1;
  const std::string file = std::string(" -e ") + INPROF_INLINE_HEAVY_FIXTURE_PATH + " < " + input;
  const std::string json = RunCommand(InprofPath() + " symbolize" + file, &ok, &status);
  ASSERT_TRUE(ok && status == 0);
  const auto text =
      ParseAnswers(RunCommand(InprofPath() + " addr2line -a -f -i -C" + file, &ok), false);
  std::remove(input.c_str());
  ASSERT_EQ(text.size(), addresses.size());

  const std::regex line_re(
      R"re(^\{"address":"0x([0-9a-f]+)","found":(true|false),"frames":\[(.*)\]\}$)re");
  const std::regex frame_re(
      R"re(\{"function":(null|"([^"]*)"),"mangled":(null|"[^"]*"),"file":(null|"([^"]*)"),"line":(\d+),"column":(\d+),"discriminator":(\d+),"inlined":(true|false)\})re");
  std::istringstream lines(json);
  std::string line;
  size_t index = 0;
  size_t inlined_frames = 0;
  while (std::getline(lines, line)) {
    ASSERT_LT(index, addresses.size());
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, line_re)) << line;
    EXPECT_EQ(std::stoull(match[1].str(), nullptr, 16), addresses[index]);
    const ToolAnswer& expected = text[index];
    const std::string frames = match[3].str();
    size_t count = 0;
    for (auto it = std::sregex_iterator(frames.begin(), frames.end(), frame_re);
         it != std::sregex_iterator(); ++it, ++count) {
      ASSERT_LT(count, expected.frames.size()) << line;
      const ToolFrame& frame = expected.frames[count];
      const std::smatch& f = *it;
      EXPECT_EQ(f[1].str() == "null" ? "??" : f[2].str(), frame.function) << line;
      EXPECT_EQ(f[4].str() == "null" ? "??" : f[5].str(), frame.file) << line;
      EXPECT_EQ(std::stoul(f[6].str()), frame.line) << line;
      // Every frame but the outermost is inlined.
      EXPECT_EQ(f[9].str() == "true", count + 1 < expected.frames.size()) << line;
      if (f[9].str() == "true") ++inlined_frames;
    }
    if (match[2].str() == "true") {
      EXPECT_EQ(count, expected.frames.size()) << line;
    } else {
      EXPECT_EQ(count, 0u) << line;
      EXPECT_TRUE(expected.frames.empty() || expected.frames[0].function == "??") << line;
    }
    ++index;
  }
  EXPECT_EQ(index, addresses.size());
  EXPECT_GT(inlined_frames, addresses.size() / 2);  // the fixture is inline-heavy
}

}  // namespace
}  // namespace inprof_test
