// Address -> source resolution for the running process, off the signal path.
//
// A Symbolizer keeps a map of every module (executable, shared library, dlopen'ed library)
// it has seen in this process, including ones unloaded since, and resolves an address to
// its inline chain with libdwfl: function (demangled), canonical absolute file, line,
// column. Results are cached per address. Fallbacks, in order: ELF symbol name without
// file:line, then "module+0xoffset", then "[unknown]" for addresses in no module.
//
// Thread-safety: a Symbolizer is not thread-safe; callers serialise access. It must never
// be used from a signal handler (libdwfl allocates and reads files).
#ifndef INPROF_SYMBOLIZE_H_
#define INPROF_SYMBOLIZE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace inprof {

struct SymbolizedFrame {
  std::string function;  // demangled; ELF symbol, "module+0x1a2b" or "[unknown]" as fallback
  std::string file;      // canonical absolute path (realpath when it exists); empty if unknown
  uint32_t line = 0;     // 0 when unknown
  uint32_t column = 0;   // 0 when unknown
  bool inlined = false;  // true for every frame of the chain except the outermost one
  std::string module;    // canonical path of the module; empty for [unknown]
  uint64_t module_offset = 0;  // address relative to the module's load bias
};

struct SymbolizerOptions {
  // Source path prefixes rewritten after resolution: {"/build/root", "/home/me/checkout"}.
  std::vector<std::pair<std::string, std::string>> path_map;
};

class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Takes the current module list (dl_iterate_phdr). Modules seen before and unloaded since
  // are kept so their samples still resolve. Cheap when nothing changed (adds/subs counters).
  // Not async-signal-safe.
  void RefreshModules();

  // Resolves `address` (an interrupted pc, or a return address minus one) to its frames,
  // innermost first; the last element is the real (non-inlined) function. Never empty.
  // The reference stays valid until the Symbolizer is destroyed. Not async-signal-safe.
  const std::vector<SymbolizedFrame>& Symbolize(uint64_t address);

  // Executable address ranges [begin, end) of all currently loaded modules.
  // Not async-signal-safe.
  std::vector<std::pair<uint64_t, uint64_t>> ExecutableRanges();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inprof

#endif  // INPROF_SYMBOLIZE_H_
