// The base's number parsing and message escaping, which every reader and parser shares.
#include "inprof/numbers.h"
#include "inprof/printable.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace inprof {
namespace {

TEST(ParseUnsignedTest, TheWholeTextOrNothing) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseUnsigned("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(ParseUnsigned("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseUnsigned("18446744073709551616", &v));  // overflow
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1x", "0x10", "1.0"}) {
    EXPECT_FALSE(ParseUnsigned(bad, &v)) << bad;
  }
  uint32_t small = 0;
  EXPECT_TRUE(ParseUnsigned("4294967295", &small));
  EXPECT_FALSE(ParseUnsigned("4294967296", &small));
  EXPECT_TRUE(ParseUnsigned("7fffFFFF", &small, 16));
  EXPECT_EQ(small, 0x7fffffffu);
  EXPECT_FALSE(ParseUnsigned("0x7f", &small, 16));
}

TEST(PrintableTest, ControlCharactersAreAlwaysEscaped) {
  EXPECT_EQ(Printable("a\nb\x1b[2J\x7f", {}), "a\\x0ab\\x1b[2J\\x7f");
  EXPECT_EQ(Printable("tab\there", {.named_escapes = true}), "tab\\there");
  EXPECT_EQ(Printable("line\n\x01", {.named_escapes = true}), "line\\n\\x01");
  EXPECT_EQ(Printable(std::string("nul\0", 4), {}), "nul\\x00");
}

TEST(PrintableTest, BackslashAndNonAsciiOnRequest) {
  EXPECT_EQ(Printable("a\\x41", {}), "a\\x41");  // could pass for an escape
  EXPECT_EQ(Printable("a\\x41", {.escape_backslash = true}), "a\\x5cx41");
  EXPECT_EQ(Printable("caf\xc3\xa9", {}), "caf\xc3\xa9");
  EXPECT_EQ(Printable("caf\xc3\xa9", {.escape_non_ascii = true}), "caf\\xc3\\xa9");
}

TEST(PrintableTest, LongTextIsCutWithItsLength) {
  EXPECT_EQ(Printable("abcdef", {.max_bytes = 3}), "abc... (6 bytes)");
  EXPECT_EQ(Printable("abc", {.max_bytes = 3}), "abc");
  EXPECT_EQ(Printable("a\nbcdef", {.max_bytes = 2}), "a\\x0a... (7 bytes)");
}

}  // namespace
}  // namespace inprof
