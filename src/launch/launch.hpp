// The checked launch: borrows the runtime, the kernel and
// every buffer argument without a lock (core/borrow.hpp), validates everything
// with the pure validate() before anything is enqueued, then under one
// admission raises the kernel's dynamic-shared limit if needed, enqueues
// cuLaunchKernel and keeps the kernel's module alive in the open completion
// epoch (consecutive launches of one module add one keepalive, no event).
// Up to k_stack_args arguments nothing is allocated on the heap.
#pragma once

#include <cstdint>

#include "t4acuda.h"

namespace t4a::launch {

constexpr uint32_t k_stack_args = 32;

// t4a_launch: `runtime` and `desc` are the caller's (the handle is
// resolved and the descriptor read through its struct_size here).
t4a_status launch(t4a_runtime runtime, const t4a_launch_desc *desc);

} // namespace t4a::launch
