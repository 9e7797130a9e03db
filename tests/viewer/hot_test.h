// Helpers shared by the code-search tests (hot_test.cpp, hot_real_profile_test.cpp).
#ifndef INPROF_TESTS_VIEWER_HOT_TEST_H_
#define INPROF_TESTS_VIEWER_HOT_TEST_H_

#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace inprof::test {

// `text` quoted for /bin/sh.
std::string ShellQuote(const std::string& text);
// Runs `command` with /bin/sh -c; the viewer is available as $INPROF.
ProcessResult Shell(const std::string& command);
// Whether `tool` is on PATH.
bool HaveTool(const std::string& tool);
// "path:line" of every output line of `inprof hot`/`grep` (path without a leading "./").
std::set<std::string> HitLocations(const std::string& output);

}  // namespace inprof::test

#endif  // INPROF_TESTS_VIEWER_HOT_TEST_H_
