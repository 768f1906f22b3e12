// Device discovery: count, info (including the limits launch validation
// uses), peer access. No context is created.
#pragma once

#include <cuda.h>

#include "t4acuda.h"

namespace t4a::core {

t4a_status device_count(int32_t *count);
// Checks `ordinal` against the device count (NO_DEVICE naming both) and
// returns the CUdevice.
t4a_status device_get(int32_t ordinal, const char *arg, CUdevice *out);
t4a_status device_info(int32_t ordinal, t4a_device_info *out);
// The compute capability of device `ordinal` (two attribute reads).
t4a_status device_compute_capability(int32_t ordinal, int32_t *major,
                                     int32_t *minor);
t4a_status device_can_access_peer(int32_t ordinal, int32_t peer, int32_t *can);

} // namespace t4a::core
