// Copies the loader's view of the process (dl_iterate_phdr) into plain data.
//
// Everything that reads an object's memory (program headers, the build-id note, the vDSO
// image) happens inside the dl_iterate_phdr callback: the loader lock is held there, so a
// concurrent dlclose() cannot unmap the object under us. Path canonicalisation and file I/O
// happen later, outside the lock, so other threads' dlopen() is not held up by our disk reads.
#include "loaded_objects.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>

namespace inprof::internal {
namespace {

constexpr size_t kCountersEnd = offsetof(dl_phdr_info, dlpi_subs) + sizeof(dl_phdr_info::dlpi_subs);

int ReadCountersCallback(dl_phdr_info* info, size_t size, void* data) {
  auto* counters = static_cast<LoaderCounters*>(data);
  if (size >= kCountersEnd) {
    counters->adds = info->dlpi_adds;
    counters->subs = info->dlpi_subs;
    counters->valid = true;
  }
  return 1;  // the counters are process-wide: the first entry is enough
}

// True when [vaddr, vaddr + size) lies in the file-backed part of a PT_LOAD segment, i.e. the
// bytes are mapped and readable now.
bool InFileBackedLoad(const dl_phdr_info& info, uint64_t vaddr, uint64_t size) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_R) && vaddr >= ph.p_vaddr && size <= ph.p_filesz &&
        vaddr - ph.p_vaddr <= ph.p_filesz - size) {
      return true;
    }
  }
  return false;
}

std::vector<uint8_t> BuildIdFromMemory(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_NOTE || !InFileBackedLoad(info, ph.p_vaddr, ph.p_filesz)) continue;
    const auto* notes = reinterpret_cast<const unsigned char*>(info.dlpi_addr + ph.p_vaddr);
    std::vector<uint8_t> id = FindGnuBuildId(notes, ph.p_filesz, ph.p_align == 8 ? 8 : 4);
    if (!id.empty()) return id;
  }
  return {};
}

// The vDSO has no file; libdwfl needs one, so the symbolizer later writes this copy to a
// memfd. The kernel maps the whole image (section headers included), so the copy covers the
// file extent, clamped to the mapping of the PT_LOAD that holds the ELF header.
std::vector<char> CopyVdsoImage(const dl_phdr_info& info, uint64_t ehdr_address) {
  uint64_t mapped_end = 0;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    const uint64_t begin = info.dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && ehdr_address >= begin && ehdr_address < begin + ph.p_memsz) {
      const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
      mapped_end = (begin + ph.p_memsz + page - 1) & ~(page - 1);
    }
  }
  if (mapped_end <= ehdr_address || mapped_end - ehdr_address < sizeof(ElfW(Ehdr))) return {};
  const uint64_t mapped = mapped_end - ehdr_address;
  const auto* ehdr = reinterpret_cast<const ElfW(Ehdr)*>(ehdr_address);
  if (std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0) return {};

  uint64_t size = 0;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) size = std::max<uint64_t>(size, ph.p_offset + ph.p_filesz);
  }
  const uint64_t shdr_end =
      ehdr->e_shoff + static_cast<uint64_t>(ehdr->e_shnum) * ehdr->e_shentsize;
  if (shdr_end <= mapped) size = std::max(size, shdr_end);
  size = std::min(size, mapped);
  const char* base = reinterpret_cast<const char*>(ehdr_address);
  return std::vector<char>(base, base + size);
}

struct SnapshotState {
  std::vector<LoadedObject>* out;
  LoaderCounters* counters;
  uint64_t main_phdr;
  uint64_t vdso_ehdr;
  bool failed;
};

int SnapshotCallback(dl_phdr_info* info, size_t size, void* data) {
  auto* state = static_cast<SnapshotState*>(data);
  if (size >= kCountersEnd && state->counters != nullptr) {
    state->counters->adds = info->dlpi_adds;
    state->counters->subs = info->dlpi_subs;
    state->counters->valid = true;
  }
  try {
    LoadedObject object;
    object.bias = info->dlpi_addr;
    const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
    bool is_vdso = false;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      if (ph.p_type != PT_LOAD) continue;
      const uint64_t begin = info->dlpi_addr + ph.p_vaddr;
      object.segments.push_back({begin, begin + ph.p_memsz, (ph.p_flags & PF_X) != 0, ph.p_offset});
      if (state->vdso_ehdr != 0 && state->vdso_ehdr >= begin &&
          state->vdso_ehdr < begin + ph.p_memsz) {
        is_vdso = true;
      }
    }
    if (object.segments.empty()) return 0;
    if (is_vdso) {
      object.kind = ObjectKind::kVdso;
      object.name = "[vdso]";
      object.image = CopyVdsoImage(*info, state->vdso_ehdr);
    } else if (name[0] == '\0') {
      // glibc names the main program "". Anything else without a name has no file to read.
      if (reinterpret_cast<uint64_t>(info->dlpi_phdr) != state->main_phdr) return 0;
      object.kind = ObjectKind::kMainExecutable;
    } else {
      object.kind = ObjectKind::kSharedObject;
      object.name = name;
    }
    object.build_id = BuildIdFromMemory(*info);
    state->out->push_back(std::move(object));
  } catch (const std::bad_alloc&) {
    state->failed = true;
    return 1;
  }
  return 0;
}

}  // namespace

std::vector<uint8_t> FindGnuBuildId(const unsigned char* notes, size_t size, size_t align) {
  if (notes == nullptr || (align != 4 && align != 8)) return {};
  const auto round_up = [align](size_t n) { return (n + align - 1) & ~(align - 1); };
  size_t pos = 0;
  while (pos <= size && size - pos >= 12) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, notes + pos, 4);
    std::memcpy(&descsz, notes + pos + 4, 4);
    std::memcpy(&type, notes + pos + 8, 4);
    const size_t name_off = pos + 12;
    if (namesz > size - name_off) break;
    // The descriptor starts at the next `align` boundary after the name, counted from the
    // note's start (so with 8-byte notes a 4-byte name needs no padding after the header).
    const size_t desc_off = pos + round_up(12 + size_t{namesz});
    if (desc_off > size || descsz > size - desc_off) break;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(notes + name_off, "GNU", 4) == 0) {
      return std::vector<uint8_t>(notes + desc_off, notes + desc_off + descsz);
    }
    const size_t next = desc_off + round_up(descsz);
    if (next <= pos) break;
    pos = next;
  }
  return {};
}

LoaderCounters ReadLoaderCounters() {
  LoaderCounters counters;
  dl_iterate_phdr(ReadCountersCallback, &counters);
  return counters;
}

std::vector<LoadedObject> SnapshotLoadedObjects(LoaderCounters* counters) {
  std::vector<LoadedObject> objects;
  objects.reserve(64);
  SnapshotState state{&objects, counters, getauxval(AT_PHDR), getauxval(AT_SYSINFO_EHDR), false};
  dl_iterate_phdr(SnapshotCallback, &state);
  if (state.failed) throw std::bad_alloc();
  return objects;
}

}  // namespace inprof::internal
