// libFuzzer target: the viewer's shortening of function names (names.h) on arbitrary bytes.
// Profiles carry whatever names their producer wrote, and every command that lists
// functions shortens each of them.
//
// What must hold: it returns in linear time (libFuzzer's -timeout catches a quadratic
// scan on long inputs; tests/viewer/names_test.cpp times a 1 MB name), and the short name is
// never longer than the name plus the " [clone ...]" suffixes it moves to the end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  const std::string shortened = inprof::viewer::ShortFunctionName(name);
  if (shortened.size() > 2 * name.size()) {
    std::fprintf(stderr, "names: a %zu-byte name shortened to %zu bytes\n", name.size(),
                 shortened.size());
    std::abort();
  }
  return 0;
}
