// What every `inprof` command's command line shares: exit codes, one option parser driven by
// a table of option specs, one usage-error printer, and the number and FILE:LINE[-LINE]
// parsers. Not async-signal-safe (the viewer never runs in a signal handler).
#ifndef INPROF_VIEWER_CLI_H_
#define INPROF_VIEWER_CLI_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/status.h"

namespace inprof::viewer {

// Exit codes of every command (grep's convention): 0 success, 1 bad or unreadable input (or,
// for the search commands, nothing found), 2 bad usage.
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

// One option: its spellings, what its value is (nullptr for a flag), and where it goes.
// `set` returns false when the value is not acceptable; the error then reads
// "NAME needs VALUE, not 'TEXT'".
struct OptionSpec {
  std::vector<std::string> names;               // {"-n"} or {"-e", "--event"}
  const char* value = nullptr;                  // "a positive number"; nullptr: a flag
  std::function<bool(const std::string&)> set;  // stores the value (flags get "")
  bool optional_value = false;  // only as --name=VALUE; plain --name sets "" (--color)
};

// Option specs for the common cases.
OptionSpec Flag(std::vector<std::string> names, bool* target);
OptionSpec Text(std::vector<std::string> names, const char* value, std::string* target);
// A whole number in [min, max].
OptionSpec Count(std::vector<std::string> names, const char* value, size_t* target, size_t min,
                 size_t max);

// Parses `args` from `first` on: options by `specs` (also as --name=value), "--" ends the
// options, everything else is positional. -h/--help sets *help. kInvalidArgument with what
// a user reads ("unknown option '--x' for top", "-n needs a positive number").
Status ParseOptions(std::string_view command, const std::vector<std::string>& args, size_t first,
                    const std::vector<OptionSpec>& specs, std::vector<std::string>* positional,
                    bool* help);

// Prints "inprof: MESSAGE" and where help is on stderr; returns kExitUsage.
int UsageError(std::string_view command, const std::string& message);

// Digits only, at most 9 of them.
bool ParseCount(std::string_view text, size_t* value);
// A decimal number, all of `text` (strtod syntax).
bool ParseDecimal(std::string_view text, double* value);
// A time since a profile's start: seconds ("1.5"), or with a unit ("1.5s", "300ms", "250us",
// "100ns"); at most 999,999,999 s. In nanoseconds, exactly: decimal digits are read as
// digits, not through a binary fraction (1.3 is 1,300,000,000 ns, not one less), so a range
// printed and read back selects the same samples. Digits below a nanosecond are dropped.
bool ParseTime(std::string_view text, int64_t* ns);
// `ns` as seconds with as many decimals as it needs, no more: "1.3", "0.02", "12".
std::string FormatSeconds(int64_t ns);

// "FILE:LINE" or "FILE:FIRST-LAST" (FILE may hold ':' but not end in one; lines from 1,
// FIRST <= LAST).
struct SourceRange {
  std::string file;
  uint32_t first = 0;
  uint32_t last = 0;
};
bool ParseSourceRange(std::string_view text, SourceRange* range);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_CLI_H_
