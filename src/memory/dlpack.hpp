// DLPack interchange (include/t4acuda_dlpack.h, docs/dlpack.md).
//
// Export: a buffer viewed as a tensor (the view checked against the
// buffer's size), the consumer stream made to wait on an event of the
// runtime's stream, and a heap-allocated tensor whose manager_ctx holds a
// buffer reference. Its deleter takes no admission and never waits: it
// makes the runtime's stream wait for the consumer stream's work so far
// and then drops the reference, so the stream-ordered free follows that
// work.
//
// Import: the tensor is owned from the first instruction of the entry
// point by a ForeignOwner (adopt_versioned / adopt_legacy), whose last
// reference calls the tensor's deleter: a failed import drops it at the
// end of the entry point (outside every lock); a successful one gives it
// to the imported buffer. The buffer's last reference hands it to the
// runtime's pending foreign releases (a runtime part) with an event
// recorded on the runtime's stream; it is dropped, running the deleter,
// only where no library lock is held and completion is proven: a
// non-blocking event query at the next DLPack entry point of that runtime
// (reap_foreign), after t4a_runtime_synchronize (mark_foreign, then
// release_foreign_through), or at the runtime's teardown with completion
// proven. Unproven completion leaks it (logged, counted as quarantined).
#pragma once

#include <cstdint>

#include "core/object.hpp"
#include "core/runtime.hpp"
#include "memory/buffer.hpp"
#include "t4acuda_dlpack.h"

namespace t4a::memory {

// Owns a foreign tensor; its destructor calls the tensor's deleter (once).
core::Ref<core::Object> adopt_versioned(DLManagedTensorVersioned *t);
core::Ref<core::Object> adopt_legacy(DLManagedTensor *t);

// Validates the tensor (each rejection names the field and its value) and
// makes a buffer of `rt` over the byte range it reaches, holding `owner`.
// `legacy`: no version to check, always read-only.
t4a_status import_dlpack(core::Ref<core::Runtime> rt, const DLTensor &t,
                         const DLPackVersion *version, uint64_t flags,
                         bool legacy, core::Ref<core::Object> owner,
                         core::Ref<Buffer> *out);

// Exports `b` (of `rt`) with the view `desc` (NULL: 1-D uint8 over all of
// it), ordering `consumer_stream` (Python coding) after the runtime's
// stream. Exactly one of `out_v` / `out_legacy` is not NULL.
t4a_status export_dlpack(core::Runtime &rt, core::Ref<Buffer> b,
                         const t4a_dlpack_desc *desc, int64_t consumer_stream,
                         DLManagedTensorVersioned **out_v,
                         DLManagedTensor **out_legacy);

// Module-global views (Buffer::adopt_view) queue their module's release
// here too: made before the first view of `rt` (under its admission;
// INVALID_HANDLE once its destroy has begun, DEVICE_FAULT when broken).
// The modules are dropped like foreign owners (reap, synchronize), and by
// t4a_runtime_destroy after its drain (each holds the runtime).
t4a_status prepare_view_releases(core::Runtime &rt);

// Drops the pending foreign owners of `rt` whose event completed (a
// non-blocking query each). Call only where no library lock is held.
void reap_foreign(core::Runtime &rt);
// A mark of the pending foreign releases before a host wait proves the
// stream's work complete; after it, release_foreign_through(rt, mark)
// drops those pending at the mark. No lock may be held.
uint64_t mark_foreign(core::Runtime &rt);
void release_foreign_through(core::Runtime &rt, uint64_t mark);

} // namespace t4a::memory
