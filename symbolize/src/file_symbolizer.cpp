// FileSymbolizer: one ELF file on disk, resolved the way binutils' addr2line resolves it.
//
// The data comes from the same indexes as the process Symbolizer (InlineResolver for DWARF,
// a sorted symbol table for the rest); what is specific here is naming. binutils names the
// innermost function by its DWARF linkage name when it has one, or by DW_AT_name in
// languages that do not mangle (C, assembler). Otherwise (extern "C" functions and main in
// C++, C++ functions with internal linkage) the first lookup in a function prints the
// closest ELF function symbol, and bfd then settles on that symbol's name if the symbol
// starts where the function does, else on DW_AT_name, for later lookups and for naming it
// as the caller of inlined code (dwarf2.c, _bfd_dwarf2_find_nearest_line). We keep the
// same per-function memory, so a stream of addresses prints what addr2line prints.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "demangle.h"
#include "dwfl_session.h"
#include "function_symbols.h"
#include "inline_chain.h"
#include "inprof/symbolize.h"
#include "regular_file.h"

namespace inprof {

using internal::DwarfFrame;

namespace {

struct Section {
  std::string name;
  uint64_t begin;
  uint64_t end;  // exclusive
};

// A file name from DWARF as binutils prints it: libdw has already joined it with its
// include directory; a directory that was itself relative is relative to the CU's
// DW_AT_comp_dir. No normalisation, no symlink resolution.
// Written into `path`, whose buffer is reused.
void DwarfPath(const char* file, const char* comp_dir, std::string* path) {
  if (file[0] == '/' || comp_dir == nullptr || comp_dir[0] == '\0') {
    path->assign(file);
    return;
  }
  path->assign(comp_dir);
  *path += '/';
  *path += file;
}

}  // namespace

struct FileSymbolizer::Impl {
  ~Impl() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }

  const Section* FindSection(uint64_t address) const;
  const char* InnermostName(const DwarfFrame& frame, uint64_t address, const char** file);
  void Resolve(uint64_t address, FileLocation* out);

  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  std::unique_ptr<internal::InlineResolver> resolver;
  bool symbols_built = false;
  internal::FunctionSymbols symbols;
  std::vector<Section> sections;  // allocated sections, sorted by begin
  bool is64 = true;
  // Name bfd settled on for a function without a linkage name (see the file comment).
  std::unordered_map<const void*, const char*> settled_names;
  struct CacheEntry {
    FileLocation location;
    // Set when the innermost name was the symbol bfd only prints on a function's first
    // lookup: later lookups of the address print the settled name.
    const void* first_lookup_scope = nullptr;
  };
  // Answers kept per address are only those a later resolution would not repeat (see
  // Resolve): keeping every answer cost a heap block per frame and string, most of a
  // 100k-address run's page faults and peak memory, to serve addresses that rarely repeat.
  std::unordered_map<uint64_t, CacheEntry> cache;
  const void* first_lookup_scope = nullptr;  // set by InnermostName
  bool state_dependent = false;              // set by Resolve
  // The answer of the last lookup not kept in `cache`, and frames whose strings keep their
  // buffers between lookups: steady-state lookups allocate nothing.
  FileLocation current;
  std::vector<FileFrame> spare_frames;
  // Symbol values by name, for addr2line's `symbol+offset` input (SymbolValue).
  bool symbol_values_built = false;
  std::unordered_map<std::string_view, uint64_t> symbol_values;
  std::vector<DwarfFrame> scratch;

  FileFrame& AddFrame(FileLocation* out);
  void Recycle(FileLocation* location);
};

FileFrame& FileSymbolizer::Impl::AddFrame(FileLocation* out) {
  if (spare_frames.empty()) return out->frames.emplace_back();
  FileFrame& frame = out->frames.emplace_back(std::move(spare_frames.back()));
  spare_frames.pop_back();
  frame.has_file = false;
  frame.line = 0;
  frame.column = 0;
  frame.discriminator = 0;
  frame.inlined = false;
  return frame;
}

void FileSymbolizer::Impl::Recycle(FileLocation* location) {
  while (!location->frames.empty()) {
    spare_frames.push_back(std::move(location->frames.back()));
    location->frames.pop_back();
  }
}

const Section* FileSymbolizer::Impl::FindSection(uint64_t address) const {
  auto it = std::upper_bound(sections.begin(), sections.end(), address,
                             [](uint64_t a, const Section& s) { return a < s.begin; });
  if (it == sections.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

const char* FileSymbolizer::Impl::InnermostName(const DwarfFrame& frame, uint64_t address,
                                                const char** file) {
  // In languages without mangling bfd takes DW_AT_name for the symbol name.
  if (frame.function != nullptr && (frame.linkage_name || frame.unmangled_language)) {
    return frame.function;
  }
  if (frame.function != nullptr) {
    auto settled = settled_names.find(frame.scope);
    if (settled != settled_names.end()) return settled->second;
  }
  if (!symbols_built) {
    symbols_built = true;
    symbols.Build(module);
  }
  internal::FunctionSymbols::Match match;
  const bool found = symbols.Find(address, &match);
  if (found && *file == nullptr) *file = match.file;
  if (frame.function == nullptr) return found ? match.name : nullptr;
  const char* settled = found && match.address == frame.entry ? match.name : frame.function;
  settled_names.emplace(frame.scope, settled);
  // The symbol's file stands in for a missing line-table file on this first lookup only.
  if (frame.file == nullptr) state_dependent = true;
  if (found && settled != match.name) first_lookup_scope = frame.scope;
  return found ? match.name : frame.function;
}

void FileSymbolizer::Impl::Resolve(uint64_t address, FileLocation* out) {
  out->found = false;
  Recycle(out);
  if (FindSection(address) == nullptr) return;
  scratch.clear();
  if (resolver->Resolve(address, &scratch)) {
    out->found = true;
    out->frames.reserve(scratch.size());
    for (size_t i = 0; i < scratch.size(); ++i) {
      const DwarfFrame& raw = scratch[i];
      FileFrame& frame = AddFrame(out);
      const char* symbol_file = raw.file;
      const char* name = raw.function;
      if (i == 0) {
        name = InnermostName(raw, address, &symbol_file);
      } else if (name != nullptr && !raw.linkage_name) {
        auto settled = settled_names.find(raw.scope);
        if (settled != settled_names.end()) {
          name = settled->second;
        } else if (!raw.unmangled_language) {
          // A later first lookup inside this function may settle another name for it.
          state_dependent = true;
        }
      }
      if (name != nullptr) {
        frame.function.assign(name);
      } else {
        frame.function.clear();
      }
      frame.has_file = raw.file != nullptr || symbol_file != nullptr;
      if (raw.file != nullptr) {
        DwarfPath(raw.file, raw.comp_dir, &frame.file);
      } else if (symbol_file != nullptr) {
        frame.file.assign(symbol_file);
      } else {
        frame.file.clear();
      }
      frame.line = raw.line;
      frame.column = raw.column;
      frame.discriminator = raw.discriminator;
      frame.inlined = raw.inlined;
    }
    return;
  }
  if (!symbols_built) {
    symbols_built = true;
    symbols.Build(module);
  }
  internal::FunctionSymbols::Match match;
  if (!symbols.Find(address, &match)) return;
  out->found = true;
  FileFrame& frame = AddFrame(out);
  frame.function.assign(match.name);
  frame.has_file = match.file != nullptr;
  if (match.file != nullptr) {
    frame.file.assign(match.file);
  } else {
    frame.file.clear();
  }
}

FileSymbolizer::FileSymbolizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FileSymbolizer::~FileSymbolizer() = default;

StatusOr<std::unique_ptr<FileSymbolizer>> FileSymbolizer::Open(const std::string& path) {
  StatusOr<int> opened = internal::OpenRegularFile(path.c_str());
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("'" + path + "': No such file");
    }
    return Status::Error("'" + path + "': " + opened.status().message(), opened.status().code());
  }
  const int fd = *opened;
  auto impl = std::make_unique<Impl>();
  impl->dwfl = internal::BeginOfflineDwfl();
  if (impl->dwfl == nullptr) {
    close(fd);
    return Status::Unavailable("'" + path + "': " + dwfl_errmsg(-1));
  }
  // Bias 0 with add_p_vaddr: addresses are the file's own virtual addresses, for
  // executables and shared libraries alike.
  dwfl_report_begin(impl->dwfl);
  impl->module = dwfl_report_elf(impl->dwfl, path.c_str(), path.c_str(), fd, 0,
                                 /*add_p_vaddr=*/true);
  dwfl_report_end(impl->dwfl, nullptr, nullptr);
  if (impl->module == nullptr) {
    close(fd);
    return Status::InvalidArgument(path + ": file format not recognized");  // binutils' words
  }
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(impl->module, &bias);
  if (elf == nullptr) {
    return Status::InvalidArgument(path + ": file format not recognized");  // unquoted
  }
  impl->is64 = gelf_getclass(elf) == ELFCLASS64;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr_mem;
      const GElf_Shdr* shdr = gelf_getshdr(scn, &shdr_mem);
      if (shdr == nullptr || (shdr->sh_flags & SHF_ALLOC) == 0 || shdr->sh_size == 0) continue;
      const char* name = elf_strptr(elf, shstrndx, shdr->sh_name);
      impl->sections.push_back({name != nullptr ? name : "", shdr->sh_addr + bias,
                                shdr->sh_addr + bias + shdr->sh_size});
    }
  }
  std::sort(impl->sections.begin(), impl->sections.end(),
            [](const Section& a, const Section& b) { return a.begin < b.begin; });
  impl->resolver = std::make_unique<internal::InlineResolver>(
      impl->module, internal::InlineResolver::Overlap::kSmallestThenLast);
  return std::unique_ptr<FileSymbolizer>(new FileSymbolizer(std::move(impl)));
}

const FileLocation& FileSymbolizer::Lookup(uint64_t address) {
  Impl& impl = *impl_;
  if (!impl.cache.empty()) {
    auto it = impl.cache.find(address);
    if (it != impl.cache.end()) {
      Impl::CacheEntry& entry = it->second;
      if (entry.first_lookup_scope != nullptr) {
        entry.location.frames.front().function = impl.settled_names[entry.first_lookup_scope];
        entry.first_lookup_scope = nullptr;
      }
      return entry.location;
    }
  }
  // Resolving again gives the same answer unless the names bfd settles on (see the file
  // comment) change it: the address's first answer printed a name or file that a later
  // lookup would not. Only such answers are kept.
  impl.first_lookup_scope = nullptr;
  impl.state_dependent = false;
  impl.Resolve(address, &impl.current);
  if (!impl.state_dependent) return impl.current;
  Impl::CacheEntry& entry = impl.cache[address];
  entry.location = impl.current;
  entry.first_lookup_scope = impl.first_lookup_scope;
  return entry.location;
}

bool FileSymbolizer::SectionRange(const std::string& name, uint64_t* begin, uint64_t* end) const {
  for (const Section& section : impl_->sections) {
    if (section.name == name) {
      *begin = section.begin;
      *end = section.end;
      return true;
    }
  }
  return false;
}

bool FileSymbolizer::SymbolValue(const std::string& name, uint64_t* value) const {
  // Indexed on first use: perf ends every request with a "," line, which is read as a
  // symbol name, and a scan of the whole table per request was most of its cost.
  Impl& impl = *impl_;
  if (!impl.symbol_values_built) {
    impl.symbol_values_built = true;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(impl.module, &bias);
    if (elf == nullptr) return false;
    bool read_one = false;
    for (const GElf_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
      for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr && !read_one;
           scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr_mem;
        const GElf_Shdr* shdr = gelf_getshdr(scn, &shdr_mem);
        if (shdr == nullptr || shdr->sh_type != type || shdr->sh_entsize == 0) continue;
        read_one = true;  // bfd reads one table: .symtab when there is one
        Elf_Data* data = elf_getdata(scn, nullptr);
        const size_t count = data != nullptr ? shdr->sh_size / shdr->sh_entsize : 0;
        impl.symbol_values.reserve(count);
        for (size_t i = 1; i < count; ++i) {  // bfd leaves out the null symbol
          GElf_Sym sym;
          if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
          const char* symbol_name = elf_strptr(elf, shdr->sh_link, sym.st_name);
          // The first symbol of a name in table order wins, as in a scan.
          if (symbol_name != nullptr) impl.symbol_values.emplace(symbol_name, sym.st_value + bias);
        }
      }
      if (read_one) break;
    }
  }
  auto it = impl.symbol_values.find(name);
  if (it == impl.symbol_values.end()) return false;
  *value = it->second;
  return true;
}

bool FileSymbolizer::is_64bit() const { return impl_->is64; }

std::string DemangleSymbol(const std::string& name) {
  // Like bfd_demangle: the version suffix is set aside, the rest demangled, the suffix put
  // back; "_Z" names only (cplus_demangle's v3 scheme).
  const size_t at = name.find('@');
  const std::string base = at != std::string::npos && at != 0 ? name.substr(0, at) : name;
  if (base.size() < 3 || base[0] != '_' || base[1] != 'Z') return name;
  std::string out = internal::DemangleString(base.c_str());
  if (out == base) return name;
  if (at != std::string::npos && at != 0) out += name.substr(at);
  return out;
}

}  // namespace inprof
