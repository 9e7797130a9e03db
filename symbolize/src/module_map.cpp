#include "module_map.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string_view>

#include "source_paths.h"

namespace inprof::internal {
namespace {

std::string CurrentDirectory() {
  std::string dir(PATH_MAX, '\0');
  if (getcwd(dir.data(), dir.size()) == nullptr) return {};
  dir.resize(dir.find('\0'));
  return dir;
}

std::string MainExecutablePath() {
  std::string path = RealPath("/proc/self/exe");
  if (!path.empty()) return path;
  // The file was deleted or replaced since exec: the link still names it, with a suffix.
  std::string link(PATH_MAX, '\0');
  const ssize_t n = readlink("/proc/self/exe", link.data(), link.size());
  if (n <= 0) return "/proc/self/exe";
  link.resize(static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  if (link.size() > kDeleted.size() &&
      link.compare(link.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    link.resize(link.size() - kDeleted.size());
  }
  return link;
}

bool SameSegments(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Segment& x, const Segment& y) {
    return x.begin == y.begin && x.end == y.end && x.executable == y.executable;
  });
}

bool Contains(const Module& module, uint64_t address) {
  for (const Segment& s : module.segments) {
    if (address >= s.begin && address < s.end) return true;
  }
  return false;
}

}  // namespace

std::string CanonicalModulePath(const LoadedObject& object) {
  switch (object.kind) {
    case ObjectKind::kVdso:
      return "[vdso]";
    case ObjectKind::kMainExecutable:
      return MainExecutablePath();
    case ObjectKind::kSharedObject:
      break;
  }
  std::string path = RealPath(object.name);
  if (!path.empty()) return path;
  return LexicallyNormal(object.name.front() == '/' ? object.name
                                                    : JoinPath(CurrentDirectory(), object.name));
}

void ModuleMap::Assign(std::vector<Module> modules) {
  std::deque<Module> assigned;
  std::vector<std::pair<uint64_t, uint64_t>> taken;  // segments of the loaded ones
  std::vector<size_t> unloaded;                      // in list order
  for (Module& m : modules) {
    m.id = assigned.size();
    m.forgotten = false;
    m.loaded = std::none_of(m.segments.begin(), m.segments.end(), [&](const Segment& s) {
      return std::any_of(taken.begin(), taken.end(), [&](const auto& t) {
        return s.begin < t.second && t.first < s.end;
      });
    });
    if (m.loaded) {
      for (const Segment& s : m.segments) {
        if (s.end > s.begin) taken.emplace_back(s.begin, s.end);
      }
    } else {
      unloaded.push_back(m.id);
    }
    assigned.push_back(std::move(m));
  }
  modules_ = std::move(assigned);
  retired_.assign(unloaded.rbegin(), unloaded.rend());  // Find() tries the last one first
  free_ids_.clear();
  offline_ = true;
  refreshed_ = true;
  ++generation_;
  RebuildIndex();
}

bool ModuleMap::Refresh(std::vector<size_t>* added, std::vector<size_t>* forgotten) {
  if (offline_) return false;
  if (refreshed_) {
    const LoaderCounters now = ReadLoaderCounters();
    if (now.valid && now == counters_) return false;
  }
  LoaderCounters counters;
  std::vector<LoadedObject> objects = SnapshotLoadedObjects(&counters);

  std::vector<bool> still_loaded(modules_.size(), false);
  std::vector<size_t> ids;
  ids.reserve(objects.size());
  for (LoadedObject& object : objects) {
    const size_t id = Adopt(std::move(object), added);
    if (id < still_loaded.size()) still_loaded[id] = true;
    ids.push_back(id);
  }

  bool changed = !refreshed_;
  for (size_t id = 0; id < still_loaded.size(); ++id) {
    Module& module = modules_[id];
    if (module.loaded && !still_loaded[id]) {
      module.loaded = false;
      retired_.push_back(id);
      changed = true;
    }
  }
  for (size_t id : ids) {
    Module& module = modules_[id];
    if (!module.loaded) {  // unloaded earlier, mapped again at the same place
      module.loaded = true;
      retired_.erase(std::remove(retired_.begin(), retired_.end(), id), retired_.end());
      changed = true;
    }
  }
  if (added != nullptr && !added->empty()) changed = true;
  // Forget the oldest unloaded modules beyond the bound (not one that was just loaded
  // again: those left retired_ above).
  while (retired_.size() > max_unloaded_) {
    const size_t id = retired_.front();
    retired_.erase(retired_.begin());
    Module& module = modules_[id];
    module = Module{};
    module.id = id;
    module.loaded = false;
    module.forgotten = true;
    free_ids_.push_back(id);
    if (forgotten != nullptr) forgotten->push_back(id);
    changed = true;
  }

  counters_ = counters;
  refreshed_ = true;
  if (changed) {
    ++generation_;
    RebuildIndex();
  }
  return changed;
}

size_t ModuleMap::Adopt(LoadedObject&& object, std::vector<size_t>* added) {
  // Fast path: the same loader entry as last time (no realpath, no allocation).
  for (const Module& m : modules_) {
    if (m.loaded && m.bias == object.bias && m.kind == object.kind &&
        m.loader_name == object.name && m.build_id == object.build_id &&
        SameSegments(m.segments, object.segments)) {
      return m.id;
    }
  }
  std::string path = CanonicalModulePath(object);
  // The same file mapped again at the same place after a dlclose(): revive its record so
  // the libdwfl state (and everything cached for it) is reused.
  for (size_t i = modules_.size(); i-- > 0;) {
    Module& m = modules_[i];
    if (!m.loaded && !m.forgotten && m.bias == object.bias && m.kind == object.kind && m.path == path &&
        m.build_id == object.build_id && SameSegments(m.segments, object.segments)) {
      m.loader_name = std::move(object.name);
      return m.id;
    }
  }
  size_t id = modules_.size();
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
    modules_[id] = Module{};
  } else {
    modules_.emplace_back();
  }
  Module& m = modules_[id];
  m.id = id;
  m.kind = object.kind;
  m.path = std::move(path);
  m.loader_name = std::move(object.name);
  m.bias = object.bias;
  m.segments = std::move(object.segments);
  m.build_id = std::move(object.build_id);
  m.image = std::move(object.image);
  m.loaded = false;  // Refresh() marks it loaded and counts it as a change
  if (added != nullptr) added->push_back(m.id);
  return m.id;
}

void ModuleMap::RebuildIndex() {
  loaded_ranges_.clear();
  for (const Module& m : modules_) {
    if (!m.loaded) continue;
    for (const Segment& s : m.segments) {
      if (s.end > s.begin) loaded_ranges_.push_back({s.begin, s.end, m.id});
    }
  }
  std::sort(loaded_ranges_.begin(), loaded_ranges_.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
}

std::vector<size_t> ModuleMap::RecordedOrder() const {
  std::vector<size_t> ids;
  for (const Module& m : modules_) {
    if (m.loaded) ids.push_back(m.id);
  }
  ids.insert(ids.end(), retired_.rbegin(), retired_.rend());
  return ids;
}

Module* ModuleMap::Find(uint64_t address) {
  auto it = std::upper_bound(loaded_ranges_.begin(), loaded_ranges_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.begin; });
  if (it != loaded_ranges_.begin()) {
    --it;
    if (address < it->end) return &modules_[it->id];
  }
  for (auto r = retired_.rbegin(); r != retired_.rend(); ++r) {
    if (Contains(modules_[*r], address)) return &modules_[*r];
  }
  return nullptr;
}

std::vector<std::pair<uint64_t, uint64_t>> ModuleMap::ExecutableRanges() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const Module& m : modules_) {
    if (!m.loaded) continue;
    for (const Segment& s : m.segments) {
      if (s.executable && s.end > s.begin) ranges.emplace_back(s.begin, s.end);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

}  // namespace inprof::internal
