// The meaning of t4a_runtime_options, as a pure function: the caller's
// options (already read through their struct_size) in; the options a
// runtime is made with, or the rejection naming the field and its value,
// out. No driver, no registry, nothing recorded: Runtime::create records a
// rejection; it is table-tested through t4a_runtime_create and fuzzed
// (fuzz/fuzz_runtime_options.cpp).
//
// Zero means "the default" in every field, so that a zero-filled struct
// behaves as T4A_RUNTIME_OPTIONS_INIT. Rejected, in this order:
// reserved0, reserved2 or reserved3 not 0; peer_access not T4A_PEER_ACCESS_EXPLICIT
// or T4A_PEER_ACCESS_AUTO; a staging chunk (after the defaults) below
// 4096 bytes or above the staging budget; staging_threads outside 0..64.
// Accepted options promise: pool_release_threshold is the driver's value
// (0 given: T4A_POOL_KEEP_ALL; T4A_POOL_RELEASE_ALL given: 0; else as
// given); staging_bytes >= staging_chunk_bytes >= 4096;
// staging_threads in 0..64; module_cache_entries and module_cache_bytes
// at least 1 (0 given: their defaults); peer_access one of the two modes;
// every other field as given. device_ordinal is checked against the
// devices later (device_get), stream_priority against the device's range
// (Runtime::create); reserved1 is not checked.
#pragma once

#include "core/check.hpp"
#include "t4acuda.h"

namespace t4a::core {

// `*out` is written only when `c` stays SUCCESS.
void resolve_runtime_options(const t4a_runtime_options &given,
                             t4a_runtime_options *out, Check *c);

} // namespace t4a::core
