// Symbolizer: module map + libdwfl + per-address cache, and the per-user symbol cache.
//
// Resolution order for an address: the module that contains it (loaded now, or unloaded
// since; or, offline, in the recorded process), then the answers already given for that
// file and offset (by this process or an earlier recorded one), then the per-user cache
// for the file's build-id, then DWARF (inline chain, file:line), then the module's ELF
// symbols, then "module+0xoffset"; "[unknown]" when no module ever covered it. An answer
// resolved from the file is kept in the per-user cache for every address of its function
// (or symbol, or unnamed code) that gets the same one (cache_ranges.h).
#include <elfutils/libdw.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inprof/symbolize.h"
#include "cache_ranges.h"
#include "demangle.h"
#include "dwfl_session.h"
#include "elf_symbols.h"
#include "inline_chain.h"
#include "loaded_objects.h"
#include "module_map.h"
#include "source_paths.h"
#include "symbol_cache.h"

namespace inprof {

using internal::AnswerSource;
using internal::CachedFrame;
using internal::DwarfFrame;
using internal::ObjectKind;

namespace {

constexpr const char kUnknownFunction[] = "[unknown]";
constexpr const char kNoName[] = "??";
// Opened files no loaded module maps, kept open for old samples' new addresses (live mode).
constexpr size_t kMaxOpenUnloadedFiles = 16;

// Resolution state per file: shared by every module (mapping) of the same file, in this
// process or in the recorded processes, so a library that is loaded at another address
// (after a dlclose, or in another process) is read by libdwfl once. The file is reported at
// the bias of its first mapping; an address of another mapping is looked up at
// bias + (address - that mapping's bias).
// Source paths by the pair of string pointers a file's line table (or cache image) holds:
// the pair finds the resolved path without building and hashing the joined name.
struct PointerPairHash {
  size_t operator()(const std::pair<const char*, const char*>& p) const {
    return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
  }
};
using PathByPointer =
    std::unordered_map<std::pair<const char*, const char*>, const std::string*, PointerPairHash>;

// Per file. What points into libdw's (or a cache image's) strings lives here with the file
// (the demangler and path memos are keyed by those pointers), so a file's state can be
// closed (Close: fd, libdwfl module, indexes; its answers stay) and freed as a whole.
struct ModuleDebug {
  std::string file_key;         // its key in debug_by_file
  std::vector<uint8_t> build_id;
  bool opened = false;          // the file was looked for (only when an answer needs it)
  uint64_t last_open_use = 0;   // when an answer last needed the opened file (a counter)
  Dwfl_Module* dwfl = nullptr;  // null: file unusable, only "module+0x" names
  uint64_t bias = 0;            // where libdwfl has the file
  bool with_dwarf = false;      // libdwfl found DWARF for it
  std::unique_ptr<internal::InlineResolver> dwarf;  // set together with dwfl
  bool symbols_built = false;
  internal::ElfSymbolTable symbols;
  std::unique_ptr<internal::SymbolCacheFile> cache;  // null: not cached (no build-id or no dir)
  bool cache_loaded = false;
  std::unique_ptr<internal::CacheRanges> ranges;  // when the cache first needs them
  internal::DemangleCache demangler;              // keyed by the file's strings
  PathByPointer path_by_pointer;
  size_t users = 0;                               // modules (loaded or not) mapping the file
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
  // Closes an opened file (its answers stay; a later answer opens it again), saving its new
  // cache answers first: they point into the file's strings.
  void Close(ModuleDebug& info);
  // Live mode: closes the least recently used opened files that no loaded module maps,
  // beyond kMaxOpenUnloadedFiles, so a program that loads and unloads thousands of
  // libraries keeps a bounded number of descriptors and indexes.
  void CloseUnloadedFiles();
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
  void Materialize(ModuleDebug& info, const std::vector<CachedFrame>& cached,
                   const internal::Module& module, uint64_t offset,
                   std::vector<SymbolizedFrame>* out);
  // The ELF symbol's (demangled) name for `offset`, or nullptr.
  const std::string* SymbolName(ModuleDebug& info, uint64_t offset);
  // The lookup in one file that its cache ranges are resolved with.
  class Lookup final : public internal::AnswerLookup {
   public:
    Lookup(Impl& impl, ModuleDebug& info) : impl_(impl), info_(info) {}
    void Answer(uint64_t offset, std::vector<CachedFrame>* out, AnswerSource* source) override {
      impl_.Answer(info_, offset, out, source);
    }
    const std::string* SymbolName(uint64_t offset) override {
      return impl_.SymbolName(info_, offset);
    }

   private:
    Impl& impl_;
    ModuleDebug& info_;
  };
  bool DebugFileExists(const std::vector<uint8_t>& build_id) const;
  const internal::LoadedObject* OwnVdso();

  std::vector<std::string> debug_dirs;
  std::string cache_dir;
  bool cache_writable = true;  // false after a save failed: the cache is read-only for us
  internal::ModuleMap modules;
  internal::DwflSession dwfl;
  // Per file (FileKey): freed when the module map forgets the last module mapping it
  // (live mode), so bounded by the files mapped now plus the unloaded modules the map
  // keeps; offline, by the distinct files of the recorded processes.
  std::unordered_map<std::string, std::unique_ptr<ModuleDebug>> debug_by_file;
  std::vector<ModuleDebug*> debug;  // indexed by module id; null until first needed
  uint64_t open_uses = 0;           // ModuleDebug::last_open_use's clock
  internal::SourcePathResolver paths;
  // A source path from a file's line table strings (or its cache image's).
  const std::string& SourcePath(ModuleDebug& info, const char* file, const char* comp_dir) {
    auto [it, inserted] = info.path_by_pointer.try_emplace({file, comp_dir}, nullptr);
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
    if (info.users > 0 && --info.users > 0) continue;
    // No mapping of the file is left: it goes, answers and all.
    Close(info);
    debug_by_file.erase(info.file_key);
  }
}

void Symbolizer::Impl::Close(ModuleDebug& info) {
  if (!info.opened) return;
  if (info.cache != nullptr) {
    if (cache_writable && info.cache->has_pending() &&
        info.cache->Save() == internal::SymbolCacheFile::SaveResult::kFailed) {
      cache_writable = false;
    }
    // What it was given and not saved points into the strings freed below.
    info.cache = std::make_unique<internal::SymbolCacheFile>(cache_dir, info.build_id);
    info.cache_loaded = false;
  }
  info.ranges.reset();
  info.dwarf.reset();
  info.symbols = internal::ElfSymbolTable();
  info.symbols_built = false;
  info.demangler = internal::DemangleCache();
  info.path_by_pointer.clear();
  if (info.dwfl != nullptr) dwfl.Release(info.dwfl);
  info.dwfl = nullptr;
  info.with_dwarf = false;
  info.opened = false;
}

void Symbolizer::Impl::CloseUnloadedFiles() {
  if (modules.offline()) return;
  std::unordered_map<const ModuleDebug*, bool> mapped;  // opened files: loaded or not
  for (size_t id = 0; id < debug.size(); ++id) {
    if (debug[id] == nullptr || !debug[id]->opened) continue;
    bool& loaded = mapped[debug[id]];
    loaded = loaded || (id < modules.size() && modules.at(id).loaded);
  }
  std::vector<ModuleDebug*> unloaded;
  for (auto& [key, info] : debug_by_file) {
    if (!info->opened) continue;
    auto it = mapped.find(info.get());
    if (it == mapped.end() || !it->second) unloaded.push_back(info.get());
  }
  if (unloaded.size() <= kMaxOpenUnloadedFiles) return;
  std::sort(unloaded.begin(), unloaded.end(), [](const ModuleDebug* a, const ModuleDebug* b) {
    return a->last_open_use < b->last_open_use;
  });
  for (size_t i = 0; i + kMaxOpenUnloadedFiles < unloaded.size(); ++i) Close(*unloaded[i]);
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
    info.file_key = it->first;
    info.build_id = module.build_id;
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
  info.last_open_use = ++open_uses;
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
  return name != nullptr ? &info.demangler.Get(name) : nullptr;
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
  Materialize(info, cached_scratch, module, offset, out);
  return true;
}

void Symbolizer::Impl::Materialize(ModuleDebug& info, const std::vector<CachedFrame>& cached,
                                   const internal::Module& module, uint64_t offset,
                                   std::vector<SymbolizedFrame>* out) {
  out->reserve(cached.size());
  for (const CachedFrame& c : cached) {
    SymbolizedFrame& frame = out->emplace_back();
    frame.function = c.function != nullptr ? c.function : OffsetName(module, offset);
    if (c.file != nullptr) frame.file = SourcePath(info, c.file, c.comp_dir);
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
        const std::string& name = info.demangler.Get(raw.function);
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
  const bool was_open = info.opened;
  Open(info, module);
  if (!was_open) CloseUnloadedFiles();
  AnswerSource source;
  Answer(info, offset, &cached_scratch, &source);
  Materialize(info, cached_scratch, module, offset, out);
  // Answers made while the file could not be read are not kept.
  if (info.cache == nullptr || info.dwfl == nullptr) return;
  info.cache->Add(offset, offset + 1, cached_scratch, info.with_dwarf);
  if (info.ranges == nullptr) {
    info.ranges = std::make_unique<internal::CacheRanges>(info.dwfl, info.bias, info.cache.get(),
                                                          info.with_dwarf);
  }
  Lookup lookup(*this, info);
  info.ranges->Add(offset, source, lookup);
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
