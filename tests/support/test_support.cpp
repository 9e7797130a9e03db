#include "test_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace inprof::test {

std::string SourceDir() {
  if (const char* dir = std::getenv("INPROF_SOURCE_DIR"); dir && *dir) return dir;
  return INPROF_TEST_SOURCE_DIR;
}

std::string Data(const std::string& relative) { return SourceDir() + "/tests/data/" + relative; }

std::string Portable(std::string text) {
  const std::string dir = SourceDir();
  for (size_t at; (at = text.find(dir)) != std::string::npos;) text.replace(at, dir.size(), "<src>");
  return text;
}

bool Blessing() {
  const char* bless = std::getenv("INPROF_BLESS");
  return bless && std::string(bless) == "1";
}

void CheckGolden(const std::string& relative, const std::string& actual) {
  const std::string path = SourceDir() + "/tests/data/" + relative;
  if (Blessing()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with INPROF_BLESS=1 to create it)";
  std::ostringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "output differs from " << path
                                    << " (INPROF_BLESS=1 rewrites it if the change is intended)";
}

}  // namespace inprof::test
