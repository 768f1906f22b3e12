// Host transfer, pending download and host buffer entry points.
#include "capi/buffer_args.hpp"
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "core/counters.hpp"
#include "memory/buffer.hpp"
#include "memory/host_buffer.hpp"
#include "memory/pending_download.hpp"
#include "memory/transfer.hpp"

using namespace t4a;
using capi::in;
using capi::not_null;
using core::Ref;

namespace {

// A host buffer's byte range lies inside it.
t4a_status check_host_range(const char *arg, const memory::HostBuffer &h,
                            uint64_t offset, uint64_t bytes) {
  if (capi::range_inside(offset, bytes, h.bytes())) [[likely]]
    return T4A_SUCCESS;
  return memory::check_range(arg, offset, bytes, h.bytes());
}

t4a_status deliver(t4a_download download, void *dst, bool wait) {
  return capi::call(
      in(download, "download"),
      [&](Ref<memory::PendingDownload> &d) -> t4a_status {
        if (t4a_status s = core::refuse_capturing(
                d->runtime(), wait ? "t4a_download_wait" : "t4a_download_poll");
            s != T4A_SUCCESS)
          return s;
        return d->deliver(dst, wait);
      });
}

} // namespace

extern "C" {

T4A_API t4a_status t4a_buffer_upload(t4a_runtime runtime, t4a_buffer dst,
                                     uint64_t offset, const void *src,
                                     uint64_t bytes) {
  return T4A_ENTRY({
    return capi::call_on_range(
        runtime, dst, "dst", offset, bytes,
        [&](core::Runtime &rt, memory::Buffer &b) -> t4a_status {
          if (src == nullptr && bytes > 0) return capi::null_arg("src");
          if (t4a_status s = capi::check_writable("dst", b); s != T4A_SUCCESS)
            return s;
          if (t4a_status s = core::refuse_capturing(
                  rt, "t4a_buffer_upload (pageable host memory)");
              s != T4A_SUCCESS)
            return s;
          return memory::upload(rt, b, offset, src, bytes);
        });
  });
}

T4A_API t4a_status t4a_buffer_download_sync(t4a_runtime runtime, t4a_buffer src,
                                            uint64_t offset, void *dst,
                                            uint64_t bytes) {
  return T4A_ENTRY({
    return capi::call_on_range(
        runtime, src, "src", offset, bytes,
        [&](core::Runtime &rt, memory::Buffer &b) -> t4a_status {
          if (dst == nullptr && bytes > 0) return capi::null_arg("dst");
          if (t4a_status s = core::refuse_capturing(
                  rt, "t4a_buffer_download_sync (pageable host memory)");
              s != T4A_SUCCESS)
            return s;
          return memory::download_sync(rt, b, offset, dst, bytes);
        });
  });
}

T4A_API t4a_status t4a_buffer_download(t4a_runtime runtime, t4a_buffer src,
                                       uint64_t offset, uint64_t bytes,
                                       t4a_download *download) {
  return T4A_ENTRY({
    return capi::call_on_range(
        runtime, src, "src", offset, bytes,
        [&](core::Runtime &rt, memory::Buffer &b) -> t4a_status {
          if (download == nullptr) return capi::null_arg("download");
          if (t4a_status s = core::refuse_capturing(rt, "t4a_buffer_download");
              s != T4A_SUCCESS)
            return s;
          Ref<memory::PendingDownload> d;
          if (t4a_status s =
                  memory::PendingDownload::create(rt, b, offset, bytes, &d);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(d), download);
        });
  });
}

T4A_API t4a_status t4a_download_poll(t4a_download download, void *dst) {
  return T4A_ENTRY({ return deliver(download, dst, false); });
}

T4A_API t4a_status t4a_download_wait(t4a_download download, void *dst) {
  return T4A_ENTRY({ return deliver(download, dst, true); });
}

T4A_API t4a_status t4a_download_size(t4a_download download, uint64_t *bytes) {
  return T4A_ENTRY({
    return capi::call(in(download, "download"), not_null(bytes, "bytes"),
                      [&](Ref<memory::PendingDownload> &d) -> t4a_status {
                        *bytes = d->bytes();
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_download_release(t4a_download download) {
  return T4A_ENTRY({ return capi::release(download, "download"); });
}

T4A_API t4a_status t4a_host_buffer_alloc(t4a_runtime runtime, uint64_t bytes,
                                         t4a_host_buffer *host_buffer) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), not_null(host_buffer, "host_buffer"),
        [&](Ref<core::Runtime> &rt) -> t4a_status {
          if (t4a_status s = rt->check_usable(); s != T4A_SUCCESS) return s;
          if (t4a_status s =
                  core::refuse_capturing(*rt, "t4a_host_buffer_alloc");
              s != T4A_SUCCESS)
            return s;
          Ref<memory::HostBuffer> h;
          if (t4a_status s = memory::HostBuffer::alloc(*rt, bytes, &h);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(h), host_buffer);
        });
  });
}

T4A_API t4a_status t4a_host_buffer_retain(t4a_host_buffer host_buffer) {
  return T4A_ENTRY({ return capi::retain(host_buffer, "host_buffer"); });
}

T4A_API t4a_status t4a_host_buffer_release(t4a_host_buffer host_buffer) {
  return T4A_ENTRY({ return capi::release(host_buffer, "host_buffer"); });
}

T4A_API t4a_status t4a_host_buffer_pointer(t4a_host_buffer host_buffer,
                                           void **pointer, uint64_t *bytes) {
  return T4A_ENTRY({
    return capi::call(in(host_buffer, "host_buffer"),
                      not_null(pointer, "pointer"),
                      [&](Ref<memory::HostBuffer> &h) -> t4a_status {
                        *pointer = h->data();
                        if (bytes != nullptr) *bytes = h->bytes();
                        return T4A_SUCCESS;
                      });
  });
}

// The host-buffer transfers never wait on the host: they run inside the
// borrow section that resolved their handles (capi::call_borrowed), with
// no reference counted; admission leaves the section only when it has to
// wait (core/section_admission.hpp).

T4A_API t4a_status t4a_buffer_upload_host(t4a_runtime runtime, t4a_buffer dst,
                                          uint64_t dst_offset,
                                          t4a_host_buffer src,
                                          uint64_t src_offset, uint64_t bytes) {
  return T4A_ENTRY({
    // The device buffer (resolved, owner, range) before the host buffer.
    return capi::call_on_range_borrowed(
        runtime, dst, "dst", dst_offset, bytes,
        [&](core::BorrowSection &section, core::Runtime &rt,
            memory::Buffer &b) -> t4a_status {
          memory::HostBuffer *h = nullptr;
          if (t4a_status s = capi::borrow(in(src, "src"), &h); s != T4A_SUCCESS)
            return s;
          if (t4a_status s = check_host_range("src", *h, src_offset, bytes);
              s != T4A_SUCCESS)
            return s;
          if (t4a_status s = capi::check_writable("dst", b); s != T4A_SUCCESS)
            return s;
          return memory::upload_host(section, rt, b, dst_offset, *h, src_offset,
                                     bytes);
        });
  });
}

T4A_API t4a_status t4a_buffer_download_host(t4a_runtime runtime, t4a_buffer src,
                                            uint64_t src_offset,
                                            t4a_host_buffer dst,
                                            uint64_t dst_offset,
                                            uint64_t bytes) {
  return T4A_ENTRY({
    // The device buffer (resolved, owner, range) before the host buffer.
    return capi::call_on_range_borrowed(
        runtime, src, "src", src_offset, bytes,
        [&](core::BorrowSection &section, core::Runtime &rt,
            memory::Buffer &b) -> t4a_status {
          memory::HostBuffer *h = nullptr;
          if (t4a_status s = capi::borrow(in(dst, "dst"), &h); s != T4A_SUCCESS)
            return s;
          if (t4a_status s = check_host_range("dst", *h, dst_offset, bytes);
              s != T4A_SUCCESS)
            return s;
          return memory::download_host(section, rt, b, src_offset, *h,
                                       dst_offset, bytes);
        });
  });
}

T4A_API t4a_status t4a_process_stats_get(t4a_process_stats *stats) {
  return T4A_ENTRY({
    return capi::call(capi::out_struct(stats, "stats"), [&]() -> t4a_status {
      t4a_process_stats full = T4A_PROCESS_STATS_INIT;
      core::ProcessCounters::instance().fill(&full);
      core::write_struct(stats, full);
      return T4A_SUCCESS;
    });
  });
}

} // extern "C"
