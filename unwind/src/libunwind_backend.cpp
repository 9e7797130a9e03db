// DWARF unwinding of a stack copy with libunwind's remote API.
//
// The address space's accessors read registers and memory from the copy, and find unwind
// info in our own table of each module's .eh_frame_hdr (libunwind's
// dwarf_search_unwind_table over a "remote table"), never through the local address space:
// that one calls dl_iterate_phdr on cache misses, and unw_get_proc_info_by_ip on it crashed.
// UNW_LOCAL_ONLY must stay undefined here, and the library linked is libunwind-<arch>, or
// the remote entry points are stubs.
//
// Debian's libunwind blocks signals and takes the address space's mutex on every step, so
// each collector thread has its own address space, and the global cache is switched on
// explicitly (a new address space starts without it, which costs ~3.5x per sample).
#include <libunwind.h>

#include <memory>
#include <string>

#include "backends.h"
#include "copy_memory.h"
#include "inprof/dwarf_unwind.h"
#include "module_table.h"
#include "registers.h"

// Exported by libunwind-<arch> but not declared in its headers.
extern "C" int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
                                                  unw_dyn_info_t* di, unw_proc_info_t* pi,
                                                  int need_unwind_info, void* arg);

namespace inprof::internal {
namespace {

// libunwind's per-address-space cache of register-state rules. Deep stacks through many
// functions thrash the default 128 entries.
constexpr int kCacheSize = 4096;

struct Sample {
  const StackCopy* copy;
  CopyMemory memory;
  const ModuleTable* modules;
  bool no_unwind_info = false;
};

int FindProcInfo(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need_unwind_info,
                 void* arg) {
  auto* sample = static_cast<Sample*>(arg);
  const UnwindModule* module = sample->modules->FindCode(ip);
  if (module == nullptr || module->table == 0) {
    sample->no_unwind_info = true;
    return -UNW_ENOINFO;
  }
  unw_dyn_info_t di{};
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = module->code_lo;
  di.end_ip = module->code_hi;
  di.u.rti.segbase = module->eh_frame_hdr;
  di.u.rti.table_data = module->table;
  // In words; each entry is two 32-bit values.
  di.u.rti.table_len = module->fde_count * 8 / sizeof(unw_word_t);
  int ret = UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
  if (ret == -UNW_ENOINFO) sample->no_unwind_info = true;
  return ret;
}

// libunwind frees the parsed CIE/FDE data itself (Gparser.c put_unwind_info).
void PutUnwindInfo(unw_addr_space_t, unw_proc_info_t*, void*) {}

int GetDynInfoListAddr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

int AccessMem(unw_addr_space_t, unw_word_t address, unw_word_t* value, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  uint64_t word;
  if (!static_cast<Sample*>(arg)->memory.ReadWord(address, &word)) return -UNW_EINVAL;
  *value = word;
  return 0;
}

// UNW_<ARCH>_* register numbers are the DWARF numbers the snapshot uses (0-16 on x86-64,
// x0-x30/sp/pc on aarch64).
int AccessReg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* value, int write, void* arg) {
  const RegisterSnapshot& regs = static_cast<Sample*>(arg)->copy->regs;
  if (write || reg < 0 || static_cast<uint32_t>(reg) >= regs.count) return -UNW_EBADREG;
  *value = regs.regs[reg];
  return 0;
}

int AccessFpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EBADREG; }

int Resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }

int GetProcName(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) {
  return -UNW_ENOINFO;
}

class LibunwindUnwinder final : public DwarfUnwinder {
 public:
  ~LibunwindUnwinder() override {
    if (as_ != nullptr) unw_destroy_addr_space(as_);
  }

  Status Init() {
    accessors_.find_proc_info = FindProcInfo;
    accessors_.put_unwind_info = PutUnwindInfo;
    accessors_.get_dyn_info_list_addr = GetDynInfoListAddr;
    accessors_.access_mem = AccessMem;
    accessors_.access_reg = AccessReg;
    accessors_.access_fpreg = AccessFpreg;
    accessors_.resume = Resume;
    accessors_.get_proc_name = GetProcName;
    as_ = unw_create_addr_space(&accessors_, 0);
    if (as_ == nullptr) {
      return Status::Unavailable("libunwind: unw_create_addr_space failed (out of memory?)");
    }
    unw_set_caching_policy(as_, UNW_CACHE_GLOBAL);
    // libunwind 1.6.2 ignores the first size set on a fresh address space (measured: the
    // cache stays at 128 entries); the second call takes effect.
    unw_set_cache_size(as_, kCacheSize, 0);
    unw_set_cache_size(as_, kCacheSize, 0);
    return RefreshModules();
  }

  Status RefreshModules() override {
    if (Status s = modules_.Refresh(); !s.ok()) return s;
    unw_flush_cache(as_, 0, 0);
    return Status::Ok();
  }

  bool ModulesChanged() const override { return modules_.Changed(); }

  UnwindResult Unwind(const StackCopy& copy, const uint8_t* data, uintptr_t* pcs,
                      uint32_t max) override {
    UnwindResult result;
    if (AnswerWithoutUnwinding(copy, pcs, max, &result)) return result;
    Sample sample{&copy, CopyMemory(copy, data, modules_), &modules_};
    unw_cursor_t cursor;
    if (unw_init_remote(&cursor, as_, &sample) < 0) {
      pcs[result.depth++] = StripAddress(copy.regs.pc);
      result.stop = UnwindStop::kError;
      return result;
    }
    unw_word_t prev_sp = 0;
    for (;;) {
      unw_word_t ip = 0, sp = 0;
      unw_get_reg(&cursor, UNW_REG_IP, &ip);
      unw_get_reg(&cursor, UNW_REG_SP, &sp);
      if (result.depth > 0 && sp < prev_sp) {  // a loop or garbage: stacks grow down
        result.stop = UnwindStop::kError;
        return result;
      }
      prev_sp = sp;
      pcs[result.depth++] = StripAddress(ip);
      if (result.depth == max) {
        result.stop = UnwindStop::kDepthLimit;
        return result;
      }
      sample.no_unwind_info = false;
      sample.memory.ClearAboveWindow();
      const int step = unw_step(&cursor);
      if (step > 0 && sample.no_unwind_info) {
        // No CFI for this frame: libunwind guessed the caller from the frame pointer, which
        // skips the caller of a frameless function and can end "at the root" all the same.
        // Report the walk as ended for want of unwind info (unwind=auto then prefers fp).
        result.stop = UnwindStop::kNoUnwindInfo;
        return result;
      }
      if (step > 0) continue;
      if (step == 0) {
        // libunwind also ends "normally" where its frame-pointer fallback finds a null
        // frame record, e.g. in garbage; a real outermost frame is inside a module.
        result.stop = modules_.FindCode(result.depth > 1 ? ip - 1 : ip) != nullptr
                          ? UnwindStop::kRoot
                          : UnwindStop::kNoUnwindInfo;
      } else if (sample.memory.above_window()) {
        result.stop = UnwindStop::kTruncated;
      } else if (sample.no_unwind_info ||
                 modules_.FindCode(result.depth > 1 ? ip - 1 : ip) == nullptr) {
        result.stop = UnwindStop::kNoUnwindInfo;
      } else {
        result.stop = UnwindStop::kError;
      }
      return result;
    }
  }

  DwarfBackend backend() const override { return DwarfBackend::kLibunwind; }

 private:
  unw_accessors_t accessors_{};
  unw_addr_space_t as_ = nullptr;
  ModuleTable modules_;
};

}  // namespace

StatusOr<std::unique_ptr<DwarfUnwinder>> CreateLibunwindUnwinder() {
  auto unwinder = std::make_unique<LibunwindUnwinder>();
  if (Status s = unwinder->Init(); !s.ok()) return s;
  return std::unique_ptr<DwarfUnwinder>(std::move(unwinder));
}

}  // namespace inprof::internal
