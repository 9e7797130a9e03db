#include "test_util.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

namespace inprof::test {

std::string PreloadValue() { return PreloadValueFor(INPROF_LIB_PATH); }

std::string PreloadValueFor(const std::string& library) {
  const std::string prefix = INPROF_PRELOAD_PREFIX;
  return prefix.empty() ? library : prefix + ":" + library;
}

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::vector<FoldedStack> ReadFolded(const std::string& path) {
  std::vector<FoldedStack> stacks;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  // flamegraph.pl's line pattern, /^(.*)\s+?(\d+(?:\.\d*)?)$/, checked by hand: std::regex
  // recurses once per character and overflowed the stack on a deep stack's line under
  // AddressSanitizer.
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t space = line.find_last_of(" \t");
    const std::string count = space == std::string::npos ? "" : line.substr(space + 1);
    const size_t dot = count.find('.');
    const bool digits =
        !count.empty() && std::isdigit(static_cast<unsigned char>(count[0])) &&
        count.find_first_not_of("0123456789.") == std::string::npos &&
        (dot == std::string::npos || count.find('.', dot + 1) == std::string::npos);
    if (!digits) {
      ADD_FAILURE() << path << ":" << number << ": not a folded line: " << line;
      continue;
    }
    FoldedStack stack;
    stack.count = std::stoll(count);
    std::string frames = line.substr(0, space);
    size_t start = 0;
    while (true) {
      size_t semi = frames.find(';', start);
      stack.frames.push_back(frames.substr(start, semi - start));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

}  // namespace inprof::test
