// The ranges the Symbolizer adds to the per-user symbol cache (symbol_cache.h)
// when it resolves an address from debug info: every address of the same function (or ELF
// symbol, or stretch of code that neither names) that gets the same answer, as
// [lo, hi) ranges of identical answers. A sampling profiler meets other instructions of the
// same functions on every run; an answer kept for the sampled address alone missed again.
//
// The answer at an address is a step function of it. For DWARF answers it depends on the
// CU libdwfl picks (by .debug_aranges, or by the CUs' own ranges when there are none),
// whether that CU's ranges cover the address, the line table row at or below it, the
// function DIE the CU's function index picks and the code scopes of that function that
// contain it; for a frame named after an ELF symbol, on the symbol the symbol table picks.
// Each changes only at a range end, a row address or a symbol's start, end or section end
// ("cuts"): between two consecutive cuts every address gets the same answer. An extent is
// cut at all of them, each piece is resolved at its start through the Symbolizer's own
// lookup (AnswerLookup) and neighbours with the same answer are joined, so a range holds
// exactly what a lookup gives. Cuts are a superset: an extra one costs one more lookup.
//
// Thread-safety: one instance per file, used under the Symbolizer's serialisation.
#ifndef INPROF_SYMBOLIZE_CACHE_RANGES_H_
#define INPROF_SYMBOLIZE_CACHE_RANGES_H_

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "symbol_cache.h"

namespace inprof::internal {

// What an answer was made from, for deciding where else it holds.
struct AnswerSource {
  bool dwarf = false;              // a CU with DWARF covers the address
  bool symbol = false;             // a frame is named after an ELF symbol
  bool offset_name = false;        // a frame is named module+0xoffset (rebuilt from each address)
  const void* function = nullptr;  // the outermost frame's function DIE; null: none
};

// The Symbolizer's lookup in one file, which the ranges are resolved with.
class AnswerLookup {
 public:
  // The answer for file-relative `offset` (ELF vaddr) in cached form, and its source.
  virtual void Answer(uint64_t offset, std::vector<CachedFrame>* out, AnswerSource* source) = 0;
  // The (demangled) ELF symbol name for `offset`, or nullptr: one pointer per name.
  virtual const std::string* SymbolName(uint64_t offset) = 0;

 protected:
  ~AnswerLookup() = default;
};

class CacheRanges {
 public:
  // `module`: the file as libdwfl has it, at absolute address = file vaddr + `bias`;
  // `cache`: its cache file (outlives this object); `with_dwarf`: libdwfl found DWARF.
  CacheRanges(Dwfl_Module* module, uint64_t bias, SymbolCacheFile* cache, bool with_dwarf);
  CacheRanges(const CacheRanges&) = delete;
  CacheRanges& operator=(const CacheRanges&) = delete;

  // Adds to the cache the ranges of every address of the function, symbol or unnamed code
  // that the answer for `offset`, made from `source`, came from; for a function in a small
  // CU, those of the whole CU. Throws std::bad_alloc only. Not async-signal-safe.
  void Add(uint64_t offset, const AnswerSource& source, AnswerLookup& lookup);

 private:
  struct Function {
    Dwarf_Addr low, high;
    Dwarf_Die die;
  };
  // Per CU: its own ranges' ends and its functions as the InlineResolver indexes them.
  struct Cu {
    std::vector<Dwarf_Addr> cuts;
    std::vector<Function> functions;
    uint64_t code_bytes = 0;  // the size of its ranges
    bool whole = false;       // all its functions were added
  };
  struct Unit {
    Dwarf_Addr low, high;
    Dwarf_Die die;
  };

  void BuildUnitCuts();
  void BuildSymbolCuts();
  void BuildSections();
  Cu& CuCutsFor(Dwarf_Die* cu);
  // The CU the InlineResolver uses for `address` (absolute), or null.
  Dwarf_Die* CuAt(uint64_t address, Dwarf_Die* scratch);
  // The run of symbol-cut intervals around `address` (absolute) named by its symbol.
  bool SymbolExtent(uint64_t address, uint64_t* lo, uint64_t* hi);
  // The run of symbol-cut intervals around `address` that no symbol names, inside its
  // executable section.
  bool UnnamedExtent(uint64_t address, uint64_t* lo, uint64_t* hi);
  // Cuts inside [lo, hi) where libdwfl's CU choice or a chosen CU's ranges change.
  void UnitPoints(uint64_t lo, uint64_t hi, std::vector<uint64_t>* points);
  // The answers over `source`'s extent (around `address`) in `cu` (null: none).
  void AddExtent(Dwarf_Die* cu, const AnswerSource& source, uint64_t address);
  const std::string* SymbolAt(uint64_t address) { return lookup_->SymbolName(address - bias_); }

  Dwfl_Module* module_;
  uint64_t bias_;  // where libdwfl has the file
  SymbolCacheFile* cache_;
  bool with_dwarf_;
  AnswerLookup* lookup_ = nullptr;  // during Add()

  Dwarf* dwarf_ = nullptr;
  Dwarf_Addr dwarf_bias_ = 0;  // absolute address = DWARF address + dwarf_bias_
  // libdwfl's CU choice: .debug_aranges entries' ends (libdwfl stretches an entry up to the
  // next one), or without .debug_aranges (`!aranges_`) the CUs' own ranges, in CU order.
  bool aranges_ = true;
  std::vector<Dwarf_Addr> unit_cuts_;  // DWARF addresses, sorted
  std::vector<Unit> units_;
  std::unordered_map<const void*, Cu> cus_;  // keyed by the CU DIE's data
  bool symbols_built_ = false;
  std::vector<uint64_t> symbol_cuts_;  // absolute, sorted, unique
  bool sections_built_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> sections_;  // executable, absolute, sorted
  std::vector<CachedFrame> piece_;                       // scratch
};

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_CACHE_RANGES_H_
