// Pending downloads. Enqueuing takes a device-side snapshot of
// the bytes (a stream-ordered copy into pool memory, then one event), so
// the buffer may change afterwards and no staging is held while the
// download waits to be delivered. Delivery (poll once the event completed,
// or wait) moves the snapshot to the caller's memory through the staging
// pipeline on the runtime's delivery stream — ordered after the snapshot by
// a host-observed event, never behind later work of the runtime — then
// frees the snapshot. A download is delivered exactly once; releasing an
// undelivered one frees its snapshot in stream order.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>

#include "core/object.hpp"
#include "core/runtime.hpp"
#include "memory/buffer.hpp"

namespace t4a::memory {

class PendingDownload final : public core::Object {
public:
  static t4a_status create(core::Runtime &rt, Buffer &src, uint64_t offset,
                           uint64_t bytes, core::Ref<PendingDownload> *out);
  ~PendingDownload() override;

  // SUCCESS (delivered now), NOT_READY (poll only), or an error.
  t4a_status deliver(void *dst, bool wait);
  uint64_t bytes() const { return bytes_; }

private:
  explicit PendingDownload(core::Runtime &rt);
  // A failed delivery may leave reads of the snapshot queued: leak it.
  void quarantine_snapshot();
  core::Ref<core::Runtime> rt_;
  std::mutex mu_; // one delivery at a time
  CUdeviceptr snapshot_ = 0;
  uint64_t bytes_ = 0;
  CUevent ready_ = nullptr;
  bool ready_seen_ = false;
  // A waited delivery orders its copies after the snapshot on the delivery
  // stream (cuStreamWaitEvent) instead of waiting for the snapshot's event
  // first: one host wait instead of two (T4A_TRANSFER_FORCE pend=stream).
  bool chain_wait_ = false;
  bool delivered_ = false;
};

} // namespace t4a::memory
