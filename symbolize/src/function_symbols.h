// A module's function symbols as binutils looks them up when DWARF does not name a
// function (bfd's elf_find_function, which addr2line, objdump -l and perf's srcline use):
// the closest symbol at or below the address in the same section, whatever its size, and
// the source file named by the STT_FILE symbol before it in the table.
//
// This differs on purpose from ElfSymbolTable (libdwfl's rules, a symbol must contain the
// address): `inprof addr2line` must print what binutils prints, including for addresses in
// padding after a function.
#ifndef INPROF_SYMBOLIZE_FUNCTION_SYMBOLS_H_
#define INPROF_SYMBOLIZE_FUNCTION_SYMBOLS_H_

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace inprof::internal {

class FunctionSymbols {
 public:
  struct Match {
    const char* name = nullptr;
    const char* file = nullptr;  // STT_FILE name (may be ""); null when the table gives none
    uint64_t address = 0;
  };

  // Reads the module's .symtab, in table order (bfd's order, which decides between aliases):
  // the file's own, else its separate debug file's, else the file's .dynsym.
  // Not async-signal-safe.
  void Build(Dwfl_Module* module);

  // False when no function symbol of the address's section starts at or below it.
  bool Find(uint64_t address, Match* match) const;

  size_t size() const { return symbols_.size(); }

 private:
  struct Symbol {
    uint64_t address;
    uint64_t size;  // st_size, or 1 for sizeless labels (as bfd counts them)
    uint64_t section_begin;
    uint64_t section_end;
    const char* name;
    const char* file;
    uint32_t order;
  };
  void Read(Elf* elf, Elf_Scn* table, Dwarf_Addr bias);

  std::vector<Symbol> symbols_;  // by address, then larger size first, then table order
};

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_FUNCTION_SYMBOLS_H_
