// Symbolizer: module map + libdwfl + per-address cache, and the per-user symbol cache.
//
// Resolution order for an address: the module that contains it (loaded now, or unloaded
// since; or, offline, in the recorded process), then the answers already given for that
// file and offset (by this process or an earlier recorded one), then the per-user cache
// for the file's build-id, then DWARF (inline chain, file:line), then the module's ELF
// symbols, then "module+0xoffset"; "[unknown]" when no module ever covered it. An answer
// resolved from the file is kept in the per-user cache for every address of its function
// that gets the same one (AddRanges).
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inprof/symbolize.h"
#include "internal/demangle.h"
#include "internal/dwfl_session.h"
#include "internal/elf_symbols.h"
#include "internal/inline_chain.h"
#include "internal/loaded_objects.h"
#include "internal/module_map.h"
#include "internal/source_paths.h"
#include "internal/symbol_cache.h"

namespace inprof {

using internal::CachedFrame;
using internal::DwarfFrame;
using internal::ObjectKind;

namespace {

constexpr const char kUnknownFunction[] = "[unknown]";
constexpr const char kNoName[] = "??";
// A CU whose code is this small is cached whole when one of its functions is resolved.
constexpr uint64_t kWholeCuBytes = 16 << 10;

// Resolution state per file: shared by every module (mapping) of the same file, in this
// process or in the recorded processes, so a library that is loaded at another address
// (after a dlclose, or in another process) is read by libdwfl once. The file is reported at
// the bias of its first mapping; an address of another mapping is looked up at
// bias + (address - that mapping's bias).
// Where the inputs of an answer may change, for AddRanges. The InlineResolver's answer at
// a DWARF address is a function of: the CU libdwfl picks for it (by .debug_aranges, or by
// the CUs' own ranges when there are none), whether that CU's ranges cover it, the line
// table row at or below it, the function DIE the CU's function index picks, the code scopes
// of that function that contain it, and, for a frame named after an ELF symbol, the symbol
// the symbol table picks. Each changes only at a range end, a row address or a symbol's
// start, end or section end: between two consecutive such "cuts" every address gets the
// same answer. Built per file when first needed; cuts are a superset (extra ones only cost
// one more resolution).
struct AnswerCuts {
  bool built = false;
  Dwarf* dwarf = nullptr;
  Dwarf_Addr dwarf_bias = 0;  // absolute address = DWARF address + dwarf_bias
  // libdwfl's CU choice: .debug_aranges entries' ends (libdwfl stretches an entry up to the
  // next one), or without .debug_aranges (`!aranges`) the CUs' own ranges, in CU order.
  bool aranges = true;
  std::vector<Dwarf_Addr> unit_cuts;
  struct Unit {
    Dwarf_Addr low, high;
    Dwarf_Die die;
  };
  std::vector<Unit> units;
  // Per CU (keyed by its DIE's data): its own ranges' ends and its functions as the
  // InlineResolver indexes them (top-level, in namespaces, in imported partial units).
  struct Function {
    Dwarf_Addr low, high;
    Dwarf_Die die;
  };
  struct Cu {
    std::vector<Dwarf_Addr> cuts;
    std::vector<Function> functions;
    uint64_t code_bytes = 0;  // the size of its ranges
    bool whole = false;       // all its functions were added (AddRanges)
  };
  std::unordered_map<const void*, Cu> cus;
  bool symbols_built = false;
  std::vector<uint64_t> symbol_cuts;  // absolute, sorted, unique
};

struct ModuleDebug {
  bool opened = false;          // the file was looked for (once; only when an answer needs it)
  Dwfl_Module* dwfl = nullptr;  // null: file unusable, only "module+0x" names
  uint64_t bias = 0;            // where libdwfl has the file
  bool with_dwarf = false;      // libdwfl found DWARF for it
  std::unique_ptr<internal::InlineResolver> dwarf;  // set together with dwfl
  bool symbols_built = false;
  internal::ElfSymbolTable symbols;
  std::unique_ptr<internal::SymbolCacheFile> cache;  // null: not cached (no build-id or no dir)
  bool cache_loaded = false;
  std::unique_ptr<AnswerCuts> cuts;  // when the cache first needs them
  size_t users = 0;                  // live modules mapping the file
  // Answers by file-relative address (ELF vaddr). A node map: CacheEntry points into it.
  std::unordered_map<uint64_t, std::vector<SymbolizedFrame>> answers;
};

struct CacheEntry {
  const std::vector<SymbolizedFrame>* frames = nullptr;
  size_t module = SIZE_MAX;  // module id the answer came from
};

// What makes two mappings the same file: its path, build-id and segment layout relative to
// the load bias (a file without build-id replaced on disk between two loads differs there).
std::string FileKey(const internal::Module& module) {
  std::string key = module.path;
  key += '\0';
  key.append(module.build_id.begin(), module.build_id.end());
  for (const internal::Segment& s : module.segments) {
    char layout[64];
    std::snprintf(layout, sizeof layout, "|%" PRIx64 "+%" PRIx64, s.begin - module.bias,
                  s.end - s.begin);
    key += layout;
  }
  return key;
}

std::string OffsetName(const internal::Module& module, uint64_t offset) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "+0x%" PRIx64, offset);
  std::string name(internal::Basename(module.path));
  name += suffix;
  return name;
}

RawModule::Kind RawKind(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kMainExecutable:
      return RawModule::Kind::kMainExecutable;
    case ObjectKind::kVdso:
      return RawModule::Kind::kVdso;
    case ObjectKind::kSharedObject:
      break;
  }
  return RawModule::Kind::kSharedObject;
}

ObjectKind ObjectKindOf(RawModule::Kind kind) {
  switch (kind) {
    case RawModule::Kind::kMainExecutable:
      return ObjectKind::kMainExecutable;
    case RawModule::Kind::kVdso:
      return ObjectKind::kVdso;
    case RawModule::Kind::kSharedObject:
      break;
  }
  return ObjectKind::kSharedObject;
}

// Lower- or upper-case hex; empty (no build-id) when it is not hex.
std::vector<uint8_t> BuildIdBytes(const std::string& hex) {
  std::vector<uint8_t> out;
  if (hex.size() % 2 != 0) return out;
  const auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]);
    const int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return out;
}

// What an answer was made from, for deciding where else it holds.
struct AnswerSource {
  bool dwarf = false;              // a CU with DWARF covers the address
  bool symbol = false;             // a frame is named after an ELF symbol
  bool offset_name = false;        // a frame is named module+0xoffset: differs per address
  const void* function = nullptr;  // the outermost frame's function DIE; null: none
};

bool IsCodeScope(int tag) {  // as the InlineResolver's scope trees
  switch (tag) {
    case DW_TAG_lexical_block:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:
    case DW_TAG_entry_point:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_with_stmt:
    case DW_TAG_module:
      return true;
    default:
      return false;
  }
}

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
void CollectFunctions(Dwarf_Die* parent, int depth, std::vector<AnswerCuts::Function>* out) {
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

bool SameString(const char* a, const char* b) {
  return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}

bool SameAnswer(const std::vector<CachedFrame>& a, const std::vector<CachedFrame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameString(a[i].function, b[i].function) || !SameString(a[i].file, b[i].file) ||
        !SameString(a[i].comp_dir, b[i].comp_dir) || a[i].line != b[i].line ||
        a[i].column != b[i].column || a[i].inlined != b[i].inlined) {
      return false;
    }
  }
  return true;
}

}  // namespace

struct Symbolizer::Impl {
  explicit Impl(SymbolizerOptions options)
      : debug_dirs(std::move(options.debug_dirs)),
        cache_dir(std::move(options.cache_dir)),
        dwfl(debug_dirs),
        paths(internal::PathMap(std::move(options.path_map))) {}

  void Refresh();
  // Drops the per-module state and cached answers of modules the map forgot.
  void Forget(const std::vector<size_t>& ids);
  ModuleDebug& DebugFor(internal::Module& module);
  // Looks for the file (once) and hands it to libdwfl.
  void Open(ModuleDebug& info, internal::Module& module);
  // The answer for `address`; nullptr when it is in no module (then in `unknown`).
  const std::vector<SymbolizedFrame>* Resolve(uint64_t address, size_t* module_id);
  bool FromCache(ModuleDebug& info, const internal::Module& module, uint64_t offset,
                 std::vector<SymbolizedFrame>* out);
  void FromDebugInfo(ModuleDebug& info, internal::Module& module, uint64_t offset,
                     std::vector<SymbolizedFrame>* out);
  // The answer for `offset` of an opened file in its cached form (names final, source
  // paths as DWARF gives them), and what it was made from.
  void Answer(ModuleDebug& info, uint64_t offset, std::vector<CachedFrame>* out,
              AnswerSource* source);
  // The frames of an answer in cached form, as Symbolize() returns them.
  void Materialize(const std::vector<CachedFrame>& cached, const internal::Module& module,
                   uint64_t offset, std::vector<SymbolizedFrame>* out);
  // Adds to the cache the answers of every address of the function (or symbol) that the
  // answer for `offset`, made from `source`, came from: as ranges of identical answers.
  void AddRanges(ModuleDebug& info, uint64_t offset, const AnswerSource& source);
  // The answers over `source`'s function (or symbol, around `address`) in `cu` (null: none).
  void AddExtentRanges(ModuleDebug& info, Dwarf_Die* cu, const AnswerSource& source,
                       uint64_t address);
  AnswerCuts& CutsFor(ModuleDebug& info);
  AnswerCuts::Cu& CuCutsFor(AnswerCuts& cuts, Dwarf_Die* cu);
  void BuildSymbolCuts(ModuleDebug& info, AnswerCuts& cuts);
  // The CU the InlineResolver uses for `address` (absolute), or null.
  Dwarf_Die* CuAt(ModuleDebug& info, AnswerCuts& cuts, uint64_t address, Dwarf_Die* scratch);
  // The ELF symbol's (demangled) name for `offset`, or nullptr.
  const std::string* SymbolName(ModuleDebug& info, uint64_t offset);
  bool DebugFileExists(const std::vector<uint8_t>& build_id) const;
  const internal::LoadedObject* OwnVdso();

  std::vector<std::string> debug_dirs;
  std::string cache_dir;
  bool cache_writable = true;  // false after a save failed: the cache is read-only for us
  internal::ModuleMap modules;
  internal::DwflSession dwfl;
  // Per file (FileKey), never freed: libdw's strings are referenced by the demangler and
  // path caches. Bounded by the distinct files the process (or the recorded processes)
  // had mapped.
  std::unordered_map<std::string, std::unique_ptr<ModuleDebug>> debug_by_file;
  std::vector<ModuleDebug*> debug;  // indexed by module id; null until first needed
  internal::DemangleCache demangler;
  internal::SourcePathResolver paths;
  // File and comp_dir are strings of libdw's line tables or of a loaded cache file, which
  // live as long as we keep the files (for the Symbolizer's lifetime, as the demangler
  // assumes too): the pair of pointers finds the resolved path without building and hashing
  // the joined name.
  struct PointerPairHash {
    size_t operator()(const std::pair<const char*, const char*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const char*, const char*>, const std::string*, PointerPairHash>
      path_by_pointer;
  const std::string& SourcePath(const char* file, const char* comp_dir) {
    auto [it, inserted] = path_by_pointer.try_emplace({file, comp_dir}, nullptr);
    if (inserted) it->second = &paths.Resolve(file, comp_dir);
    return *it->second;
  }
  // Answers for addresses in a known module, one per distinct address sampled (pointing
  // into their file's answers). They are final, which keeps samples taken before a
  // dlclose() resolving to the library they were taken in, until the module map forgets
  // that library: then its answers go too. Answers in no module are not kept (Symbolize).
  std::unordered_map<uint64_t, CacheEntry> cache;
  std::vector<SymbolizedFrame> unknown;  // the last answer for an address in no module
  std::vector<DwarfFrame> scratch;
  std::vector<CachedFrame> cached_scratch;
  std::vector<CachedFrame> piece_scratch;
  std::vector<RawModule> recorded;  // offline: as given to UseRecordedModules
  std::optional<internal::LoadedObject> own_vdso;
  bool own_vdso_read = false;
  SymbolizerStats stats;
  std::vector<std::string> warnings;
};

void Symbolizer::Impl::Refresh() {
  std::vector<size_t> forgotten;
  modules.Refresh(nullptr, &forgotten);
  if (!forgotten.empty()) Forget(forgotten);
}

void Symbolizer::Impl::Forget(const std::vector<size_t>& ids) {
  std::vector<bool> gone(modules.size(), false);
  for (size_t id : ids) {
    if (id < gone.size()) gone[id] = true;
  }
  for (auto it = cache.begin(); it != cache.end();) {
    const size_t m = it->second.module;
    it = m < gone.size() && gone[m] ? cache.erase(it) : std::next(it);
  }
  for (size_t id : ids) {
    if (id >= debug.size() || debug[id] == nullptr) continue;
    ModuleDebug& info = *debug[id];
    debug[id] = nullptr;
    // No mapping of the file is left: its answers go (the libdwfl state stays, see above).
    if (info.users > 0 && --info.users == 0) info.answers.clear();
  }
}

// Files are handed to libdwfl when an answer needs them, not when discovered: libdwfl
// keeps each file open, a process may map hundreds of libraries it is never sampled in, and
// an answer in the per-user cache needs no file at all.
ModuleDebug& Symbolizer::Impl::DebugFor(internal::Module& module) {
  if (module.id >= debug.size()) debug.resize(module.id + 1, nullptr);
  if (debug[module.id] != nullptr) return *debug[module.id];
  auto [it, inserted] = debug_by_file.try_emplace(FileKey(module));
  if (inserted) {
    it->second = std::make_unique<ModuleDebug>();
    ModuleDebug& info = *it->second;
    info.bias = module.bias;
    // Files without build-id are not cached: nothing would tell a rebuilt file from the
    // one the answers were made for.
    if (!cache_dir.empty() && !module.build_id.empty() && module.build_id.size() <= 64) {
      info.cache = std::make_unique<internal::SymbolCacheFile>(cache_dir, module.build_id);
    }
  }
  ++it->second->users;
  debug[module.id] = it->second.get();
  return *it->second;
}

const internal::LoadedObject* Symbolizer::Impl::OwnVdso() {
  if (!own_vdso_read) {
    own_vdso_read = true;
    for (internal::LoadedObject& object : internal::SnapshotLoadedObjects(nullptr)) {
      if (object.kind == ObjectKind::kVdso) own_vdso = std::move(object);
    }
  }
  return own_vdso ? &*own_vdso : nullptr;
}

void Symbolizer::Impl::Open(ModuleDebug& info, internal::Module& module) {
  if (info.opened) return;
  info.opened = true;
  const std::string shown_as =
      ": frames show as " + std::string(internal::Basename(module.path)) + "+0x…";
  if (!modules.offline()) {
    // Once per file: a second report of the same file would be unsafe.
    info.dwfl = dwfl.Report(module);
  } else if (module.kind == ObjectKind::kVdso) {
    // The vDSO has no file: this process's is the recorded one when the build-ids agree
    // (the same kernel build).
    const internal::LoadedObject* own = OwnVdso();
    if (own != nullptr && !module.build_id.empty() && own->build_id == module.build_id) {
      module.image = own->image;
      info.dwfl = dwfl.Report(module);
    } else {
      warnings.push_back(
          module.path + ": build-id " +
          (module.build_id.empty() ? std::string("none") : internal::BuildIdHex(module.build_id)) +
          " is not this kernel's vDSO (" +
          (own != nullptr ? internal::BuildIdHex(own->build_id) : "none") + ")" + shown_as);
    }
  } else {
    internal::RecordedFile file = internal::OpenRecordedFile(module, debug_dirs);
    if (file.fd < 0) {
      warnings.push_back(std::move(file.problem));
    } else {
      info.dwfl = dwfl.Report(module, file.fd, file.path);
      if (info.dwfl == nullptr) {
        warnings.push_back(module.path + ": libdwfl cannot use " + file.path + shown_as);
      }
    }
  }
  if (info.dwfl != nullptr) {
    ++stats.files;
    info.dwarf = std::make_unique<internal::InlineResolver>(info.dwfl);
    Dwarf_Addr bias = 0;
    info.with_dwarf = dwfl_module_getdwarf(info.dwfl, &bias) != nullptr;
  }
}

const std::string* Symbolizer::Impl::SymbolName(ModuleDebug& info, uint64_t offset) {
  if (info.dwfl == nullptr) return nullptr;
  if (!info.symbols_built) {
    info.symbols_built = true;
    info.symbols.Build(info.dwfl);
  }
  const char* name = info.symbols.Find(info.bias + offset);
  return name != nullptr ? &demangler.Get(name) : nullptr;
}

bool Symbolizer::Impl::DebugFileExists(const std::vector<uint8_t>& build_id) const {
  const std::string hex = internal::BuildIdHex(build_id);
  const std::string id_path = "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  struct stat st {};
  for (const std::string& dir : debug_dirs) {
    if (!dir.empty() && stat((dir + id_path).c_str(), &st) == 0) return true;
  }
  return stat(("/usr/lib/debug" + id_path).c_str(), &st) == 0;
}

// Answers from the cache and from debug info are both built by Materialize from the
// cached form, so they are identical.
bool Symbolizer::Impl::FromCache(ModuleDebug& info, const internal::Module& module, uint64_t offset,
                                 std::vector<SymbolizedFrame>* out) {
  if (!info.cache_loaded) {
    info.cache_loaded = true;
    info.cache->Load();
    // Answers made from symbols only, while debug info is installed now (libc6-dbg after
    // the first run): made again.
    if (!info.cache->made_with_dwarf() && DebugFileExists(module.build_id)) {
      info.cache->DropLoaded();
    }
  }
  if (!info.cache->Find(offset, &cached_scratch)) return false;
  Materialize(cached_scratch, module, offset, out);
  return true;
}

void Symbolizer::Impl::Materialize(const std::vector<CachedFrame>& cached,
                                   const internal::Module& module, uint64_t offset,
                                   std::vector<SymbolizedFrame>* out) {
  out->reserve(cached.size());
  for (const CachedFrame& c : cached) {
    SymbolizedFrame& frame = out->emplace_back();
    frame.function = c.function != nullptr ? c.function : OffsetName(module, offset);
    if (c.file != nullptr) frame.file = SourcePath(c.file, c.comp_dir);
    if (!frame.file.empty()) {  // a line number without its file helps nobody
      frame.line = c.line;
      frame.column = c.column;
    }
    frame.inlined = c.inlined;
    frame.module = module.path;
    frame.module_offset = offset;
  }
}

void Symbolizer::Impl::Answer(ModuleDebug& info, uint64_t offset, std::vector<CachedFrame>* out,
                              AnswerSource* source) {
  out->clear();
  *source = AnswerSource{};
  scratch.clear();
  if (info.dwarf != nullptr && info.dwarf->Resolve(info.bias + offset, &scratch)) {
    source->dwarf = true;
    for (const DwarfFrame& raw : scratch) {
      const char* function = nullptr;  // strings owned by the demangler: they stay
      if (raw.function != nullptr) {
        const std::string& name = demangler.Get(raw.function);
        if (!name.empty()) function = name.c_str();
      }
      if (function == nullptr) {
        if (raw.inlined) {
          function = kNoName;
        } else if (const std::string* name = SymbolName(info, offset)) {
          function = name->c_str();
          source->symbol = true;
        } else {
          source->offset_name = true;
        }
      }
      if (!raw.inlined) source->function = raw.scope;
      out->push_back(
          CachedFrame{function, raw.file, raw.comp_dir, raw.line, raw.column, raw.inlined});
    }
  } else {
    const std::string* name = SymbolName(info, offset);
    source->symbol = name != nullptr;
    source->offset_name = name == nullptr;
    out->push_back(
        CachedFrame{name != nullptr ? name->c_str() : nullptr, nullptr, nullptr, 0, 0, false});
  }
}

void Symbolizer::Impl::FromDebugInfo(ModuleDebug& info, internal::Module& module, uint64_t offset,
                                     std::vector<SymbolizedFrame>* out) {
  Open(info, module);
  AnswerSource source;
  Answer(info, offset, &cached_scratch, &source);
  Materialize(cached_scratch, module, offset, out);
  // Answers made while the file could not be read are not kept.
  if (info.cache == nullptr || info.dwfl == nullptr) return;
  info.cache->Add(offset, offset + 1, cached_scratch, info.with_dwarf);
  AddRanges(info, offset, source);
}

AnswerCuts& Symbolizer::Impl::CutsFor(ModuleDebug& info) {
  if (info.cuts == nullptr) info.cuts = std::make_unique<AnswerCuts>();
  AnswerCuts& cuts = *info.cuts;
  if (cuts.built) return cuts;
  cuts.built = true;
  cuts.dwarf = dwfl_module_getdwarf(info.dwfl, &cuts.dwarf_bias);
  Dwarf_Aranges* aranges = nullptr;
  size_t count = 0;
  if (cuts.dwarf == nullptr || dwarf_getaranges(cuts.dwarf, &aranges, &count) != 0) return cuts;
  if (count != 0) {
    for (size_t i = 0; i < count; ++i) {
      Dwarf_Addr start = 0;
      Dwarf_Word length = 0;
      if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start, &length, nullptr) == 0) {
        cuts.unit_cuts.push_back(start);
        cuts.unit_cuts.push_back(start + length);
      }
    }
  } else {
    // What the InlineResolver does without .debug_aranges: the first CU, in CU order, whose
    // ranges hold the address.
    cuts.aranges = false;
    Dwarf_Addr bias = 0;
    for (Dwarf_Die* cu = dwfl_module_nextcu(info.dwfl, nullptr, &bias); cu != nullptr;
         cu = dwfl_module_nextcu(info.dwfl, cu, &bias)) {
      ForEachRange(cu, [&](Dwarf_Addr low, Dwarf_Addr high) {
        cuts.units.push_back({low, high, *cu});
        cuts.unit_cuts.push_back(low);
        cuts.unit_cuts.push_back(high);
      });
    }
  }
  std::sort(cuts.unit_cuts.begin(), cuts.unit_cuts.end());
  return cuts;
}

// ElfSymbolTable::Find's choice for an address depends on the symbols starting at or below
// it, their ends and their sections' ends: it changes only at one of those.
void Symbolizer::Impl::BuildSymbolCuts(ModuleDebug& info, AnswerCuts& cuts) {
  cuts.symbols_built = true;
  const int count = dwfl_module_getsymtab(info.dwfl);
  for (int i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr address = 0;
    GElf_Word shndx = SHN_UNDEF;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    if (dwfl_module_getsym_info(info.dwfl, i, &sym, &address, &shndx, &elf, &bias) == nullptr) {
      continue;
    }
    cuts.symbol_cuts.push_back(address);
    cuts.symbol_cuts.push_back(address + 1);
    if (sym.st_size <= UINT64_MAX - address) cuts.symbol_cuts.push_back(address + sym.st_size);
    GElf_Shdr shdr_mem;
    const GElf_Shdr* shdr = shndx < SHN_LORESERVE && elf != nullptr
                                ? gelf_getshdr(elf_getscn(elf, shndx), &shdr_mem)
                                : nullptr;
    if (shdr != nullptr) cuts.symbol_cuts.push_back(shdr->sh_addr + shdr->sh_size + bias);
  }
  std::sort(cuts.symbol_cuts.begin(), cuts.symbol_cuts.end());
  cuts.symbol_cuts.erase(std::unique(cuts.symbol_cuts.begin(), cuts.symbol_cuts.end()),
                         cuts.symbol_cuts.end());
}

Dwarf_Die* Symbolizer::Impl::CuAt(ModuleDebug& info, AnswerCuts& cuts, uint64_t address,
                                  Dwarf_Die* scratch_die) {
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(info.dwfl, address, &bias)) return cu;
  if (cuts.aranges) return nullptr;
  const Dwarf_Addr pc = address - cuts.dwarf_bias;
  for (const AnswerCuts::Unit& unit : cuts.units) {
    if (pc >= unit.low && pc < unit.high) {
      *scratch_die = unit.die;
      return scratch_die;
    }
  }
  return nullptr;
}

// Answers named module+0xoffset differ per address and are kept for their address alone.
void Symbolizer::Impl::AddRanges(ModuleDebug& info, uint64_t offset, const AnswerSource& source) {
  if (source.offset_name || (!source.dwarf && !source.symbol)) return;
  AnswerCuts& cuts = CutsFor(info);
  if (source.symbol && !cuts.symbols_built) BuildSymbolCuts(info, cuts);
  const uint64_t address = info.bias + offset;
  if (!source.dwarf) {
    AddExtentRanges(info, nullptr, source, address);
    return;
  }
  Dwarf_Die cu_scratch;
  Dwarf_Die* cu = CuAt(info, cuts, address, &cu_scratch);
  if (cu == nullptr) return;
  AnswerCuts::Cu& unit = CuCutsFor(cuts, cu);
  AddExtentRanges(info, cu, source, address);
  // A small CU (a C file of libc) whole: the next run of a sampled program meets functions
  // this one did not, and those are often the neighbours of the ones it met (genops.c's
  // _IO_setb next to _IO_default_xsputn). A large one (C++) would cost too much here.
  if (source.function == nullptr || unit.whole || unit.code_bytes > kWholeCuBytes) return;
  unit.whole = true;
  std::vector<CachedFrame> known;
  for (size_t i = 0; i < unit.functions.size(); ++i) {
    const AnswerCuts::Function& f = unit.functions[i];
    const void* die = f.die.addr;
    bool first = true;  // the function's first range: done once per function
    for (size_t j = 0; j < i && first; ++j) first = unit.functions[j].die.addr != die;
    if (!first || die == source.function ||
        info.cache->Find(f.low + cuts.dwarf_bias - info.bias, &known)) {
      continue;
    }
    AnswerSource other;
    other.dwarf = true;
    other.function = die;
    AddExtentRanges(info, cu, other, 0);
  }
}

AnswerCuts::Cu& Symbolizer::Impl::CuCutsFor(AnswerCuts& cuts, Dwarf_Die* cu) {
  auto [it, inserted] = cuts.cus.try_emplace(cu->addr);
  AnswerCuts::Cu& unit = it->second;
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

// The function (or, for code named by an ELF symbol, the symbol's extent) is cut where any
// input of the answer may change (AnswerCuts); each piece is resolved at its start, pieces
// of the same function (or symbol) are kept, and neighbours with the same answer are
// joined into one range. Pieces whose answer came from another function or CU are left
// out: their cuts were not all collected.
void Symbolizer::Impl::AddExtentRanges(ModuleDebug& info, Dwarf_Die* cu, const AnswerSource& source,
                                       uint64_t address) {
  AnswerCuts& cuts = *info.cuts;
  // Work in absolute addresses: DWARF ones are shifted by dwarf_bias.
  const uint64_t shift = cuts.dwarf_bias;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  std::vector<uint64_t> points;
  // The symbol naming `a` names everything between two symbol cuts; the extent is the run
  // of such intervals around `a` named by it (a symbol's start is a cut, and so is the byte
  // after it, where only an absolute label could stop matching).
  const auto symbol_extent = [this, &info, &cuts](uint64_t a, uint64_t* lo, uint64_t* hi) {
    const std::vector<uint64_t>& c = cuts.symbol_cuts;
    const auto it = std::upper_bound(c.begin(), c.end(), a);
    if (it == c.begin() || it == c.end()) return false;
    size_t first = static_cast<size_t>(it - c.begin()) - 1;  // [c[first], c[last])
    size_t last = first + 1;
    const std::string* name = SymbolName(info, a - info.bias);
    if (name == nullptr) return false;
    constexpr size_t kMaxSteps = 64;
    for (size_t n = 0;
         n < kMaxSteps && first > 0 && SymbolName(info, c[first - 1] - info.bias) == name; ++n) {
      --first;
    }
    for (size_t n = 0;
         n < kMaxSteps && last + 1 < c.size() && SymbolName(info, c[last] - info.bias) == name;
         ++n) {
      ++last;
    }
    *lo = c[first];
    *hi = c[last];
    return true;
  };

  if (!source.dwarf) {
    // Named by a symbol, without DWARF: the same between two symbol cuts, where no CU
    // covers the address. Where one might: where libdwfl's CU choice changes, and the
    // ranges of each CU it chooses in the extent (libgcc's soft-float routines in libc are
    // among CUs with DWARF).
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (!symbol_extent(address, &lo, &hi)) return;
    extents.emplace_back(lo, hi);
    if (cuts.dwarf != nullptr) {
      std::vector<uint64_t> starts = {lo};
      auto u = std::upper_bound(cuts.unit_cuts.begin(), cuts.unit_cuts.end(), lo - shift);
      for (; u != cuts.unit_cuts.end() && *u + shift < hi; ++u) starts.push_back(*u + shift);
      points.insert(points.end(), starts.begin() + 1, starts.end());
      for (uint64_t start : starts) {
        Dwarf_Die scratch_die;
        if (Dwarf_Die* unit = CuAt(info, cuts, start, &scratch_die)) {
          ForEachRange(unit, [&](Dwarf_Addr low, Dwarf_Addr high) {
            for (const uint64_t a : {low + shift, high + shift}) {
              if (a > lo && a < hi) points.push_back(a);
            }
          });
        }
      }
    }
  } else {
    const AnswerCuts::Cu& unit = CuCutsFor(cuts, cu);
    Dwarf_Die function;
    if (source.function != nullptr) {
      bool found = false;
      for (const AnswerCuts::Function& f : unit.functions) {
        if (f.die.addr != source.function) continue;
        extents.emplace_back(f.low + shift, f.high + shift);
        function = f.die;
        found = true;
      }
      if (!found) return;
    } else {
      uint64_t lo = 0;
      uint64_t hi = 0;
      if (!source.symbol || !symbol_extent(address, &lo, &hi)) return;
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
    for (const AnswerCuts::Function& f : unit.functions) {
      add(f.low + shift);
      add(f.high + shift);
    }
    for (const auto& [lo, hi] : extents) {
      // unit_cuts are sorted (CutsFor); libdw keeps a CU's rows in address order.
      auto u = std::upper_bound(cuts.unit_cuts.begin(), cuts.unit_cuts.end(), lo - shift);
      for (; u != cuts.unit_cuts.end() && *u + shift < hi; ++u) add(*u + shift);
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
  if (source.symbol) {
    for (const auto& [lo, hi] : extents) {
      auto c = std::upper_bound(cuts.symbol_cuts.begin(), cuts.symbol_cuts.end(), lo);
      for (; c != cuts.symbol_cuts.end() && *c < hi; ++c) points.push_back(*c);
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
      if (open)
        info.cache->Add(range_lo - info.bias, end - info.bias, range_answer, info.with_dwarf);
      open = false;
    };
    uint64_t start = lo;
    auto next = std::upper_bound(points.begin(), points.end(), lo);
    while (start < hi) {
      const uint64_t end = next == points.end() ? hi : std::min<uint64_t>(*next, hi);
      if (next != points.end()) ++next;
      AnswerSource piece;
      Answer(info, start - info.bias, &piece_scratch, &piece);
      bool keep = !piece.offset_name && piece.dwarf == source.dwarf &&
                  piece.function == source.function && (!piece.symbol || source.symbol);
      if (keep && source.dwarf) {
        Dwarf_Die* piece_cu = CuAt(info, cuts, start, &piece_cu_scratch);
        keep = piece_cu != nullptr && piece_cu->addr == cu->addr;
      }
      if (!keep) {
        close(start);
      } else if (open && SameAnswer(range_answer, piece_scratch)) {
        // the range goes on
      } else {
        close(start);
        range_lo = start;
        range_answer = piece_scratch;
        open = true;
      }
      start = end;
    }
    close(hi);
  }
}

const std::vector<SymbolizedFrame>* Symbolizer::Impl::Resolve(uint64_t address, size_t* module_id) {
  internal::Module* module = modules.Find(address);
  if (module == nullptr) {
    Refresh();  // cheap when nothing was loaded since; nothing offline
    module = modules.Find(address);
  }
  if (module == nullptr) {
    unknown.clear();
    SymbolizedFrame& frame = unknown.emplace_back();
    frame.function = kUnknownFunction;
    frame.module_offset = address;
    return nullptr;
  }
  *module_id = module->id;
  const uint64_t offset = address - module->bias;
  ModuleDebug& info = DebugFor(*module);
  ++stats.addresses;
  auto known = info.answers.find(offset);
  if (known != info.answers.end()) return &known->second;

  std::vector<SymbolizedFrame> frames;
  if (info.cache != nullptr && FromCache(info, *module, offset, &frames)) {
    ++stats.cache_hits;
  } else {
    if (info.cache != nullptr) ++stats.cache_misses;
    frames.clear();
    FromDebugInfo(info, *module, offset, &frames);
  }
  return &info.answers.emplace(offset, std::move(frames)).first->second;
}

Symbolizer::Symbolizer(SymbolizerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Symbolizer::~Symbolizer() { SaveCache(); }

void Symbolizer::RefreshModules() {
  try {
    impl_->Refresh();
  } catch (...) {
    // Out of memory: keep the previous module map.
  }
}

const std::vector<SymbolizedFrame>& Symbolizer::Symbolize(uint64_t address) {
  try {
    Impl& impl = *impl_;
    if (!impl.modules.refreshed()) impl.Refresh();
    auto it = impl.cache.find(address);
    if (it != impl.cache.end()) return *it->second.frames;
    // Only what is not answered from memory is timed: a clock read costs as much as such
    // an answer (~30 ns).
    const auto start = std::chrono::steady_clock::now();
    size_t module = SIZE_MAX;
    const std::vector<SymbolizedFrame>* frames = impl.Resolve(address, &module);
    impl.stats.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (frames == nullptr) {
      // An address in no module (JIT code, a stray pointer) is not cached: a JIT's code can
      // be anywhere in its arena, so such addresses are unbounded in number, while the
      // answer is cheap (a binary search, a look at the unloaded modules kept and the loader's
      // counters) and must be asked again anyway once a library is loaded there.
      return impl.unknown;
    }
    impl.cache[address] = CacheEntry{frames, module};
    return *frames;
  } catch (...) {
    static const std::vector<SymbolizedFrame> kFailed{SymbolizedFrame{kUnknownFunction}};
    return kFailed;
  }
}

std::vector<Symbolizer::MappedModule> Symbolizer::Modules() {
  std::vector<MappedModule> out;
  try {
    if (!impl_->modules.refreshed()) impl_->Refresh();
    for (size_t id = 0; id < impl_->modules.size(); ++id) {
      const internal::Module& m = impl_->modules.at(id);
      const std::string build_id = internal::BuildIdHex(m.build_id);
      for (const internal::Segment& s : m.segments) {
        if (!s.executable || s.end <= s.begin) continue;
        out.push_back(MappedModule{m.path, s.begin, s.end, s.file_offset, build_id});
      }
    }
  } catch (...) {
    // Out of memory: what was collected so far.
  }
  return out;
}

std::vector<RawModule> Symbolizer::RecordedModules() {
  std::vector<RawModule> out;
  try {
    Impl& impl = *impl_;
    if (impl.modules.offline()) return impl.recorded;
    if (!impl.modules.refreshed()) impl.Refresh();
    // Loaded modules first, then unloaded ones most recent first: UseRecordedModules takes
    // a module overlapping an earlier one as unloaded, so addresses land where they did.
    for (size_t id : impl.modules.RecordedOrder()) {
      const internal::Module& m = impl.modules.at(id);
      if (m.segments.empty()) continue;
      RawModule& raw = out.emplace_back();
      raw.kind = RawKind(m.kind);
      raw.path = m.path;
      raw.bias = m.bias;
      raw.build_id = internal::BuildIdHex(m.build_id);
      for (const internal::Segment& s : m.segments) {
        raw.segments.push_back(RawSegment{s.begin, s.end, s.file_offset, s.executable});
      }
    }
  } catch (...) {
    // Out of memory: what was collected so far.
  }
  return out;
}

void Symbolizer::UseRecordedModules(const std::vector<RawModule>& modules) {
  Impl& impl = *impl_;
  std::vector<internal::Module> converted;
  converted.reserve(modules.size());
  for (const RawModule& raw : modules) {
    internal::Module& m = converted.emplace_back();
    m.kind = ObjectKindOf(raw.kind);
    m.path = raw.kind == RawModule::Kind::kVdso ? "[vdso]" : raw.path;
    m.loader_name = m.path;
    m.bias = raw.bias;
    m.build_id = BuildIdBytes(raw.build_id);
    for (const RawSegment& s : raw.segments) {
      m.segments.push_back(internal::Segment{s.begin, s.end, s.executable, s.file_offset});
    }
  }
  // Addresses and module ids are the new process's from now on; the answers handed out
  // live in their files' state, which stays.
  impl.cache.clear();
  impl.debug.clear();
  impl.recorded = modules;
  impl.modules.Assign(std::move(converted));
}

SymbolizerStats Symbolizer::Stats() const { return impl_->stats; }

std::vector<std::string> Symbolizer::Warnings() const { return impl_->warnings; }

void Symbolizer::SaveCache() {
  try {
    Impl& impl = *impl_;
    for (auto& [key, info] : impl.debug_by_file) {
      if (!impl.cache_writable) return;
      if (info->cache == nullptr || !info->cache->has_pending()) continue;
      // A directory we cannot write (read-only home, another user's cache) is not worth
      // a warning on every export: the cache is given up on for this Symbolizer.
      if (info->cache->Save() == internal::SymbolCacheFile::SaveResult::kFailed) {
        impl.cache_writable = false;
      }
    }
  } catch (...) {
    // Out of memory: the answers are not kept.
  }
}

std::vector<std::pair<uint64_t, uint64_t>> Symbolizer::ExecutableRanges() {
  try {
    impl_->Refresh();
    return impl_->modules.ExecutableRanges();
  } catch (...) {
    return {};
  }
}

}  // namespace inprof
