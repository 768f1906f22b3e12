// The disk cache's integrity checksum: XXH64 (Yann Collet's 64-bit
// xxHash, implemented here from its published specification), over an
// entry's or a manifest's payload. It detects torn, truncated and
// corrupted files; it is no defence against a writer, which the cache
// keeps out by trusting only a private directory (docs/compilation.md,
// "Disk cache"). Chosen over SHA-256 for speed: a fresh process's disk
// hit of a 146 KB cooperative-groups CUBIN spent 0.11-0.18 ms of its
// 1 ms budget in SHA-256 (with the x86 SHA extensions); XXH64 runs at
// memory speed. ccache checks its entries the same way (XXH3).
#pragma once

#include <cstddef>
#include <cstdint>

namespace t4a::compile {

uint64_t xxh64(const void *data, size_t bytes, uint64_t seed = 0);

} // namespace t4a::compile
