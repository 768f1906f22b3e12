// The checked launch (R-LAUNCH-1..3): resolves the kernel and every buffer
// argument (one registry lock for all buffers), validates everything with
// the pure validate() before anything is enqueued, then under one
// admission raises the kernel's dynamic-shared limit if needed, enqueues
// cuLaunchKernel and keeps the kernel's module alive in the open completion
// epoch (consecutive launches of one module add one keepalive, no event).
// Up to k_stack_args arguments nothing is allocated on the heap.
#pragma once

#include "core/runtime.hpp"
#include "t4acuda.h"

namespace t4a::launch {

constexpr uint32_t k_stack_args = 32;

// `desc` is the caller's pointer (read through its struct_size here).
t4a_status launch(core::Runtime &rt, const t4a_launch_desc *desc);

} // namespace t4a::launch
