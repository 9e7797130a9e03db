// Helpers shared by the test suites: where the source tree is, and golden-file checks.
//
// Golden files live under tests/data/. A check compares what the code produces now with the
// file; with INPROF_BLESS=1 in the environment it rewrites the file instead, so an intended
// change of output is one run away (review the diff before committing it).
#ifndef INPROF_TESTS_SUPPORT_TEST_SUPPORT_H_
#define INPROF_TESTS_SUPPORT_TEST_SUPPORT_H_

#include <string>

namespace inprof::test {

// The repository root: $INPROF_SOURCE_DIR (ctest sets it for every test), else the
// directory the tests were configured from, so a test binary also runs by hand.
std::string SourceDir();

// The files under tests/data/: SourceDir() + "/tests/data/" + relative.
std::string Data(const std::string& relative);

// `text` with every occurrence of the source tree's path replaced by "<src>", so goldens of
// output that names source files do not depend on where the checkout lives.
std::string Portable(std::string text);

// True when INPROF_BLESS=1: golden checks rewrite their files instead of comparing.
bool Blessing();

// Compares `actual` with the file tests/data/`relative` (a gtest failure naming the file when
// it differs or is missing), or rewrites the file when blessing.
void CheckGolden(const std::string& relative, const std::string& actual);

}  // namespace inprof::test

#endif  // INPROF_TESTS_SUPPORT_TEST_SUPPORT_H_
