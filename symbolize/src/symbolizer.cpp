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

// Resolution state per module; parallel to ModuleMap ids.
struct ModuleDebug {
  bool reported = false;                            // handed to libdwfl (successfully or not)
  Dwfl_Module* dwfl = nullptr;                      // null: file unusable, only "module+0x" names
  std::unique_ptr<internal::InlineResolver> dwarf;  // set together with dwfl
  bool symbols_built = false;
  internal::ElfSymbolTable symbols;
};

struct CacheEntry {
  std::vector<SymbolizedFrame> frames;
  // "[unknown]" answers are retried once the module map has changed: the address may
  // belong to a library loaded since. Other answers are final, which is what keeps
  // samples taken before a dlclose() resolving to the library they were taken in.
  bool unknown = false;
  uint64_t generation = 0;
};

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
  ModuleDebug& DebugFor(Module& module);
  void Resolve(uint64_t address, std::vector<SymbolizedFrame>* out);
  std::string SymbolName(const Module& module, ModuleDebug& debug, uint64_t address);

  internal::ModuleMap modules;
  internal::DwflSession dwfl;
  std::deque<ModuleDebug> debug;  // indexed by module id; deque: entries never move
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
  std::unordered_map<uint64_t, CacheEntry> cache;
  std::vector<DwarfFrame> scratch;
};

void Symbolizer::Impl::Refresh() { modules.Refresh(nullptr); }

// Modules are handed to libdwfl when first needed, not when discovered: libdwfl keeps each
// module's file open, and a process may map hundreds of libraries it is never sampled in.
ModuleDebug& Symbolizer::Impl::DebugFor(Module& module) {
  if (module.id >= debug.size()) debug.resize(module.id + 1);
  ModuleDebug& info = debug[module.id];
  if (!info.reported) {
    info.reported = true;  // once only: a second report of the same module would be unsafe
    info.dwfl = dwfl.Report(module);
    if (info.dwfl != nullptr) info.dwarf = std::make_unique<internal::InlineResolver>(info.dwfl);
  }
  return info;
}

std::string Symbolizer::Impl::SymbolName(const Module& module, ModuleDebug& info,
                                         uint64_t address) {
  if (info.dwfl != nullptr) {
    if (!info.symbols_built) {
      info.symbols_built = true;
      info.symbols.Build(info.dwfl);
    }
    if (const char* name = info.symbols.Find(address)) return demangler.Get(name);
  }
  return OffsetName(module, address - module.bias);
}

void Symbolizer::Impl::Resolve(uint64_t address, std::vector<SymbolizedFrame>* out) {
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
    return;
  }
  const uint64_t offset = address - module->bias;
  ModuleDebug& info = DebugFor(*module);

  scratch.clear();
  if (info.dwarf != nullptr && info.dwarf->Resolve(address, &scratch)) {
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
    return;
  }
  SymbolizedFrame& frame = out->emplace_back();
  frame.function = SymbolName(*module, info, address);
  frame.module = module->path;
  frame.module_offset = offset;
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
    if (it != impl.cache.end() &&
        (!it->second.unknown || it->second.generation == impl.modules.generation())) {
      return it->second.frames;
    }
    std::vector<SymbolizedFrame> frames;
    impl.Resolve(address, &frames);
    if (it == impl.cache.end()) it = impl.cache.try_emplace(address).first;
    CacheEntry& entry = it->second;
    entry.frames = std::move(frames);
    entry.unknown = entry.frames.size() == 1 && entry.frames[0].module.empty();
    entry.generation = impl.modules.generation();
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
