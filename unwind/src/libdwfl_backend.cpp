// DWARF unwinding of a stack copy with elfutils' libdwfl.
//
// The process is "attached" once per module refresh with our own thread callbacks: one
// pseudo-thread whose initial registers and memory come from the sample being unwound.
// dwfl_getthread_frames then walks it with the modules' .eh_frame (read from the files, not
// from memory; separate debug info is never loaded: .debug_frame is not needed for code
// that has .eh_frame, and loading it costs tens of milliseconds per library).
//
// libdwfl ends a walk "successfully" when a memory read fails, so truncation is only
// visible through the memory callback (CopyMemory::above_window).
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backends.h"
#include "copy_memory.h"
#include "inprof/dwarf_unwind.h"
#include "module_table.h"
#include "registers.h"

namespace inprof::internal {
namespace {

int NoDebuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                char**) {
  return -1;
}

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = NoDebuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

struct Sample {
  const StackCopy* copy;
  CopyMemory memory;
  uintptr_t* pcs;
  uint32_t max;
  uint32_t depth = 0;
  bool reached_zero = false;    // a null return address: the outermost frame
  bool no_unwind_info = false;  // the last frame has no CFI: its caller would be a guess
  Dwarf_Addr lookup_pc = 0;     // where the last frame's CFI is looked up
};

// Whether .eh_frame or .debug_frame covers `pc`, the two tables libdwfl's unwinder reads
// before it falls back to guessing the caller from the frame pointer (x86_64_unwind).
bool HasCfi(Dwfl* dwfl, Dwarf_Addr pc) {
  Dwfl_Module* module = dwfl_addrmodule(dwfl, pc);
  if (module == nullptr) return false;
  for (int table = 0; table < 2; ++table) {
    Dwarf_Addr bias = 0;
    Dwarf_CFI* cfi =
        table == 0 ? dwfl_module_eh_cfi(module, &bias) : dwfl_module_dwarf_cfi(module, &bias);
    Dwarf_Frame* frame = nullptr;
    if (cfi != nullptr && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0) {
      free(frame);
      return true;
    }
  }
  return false;
}

class LibdwflUnwinder final : public DwarfUnwinder {
 public:
  ~LibdwflUnwinder() override {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }

  Status RefreshModules() override {
    if (Status s = modules_.Refresh(); !s.ok()) return s;
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
    dwfl_ = dwfl_begin(&kCallbacks);
    if (dwfl_ == nullptr) {
      return Status::Unavailable(std::string("libdwfl: dwfl_begin: ") + dwfl_errmsg(-1));
    }
    pid_ = getpid();
    dwfl_report_begin(dwfl_);
    const int rc = dwfl_linux_proc_report(dwfl_, pid_);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    if (rc != 0) {
      return Status::Unavailable(std::string("libdwfl: reading /proc/self/maps: ") +
                                 (rc > 0 ? std::strerror(rc) : dwfl_errmsg(-1)));
    }
    static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = NextThread,
        .get_thread = nullptr,
        .memory_read = MemoryRead,
        .set_initial_registers = SetInitialRegisters,
        .detach = nullptr,
        .thread_detach = nullptr,
    };
    if (!dwfl_attach_state(dwfl_, nullptr, pid_, &thread_callbacks, this)) {
      return Status::Unavailable(std::string("libdwfl: dwfl_attach_state: ") + dwfl_errmsg(-1));
    }
    return Status::Ok();
  }

  bool ModulesChanged() const override { return modules_.Changed(); }

  UnwindResult Unwind(const StackCopy& copy, const uint8_t* data, uintptr_t* pcs,
                      uint32_t max) override {
    UnwindResult result;
    if (AnswerWithoutUnwinding(copy, pcs, max, &result)) return result;
    Sample sample{&copy, CopyMemory(copy, data, modules_), pcs, max};
    sample_ = &sample;
    const int rc = dwfl_getthread_frames(dwfl_, pid_, OnFrame, &sample);
    sample_ = nullptr;
    result.depth = sample.depth;
    if (result.depth == 0) pcs[result.depth++] = StripAddress(copy.regs.pc);
    if (rc == DWARF_CB_ABORT && sample.depth == max) {
      result.stop = UnwindStop::kDepthLimit;
    } else if (sample.memory.above_window()) {
      result.stop = UnwindStop::kTruncated;
    } else if (sample.no_unwind_info) {
      result.stop = UnwindStop::kNoUnwindInfo;
    } else if (modules_.FindCode(pcs[result.depth - 1] - (result.depth > 1 ? 1 : 0)) == nullptr) {
      // libdwfl also ends "successfully" where it finds no unwind info for the next pc;
      // a walk that really reached the outermost frame ends inside a module (_start,
      // clone3).
      result.stop = UnwindStop::kNoUnwindInfo;
    } else if (rc == 0 || sample.reached_zero) {
      result.stop = UnwindStop::kRoot;
    } else {
      result.stop = UnwindStop::kError;
    }
    return result;
  }

  DwarfBackend backend() const override { return DwarfBackend::kLibdwfl; }

 private:
  static pid_t NextThread(Dwfl*, void* dwfl_arg, void** thread_argp) {
    auto* self = static_cast<LibdwflUnwinder*>(dwfl_arg);
    if (*thread_argp != nullptr) return 0;
    *thread_argp = self;
    return self->pid_;
  }

  static bool MemoryRead(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* dwfl_arg) {
    Sample* sample = static_cast<LibdwflUnwinder*>(dwfl_arg)->sample_;
    uint64_t word;
    if (sample == nullptr || !sample->memory.ReadWord(address, &word)) return false;
    *result = word;
    return true;
  }

  static bool SetInitialRegisters(Dwfl_Thread* thread, void* thread_arg) {
    Sample* sample = static_cast<LibdwflUnwinder*>(thread_arg)->sample_;
    if (sample == nullptr) return false;
    const RegisterSnapshot& regs = sample->copy->regs;
    if (!dwfl_thread_state_registers(thread, 0, DwflInitialRegisterCount(), regs.regs)) {
      return false;
    }
    dwfl_thread_state_register_pc(thread, regs.pc);
    return true;
  }

  static int OnFrame(Dwfl_Frame* frame, void* arg) {
    auto* sample = static_cast<Sample*>(arg);
    Dwarf_Addr pc;
    bool activation = false;
    if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
    if (pc == 0 && sample->depth > 0) {
      sample->reached_zero = true;
      return DWARF_CB_ABORT;
    }
    // A frame reached without CFI for its callee is a frame-pointer guess, which skips the
    // caller of a frameless function and ends "at the root" all the same: report the walk
    // as ended for want of unwind info instead (unwind=auto then prefers the fp walk).
    if (sample->depth > 0 &&
        !HasCfi(dwfl_thread_dwfl(dwfl_frame_thread(frame)), sample->lookup_pc)) {
      sample->no_unwind_info = true;
      return DWARF_CB_ABORT;
    }
    sample->lookup_pc = activation ? pc : pc - 1;
    sample->pcs[sample->depth++] = StripAddress(pc);
    return sample->depth == sample->max ? DWARF_CB_ABORT : DWARF_CB_OK;
  }

  Dwfl* dwfl_ = nullptr;
  pid_t pid_ = 0;
  Sample* sample_ = nullptr;  // the sample being unwound, for the thread callbacks
  ModuleTable modules_;
};

}  // namespace

StatusOr<std::unique_ptr<DwarfUnwinder>> CreateLibdwflUnwinder() {
  auto unwinder = std::make_unique<LibdwflUnwinder>();
  if (Status s = unwinder->RefreshModules(); !s.ok()) return s;
  return std::unique_ptr<DwarfUnwinder>(std::move(unwinder));
}

}  // namespace inprof::internal
