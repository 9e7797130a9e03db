// The collector thread: drains every thread's ring, rescans threads, and keeps the
// handler's code ranges current (see collector.h). Control path.
#include "collector/collector.h"

#include <dlfcn.h>
#include <link.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <string_view>

#include "collector/stack_table.h"
#include "inprof/profile.h"
#include "signal/signal_handler.h"
#include "threads/contained.h"
#include "threads/thread_start.h"

namespace inprof::internal {

namespace {

constexpr int kRescanIntervalMs = 100;
// The collector thread gives up (and says so in health) after this many failed rounds in a
// row: something is persistently wrong and retrying every few milliseconds helps nobody.
constexpr int kMaxConsecutiveFailures = 100;

}  // namespace

// The code lock (collector.h). A plain mutex held by another thread when the program forks
// would stay locked in the child forever (the child's dlclose hook would hang); this one is
// taken over by a process that finds it held by its parent's thread. No pthread_atfork: the
// order of fork handlers between libraries is not ours to choose. Not async-signal-safe.
class CAPABILITY("mutex") CodeLock {
 public:
  void lock() ACQUIRE() {
    const uint64_t me = static_cast<uint64_t>(getpid()) << 1 | 1;
    for (int spins = 0;; ++spins) {
      uint64_t seen = 0;
      if (owner_.compare_exchange_weak(seen, me, std::memory_order_acquire)) return;
      // Held by a thread of the parent at fork: that thread does not exist here.
      if (seen != 0 && seen != me && owner_.compare_exchange_strong(seen, me, std::memory_order_acquire)) {
        return;
      }
      if (spins < 100) {
        sched_yield();
      } else {
        const struct timespec pause = {0, 100000};
        nanosleep(&pause, nullptr);
      }
    }
  }
  void unlock() RELEASE() { owner_.store(0, std::memory_order_release); }

 private:
  std::atomic<uint64_t> owner_{0};
};

namespace {

struct ClosingModule {
  uint64_t ticket;
  pid_t pid;  // the process that began the dlclose (a forked child drops its parent's)
  uintptr_t base;
  std::string name;
};

// What the code lock guards (the lock is its `lock`, named TheCodeLock() everywhere).
struct CodeGate {
  CodeLock lock;
  // The one whose tables the handler reads, if any.
  Collector* collector GUARDED_BY(TheCodeLock()) = nullptr;
  // A forked child's copy of its parent's is not used.
  pid_t collector_pid GUARDED_BY(TheCodeLock()) = 0;
  std::vector<ClosingModule> closing GUARDED_BY(TheCodeLock());
  uint64_t next_ticket GUARDED_BY(TheCodeLock()) = 1;
  // dlcloses in progress that could not record their modules (no memory): while any runs,
  // every table published is empty (CodeGateAccess::PublishLocked).
  uint32_t withdrawn GUARDED_BY(TheCodeLock()) = 0;
};

// Never destroyed: a dlclose may run during exit, after static destructors.
CodeGate& Gate() {
  static CodeGate* gate = new CodeGate;
  return *gate;
}

}  // namespace

CodeLock& TheCodeLock() { return Gate().lock; }

namespace {

class SCOPED_CAPABILITY CodeGuard {
 public:
  CodeGuard() ACQUIRE(TheCodeLock()) { TheCodeLock().lock(); }
  ~CodeGuard() RELEASE() { TheCodeLock().unlock(); }
  CodeGuard(const CodeGuard&) = delete;
  CodeGuard& operator=(const CodeGuard&) = delete;
};

// The collector the handler reads from, in this process.
Collector* CurrentCollectorLocked() REQUIRES(TheCodeLock()) {
  if (Gate().collector != nullptr && Gate().collector_pid != getpid()) Gate().collector = nullptr;
  return Gate().collector;
}

// One loaded module as dl_iterate_phdr reports it.
struct Module {
  uintptr_t base = 0;
  std::string name;
  std::vector<std::pair<uintptr_t, uintptr_t>> exec;  // executable PT_LOAD ranges
  std::vector<std::pair<uintptr_t, uintptr_t>> readable;  // readable PT_LOAD ranges
  // Only read for a dlclose (ReadModules(true)):
  std::vector<std::pair<uintptr_t, uintptr_t>> loads;  // every PT_LOAD range
  std::string soname;
  std::vector<std::string> needed;
  bool nodelete = false;
  bool deps_known = false;  // the dynamic section was read
};

// A NUL-terminated string at `at` inside one of `m`'s segments, or empty.
std::string StringIn(const Module& m, uintptr_t at) {
  for (const auto& [b, e] : m.loads) {
    if (at >= b && at < e) {
      const char* p = reinterpret_cast<const char*>(at);
      return std::string(p, strnlen(p, e - at));
    }
  }
  return {};
}

bool Inside(const Module& m, uintptr_t at, size_t size) {
  for (const auto& [b, e] : m.loads) {
    if (at >= b && at + size <= e) return true;
  }
  return false;
}

// DT_SONAME, DT_NEEDED and DF_1_NODELETE from the module's dynamic section. glibc relocates
// the section's addresses in place for most modules but not for all (the vDSO's is
// read-only), so an address below the load base is taken as unrelocated.
void ReadDynamic(const dl_phdr_info* info, Module* m) {
  const ElfW(Dyn)* dyn = nullptr;
  size_t count = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
      count = ph.p_memsz / sizeof(ElfW(Dyn));
    }
  }
  if (dyn == nullptr) {
    m->deps_known = true;  // nothing dynamic: needs nothing
    return;
  }
  if (!Inside(*m, reinterpret_cast<uintptr_t>(dyn), count * sizeof(ElfW(Dyn)))) return;
  uintptr_t strtab = 0;
  std::vector<uintptr_t> needed;
  uintptr_t soname = ~uintptr_t{0};
  for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; ++i) {
    switch (dyn[i].d_tag) {
      case DT_STRTAB:
        strtab = dyn[i].d_un.d_ptr;
        break;
      case DT_NEEDED:
        needed.push_back(dyn[i].d_un.d_val);
        break;
      case DT_SONAME:
        soname = dyn[i].d_un.d_val;
        break;
      case DT_FLAGS_1:
        m->nodelete = (dyn[i].d_un.d_val & DF_1_NODELETE) != 0;
        break;
      default:
        break;
    }
  }
  if (strtab != 0 && strtab < m->base) strtab += m->base;
  if (strtab == 0 || !Inside(*m, strtab, 1)) return;
  for (uintptr_t offset : needed) {
    std::string name = StringIn(*m, strtab + offset);
    if (name.empty()) return;
    m->needed.push_back(std::move(name));
  }
  if (soname != ~uintptr_t{0}) m->soname = StringIn(*m, strtab + soname);
  m->deps_known = true;
}

// Every loaded module, in the loader's order (the main program first, then load order).
std::vector<Module> ReadModules(bool with_dynamic) {
  struct Args {
    std::vector<Module>* out;
    bool with_dynamic;
  };
  std::vector<Module> modules;
  Args args{&modules, with_dynamic};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* a = static_cast<Args*>(data);
        Module m;
        m.base = info->dlpi_addr;
        m.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t b = info->dlpi_addr + ph.p_vaddr;
          const uintptr_t e = b + ph.p_memsz;
          if ((ph.p_flags & PF_X) != 0) m.exec.emplace_back(b, e);
          if ((ph.p_flags & PF_R) != 0) m.readable.emplace_back(b, e);
          m.loads.emplace_back(b, e);
        }
        if (a->with_dynamic) ReadDynamic(info, &m);
        a->out->push_back(std::move(m));
        return 0;
      },
      &args);
  return modules;
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool Named(const std::set<std::string, std::less<>>& names, const Module& m) {
  return names.count(Basename(m.name)) != 0 || (!m.soname.empty() && names.count(m.soname) != 0);
}

// The modules dlclose(handle) may unmap, as indexes into `modules` (see collector.h).
// Permanent: the main program and what it needs (a startup dependency is never unloaded),
// the vDSO, and modules marked DF_1_NODELETE. Of the rest, the handle's module, every module
// loaded after it (its new dependencies were loaded with it), and earlier ones it needs
// (a dependency loaded by an earlier dlopen whose library was closed since) may go.
std::vector<bool> MayUnload(const std::vector<Module>& modules, const link_map* handle_map) {
  const size_t n = modules.size();
  std::vector<bool> permanent(n, false), unload(n, false);
  std::set<std::string, std::less<>> needed;
  bool deps_known = true;
  for (size_t i = 0; i < n; ++i) {
    const Module& m = modules[i];
    if (i == 0 || m.nodelete || m.name.find("linux-vdso") != std::string::npos ||
        m.name.find("linux-gate") != std::string::npos) {
      permanent[i] = true;
    }
  }
  // The main program's dependencies, transitively.
  if (n > 0) {
    std::set<std::string, std::less<>> startup(modules[0].needed.begin(), modules[0].needed.end());
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t i = 1; i < n; ++i) {
        if (permanent[i] || !Named(startup, modules[i])) continue;
        permanent[i] = grew = true;
        startup.insert(modules[i].needed.begin(), modules[i].needed.end());
      }
    }
  }
  size_t first = n;
  if (handle_map != nullptr) {
    for (size_t i = 0; i < n; ++i) {
      if (modules[i].base == handle_map->l_addr && handle_map->l_name != nullptr &&
          modules[i].name == handle_map->l_name) {
        first = i;
        break;
      }
    }
  }
  if (first == n) {
    // The handle did not resolve to a loaded module: anything not permanent may go.
    for (size_t i = 0; i < n; ++i) unload[i] = !permanent[i];
    return unload;
  }
  for (size_t i = first; i < n; ++i) {
    if (i != first && permanent[i]) continue;
    unload[i] = true;
    deps_known = deps_known && modules[i].deps_known;
    needed.insert(modules[i].needed.begin(), modules[i].needed.end());
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < first; ++i) {
      if (permanent[i] || unload[i]) continue;
      if (!deps_known || Named(needed, modules[i])) {
        unload[i] = grew = true;
        deps_known = deps_known && modules[i].deps_known;
        needed.insert(modules[i].needed.begin(), modules[i].needed.end());
      }
    }
  }
  return unload;
}

bool Closing(const Module& m) REQUIRES(TheCodeLock()) {
  const pid_t pid = getpid();
  for (const ClosingModule& c : Gate().closing) {
    if (c.pid == pid && c.base == m.base && c.name == m.name) return true;
  }
  return false;
}

// dl_iterate_phdr's adds/subs counters change whenever a module is loaded or unloaded.
unsigned long long ModulesStamp() {
  unsigned long long stamp = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        *static_cast<unsigned long long*>(data) = info->dlpi_adds * 1000003ull + info->dlpi_subs;
        return 1;
      },
      &stamp);
  return stamp;
}

}  // namespace

// What the dlclose hook's functions do to a collector's tables, under the code lock.
struct CodeGateAccess {
  // Publishes a table of every executable range of `modules` except those of modules being
  // closed.
  static void PublishLocked(Collector* c, const std::vector<Module>& modules)
      REQUIRES(TheCodeLock()) {
    if (Gate().withdrawn != 0) {
      WithdrawLocked(c);
      return;
    }
    auto table = std::make_unique<Collector::CodeTable>();
    std::vector<std::pair<uintptr_t, uintptr_t>> pairs, readable;
    for (const Module& m : modules) {
      if (Closing(m)) continue;
      pairs.insert(pairs.end(), m.exec.begin(), m.exec.end());
      readable.insert(readable.end(), m.readable.begin(), m.readable.end());
    }
    const auto flatten = [](std::vector<std::pair<uintptr_t, uintptr_t>>& from,
                            std::vector<uintptr_t>* to) {
      std::sort(from.begin(), from.end());
      to->reserve(2 * from.size());
      for (const auto& [b, e] : from) {
        to->push_back(b);
        to->push_back(e);
      }
    };
    flatten(pairs, &table->bounds);
    flatten(readable, &table->readable_bounds);
    table->view.ranges = reinterpret_cast<const uintptr_t(*)[2]>(table->bounds.data());
    table->view.count = pairs.size();
    // The segments a PLT step may read a GOT slot from (fp_walk_x86_64.cpp): the same modules,
    // withdrawn for a dlclose with their code.
    table->view.readable = reinterpret_cast<const uintptr_t(*)[2]>(table->readable_bounds.data());
    table->view.readable_count = readable.size();
    c->PublishCodeTableLocked(std::move(table));
  }
  static void ReclaimLocked(Collector* c) REQUIRES(TheCodeLock()) { c->ReclaimCodeRanges(); }
  // Publishes no code ranges at all (the handler then recovers no frameless leaf's caller
  // and reads no code bytes); the current table stays owned, freed like any replaced one.
  // Allocates nothing.
  static void WithdrawLocked(Collector* c) noexcept REQUIRES(TheCodeLock()) {
    c->sampler_->code.store(nullptr, std::memory_order_seq_cst);
  }
};

Collector::Collector(Sampler* sampler, Mutex* mu, SampleSink* sink,
                     std::unique_ptr<DwarfUnwinder> dwarf)
    : sampler_(sampler), mu_(mu), sink_(sink), dwarf_(std::move(dwarf)) {
  CodeGuard guard;
  Gate().collector = this;
  Gate().collector_pid = getpid();
}

Collector::~Collector() {
  Stop();
  CodeGuard guard;
  if (Gate().collector == this) Gate().collector = nullptr;
  // A handler still in flight (one a program handler interrupted and never returned to) may
  // hold any table we published: keep them all.
  if (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) {
    for (auto& table : code_retired_) (void)table.release();
    (void)code_current_.release();
  }
}

pid_t Collector::Start(ThreadRegistry* registry, int drain_ms) {
  registry_ = registry;
  drain_ms_ = drain_ms;
  const pid_t tid = StartInternalThread(&thread_, &Collector::Entry, this);
  running_ = tid != 0;
  return tid;
}

void Collector::Stop() {
  if (!running_) return;
  stop_requested_.store(true, std::memory_order_release);
  sampler_->drain_word.store(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sampler_->drain_word), FUTEX_WAKE_PRIVATE,
          INT32_MAX, nullptr, nullptr, 0);
  pthread_join(thread_, nullptr);
  running_ = false;
}

void* Collector::Entry(void* self) {
  // Nothing may escape a thread's body (std::terminate would end the program): Main catches
  // per round; this is the last line.
  try {
    static_cast<Collector*>(self)->Main();
  } catch (...) {
    static_cast<Collector*>(self)->thread_gave_up_.store(true, std::memory_order_release);
  }
  return nullptr;
}

void Collector::Main() {
  ProfilerWorkScope work;
  pthread_setname_np(pthread_self(), "inprof-collect");
  // Wake often enough that a ring (31 records) is never more than a quarter full between
  // drains, and no more often: each wakeup preempts a busy thread on a loaded machine.
  const int rescan_every = std::max(1, kRescanIntervalMs / drain_ms_);
  int tick = 0;
  int failures_in_a_row = 0;
  while (!stop_requested_.load(std::memory_order_acquire)) {
    // Until the next drain, or at once when Stop or an allocation hook whose ring is filling
    // up sets the word (a futex word, not an eventfd: the program may close or reuse any fd
    // number; docs/lifecycle.md).
    const struct timespec wait = {drain_ms_ / 1000, static_cast<long>(drain_ms_ % 1000) * 1000000};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sampler_->drain_word), FUTEX_WAIT_PRIVATE, 0,
            &wait, nullptr, 0);
    if (stop_requested_.load(std::memory_order_acquire)) break;
    try {
      Tick(++tick, rescan_every);
      // Hooks waiting for room in their ring (alloc_sampler.cpp) try again.
      if (sampler_->drain_word.exchange(0, std::memory_order_acq_rel) != 0) {
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sampler_->drain_word), FUTEX_WAKE_PRIVATE,
                INT32_MAX, nullptr, nullptr, 0);
      }
      failures_in_a_row = 0;
    } catch (const std::exception& e) {
      thread_failures_.fetch_add(1, std::memory_order_relaxed);
      MutexLock lock(mu_);
      NoteFailure("collector", e.what());
      ++failures_in_a_row;
    } catch (...) {
      thread_failures_.fetch_add(1, std::memory_order_relaxed);
      MutexLock lock(mu_);
      NoteFailure("collector", "unknown exception");
      ++failures_in_a_row;
    }
    if (failures_in_a_row >= kMaxConsecutiveFailures) {
      // The rings are still drained by the session's stop and by dumps.
      thread_gave_up_.store(true, std::memory_order_release);
      break;
    }
  }
}

void Collector::Tick(int tick, int rescan_every) {
  {
    MutexLock lock(mu_);
    DrainLocked();
    registry_->ReleaseRetired();
    sink_->OnDrained();
  }
  // Modules: checked every drain (one dl_iterate_phdr callback when nothing changed) so a
  // library that is loaded, sampled and unloaded between two dumps is still known.
  if (RefreshCodeRanges(false)) sink_->OnModulesChanged();
  {
    CodeGuard guard;
    ReclaimCodeRanges();
  }
  if (tick % rescan_every == 0) registry_->Rescan();
}

void Collector::NoteFailure(const char* where, const char* what) {
  if (first_failure_.empty()) first_failure_ = std::string(where) + ": " + what;
}

std::vector<std::string> Collector::Warnings() const {
  std::vector<std::string> out;
  const uint64_t rounds = thread_failures_.load(std::memory_order_relaxed);
  if (failed_samples_ != 0 || rounds != 0) {
    std::string text = "the collector caught errors";
    if (failed_samples_ != 0) text += ", " + std::to_string(failed_samples_) + " samples dropped";
    if (rounds != 0) text += ", " + std::to_string(rounds) + " rounds failed";
    if (!first_failure_.empty()) text += " (first: " + first_failure_ + ")";
    out.push_back(std::move(text));
  }
  if (thread_gave_up_.load(std::memory_order_acquire)) {
    out.push_back("the collector thread stopped early after repeated errors: samples were "
                  "drained only at dumps and at stop");
  }
  return out;
}

std::atomic<int> g_dlclose_in_progress{0};

void Collector::DrainLocked(bool before_dlclose) {
  bool modules_checked = false;
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    ThreadSlot& slot = sampler_->slots[i];
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kFree) continue;
    SampleRing* ring = slot.ring;
    // The sample an exiting thread took (its last record): after the thread's stack copies,
    // which may hold its last samples.
    bool has_exit = false;
    SampleRecord exit_record;
    while (SampleRecord* record = ring->peek()) {
      // A sample that fails (the sink's table cannot grow: bad_alloc) is dropped, never
      // left in the ring: it would fail again at every drain.
      try {
        if (record->repeat_last) {
          if (has_exit) EmitExitSampleLocked(i, slot, exit_record);
          exit_record = *record;
          has_exit = true;
        } else {
          stack_.clear();
          AdjustFrames({record->frames, std::min<uint32_t>(record->depth, kMaxFrames)},
                       record->stop, &stack_);
          if (record->recovered_leaf_caller) ++counts_.recovered_leaf_callers;
          EmitLocked(i, slot,
                     SampleMeta{record->weight, record->event, record->labels, record->time_ns,
                                record->alloc});
        }
      } catch (const std::exception& e) {
        ++failed_samples_;
        NoteFailure("sample", e.what());
      }
      ring->pop();
    }
    const auto emit_exit = [&]() REQUIRES(mu_) {
      if (!has_exit) return;
      has_exit = false;
      try {
        EmitExitSampleLocked(i, slot, exit_record);
      } catch (const std::exception& e) {
        ++failed_samples_;
        NoteFailure("sample", e.what());
      }
    };
    // Stack copies wait while a library is being unloaded: their unwind tables may be gone
    // before the unwinder has heard of it (dlclose_hook.cpp). The drain the hook itself runs
    // just before the unload is the exception, so samples inside the library unwind fully.
    if (slot.copies == nullptr || !dwarf_ ||
        (!before_dlclose && g_dlclose_in_progress.load(std::memory_order_acquire) != 0)) {
      emit_exit();
      continue;
    }
    const CopyRecord* copy;
    const uint8_t* bytes;
    while (slot.copies->Peek(&copy, &bytes)) {
      try {
        if (!modules_checked) {
          modules_checked = true;
          if (dwarf_->ModulesChanged()) dwarf_->RefreshModules();
        }
        stack_.clear();
        UnwindCopy(*copy, bytes, &stack_);
        EmitLocked(i, slot, SampleMeta{copy->weight, copy->event, copy->labels, copy->time_ns,
                                       copy->alloc});
      } catch (const std::exception& e) {
        ++failed_samples_;
        NoteFailure("stack copy", e.what());
      }
      slot.copies->Pop();
    }
    emit_exit();
  }
}

namespace {

// The section the allocation hooks are in (INPROF_PROFILER_TEXT, signal_handler.h).
extern "C" const char __start_inprof_profiler_text[] __attribute__((weak, visibility("hidden")));
extern "C" const char __stop_inprof_profiler_text[] __attribute__((weak, visibility("hidden")));

// Drops the frames that are the profiler's own: the allocation hook's, leaf-most, and an
// operator new hook's between the program's call and the next operator new (libstdc++'s,
// which calls the malloc hook).
void StripProfilerFrames(StackBuffer* stack) {
  stack->drop_within(reinterpret_cast<uintptr_t>(__start_inprof_profiler_text),
                     reinterpret_cast<uintptr_t>(__stop_inprof_profiler_text));
}

}  // namespace

void Collector::EmitLocked(uint32_t index, ThreadSlot& slot, const SampleMeta& meta) {
  if (meta.alloc.size != 0) {
    // A sampled allocation's stack starts in its hook (in the profiler's text section):
    // from the program's first frame on, it is the program's. Not a thread's last stack
    // either (that stands for CPU time its exit accounts for).
    StripProfilerFrames(&stack_);
    sink_->OnSample(slot, stack_, meta);
    return;
  }
  if (last_.size() != sampler_->slot_count) last_.resize(sampler_->slot_count);
  LastStack& last = last_[index];
  last.generation = slot.generation.load(std::memory_order_relaxed);
  last.frames.assign(stack_.frames().begin(), stack_.frames().end());
  sink_->OnSample(slot, stack_, meta);
}

void Collector::EmitExitSampleLocked(uint32_t index, ThreadSlot& slot, const SampleRecord& record) {
  stack_.clear();
  if (index < last_.size() && !last_[index].frames.empty() &&
      last_[index].generation == slot.generation.load(std::memory_order_relaxed)) {
    for (uintptr_t frame : last_[index].frames) stack_.push(frame);
  } else {
    AdjustFrames({record.frames, std::min<uint32_t>(record.depth, kMaxFrames)}, record.stop,
                 &stack_);
  }
  sink_->OnSample(slot, stack_, SampleMeta{record.weight, record.event, record.labels,
                                           record.time_ns});
}

bool Collector::UnwindEarlyCopyLocked(const CopyRecord& copy, const uint8_t* bytes,
                                      StackBuffer* out) {
  if (!dwarf_) return false;
  try {
    if (dwarf_->ModulesChanged()) dwarf_->RefreshModules();
    out->clear();
    UnwindCopy(copy, bytes, out);
    return out->frames().size() != 0;
  } catch (const std::exception& e) {
    ++failed_samples_;
    NoteFailure("stack copy", e.what());
    return false;
  }
}

void Collector::AdjustFrames(std::span<const uintptr_t> frames, WalkStop stop, StackBuffer* out) {
  frames = frames.first(std::min<size_t>(frames.size(), kMaxFrames));
  // Return addresses point after the call: look them up at -1 so the line is the call's,
  // not the next statement's. frames[0] is the interrupted pc itself.
  for (size_t f = 0; f < frames.size(); ++f) out->push(f == 0 ? frames[0] : frames[f] - 1);
  switch (stop) {
    case WalkStop::kDepthLimit:
      out->push(kTruncatedMarker);
      ++counts_.truncated;
      break;
    case WalkStop::kNotIncreasing:
    case WalkStop::kMisaligned:
      ++counts_.broken;
      break;
    case WalkStop::kNoBounds:
      ++counts_.leaf_only;
      break;
    default:
      break;
  }
}

void Collector::UnwindCopy(const CopyRecord& copy, const uint8_t* bytes, StackBuffer* out) {
  if (dwarf_pcs_.size() < kMaxFrames) dwarf_pcs_.resize(kMaxFrames);
  const UnwindResult u = dwarf_->Unwind(copy.copy, bytes, dwarf_pcs_.data(), sampler_->max_depth);
  // auto: DWARF knows every frame of code without frame pointers (libc's qsort between an
  // application comparator and its caller), where an fp walk can reach the root while
  // silently skipping frames; the fp chain wins only where DWARF stopped early and fp went
  // further (code without unwind tables, e.g. JIT code).
  const bool use_dwarf = copy.fp_depth == 0 || u.stop == UnwindStop::kRoot || u.depth >= copy.fp_depth;
  if (!use_dwarf) {
    ++counts_.fp_chains;
    AdjustFrames({copy.fp_frames, std::min<uint32_t>(copy.fp_depth, kMaxFrames)}, copy.fp_stop,
                 out);
    return;
  }
  ++counts_.dwarf_chains;
  const uint32_t depth = std::min<uint32_t>(u.depth, kMaxFrames);
  for (uint32_t f = 0; f < depth; ++f) out->push(f == 0 ? dwarf_pcs_[0] : dwarf_pcs_[f] - 1);
  switch (u.stop) {
    case UnwindStop::kTruncated:
      // The root side is missing, as at the depth limit: mark it the same way.
      out->push(kTruncatedMarker);
      ++counts_.copy_truncated;
      break;
    case UnwindStop::kDepthLimit:
      out->push(kTruncatedMarker);
      ++counts_.truncated;
      break;
    case UnwindStop::kNoUnwindInfo:
    case UnwindStop::kError:
      ++counts_.broken;
      break;
    case UnwindStop::kNoStack:
      ++counts_.leaf_only;
      break;
    default:
      break;
  }
}

void Collector::ReclaimCodeRanges() {
  if (code_retired_.empty()) return;
  // Every handler that could have loaded a retired table incremented the counter before
  // loading it and decrements it only when done: zero now means none is still reading one.
  // A busy process has handlers in flight only for a microsecond at a time, so a later drain
  // soon finds a moment. A stuck handler keeps the count above zero: then nothing is freed.
  if (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) return;
  code_retired_.clear();
}

void Collector::PublishCodeTableLocked(std::unique_ptr<CodeTable> table) {
  // seq_cst, with the handler's seq_cst load of `code` after its seq_cst increment of
  // g_handlers_in_flight: a handler that still sees the old table is counted in flight when
  // ReclaimCodeRanges (or a dlclose) looks (a Dekker-style pairing; acquire/release alone
  // would not order the store before the later load of the counter).
  sampler_->code.store(&table->view, std::memory_order_seq_cst);
  if (code_current_) code_retired_.push_back(std::move(code_current_));
  code_current_ = std::move(table);  // the old one goes at the next ReclaimCodeRanges
}

bool Collector::RefreshCodeRanges(bool force) {
  CodeGuard guard;
  const unsigned long long stamp = ModulesStamp();
  if (!force && stamp == modules_stamp_) return false;
  modules_stamp_ = stamp;
  CodeGateAccess::PublishLocked(this, ReadModules(false));
  return true;
}

DlcloseTicket BeforeDlcloseUnmap(void* handle) noexcept {
  DlcloseTicket ticket;
  // RTLD_DEFAULT / RTLD_NEXT and null are no libraries: the real dlclose only reports the
  // error. A handle that does not resolve is treated as "anything may go" (MayUnload).
  link_map* map = nullptr;
  if (handle != nullptr && handle != RTLD_DEFAULT && handle != RTLD_NEXT &&
      dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0) {
    map = nullptr;
  }
  try {
    CodeGuard guard;
    Collector* collector = CurrentCollectorLocked();
    if (collector == nullptr) return ticket;  // no handler reads a table
    ticket.id = Gate().next_ticket++;
    try {
      const std::vector<Module> modules = ReadModules(true);
      const std::vector<bool> unload = MayUnload(modules, map);
      for (size_t i = 0; i < modules.size(); ++i) {
        if (unload[i]) {
          Gate().closing.push_back({ticket.id, getpid(), modules[i].base, modules[i].name});
        }
      }
      CodeGateAccess::PublishLocked(collector, modules);
    } catch (...) {
      // No memory to build a table without the closing modules, or to remember them: no
      // table at all until AfterDlcloseUnmap, which keeps the invariant at the cost of leaf
      // recovery meanwhile. Entries this ticket recorded are erased after the call.
      CountContained(ContainedAt::kHook);
      ++Gate().withdrawn;
      ticket.withdrew = true;
      CodeGateAccess::WithdrawLocked(collector);
    }
  } catch (...) {
    // The code lock's gate could not be made: then no collector was ever registered with
    // it, and no handler reads a table.
    CountContained(ContainedAt::kHook);
    return ticket;
  }
  // Outside the lock: the collector's refresh and other dlcloses go on meanwhile, and every
  // table they publish leaves our modules out.
  ticket.handlers_idle = WaitForHandlers(kHandlerWaitMs);
  return ticket;
}

void AfterDlcloseUnmap(const DlcloseTicket& ticket) noexcept {
  if (ticket.id == 0) return;
  try {
    CodeGuard guard;
    if (ticket.withdrew) --Gate().withdrawn;
    std::erase_if(Gate().closing, [&](const ClosingModule& c) { return c.ticket == ticket.id; });
    Collector* collector = CurrentCollectorLocked();
    if (collector == nullptr) return;
    CodeGateAccess::PublishLocked(collector, ReadModules(false));
    CodeGateAccess::ReclaimLocked(collector);
  } catch (...) {
    // The table published before the call stays (it lacks only modules that may be gone)
    // until the collector's next refresh.
    CountContained(ContainedAt::kHook);
  }
}

}  // namespace inprof::internal
