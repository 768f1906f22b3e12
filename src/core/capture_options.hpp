// The meaning of t4a_capture_options (experimental section of t4acuda.h),
// as a pure function: the options, already read through their struct_size,
// in; SUCCESS or the rejection naming the field and its value out. Nothing
// is recorded (t4a_capture_begin records a rejection); fuzzed by
// fuzz/fuzz_capture_options.cpp. Accepted options promise: `mode` is
// T4A_CAPTURE_GLOBAL, T4A_CAPTURE_THREAD_LOCAL or T4A_CAPTURE_RELAXED.
#pragma once

#include "core/check.hpp"
#include "t4acuda.h"

namespace t4a::core {

void check_capture_options(const t4a_capture_options &o, Check *c);

} // namespace t4a::core
