#include "addr2line_cli_targets.h"

#include <gnu/libc-version.h>
#include <unistd.h>

#include <cstdio>

#include "test_util.h"

namespace inprof_test {
namespace {

// The GNU build-id of `path` as hex, from `readelf -n` (independent of the code under test).
std::string BuildId(const std::string& path) {
  bool ok = false;
  const std::string notes = RunCommand("LC_ALL=C readelf -n '" + path + "' 2>/dev/null", &ok);
  const size_t at = notes.find("Build ID: ");
  if (!ok || at == std::string::npos) return {};
  const size_t begin = at + 10;
  const size_t end = notes.find_first_not_of("0123456789abcdef", begin);
  return notes.substr(begin, end - begin);
}

}  // namespace

std::vector<CliTarget> CliTargets() {
  std::vector<CliTarget> targets;
  targets.push_back({"inline_heavy", INPROF_INLINE_HEAVY_FIXTURE_PATH, "", 97, ""});

  // A libc function that sanitizer runtimes do not intercept (they do puts, malloc, ...).
  CliTarget libc{"libc",
                 RealPath(ObjectContaining(reinterpret_cast<uint64_t>(&gnu_get_libc_version)).name),
                 "", 93, ""};
  const std::string id = BuildId(libc.path);
  const std::string debug =
      id.size() > 2 ? "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"
                    : "";
  if (libc.path.empty()) {
    libc.skip_reason = "the C library's file was not found";
  } else if (debug.empty() || access(debug.c_str(), R_OK) != 0) {
    libc.skip_reason = "no debug info for " + libc.path + " (install libc6-dbg)";
  } else {
    libc.debug_path = debug;
  }
  targets.push_back(libc);
  return targets;
}

}  // namespace inprof_test
