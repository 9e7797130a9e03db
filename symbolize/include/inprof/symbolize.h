// Address -> source resolution for the running process, off the signal path.
//
// A Symbolizer keeps a map of every module (executable, shared library, dlopen'ed library)
// it has seen in this process, including ones unloaded since, and resolves an address to
// its inline chain with libdwfl: function (demangled), canonical absolute file, line,
// column. Results are cached per address. Fallbacks, in order: ELF symbol name without
// file:line, then "module+0xoffset", then "[unknown]" for addresses in no module.
//
// A Symbolizer can also resolve addresses of another process, recorded earlier (offline
// mode, UseRecordedModules): `inprof record` and `inprof symbolize-profile` symbolize raw
// profiles that way, with the answers the process itself would have given. Answers can be
// kept across processes in a per-user cache keyed by build-id (SymbolizerOptions::cache_dir),
// so that a process resolving addresses it resolved in an earlier run skips reading debug
// info (docs/symbolizer.md, "Offline" and "Cache").
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

#include "inprof/raw_profile.h"
#include "inprof/status.h"

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
  // Directories where files are also looked for by build-id, in this order: DIR/.build-id/xx/
  // rest (the file itself, as perf's build-id cache and debuginfod's client cache keep it),
  // DIR/<basename of the recorded path> when its build-id matches, DIR/.build-id/xx/rest.debug
  // (separate debug info, which libdwfl also finds there for a file found elsewhere).
  // /usr/lib/debug is always searched last. Files of the running process are looked for
  // here only for their separate debug info; a recorded file missing or replaced at its
  // path (offline mode) is looked for here as a whole.
  std::vector<std::string> debug_dirs;
  // The per-user cache of answers by build-id (DefaultSymbolCacheDir()); empty: no cache.
  std::string cache_dir;
};

// Measured since the Symbolizer was constructed.
struct SymbolizerStats {
  uint64_t addresses = 0;     // distinct addresses resolved (each once per process recorded)
  uint64_t cache_hits = 0;    // of those, answered from the per-user cache
  uint64_t cache_misses = 0;  // looked up in the cache, not found: resolved from debug info
  uint64_t files = 0;         // files opened with libdwfl (a file shared by processes: once)
  double seconds = 0;         // time spent resolving them (answers given before: not timed)
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

  // Live mode: the modules known now (loaded ones, and unloaded ones still kept), as a raw
  // profile stores them: canonical path, load bias, build-id, every PT_LOAD segment.
  // Offline mode: the modules given to UseRecordedModules. Not async-signal-safe.
  std::vector<RawModule> RecordedModules();

  // Offline mode: from now on, resolves addresses of a recorded process whose modules these
  // are, instead of this process's (RefreshModules then does nothing). May be called again
  // for the next process: the state kept per file (libdwfl module, indexes, answers by file
  // offset) stays, so a library shared by 200 processes at 200 load addresses is opened and
  // indexed once. Answers handed out before stay valid; addresses are from then on those of
  // the new process. A file is found at its recorded path when its build-id matches (or,
  // without build-id, its segment layout), else by build-id in debug_dirs and
  // /usr/lib/debug; the vDSO is this process's when its build-id is the recorded one. A file
  // not found that way is never guessed: its frames are "name+0xoffset", with one warning
  // (Warnings()). Not async-signal-safe.
  void UseRecordedModules(const std::vector<RawModule>& modules);

  // Since construction. Not async-signal-safe.
  SymbolizerStats Stats() const;

  // One line per file that could not be used as recorded, e.g. "/usr/bin/x: build-id 1234…
  // expected, the file has 5678… (rebuilt since?); found none by build-id in /usr/lib/debug:
  // frames show as x+0x…". Not async-signal-safe.
  std::vector<std::string> Warnings() const;

  // Writes the answers resolved since the last save to the per-user cache: one file per
  // build-id that gained answers, merged with what is there now, replaced atomically. Also
  // done by the destructor; call it after a batch (an export) in a long-lived process. A
  // cache directory that cannot be written is given up on quietly. Not async-signal-safe.
  void SaveCache();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The per-user symbol cache directory: $INPROF_SYMBOL_CACHE ("off" or "0": none), else
// $XDG_CACHE_HOME/inprof/symbols, else $HOME/.cache/inprof/symbols; "" when none can be
// determined. Not async-signal-safe.
std::string DefaultSymbolCacheDir();

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
// inline scopes; lookups after that are binary searches. Answers are kept per address only
// when a later lookup would not repeat them (bfd's first-lookup names).
//
// Thread-safety: not thread-safe; one instance per thread. Not async-signal-safe.
class FileSymbolizer {
 public:
  // Opens `path`. On failure a message that names the file ("'x': No such file" kNotFound,
  // "x: file format not recognized" kInvalidArgument).
  static StatusOr<std::unique_ptr<FileSymbolizer>> Open(const std::string& path);
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
