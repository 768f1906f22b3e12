// Copies between buffers of two runtimes and peer access. The
// destination runtime is the one named by t4a_buffer_copy: the copy is
// ordered on its stream. Paths, chosen per copy:
//  - same device (two runtimes, one primary context): source-ready event on
//    the source stream -> the destination stream waits -> copy on the
//    destination stream -> done event -> the source stream waits for it;
//  - peer devices with peer access enabled for the pair: the same bracket
//    around cuMemcpyPeerAsync;
//  - otherwise: staged through the destination's pinned staging chunks,
//    per chunk a device-to-host copy on the source stream, an event, the
//    destination stream waits for it, a host-to-device copy on the
//    destination stream (the chunk kept by the destination's epoch).
// Both runtimes are admitted in allocation-domain order (PairAdmission);
// each driver call runs with the context of the stream it names current.
#pragma once

#include <cstdint>

#include "core/runtime.hpp"
#include "memory/buffer.hpp"

namespace t4a::memory {

// Copies `bytes` from `src` (any runtime) to `dst`, a buffer of `dst_rt`.
// Arguments are checked by the caller (ranges, owner of dst, overlap).
t4a_status copy_between(core::Runtime &dst_rt, Buffer &dst, uint64_t dst_offset,
                        Buffer &src, uint64_t src_offset, uint64_t bytes);

// t4a_runtime_enable_peer: context peer access both ways and each pool
// readable and writable by the other device. Same device: nothing to do.
t4a_status enable_peer(core::Runtime &a, core::Runtime &b);

} // namespace t4a::memory
