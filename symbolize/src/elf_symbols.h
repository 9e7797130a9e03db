// A module's ELF symbols sorted by address, for addresses without DWARF.
//
// dwfl_module_addrinfo scans the whole symbol table on every call (44–260 µs per lookup in
// libc: docs/platform-facts.md, "Symbolization with libdwfl"); a sorted copy answers in
// O(log n). The choice between candidates mirrors dwfl_module_addrinfo so results agree
// with eu-addr2line: a sized symbol containing the address beats a sizeless one;
// global/weak symbols beat locals; the closest start wins, then the stronger binding, then
// the smaller size, then table order; a sizeless (assembly) label is used only when nothing
// sized contains the address, it is not below the end of a sized symbol, and the address is
// in the label's section.
#ifndef INPROF_SYMBOLIZE_ELF_SYMBOLS_H_
#define INPROF_SYMBOLIZE_ELF_SYMBOLS_H_

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace inprof::internal {

// An ELF mapping symbol of the Arm (and RISC-V) ABIs: "$x" (code starts here), "$d" (data),
// "$a", "$t", optionally followed by ".anything". They mark what kind of bytes follow, name
// no function, and sit inside functions, so they are never an address's name (as binutils
// and perf skip them).
inline bool IsMappingSymbol(const char* name) {
  return name[0] == '$' && (name[1] == 'x' || name[1] == 'd' || name[1] == 'a' || name[1] == 't') &&
         (name[2] == '\0' || name[2] == '.');
}

class ElfSymbolTable {
 public:
  // Reads the module's symbols (.symtab from the file or its separate debug file, else
  // .dynsym, plus any .gnu_debugdata table). Not async-signal-safe.
  void Build(Dwfl_Module* module);

  // The symbol name for `address` (absolute), or nullptr. The name stays valid while the
  // module's Dwfl does.
  const char* Find(uint64_t address) const;

  size_t size() const { return symbols_.size(); }

 private:
  struct Symbol {
    uint64_t address;
    uint64_t size;
    uint64_t section_end;  // sizeless symbols only: end of their section (exclusive)
    const char* name;
    uint32_t order;   // index in the module's table
    uint8_t binding;  // 3 global, 2 weak, 1 local, 0 other (as libdwfl ranks them)
    bool local;       // STB_LOCAL: only considered when no global symbol matches
  };
  static bool Better(const Symbol& candidate, const Symbol& current);

  std::vector<Symbol> symbols_;    // sorted by address, then order
  std::vector<uint64_t> max_end_;  // max_end_[i] = max(address + size) over symbols_[0..i]
};

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_ELF_SYMBOLS_H_
