// Signal path: the clock the handler reads, straight from the kernel's vDSO.
//
// libc's clock_gettime is a symbol the dynamic linker may bind to another library: a
// preloaded clock interposer (libfaketime) replaces it, and calling it from the handler would
// run that library's code (its locks, its malloc, its idea of time) inside the handler. So the
// handler calls the vDSO's own function, found by address in the vDSO image the kernel maps
// into every process (getauxval(AT_SYSINFO_EHDR)), whose dynamic symbol table is parsed here
// once, on the control path, before the handler is installed. No symbol lookup through the
// loader, no libc. Where there is no vDSO (some emulators) or the symbol is missing, the
// system call. Only signal-safe headers: everything here only reads memory.
#include <elf.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "signal/raw_syscall.h"

namespace inprof::internal {
namespace {

using VdsoClockFn = int (*)(clockid_t, struct timespec*);
std::atomic<VdsoClockFn> g_vdso_clock_gettime{nullptr};
static_assert(std::atomic<VdsoClockFn>::is_always_lock_free);

#if defined(__aarch64__)
constexpr char kClockSymbol[] = "__kernel_clock_gettime";
#else
constexpr char kClockSymbol[] = "__vdso_clock_gettime";
#endif

bool SameName(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

}  // namespace

uintptr_t FindVdsoSymbol(uintptr_t image, const char* name) {
  if (image == 0) return 0;
  const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(image);
  if (ehdr->e_ident[EI_MAG0] != ELFMAG0 || ehdr->e_ident[EI_MAG1] != ELFMAG1 ||
      ehdr->e_ident[EI_MAG2] != ELFMAG2 || ehdr->e_ident[EI_MAG3] != ELFMAG3 ||
      ehdr->e_ident[EI_CLASS] != ELFCLASS64 || ehdr->e_phentsize != sizeof(Elf64_Phdr) ||
      ehdr->e_phnum == 0 || ehdr->e_phnum > 64) {
    return 0;
  }
  const auto* phdrs = reinterpret_cast<const Elf64_Phdr*>(image + ehdr->e_phoff);
  // The image is mapped where the kernel chose; its addresses (the dynamic section's
  // pointers included: nothing relocates the vDSO) are relative to its first PT_LOAD.
  uintptr_t bias = 0;
  bool have_load = false;
  const Elf64_Dyn* dynamic = nullptr;
  for (unsigned i = 0; i < ehdr->e_phnum; ++i) {
    if (phdrs[i].p_type == PT_LOAD && !have_load) {
      bias = image + phdrs[i].p_offset - phdrs[i].p_vaddr;
      have_load = true;
    } else if (phdrs[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const Elf64_Dyn*>(image + phdrs[i].p_offset);
    }
  }
  if (!have_load || dynamic == nullptr) return 0;
  const Elf64_Sym* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* hash = nullptr;
  const uint32_t* gnu_hash = nullptr;
  for (const Elf64_Dyn* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const Elf64_Sym*>(bias + d->d_un.d_ptr); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(bias + d->d_un.d_ptr); break;
      case DT_HASH: hash = reinterpret_cast<const uint32_t*>(bias + d->d_un.d_ptr); break;
      case DT_GNU_HASH: gnu_hash = reinterpret_cast<const uint32_t*>(bias + d->d_un.d_ptr); break;
      default: break;
    }
  }
  if (symtab == nullptr || strtab == nullptr) return 0;
  // The number of symbols: DT_HASH's nchain, or past the highest chain of DT_GNU_HASH.
  uint32_t count = 0;
  if (hash != nullptr) {
    count = hash[1];
  } else if (gnu_hash != nullptr) {
    const uint32_t nbuckets = gnu_hash[0];
    const uint32_t symoffset = gnu_hash[1];
    const uint32_t bloom_size = gnu_hash[2];
    const uint32_t* buckets = gnu_hash + 4 + bloom_size * (sizeof(uint64_t) / sizeof(uint32_t));
    const uint32_t* chains = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; ++b) last = buckets[b] > last ? buckets[b] : last;
    if (last >= symoffset) {
      while ((chains[last - symoffset] & 1u) == 0) ++last;
      count = last + 1;
    }
  } else {
    return 0;
  }
  if (count > 4096) return 0;  // a vDSO has a few dozen: anything else is not one
  for (uint32_t i = 0; i < count; ++i) {
    const Elf64_Sym& sym = symtab[i];
    if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
    const unsigned binding = ELF64_ST_BIND(sym.st_info);
    if (binding != STB_GLOBAL && binding != STB_WEAK) continue;
    if (SameName(strtab + sym.st_name, name)) return bias + sym.st_value;
  }
  return 0;
}

bool InitVdsoClock(uintptr_t image) {
  const uintptr_t fn = FindVdsoSymbol(image, kClockSymbol);
  g_vdso_clock_gettime.store(reinterpret_cast<VdsoClockFn>(fn), std::memory_order_release);
  return fn != 0;
}

bool HaveVdsoClock() { return g_vdso_clock_gettime.load(std::memory_order_acquire) != nullptr; }

int64_t ClockNsRaw(clockid_t clock) {
  if (VdsoClockFn fn = g_vdso_clock_gettime.load(std::memory_order_acquire); fn != nullptr) {
    struct timespec ts;
    if (fn(clock, &ts) == 0) return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
  return ClockNsSyscall(clock);
}

int64_t MonotonicNsRaw() {
  const int64_t ns = ClockNsRaw(CLOCK_MONOTONIC);
  return ns < 0 ? 0 : ns;
}

}  // namespace inprof::internal
