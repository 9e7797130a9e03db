// Helpers shared by the symbolizer tests: ground truth taken from the loader and libc,
// independently of the code under test.
#ifndef INPROF_TESTS_SYMBOLIZE_TEST_UTIL_H_
#define INPROF_TESTS_SYMBOLIZE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace inprof_test {

// realpath(3), or "" when it fails.
std::string RealPath(const std::string& path);

// What dl_iterate_phdr says about the object containing `address`.
struct LoaderObject {
  bool found = false;
  uint64_t bias = 0;  // dlpi_addr
  std::string name;   // dlpi_name ("" for the main program)
  std::vector<std::pair<uint64_t, uint64_t>> exec_ranges;
};
LoaderObject ObjectContaining(uint64_t address);

// The main program's entry (dlpi_name == "").
LoaderObject MainProgram();

// `path` relative to the current directory, with a '/' in it so dlopen() treats it as a
// path ("./x.so" rather than "x.so").
std::string RelativeToCwd(const std::string& path);

// Runs a command through the shell and returns its standard output; `ok` false if it could
// not be started. `exit_status` (optional) receives its exit status.
std::string RunCommand(const std::string& command, bool* ok, int* exit_status = nullptr);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `count` addresses spread evenly over the executable segments of the loaded object whose
// name contains `name_part` ("libc.so.6"); empty when no such object is loaded.
std::vector<uint64_t> SpreadAddresses(const std::string& name_part, size_t count);

// Copies a file (creating the directories of `to`); false on failure.
bool CopyFile(const std::string& from, const std::string& to);

// A copy of a fixture library under another name (DIR/lib/libinprof_copy.so), dlopen'ed,
// and one address in it (a return address minus one, from `symbol`, a capture function of
// the fixture: uintptr_t (int* line)). The copy can be moved or replaced afterwards, as a
// file is after a recording. dlclose'd on destruction.
struct LoadedCopy {
  LoadedCopy(const TempDir& dir, const char* fixture, const char* symbol);
  ~LoadedCopy();
  LoadedCopy(const LoadedCopy&) = delete;
  LoadedCopy& operator=(const LoadedCopy&) = delete;
  std::string path;  // canonical
  void* handle = nullptr;
  uint64_t address = 0;  // 0 when anything failed
  int line = 0;
};

}  // namespace inprof_test

#endif  // INPROF_TESTS_SYMBOLIZE_TEST_UTIL_H_
