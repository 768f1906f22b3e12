// The first device fault of the process: set once, by the first
// runtime broken by a sticky driver error (or the first runtime create
// failing with one), then never changed. Thread-safe; needs no driver.
#pragma once

#include <cstdint>

#include "t4acuda.h"

namespace t4a::core {

// Records the fault unless one is already recorded (first one wins).
// `operation` is truncated to T4A_PROCESS_FAULT_OPERATION_BYTES - 1.
void record_process_fault(int32_t device_ordinal, int32_t driver_result,
                          uint64_t domain_id, const char *operation);
// The record; has_fault is 0 when there is none. Fills the whole struct.
void read_process_fault(t4a_process_fault *out);

} // namespace t4a::core
