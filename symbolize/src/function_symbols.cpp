#include "function_symbols.h"
#include "elf_symbols.h"

#include <gelf.h>

#include <algorithm>

namespace inprof::internal {

namespace {

Elf_Scn* FindTable(Elf* elf, GElf_Word type) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr_mem;
    const GElf_Shdr* shdr = gelf_getshdr(scn, &shdr_mem);
    if (shdr != nullptr && shdr->sh_type == type && shdr->sh_entsize != 0) return scn;
  }
  return nullptr;
}

}  // namespace

void FunctionSymbols::Build(Dwfl_Module* module) {
  symbols_.clear();
  if (module == nullptr) return;
  Dwarf_Addr bias = 0;
  Elf* main_elf = dwfl_module_getelf(module, &bias);
  if (main_elf == nullptr) return;
  if (Elf_Scn* table = FindTable(main_elf, SHT_SYMTAB)) {
    Read(main_elf, table, bias);
  } else {
    Dwarf_Addr debug_bias = 0;
    Dwarf* dwarf = dwfl_module_getdwarf(module, &debug_bias);
    Elf* debug_elf = dwarf != nullptr ? dwarf_getelf(dwarf) : nullptr;
    Elf_Scn* debug_table = debug_elf != nullptr ? FindTable(debug_elf, SHT_SYMTAB) : nullptr;
    if (debug_table != nullptr) {
      Read(debug_elf, debug_table, debug_bias);
    } else if (Elf_Scn* dynamic = FindTable(main_elf, SHT_DYNSYM)) {
      Read(main_elf, dynamic, bias);
    }
  }
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.size != b.size) return a.size > b.size;
    return a.order < b.order;
  });
}

void FunctionSymbols::Read(Elf* elf, Elf_Scn* table, Dwarf_Addr bias) {
  GElf_Shdr table_mem;
  const GElf_Shdr* table_shdr = gelf_getshdr(table, &table_mem);
  Elf_Data* data = elf_getdata(table, nullptr);
  if (table_shdr == nullptr || data == nullptr) return;
  const size_t count = table_shdr->sh_size / table_shdr->sh_entsize;
  // Extended section indices, for tables with more than 0xff00 sections.
  Elf_Data* xndx = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr_mem;
    const GElf_Shdr* shdr = gelf_getshdr(scn, &shdr_mem);
    if (shdr != nullptr && shdr->sh_type == SHT_SYMTAB_SHNDX &&
        shdr->sh_link == elf_ndxscn(table)) {
      xndx = elf_getdata(scn, nullptr);
    }
  }
  // bfd names a global symbol's file only when no STT_FILE symbol came between a symbol
  // and the file symbol before it: with several file symbols, it cannot tell which one a
  // global belongs to (locals sort before globals in ELF tables).
  enum { kNothingSeen, kSymbolSeen, kFileAfterSymbolSeen } state = kNothingSeen;
  const char* file = nullptr;
  symbols_.reserve(symbols_.size() + count);
  for (size_t i = 1; i < count; ++i) {  // entry 0 is the null symbol
    GElf_Sym sym;
    Elf32_Word shndx = 0;
    if (gelf_getsymshndx(data, xndx, static_cast<int>(i), &sym, &shndx) == nullptr) continue;
    const char* name = elf_strptr(elf, table_shdr->sh_link, sym.st_name);
    if (name == nullptr || IsMappingSymbol(name)) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    const int binding = GELF_ST_BIND(sym.st_info);
    if (type == STT_FILE) {
      file = name;
      if (state == kSymbolSeen) state = kFileAfterSymbolSeen;
      continue;
    }
    if (state == kNothingSeen) state = kSymbolSeen;
    if (type == STT_SECTION || type == STT_OBJECT || type == STT_TLS) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS || sym.st_shndx == SHN_COMMON) {
      continue;
    }
    // Hidden local sizeless NOTYPE labels are annobin markers, not functions (bfd).
    if (sym.st_size == 0 && binding == STB_LOCAL && type == STT_NOTYPE &&
        GELF_ST_VISIBILITY(sym.st_other) == STV_HIDDEN) {
      continue;
    }
    const size_t section = sym.st_shndx == SHN_XINDEX ? shndx : sym.st_shndx;
    GElf_Shdr shdr_mem;
    const GElf_Shdr* shdr = gelf_getshdr(elf_getscn(elf, section), &shdr_mem);
    if (shdr == nullptr || (shdr->sh_flags & SHF_ALLOC) == 0) continue;
    const bool named_file =
        file != nullptr && (binding == STB_LOCAL || state != kFileAfterSymbolSeen);
    symbols_.push_back({sym.st_value + bias, sym.st_size != 0 ? sym.st_size : 1,
                        shdr->sh_addr + bias, shdr->sh_addr + bias + shdr->sh_size, name,
                        named_file ? file : nullptr, static_cast<uint32_t>(i)});
  }
}

bool FunctionSymbols::Find(uint64_t address, Match* match) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  // The closest start in the address's section; at one address, the largest symbol, then
  // the first in the table.
  const Symbol* best = nullptr;
  while (it != symbols_.begin()) {
    --it;
    // Sections do not overlap: once a symbol's section ends below the address, no symbol
    // further down is in the address's section.
    if (address >= it->section_end) break;
    if (best != nullptr && it->address != best->address) break;
    best = &*it;
  }
  if (best == nullptr) return false;
  match->name = best->name;
  match->file = best->file;
  match->address = best->address;
  return true;
}

}  // namespace inprof::internal
