// Synthetic source for the code-search tests (disk/util.cpp: flush_all at lines 5-6,
// sync_all at lines 12-13).
#include "util.h"
size_t flush_all(const std::vector<std::string>& lines) {
  std::string header = std::to_string(lines.size());
  return write_all(header, lines);
}

// A second function, so a hit at line 12 is settled by the function that covers it.

size_t sync_all(const std::vector<std::string>& lines) {
  std::string header = std::to_string(lines.size()) + ":";
  return write_all(header, lines);
}
