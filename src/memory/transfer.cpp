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

t4a_status upload(core::Runtime &rt, Buffer &dst, uint64_t offset,
                  const void *src, uint64_t bytes) {
  core::OpScope op(rt, "uploading", "t4a_buffer_upload (pageable host memory)");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (bytes > 0) {
    StagingRing &ring = StagingRing::of(rt);
    CopyWorkers &workers = copy_workers_of(rt);
    const TransferPlan plan =
        plan_transfer(ring.tuning(), ring.chunk_bytes(), true, bytes);
    const auto *in = static_cast<const unsigned char *>(src);
    // Pieces whose host copies are queued and whose DMAs are not enqueued
    // yet, oldest first: up to plan.ahead beyond the next to enqueue.
    struct Piece {
      Span span;
      CopyWorkers::Ticket ticket = 0;
      uint64_t at = 0;
    };
    std::array<Piece, k_upload_ahead_max + 1> queued;
    size_t head = 0, count = 0;
    uint64_t enqueued = 0; // bytes whose DMAs are enqueued
    // Every way out after a copy was queued waits for the queued copies
    // (they read the caller's memory and write staging); their spans go
    // back unused (no DMA read them).
    auto finish = [&](t4a_status s, const char *what) {
      // The newest ticket among them (a piece copied inline has ticket 0,
      // and may be the last one queued): waiting for it completes every
      // queued copy.
      CopyWorkers::Ticket newest = 0;
      for (size_t k = 0; k < count; ++k)
        newest = std::max(newest, queued[(head + k) % queued.size()].ticket);
      workers.wait(newest);
      for (; count > 0; --count, head = (head + 1) % queued.size())
        queued[head].span = Span{};
      if (what == nullptr || s == T4A_ERROR_DEVICE_FAULT || enqueued == 0)
        return s;
      return core::fail(T4A_ERROR_ABANDONED,
                        "uploading: %s failed after %llu of %llu bytes were "
                        "enqueued",
                        what, static_cast<unsigned long long>(enqueued),
                        static_cast<unsigned long long>(bytes));
    };
    // The oldest queued piece: its copy completed, then its DMA enqueued.
    // Reserve -> enqueue -> commit: the chunk is kept by the open epoch
    // until its DMA is proven done (a full epoch is sealed here, before
    // the enqueue; should that fail, nothing more is enqueued).
    auto enqueue_oldest = [&]() -> t4a_status {
      Piece &p = queued[head];
      workers.wait(p.ticket);
      core::Epochs::Reservation keep = rt.epochs().reserve_keep(rt);
      if (keep.status() != T4A_SUCCESS)
        return finish(keep.status(), "keeping staging alive");
      DrvResult r = cu::memcpy_htod_async(
          dst.ptr() + offset + p.at, p.span.host, p.span.bytes, rt.stream());
      if (!r) {
        ring.quarantine(*p.span.chunk);
        return finish(enqueue_failure(rt, r, enqueued != 0,
                                      "uploading from staging to the device"),
                      nullptr);
      }
      enqueued += p.span.bytes;
      rt.epochs().keep(std::move(keep), std::move(p.span.chunk));
      p.span = Span{};
      head = (head + 1) % queued.size();
      --count;
      return T4A_SUCCESS;
    };
    for (uint64_t at = 0; at < bytes;) {
      size_t len =
          static_cast<size_t>(std::min<uint64_t>(plan.piece, bytes - at));
      Span span;
      for (;;) {
        bool blocked = false;
        if (t4a_status s = ring.reserve(len, &span, &blocked); s != T4A_SUCCESS)
          return finish(s, "staging");
        if (!blocked) break;
        // Every chunk is held by this upload's queued pieces.
        if (count == 0)
          return finish(core::fail(T4A_ERROR_INTERNAL,
                                   "uploading: staging reported no chunk to "
                                   "wait for"),
                        nullptr);
        if (t4a_status s = enqueue_oldest(); s != T4A_SUCCESS) return s;
      }
      Piece &p = queued[(head + count) % queued.size()];
      p.ticket = workers.submit(span.host, in + at, len, plan.part_for(len),
                                plan.stream);
      p.span = std::move(span);
      p.at = at;
      ++count;
      at += len;
      while (count > plan.ahead)
        if (t4a_status s = enqueue_oldest(); s != T4A_SUCCESS) return s;
    }
    while (count > 0)
      if (t4a_status s = enqueue_oldest(); s != T4A_SUCCESS) return s;
  }
  // Under admission (op), as every writer of these two: plain stores.
  rt.counters().uploads.bump();
  rt.counters().bytes_uploaded.bump(bytes);
  return T4A_SUCCESS;
}

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
  struct Stage {
    Span span;
    CUevent event;
    uint64_t offset;
  };
  // Stages in flight at most: the budget in pieces.
  const size_t max_stages =
      ring.capacity_chunks() *
      std::max<size_t>(1, ring.chunk_bytes() / plan.piece);
  std::deque<Stage> stages;
  bool enqueued = false;
  // On failure, chunks whose copies were enqueued may still be written by
  // the device: quarantine them rather than reuse them.
  auto abandon = [&](t4a_status s) {
    for (Stage &st : stages) {
      ring.quarantine(*st.span.chunk);
      rt.events().give_back(st.event);
    }
    stages.clear();
    return s;
  };
  auto drain_front = [&]() -> t4a_status {
    Stage &st = stages.front();
    rt.counters().host_waits.add();
    if (auto r = cu::event_synchronize(st.event); !r)
      return abandon(rt.fail_op(r, "waiting for a staged download chunk"));
    workers.copy(dst + st.offset, st.span.host, st.span.bytes,
                 plan.part_for(st.span.bytes), plan.stream);
    rt.events().give_back(st.event);
    stages.pop_front();
    return T4A_SUCCESS;
  };
  for (uint64_t done = 0; done < bytes;) {
    size_t len =
        static_cast<size_t>(std::min<uint64_t>(plan.piece, bytes - done));
    Span span;
    for (;;) {
      if (stages.size() >= max_stages)
        if (t4a_status s = drain_front(); s != T4A_SUCCESS) return s;
      bool blocked = false;
      if (t4a_status s = ring.reserve(len, &span, &blocked); s != T4A_SUCCESS)
        return abandon(s);
      if (!blocked) break;
      if (stages.empty())
        return core::fail(T4A_ERROR_INTERNAL,
                          "downloading: staging reported no chunk to wait "
                          "for");
      if (t4a_status s = drain_front(); s != T4A_SUCCESS) return s;
    }
    if (auto r = cu::memcpy_dtoh_async(span.host, src + done, len, stream);
        !r) {
      ring.quarantine(*span.chunk);
      return abandon(enqueue_failure(rt, r, enqueued,
                                     "downloading from the device to staging"));
    }
    enqueued = true;
    CUevent e = nullptr;
    if (t4a_status s = rt.events().take(&e); s != T4A_SUCCESS) {
      ring.quarantine(*span.chunk);
      return abandon(s);
    }
    if (auto r = cu::event_record(e, stream); !r) {
      rt.events().give_back(e);
      ring.quarantine(*span.chunk);
      return abandon(
          enqueue_failure(rt, r, true, "recording a staged download chunk"));
    }
    rt.counters().events_recorded.add();
    Stage stage{std::move(span), e, done};
    try {
      stages.push_back(std::move(stage));
    } catch (const std::bad_alloc &) {
      // Its copy is enqueued: quarantined with the others in flight.
      ring.quarantine(*stage.span.chunk);
      rt.events().give_back(stage.event);
      return abandon(core::fail(T4A_ERROR_OUT_OF_HOST_MEMORY,
                                "downloading: no host memory to track a "
                                "staged chunk; the chunks in flight are "
                                "quarantined"));
    }
    done += len;
  }
  while (!stages.empty())
    if (t4a_status s = drain_front(); s != T4A_SUCCESS) return s;
  return T4A_SUCCESS;
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
