#include "memory/pending_download.hpp"

#include <cstring>

#include "core/admission.hpp"
#include "core/counters.hpp"
#include "core/log.hpp"
#include "core/op_scope.hpp"
#include "memory/staging_ring.hpp"
#include "memory/transfer.hpp"

namespace t4a::memory {

using namespace t4a::driver;

namespace {
// Torn down after the staging ring (100), before the copy workers (110).
const core::PartSlot k_snapshots_slot =
    core::register_part("download snapshots", 105);
} // namespace

HostSnapshots &HostSnapshots::of(core::Runtime &rt) {
  auto *h = static_cast<HostSnapshots *>(rt.part(k_snapshots_slot));
  if (h == nullptr) {
    auto made = std::make_unique<HostSnapshots>(rt);
    h = made.get();
    rt.set_part(k_snapshots_slot, std::move(made));
  }
  return *h;
}

int HostSnapshots::acquire() {
  // The block and the events are made under admission only (acquire's
  // callers are serialized by it), outside mu_.
  if (block_ == nullptr) {
    if (block_failed_) return -1;
    void *p = nullptr;
    if (auto r = cu::mem_host_alloc(&p, k_slots * k_host_snapshot_bytes,
                                    CU_MEMHOSTALLOC_PORTABLE);
        !r) {
      // No pinned memory for snapshots: downloads take device snapshots
      // (the result is not an error of the download).
      block_failed_ = true;
      return -1;
    }
    std::lock_guard<std::mutex> lock(mu_);
    block_ = static_cast<unsigned char *>(p);
  }
  int found = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < k_slots && found < 0; ++i) {
      Slot &s = slots_[i];
      if (s.in_use || s.quarantined) continue;
      // A slot left by an undelivered download: free once its DMA is
      // known complete. The query's other results (NOT_READY, a sticky
      // error) leave it taken; no user code runs under mu_.
      if (s.dma_pending && s.event != nullptr &&
          cu::event_query(s.event).code != CUDA_SUCCESS)
        continue;
      s.dma_pending = false;
      s.in_use = true;
      found = i;
    }
  }
  if (found >= 0 && slots_[found].event == nullptr) {
    CUevent e = nullptr;
    if (!cu::event_create(&e, CU_EVENT_DISABLE_TIMING)) {
      release(found, true); // nothing enqueued into it
      return -1;
    }
    slots_[found].event = e; // the slot is ours: no other thread reads it
  }
  if (found >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[found].dma_pending = true;
  }
  return found;
}

void HostSnapshots::release(int slot, bool observed) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_[slot].in_use = false;
  if (observed) slots_[slot].dma_pending = false;
}

void HostSnapshots::quarantine(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_[slot].quarantined = true;
  slots_[slot].in_use = false;
  rt_.counters().quarantined.add();
}

void HostSnapshots::teardown(bool proven) {
  bool quarantined = false;
  for (Slot &s : slots_) {
    quarantined = quarantined || s.quarantined;
    // Destroying an event whose work is pending is allowed (the driver
    // releases it when done); a refusal only leaks the event.
    if (s.event != nullptr && proven) (void)cu::event_destroy(s.event);
    s.event = nullptr;
  }
  if (block_ == nullptr) return;
  if (proven && !quarantined) {
    // A refused free (or a driver already gone at exit) leaks the block,
    // counted like staging.
    if (auto r = cu::mem_free_host(block_); !r)
      core::ProcessCounters::instance().leaked_staging_bytes.add(
          k_slots * k_host_snapshot_bytes);
  } else {
    core::ProcessCounters::instance().leaked_staging_bytes.add(
        k_slots * k_host_snapshot_bytes);
  }
  block_ = nullptr;
}

PendingDownload::PendingDownload(core::Runtime &rt)
    : Object(core::Kind::Download), rt_(&rt) {}

t4a_status PendingDownload::create(core::Runtime &rt, Buffer &src,
                                   uint64_t offset, uint64_t bytes,
                                   core::Ref<PendingDownload> *out) {
  auto d = core::Ref<PendingDownload>::adopt(new PendingDownload(rt));
  d->bytes_ = bytes;
  if (bytes > 0) {
    core::OpScope op(rt, "enqueuing a download", "t4a_buffer_download");
    if (op.status() != T4A_SUCCESS) return op.status();
    d->chain_wait_ = StagingRing::of(rt).tuning().pend_stream == 1;
    if (bytes <= k_host_snapshot_bytes) {
      HostSnapshots &hs = HostSnapshots::of(rt);
      if (int slot = hs.acquire(); slot >= 0) {
        // One DMA into the pinned slot, then the slot's event.
        if (auto r = cu::memcpy_dtoh_async(hs.host(slot), src.ptr() + offset,
                                           bytes, rt.stream());
            !r) {
          hs.quarantine(slot);
          return enqueue_failure(rt, r, false,
                                 "copying a download into a host snapshot");
        }
        if (auto r = cu::event_record(hs.event(slot), rt.stream()); !r) {
          hs.quarantine(slot);
          return enqueue_failure(rt, r, true, "recording a download's event");
        }
        rt.counters().events_recorded.add();
        d->host_ = &hs;
        d->slot_ = slot;
        d->ready_ = hs.event(slot);
        rt.counters().downloads.add();
        *out = std::move(d);
        return T4A_SUCCESS;
      }
    }
    if (t4a_status s = device_alloc(rt, bytes, &d->snapshot_,
                                    "allocating a download snapshot");
        s != T4A_SUCCESS)
      return s;
    if (auto r = cu::memcpy_dtod_async(d->snapshot_, src.ptr() + offset, bytes,
                                       rt.stream());
        !r)
      return enqueue_failure(rt, r, true, "copying a download snapshot");
    if (t4a_status s = rt.events().take(&d->ready_); s != T4A_SUCCESS) return s;
    if (auto r = cu::event_record(d->ready_, rt.stream()); !r)
      return enqueue_failure(rt, r, true, "recording a download's event");
    rt.counters().events_recorded.add();
  }
  rt.counters().downloads.add();
  *out = std::move(d);
  return T4A_SUCCESS;
}

t4a_status PendingDownload::deliver(void *dst, bool wait) {
  // Whatever is logged while the download's mutex is held is delivered
  // after it is released: no log callback runs under it.
  struct DeferLogs {
    DeferLogs() { core::log_defer_begin(); }
    ~DeferLogs() { core::log_defer_end(); }
  } defer_logs;
  std::lock_guard<std::mutex> lock(mu_);
  if (delivered_)
    return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                      "the download (%llu bytes) was already delivered; a "
                      "download is delivered exactly once",
                      static_cast<unsigned long long>(bytes_));
  if (bytes_ > 0 && dst == nullptr)
    return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                      "dst is NULL for a download of %llu bytes",
                      static_cast<unsigned long long>(bytes_));
  if (bytes_ > 0 && slot_ < 0 && snapshot_ == 0)
    return core::fail(T4A_ERROR_ABANDONED,
                      "the download (%llu bytes) cannot be delivered: an "
                      "earlier delivery failed part-way and its snapshot "
                      "was leaked",
                      static_cast<unsigned long long>(bytes_));
  if (bytes_ > 0) {
    if (t4a_status s = rt_->check_usable(); s != T4A_SUCCESS) return s;
    const bool chain = wait && !ready_seen_ && chain_wait_ && slot_ < 0;
    if (!ready_seen_ && !chain) {
      // Observed without admission: other threads keep enqueuing.
      DrvResult r{};
      if (wait) {
        rt_->counters().host_waits.add();
        r = cu::event_synchronize(ready_);
      } else {
        r = cu::event_query(ready_);
        if (r.code == CUDA_ERROR_NOT_READY) return T4A_NOT_READY;
      }
      if (!r) return rt_->fail_op(r, "waiting for a download's snapshot");
      ready_seen_ = true;
    }
    if (slot_ >= 0) {
      // A host snapshot: complete (observed above); copied out, the slot
      // given back. Admitted like every delivery (a destroyed runtime's
      // downloads are refused; no context is needed).
      core::Admission adm(rt_->admission());
      if (adm.status() != T4A_SUCCESS) return adm.status();
      std::memcpy(dst, host_->host(slot_), static_cast<size_t>(bytes_));
      host_->release(slot_, true);
      slot_ = -1;
      rt_->counters().bytes_downloaded.add(bytes_);
      delivered_ = true;
      return T4A_SUCCESS;
    }
    core::OpScope op(*rt_, "delivering a download");
    if (op.status() != T4A_SUCCESS) return op.status();
    CUstream delivery = nullptr;
    if (t4a_status s = rt_->delivery_stream(&delivery); s != T4A_SUCCESS)
      return s;
    if (chain) {
      if (auto r = cu::stream_wait_event(delivery, ready_, 0); !r)
        return rt_->fail_op(r, "ordering a download's delivery");
      ready_seen_ = true; // the delivery's own wait covers the snapshot
    }
    if (t4a_status s = d2h_pipeline(*rt_, delivery, snapshot_,
                                    static_cast<unsigned char *>(dst), bytes_);
        s != T4A_SUCCESS) {
      // Copies from the snapshot may still be queued on the delivery
      // stream, which the runtime's stream does not wait for: the snapshot
      // is leaked (counted), never freed under them.
      quarantine_snapshot();
      return s;
    }
    // Every read of the snapshot has completed (the pipeline waited).
    device_free(*rt_, snapshot_, bytes_);
    snapshot_ = 0;
    rt_->counters().bytes_downloaded.add(bytes_);
  }
  delivered_ = true;
  return T4A_SUCCESS;
}

void PendingDownload::quarantine_snapshot() {
  if (snapshot_ == 0) return;
  core::RuntimeCounters &c = rt_->counters();
  c.quarantined.add();
  c.device_bytes.free(bytes_);
  core::ProcessCounters::instance().leaked_device_allocations.add();
  core::ProcessCounters::instance().leaked_device_bytes.add(bytes_);
  snapshot_ = 0;
}

PendingDownload::~PendingDownload() {
  if (slot_ >= 0) {
    // Undelivered: the slot is reused only once its DMA is known complete
    // (HostSnapshots::acquire queries the slot's event).
    host_->release(slot_, ready_seen_);
    return;
  }
  if (host_ != nullptr) return; // delivered from a host snapshot
  // Freed in stream order after the snapshot copy (delivered or not).
  device_free(*rt_, snapshot_, bytes_);
  if (ready_ != nullptr && !rt_->completion_unprovable())
    rt_->events().give_back(ready_);
}

} // namespace t4a::memory
