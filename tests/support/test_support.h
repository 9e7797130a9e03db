// Helpers shared by the test suites: where the source tree is, golden-file checks, and the
// files and child processes a test makes.
//
// Golden files live under tests/data/. A check compares what the code produces now with the
// file; with INPROF_BLESS=1 in the environment it rewrites the file instead, so an intended
// change of output is one run away (review the diff before committing it).
#ifndef INPROF_TESTS_SUPPORT_TEST_SUPPORT_H_
#define INPROF_TESTS_SUPPORT_TEST_SUPPORT_H_

#include <map>
#include <string>
#include <vector>

namespace inprof::test {

// The repository root: $INPROF_SOURCE_DIR (ctest sets it for every test), else the
// directory the tests were configured from, so a test binary also runs by hand.
std::string SourceDir();

// The files under tests/data/: SourceDir() + "/tests/data/" + relative.
std::string Data(const std::string& relative);

// `text` with every occurrence of the source tree's path replaced by "<src>", so goldens of
// output that names source files do not depend on where the checkout lives.
std::string Portable(std::string text);

// True when INPROF_BLESS=1: golden checks rewrite their files instead of comparing.
bool Blessing();

// Compares `actual` with the file tests/data/`relative` (a gtest failure naming the file when
// it differs or is missing), or rewrites the file when blessing.
void CheckGolden(const std::string& relative, const std::string& actual);

struct ProcessResult {
  int exit_code = -1;   // exit status, or -1 when killed by a signal
  int term_signal = 0;  // the signal that killed it, if any
  std::string out;
  std::string err;
};

// The emulator command that runs this build's programs (qemu-aarch64 and its options in a
// cross build), or empty when they run natively. RunProcess applies it to every child.
const std::vector<std::string>& EmulatorPrefix();

// What RunProcess starts for `argv` and `env`: this process's environment without its
// INPROF_* variables (the test's own, not profiler configuration) with `env` added to and
// overriding it, and in a cross build the emulator in front of argv (LD_PRELOAD passed to
// the guest). For tests that start a child their own way.
struct ChildCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=value
};
ChildCommand MakeChildCommand(const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& env);
// `strings` as execve takes them: pointers into them, then a null.
std::vector<char*> Pointers(std::vector<std::string>& strings);

// Runs argv[0] with `env` added to (and overriding) this process's environment; waits.
// `on_started` (optional) is called with the child's pid once it runs. A run whose exit-time
// leak check could not run (LeakCheckerCrashed) is run once more, and that run's result is
// returned.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         void (*on_started)(int pid) = nullptr);

// Whether a sanitized child's stderr says that LeakSanitizer's tracer crashed while it stopped
// the child's threads for the exit-time leak check ("Tracer caught signal", then "has
// encountered a fatal error"; exit status 1). That is no verdict on the program: the leak
// check did not run. It is an intermittent failure of the checker itself, in processes with
// many threads (google/sanitizers#1353). A leak found is reported differently ("detected
// memory leaks") and fails the test as before.
bool LeakCheckerCrashed(const std::string& err);

// A fresh empty directory under $TMPDIR (else /tmp), left in place for a failing test's
// reader; fails the current test when it cannot be made.
std::string MakeTempDir();

// The whole file, bytes as they are; empty when it cannot be read.
std::string ReadFile(const std::string& path);

}  // namespace inprof::test

#endif  // INPROF_TESTS_SUPPORT_TEST_SUPPORT_H_
