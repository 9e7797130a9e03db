// One libdwfl session (Dwfl) for the whole process image, modules reported with their file
// and load bias when first needed. Modules are only ever added (dwfl_report_begin_add), never
// removed, so the Dwfl_Module pointers handed out stay valid for the session's lifetime
// and modules unloaded by dlclose() keep resolving.
//
// Concurrency: owned by one Symbolizer; libdwfl is not thread-safe for one Dwfl.
#ifndef INPROF_SYMBOLIZE_INTERNAL_DWFL_SESSION_H_
#define INPROF_SYMBOLIZE_INTERNAL_DWFL_SESSION_H_

#include <elfutils/libdwfl.h>

#include <cstddef>
#include <cstdint>

#include "internal/module_map.h"

namespace inprof::internal {

class DwflSession {
 public:
  DwflSession();
  ~DwflSession();
  DwflSession(const DwflSession&) = delete;
  DwflSession& operator=(const DwflSession&) = delete;

  // Reports one module; returns its handle, or nullptr when the file cannot be used
  // (missing, unreadable, or not the image that is mapped: replaced on disk since it was
  // loaded). Not async-signal-safe.
  Dwfl_Module* Report(Module& module);

 private:
  int OpenFile(Module& module);

  Dwfl* dwfl_ = nullptr;
  bool map_files_usable_ = true;
};

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

#endif  // INPROF_SYMBOLIZE_INTERNAL_DWFL_SESSION_H_
