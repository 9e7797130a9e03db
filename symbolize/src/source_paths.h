// Path canonicalisation for module and source file names, and the user's prefix rewriting.
#ifndef INPROF_SYMBOLIZE_SOURCE_PATHS_H_
#define INPROF_SYMBOLIZE_SOURCE_PATHS_H_

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace inprof::internal {

// "/a/./b//c/../d/" -> "/a/b/d"; relative paths keep their leading "..". Purely lexical:
// symlinks are not consulted (used only when realpath() cannot be, e.g. the file is gone).
std::string LexicallyNormal(std::string_view path);

// `file` if absolute, otherwise dir + "/" + file (dir may be empty).
std::string JoinPath(std::string_view dir, std::string_view file);

// realpath(3) as a string; empty when the path does not resolve.
std::string RealPath(const std::string& path);

// Last path component ("libc.so.6" for "/usr/lib/x86_64-linux-gnu/libc.so.6").
std::string_view Basename(std::string_view path);

// Prefix rewriting: the longest matching `from` wins, and it matches whole path components
// only ("/build/root" matches "/build/root/x.c" and "/build/root", not "/build/rootfs/x.c").
class PathMap {
 public:
  explicit PathMap(std::vector<std::pair<std::string, std::string>> rules);
  // True and `*path` rewritten when a rule matched.
  bool Apply(std::string* path) const;
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> rules_;  // longest prefix first
};

// Turns a file name from DWARF into what the profile shows: absolute (joined with the
// compilation directory when relative), realpath()-canonical when the file exists here,
// lexically normalised otherwise, then rewritten by the path map. Results are cached per
// input because realpath() costs a system call per path component.
// Not thread-safe; not async-signal-safe.
class SourcePathResolver {
 public:
  explicit SourcePathResolver(PathMap map) : map_(std::move(map)) {}

  // `file` may be relative; `comp_dir` may be null or empty.
  const std::string& Resolve(const char* file, const char* comp_dir);

 private:
  PathMap map_;
  std::unordered_map<std::string, std::string> cache_;
  std::string key_;  // scratch, reused to avoid an allocation per lookup
};

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_SOURCE_PATHS_H_
