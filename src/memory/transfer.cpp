#include "memory/transfer.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <memory>
#include <new>

#include "core/admission.hpp"
#include "core/op_scope.hpp"
#include "core/section_admission.hpp"
#include "core/stream_context.hpp"
#include "memory/copy_workers.hpp"
#include "memory/staging_ring.hpp"

namespace t4a::memory {

using namespace t4a::driver;

namespace {
// The memory layer's parts (ranks 100..199, core/component.hpp): the copy
// workers are torn down after the staging ring (100).
const core::PartSlot k_copy_workers_slot =
    core::register_part("copy workers", 110);

// Finds or makes the runtime's copy workers (under admission).
CopyWorkers &copy_workers_of(core::Runtime &rt) {
  auto *w = static_cast<CopyWorkers *>(rt.part(k_copy_workers_slot));
  if (w == nullptr) {
    int n = rt.options().staging_threads;
    auto made =
        std::make_unique<CopyWorkers>(n > 0 ? n : default_copy_threads());
    w = made.get();
    rt.set_part(k_copy_workers_slot, std::move(made));
  }
  return *w;
}
} // namespace

t4a_status enqueue_failure(core::Runtime &rt, DrvResult r, bool enqueued_before,
                           const char *what) {
  t4a_status s = rt.fail_op(r, what);
  if (s == T4A_ERROR_DEVICE_FAULT || !enqueued_before) return s;
  return core::fail_message(
      T4A_ERROR_ABANDONED,
      core::format("%s: %s returned %s after earlier parts were enqueued; "
                   "the outcome is unknown and the staging touched is "
                   "quarantined",
                   what, r.entry, core::describe(r.code).c_str()),
      static_cast<int32_t>(r.code));
}

namespace {

// upload's pipeline over the staging ring: each piece is copied into
// staging by the copy workers, then its DMA enqueued, up to plan.ahead
// pieces queued beyond the next to enqueue.
class UploadPipeline {
public:
  UploadPipeline(core::Runtime &rt, Buffer &dst, uint64_t offset,
                 const void *src, uint64_t bytes)
      : rt_(rt), ring_(StagingRing::of(rt)), workers_(copy_workers_of(rt)),
        plan_(plan_transfer(ring_.tuning(), ring_.chunk_bytes(), true, bytes)),
        dst_(dst.ptr() + offset), in_(static_cast<const unsigned char *>(src)),
        bytes_(bytes) {}

  t4a_status run() {
    for (uint64_t at = 0; at < bytes_;) {
      size_t len =
          static_cast<size_t>(std::min<uint64_t>(plan_.piece, bytes_ - at));
      Span span;
      if (t4a_status s = reserve(len, &span); s != T4A_SUCCESS) return s;
      Piece &p = queued_[(head_ + count_) % queued_.size()];
      p.ticket = workers_.submit(span.host, in_ + at, len, plan_.part_for(len),
                                 plan_.stream);
      p.span = std::move(span);
      p.at = at;
      ++count_;
      at += len;
      while (count_ > plan_.ahead)
        if (t4a_status s = enqueue_oldest(); s != T4A_SUCCESS) return s;
    }
    while (count_ > 0)
      if (t4a_status s = enqueue_oldest(); s != T4A_SUCCESS) return s;
    return T4A_SUCCESS;
  }

private:
  // Pieces whose host copies are queued and whose DMAs are not enqueued
  // yet, oldest first.
  struct Piece {
    Span span;
    CopyWorkers::Ticket ticket = 0;
    uint64_t at = 0;
  };

  // Staging for the next piece; while every chunk is held by this upload's
  // queued pieces, the oldest is enqueued to free one.
  t4a_status reserve(size_t len, Span *span) {
    for (;;) {
      bool blocked = false;
      if (t4a_status s = ring_.reserve(len, span, &blocked); s != T4A_SUCCESS)
        return finish(s, "staging");
      if (!blocked) return T4A_SUCCESS;
      if (count_ == 0)
        return finish(core::fail(T4A_ERROR_INTERNAL,
                                 "uploading: staging reported no chunk to "
                                 "wait for"),
                      nullptr);
      if (t4a_status s = enqueue_oldest(); s != T4A_SUCCESS) return s;
    }
  }

  // Every way out after a copy was queued waits for the queued copies
  // (they read the caller's memory and write staging); their spans go
  // back unused (no DMA read them).
  t4a_status finish(t4a_status s, const char *what) {
    // The newest ticket among them (a piece copied inline has ticket 0,
    // and may be the last one queued): waiting for it completes every
    // queued copy.
    CopyWorkers::Ticket newest = 0;
    for (size_t k = 0; k < count_; ++k)
      newest = std::max(newest, queued_[(head_ + k) % queued_.size()].ticket);
    workers_.wait(newest);
    for (; count_ > 0; --count_, head_ = (head_ + 1) % queued_.size())
      queued_[head_].span = Span{};
    if (what == nullptr || s == T4A_ERROR_DEVICE_FAULT || enqueued_ == 0)
      return s;
    return core::fail(T4A_ERROR_ABANDONED,
                      "uploading: %s failed after %llu of %llu bytes were "
                      "enqueued",
                      what, static_cast<unsigned long long>(enqueued_),
                      static_cast<unsigned long long>(bytes_));
  }

  // The oldest queued piece: its copy completed, then its DMA enqueued.
  // Reserve -> enqueue -> commit: the chunk is kept by the open epoch
  // until its DMA is proven done (a full epoch is sealed here, before
  // the enqueue; should that fail, nothing more is enqueued).
  t4a_status enqueue_oldest() {
    Piece &p = queued_[head_];
    workers_.wait(p.ticket);
    core::Epochs::Reservation keep = rt_.epochs().reserve_keep(rt_);
    if (keep.status() != T4A_SUCCESS)
      return finish(keep.status(), "keeping staging alive");
    DrvResult r = cu::memcpy_htod_async(dst_ + p.at, p.span.host, p.span.bytes,
                                        rt_.stream());
    if (!r) {
      ring_.quarantine(*p.span.chunk);
      return finish(enqueue_failure(rt_, r, enqueued_ != 0,
                                    "uploading from staging to the device"),
                    nullptr);
    }
    enqueued_ += p.span.bytes;
    rt_.epochs().keep(std::move(keep), std::move(p.span.chunk));
    p.span = Span{};
    head_ = (head_ + 1) % queued_.size();
    --count_;
    return T4A_SUCCESS;
  }

  core::Runtime &rt_;
  StagingRing &ring_;
  CopyWorkers &workers_;
  const TransferPlan plan_;
  const CUdeviceptr dst_;
  const unsigned char *const in_;
  const uint64_t bytes_;
  std::array<Piece, k_upload_ahead_max + 1> queued_;
  size_t head_ = 0, count_ = 0;
  uint64_t enqueued_ = 0; // bytes whose DMAs are enqueued
};

} // namespace

t4a_status upload(core::Runtime &rt, Buffer &dst, uint64_t offset,
                  const void *src, uint64_t bytes) {
  core::OpScope op(rt, "uploading", "t4a_buffer_upload (pageable host memory)");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (bytes > 0)
    if (t4a_status s = UploadPipeline(rt, dst, offset, src, bytes).run();
        s != T4A_SUCCESS)
      return s;
  // Under admission (op), as every writer of these two: plain stores.
  rt.counters().uploads.bump();
  rt.counters().bytes_uploaded.bump(bytes);
  return T4A_SUCCESS;
}

namespace {

// d2h_pipeline over several pieces: each piece's DMA into staging is
// followed by an event; the oldest stage is drained (event waited, staging
// copied out by the copy workers) when the budget of stages or staging is
// used up.
class D2hStages {
public:
  D2hStages(core::Runtime &rt, StagingRing &ring, CopyWorkers &workers,
            const TransferPlan &plan, CUstream stream, CUdeviceptr src,
            unsigned char *dst, uint64_t bytes)
      : rt_(rt), ring_(ring), workers_(workers), plan_(plan), stream_(stream),
        src_(src), dst_(dst), bytes_(bytes),
        // Stages in flight at most: the budget in pieces.
        max_stages_(ring.capacity_chunks() *
                    std::max<size_t>(1, ring.chunk_bytes() / plan.piece)) {}

  t4a_status run() {
    for (uint64_t done = 0; done < bytes_;) {
      size_t len =
          static_cast<size_t>(std::min<uint64_t>(plan_.piece, bytes_ - done));
      Span span;
      if (t4a_status s = reserve(len, &span); s != T4A_SUCCESS) return s;
      if (t4a_status s = stage(std::move(span), done, len); s != T4A_SUCCESS)
        return s;
      done += len;
    }
    while (!stages_.empty())
      if (t4a_status s = drain_front(); s != T4A_SUCCESS) return s;
    return T4A_SUCCESS;
  }

private:
  struct Stage {
    Span span;
    CUevent event;
    uint64_t offset;
  };

  // Staging for the next piece, draining the oldest stages for room.
  t4a_status reserve(size_t len, Span *span) {
    for (;;) {
      if (stages_.size() >= max_stages_)
        if (t4a_status s = drain_front(); s != T4A_SUCCESS) return s;
      bool blocked = false;
      if (t4a_status s = ring_.reserve(len, span, &blocked); s != T4A_SUCCESS)
        return abandon(s);
      if (!blocked) return T4A_SUCCESS;
      if (stages_.empty())
        return core::fail(T4A_ERROR_INTERNAL,
                          "downloading: staging reported no chunk to wait "
                          "for");
      if (t4a_status s = drain_front(); s != T4A_SUCCESS) return s;
    }
  }

  // The piece's DMA into `span`, then its event.
  t4a_status stage(Span span, uint64_t done, size_t len) {
    if (auto r = cu::memcpy_dtoh_async(span.host, src_ + done, len, stream_);
        !r) {
      ring_.quarantine(*span.chunk);
      return abandon(enqueue_failure(rt_, r, enqueued_,
                                     "downloading from the device to staging"));
    }
    enqueued_ = true;
    CUevent e = nullptr;
    if (t4a_status s = rt_.events().take(&e); s != T4A_SUCCESS) {
      ring_.quarantine(*span.chunk);
      return abandon(s);
    }
    if (auto r = cu::event_record(e, stream_); !r) {
      rt_.events().give_back(e);
      ring_.quarantine(*span.chunk);
      return abandon(
          enqueue_failure(rt_, r, true, "recording a staged download chunk"));
    }
    rt_.counters().events_recorded.add();
    Stage st{std::move(span), e, done};
    try {
      stages_.push_back(std::move(st));
    } catch (const std::bad_alloc &) {
      // Its copy is enqueued: quarantined with the others in flight.
      ring_.quarantine(*st.span.chunk);
      rt_.events().give_back(st.event);
      return abandon(core::fail(T4A_ERROR_OUT_OF_HOST_MEMORY,
                                "downloading: no host memory to track a "
                                "staged chunk; the chunks in flight are "
                                "quarantined"));
    }
    return T4A_SUCCESS;
  }

  // On failure, chunks whose copies were enqueued may still be written by
  // the device: quarantine them rather than reuse them.
  t4a_status abandon(t4a_status s) {
    for (Stage &st : stages_) {
      ring_.quarantine(*st.span.chunk);
      rt_.events().give_back(st.event);
    }
    stages_.clear();
    return s;
  }

  t4a_status drain_front() {
    Stage &st = stages_.front();
    rt_.counters().host_waits.add();
    if (auto r = cu::event_synchronize(st.event); !r)
      return abandon(rt_.fail_op(r, "waiting for a staged download chunk"));
    workers_.copy(dst_ + st.offset, st.span.host, st.span.bytes,
                  plan_.part_for(st.span.bytes), plan_.stream);
    rt_.events().give_back(st.event);
    stages_.pop_front();
    return T4A_SUCCESS;
  }

  core::Runtime &rt_;
  StagingRing &ring_;
  CopyWorkers &workers_;
  const TransferPlan &plan_;
  const CUstream stream_;
  const CUdeviceptr src_;
  unsigned char *const dst_;
  const uint64_t bytes_;
  const size_t max_stages_;
  std::deque<Stage> stages_;
  bool enqueued_ = false;
};

} // namespace

t4a_status d2h_pipeline(core::Runtime &rt, CUstream stream, CUdeviceptr src,
                        unsigned char *dst, uint64_t bytes) {
  StagingRing &ring = StagingRing::of(rt);
  const TransferPlan plan =
      plan_transfer(ring.tuning(), ring.chunk_bytes(), false, bytes);
  if (plan.direct) {
    // One DMA straight into the caller's memory: the driver stages it
    // itself; the stream is drained before the bytes are read.
    if (auto r = cu::memcpy_dtoh_async(dst, src, bytes, stream); !r)
      return enqueue_failure(rt, r, false,
                             "downloading from the device to host memory");
    rt.counters().host_waits.add();
    if (auto r = cu::stream_synchronize(stream); !r)
      return rt.fail_op(r, "waiting for a download");
    return T4A_SUCCESS;
  }
  CopyWorkers &workers = copy_workers_of(rt);
  if (bytes <= plan.piece) {
    // One piece: no pipeline and no event; the stream is drained (the
    // copy is its last work: we hold admission, or the stream is the
    // delivery stream, used under admission only).
    Span span;
    bool blocked = false;
    if (t4a_status s =
            ring.reserve(static_cast<size_t>(bytes), &span, &blocked);
        s != T4A_SUCCESS)
      return s;
    if (blocked)
      return core::fail(T4A_ERROR_INTERNAL,
                        "downloading: staging reported no chunk to wait for");
    if (auto r = cu::memcpy_dtoh_async(span.host, src, bytes, stream); !r) {
      ring.quarantine(*span.chunk);
      return enqueue_failure(rt, r, false,
                             "downloading from the device to staging");
    }
    rt.counters().host_waits.add();
    if (auto r = cu::stream_synchronize(stream); !r) {
      ring.quarantine(*span.chunk);
      return rt.fail_op(r, "waiting for a staged download");
    }
    workers.copy(dst, span.host, static_cast<size_t>(bytes),
                 plan.part_for(static_cast<size_t>(bytes)), plan.stream);
    return T4A_SUCCESS;
  }
  return D2hStages(rt, ring, workers, plan, stream, src, dst, bytes).run();
}

t4a_status download_sync(core::Runtime &rt, Buffer &src, uint64_t offset,
                         void *dst, uint64_t bytes) {
  core::OpScope op(rt, "downloading",
                   "t4a_buffer_download_sync (pageable host memory)");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (bytes > 0) {
    if (t4a_status s = d2h_pipeline(rt, rt.stream(), src.ptr() + offset,
                                    static_cast<unsigned char *>(dst), bytes);
        s != T4A_SUCCESS)
      return s;
  }
  // `downloads` has a writer without admission (an empty pending
  // download): a locked add. bytes_downloaded is only ever written under
  // admission (op here): a plain store.
  rt.counters().downloads.add();
  rt.counters().bytes_downloaded.bump(bytes);
  return T4A_SUCCESS;
}

namespace {
// One DMA between a host buffer and the device, admitted without making the
// context current (it names the runtime's stream: core/stream_context.hpp,
// as launches do), inside the caller's borrow section. Reserve -> enqueue
// -> commit: the host buffer is kept alive by the open epoch until the
// stream proves the DMA done, failed or not; a host buffer among the open
// epoch's last keeps is already kept until a seal recorded after this DMA,
// so nothing is added. `count()` runs on success, under admission (the
// counters it bumps are only ever written under admission).
template <class Enqueue, class Count>
t4a_status host_buffer_dma(core::BorrowSection &section, core::Runtime &rt,
                           HostBuffer &hb, Buffer &dev, uint64_t bytes,
                           const char *what, Enqueue enqueue, Count count) {
  core::SectionAdmission adm(section, rt.admission(), {&rt, &dev, &hb});
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  if (bytes > 0) {
    // Captured (core/capture.hpp): the graph keeps the device buffer too
    // (the host buffer through the open epoch, whose keeps move to the
    // capture).
    core::CaptureKeeps cap(rt.capture(), rt.capturing(), 1);
    core::Epochs &ep = rt.epochs();
    DrvResult r{};
    if (ep.recently_kept(&hb)) {
      r = core::in_stream_context(rt, enqueue);
    } else {
      // Making room may wait on the host: outside the section.
      core::Epochs::Reservation keep = adm.reserve_keep(ep, rt);
      if (keep.status() != T4A_SUCCESS) return keep.status();
      r = core::in_stream_context(rt, enqueue);
      ep.keep(std::move(keep), hb);
    }
    cap.keep(dev);
    if (!r) return enqueue_failure(rt, r, false, what);
  }
  count();
  return T4A_SUCCESS;
}
} // namespace

t4a_status upload_host(core::BorrowSection &section, core::Runtime &rt,
                       Buffer &dst, uint64_t dst_offset, HostBuffer &src,
                       uint64_t src_offset, uint64_t bytes) {
  return host_buffer_dma(
      section, rt, src, dst, bytes, "uploading from a host buffer",
      [&] {
        return cu::memcpy_htod_async(dst.ptr() + dst_offset,
                                     src.data() + src_offset, bytes,
                                     rt.stream());
      },
      [&] {
        rt.counters().uploads.bump();
        rt.counters().bytes_uploaded.bump(bytes);
      });
}

t4a_status download_host(core::BorrowSection &section, core::Runtime &rt,
                         Buffer &src, uint64_t src_offset, HostBuffer &dst,
                         uint64_t dst_offset, uint64_t bytes) {
  return host_buffer_dma(
      section, rt, dst, src, bytes, "downloading into a host buffer",
      [&] {
        return cu::memcpy_dtoh_async(dst.data() + dst_offset,
                                     src.ptr() + src_offset, bytes,
                                     rt.stream());
      },
      [&] {
        // See download_sync: downloads is a locked add.
        rt.counters().downloads.add();
        rt.counters().bytes_downloaded.bump(bytes);
      });
}

t4a_status fill(core::Runtime &rt, Buffer &b, uint64_t offset, uint64_t bytes,
                uint8_t value) {
  core::OpScope op(rt, "filling a buffer");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (bytes > 0) {
    core::CaptureKeeps cap(rt.capture(), rt.capturing(), 1);
    auto r = cu::memset_d8_async(b.ptr() + offset, value, bytes, rt.stream());
    cap.keep(b);
    if (!r) return enqueue_failure(rt, r, false, "filling a buffer");
  }
  rt.counters().fills.add();
  return T4A_SUCCESS;
}

t4a_status copy(core::Runtime &rt, Buffer &dst, uint64_t dst_offset,
                Buffer &src, uint64_t src_offset, uint64_t bytes) {
  core::OpScope op(rt, "copying between buffers");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (bytes > 0) {
    core::CaptureKeeps cap(rt.capture(), rt.capturing(), 2);
    auto r = cu::memcpy_dtod_async(dst.ptr() + dst_offset,
                                   src.ptr() + src_offset, bytes, rt.stream());
    cap.keep(dst);
    cap.keep(src);
    if (!r) return enqueue_failure(rt, r, false, "copying between buffers");
  }
  rt.counters().device_copies.add();
  return T4A_SUCCESS;
}

} // namespace t4a::memory
