// The staging ring: portable pinned chunks
// (CU_MEMHOSTALLOC_PORTABLE), allocated on first need up to the runtime's
// staging budget and recycled through completion epochs. Small transfers
// share the current chunk (bump allocation, 256-byte aligned); a transfer
// larger than what is left takes a fresh chunk. Taking a fresh chunk seals
// the open epoch (so the chunks it keeps can retire); when the budget is
// exhausted the ring first retires without blocking, then waits on the host
// for the oldest sealed epoch only (a counted staging wait).
// Under the runtime's admission lock, with its context current.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/component.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "memory/transfer_plan.hpp"

namespace t4a::memory {

class StagingRing;

// One pinned chunk. References: the ring while it is the current chunk,
// each epoch and each pipeline stage that uses part of it. When the last
// reference goes it returns to the ring's free list (or, quarantined, is
// leaked and counted).
class Chunk final : public core::Object {
public:
  Chunk(StagingRing *ring, unsigned char *host, size_t bytes)
      : Object(core::Kind::Internal), host(host), bytes(bytes), ring(ring) {}
  unsigned char *const host;
  const size_t bytes;
  StagingRing *const ring;
  bool quarantined = false;

protected:
  void last_ref_dropped() override;
};

struct Span {
  core::Ref<Chunk> chunk;
  unsigned char *host = nullptr;
  size_t bytes = 0;
};

class StagingRing final : public core::RuntimeComponent {
public:
  // Finds or makes the runtime's ring (under admission).
  static StagingRing &of(core::Runtime &rt);
  StagingRing(core::Runtime &rt, uint64_t budget, uint64_t chunk_bytes);
  ~StagingRing() override;

  size_t chunk_bytes() const { return chunk_bytes_; }
  size_t capacity_chunks() const { return capacity_; }
  const TransferTuning &tuning() const { return tuning_; }

  // Reserves `len` (<= chunk_bytes) contiguous pinned bytes. Sets *blocked
  // (and returns SUCCESS without a span) when every chunk is held by the
  // caller's own pipeline stages, which the caller must drain first.
  t4a_status reserve(size_t len, Span *out, bool *blocked);
  // A failure after enqueue touched this chunk: never reuse or free it.
  void quarantine(Chunk &c);

  void teardown(bool completion_proven) override;
  void recycle(Chunk *c);

private:
  // Keeps a quarantined chunk of a torn-down ring reachable (never freed).
  static void keep_leaked(Chunk *c) noexcept;
  t4a_status take_chunk(core::Ref<Chunk> *out, bool *exhausted);

  core::Runtime &rt_;
  const TransferTuning tuning_ = TransferTuning::from_env();
  const size_t chunk_bytes_;
  const size_t capacity_;
  std::mutex mu_; // free list: chunks may be recycled from any thread
  std::vector<Chunk *> all_;
  std::vector<Chunk *> free_;
  size_t quarantined_ = 0; // chunks leaked on purpose: outside the budget
  core::Ref<Chunk> current_;
  size_t used_ = 0; // bytes used of current_
  bool torn_down_ = false;
};

} // namespace t4a::memory
