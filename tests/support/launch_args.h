// Kernel-argument builders for the tests that launch (tests/gpu,
// tests/workload): a t4a_arg naming a buffer (from a byte offset), or
// scalar bytes.
#pragma once

#include <stdint.h>

#include "t4acuda.h"

static inline t4a_arg buf_arg_at(t4a_buffer b, uint64_t offset) {
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_BUFFER;
  a.buffer = b;
  a.offset = offset;
  return a;
}

static inline t4a_arg buf_arg(t4a_buffer b) { return buf_arg_at(b, 0); }

static inline t4a_arg scalar_arg(const void *p, uint64_t size) {
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_SCALAR;
  a.value = p;
  a.size = size;
  return a;
}
