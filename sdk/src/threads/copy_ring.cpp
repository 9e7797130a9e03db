// Allocation of the per-thread rings of stack copies (see sample_record.h). Control path.
#include <sys/mman.h>

#include <cstring>
#include <new>

#include "signal/sample_record.h"

namespace inprof::internal {

// One anonymous mapping per ring rather than malloc: a ring is 128 KiB with the defaults and
// lives as long as its thread. From malloc, glibc serves such blocks from its heaps once the
// first free has raised its mmap threshold, and a program that creates and ends threads all
// day then fragments those heaps: a long churn run's resident size kept creeping up. A
// mapping goes back to the kernel whole when the thread's ring is released.
namespace {
uint32_t RoundedSlots(uint32_t slots) {
  uint32_t size = 1;
  while (size < slots) size <<= 1;
  return size;
}
size_t RecordBytes(uint32_t size) { return (sizeof(CopyRecord) * size + 63) & ~size_t{63}; }
}  // namespace

size_t CopyRing::MappingBytes(uint32_t slots, uint32_t slot_bytes) {
  const uint32_t size = RoundedSlots(slots);
  return RecordBytes(size) + static_cast<size_t>(size) * (slot_bytes & ~7u);
}

CopyRing::CopyRing(uint32_t slots, uint32_t slot_bytes) : slot_bytes_(slot_bytes & ~7u) {
  const uint32_t size = RoundedSlots(slots);
  mask_ = size - 1;
  const size_t records = RecordBytes(size);
  mapping_bytes_ = MappingBytes(slots, slot_bytes);
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw std::bad_alloc();
  }
  records_ = static_cast<CopyRecord*>(mapping_);  // plain data: the memset below sets it up
  data_ = static_cast<uint8_t*>(mapping_) + records;
  // Touch everything now: a first write into fresh pages inside the handler costs a page
  // fault each (2.8 us per 16 KiB copy instead of 0.4 us, docs/platform-facts.md).
  std::memset(mapping_, 0, mapping_bytes_);
}

CopyRing::~CopyRing() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
}

}  // namespace inprof::internal
