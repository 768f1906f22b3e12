// Host transfer, pending download and host buffer entry points (R-XFER).
#include "capi/barrier.hpp"
#include "core/counters.hpp"
#include "core/struct_io.hpp"
#include "memory/buffer.hpp"
#include "memory/host_buffer.hpp"
#include "memory/pending_download.hpp"
#include "memory/transfer.hpp"

using namespace t4a;
using core::Kind;
using core::Ref;

namespace {

// Resolves a runtime and a buffer of it, and checks a byte range.
t4a_status runtime_and_buffer(t4a_runtime runtime, t4a_buffer buffer,
                              const char *arg, uint64_t offset, uint64_t bytes,
                              Ref<core::Runtime> *rt, Ref<memory::Buffer> *b) {
  if (t4a_status s = capi::resolve_runtime(runtime, rt); s != T4A_SUCCESS)
    return s;
  if (t4a_status s = capi::resolve(buffer.id, Kind::Buffer, arg, b);
      s != T4A_SUCCESS)
    return s;
  if (t4a_status s = memory::check_owner(arg, **b, **rt); s != T4A_SUCCESS)
    return s;
  return memory::check_range(arg, offset, bytes, (*b)->bytes());
}

t4a_status host_range(Ref<memory::HostBuffer> *h, t4a_host_buffer hb,
                      const char *arg, uint64_t offset, uint64_t bytes) {
  if (t4a_status s = capi::resolve(hb.id, Kind::HostBuffer, arg, h);
      s != T4A_SUCCESS)
    return s;
  return memory::check_range(arg, offset, bytes, (*h)->bytes());
}
} // namespace

extern "C" {

T4A_API t4a_status t4a_buffer_upload(t4a_runtime runtime, t4a_buffer dst,
                                     uint64_t offset, const void *src,
                                     uint64_t bytes) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    Ref<memory::Buffer> b;
    if (t4a_status s =
            runtime_and_buffer(runtime, dst, "dst", offset, bytes, &rt, &b);
        s != T4A_SUCCESS)
      return s;
    if (src == nullptr && bytes > 0) return capi::null_arg("src");
    return memory::upload(*rt, *b, offset, src, bytes);
  });
}

T4A_API t4a_status t4a_buffer_download_sync(t4a_runtime runtime, t4a_buffer src,
                                            uint64_t offset, void *dst,
                                            uint64_t bytes) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    Ref<memory::Buffer> b;
    if (t4a_status s =
            runtime_and_buffer(runtime, src, "src", offset, bytes, &rt, &b);
        s != T4A_SUCCESS)
      return s;
    if (dst == nullptr && bytes > 0) return capi::null_arg("dst");
    return memory::download_sync(*rt, *b, offset, dst, bytes);
  });
}

T4A_API t4a_status t4a_buffer_download(t4a_runtime runtime, t4a_buffer src,
                                       uint64_t offset, uint64_t bytes,
                                       t4a_download *download) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    Ref<memory::Buffer> b;
    if (t4a_status s =
            runtime_and_buffer(runtime, src, "src", offset, bytes, &rt, &b);
        s != T4A_SUCCESS)
      return s;
    if (download == nullptr) return capi::null_arg("download");
    Ref<memory::PendingDownload> d;
    if (t4a_status s =
            memory::PendingDownload::create(*rt, *b, offset, bytes, &d);
        s != T4A_SUCCESS)
      return s;
    download->id = capi::publish(std::move(d));
    return T4A_SUCCESS;
  });
}

static t4a_status deliver(t4a_download download, void *dst, bool wait) {
  Ref<memory::PendingDownload> d;
  if (t4a_status s = capi::resolve(download.id, Kind::Download, "download", &d);
      s != T4A_SUCCESS)
    return s;
  return d->deliver(dst, wait);
}

T4A_API t4a_status t4a_download_poll(t4a_download download, void *dst) {
  return T4A_ENTRY({ return deliver(download, dst, false); });
}

T4A_API t4a_status t4a_download_wait(t4a_download download, void *dst) {
  return T4A_ENTRY({ return deliver(download, dst, true); });
}

T4A_API t4a_status t4a_download_size(t4a_download download, uint64_t *bytes) {
  return T4A_ENTRY({
    Ref<memory::PendingDownload> d;
    if (t4a_status s =
            capi::resolve(download.id, Kind::Download, "download", &d);
        s != T4A_SUCCESS)
      return s;
    if (bytes == nullptr) return capi::null_arg("bytes");
    *bytes = d->bytes();
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_download_release(t4a_download download) {
  return T4A_ENTRY({
    return capi::release_handle(download.id, Kind::Download, "download");
  });
}

T4A_API t4a_status t4a_host_buffer_alloc(t4a_runtime runtime, uint64_t bytes,
                                         t4a_host_buffer *host_buffer) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    if (host_buffer == nullptr) return capi::null_arg("host_buffer");
    if (t4a_status s = rt->check_usable(); s != T4A_SUCCESS) return s;
    Ref<memory::HostBuffer> h;
    if (t4a_status s = memory::HostBuffer::alloc(*rt, bytes, &h);
        s != T4A_SUCCESS)
      return s;
    host_buffer->id = capi::publish(std::move(h));
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_host_buffer_retain(t4a_host_buffer host_buffer) {
  return T4A_ENTRY({
    return capi::retain_handle(host_buffer.id, Kind::HostBuffer, "host_buffer");
  });
}

T4A_API t4a_status t4a_host_buffer_release(t4a_host_buffer host_buffer) {
  return T4A_ENTRY({
    return capi::release_handle(host_buffer.id, Kind::HostBuffer,
                                "host_buffer");
  });
}

T4A_API t4a_status t4a_host_buffer_pointer(t4a_host_buffer host_buffer,
                                           void **pointer, uint64_t *bytes) {
  return T4A_ENTRY({
    Ref<memory::HostBuffer> h;
    if (t4a_status s =
            capi::resolve(host_buffer.id, Kind::HostBuffer, "host_buffer", &h);
        s != T4A_SUCCESS)
      return s;
    if (pointer == nullptr) return capi::null_arg("pointer");
    *pointer = h->data();
    if (bytes != nullptr) *bytes = h->bytes();
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_buffer_upload_host(t4a_runtime runtime, t4a_buffer dst,
                                          uint64_t dst_offset,
                                          t4a_host_buffer src,
                                          uint64_t src_offset, uint64_t bytes) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    Ref<memory::Buffer> b;
    if (t4a_status s =
            runtime_and_buffer(runtime, dst, "dst", dst_offset, bytes, &rt, &b);
        s != T4A_SUCCESS)
      return s;
    Ref<memory::HostBuffer> h;
    if (t4a_status s = host_range(&h, src, "src", src_offset, bytes);
        s != T4A_SUCCESS)
      return s;
    return memory::upload_host(*rt, *b, dst_offset, *h, src_offset, bytes);
  });
}

T4A_API t4a_status t4a_buffer_download_host(t4a_runtime runtime, t4a_buffer src,
                                            uint64_t src_offset,
                                            t4a_host_buffer dst,
                                            uint64_t dst_offset,
                                            uint64_t bytes) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    Ref<memory::Buffer> b;
    if (t4a_status s =
            runtime_and_buffer(runtime, src, "src", src_offset, bytes, &rt, &b);
        s != T4A_SUCCESS)
      return s;
    Ref<memory::HostBuffer> h;
    if (t4a_status s = host_range(&h, dst, "dst", dst_offset, bytes);
        s != T4A_SUCCESS)
      return s;
    return memory::download_host(*rt, *b, src_offset, *h, dst_offset, bytes);
  });
}

T4A_API t4a_status t4a_process_stats_get(t4a_process_stats *stats) {
  return T4A_ENTRY({
    if (t4a_status s = core::check_out_struct(stats, "stats"); s != T4A_SUCCESS)
      return s;
    t4a_process_stats full = T4A_PROCESS_STATS_INIT;
    core::ProcessCounters::instance().fill(&full);
    core::write_struct(stats, full);
    return T4A_SUCCESS;
  });
}

} // extern "C"
