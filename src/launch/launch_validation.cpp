#include "launch/launch_validation.hpp"

#include <cstdarg>
#include <cstdio>

namespace t4a::launch {

namespace {

// Cold: the branches into it leave the hot text (validate() runs on every
// launch; its messages only on rejected ones).
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), cold))
#endif
void reject(Verdict *v, t4a_status s, const char *fmt, ...) {
  v->status = s;
  v->raise_shared = false;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(v->message, sizeof v->message, fmt, ap);
  va_end(ap);
}

const char *const k_axis[3] = {"x", "y", "z"};

// Natural alignment of a parameter of `size` bytes when the driver does
// not report offsets: the largest power of two dividing it (its lowest set
// bit), at most 8.
uint64_t align_of(uint64_t size) {
  uint64_t low = size & (0 - size);
  return low == 0 || low > 8 ? 8 : low;
}

// Size one argument occupies in the parameter block (0 for an invalid
// kind: rejected before this is used).
uint64_t arg_size(const t4a_arg &a) {
  switch (a.kind) {
  case T4A_ARG_BUFFER:
  case T4A_ARG_DEVICE_POINTER: return sizeof(uint64_t);
  case T4A_ARG_SCALAR: return a.size;
  default: return 0;
  }
}

// validate, step 1: grid, block and shared memory against the kernel and
// the device; fills v->grid and v->block (zero y and z mean 1) and
// `shared`. A rejection leaves v->status set.
[[gnu::always_inline]] inline void
check_shape(const t4a_launch_desc &d, const KernelSignature &k,
            const DeviceLimits &lim, uint64_t *shared_out, Verdict *v) {
  // x has no default: a zero extent is a bug (n / 256 for a small n).
  if (d.grid[0] == 0)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->grid[0] (x) is 0; a launch needs at least one block "
                  "in x (grid %u x %u x %u; 0 means 1 only in y and z)",
                  d.grid[0], d.grid[1], d.grid[2]);
  if (d.block[0] == 0)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->block[0] (x) is 0; a launch needs at least one "
                  "thread per block in x (block %u x %u x %u; 0 means 1 only "
                  "in y and z)",
                  d.block[0], d.block[1], d.block[2]);
  // y and z: zero (the zero-filled descriptor's value) means 1.
  for (int i = 0; i < 3; ++i) {
    v->grid[i] = d.grid[i] != 0 ? d.grid[i] : 1;
    v->block[i] = d.block[i] != 0 ? d.block[i] : 1;
  }
  const uint32_t *grid = v->grid, *block = v->block;
  for (int i = 0; i < 3; ++i)
    if (block[i] > lim.max_block[i])
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->block[%d] (%s) is %u; the device allows at most "
                    "%u",
                    i, k_axis[i], block[i], lim.max_block[i]);
  uint64_t threads =
      uint64_t(block[0]) * uint64_t(block[1]) * uint64_t(block[2]);
  if (threads > k.max_threads_per_block)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->block is %u x %u x %u = %llu threads; this kernel "
                  "allows at most %u per block",
                  block[0], block[1], block[2],
                  static_cast<unsigned long long>(threads),
                  k.max_threads_per_block);
  if (threads > lim.max_threads_per_block)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->block is %u x %u x %u = %llu threads; the device "
                  "allows at most %u per block",
                  block[0], block[1], block[2],
                  static_cast<unsigned long long>(threads),
                  lim.max_threads_per_block);
  for (int i = 0; i < 3; ++i)
    if (grid[i] > lim.max_grid[i])
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->grid[%d] (%s) is %u; the device allows at most %u",
                    i, k_axis[i], grid[i], lim.max_grid[i]);
  const uint64_t shared =
      uint64_t(d.dynamic_shared_bytes) + k.static_shared_bytes;
  *shared_out = shared;
  if (shared > lim.max_shared_optin)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->dynamic_shared_bytes is %u (plus %u static bytes "
                  "of the kernel = %llu); the device allows at most %u "
                  "bytes of shared memory per block",
                  d.dynamic_shared_bytes, k.static_shared_bytes,
                  static_cast<unsigned long long>(shared),
                  lim.max_shared_optin);
}

// validate: argument i's kind and what it names. A rejection leaves
// v->status set.
[[gnu::always_inline]] inline void
check_arg(const t4a_arg &a, uint32_t i, const ArgFacts *facts, Verdict *v) {
  switch (a.kind) {
  case T4A_ARG_BUFFER: {
    const ArgFacts &f = facts[i];
    if (!f.same_runtime)
      return reject(v, T4A_ERROR_WRONG_RUNTIME,
                    "desc->args[%u].buffer belongs to another runtime", i);
    if (f.buffer_bytes == 0)
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->args[%u].buffer is an empty (0-byte) buffer, "
                    "which has no device memory to pass",
                    i);
    if (a.offset >= f.buffer_bytes)
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->args[%u].offset is %llu; the buffer has %llu "
                    "bytes",
                    i, static_cast<unsigned long long>(a.offset),
                    static_cast<unsigned long long>(f.buffer_bytes));
    break;
  }
  case T4A_ARG_SCALAR:
    if (a.value == nullptr || a.size == 0)
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->args[%u] is a scalar with value %s and size "
                    "%llu; both must be set",
                    i, a.value == nullptr ? "NULL" : "set",
                    static_cast<unsigned long long>(a.size));
    if (a.size > T4A_MAX_PARAM_BYTES)
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->args[%u].size is %llu; parameters may total at "
                    "most %u bytes",
                    i, static_cast<unsigned long long>(a.size),
                    T4A_MAX_PARAM_BYTES);
    break;
  case T4A_ARG_DEVICE_POINTER: return;
  default:
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->args[%u].kind is %u; it must be T4A_ARG_BUFFER "
                  "(1), T4A_ARG_SCALAR (2) or T4A_ARG_DEVICE_POINTER (3)",
                  i, a.kind);
  }
}

} // namespace

void validate(const t4a_launch_desc &d, bool kernel_same_runtime,
              const ArgFacts *facts, const KernelSignature &k,
              const DeviceLimits &lim, Verdict *v) {
  v->status = T4A_SUCCESS;
  v->raise_shared = false;
  v->param_bytes = 0;
  v->message[0] = '\0';
  if ((d.flags & ~k_launch_flags) != 0)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->flags is 0x%x; the one launch flag is "
                  "T4A_LAUNCH_COOPERATIVE (0x1)",
                  d.flags);
  if (!kernel_same_runtime)
    return reject(v, T4A_ERROR_WRONG_RUNTIME,
                  "desc->kernel belongs to a module of another runtime");
  uint64_t shared = 0;
  check_shape(d, k, lim, &shared, v);
  if (v->status != T4A_SUCCESS) return;
  if (d.arg_count > 0 && d.args == nullptr)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->args is NULL but desc->arg_count is %u", d.arg_count);
  if (d.arg_count > T4A_MAX_PARAM_BYTES)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->arg_count is %u; a launch passes at most %u "
                  "parameter bytes",
                  d.arg_count, T4A_MAX_PARAM_BYTES);
  if (k.params_known && d.arg_count != k.param_count)
    return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                  "desc->arg_count is %u; the kernel takes %u parameters",
                  d.arg_count, k.param_count);
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < d.arg_count; ++i) {
    const t4a_arg &a = d.args[i];
    check_arg(a, i, facts, v);
    if (v->status != T4A_SUCCESS) return;
    uint64_t size = arg_size(a);
    if (k.params_known) {
      if (size != k.param_sizes[i])
        return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                      "desc->args[%u] has %llu bytes; the kernel's parameter "
                      "%u has %u bytes (a scalar of the wrong size is never "
                      "passed)",
                      i, static_cast<unsigned long long>(size), i,
                      k.param_sizes[i]);
      uint64_t end = uint64_t(k.param_offsets[i]) + k.param_sizes[i];
      if (end > bytes) bytes = end;
    } else {
      uint64_t al = align_of(size);
      bytes = ((bytes + al - 1) & ~(al - 1)) + size; // al: a power of two
    }
    if (bytes > T4A_MAX_PARAM_BYTES)
      return reject(v, T4A_ERROR_INVALID_ARGUMENT,
                    "desc->args[0..%u] need %llu parameter bytes; a launch "
                    "may pass at most %u",
                    i, static_cast<unsigned long long>(bytes),
                    T4A_MAX_PARAM_BYTES);
  }
  v->param_bytes = bytes;
  v->raise_shared = shared > lim.max_shared_default;
}

} // namespace t4a::launch
