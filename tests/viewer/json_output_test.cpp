// The viewer's JSON strings (viewer/src/output.cpp): names and paths from binaries are any
// bytes, and every JSON output must still parse.
#include <gtest/gtest.h>

#include <string>

#include "viewer.h"

namespace inprof::viewer {
namespace {

TEST(JsonString, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("l1\nl2\tx\x01"), "\"l1\\nl2\\tx\\u0001\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9 \xe2\x86\x92"), "\"caf\xc3\xa9 \xe2\x86\x92\"") << "UTF-8 as it is";
}

// A byte that is not UTF-8 (a Latin-1 path, a cut multibyte name) becomes U+FFFD: JSON text
// must be UTF-8, and Python's json, jq and browsers refuse it otherwise.
TEST(JsonString, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  EXPECT_EQ(JsonString("caf\xe9.c"), "\"caf\xef\xbf\xbd.c\"");
  EXPECT_EQ(JsonString("\xff"), "\"\xef\xbf\xbd\"");
  EXPECT_EQ(JsonString("ab\xe2\x82"), "\"ab\xef\xbf\xbd\xef\xbf\xbd\"") << "a cut sequence";
  EXPECT_EQ(JsonString("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"") << "an overlong '/'";
}

}  // namespace
}  // namespace inprof::viewer
