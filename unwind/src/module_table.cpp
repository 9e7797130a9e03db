// Reads the loaded modules with dl_iterate_phdr (control path only: it takes the loader
// lock) and locates each module's .eh_frame_hdr search table, so that unwinding never has to
// ask the loader again (libunwind's local address space would call dl_iterate_phdr on every
// cache miss).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "module_table.h"

namespace inprof::internal {
namespace {

// DW_EH_PE_* encodings used by .eh_frame_hdr.
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeDatarelSdata4 = 0x3b;

// Size of a fixed-size pointer encoding (low nibble), 0 for the variable-size or unknown ones.
size_t EncodedSize(uint8_t encoding) {
  switch (encoding & 0x0f) {
    case 0x00:
      return sizeof(uintptr_t);  // absptr
    case 0x02:
    case 0x0a:
      return 2;  // udata2, sdata2
    case 0x03:
    case 0x0b:
      return 4;  // udata4, sdata4
    case 0x04:
    case 0x0c:
      return 8;  // udata8, sdata8
    default:
      return 0;
  }
}

uint64_t ReadUnsigned(const uint8_t* p, size_t size) {
  uint64_t value = 0;
  std::memcpy(&value, p, size);  // little-endian targets only (x86-64, aarch64)
  return value;
}

// Fills `table` and `fde_count` from the header at `hdr` when its table is the binary-search
// table every unwinder understands (datarel sdata4 entries). Layout:
//   u8 version, u8 eh_frame_ptr_enc, u8 fde_count_enc, u8 table_enc,
//   encoded eh_frame_ptr, encoded fde_count, table[fde_count] of {initial_loc, fde}.
void ParseEhFrameHdr(UnwindModule* module) {
  const auto* p = reinterpret_cast<const uint8_t*>(module->eh_frame_hdr);
  if (p[0] != 1 || p[2] == kPeOmit || p[3] != kPeDatarelSdata4) return;
  const size_t ptr_size = EncodedSize(p[1]);
  const size_t count_size = EncodedSize(p[2]);
  if (ptr_size == 0 || count_size == 0) return;
  const uint64_t count = ReadUnsigned(p + 4 + ptr_size, count_size);
  if (count == 0) return;
  module->fde_count = count;
  module->table = module->eh_frame_hdr + 4 + ptr_size + count_size;
}

struct Collect {
  std::vector<UnwindModule>* modules;
  std::vector<std::pair<uintptr_t, uintptr_t>>* segments;  // with module index below
  std::vector<uint32_t>* segment_module;
  uint64_t adds = 0, subs = 0;
  bool first = true;
};

int OnModule(dl_phdr_info* info, size_t size, void* arg) {
  auto* c = static_cast<Collect*>(arg);
  if (c->first && size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  c->first = false;
  UnwindModule module;
  module.name = info->dlpi_name ? info->dlpi_name : "";
  module.bias = info->dlpi_addr;
  const auto index = static_cast<uint32_t>(c->modules->size());
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && ph.p_memsz > 0) {
      c->segments->emplace_back(lo, lo + ph.p_memsz);
      c->segment_module->push_back(index);
      if (ph.p_flags & PF_X) {
        module.code_lo = module.code_lo == 0 ? lo : std::min(module.code_lo, lo);
        module.code_hi = std::max<uintptr_t>(module.code_hi, lo + ph.p_memsz);
      }
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      module.eh_frame_hdr = lo;
    }
  }
  if (module.code_hi == 0) return 0;
  if (module.eh_frame_hdr != 0) ParseEhFrameHdr(&module);
  c->modules->push_back(std::move(module));
  return 0;
}

struct Counters {
  uint64_t adds = 0, subs = 0;
};

int OnFirstModule(dl_phdr_info* info, size_t size, void* arg) {
  auto* counters = static_cast<Counters*>(arg);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    counters->adds = info->dlpi_adds;
    counters->subs = info->dlpi_subs;
  }
  return 1;
}

}  // namespace

Status ModuleTable::Refresh() {
  std::vector<UnwindModule> modules;
  std::vector<std::pair<uintptr_t, uintptr_t>> segments;
  std::vector<uint32_t> segment_module;
  Collect collect{&modules, &segments, &segment_module};
  dl_iterate_phdr(OnModule, &collect);
  if (modules.empty()) {
    return Status::Unavailable("dl_iterate_phdr reported no module with executable code");
  }
  modules_ = std::move(modules);
  adds_ = collect.adds;
  subs_ = collect.subs;
  code_.clear();
  segments_.clear();
  for (uint32_t i = 0; i < modules_.size(); ++i) {
    code_.push_back({modules_[i].code_lo, modules_[i].code_hi, i});
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    // Segments of modules without code were skipped above; their indices do not matter
    // for Readable(), which only needs the ranges.
    segments_.push_back({segments[i].first, segments[i].second, segment_module[i]});
  }
  auto by_lo = [](const Range& a, const Range& b) { return a.lo < b.lo; };
  std::sort(code_.begin(), code_.end(), by_lo);
  std::sort(segments_.begin(), segments_.end(), by_lo);
  return Status::Ok();
}

bool ModuleTable::Changed() const {
  Counters now;
  dl_iterate_phdr(OnFirstModule, &now);
  return now.adds != adds_ || now.subs != subs_;
}

const UnwindModule* ModuleTable::FindCode(uintptr_t pc) const {
  auto it = std::upper_bound(code_.begin(), code_.end(), pc,
                             [](uintptr_t value, const Range& r) { return value < r.lo; });
  if (it == code_.begin()) return nullptr;
  --it;
  return pc < it->hi ? &modules_[it->module] : nullptr;
}

bool ModuleTable::Readable(uintptr_t address, size_t size) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                             [](uintptr_t value, const Range& r) { return value < r.lo; });
  if (it == segments_.begin()) return false;
  --it;
  return address + size >= address && address + size <= it->hi;
}

}  // namespace inprof::internal
