// Occupancy queries of a kernel on its runtime's device: enter the
// kernel's runtime (usable, context current) and ask the driver. The
// arguments are checked by the caller (block_size >= 1, out-pointers).
#pragma once

#include <cstdint>

#include "launch/kernel.hpp"

namespace t4a::launch {

// Active blocks per multiprocessor at `block_size` threads and
// `dynamic_shared` bytes of dynamic shared memory.
t4a_status occupancy(Kernel &k, int32_t block_size, uint64_t dynamic_shared,
                     int32_t *blocks_per_sm);

// The block size reaching the maximum occupancy, and the smallest grid that
// reaches it (`min_grid_size` may be null).
t4a_status suggest_block_size(Kernel &k, uint64_t dynamic_shared,
                              int32_t *block_size, int32_t *min_grid_size);

} // namespace t4a::launch
