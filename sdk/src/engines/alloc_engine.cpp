// The alloc engine: delivers no signal. Allocations are sampled by the hooks on the
// allocating thread (signal/alloc_sampler.h); what the engine does per thread is to enter
// it in the tid -> slot table the hooks look their thread up in, and take it out again.
// Control path.
#include <cerrno>
#include <memory>

#include "engines/engine.h"

namespace inprof::internal {
namespace {

class AllocEngine final : public Engine {
 public:
  AllocEngine(Sampler* sampler, uint32_t max_threads)
      : sampler_(sampler), table_(MakeTidTable(max_threads, &sampler->alloc_tids)) {}
  // The session stops its hooks and waits for those in flight before engines go.
  ~AllocEngine() override { sampler_->alloc_tids = TidTable{}; }

  EngineKind kind() const override { return EngineKind::kNone; }

  int Create(pid_t tid, uint64_t token, ThreadSource* source) override {
    uint32_t event = 0, index = 0, generation = 0;
    if (!TimerToken::Decode(token, &event, &index, &generation)) return EINVAL;
    if (!sampler_->alloc_tids.Insert(tid, index)) return ENOSPC;
    source->alloc_tid = tid;
    return 0;
  }
  int Start(ThreadSource*, long) override { return 0; }
  void Destroy(ThreadSource* source) override {
    if (source->alloc_tid == 0) return;
    sampler_->alloc_tids.Remove(source->alloc_tid);
    source->alloc_tid = 0;
  }
  // The child's session builds its own table.
  void ForgetInChild(ThreadSource* source) override { source->alloc_tid = 0; }

 private:
  Sampler* sampler_;
  std::unique_ptr<std::atomic<uint64_t>[]> table_;
};

}  // namespace

std::unique_ptr<std::atomic<uint64_t>[]> MakeTidTable(uint32_t max_threads, TidTable* table) {
  uint32_t size = 64;
  while (size < 2 * max_threads) size <<= 1;
  std::unique_ptr<std::atomic<uint64_t>[]> memory(new std::atomic<uint64_t>[size]);
  for (uint32_t i = 0; i < size; ++i) memory[i].store(0, std::memory_order_relaxed);
  table->mask = size - 1;
  table->entries = memory.get();
  return memory;
}

std::unique_ptr<Engine> MakeAllocEngine(Sampler* sampler, uint32_t max_threads) {
  return std::make_unique<AllocEngine>(sampler, max_threads);
}

}  // namespace inprof::internal
