// Every field of a Symbolizer answer as text, one frame a line: answers compared this way
// show what differs when they do.
#ifndef INPROF_TESTS_SYMBOLIZE_FRAMES_TEXT_H_
#define INPROF_TESTS_SYMBOLIZE_FRAMES_TEXT_H_

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "inprof/symbolize.h"

namespace inprof_test {

inline std::string FramesText(const std::vector<inprof::SymbolizedFrame>& frames) {
  std::string out;
  for (const inprof::SymbolizedFrame& f : frames) {
    char offset[32];
    std::snprintf(offset, sizeof offset, "+0x%" PRIx64, f.module_offset);
    out += f.function + " at " + f.file + ":" + std::to_string(f.line) + ":" +
           std::to_string(f.column) + (f.inlined ? " (inlined)" : "") + " in " + f.module + offset +
           "\n";
  }
  return out;
}

}  // namespace inprof_test

#endif  // INPROF_TESTS_SYMBOLIZE_FRAMES_TEXT_H_
