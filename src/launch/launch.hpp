// The checked launch of a descriptor whose runtime, kernel and buffer
// arguments the caller (capi, t4a_launch) borrowed without a lock in one
// borrow section (core/borrow.hpp): validates everything with the pure
// validate() before anything is enqueued, then under one admission raises
// the kernel's dynamic-shared limit if needed, enqueues cuLaunchKernel and
// keeps the kernel's module alive in the open completion epoch
// (consecutive launches of one module add one keepalive, no event). Up to
// k_stack_args arguments nothing is allocated on the heap.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <new>

#include "core/borrow.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "launch/launch_validation.hpp"
#include "memory/buffer.hpp"
#include "t4acuda.h"

namespace t4a::launch {

class Kernel;

constexpr uint32_t k_stack_args = 32;

// How many of the descriptor's arguments are read: all of them when the
// count is plausible, none otherwise (validate() rejects the descriptor
// before looking at them).
inline uint32_t readable_args(const t4a_launch_desc &d) {
  return d.args != nullptr && d.arg_count <= T4A_MAX_PARAM_BYTES ? d.arg_count
                                                                 : 0;
}

// Per-launch scratch space: on the stack up to k_stack_args arguments (no
// heap on the warm path), on the heap beyond. Per argument: its facts
// (written for buffer arguments only: validate() reads no others), its
// device pointer (buffers), its kernelParams entry; and the buffer objects
// the caller borrowed, in argument order (`buffers[0..nbuf-1]`, valid
// until the launch's borrow section ends).
struct ArgSpace {
  static constexpr size_t k_per_arg = sizeof(ArgFacts) + sizeof(CUdeviceptr) +
                                      sizeof(void *) + sizeof(core::Object *);
  alignas(16) unsigned char stack[k_stack_args * k_per_arg];
  std::unique_ptr<unsigned char[]> heap;
  ArgFacts *facts;
  CUdeviceptr *ptrs;
  void **params;
  core::Object **buffers;
  uint32_t nbuf = 0;

  explicit ArgSpace(uint32_t n) {
    unsigned char *p = stack;
    size_t cap = k_stack_args;
    if (n > k_stack_args) [[unlikely]] {
      heap.reset(new unsigned char[n * k_per_arg]);
      p = heap.get();
      cap = n;
    }
    // Every array starts 8-aligned (each element is 8 or 16 bytes).
    facts = reinterpret_cast<ArgFacts *>(p);
    ptrs = reinterpret_cast<CUdeviceptr *>(p + cap * sizeof(ArgFacts));
    params = reinterpret_cast<void **>(
        p + cap * (sizeof(ArgFacts) + sizeof(CUdeviceptr)));
    buffers = reinterpret_cast<core::Object **>(
        p + cap * (sizeof(ArgFacts) + sizeof(CUdeviceptr) + sizeof(void *)));
  }
  ArgSpace(const ArgSpace &) = delete;
  ArgSpace &operator=(const ArgSpace &) = delete;
};

// The one walk over the descriptor's first readable_args(d) arguments:
// each buffer argument's object comes from `borrow(i, arg, &buffer)` (the
// caller resolves the handle: the launch layer never does; a status other
// than SUCCESS, already recorded, ends the walk), its facts are written for
// validate() and the kernelParams entries are made on the way: they point
// at the arguments and at ptrs[]. Unknown kinds are rejected by
// validate().
template <class Borrow>
[[gnu::always_inline]] inline t4a_status
prepare_args(const core::Runtime &rt, const t4a_launch_desc &d, ArgSpace &space,
             Borrow &&borrow) {
  // Copies in locals, which stay in registers: the descriptor and the
  // space escape (copy_struct, validate), so their fields would be
  // reloaded after every store of the loop.
  const uint32_t n = readable_args(d);
  const t4a_arg *const args = d.args;
  ArgFacts *const facts = space.facts;
  CUdeviceptr *const ptrs = space.ptrs;
  void **const params = space.params;
  core::Object **const buffers = space.buffers;
  uint32_t nbuf = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const t4a_arg &a = args[i];
    switch (a.kind) {
    case T4A_ARG_BUFFER: {
      memory::Buffer *b = nullptr;
      if (t4a_status s = borrow(i, a, &b); s != T4A_SUCCESS) [[unlikely]]
        return s;
      buffers[nbuf++] = b;
      new (&facts[i]) ArgFacts{&b->runtime() == &rt, b->bytes()};
      ptrs[i] = b->ptr() + a.offset; // used only once validated
      params[i] = &ptrs[i];
      break;
    }
    case T4A_ARG_SCALAR: params[i] = const_cast<void *>(a.value); break;
    default: params[i] = const_cast<uint64_t *>(&a.device_pointer);
    }
  }
  space.nbuf = nbuf;
  return T4A_SUCCESS;
}

// t4a_launch and t4a_launch_ex after their handles were borrowed in
// `section`: `rt`, `k`, the descriptor `d` (read through its struct_size),
// `space`, prepared by prepare_args, and the caller's launch attributes
// `attrs` (NULL: none; read through their struct_size after validate()).
// Errors after those of the handles: validate()'s, in field order, then
// the attributes' (launch/attributes.hpp), then admission's and the
// driver's.
t4a_status launch(core::BorrowSection &section, core::Runtime &rt, Kernel &k,
                  const t4a_launch_desc &d, ArgSpace &space,
                  const t4a_launch_attrs *attrs);

} // namespace t4a::launch
