// Local-only separate debug info lookup (see kOfflineCallbacks in dwfl_session.cpp).
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "internal/dwfl_session.h"
#include "internal/source_paths.h"

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

}  // namespace

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
      const int cfd = open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
      if (cfd < 0) continue;
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
