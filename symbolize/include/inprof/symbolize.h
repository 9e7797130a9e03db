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
  // are kept so their samples still resolve: the newest 256 of them; older ones are
  // forgotten, with their cached answers. Cheap when nothing changed (adds/subs counters).
  // Symbolize() refreshes too, when it meets an address in no known module.
  // Not async-signal-safe.
  void RefreshModules();

  // Resolves `address` (an interrupted pc, or a return address minus one) to its frames,
  // innermost first; the last element is the real (non-inlined) function. Never empty.
  // The reference stays valid until the Symbolizer is destroyed, with two exceptions: the
  // answer for an address in no known module ("[unknown]", e.g. JIT code: not cached, so
  // that such addresses cost no memory) until the next Symbolize(), and the answers in a
  // module unloaded long ago until the refresh that forgets it (RefreshModules, or a
  // Symbolize() that refreshes). Not async-signal-safe.
  const std::vector<SymbolizedFrame>& Symbolize(uint64_t address);

  // Executable address ranges [begin, end) of all currently loaded modules.
  // Not async-signal-safe.
  std::vector<std::pair<uint64_t, uint64_t>> ExecutableRanges();

  // Every module seen so far (unloaded ones too), one entry per executable segment: canonical
  // path, absolute [start, limit), the file offset of `start`, and the build-id as lower-case
  // hex (empty when the module has none). For profile formats that describe mappings.
  struct MappedModule {
    std::string path;
    uint64_t start = 0;
    uint64_t limit = 0;
    uint64_t offset = 0;
    std::string build_id;
  };
  std::vector<MappedModule> Modules();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One frame of an address in an ELF file, named the way binutils' addr2line names it, so
// that tools built on FileSymbolizer can print exactly what addr2line prints.
struct FileFrame {
  std::string function;   // raw (mangled) name; empty when unknown ("??")
  std::string file;       // as DWARF gives it, joined with its directory; not canonicalised
  bool has_file = false;  // false: unknown ("??"); true with an empty `file` is possible
  uint32_t line = 0;      // 0 when unknown
  uint32_t column = 0;    // 0 when unknown
  uint32_t discriminator = 0;
  bool inlined = false;  // true for every frame of the chain except the outermost one
};

struct FileLocation {
  // False when no allocated section holds the address, or neither DWARF nor a function
  // symbol covers it (addr2line prints "??:0"). `frames` is then empty.
  bool found = false;
  std::vector<FileFrame> frames;  // innermost first
};

// Symbolizes addresses of one ELF file on disk (an executable, shared library or separate
// debug file's main file), as `addr2line -e FILE` does: addresses are the file's own
// link-time virtual addresses (what objdump, nm and perf's dso offsets show). Separate debug
// info is found locally through the build-id and .gnu_debuglink (/usr/lib/debug), never
// through debuginfod. DWARF 2-5 and compressed sections are read through libdw.
//
// Indexes are built lazily and kept: a sorted function-symbol table per file, and per
// compile unit, on its first lookup, its functions by address range and each function's
// inline scopes; lookups after that are binary searches. Results are cached per address.
//
// Thread-safety: not thread-safe; one instance per thread. Not async-signal-safe.
class FileSymbolizer {
 public:
  // Opens `path`. On failure returns nullptr and sets `*error` to a message that names
  // the file ("'x': No such file", "'x': not an ELF file").
  static std::unique_ptr<FileSymbolizer> Open(const std::string& path, std::string* error);
  ~FileSymbolizer();
  FileSymbolizer(const FileSymbolizer&) = delete;
  FileSymbolizer& operator=(const FileSymbolizer&) = delete;

  // The frames for `address`. The reference stays valid until the next call.
  const FileLocation& Lookup(uint64_t address);

  // The address range [*begin, *end) of the allocated section `name` (for addresses given
  // relative to a section, `addr2line -j`); false when the file has no such section.
  bool SectionRange(const std::string& name, uint64_t* begin, uint64_t* end) const;

  // The value of the first symbol named `name` in the file's own symbol table (.symtab, else
  // .dynsym), for "symbol+offset" input as addr2line 2.40 reads it; false when none.
  bool SymbolValue(const std::string& name, uint64_t* value) const;

  // True for 64-bit ELF files (addresses are printed with 16 hex digits, else 8).
  bool is_64bit() const;

 private:
  struct Impl;
  explicit FileSymbolizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Demangles a C++ symbol as `addr2line -C` and `nm -C` print it ("_Z1fi" -> "f(int)",
// "_Z1fv.cold" -> "f() [clone .cold]"; a "@VERSION" suffix is kept). Anything that is not a
// mangled name comes back unchanged. Not async-signal-safe.
std::string DemangleSymbol(const std::string& name);

}  // namespace inprof

#endif  // INPROF_SYMBOLIZE_H_
