// Synthetic source for the code-search tests (net/util.cpp: send_all at lines 5-6).
#include "util.h"

size_t send_all(const std::vector<std::string>& lines) {
  std::string header = std::to_string(lines.size());
  return write_all(header, lines);
}
