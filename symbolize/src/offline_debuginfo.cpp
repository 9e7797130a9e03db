// Local-only file lookup: separate debug info for libdwfl (see kOfflineCallbacks in
// dwfl_session.cpp), and the files of a recorded process's modules, checked by build-id.
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dwfl_session.h"
#include "regular_file.h"
#include "source_paths.h"
#include "symbol_cache.h"

namespace inprof::internal {
namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

bool CrcMatches(int fd, uint32_t expected) {
  std::vector<unsigned char> buffer(1 << 16);
  uint32_t crc = 0;
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0) return false;
    if (n == 0) break;
    crc = DebuglinkCrc32(crc, buffer.data(), static_cast<size_t>(n));
  }
  return crc == expected;
}

bool BuildIdMatches(int fd, const unsigned char* bits, int len) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  const void* id = nullptr;
  const ssize_t id_len = dwelf_elf_gnu_build_id(elf, &id);
  const bool match = id_len == len && std::memcmp(id, bits, static_cast<size_t>(len)) == 0;
  elf_end(elf);
  return match;
}

// For a file without build-id: every recorded segment is a PT_LOAD of the file at the same
// place (vaddr, size, file offset). A rebuilt file rarely keeps them all.
bool SegmentsMatch(int fd, const Module& module) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  std::vector<GElf_Phdr> loads;
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) == 0) {
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
        loads.push_back(ph);
      }
    }
  }
  elf_end(elf);
  if (loads.size() != module.segments.size()) return false;
  for (const Segment& s : module.segments) {
    bool found = false;
    for (const GElf_Phdr& ph : loads) {
      found = found || (ph.p_vaddr == s.begin - module.bias && ph.p_memsz == s.end - s.begin &&
                        ph.p_offset == s.file_offset);
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

bool ReadFileBuildId(int fd, std::vector<uint8_t>* build_id) {
  build_id->clear();
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  const bool is_elf = elf_kind(elf) == ELF_K_ELF;
  const void* id = nullptr;
  const ssize_t len = is_elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
  if (len > 0) {
    const auto* bytes = static_cast<const uint8_t*>(id);
    build_id->assign(bytes, bytes + len);
  }
  elf_end(elf);
  return is_elf;
}

RecordedFile OpenRecordedFile(const Module& module, const std::vector<std::string>& debug_dirs) {
  RecordedFile out;
  const std::string expected = BuildIdHex(module.build_id);
  std::vector<uint8_t> id;
  std::string at_path;  // what is wrong with the file at the recorded path
  // The path is the recording's: it may name a FIFO or a device here (OpenRegularFile).
  StatusOr<int> opened = OpenRegularFile(module.path.c_str());
  int fd = opened.ok() ? *opened : -1;
  if (!opened.ok()) {
    at_path = opened.status().message();
  } else if (!ReadFileBuildId(fd, &id)) {
    at_path = "not an ELF file";
  } else if (module.build_id.empty()) {
    if (SegmentsMatch(fd, module)) {
      out.fd = fd;
      out.path = module.path;
      return out;
    }
    at_path = "its segments differ from the recorded ones (rebuilt since?)";
  } else if (id == module.build_id) {
    out.fd = fd;
    out.path = module.path;
    return out;
  } else {
    at_path = "build-id " + expected + " expected, the file has " +
              (id.empty() ? std::string("none") : BuildIdHex(id)) + " (rebuilt since?)";
  }
  if (fd >= 0) close(fd);

  const std::string shown_as = ": frames show as " + std::string(Basename(module.path)) + "+0x…";
  if (module.build_id.empty()) {
    out.problem = module.path + ": " + at_path + "; it has no build-id to look it up by" + shown_as;
    return out;
  }
  std::vector<std::string> dirs;
  for (const std::string& dir : debug_dirs) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  dirs.push_back("/usr/lib/debug");
  const std::string id_path = "/.build-id/" + expected.substr(0, 2) + "/" + expected.substr(2);
  const std::string base(Basename(module.path));
  std::string searched;
  for (const std::string& dir : dirs) {
    for (const std::string& candidate :
         {dir + id_path, JoinPath(dir, base), dir + id_path + ".debug"}) {
      StatusOr<int> candidate_fd = OpenRegularFile(candidate.c_str());
      if (!candidate_fd.ok()) continue;
      fd = *candidate_fd;
      if (ReadFileBuildId(fd, &id) && id == module.build_id) {
        out.fd = fd;
        out.path = candidate;
        return out;
      }
      close(fd);
    }
    searched += searched.empty() ? dir : ", " + dir;
  }
  out.problem = module.path + ": " + at_path + "; found none by build-id in " + searched + shown_as;
  return out;
}

uint32_t DebuglinkCrc32(uint32_t crc, const unsigned char* data, size_t size) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

int FindDebuginfoOffline(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                         const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                         char** debuginfo_file_name) {
  const int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
                                              debuglink_file, debuglink_crc, debuginfo_file_name);
  if (fd >= 0) return fd;
  // A zero CRC is how libdwfl asks for a dwz alternate file (and a debuglink without one
  // cannot be verified): the build-id lookup above is all we do for those.
  if (file_name == nullptr || debuglink_file == nullptr || debuglink_crc == 0 ||
      debuglink_file[0] == '\0' || std::strchr(debuglink_file, '/') != nullptr) {
    return -1;
  }
  try {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int bits_len = dwfl_module_build_id(mod, &bits, &vaddr);
    struct stat main_stat {};
    const bool have_main_stat = stat(file_name, &main_stat) == 0;

    std::string dir(file_name);
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
    const std::string candidates[] = {
        JoinPath(dir, debuglink_file),
        JoinPath(dir + "/.debug", debuglink_file),
        JoinPath("/usr/lib/debug" + (dir.front() == '/' ? dir : "/" + dir), debuglink_file),
    };
    for (const std::string& candidate : candidates) {
      // The debuglink name is the object file's, which may be anyone's.
      StatusOr<int> opened = OpenRegularFile(candidate.c_str());
      if (!opened.ok()) continue;
      const int cfd = *opened;
      struct stat st {};
      const bool is_main = have_main_stat && fstat(cfd, &st) == 0 &&
                           st.st_dev == main_stat.st_dev && st.st_ino == main_stat.st_ino;
      const bool valid = !is_main && (bits_len > 0 ? BuildIdMatches(cfd, bits, bits_len)
                                                   : CrcMatches(cfd, debuglink_crc));
      if (valid && lseek(cfd, 0, SEEK_SET) == 0) {
        free(*debuginfo_file_name);
        *debuginfo_file_name = strdup(candidate.c_str());
        return cfd;
      }
      close(cfd);
    }
  } catch (...) {
    // Out of memory while building candidate names: no debug info, not a crash.
  }
  return -1;
}

}  // namespace inprof::internal
