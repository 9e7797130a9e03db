// libdwfl for the modules of one process image (or of recorded processes), each reported
// with its file and load bias when first needed, in a Dwfl of its own: a module is freed
// alone (Release: its descriptor, ELF and DWARF state), which a shared Dwfl cannot do
// without a report cycle that may also drop modules still in use. A Dwfl_Module pointer
// handed out stays valid until it is released or the session ends.
//
// Concurrency: owned by one Symbolizer; libdwfl is not thread-safe for one Dwfl.
#ifndef INPROF_SYMBOLIZE_DWFL_SESSION_H_
#define INPROF_SYMBOLIZE_DWFL_SESSION_H_

#include <elfutils/libdwfl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "module_map.h"

namespace inprof::internal {

class DwflSession {
 public:
  // `debug_dirs`: searched for separate debug info by build-id (DIR/.build-id/xx/rest.debug)
  // and .gnu_debuglink, before /usr/lib/debug.
  explicit DwflSession(const std::vector<std::string>& debug_dirs = {});
  ~DwflSession();
  DwflSession(const DwflSession&) = delete;
  DwflSession& operator=(const DwflSession&) = delete;

  // Reports one module; returns its handle, or nullptr when the file cannot be used
  // (missing, unreadable, or not the image that is mapped: replaced on disk since it was
  // loaded). With `fd` < 0 the file is the one this process maps (or the vDSO image the
  // module holds); otherwise `fd` (taken over in every case) is the file, found at `path`.
  // Not async-signal-safe.
  Dwfl_Module* Report(Module& module, int fd = -1, const std::string& path = {});

  // Frees what Report() returned (closing its file). Not async-signal-safe.
  void Release(Dwfl_Module* module);

  // Modules reported and not released (for tests and health).
  size_t open_modules() const { return owners_.size(); }

 private:
  int OpenFile(Module& module);

  std::unordered_map<Dwfl_Module*, Dwfl*> owners_;  // each module's own Dwfl
  std::string debuginfo_path_;  // libdwfl's search path: ":.debug:DIR...:/usr/lib/debug"
  char* debuginfo_path_ptr_ = nullptr;
  Dwfl_Callbacks callbacks_{};  // must outlive dwfl_
  bool map_files_usable_ = true;
};

// Where the file of a module of a recorded process was found (offline symbolization).
struct RecordedFile {
  int fd = -1;          // open (O_CLOEXEC); -1: nothing that is that file was found
  std::string path;     // where it was found
  std::string problem;  // fd < 0: why, as one line for the profile's warnings
};

// The recorded path when the file there has the recorded build-id (or, for a file without
// one, the recorded segment layout); else, by build-id, in each of `debug_dirs` then
// /usr/lib/debug: DIR/.build-id/xx/rest, DIR/<basename>, DIR/.build-id/xx/rest.debug.
// Not for the vDSO. Not async-signal-safe.
RecordedFile OpenRecordedFile(const Module& module, const std::vector<std::string>& debug_dirs);

// The build-id of an ELF file (empty when it has none); false when it is not ELF.
bool ReadFileBuildId(int fd, std::vector<uint8_t>* build_id);

// A Dwfl for ELF files on disk, with the same local-only debug info lookup as DwflSession;
// nullptr on failure. The caller owns it (dwfl_end). Not async-signal-safe.
Dwfl* BeginOfflineDwfl();

// The find_debuginfo callback used when DEBUGINFOD_URLS is set: build-id directories, then
// .gnu_debuglink next to the file, in its .debug/ and under /usr/lib/debug — never the
// network. Exposed for tests.
int FindDebuginfoOffline(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                         const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                         char** debuginfo_file_name);

// The CRC-32 used by .gnu_debuglink (zlib's), continued from `crc`.
uint32_t DebuglinkCrc32(uint32_t crc, const unsigned char* data, size_t size);

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_DWFL_SESSION_H_
