// Ranges of identical answers for the per-user symbol cache (cache_ranges.h).
#include "cache_ranges.h"
#include "elf_symbols.h"
#include "inline_chain.h"

#include <dwarf.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>

namespace inprof::internal {
namespace {

// A CU whose code is this small is cached whole when one of its functions is resolved.
constexpr uint64_t kWholeCuBytes = 16 << 10;
// How many symbol-cut intervals an extent may grow by on each side.
constexpr size_t kMaxSteps = 64;

// Calls f(low, high) for each non-empty address range of `die`.
template <typename F>
void ForEachRange(Dwarf_Die* die, F f) {
  Dwarf_Addr base = 0;
  Dwarf_Addr low = 0;
  Dwarf_Addr high = 0;
  ptrdiff_t offset = 0;
  while ((offset = dwarf_ranges(die, offset, &base, &low, &high)) > 0) {
    if (high > low) f(low, high);
  }
}

// The functions the InlineResolver indexes for a CU (InlineResolver::Collect): the same
// walk, so that the DIE it picks is among them.
template <typename Function>
void CollectFunctions(Dwarf_Die* parent, int depth, std::vector<Function>* out) {
  Dwarf_Die child;
  if (depth > 64 || dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) {
      ForEachRange(&child, [&](Dwarf_Addr low, Dwarf_Addr high) {
        out->push_back({low, high, child});
      });
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
      if (dwarf_haschildren(&child) > 0) CollectFunctions(&child, depth + 1, out);
    } else if (tag == DW_TAG_imported_unit) {
      Dwarf_Attribute attr;
      Dwarf_Die unit;
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) != nullptr &&
          dwarf_tag(&unit) != DW_TAG_compile_unit) {
        CollectFunctions(&unit, depth + 1, out);
      }
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

// The ends of every code scope's ranges inside `die` (a superset of the InlineResolver's
// scope tree, which leaves out scopes under a scope without ranges).
void ScopeCuts(Dwarf_Die* die, int depth, std::vector<Dwarf_Addr>* out) {
  Dwarf_Die child;
  if (depth > 256 || dwarf_child(die, &child) != 0) return;
  do {
    if (!IsCodeScope(dwarf_tag(&child))) continue;
    ForEachRange(&child, [out](Dwarf_Addr low, Dwarf_Addr high) {
      out->push_back(low);
      out->push_back(high);
    });
    ScopeCuts(&child, depth + 1, out);
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace

CacheRanges::CacheRanges(Dwfl_Module* module, uint64_t bias, SymbolCacheFile* cache,
                         bool with_dwarf)
    : module_(module), bias_(bias), cache_(cache), with_dwarf_(with_dwarf) {
  BuildUnitCuts();
}

void CacheRanges::BuildUnitCuts() {
  dwarf_ = dwfl_module_getdwarf(module_, &dwarf_bias_);
  Dwarf_Aranges* aranges = nullptr;
  size_t count = 0;
  if (dwarf_ == nullptr || dwarf_getaranges(dwarf_, &aranges, &count) != 0) return;
  if (count != 0) {
    for (size_t i = 0; i < count; ++i) {
      Dwarf_Addr start = 0;
      Dwarf_Word length = 0;
      if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start, &length, nullptr) == 0) {
        unit_cuts_.push_back(start);
        unit_cuts_.push_back(start + length);
      }
    }
  } else {
    // What the InlineResolver does without .debug_aranges: the first CU, in CU order, whose
    // ranges hold the address.
    aranges_ = false;
    Dwarf_Addr bias = 0;
    for (Dwarf_Die* cu = dwfl_module_nextcu(module_, nullptr, &bias); cu != nullptr;
         cu = dwfl_module_nextcu(module_, cu, &bias)) {
      ForEachRange(cu, [&](Dwarf_Addr low, Dwarf_Addr high) {
        units_.push_back({low, high, *cu});
        unit_cuts_.push_back(low);
        unit_cuts_.push_back(high);
      });
    }
  }
  std::sort(unit_cuts_.begin(), unit_cuts_.end());
}

// ElfSymbolTable::Find's choice for an address depends on the symbols starting at or below
// it, their ends and their sections' ends: it changes only at one of those.
void CacheRanges::BuildSymbolCuts() {
  symbols_built_ = true;
  const int count = dwfl_module_getsymtab(module_);
  for (int i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr address = 0;
    GElf_Word shndx = SHN_UNDEF;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module_, i, &sym, &address, &shndx, &elf, &bias);
    // The symbols ElfSymbolTable ignores change no answer.
    if (name == nullptr || IsMappingSymbol(name)) continue;
    symbol_cuts_.push_back(address);
    symbol_cuts_.push_back(address + 1);
    if (sym.st_size <= UINT64_MAX - address) symbol_cuts_.push_back(address + sym.st_size);
    GElf_Shdr shdr_mem;
    const GElf_Shdr* shdr = shndx < SHN_LORESERVE && elf != nullptr
                                ? gelf_getshdr(elf_getscn(elf, shndx), &shdr_mem)
                                : nullptr;
    if (shdr != nullptr) symbol_cuts_.push_back(shdr->sh_addr + shdr->sh_size + bias);
  }
  std::sort(symbol_cuts_.begin(), symbol_cuts_.end());
  symbol_cuts_.erase(std::unique(symbol_cuts_.begin(), symbol_cuts_.end()), symbol_cuts_.end());
}

// The file's executable sections (.plt, .plt.sec, .text, ...) from its own section headers.
void CacheRanges::BuildSections() {
  sections_built_ = true;
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module_, &bias);
  if (elf == nullptr) return;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS ||
        (shdr.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR) ||
        shdr.sh_size == 0 || shdr.sh_addr + bias > UINT64_MAX - shdr.sh_size) {
      continue;
    }
    sections_.emplace_back(shdr.sh_addr + bias, shdr.sh_addr + bias + shdr.sh_size);
  }
  std::sort(sections_.begin(), sections_.end());
}

CacheRanges::Cu& CacheRanges::CuCutsFor(Dwarf_Die* cu) {
  auto [it, inserted] = cus_.try_emplace(cu->addr);
  Cu& unit = it->second;
  if (inserted) {
    ForEachRange(cu, [&unit](Dwarf_Addr low, Dwarf_Addr high) {
      unit.cuts.push_back(low);
      unit.cuts.push_back(high);
      unit.code_bytes += high - low;
    });
    CollectFunctions(cu, 0, &unit.functions);
  }
  return unit;
}

Dwarf_Die* CacheRanges::CuAt(uint64_t address, Dwarf_Die* scratch) {
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(module_, address, &bias)) return cu;
  if (aranges_) return nullptr;
  const Dwarf_Addr pc = address - dwarf_bias_;
  for (const Unit& unit : units_) {
    if (pc >= unit.low && pc < unit.high) {
      *scratch = unit.die;
      return scratch;
    }
  }
  return nullptr;
}

// The symbol naming `address` names everything between two symbol cuts; the extent is the
// run of such intervals around it named by that symbol (a symbol's start is a cut, and so
// is the byte after it, where only an absolute label could stop matching).
bool CacheRanges::SymbolExtent(uint64_t address, uint64_t* lo, uint64_t* hi) {
  const std::vector<uint64_t>& c = symbol_cuts_;
  const auto it = std::upper_bound(c.begin(), c.end(), address);
  if (it == c.begin() || it == c.end()) return false;
  size_t first = static_cast<size_t>(it - c.begin()) - 1;  // [c[first], c[last])
  size_t last = first + 1;
  const std::string* name = SymbolAt(address);
  if (name == nullptr) return false;
  for (size_t n = 0; n < kMaxSteps && first > 0 && SymbolAt(c[first - 1]) == name; ++n) {
    --first;
  }
  for (size_t n = 0; n < kMaxSteps && last + 1 < c.size() && SymbolAt(c[last]) == name; ++n) {
    ++last;
  }
  *lo = c[first];
  *hi = c[last];
  return true;
}

// Code no symbol names: the same between two symbol cuts, and below the first cut or from
// the last one on (no symbol starts below the first; none reaches past the last). Bounded
// by the executable section holding the address: outside sections nothing is code, and
// the PLT sections (.plt, .plt.got, .plt.sec) are each one range.
bool CacheRanges::UnnamedExtent(uint64_t address, uint64_t* lo, uint64_t* hi) {
  if (!sections_built_) BuildSections();
  auto section =
      std::upper_bound(sections_.begin(), sections_.end(), std::make_pair(address, UINT64_MAX));
  if (section == sections_.begin() || address >= std::prev(section)->second) return false;
  const auto [section_lo, section_hi] = *std::prev(section);
  if (SymbolAt(address) != nullptr) return false;
  const std::vector<uint64_t>& c = symbol_cuts_;
  // The interval holding the address: [c[first - 1], c[first]), c[-1] and c[size] being
  // the section's ends.
  size_t first = static_cast<size_t>(std::upper_bound(c.begin(), c.end(), address) - c.begin());
  size_t last = first;
  // The interval below c[first - 1] is [c[first - 2], c[first - 1]), unnamed when its start
  // is, or everything below c[0].
  for (size_t n = 0; n < kMaxSteps && first > 0 && c[first - 1] > section_lo &&
                     (first == 1 || SymbolAt(c[first - 2]) == nullptr);
       ++n) {
    --first;
  }
  for (size_t n = 0;
       n < kMaxSteps && last < c.size() && c[last] < section_hi && SymbolAt(c[last]) == nullptr;
       ++n) {
    ++last;
  }
  *lo = first == 0 ? section_lo : std::max(c[first - 1], section_lo);
  *hi = last == c.size() ? section_hi : std::min(c[last], section_hi);
  return *lo <= address && address < *hi;
}

// Where libdwfl's CU choice may change, and the ranges of each CU it chooses in [lo, hi)
// (libgcc's soft-float routines in libc are among CUs with DWARF).
void CacheRanges::UnitPoints(uint64_t lo, uint64_t hi, std::vector<uint64_t>* points) {
  if (dwarf_ == nullptr) return;
  const uint64_t shift = dwarf_bias_;
  std::vector<uint64_t> starts = {lo};
  auto u = std::upper_bound(unit_cuts_.begin(), unit_cuts_.end(), lo - shift);
  for (; u != unit_cuts_.end() && *u + shift < hi; ++u) starts.push_back(*u + shift);
  points->insert(points->end(), starts.begin() + 1, starts.end());
  for (uint64_t start : starts) {
    Dwarf_Die scratch;
    if (Dwarf_Die* unit = CuAt(start, &scratch)) {
      ForEachRange(unit, [&](Dwarf_Addr low, Dwarf_Addr high) {
        for (const uint64_t a : {low + shift, high + shift}) {
          if (a > lo && a < hi) points->push_back(a);
        }
      });
    }
  }
}

void CacheRanges::Add(uint64_t offset, const AnswerSource& source, AnswerLookup& lookup) {
  lookup_ = &lookup;
  if ((source.symbol || source.offset_name) && !symbols_built_) BuildSymbolCuts();
  const uint64_t address = bias_ + offset;
  if (source.offset_name) {
    // A DWARF answer without a function name or symbol (code of an assembler CU no symbol
    // covers) keeps its address alone: its extent would be the CU's rows, not worth it.
    if (!source.dwarf) AddExtent(nullptr, source, address);
    return;
  }
  if (!source.dwarf) {
    if (source.symbol) AddExtent(nullptr, source, address);
    return;
  }
  Dwarf_Die cu_scratch;
  Dwarf_Die* cu = CuAt(address, &cu_scratch);
  if (cu == nullptr) return;
  Cu& unit = CuCutsFor(cu);
  AddExtent(cu, source, address);
  // A small CU (a C file of libc) whole: the next run of a sampled program meets functions
  // this one did not, and those are often the neighbours of the ones it met (genops.c's
  // _IO_setb next to _IO_default_xsputn). A large one (C++) would cost too much here.
  if (source.function == nullptr || unit.whole || unit.code_bytes > kWholeCuBytes) return;
  unit.whole = true;
  std::vector<CachedFrame> known;
  for (size_t i = 0; i < unit.functions.size(); ++i) {
    const Function& f = unit.functions[i];
    const void* die = f.die.addr;
    bool first = true;  // the function's first range: done once per function
    for (size_t j = 0; j < i && first; ++j) first = unit.functions[j].die.addr != die;
    if (!first || die == source.function || cache_->Find(f.low + dwarf_bias_ - bias_, &known)) {
      continue;
    }
    AnswerSource other;
    other.dwarf = true;
    other.function = die;
    AddExtent(cu, other, 0);
  }
}

// The extent (the function, the symbol's extent, or the unnamed code's) is cut where any
// input of the answer may change; each piece is resolved at its start, pieces of the same
// kind (the same function, symbol or none) are kept, and neighbours with the same answer
// are joined into one range. Pieces whose answer came from another function or CU are left
// out: their cuts were not all collected.
void CacheRanges::AddExtent(Dwarf_Die* cu, const AnswerSource& source, uint64_t address) {
  // Work in absolute addresses: DWARF ones are shifted by dwarf_bias_.
  const uint64_t shift = dwarf_bias_;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  std::vector<uint64_t> points;

  if (!source.dwarf) {
    // Named by a symbol, or by nothing, without DWARF: the same between two symbol cuts,
    // where no CU covers the address. Where one might: UnitPoints.
    uint64_t lo = 0;
    uint64_t hi = 0;
    const bool found =
        source.offset_name ? UnnamedExtent(address, &lo, &hi) : SymbolExtent(address, &lo, &hi);
    if (!found) return;
    extents.emplace_back(lo, hi);
    UnitPoints(lo, hi, &points);
  } else {
    const Cu& unit = CuCutsFor(cu);
    Dwarf_Die function;
    if (source.function != nullptr) {
      bool found = false;
      for (const Function& f : unit.functions) {
        if (f.die.addr != source.function) continue;
        extents.emplace_back(f.low + shift, f.high + shift);
        function = f.die;
        found = true;
      }
      if (!found) return;
    } else {
      uint64_t lo = 0;
      uint64_t hi = 0;
      if (!source.symbol || !SymbolExtent(address, &lo, &hi)) return;
      extents.emplace_back(lo, hi);
    }
    // Only cuts strictly inside an extent matter; the whole CU's would cost a sort each.
    const auto add = [&extents, &points](uint64_t a) {
      for (const auto& [lo, hi] : extents) {
        if (a > lo && a < hi) {
          points.push_back(a);
          return;
        }
      }
    };
    if (source.function != nullptr) {
      std::vector<Dwarf_Addr> scopes;
      ScopeCuts(&function, 0, &scopes);
      for (Dwarf_Addr a : scopes) add(a + shift);
    }
    for (Dwarf_Addr a : unit.cuts) add(a + shift);
    for (const Function& f : unit.functions) {
      add(f.low + shift);
      add(f.high + shift);
    }
    for (const auto& [lo, hi] : extents) {
      // unit_cuts_ are sorted; libdw keeps a CU's rows in address order.
      auto u = std::upper_bound(unit_cuts_.begin(), unit_cuts_.end(), lo - shift);
      for (; u != unit_cuts_.end() && *u + shift < hi; ++u) add(*u + shift);
      Dwarf_Lines* lines = nullptr;
      size_t count = 0;
      if (dwarf_getsrclines(cu, &lines, &count) != 0) continue;
      const auto row = [lines](size_t i) {
        Dwarf_Addr a = 0;
        dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
        return a;
      };
      size_t first = 0;  // the first row above lo
      for (size_t n = count; n > 0;) {
        const size_t half = n / 2;
        if (row(first + half) + shift <= lo) {
          first += half + 1;
          n -= half + 1;
        } else {
          n = half;
        }
      }
      for (size_t i = first; i < count && row(i) + shift < hi; ++i) add(row(i) + shift);
    }
  }
  if (source.symbol || source.offset_name) {
    for (const auto& [lo, hi] : extents) {
      auto c = std::upper_bound(symbol_cuts_.begin(), symbol_cuts_.end(), lo);
      for (; c != symbol_cuts_.end() && *c < hi; ++c) points.push_back(*c);
    }
  }

  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  Dwarf_Die piece_cu_scratch;
  for (const auto& [lo, hi] : extents) {
    // Pieces [start, end) of the extent, each resolved at its start.
    uint64_t range_lo = 0;
    bool open = false;
    std::vector<CachedFrame> range_answer;
    const auto close = [&](uint64_t end) {
      if (open) cache_->Add(range_lo - bias_, end - bias_, range_answer, with_dwarf_);
      open = false;
    };
    uint64_t start = lo;
    auto next = std::upper_bound(points.begin(), points.end(), lo);
    while (start < hi) {
      const uint64_t end = next == points.end() ? hi : std::min<uint64_t>(*next, hi);
      if (next != points.end()) ++next;
      AnswerSource piece;
      lookup_->Answer(start - bias_, &piece_, &piece);
      bool keep = piece.offset_name == source.offset_name && piece.dwarf == source.dwarf &&
                  piece.function == source.function && (!piece.symbol || source.symbol);
      if (keep && source.dwarf) {
        Dwarf_Die* piece_cu = CuAt(start, &piece_cu_scratch);
        keep = piece_cu != nullptr && piece_cu->addr == cu->addr;
      }
      if (!keep) {
        close(start);
      } else if (open && range_answer.size() == piece_.size() &&
                 SameFrames(range_answer.data(), static_cast<uint32_t>(range_answer.size()),
                            piece_.data(), static_cast<uint32_t>(piece_.size()))) {
        // the range goes on
      } else {
        close(start);
        range_lo = start;
        range_answer = piece_;
        open = true;
      }
      start = end;
    }
    close(hi);
  }
}

}  // namespace inprof::internal
