// Host lane: the pure launch validation (src/launch/launch_validation.cpp,
// compiled into this test) over a table of descriptors, kernel signatures
// and device limits: status and the named field/values for each row.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstdio>
#include <cstring>

#include "launch/launch_validation.hpp"

using namespace t4a::launch;

namespace {

int g_failures = 0;

DeviceLimits h200() {
  DeviceLimits l;
  l.max_grid[0] = 2147483647u;
  l.max_grid[1] = l.max_grid[2] = 65535u;
  l.max_block[0] = l.max_block[1] = 1024u;
  l.max_block[2] = 64u;
  l.max_threads_per_block = 1024u;
  l.max_shared_default = 48u * 1024u;
  l.max_shared_optin = 227u * 1024u;
  return l;
}

const uint32_t k_offsets[3] = {0, 8, 16};
const uint32_t k_sizes[3] = {4, 8, 4};

KernelSignature known() {
  KernelSignature k;
  k.max_threads_per_block = 1024;
  k.params_known = true;
  k.param_count = 3;
  k.param_offsets = k_offsets;
  k.param_sizes = k_sizes;
  return k;
}

void expect(const char *name, const Verdict &v, t4a_status want,
            const char *part) {
  bool ok =
      v.status == want && (part == nullptr || std::strstr(v.message, part));
  if (!ok) {
    std::fprintf(stderr,
                 "FAIL %s: status %d (want %d), message \"%s\" (want "
                 "\"%s\")\n",
                 name, v.status, want, v.message, part ? part : "");
    ++g_failures;
  }
}

} // namespace

int main() {
  const DeviceLimits lim = h200();
  const KernelSignature k = known();
  float f = 1.0f;
  double dbl = 1.0;
  uint32_t u = 7;
  t4a_arg args[3] = {T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = T4A_ARG_SCALAR;
  args[0].value = &f;
  args[0].size = 4;
  args[1].kind = T4A_ARG_BUFFER;
  args[1].buffer.id = 1;
  args[2].kind = T4A_ARG_SCALAR;
  args[2].value = &u;
  args[2].size = 4;
  ArgFacts facts[3];
  facts[1].buffer_bytes = 4096;
  auto base = [&] {
    t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
    d.kernel.id = 1;
    d.grid[0] = 100;
    d.block[0] = 256;
    d.args = args;
    d.arg_count = 3;
    return d;
  };
  Verdict v;
  t4a_launch_desc d = base();
  validate(d, true, facts, k, lim, &v);
  expect("valid", v, T4A_SUCCESS, nullptr);
  if (v.param_bytes != 20 || v.raise_shared) {
    std::fprintf(stderr, "FAIL valid: param_bytes %llu raise %d\n",
                 static_cast<unsigned long long>(v.param_bytes),
                 v.raise_shared);
    ++g_failures;
  }
  // x has no default: 0 is rejected, naming grid[0] / block[0].
  d = base();
  d.grid[0] = 0;
  validate(d, true, facts, k, lim, &v);
  expect("zero grid x", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->grid[0] (x) is 0; a launch needs at least one block");
  d = base();
  d.block[0] = 0;
  validate(d, true, facts, k, lim, &v);
  expect("zero block x", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->block[0] (x) is 0; a launch needs at least one thread");
  // ...also when everything else is zero too (the zero-filled descriptor).
  {
    t4a_launch_desc z;
    std::memset(&z, 0, sizeof z);
    z.struct_size = sizeof z;
    validate(z, true, facts, k, lim, &v);
    expect("zero-filled", v, T4A_ERROR_INVALID_ARGUMENT,
           "desc->grid[0] (x) is 0");
    z.grid[0] = 1;
    validate(z, true, facts, k, lim, &v);
    expect("zero-filled, grid x set", v, T4A_ERROR_INVALID_ARGUMENT,
           "desc->block[0] (x) is 0");
  }
  // y and z: 0 (their default) means 1; the verdict carries the extents.
  auto expect_dims = [&](const char *name, const uint32_t(&g)[3],
                         const uint32_t(&b)[3]) {
    for (int i = 0; i < 3; ++i)
      if (v.grid[i] != g[i] || v.block[i] != b[i]) {
        std::fprintf(stderr,
                     "FAIL %s: launches grid %u x %u x %u, block %u x %u x "
                     "%u; want %u x %u x %u, %u x %u x %u\n",
                     name, v.grid[0], v.grid[1], v.grid[2], v.block[0],
                     v.block[1], v.block[2], g[0], g[1], g[2], b[0], b[1],
                     b[2]);
        ++g_failures;
        return;
      }
  };
  d = base();
  validate(d, true, facts, k, lim, &v);
  expect("y, z zero", v, T4A_SUCCESS, nullptr);
  expect_dims("y, z zero", {100, 1, 1}, {256, 1, 1});
  d = base();
  d.grid[1] = 1;
  d.grid[2] = 1;
  d.block[1] = 1;
  d.block[2] = 1;
  validate(d, true, facts, k, lim, &v);
  expect("y, z one", v, T4A_SUCCESS, nullptr);
  expect_dims("y, z one", {100, 1, 1}, {256, 1, 1});
  d = base();
  d.grid[2] = 7;
  d.block[1] = 2;
  validate(d, true, facts, k, lim, &v);
  expect("mixed", v, T4A_SUCCESS, nullptr);
  expect_dims("mixed", {100, 1, 7}, {256, 2, 1});
  // A zero y or z counts as 1 against the limits too.
  d = base();
  d.block[0] = 1024;
  d.block[1] = 0;
  validate(d, true, facts, k, lim, &v);
  expect("1024 x 0 threads", v, T4A_SUCCESS, nullptr);
  d.block[1] = 2;
  validate(d, true, facts, k, lim, &v);
  expect("1024 x 2 threads", v, T4A_ERROR_INVALID_ARGUMENT, "2048 threads");
  d = base();
  d.block[0] = 2048;
  validate(d, true, facts, k, lim, &v);
  expect("2048 threads", v, T4A_ERROR_INVALID_ARGUMENT, "is 2048; the device");
  d = base();
  d.block[0] = 32;
  d.block[1] = 64;
  validate(d, true, facts, k, lim, &v);
  expect("32x64 threads", v, T4A_ERROR_INVALID_ARGUMENT, "2048 threads");
  KernelSignature small = k;
  small.max_threads_per_block = 128;
  d = base();
  validate(d, true, facts, small, lim, &v);
  expect("kernel limit", v, T4A_ERROR_INVALID_ARGUMENT,
         "this kernel allows at most 128");
  d = base();
  d.grid[1] = 65536;
  validate(d, true, facts, k, lim, &v);
  expect("grid y", v, T4A_ERROR_INVALID_ARGUMENT, "desc->grid[1] (y) is 65536");
  d = base();
  d.dynamic_shared_bytes = 100 * 1024;
  validate(d, true, facts, k, lim, &v);
  expect("shared raised", v, T4A_SUCCESS, nullptr);
  if (!v.raise_shared) {
    std::fprintf(stderr, "FAIL shared raised: raise_shared not set\n");
    ++g_failures;
  }
  d.dynamic_shared_bytes = 228 * 1024;
  validate(d, true, facts, k, lim, &v);
  expect("shared above opt-in", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->dynamic_shared_bytes is 233472");
  d = base();
  validate(d, false, facts, k, lim, &v);
  expect("kernel of another runtime", v, T4A_ERROR_WRONG_RUNTIME,
         "desc->kernel");
  d = base();
  d.arg_count = 2;
  validate(d, true, facts, k, lim, &v);
  expect("arg count", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->arg_count is 2; the kernel takes 3");
  d = base();
  args[0].value = &dbl;
  args[0].size = 8;
  validate(d, true, facts, k, lim, &v);
  expect("double for float", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->args[0] has 8 bytes; the kernel's parameter 0 has 4");
  args[0].value = &f;
  args[0].size = 4;
  facts[1].same_runtime = false;
  validate(d, true, facts, k, lim, &v);
  expect("buffer of another runtime", v, T4A_ERROR_WRONG_RUNTIME,
         "desc->args[1].buffer");
  facts[1].same_runtime = true;
  facts[1].buffer_bytes = 0;
  validate(d, true, facts, k, lim, &v);
  expect("empty buffer", v, T4A_ERROR_INVALID_ARGUMENT, "empty");
  facts[1].buffer_bytes = 4096;
  args[1].offset = 4096;
  validate(d, true, facts, k, lim, &v);
  expect("offset at end", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->args[1].offset is 4096; the buffer has 4096 bytes");
  args[1].offset = 0;
  args[2].kind = 9;
  validate(d, true, facts, k, lim, &v);
  expect("bad kind", v, T4A_ERROR_INVALID_ARGUMENT, "desc->args[2].kind is 9");
  args[2].kind = T4A_ARG_SCALAR;
  args[2].value = nullptr;
  validate(d, true, facts, k, lim, &v);
  expect("null scalar", v, T4A_ERROR_INVALID_ARGUMENT, "value NULL");
  args[2].value = &u;
  d.args = nullptr;
  validate(d, true, facts, k, lim, &v);
  expect("null args", v, T4A_ERROR_INVALID_ARGUMENT, "desc->args is NULL");
  d = base();
  d.flags = 4;
  validate(d, true, facts, k, lim, &v);
  expect("flags", v, T4A_ERROR_INVALID_ARGUMENT, "desc->flags is 0x4");
  // Unknown parameters: sizes are not checked, bytes are summed aligned.
  KernelSignature unknown = k;
  unknown.params_known = false;
  d = base();
  validate(d, true, facts, unknown, lim, &v);
  expect("unknown params", v, T4A_SUCCESS, nullptr);
  if (v.param_bytes != 20) {
    std::fprintf(stderr, "FAIL unknown params: param_bytes %llu\n",
                 static_cast<unsigned long long>(v.param_bytes));
    ++g_failures;
  }
  // Each unknown parameter is aligned to the largest power of two
  // dividing its size, at most 8: a 1-byte scalar then a scalar of each
  // size below start at offset 1 rounded up to that alignment.
  const struct {
    uint64_t size, bytes;
  } k_aligned[] = {{1, 2},  {2, 4},   {3, 4},   {4, 8},   {6, 8},
                   {8, 16}, {12, 16}, {16, 24}, {24, 32}, {40, 48}};
  static unsigned char scalar_bytes[64];
  for (const auto &row : k_aligned) {
    t4a_arg pair[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
    for (t4a_arg &a : pair) {
      a.kind = T4A_ARG_SCALAR;
      a.value = scalar_bytes;
    }
    pair[0].size = 1;
    pair[1].size = row.size;
    d = base();
    d.args = pair;
    d.arg_count = 2;
    validate(d, true, facts, unknown, lim, &v);
    expect("unknown params aligned", v, T4A_SUCCESS, nullptr);
    if (v.param_bytes != row.bytes) {
      std::fprintf(stderr,
                   "FAIL unknown params: a %llu-byte scalar after a 1-byte "
                   "one: param_bytes %llu, want %llu\n",
                   static_cast<unsigned long long>(row.size),
                   static_cast<unsigned long long>(v.param_bytes),
                   static_cast<unsigned long long>(row.bytes));
      ++g_failures;
    }
  }
  static unsigned char big[T4A_MAX_PARAM_BYTES + 8];
  t4a_arg huge = T4A_ARG_INIT;
  huge.kind = T4A_ARG_SCALAR;
  huge.value = big;
  huge.size = T4A_MAX_PARAM_BYTES + 1;
  d = base();
  d.args = &huge;
  d.arg_count = 1;
  validate(d, true, facts, unknown, lim, &v);
  expect("scalar too large", v, T4A_ERROR_INVALID_ARGUMENT, "32764");
  t4a_arg two[2] = {huge, huge};
  two[0].size = two[1].size = 20000;
  d.args = two;
  d.arg_count = 2;
  validate(d, true, facts, unknown, lim, &v);
  expect("param bytes", v, T4A_ERROR_INVALID_ARGUMENT,
         "need 40000 parameter bytes");
  d.arg_count = T4A_MAX_PARAM_BYTES + 1;
  validate(d, true, nullptr, unknown, lim, &v);
  expect("arg count limit", v, T4A_ERROR_INVALID_ARGUMENT,
         "desc->arg_count is 32765");
  if (g_failures != 0) return 1;
  std::printf("launch validation: all rows pass\n");
  return 0;
}
