// The modules (main executable, shared objects, vDSO) this process has had mapped, including
// ones unloaded since: samples taken before a dlclose() must still resolve afterwards.
// A program that loads and unloads libraries all day (plugins, a library that lands at a
// new address each time) would grow that list forever, so only the most recently unloaded
// `max_unloaded` modules are kept; older ones are forgotten and their ids reused.
//
// Concurrency: owned by one Symbolizer and used under its caller's serialisation.
#ifndef INPROF_SYMBOLIZE_MODULE_MAP_H_
#define INPROF_SYMBOLIZE_MODULE_MAP_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "loaded_objects.h"

namespace inprof::internal {

struct Module {
  size_t id = 0;  // index in the map; stable
  ObjectKind kind = ObjectKind::kSharedObject;
  std::string path;               // canonical path; "[vdso]" for the vDSO
  std::string loader_name;        // name as the loader reported it (recognised cheaply)
  uint64_t bias = 0;              // load bias: absolute address = bias + ELF vaddr
  std::vector<Segment> segments;  // PT_LOAD segments, absolute
  std::vector<uint8_t> build_id;  // from the loaded image; empty if it has none
  std::vector<char> image;        // vDSO only, until the symbolizer has consumed it
  bool loaded = true;             // false once unloaded (kept for old samples)
  bool forgotten = false;         // unloaded long ago: no longer found; id free for reuse
};

class ModuleMap {
 public:
  static constexpr size_t kDefaultMaxUnloaded = 256;
  explicit ModuleMap(size_t max_unloaded = kDefaultMaxUnloaded) : max_unloaded_(max_unloaded) {}

  // Takes the loader's current list. Returns true when the set of loaded modules changed;
  // appends the ids of modules never seen before to `added`, and the ids of unloaded
  // modules it forgot to `forgotten` (their records are empty from now on and the ids may
  // come back in `added` later, for other modules). Cheap when the loader's adds/subs
  // counters did not move. Throws std::bad_alloc only. Not async-signal-safe.
  bool Refresh(std::vector<size_t>* added, std::vector<size_t>* forgotten = nullptr);

  // Offline: replaces the map with the modules of a recorded process (ids are their
  // indexes) and stops following the loader: Refresh() does nothing from now on. A module
  // that overlaps one listed before it is taken as unloaded (and found after the loaded
  // ones, earlier-listed first), so a list in RecordedOrder() finds what Find() found.
  // Throws std::bad_alloc only. Not async-signal-safe.
  void Assign(std::vector<Module> modules);
  bool offline() const { return offline_; }

  // Ids of the modules not forgotten: loaded ones by id, then unloaded ones, the most
  // recently unloaded first (the order in which Find() tries them). Not async-signal-safe.
  std::vector<size_t> RecordedOrder() const;

  // The module containing `address`: currently loaded modules first, then unloaded ones,
  // most recently unloaded first. nullptr when none. Not async-signal-safe.
  Module* Find(uint64_t address);

  Module& at(size_t id) { return modules_[id]; }
  const Module& at(size_t id) const { return modules_[id]; }
  size_t size() const { return modules_.size(); }
  bool refreshed() const { return refreshed_; }

  // Bumped whenever the set of loaded modules changes.
  uint64_t generation() const { return generation_; }

  // Executable PT_LOAD ranges [begin, end) of the loaded modules, sorted by begin.
  std::vector<std::pair<uint64_t, uint64_t>> ExecutableRanges() const;

 private:
  struct Range {
    uint64_t begin;
    uint64_t end;
    size_t id;
  };

  size_t Adopt(LoadedObject&& object, std::vector<size_t>* added);
  void RebuildIndex();

  std::deque<Module> modules_;
  std::vector<Range> loaded_ranges_;  // all PT_LOAD ranges of loaded modules, sorted
  std::vector<size_t> retired_;       // unloaded modules, oldest first
  std::vector<size_t> free_ids_;      // ids of forgotten modules, for reuse
  size_t max_unloaded_;
  LoaderCounters counters_;
  bool refreshed_ = false;
  bool offline_ = false;
  uint64_t generation_ = 0;
};

// Canonical absolute path of a loaded object's file: realpath() when the file exists
// (the loader reports dlopen("./x.so") verbatim, relative to the cwd at that time), the
// lexically normalised absolute name otherwise. The main program is found through
// /proc/self/exe because the loader names it "".
std::string CanonicalModulePath(const LoadedObject& object);

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_MODULE_MAP_H_
