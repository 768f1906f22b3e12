#include "memory/pending_download.hpp"

#include "core/log.hpp"
#include "core/op_scope.hpp"
#include "memory/staging_ring.hpp"
#include "memory/transfer.hpp"

namespace t4a::memory {

using namespace t4a::driver;

PendingDownload::PendingDownload(core::Runtime &rt)
    : Object(core::Kind::Download), rt_(&rt) {}

t4a_status PendingDownload::create(core::Runtime &rt, Buffer &src,
                                   uint64_t offset, uint64_t bytes,
                                   core::Ref<PendingDownload> *out) {
  auto d = core::Ref<PendingDownload>::adopt(new PendingDownload(rt));
  d->bytes_ = bytes;
  if (bytes > 0) {
    core::OpScope op(rt, "enqueuing a download");
    if (op.status() != T4A_SUCCESS) return op.status();
    d->chain_wait_ = StagingRing::of(rt).tuning().pend_stream == 1;
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
  if (bytes_ > 0) {
    if (t4a_status s = rt_->check_usable(); s != T4A_SUCCESS) return s;
    const bool chain = wait && !ready_seen_ && chain_wait_;
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
  // Freed in stream order after the snapshot copy (delivered or not).
  device_free(*rt_, snapshot_, bytes_);
  if (ready_ != nullptr && !rt_->completion_unprovable())
    rt_->events().give_back(ready_);
}

} // namespace t4a::memory
