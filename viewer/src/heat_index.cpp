// Path resolution and line lookup for profile-guided code search (see heat_index.h).
#include "heat_index.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "inprof/annotations.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Number of trailing path components two paths share ("a/b/c.cpp" and "/x/b/c.cpp": 2).
size_t CommonSuffix(std::string_view a, std::string_view b) {
  size_t components = 0;
  while (!a.empty() && !b.empty()) {
    const std::string_view ca = BaseName(a), cb = BaseName(b);
    if (ca != cb) break;
    ++components;
    a.remove_suffix(std::min(a.size(), ca.size() + 1));
    b.remove_suffix(std::min(b.size(), cb.size() + 1));
  }
  return components;
}

// The bare name a source file would spell: "ns::Widget<T>::resize(int) const" -> "resize".
std::string_view ShortFunctionName(std::string_view name) {
  size_t end = name.find('(');
  if (end == std::string_view::npos) end = name.size();
  name = name.substr(0, end);
  while (!name.empty() && name.back() == '>') {  // template arguments of the function itself
    int depth = 0;
    size_t i = name.size();
    while (i > 0) {
      --i;
      if (name[i] == '>') ++depth;
      if (name[i] == '<' && --depth == 0) break;
    }
    name = name.substr(0, i);
  }
  size_t begin = name.size();
  while (begin > 0) {
    const char c = name[begin - 1];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '~')) break;
    --begin;
  }
  return name.substr(begin);
}

bool ContainsWord(const std::string& text, std::string_view word) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !is_word(text[at - 1])) && (end >= text.size() || !is_word(text[end]))) {
      return true;
    }
  }
  return false;
}

}  // namespace

const char* MatchKindName(MatchKind kind) {
  switch (kind) {
    case MatchKind::kNone:
      return "none";
    case MatchKind::kExact:
      return "exact";
    case MatchKind::kRealPath:
      return "realpath";
    case MatchKind::kBaseName:
      return "basename";
    case MatchKind::kFunction:
      return "function";
    case MatchKind::kAmbiguous:
      return "ambiguous";
  }
  return "none";
}

std::string NormalizePath(std::string_view path, std::string_view root) {
  std::string joined;
  if (!path.starts_with('/')) {
    joined.assign(root);
    joined += '/';
  }
  joined += path;
  std::vector<std::string_view> parts;
  std::string_view rest = joined;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  out.reserve(joined.size());
  for (std::string_view part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

std::string CurrentDirectory() {
  char buffer[PATH_MAX];
  return getcwd(buffer, sizeof buffer) ? std::string(buffer) : std::string("/");
}

HeatIndex::HeatIndex(const Annotations& a, size_t event, const HotCriterion& criterion,
                     std::string root, bool confine)
    : criterion_(criterion),
      total_(EventTotal(a, event)),
      root_(std::move(root)),
      sources_(confine ? root_ : std::string()) {
  files_.reserve(a.files.size());
  for (const FileStats& file : a.files) {
    FileHeat heat;
    heat.path = NormalizePath(file.path, root_);
    for (const LineStats& line : file.lines) {
      const int64_t inclusive = WeightAt(line.inclusive, event);
      const int64_t self = WeightAt(line.self, event);
      if (inclusive <= 0 && self <= 0) continue;
      heat.lines.push_back({line.line, static_cast<uint8_t>(LevelAt(line.local_heat, event)),
                            static_cast<uint8_t>(LevelAt(line.global_heat, event)), self, inclusive,
                            &line.function});
    }
    for (const LineHeat& line : heat.lines) heat.numbers.push_back(line.line);
    for (const FunctionStats& fn : file.functions) heat.functions.push_back(&fn);
    const int index = static_cast<int>(files_.size());
    by_path_.emplace(heat.path, index);
    heat.exists = access(heat.path.c_str(), F_OK) == 0;
    by_base_name_[std::string(BaseName(heat.path))].push_back(index);
    files_.push_back(std::move(heat));
  }
}

bool HeatIndex::IsHot(const LineHeat& line) const {
  if (criterion_.min_percent >= 0) {
    if (total_ <= 0 || line.inclusive <= 0) return false;
    return 100.0 * static_cast<double>(line.inclusive) / static_cast<double>(total_) >=
           criterion_.min_percent;
  }
  return (criterion_.local ? line.local : line.global) >= criterion_.min_level;
}

std::pair<const LineHeat*, const LineHeat*> HeatIndex::Lines(int file, uint32_t first,
                                                             uint32_t last) const {
  const FileHeat& heat = files_[static_cast<size_t>(file)];
  const std::vector<uint32_t>& numbers = heat.numbers;
  const auto begin = std::lower_bound(numbers.begin(), numbers.end(), first);
  const auto end = std::upper_bound(begin, numbers.end(), last);
  return {heat.lines.data() + (begin - numbers.begin()),
          heat.lines.data() + (end - numbers.begin())};
}

const LineHeat* HeatIndex::Hottest(int file, uint32_t first, uint32_t last) const {
  auto [begin, end] = Lines(file, first, last);
  const LineHeat* best = nullptr;
  auto level = [&](const LineHeat& l) { return criterion_.local ? l.local : l.global; };
  for (const LineHeat* l = begin; l != end; ++l) {
    if (!best) {
      best = l;
      continue;
    }
    const bool hot = IsHot(*l), best_hot = IsHot(*best);
    if (hot != best_hot) {
      if (hot) best = l;
      continue;
    }
    if (criterion_.min_percent < 0 && level(*l) != level(*best)) {
      if (level(*l) > level(*best)) best = l;
      continue;
    }
    if (l->inclusive > best->inclusive) best = l;
  }
  return best;
}

HeatIndex::Resolution HeatIndex::Resolve(std::string_view path) const {
  Resolution r;
  r.local_path = NormalizePath(path, root_);
  if (auto it = by_path_.find(r.local_path); it != by_path_.end()) {
    r.match = MatchKind::kExact;
    r.files = {it->second};
    return r;
  }
  bool local_exists = false;
  if (char* real = realpath(r.local_path.c_str(), nullptr)) {
    const std::string resolved = real;
    free(real);
    local_exists = true;
    if (auto it = by_path_.find(resolved); it != by_path_.end()) {
      r.match = MatchKind::kRealPath;
      r.files = {it->second};
      return r;
    }
  }
  auto it = by_base_name_.find(std::string(BaseName(r.local_path)));
  if (it == by_base_name_.end()) return r;
  size_t best = 0;
  for (int candidate : it->second) {
    // A hit in a file that exists here never stands for a profile file that exists here too
    // (it would have matched by path): every tree has its own main.cpp and util.h.
    if (local_exists && files_[static_cast<size_t>(candidate)].exists) continue;
    const size_t common = CommonSuffix(r.local_path, files_[static_cast<size_t>(candidate)].path);
    if (common > best) {
      best = common;
      r.files.clear();
    }
    if (common == best) r.files.push_back(candidate);
  }
  if (r.files.empty()) return r;
  r.match = r.files.size() == 1 ? MatchKind::kBaseName : MatchKind::kAmbiguous;
  return r;
}

// Narrows an ambiguous resolution for one hit: the candidates with a function whose line range
// covers the hit, then those whose function at the hit is named in the local file. Returns the
// file, or -1 (with r.files left as the remaining candidates) when none or several remain.
int HeatIndex::SettleByFunction(Resolution& r, uint32_t first, uint32_t last) const {
  std::vector<std::pair<int, const FunctionStats*>> covering;
  for (int candidate : r.files) {
    for (const FunctionStats* fn : files_[static_cast<size_t>(candidate)].functions) {
      if (fn->first_line <= last && first <= fn->last_line) {
        covering.emplace_back(candidate, fn);
        break;
      }
    }
  }
  if (covering.size() == 1) return covering[0].first;
  if (covering.empty()) return -1;
  if (!r.local_read) {
    r.local_read = true;
    std::string text;
    if (sources_.Read(r.local_path, &text) == SourceFiles::Outcome::kRead) {
      r.local_text = std::make_unique<std::string>(std::move(text));
    }
  }
  int found = -1;
  size_t named = 0;
  if (r.local_text) {
    for (const auto& [candidate, fn] : covering) {
      const std::string_view name = ShortFunctionName(fn->name);
      // A profile may name a function with a megabyte of one letter; std::string::find
      // costs the text's length times the name's on such a name. No source spells
      // an identifier this long.
      if (!name.empty() && name.size() <= 1024 && ContainsWord(*r.local_text, name)) {
        found = candidate;
        ++named;
      }
    }
  }
  return named == 1 ? found : -1;
}

HeatIndex::Resolution& HeatIndex::Resolved(std::string_view path) {
  // Search output repeats a path on consecutive lines: check the last one before hashing.
  if (last_ && last_->first == path) return last_->second;
  auto it = cache_.find(path);
  if (it == cache_.end()) it = cache_.emplace(std::string(path), Resolve(path)).first;
  last_ = &*it;
  return it->second;
}

std::vector<uint32_t> HeatIndex::SampledLines(std::string_view path) {
  std::vector<uint32_t> lines;
  for (int file : Resolved(path).files) {
    for (const LineHeat& line : files_[static_cast<size_t>(file)].lines) lines.push_back(line.line);
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  return lines;
}

HitHeat HeatIndex::Lookup(std::string_view path, uint32_t first, uint32_t last) {
  if (last < first) std::swap(first, last);
  Resolution& r = Resolved(path);
  HitHeat hit;
  hit.match = r.match;
  if (r.match == MatchKind::kNone) return hit;
  if (r.match == MatchKind::kAmbiguous) {
    const int file = SettleByFunction(r, first, last);
    if (file < 0) {
      // Cold in every candidate is simply cold; only a choice that decides is ambiguous.
      bool any_hot = false;
      for (int candidate : r.files) {
        const LineHeat* line = Hottest(candidate, first, last);
        any_hot |= line && IsHot(*line);
      }
      if (any_hot) hit.candidates = r.files;
      return hit;
    }
    hit.match = MatchKind::kFunction;
    hit.file = file;
  } else {
    hit.file = r.files[0];
  }
  hit.line = Hottest(hit.file, first, last);
  hit.hot = hit.line && IsHot(*hit.line);
  return hit;
}

}  // namespace inprof::viewer
