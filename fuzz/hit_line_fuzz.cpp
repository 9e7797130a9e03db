// libFuzzer target: `inprof hot`'s reading of search-tool output (ParseHitLine, StripColor)
// on arbitrary bytes. Search output quotes the searched files, so it is as untrusted as they.
//
// What must hold: a parsed hit's path is a non-empty prefix of the line followed by ':', its
// lines are 1 <= first <= last, its text offset is within the line; stripping colour never
// makes a line longer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hit_line.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "hit line: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const std::string stripped = inprof::viewer::StripColor(line);
  if (stripped.size() > line.size()) Fail("StripColor made the line longer");
  for (std::string_view text : {line, std::string_view(stripped)}) {
    inprof::viewer::HitLine hit;
    if (!inprof::viewer::ParseHitLine(text, &hit)) continue;
    if (hit.path.empty() || hit.path.data() != text.data() || hit.path.size() >= text.size() ||
        text[hit.path.size()] != ':') {
      Fail("the path is not a prefix of the line before a ':'");
    }
    if (hit.first < 1 || hit.last < hit.first) Fail("the lines are not 1 <= first <= last");
    if (hit.text > text.size()) Fail("the text offset is past the line");
  }
  return 0;
}
