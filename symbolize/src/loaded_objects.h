// A copy of what the dynamic loader reports about the objects mapped into this process,
// taken under the loader lock so later code never reads the memory of an object that a
// concurrent dlclose() may unmap.
#ifndef INPROF_SYMBOLIZE_LOADED_OBJECTS_H_
#define INPROF_SYMBOLIZE_LOADED_OBJECTS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace inprof::internal {

struct Segment {
  uint64_t begin = 0;  // absolute address
  uint64_t end = 0;    // exclusive
  bool executable = false;
  uint64_t file_offset = 0;  // where in the file the segment starts (p_offset)
};

enum class ObjectKind { kMainExecutable, kSharedObject, kVdso };

struct LoadedObject {
  ObjectKind kind = ObjectKind::kSharedObject;
  std::string name;               // as reported by the loader; may be relative
  uint64_t bias = 0;              // dlpi_addr: absolute address = bias + p_vaddr
  std::vector<Segment> segments;  // PT_LOAD segments, absolute
  std::vector<uint8_t> build_id;  // NT_GNU_BUILD_ID read from memory; empty if none
  std::vector<char> image;        // kVdso only: the in-memory ELF image
};

// Loader counters (dlpi_adds, dlpi_subs) from the first dl_iterate_phdr entry only; the
// cheap "did anything change" probe. Not async-signal-safe (takes the loader lock).
struct LoaderCounters {
  uint64_t adds = 0;
  uint64_t subs = 0;
  bool valid = false;  // false when the C library does not provide the counters
  bool operator==(const LoaderCounters&) const = default;
};
LoaderCounters ReadLoaderCounters();

// Every object currently loaded, with its data copied out. Objects without a name that are
// neither the main program nor the vDSO are skipped (there is no file to read).
// Not async-signal-safe.
std::vector<LoadedObject> SnapshotLoadedObjects(LoaderCounters* counters);

// Parses an ELF note area and returns the NT_GNU_BUILD_ID descriptor, or empty.
// `align` is the note alignment (4 or 8). Exposed for tests.
std::vector<uint8_t> FindGnuBuildId(const unsigned char* notes, size_t size, size_t align);

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_LOADED_OBJECTS_H_
