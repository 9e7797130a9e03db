#include "source_paths.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace inprof::internal {

std::string LexicallyNormal(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string_view::npos) next = path.size();
    const std::string_view part = path.substr(pos, next - pos);
    pos = next + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
        continue;
      }
      if (absolute) continue;  // "/.." is "/"
    }
    parts.push_back(part);
  }
  std::string out;
  out.reserve(path.size());
  if (absolute) out += '/';
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i != 0) out += '/';
    out += parts[i];
  }
  if (out.empty()) out = ".";
  return out;
}

std::string JoinPath(std::string_view dir, std::string_view file) {
  if ((!file.empty() && file.front() == '/') || dir.empty()) return std::string(file);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  out += file;
  return out;
}

std::string RealPath(const std::string& path) {
  if (path.empty()) return {};
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return {};
  std::string out(resolved);
  free(resolved);
  return out;
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

PathMap::PathMap(std::vector<std::pair<std::string, std::string>> rules) {
  for (auto& [from, to] : rules) {
    if (from.empty()) continue;
    std::string prefix = from == "/" ? from : LexicallyNormal(from);
    rules_.emplace_back(std::move(prefix), std::move(to));
  }
  // Longest prefix first; stable so that of two identical prefixes the first given wins.
  std::stable_sort(rules_.begin(), rules_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

bool PathMap::Apply(std::string* path) const {
  for (const auto& [from, to] : rules_) {
    if (path->compare(0, from.size(), from) != 0) continue;
    const bool whole_component =
        path->size() == from.size() || from.back() == '/' || (*path)[from.size()] == '/';
    if (!whole_component) continue;
    std::string rest = path->substr(from.size());
    // Keep exactly one separator between the replacement and the rest.
    if (!to.empty() && to.back() == '/' && !rest.empty() && rest.front() == '/') rest.erase(0, 1);
    if (!to.empty() && to.back() != '/' && !rest.empty() && rest.front() != '/' &&
        from.back() == '/') {
      rest.insert(rest.begin(), '/');
    }
    *path = to + rest;
    return true;
  }
  return false;
}

const std::string& SourcePathResolver::Resolve(const char* file, const char* comp_dir) {
  static const std::string kEmpty;
  if (file == nullptr || file[0] == '\0') return kEmpty;
  key_.clear();
  if (file[0] != '/' && comp_dir != nullptr && comp_dir[0] != '\0') {
    key_ = comp_dir;
    if (key_.back() != '/') key_ += '/';
  }
  key_ += file;
  auto it = cache_.find(key_);
  if (it != cache_.end()) return it->second;

  // A name still relative here (no comp_dir) would resolve against our cwd, which says
  // nothing about where it was compiled: normalise it lexically only.
  std::string canonical = key_.front() == '/' ? RealPath(key_) : std::string();
  if (canonical.empty()) canonical = LexicallyNormal(key_);
  if (!map_.Apply(&canonical)) {
    // A rule written against the path as the compiler saw it (before symlinks were
    // resolved) still applies.
    std::string lexical = LexicallyNormal(key_);
    if (map_.Apply(&lexical)) canonical = std::move(lexical);
  }
  return cache_.emplace(key_, std::move(canonical)).first->second;
}

}  // namespace inprof::internal
