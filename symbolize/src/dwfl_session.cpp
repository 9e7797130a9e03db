#include "dwfl_session.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "regular_file.h"

namespace inprof::internal {
namespace {

// Every module is reported with its file already open (dwfl_report_elf), so libdwfl never
// has to look for a main ELF file. Returning "not found" here keeps it from trying
// dwfl_build_id_find_elf, which in elfutils 0.188 may ask debuginfod.
int FindElfNever(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) { return -1; }

char* g_debuginfo_path = nullptr;  // libdwfl's default: ":.debug:/usr/lib/debug"

// Separate debug info is looked up locally only (build-id directories, then
// .gnu_debuglink locations), never with dwfl_standard_find_debuginfo: Debian's elfutils
// 0.188 is built with debuginfod support and the standard callback dlopen()s
// libdebuginfod on its first miss *even when DEBUGINFOD_URLS is unset* — measured here: at
// the first dump, libcurl, gnutls, krb5, ldap and ~20 other libraries were loaded into the
// profiled program, with their constructors run. With DEBUGINFOD_URLS set it would also
// stall the program on HTTP downloads of whole debug files. Unsetting the variable instead
// would change the environment of the program we are profiling.
const Dwfl_Callbacks kOfflineCallbacks = {
    FindElfNever,
    FindDebuginfoOffline,
    nullptr,
    &g_debuginfo_path,
};

// File-backed mappings [begin, end) from /proc/self/maps.
std::vector<std::pair<uint64_t, uint64_t>> ReadFileMappings() {
  std::vector<std::pair<uint64_t, uint64_t>> mappings;
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return mappings;
  char line[4096 + 128];
  while (fgets(line, sizeof line, maps) != nullptr) {
    unsigned long long begin = 0;
    unsigned long long end = 0;
    unsigned long long inode = 0;
    if (sscanf(line, "%llx-%llx %*s %*s %*s %llu", &begin, &end, &inode) == 3 && inode != 0) {
      mappings.emplace_back(begin, end);
    }
    // Finish over-long lines (very long paths) before reading the next mapping.
    while (std::strchr(line, '\n') == nullptr && fgets(line, sizeof line, maps) != nullptr) {
    }
  }
  fclose(maps);
  return mappings;
}

// /proc/self/map_files/<begin>-<end> opens the inode actually mapped, even when the path
// now names another file (a package upgrade renamed a new library over it) or nothing
// (deleted). Opening those links needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; without
// them we stop trying and use paths.
int OpenMappedFile(uint64_t address, bool* usable) {
  if (!*usable) return -1;
  for (const auto& [begin, end] : ReadFileMappings()) {
    if (address < begin || address >= end) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/map_files/%llx-%llx",
                  static_cast<unsigned long long>(begin), static_cast<unsigned long long>(end));
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (errno == EPERM || errno == EACCES)) *usable = false;
    return fd;
  }
  return -1;
}

int OpenVdsoImage(const std::vector<char>& image) {
  if (image.empty()) return -1;
  const int fd = memfd_create("inprof-vdso", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

}  // namespace

Dwfl* BeginOfflineDwfl() {
  elf_version(EV_CURRENT);
  return dwfl_begin(&kOfflineCallbacks);
}

DwflSession::DwflSession(const std::vector<std::string>& debug_dirs) {
  elf_version(EV_CURRENT);
  callbacks_ = kOfflineCallbacks;
  if (!debug_dirs.empty()) {
    // libdwfl looks for DIR/.build-id/xx/rest.debug in every absolute entry, and for
    // .gnu_debuglink files relative to the file and under each entry.
    debuginfo_path_ = ":.debug";
    for (const std::string& dir : debug_dirs) {
      if (!dir.empty() && dir.front() == '/' && dir.find(':') == std::string::npos) {
        debuginfo_path_ += ':' + dir;
      }
    }
    debuginfo_path_ += ":/usr/lib/debug";
    debuginfo_path_ptr_ = debuginfo_path_.data();
    callbacks_.debuginfo_path = &debuginfo_path_ptr_;
  }
}

DwflSession::~DwflSession() {
  for (auto& [module, dwfl] : owners_) dwfl_end(dwfl);
}

void DwflSession::Release(Dwfl_Module* module) {
  auto it = owners_.find(module);
  if (it == owners_.end()) return;
  dwfl_end(it->second);
  owners_.erase(it);
}

int DwflSession::OpenFile(Module& module) {
  // We open the file ourselves: O_CLOEXEC keeps it out of programs the profiled process
  // execs, and through /proc we get the image actually mapped even if its file was deleted
  // or replaced since it was loaded.
  int fd = -1;
  switch (module.kind) {
    case ObjectKind::kVdso:
      fd = OpenVdsoImage(module.image);
      module.image.clear();
      module.image.shrink_to_fit();
      break;
    case ObjectKind::kMainExecutable:
      fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
      break;
    case ObjectKind::kSharedObject:
      // What is mapped first (if still mapped); the path otherwise (the build-id check in
      // Report() then catches a file that changed since it was loaded).
      if (module.loaded && !module.segments.empty()) {
        fd = OpenMappedFile(module.segments.front().begin, &map_files_usable_);
      }
      if (fd < 0) {
        StatusOr<int> opened = OpenRegularFile(module.path.c_str());
        if (opened.ok()) fd = *opened;
      }
      break;
  }
  return fd;
}

Dwfl_Module* DwflSession::Report(Module& module, int fd, const std::string& path) {
  if (fd < 0) fd = OpenFile(module);
  if (fd < 0) return nullptr;
  Dwfl* dwfl = dwfl_begin(&callbacks_);
  if (dwfl == nullptr) {
    close(fd);
    return nullptr;
  }
  const std::string& file_name = path.empty() ? module.path : path;
  dwfl_report_begin(dwfl);
  // add_p_vaddr=true: dlpi_addr is the load bias itself, so this is right even for objects
  // whose first PT_LOAD does not start at vaddr 0 (with false libdwfl would subtract it).
  Dwfl_Module* mod = dwfl_report_elf(dwfl, module.path.c_str(), file_name.c_str(), fd,
                                     module.bias, /*add_p_vaddr=*/true);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (mod == nullptr) {
    close(fd);  // not taken over on failure
    dwfl_end(dwfl);
    return nullptr;
  }
  // From here on the Dwfl owns fd. Refuse a file that does not match what is mapped.
  GElf_Addr bias = 0;
  bool usable = dwfl_module_getelf(mod, &bias) != nullptr && bias == module.bias;
  if (usable && !module.build_id.empty()) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int len = dwfl_module_build_id(mod, &bits, &vaddr);
    usable = !(len > 0 && (static_cast<size_t>(len) != module.build_id.size() ||
                           std::memcmp(bits, module.build_id.data(), module.build_id.size()) != 0));
  }
  if (!usable) {
    dwfl_end(dwfl);
    return nullptr;
  }
  try {
    owners_.emplace(mod, dwfl);
  } catch (...) {
    dwfl_end(dwfl);
    throw;
  }
  return mod;
}

}  // namespace inprof::internal
