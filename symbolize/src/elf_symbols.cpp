#include "elf_symbols.h"

#include <gelf.h>

#include <algorithm>
#include <cstdint>

namespace inprof::internal {
namespace {

uint8_t BindingRank(const GElf_Sym& sym) {
  switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

void ElfSymbolTable::Build(Dwfl_Module* module) {
  symbols_.clear();
  max_end_.clear();
  const int count = module != nullptr ? dwfl_module_getsymtab(module) : -1;
  if (count <= 0) return;
  symbols_.reserve(static_cast<size_t>(count));
  for (int i = 1; i < count; ++i) {  // entry 0 is the null symbol
    GElf_Sym sym;
    GElf_Addr address = 0;
    GElf_Word shndx = SHN_UNDEF;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module, i, &sym, &address, &shndx, &elf, &bias);
    if (name == nullptr || name[0] == '\0' || sym.st_shndx == SHN_UNDEF) continue;
    if (IsMappingSymbol(name)) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    if (shndx == static_cast<GElf_Word>(-1)) continue;  // not in an allocated section

    // A size running past the end of the address space is garbage: treat it as unknown.
    const uint64_t size = sym.st_size <= UINT64_MAX - address ? sym.st_size : 0;
    Symbol s{address,
             size,
             0,
             name,
             static_cast<uint32_t>(i),
             BindingRank(sym),
             GELF_ST_BIND(sym.st_info) == STB_LOCAL};
    if (s.size == 0) {
      // Absolute labels only match exactly (as in libdwfl).
      s.section_end = address + 1;
      if (shndx < SHN_LORESERVE && elf != nullptr) {
        GElf_Shdr shdr_mem;
        const GElf_Shdr* shdr = gelf_getshdr(elf_getscn(elf, shndx), &shdr_mem);
        if (shdr != nullptr && shdr->sh_addr + shdr->sh_size + bias > address) {
          s.section_end = shdr->sh_addr + shdr->sh_size + bias;
        }
      }
    }
    symbols_.push_back(s);
  }
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.address != b.address ? a.address < b.address : a.order < b.order;
  });
  max_end_.resize(symbols_.size());
  uint64_t max_end = 0;
  for (size_t i = 0; i < symbols_.size(); ++i) {
    max_end = std::max(max_end, symbols_[i].address + symbols_[i].size);
    max_end_[i] = max_end;
  }
}

bool ElfSymbolTable::Better(const Symbol& candidate, const Symbol& current) {
  if (candidate.address != current.address) return candidate.address > current.address;
  const auto beats = [](const Symbol& a, const Symbol& b) {
    return (b.size > a.size && b.binding <= a.binding) ||
           (b.size >= a.size && b.binding < a.binding);
  };
  if (beats(candidate, current)) return true;
  if (beats(current, candidate)) return false;
  return candidate.order < current.order;
}

const char* ElfSymbolTable::Find(uint64_t address) const {
  const auto hi = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                                   [](uint64_t a, const Symbol& s) { return a < s.address; });
  const size_t end = static_cast<size_t>(hi - symbols_.begin());
  if (end == 0) return nullptr;
  // libdwfl's min_label: a sizeless label below the end of a sized symbol that starts at
  // or before the address belongs to that symbol's body, not to the address.
  const uint64_t min_label = max_end_[end - 1];

  const Symbol* sized[2] = {nullptr, nullptr};  // [0] global/weak, [1] local
  const Symbol* label = nullptr;
  for (size_t i = end; i-- > 0;) {
    const Symbol& s = symbols_[i];
    if (s.size != 0) {
      const int cls = s.local ? 1 : 0;
      if (address - s.address < s.size && (sized[cls] == nullptr || Better(s, *sized[cls]))) {
        sized[cls] = &s;
      }
    } else if (s.address >= min_label && address < s.section_end &&
               (label == nullptr || s.address == label->address)) {
      // The closest label wins; at one address the stronger binding, then table order.
      if (label == nullptr || s.binding > label->binding ||
          (s.binding == label->binding && s.order < label->order)) {
        label = &s;
      }
    }
    // Stop once nothing further down can contain the address (max_end_ is a prefix
    // maximum) and no label further down can qualify or beat the one found.
    if (max_end_[i] <= address &&
        (s.address < min_label || (label != nullptr && s.address < label->address))) {
      break;
    }
  }
  if (sized[0] != nullptr) return sized[0]->name;
  if (sized[1] != nullptr) return sized[1]->name;
  return label != nullptr ? label->name : nullptr;
}

}  // namespace inprof::internal
