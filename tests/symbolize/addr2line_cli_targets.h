// The binaries `inprof addr2line` is compared on: one built by the test suite, full of
// templates and inlining at -O2 -g, and the C library this test runs with (its DWARF comes
// from Debian's libc6-dbg under /usr/lib/debug/.build-id, compressed sections included).
#ifndef INPROF_TESTS_SYMBOLIZE_ADDR2LINE_CLI_TARGETS_H_
#define INPROF_TESTS_SYMBOLIZE_ADDR2LINE_CLI_TARGETS_H_

#include <ostream>
#include <string>
#include <vector>

namespace inprof_test {

struct CliTarget {
  std::string name;  // for test names and messages
  std::string path;
  std::string debug_path;         // separate debug file, if any
  int min_agreement_percent = 0;  // with llvm-symbolizer, measured minus a margin
  std::string skip_reason;        // non-empty: the target is not usable on this machine
};

std::vector<CliTarget> CliTargets();

// For GoogleTest's messages.
inline void PrintTo(const CliTarget& target, std::ostream* out) { *out << target.name; }

}  // namespace inprof_test

#endif  // INPROF_TESTS_SYMBOLIZE_ADDR2LINE_CLI_TARGETS_H_
