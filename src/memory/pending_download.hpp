// Pending downloads. Enqueuing takes a snapshot of the bytes, so the
// buffer may change afterwards and no staging is held while the download
// waits to be delivered: a download of at most k_host_snapshot_bytes takes
// a pinned host snapshot slot (HostSnapshots, below) when one is free: one
// DMA into it, then one event; delivery waits for that event and copies
// out, with no second device round trip. Otherwise a device snapshot: a
// stream-ordered copy into pool memory, then one event. Delivery (poll once the
// event completed, or wait) moves the snapshot to the caller's memory through
// the staging pipeline on the runtime's delivery stream — ordered after the
// snapshot by a host-observed event, never behind later work of the runtime —
// then frees the snapshot. A download is delivered exactly once; releasing an
// undelivered one frees its snapshot in stream order.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>

#include "core/component.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "memory/buffer.hpp"

namespace t4a::memory {

// Pending downloads of at most this many bytes use a host snapshot slot
// when one is free (docs/memory.md, "Pending downloads": measured on an
// H200, a 4-byte download with wait took 17.8 us through a device
// snapshot, two device round trips, against 8.0 us for cuMemcpyDtoH;
// at 1 MiB the device snapshot path was already 0.68x the raw call).
inline constexpr uint64_t k_host_snapshot_bytes = uint64_t(256) << 10;

// A runtime's pinned host snapshot slots: k_slots slots of
// k_host_snapshot_bytes in one portable pinned block (4 MiB, outside the
// staging budget), made on the first small download. A slot is taken
// under admission; it is free again once its download is delivered or
// released AND its DMA is known complete (delivery observed the event,
// or a later query of the slot's event succeeds): a released, undelivered
// download never lets its slot be reused under a DMA still in flight.
class HostSnapshots final : public core::RuntimeComponent {
public:
  static constexpr int k_slots = 16;
  // Finds or makes the runtime's slots (under admission).
  static HostSnapshots &of(core::Runtime &rt);
  explicit HostSnapshots(core::Runtime &rt) : rt_(rt) {}
  ~HostSnapshots() override = default;

  // Under admission with the runtime's context current: a free slot, its
  // event made if needed (-1: none free, or no pinned memory: the caller
  // takes a device snapshot).
  int acquire();
  unsigned char *host(int slot) const {
    return block_ + static_cast<size_t>(slot) * k_host_snapshot_bytes;
  }
  CUevent event(int slot) const { return slots_[slot].event; }
  // The download is done with the slot; `observed`: its DMA is known
  // complete. Any thread.
  void release(int slot, bool observed);
  // A failure after the DMA may have been enqueued: never reused.
  void quarantine(int slot);
  void teardown(bool completion_proven) override;

private:
  struct Slot {
    CUevent event = nullptr;
    bool in_use = false;
    bool dma_pending = false; // not yet known complete
    bool quarantined = false;
  };
  core::Runtime &rt_;
  std::mutex mu_; // slot states (release runs on any thread)
  unsigned char *block_ = nullptr;
  bool block_failed_ = false;
  Slot slots_[k_slots];
};

class PendingDownload final : public core::Object {
public:
  static t4a_status create(core::Runtime &rt, Buffer &src, uint64_t offset,
                           uint64_t bytes, core::Ref<PendingDownload> *out);
  ~PendingDownload() override;

  // SUCCESS (delivered now), NOT_READY (poll only), or an error.
  t4a_status deliver(void *dst, bool wait);
  uint64_t bytes() const { return bytes_; }

  core::Runtime &runtime() const { return *rt_; }

private:
  explicit PendingDownload(core::Runtime &rt);
  // A failed delivery may leave reads of the snapshot queued: leak it.
  void quarantine_snapshot();
  core::Ref<core::Runtime> rt_;
  std::mutex mu_; // one delivery at a time
  CUdeviceptr snapshot_ = 0;
  uint64_t bytes_ = 0;
  CUevent ready_ = nullptr; // owned unless a host snapshot slot's
  HostSnapshots *host_ = nullptr;
  int slot_ = -1; // the host snapshot slot, or -1 (device snapshot)
  bool ready_seen_ = false;
  // A waited delivery orders its copies after the snapshot on the delivery
  // stream (cuStreamWaitEvent) instead of waiting for the snapshot's event
  // first: one host wait instead of two (T4A_TRANSFER_FORCE pend=stream).
  bool chain_wait_ = false;
  bool delivered_ = false;
};

} // namespace t4a::memory
