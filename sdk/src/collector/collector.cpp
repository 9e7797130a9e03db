// The collector thread: drains every thread's ring, rescans threads, and keeps the
// handler's code ranges current (see collector.h). Control path.
#include "internal/collector.h"

#include <link.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "internal/runtime.h"
#include "internal/session.h"
#include "internal/signal_handler.h"

namespace inprof::internal {
namespace {

constexpr int kRescanIntervalMs = 100;

}  // namespace

Collector::Collector(Sampler* sampler, std::mutex* mu, SampleSink* sink,
                     std::unique_ptr<DwarfUnwinder> dwarf)
    : sampler_(sampler), mu_(mu), sink_(sink), dwarf_(std::move(dwarf)) {}

Collector::~Collector() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

pid_t Collector::Start(ThreadRegistry* registry, int drain_ms) {
  registry_ = registry;
  drain_ms_ = drain_ms;
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return 0;
  const pid_t tid = StartInternalThread(&thread_, &Collector::Entry, this);
  running_ = tid != 0;
  return tid;
}

void Collector::Stop() {
  if (!running_) return;
  stop_requested_.store(true, std::memory_order_release);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  pthread_join(thread_, nullptr);
  running_ = false;
}

void* Collector::Entry(void* self) {
  static_cast<Collector*>(self)->Main();
  return nullptr;
}

void Collector::Main() {
  ProfilerWorkScope work;
  pthread_setname_np(pthread_self(), "inprof-collect");
  // Wake often enough that a ring (31 records) is never more than a quarter full between
  // drains, and no more often: each wakeup preempts a busy thread on a loaded machine.
  const int rescan_every = std::max(1, kRescanIntervalMs / drain_ms_);
  int tick = 0;
  while (!stop_requested_.load(std::memory_order_acquire)) {
    struct pollfd pfd = {wake_fd_, POLLIN, 0};
    poll(&pfd, 1, drain_ms_);
    if (stop_requested_.load(std::memory_order_acquire)) break;
    {
      std::lock_guard<std::mutex> lock(*mu_);
      DrainLocked();
      registry_->ReleaseRetired();
      sink_->OnDrained();
    }
    // Modules: checked every drain (one dl_iterate_phdr callback when nothing changed) so a
    // library that is loaded, sampled and unloaded between two dumps is still known.
    if (RefreshCodeRanges(false)) sink_->OnModulesChanged();
    ReclaimCodeRanges();
    if (++tick % rescan_every == 0) registry_->Rescan();
  }
}

std::atomic<int> g_dlclose_in_progress{0};

void Collector::DrainLocked(bool before_dlclose) {
  bool modules_checked = false;
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    ThreadSlot& slot = sampler_->slots[i];
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kFree) continue;
    SampleRing* ring = slot.ring;
    while (SampleRecord* record = ring->peek()) {
      stack_.clear();
      AdjustFrames({record->frames, std::min<uint32_t>(record->depth, kMaxFrames)}, record->stop,
                   &stack_);
      if (record->recovered_leaf_caller) ++counts_.recovered_leaf_callers;
      sink_->OnSample(slot, stack_, record->weight, record->event);
      ring->pop();
    }
    // Stack copies wait while a library is being unloaded: their unwind tables may be gone
    // before the unwinder has heard of it (dlclose_hook.cpp). The drain the hook itself runs
    // just before the unload is the exception, so samples inside the library unwind fully.
    if (slot.copies == nullptr || !dwarf_ ||
        (!before_dlclose && g_dlclose_in_progress.load(std::memory_order_acquire) != 0)) {
      continue;
    }
    const CopyRecord* copy;
    const uint8_t* bytes;
    while (slot.copies->Peek(&copy, &bytes)) {
      if (!modules_checked) {
        modules_checked = true;
        std::string error;
        if (dwarf_->ModulesChanged()) dwarf_->RefreshModules(&error);
      }
      stack_.clear();
      UnwindCopy(*copy, bytes, &stack_);
      sink_->OnSample(slot, stack_, copy->weight, copy->event);
      slot.copies->Pop();
    }
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
  // soon finds a moment.
  if (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) return;
  code_retired_.clear();
}

bool Collector::RefreshCodeRanges(bool force) {
  // dl_iterate_phdr's adds/subs counters change whenever a module is loaded or unloaded.
  unsigned long long stamp = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        *static_cast<unsigned long long*>(data) = info->dlpi_adds * 1000003ull + info->dlpi_subs;
        return 1;
      },
      &stamp);
  if (!force && stamp == modules_stamp_) return false;
  modules_stamp_ = stamp;
  auto table = std::make_unique<CodeTable>();
  std::vector<uintptr_t>& bounds = table->bounds;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* out = static_cast<std::vector<uintptr_t>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          out->push_back(info->dlpi_addr + ph.p_vaddr);
          out->push_back(info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        return 0;
      },
      &bounds);
  // Sort pairs by start address.
  std::vector<std::pair<uintptr_t, uintptr_t>> pairs;
  for (size_t i = 0; i + 1 < bounds.size(); i += 2) pairs.emplace_back(bounds[i], bounds[i + 1]);
  std::sort(pairs.begin(), pairs.end());
  bounds.clear();
  for (const auto& [b, e] : pairs) {
    bounds.push_back(b);
    bounds.push_back(e);
  }
  table->view.ranges = reinterpret_cast<const uintptr_t(*)[2]>(bounds.data());
  table->view.count = pairs.size();
  // seq_cst, with the handler's seq_cst load of `code` after its seq_cst increment of
  // g_handlers_in_flight: a handler that still sees the old table is counted in flight when
  // ReclaimCodeRanges looks (a Dekker-style pairing; acquire/release alone would not order
  // the store before the later load of the counter).
  sampler_->code.store(&table->view, std::memory_order_seq_cst);
  if (code_current_) code_retired_.push_back(std::move(code_current_));
  code_current_ = std::move(table);  // the old one goes at the next ReclaimCodeRanges
  return true;
}

}  // namespace inprof::internal
