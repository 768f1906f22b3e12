// Host transfers and in-runtime device operations:
// pageable uploads through staging and synchronous downloads, each by the
// transfer plan of its size (transfer_plan.hpp), host
// buffer DMA, fills and device-to-device copies. Each function admits one
// operation on the runtime (reserve -> enqueue -> commit).
#pragma once

#include <cstdint>

#include "core/borrow.hpp"
#include "memory/buffer.hpp"
#include "memory/host_buffer.hpp"
#include "memory/transfer_plan.hpp"

namespace t4a::memory {

t4a_status upload(core::Runtime &rt, Buffer &dst, uint64_t offset,
                  const void *src, uint64_t bytes);
t4a_status download_sync(core::Runtime &rt, Buffer &src, uint64_t offset,
                         void *dst, uint64_t bytes);
// One DMA between a host buffer and a device buffer, run inside the borrow
// section in which the caller borrowed the runtime and both buffers
// (capi::call_borrowed): admitted by core::SectionAdmission, never waiting
// on the host otherwise.
t4a_status upload_host(core::BorrowSection &section, core::Runtime &rt,
                       Buffer &dst, uint64_t dst_offset, HostBuffer &src,
                       uint64_t src_offset, uint64_t bytes);
t4a_status download_host(core::BorrowSection &section, core::Runtime &rt,
                         Buffer &src, uint64_t src_offset, HostBuffer &dst,
                         uint64_t dst_offset, uint64_t bytes);
t4a_status fill(core::Runtime &rt, Buffer &b, uint64_t offset, uint64_t bytes,
                uint8_t value);
t4a_status copy(core::Runtime &rt, Buffer &dst, uint64_t dst_offset,
                Buffer &src, uint64_t src_offset, uint64_t bytes);

// The device-to-host pipeline through staging on `stream`, by the transfer
// plan (transfer_plan.hpp): one piece is one DMA into a staging span, a
// drain of the stream and the copy out; more pieces are enqueued ahead up
// to the staging budget, each followed by an event, and the host copies
// each piece out (in parallel from 1 MiB) once its event completes. Under
// admission with the runtime's context current.
t4a_status d2h_pipeline(core::Runtime &rt, CUstream stream, CUdeviceptr src,
                        unsigned char *dst, uint64_t bytes);

// The status of a failure reported by an enqueue call: DEVICE_FAULT for a
// sticky error, ABANDONED when earlier parts of the operation were already
// enqueued (its outcome is unknown), else the driver error.
t4a_status enqueue_failure(core::Runtime &rt, driver::DrvResult r,
                           bool enqueued_before, const char *what);

} // namespace t4a::memory
