// Symbolizer: module map + libdwfl + per-address cache.
//
// Resolution order for an address: the module that contains it (loaded now, or unloaded
// since), then DWARF (inline chain, file:line), then the module's ELF symbols, then
// "module+0xoffset"; "[unknown]" when no module ever covered it.
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inprof/symbolize.h"
#include "internal/demangle.h"
#include "internal/dwfl_session.h"
#include "internal/elf_symbols.h"
#include "internal/inline_chain.h"
#include "internal/module_map.h"
#include "internal/source_paths.h"

namespace inprof {

using internal::DwarfFrame;
using internal::Module;

namespace {

constexpr const char kUnknownFunction[] = "[unknown]";

// Resolution state per file: shared by every module (mapping) of the same file, so a library
// that is loaded, unloaded and loaded again at another address is read by libdwfl once.
// The file is reported at the bias of its first mapping; an address of another mapping is
// looked up at bias + (address - that mapping's bias).
struct ModuleDebug {
  Dwfl_Module* dwfl = nullptr;                      // null: file unusable, only "module+0x" names
  uint64_t bias = 0;                                // where libdwfl has the file
  std::unique_ptr<internal::InlineResolver> dwarf;  // set together with dwfl
  bool symbols_built = false;
  internal::ElfSymbolTable symbols;
};

struct CacheEntry {
  std::vector<SymbolizedFrame> frames;
  size_t module = SIZE_MAX;  // module id the answer came from
};

// What makes two mappings the same file: its path, build-id and segment layout relative to
// the load bias (a file without build-id replaced on disk between two loads differs there).
std::string FileKey(const Module& module) {
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

std::string OffsetName(const Module& module, uint64_t offset) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "+0x%" PRIx64, offset);
  std::string name(internal::Basename(module.path));
  name += suffix;
  return name;
}

}  // namespace

struct Symbolizer::Impl {
  explicit Impl(SymbolizerOptions options)
      : paths(internal::PathMap(std::move(options.path_map))) {}

  void Refresh();
  // Drops the per-module state and cached answers of modules the map forgot.
  void Forget(const std::vector<size_t>& ids);
  ModuleDebug& DebugFor(Module& module);
  // Returns the id of the module the address is in (SIZE_MAX: none).
  size_t Resolve(uint64_t address, std::vector<SymbolizedFrame>* out);
  std::string SymbolName(const Module& module, ModuleDebug& debug, uint64_t address);

  internal::ModuleMap modules;
  internal::DwflSession dwfl;
  // Per file (FileKey), never freed: libdw's strings are referenced by the demangler and
  // path caches. Bounded by the distinct files the process has had mapped.
  std::unordered_map<std::string, std::unique_ptr<ModuleDebug>> debug_by_file;
  std::vector<ModuleDebug*> debug;  // indexed by module id; null until first needed
  internal::DemangleCache demangler;
  internal::SourcePathResolver paths;
  // File and comp_dir are strings of libdw's line tables, which live as long as we keep the
  // modules (for the Symbolizer's lifetime, as the demangler assumes too): the pair of
  // pointers finds the resolved path without building and hashing the joined name.
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
  // Answers for addresses in a known module, one per distinct address sampled. They are
  // final, which keeps samples taken before a dlclose() resolving to the library they were
  // taken in, until the module map forgets that library: then its answers go too.
  // Answers in no module are not kept (Symbolize).
  std::unordered_map<uint64_t, CacheEntry> cache;
  std::vector<SymbolizedFrame> unknown;  // the last answer for an address in no module
  std::vector<DwarfFrame> scratch;
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
    if (id < debug.size()) debug[id] = nullptr;
  }
  for (auto it = cache.begin(); it != cache.end();) {
    const size_t m = it->second.module;
    it = m < gone.size() && gone[m] ? cache.erase(it) : std::next(it);
  }
}

// Files are handed to libdwfl when first needed, not when discovered: libdwfl keeps each
// file open, and a process may map hundreds of libraries it is never sampled in.
ModuleDebug& Symbolizer::Impl::DebugFor(Module& module) {
  if (module.id >= debug.size()) debug.resize(module.id + 1, nullptr);
  if (debug[module.id] != nullptr) return *debug[module.id];
  auto [it, inserted] = debug_by_file.try_emplace(FileKey(module));
  if (inserted) {
    // Once per file: a second report of the same file would be unsafe.
    it->second = std::make_unique<ModuleDebug>();
    ModuleDebug& info = *it->second;
    info.bias = module.bias;
    info.dwfl = dwfl.Report(module);
    if (info.dwfl != nullptr) info.dwarf = std::make_unique<internal::InlineResolver>(info.dwfl);
  }
  debug[module.id] = it->second.get();
  return *it->second;
}

std::string Symbolizer::Impl::SymbolName(const Module& module, ModuleDebug& info,
                                         uint64_t address) {
  if (info.dwfl != nullptr) {
    if (!info.symbols_built) {
      info.symbols_built = true;
      info.symbols.Build(info.dwfl);
    }
    if (const char* name = info.symbols.Find(info.bias + (address - module.bias))) {
      return demangler.Get(name);
    }
  }
  return OffsetName(module, address - module.bias);
}

size_t Symbolizer::Impl::Resolve(uint64_t address, std::vector<SymbolizedFrame>* out) {
  out->clear();
  Module* module = modules.Find(address);
  if (module == nullptr) {
    Refresh();  // cheap when nothing was loaded since
    module = modules.Find(address);
  }
  if (module == nullptr) {
    SymbolizedFrame frame;
    frame.function = kUnknownFunction;
    frame.module_offset = address;
    out->push_back(std::move(frame));
    return SIZE_MAX;
  }
  const uint64_t offset = address - module->bias;
  ModuleDebug& info = DebugFor(*module);

  scratch.clear();
  if (info.dwarf != nullptr && info.dwarf->Resolve(info.bias + offset, &scratch)) {
    out->reserve(scratch.size());
    for (const DwarfFrame& raw : scratch) {
      SymbolizedFrame& frame = out->emplace_back();
      if (raw.function != nullptr) {
        frame.function = demangler.Get(raw.function);
      }
      if (frame.function.empty()) {
        frame.function = raw.inlined ? "??" : SymbolName(*module, info, address);
      }
      if (raw.file != nullptr) frame.file = SourcePath(raw.file, raw.comp_dir);
      if (!frame.file.empty()) {  // a line number without its file helps nobody
        frame.line = raw.line;
        frame.column = raw.column;
      }
      frame.inlined = raw.inlined;
      frame.module = module->path;
      frame.module_offset = offset;
    }
    return module->id;
  }
  SymbolizedFrame& frame = out->emplace_back();
  frame.function = SymbolName(*module, info, address);
  frame.module = module->path;
  frame.module_offset = offset;
  return module->id;
}

Symbolizer::Symbolizer(SymbolizerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Symbolizer::~Symbolizer() = default;

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
    if (it != impl.cache.end()) return it->second.frames;
    std::vector<SymbolizedFrame> frames;
    const size_t module = impl.Resolve(address, &frames);
    if (module == SIZE_MAX) {
      // An address in no module (JIT code, a stray pointer) is not cached: a JIT's code can
      // be anywhere in its arena, so such addresses are unbounded in number, while the
      // answer is cheap (a binary search, a look at the unloaded modules kept and the loader's
      // counters) and must be asked again anyway once a library is loaded there.
      impl.unknown = std::move(frames);
      return impl.unknown;
    }
    CacheEntry& entry = impl.cache.try_emplace(address).first->second;
    entry.frames = std::move(frames);
    entry.module = module;
    return entry.frames;
  } catch (...) {
    static const std::vector<SymbolizedFrame> kFailed{SymbolizedFrame{kUnknownFunction}};
    return kFailed;
  }
}

std::vector<Symbolizer::MappedModule> Symbolizer::Modules() {
  std::vector<MappedModule> out;
  try {
    if (!impl_->modules.refreshed()) impl_->Refresh();
    static constexpr char kHex[] = "0123456789abcdef";
    for (size_t id = 0; id < impl_->modules.size(); ++id) {
      const internal::Module& m = impl_->modules.at(id);
      std::string build_id;
      for (uint8_t b : m.build_id) {
        build_id += kHex[b >> 4];
        build_id += kHex[b & 15];
      }
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

std::vector<std::pair<uint64_t, uint64_t>> Symbolizer::ExecutableRanges() {
  try {
    impl_->Refresh();
    return impl_->modules.ExecutableRanges();
  } catch (...) {
    return {};
  }
}

}  // namespace inprof
