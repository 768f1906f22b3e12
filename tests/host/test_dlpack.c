/*
 * Host lane (fake driver, two devices): DLPack (include/t4acuda_dlpack.h,
 * docs/dlpack.md) with synthetic tensors. "Device memory" is host memory
 * on the fake driver, so an imported tensor here is malloc'd memory.
 *   - export round trip: version, flags (READ_ONLY), data, device, dtype,
 *     shape, strides (given, computed C-contiguous, default 1-D), byte
 *     offset exact; legacy export; the tensor keeps the buffer alive after
 *     its handle is released, and its deleter frees it;
 *   - export validation: each rejection names the field and its values;
 *   - stream coding: 0 and < -1 refused; 1, 2 and an explicit stream wait
 *     on the runtime's stream (cuStreamWaitEvent counted by the fake), and
 *     the deleter makes the runtime's stream wait; -1 waits nowhere;
 *   - deleters exactly once under 8 threads (export: 8 tensors of one
 *     buffer deleted concurrently; import: 8 handle references released
 *     concurrently), and after the runtime was destroyed;
 *   - import validation: each rejection names the field, and the tensor's
 *     deleter is called on every failure (version 2, device type, device
 *     id, NULL data, ndim, shape, dtype, NULL out, a forged runtime);
 *   - read-only imports (flag, legacy) refuse fill, copy into, upload and
 *     upload_host, naming the read-only import; reads and export work;
 *   - the imported memory is never freed by the library (the fake's
 *     allocation count does not move), the strided span is computed, and
 *     the deleter runs only after completion is proven: t4a_runtime_
 *     synchronize, or an event query at a later DLPack call;
 *   - an import's described range is checked against the allocation the
 *     driver reports (cuMemGetAddressRange; the fake knows its pool
 *     allocations and memory declared with fake_cuda_foreign_add): a
 *     64-byte allocation described as shape [INT64_MAX] (or 65 bytes, or
 *     past it from a byte_offset) is refused naming both sizes, memory the
 *     driver does not know is refused, an empty tensor asks nothing;
 *   - t4a_buffer_copy compares device address ranges, not handles: an
 *     overlapping copy between a buffer and its DLPack import (same
 *     runtime, or another runtime of the device) is refused, nothing
 *     copied; adjacent ranges copy.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "t4acuda_dlpack.h"
#include "test_assert.h"
#include "test_helpers.h"

/* ---- the fake driver's controls ---------------------------------------- */

typedef unsigned long (*waits_fn)(void *);

/* Host memory standing for a foreign allocator's device memory: the fake
 * driver's cuMemGetAddressRange knows it from here on. */
static void declare_foreign(void *p, size_t bytes) {
  typedef int (*add_fn)(void *, size_t);
  assert_int_equal(((add_fn)fake_symbol("fake_cuda_foreign_add"))(p, bytes), 0);
}
static void forget_foreign(void *p) {
  typedef void (*remove_fn)(void *);
  ((remove_fn)fake_symbol("fake_cuda_foreign_remove"))(p);
}
static unsigned long address_range_calls(void) {
  typedef unsigned long (*calls_fn)(void);
  return ((calls_fn)fake_symbol("fake_cuda_address_range_calls"))();
}
static unsigned long waits_of(void *stream) {
  return ((waits_fn)fake_symbol("fake_cuda_stream_waits"))(stream);
}

static void *rt_stream(t4a_runtime rt) { return runtime_info(rt).stream; }

/* ---- synthetic tensors --------------------------------------------------- */

typedef struct synth {
  DLManagedTensorVersioned t;
  DLManagedTensor legacy;
  int64_t shape[4];
  int64_t strides[4];
  atomic_int deleted;
} synth;

static void synth_delete(DLManagedTensorVersioned *self) {
  atomic_fetch_add(&((synth *)self->manager_ctx)->deleted, 1);
}
static void synth_delete_legacy(DLManagedTensor *self) {
  atomic_fetch_add(&((synth *)self->manager_ctx)->deleted, 1);
}

/* A writable 1-D uint8 tensor of `n` bytes at `data` on device 0. */
static void synth_init(synth *s, void *data, int64_t n) {
  memset(s, 0, sizeof *s);
  atomic_init(&s->deleted, 0);
  s->shape[0] = n;
  s->t.version.major = 1;
  s->t.version.minor = 0;
  s->t.manager_ctx = s;
  s->t.deleter = synth_delete;
  s->t.dl_tensor.data = data;
  s->t.dl_tensor.device.device_type = kDLCUDA;
  s->t.dl_tensor.device.device_id = 0;
  s->t.dl_tensor.ndim = 1;
  s->t.dl_tensor.dtype.code = kDLUInt;
  s->t.dl_tensor.dtype.bits = 8;
  s->t.dl_tensor.dtype.lanes = 1;
  s->t.dl_tensor.shape = s->shape;
  s->legacy.dl_tensor = s->t.dl_tensor;
  s->legacy.manager_ctx = s;
  s->legacy.deleter = synth_delete_legacy;
}

/* ---- export ----------------------------------------------------------------
 */

static void test_export_round_trip(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  t4a_buffer b;
  int base = live_allocations();
  ASSERT_OK(t4a_buffer_alloc(rt, 4096, 0, &b));
  t4a_buffer_info bi = buffer_info(b);

  const int64_t shape[2] = {4, 8};
  t4a_dlpack_desc d = T4A_DLPACK_DESC_INIT;
  d.flags = T4A_DLPACK_READ_ONLY;
  d.dtype_code = kDLFloat;
  d.dtype_bits = 32;
  d.ndim = 2;
  d.shape = shape;
  d.byte_offset = 256;
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, &d, -1, &t));
  assert_non_null(t);
  assert_int_equal(t->version.major, 1);
  assert_int_equal(t->version.minor, 0);
  assert_int_equal(t->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
  assert_non_null(t->deleter);
  assert_true((uint64_t)(uintptr_t)t->dl_tensor.data == bi.device_pointer);
  assert_int_equal(t->dl_tensor.device.device_type, kDLCUDA);
  assert_int_equal(t->dl_tensor.device.device_id, 0);
  assert_int_equal(t->dl_tensor.ndim, 2);
  assert_int_equal(t->dl_tensor.dtype.code, kDLFloat);
  assert_int_equal(t->dl_tensor.dtype.bits, 32);
  assert_int_equal(t->dl_tensor.dtype.lanes, 1);
  assert_int_equal(t->dl_tensor.shape[0], 4);
  assert_int_equal(t->dl_tensor.shape[1], 8);
  assert_int_equal(t->dl_tensor.strides[0], 8);
  assert_int_equal(t->dl_tensor.strides[1], 1);
  assert_int_equal(t->dl_tensor.byte_offset, 256);

  /* The tensor keeps the buffer: its handle goes, the memory stays. */
  ASSERT_OK(t4a_buffer_release(b));
  assert_int_equal(live_allocations(), base + 1);
  t->deleter(t);
  assert_int_equal(live_allocations(), base);

  /* Defaults: 1-D uint8 over the whole buffer, writable. */
  ASSERT_OK(t4a_buffer_alloc(rt, 100, 0, &b));
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, -1, &t));
  assert_int_equal(t->flags, 0);
  assert_int_equal(t->dl_tensor.ndim, 1);
  assert_int_equal(t->dl_tensor.shape[0], 100);
  assert_int_equal(t->dl_tensor.strides[0], 1);
  assert_int_equal(t->dl_tensor.dtype.code, kDLUInt);
  assert_int_equal(t->dl_tensor.dtype.bits, 8);
  assert_int_equal(t->dl_tensor.byte_offset, 0);
  t->deleter(t);

  /* Given strides (column-major), int16 x2 lanes, ndim 0 with an offset. */
  const int64_t fshape[2] = {3, 5}, fstrides[2] = {1, 3};
  t4a_dlpack_desc f = T4A_DLPACK_DESC_INIT;
  f.dtype_code = kDLInt;
  f.dtype_bits = 16;
  f.dtype_lanes = 2;
  f.ndim = 2;
  f.shape = fshape;
  f.strides = fstrides;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, &f, -1, &t));
  assert_int_equal(t->dl_tensor.strides[0], 1);
  assert_int_equal(t->dl_tensor.strides[1], 3);
  assert_int_equal(t->dl_tensor.dtype.lanes, 2);
  t->deleter(t);
  t4a_dlpack_desc z = T4A_DLPACK_DESC_INIT;
  z.dtype_code = kDLFloat;
  z.dtype_bits = 32;
  z.byte_offset = 20;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, &z, -1, &t));
  assert_int_equal(t->dl_tensor.shape[0], 20); /* (100 - 20) / 4 */
  t->deleter(t);

  /* Legacy: same view, no flags; read-only refused. */
  DLManagedTensor *l = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack_legacy(rt, b, &f, -1, &l));
  assert_int_equal(l->dl_tensor.ndim, 2);
  assert_int_equal(l->dl_tensor.shape[1], 5);
  l->deleter(l);
  ASSERT_STATUS(t4a_buffer_to_dlpack_legacy(rt, b, &d, -1, &l),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("T4A_DLPACK_READ_ONLY");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(live_allocations(), base);
}

static void expect_export_error(t4a_runtime rt, t4a_buffer b,
                                const t4a_dlpack_desc *d, int64_t stream,
                                const char *needle) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)(uintptr_t)0x10;
  ASSERT_STATUS(t4a_buffer_to_dlpack(rt, b, d, stream, &t),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS(needle);
  ASSERT_MESSAGE_HAS("t4a_buffer_to_dlpack");
  assert_ptr_equal(t, (void *)(uintptr_t)0x10); /* untouched */
}

static void test_export_validation(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0), other = runtime_on(1);
  t4a_buffer b, ob;
  ASSERT_OK(t4a_buffer_alloc(rt, 64, 0, &b));
  ASSERT_OK(t4a_buffer_alloc(other, 64, 0, &ob));
  int64_t shape[2] = {4, 4}, strides[2] = {4, 1};
  t4a_dlpack_desc d = T4A_DLPACK_DESC_INIT;
  d.ndim = 2;
  d.shape = shape;

  d.ndim = -1;
  expect_export_error(rt, b, &d, -1, "desc->ndim is -1");
  d.ndim = 33;
  expect_export_error(rt, b, &d, -1, "desc->ndim is 33");
  d.ndim = 2;
  d.shape = NULL;
  expect_export_error(rt, b, &d, -1, "desc->shape is NULL");
  d.shape = shape;
  shape[1] = -3;
  expect_export_error(rt, b, &d, -1, "desc->shape[1] is -3");
  shape[1] = 4;
  d.dtype_code = kDLFloat;
  d.dtype_bits = 32; /* 16 floats = 64 bytes: fits exactly */
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, &d, -1, &t));
  t->deleter(t);
  d.byte_offset = 4; /* one float past the end */
  expect_export_error(rt, b, &d, -1, "reach byte 68");
  expect_export_error(rt, b, &d, -1, "past the end of the buffer (64 bytes)");
  d.byte_offset = 0;
  strides[0] = -4;
  d.strides = strides;
  expect_export_error(rt, b, &d, -1,
                      "desc->strides: negative strides reach "
                      "48 bytes below the first element");
  d.byte_offset = 48; /* then it fits */
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, &d, -1, &t));
  t->deleter(t);
  strides[0] = INT64_MIN; /* -lo is past INT64_MAX: no signed overflow */
  shape[0] = 2;
  expect_export_error(rt, b, &d, -1, "reach past 64 bits of bytes");
  shape[0] = 4;
  strides[0] = -4;
  d.strides = NULL;
  d.byte_offset = 100;
  expect_export_error(rt, b, &d, -1, "desc->byte_offset (100)");
  d.byte_offset = 0;
  d.dtype_bits = 12;
  expect_export_error(rt, b, &d, -1, "dtype bits (12)");
  d.dtype_bits = 32;
  d.dtype_code = 9;
  expect_export_error(rt, b, &d, -1, "desc->dtype code is 9");
  d.dtype_code = kDLFloat;
  d.flags = 0x4;
  expect_export_error(rt, b, &d, -1, "desc->flags is 0x4");
  d.flags = 0;
  t4a_dlpack_desc z = T4A_DLPACK_DESC_INIT;
  z.dtype_bits = 8;
  z.dtype_lanes = 3; /* 64 bytes are not whole 3-byte elements */
  expect_export_error(rt, b, &z, -1, "not a whole number of 3-byte elements");
  expect_export_error(rt, b, &d, 0, "consumer_stream is 0");
  expect_export_error(rt, b, &d, -7, "consumer_stream is -7");
  /* A stream of another context (device 1's runtime stream). */
  expect_export_error(rt, b, &d, (int64_t)(uintptr_t)rt_stream(other),
                      "belongs to context");
  /* Wrong runtime, NULL out. */
  ASSERT_STATUS(t4a_buffer_to_dlpack(rt, ob, &d, -1, &t),
                T4A_ERROR_WRONG_RUNTIME);
  ASSERT_MESSAGE_HAS("buffer belongs to runtime domain");
  ASSERT_STATUS(t4a_buffer_to_dlpack(rt, b, &d, -1, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("out is NULL");
  /* struct_size too small for a field. */
  d.struct_size = 2;
  ASSERT_STATUS(t4a_buffer_to_dlpack(rt, b, &d, -1, &t),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_buffer_release(ob));
  ASSERT_OK(t4a_runtime_destroy(rt));
  ASSERT_OK(t4a_runtime_destroy(other));
}

static void test_stream_coding(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  void *own = rt_stream(rt);
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, 64, 0, &b));
  DLManagedTensorVersioned *t = NULL;
  void *legacy = (void *)(uintptr_t)1, *per_thread = (void *)(uintptr_t)2;

  unsigned long l0 = waits_of(legacy), p0 = waits_of(per_thread),
                o0 = waits_of(own);
  /* -1: no wait at export or delete. */
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, -1, &t));
  t->deleter(t);
  assert_int_equal(waits_of(legacy), l0);
  assert_int_equal(waits_of(per_thread), p0);
  assert_int_equal(waits_of(own), o0);
  /* 1: the legacy stream waits at export; at delete the runtime's stream
   * waits (for an event on the legacy stream). */
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, 1, &t));
  assert_int_equal(waits_of(legacy), l0 + 1);
  assert_int_equal(waits_of(own), o0);
  t->deleter(t);
  assert_int_equal(waits_of(own), o0 + 1);
  /* 2: the per-thread stream. */
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, 2, &t));
  assert_int_equal(waits_of(per_thread), p0 + 1);
  t->deleter(t);
  assert_int_equal(waits_of(own), o0 + 2);
  /* An explicit stream of the runtime's context (its own stream here). */
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, (int64_t)(uintptr_t)own, &t));
  assert_int_equal(waits_of(own), o0 + 3);
  t->deleter(t);
  assert_int_equal(waits_of(own), o0 + 4);
  assert_int_equal(waits_of(legacy), l0 + 1);
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- deleters under threads, after destroy ------------------------------- */

typedef struct {
  DLManagedTensorVersioned *t;
  t4a_buffer b;
  pthread_barrier_t *go;
} worker_arg;

static void *delete_worker(void *p) {
  worker_arg *a = p;
  pthread_barrier_wait(a->go);
  a->t->deleter(a->t);
  return NULL;
}
static void *release_worker(void *p) {
  worker_arg *a = p;
  pthread_barrier_wait(a->go);
  if (t4a_buffer_release(a->b) != T4A_SUCCESS) abort();
  return NULL;
}

static void test_deleters_threads(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  int base = live_allocations();
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &b));
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, 8);
  pthread_t th[8];
  worker_arg args[8];
  for (int i = 0; i < 8; ++i) {
    args[i].go = &go;
    ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, i % 2 ? 1 : -1, &args[i].t));
  }
  ASSERT_OK(t4a_buffer_release(b));
  for (int i = 0; i < 8; ++i)
    pthread_create(&th[i], NULL, delete_worker, &args[i]);
  for (int i = 0; i < 8; ++i) pthread_join(th[i], NULL);
  assert_int_equal(live_allocations(), base); /* freed once, by the last */

  /* Import: one buffer, 8 handle references released concurrently. */
  static unsigned char mem[512];
  declare_foreign(mem, sizeof mem);
  synth s;
  synth_init(&s, mem, sizeof mem);
  t4a_buffer ib;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ib));
  for (int i = 0; i < 7; ++i) ASSERT_OK(t4a_buffer_retain(ib));
  for (int i = 0; i < 8; ++i) {
    args[i].b = ib;
    pthread_create(&th[i], NULL, release_worker, &args[i]);
  }
  for (int i = 0; i < 8; ++i) pthread_join(th[i], NULL);
  assert_int_equal(atomic_load(&s.deleted), 0); /* not proven yet */
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
  pthread_barrier_destroy(&go);
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
}

static void test_deleters_after_destroy(void **state) {
  (void)state;
  int base = live_allocations();
  t4a_runtime rt = runtime_on(0);
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &b));
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, NULL, 1, &t));
  static unsigned char mem[64];
  declare_foreign(mem, sizeof mem);
  synth s;
  synth_init(&s, mem, sizeof mem);
  t4a_buffer ib;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ib));
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
  /* The runtime is destroyed; both objects still work as owners. */
  assert_int_equal(live_allocations(), base + 1);
  t->deleter(t); /* orders after the legacy stream, frees */
  assert_int_equal(live_allocations(), base);
  assert_int_equal(atomic_load(&s.deleted), 0);
  ASSERT_OK(t4a_buffer_release(ib)); /* the runtime's teardown proves it */
  assert_int_equal(atomic_load(&s.deleted), 1);
}

/* ---- import ----------------------------------------------------------------
 */

static void expect_import_error(t4a_runtime rt, synth *s, const char *needle) {
  t4a_buffer out = {UINT64_C(0x77)};
  atomic_store(&s->deleted, 0);
  ASSERT_STATUS(t4a_buffer_from_dlpack(rt, &s->t, &out),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS(needle);
  ASSERT_MESSAGE_HAS("t4a_buffer_from_dlpack");
  assert_int_equal(out.id, UINT64_C(0x77));
  assert_int_equal(atomic_load(&s->deleted), 1);
}

static void test_import_validation(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  static unsigned char mem[256];
  declare_foreign(mem, sizeof mem);
  synth s;
  synth_init(&s, mem, sizeof mem);

  s.t.version.major = 2;
  expect_import_error(rt, &s,
                      "tensor->version is 2.0; only DLPack major "
                      "version 1 is supported");
  s.t.version.major = 0;
  expect_import_error(rt, &s, "tensor->version is 0.0");
  s.t.version.major = 1;
  s.t.dl_tensor.device.device_type = kDLCPU;
  expect_import_error(rt, &s, "tensor->dl_tensor.device.device_type is 1");
  s.t.dl_tensor.device.device_type = kDLCUDA;
  s.t.dl_tensor.device.device_id = 1;
  expect_import_error(rt, &s,
                      "tensor->dl_tensor.device.device_id is 1, but "
                      "the runtime is of device 0");
  s.t.dl_tensor.device.device_id = 0;
  s.t.dl_tensor.data = NULL;
  expect_import_error(rt, &s, "tensor->dl_tensor.data is NULL");
  s.t.dl_tensor.data = mem;
  s.t.dl_tensor.ndim = 40;
  expect_import_error(rt, &s, "tensor->dl_tensor.ndim is 40");
  s.t.dl_tensor.ndim = 1;
  s.t.dl_tensor.shape = NULL;
  expect_import_error(rt, &s, "tensor->dl_tensor.shape is NULL");
  s.t.dl_tensor.shape = s.shape;
  s.shape[0] = -2;
  expect_import_error(rt, &s, "tensor->dl_tensor.shape[0] is -2");
  s.shape[0] = 256;
  s.t.dl_tensor.dtype.bits = 0;
  expect_import_error(rt, &s, "tensor->dl_tensor.dtype bits (0)");
  s.t.dl_tensor.dtype.bits = 8;
  s.t.dl_tensor.byte_offset = UINT64_MAX - 8;
  expect_import_error(rt, &s, "outside the 64-bit address space");
  s.t.dl_tensor.byte_offset = 0;
  /* Spans at the edges of int64 (no signed overflow on the way, which the
   * undefined-behavior sanitizer lane would catch): a lowest element at
   * INT64_MIN elements, and a span wider than INT64_MAX elements. */
  int64_t edge_shape[2] = {2, 2}, edge_strides[2] = {INT64_MIN, 1};
  s.t.dl_tensor.ndim = 2;
  s.t.dl_tensor.shape = edge_shape;
  s.t.dl_tensor.strides = edge_strides;
  expect_import_error(rt, &s, "outside the 64-bit address space");
  edge_strides[0] = INT64_MAX; /* hi - lo is INT64_MAX + 1 */
  edge_strides[1] = -1;
  s.t.dl_tensor.dtype.bits = 32;
  expect_import_error(rt, &s, "outside the 64-bit address space");
  s.t.dl_tensor.dtype.bits = 8;
  s.t.dl_tensor.ndim = 1;
  s.t.dl_tensor.shape = s.shape;
  s.t.dl_tensor.strides = NULL;

  /* NULL out, a forged runtime, NULL tensor: deleter still called (not for
   * NULL, which has none). */
  atomic_store(&s.deleted, 0);
  ASSERT_STATUS(t4a_buffer_from_dlpack(rt, &s.t, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("out is NULL");
  assert_int_equal(atomic_load(&s.deleted), 1);
  t4a_runtime forged = {UINT64_C(0x0100000500000007)};
  t4a_buffer out;
  ASSERT_STATUS(t4a_buffer_from_dlpack(forged, &s.t, &out),
                T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(atomic_load(&s.deleted), 2);
  ASSERT_STATUS(t4a_buffer_from_dlpack_legacy(forged, &s.legacy, &out),
                T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(atomic_load(&s.deleted), 3);
  ASSERT_STATUS(t4a_buffer_from_dlpack(rt, NULL, &out),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("tensor is NULL");
  /* A NULL deleter is allowed (nothing to call). */
  s.t.deleter = NULL;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &out));
  ASSERT_OK(t4a_buffer_release(out));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_import_read_only(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  static unsigned char mem[128];
  declare_foreign(mem, sizeof mem);
  for (int i = 0; i < 128; ++i) mem[i] = (unsigned char)i;
  synth s;
  synth_init(&s, mem, sizeof mem);
  s.t.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  t4a_buffer ro, other;
  t4a_host_buffer hb;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ro));
  ASSERT_OK(t4a_buffer_alloc(rt, 128, T4A_BUFFER_ZERO, &other));
  ASSERT_OK(t4a_host_buffer_alloc(rt, 128, &hb));
  t4a_buffer_info i = buffer_info(ro);
  assert_int_equal(i.flags,
                   T4A_BUFFER_INFO_READ_ONLY | T4A_BUFFER_INFO_IMPORTED);
  assert_int_equal(buffer_info(other).flags, 0);

  unsigned char host[128];
  memset(host, 0xEE, sizeof host);
  ASSERT_STATUS(t4a_buffer_fill(rt, ro, 0, 16, 0), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("buffer is a read-only import");
  ASSERT_STATUS(t4a_buffer_copy(rt, ro, 0, other, 0, 16),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst is a read-only import");
  ASSERT_STATUS(t4a_buffer_upload(rt, ro, 0, host, 16),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst is a read-only import");
  ASSERT_STATUS(t4a_buffer_upload_host(rt, ro, 0, hb, 0, 16),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst is a read-only import");
  ASSERT_MESSAGE_HAS("t4a_buffer_upload_host");
  for (int k = 0; k < 128; ++k) assert_int_equal(mem[k], k); /* untouched */
  /* Reads work: download, copy from it, export (read-only). */
  ASSERT_OK(t4a_buffer_download_sync(rt, ro, 0, host, 128));
  assert_memory_equal(host, mem, 128);
  ASSERT_OK(t4a_buffer_copy(rt, other, 0, ro, 0, 128));
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, ro, NULL, -1, &t));
  assert_int_equal(t->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
  assert_ptr_equal(t->dl_tensor.data, mem);
  t->deleter(t);
  DLManagedTensor *l = NULL;
  ASSERT_STATUS(t4a_buffer_to_dlpack_legacy(rt, ro, NULL, -1, &l),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("the buffer is a read-only import");
  ASSERT_OK(t4a_buffer_release(ro));

  /* Legacy imports are read-only. */
  synth s2;
  synth_init(&s2, mem, sizeof mem);
  ASSERT_OK(t4a_buffer_from_dlpack_legacy(rt, &s2.legacy, &ro));
  assert_int_equal(buffer_info(ro).flags,
                   T4A_BUFFER_INFO_READ_ONLY | T4A_BUFFER_INFO_IMPORTED);
  ASSERT_STATUS(t4a_buffer_fill(rt, ro, 0, 1, 0), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("legacy DLManagedTensor");
  ASSERT_OK(t4a_buffer_release(ro));
  ASSERT_OK(t4a_buffer_release(other));
  ASSERT_OK(t4a_host_buffer_release(hb));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
  assert_int_equal(atomic_load(&s2.deleted), 1);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* An import whose last reference goes in synchronize's own retirement (a
 * launch took it as an argument, so the open epoch kept it): its deleter
 * has run when synchronize returns. */
static void test_import_released_by_the_drain(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  /* the fake driver loads any bytes as a module with any kernel name */
  static const unsigned char image[16] = {7, 7, 7};
  t4a_module m;
  t4a_kernel k;
  ASSERT_OK(t4a_module_load_data(rt, image, sizeof image, &m));
  ASSERT_OK(t4a_kernel_get(m, "k", &k));
  static unsigned char mem[64];
  declare_foreign(mem, sizeof mem);
  synth s;
  synth_init(&s, mem, sizeof mem);
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &b));
  t4a_arg arg = T4A_ARG_INIT;
  arg.kind = T4A_ARG_BUFFER;
  arg.buffer = b;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.arg_count = 1;
  d.args = &arg;
  ASSERT_OK(t4a_launch(rt, &d)); /* the open epoch keeps b */
  ASSERT_OK(t4a_buffer_release(b));
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st));
  assert_true(st.open_epoch_items >= 1);
  assert_int_equal(atomic_load(&s.deleted), 0);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
}

static void test_import_ownership(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  int base = live_allocations();
  unsigned char *mem = malloc(1024);
  assert_non_null(mem);
  declare_foreign(mem, 1024);
  memset(mem, 0, 1024);
  synth s;
  synth_init(&s, mem, 1024);
  /* A 2-D float tensor with a transposed, padded layout: shape {3, 4},
   * strides {1, 8} (elements), byte_offset 64: the span is elements
   * 0..(2*1 + 3*8) = 26, i.e. 27 floats = 108 bytes from mem + 64. */
  s.shape[0] = 3;
  s.shape[1] = 4;
  s.strides[0] = 1;
  s.strides[1] = 8;
  s.t.dl_tensor.ndim = 2;
  s.t.dl_tensor.strides = s.strides;
  s.t.dl_tensor.dtype.code = kDLFloat;
  s.t.dl_tensor.dtype.bits = 32;
  s.t.dl_tensor.byte_offset = 64;
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &b));
  t4a_buffer_info i = buffer_info(b);
  assert_int_equal(i.bytes, 108);
  assert_true(i.device_pointer == (uint64_t)(uintptr_t)(mem + 64));
  assert_int_equal(i.flags, T4A_BUFFER_INFO_IMPORTED);
  assert_int_equal(live_allocations(), base); /* not the library's */

  /* Writable: upload, fill; the bytes land in the producer's memory. */
  unsigned char src[108];
  for (int k = 0; k < 108; ++k) src[k] = (unsigned char)(k + 1);
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, src, sizeof src));
  ASSERT_OK(t4a_buffer_fill(rt, b, 100, 8, 0xCD));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_memory_equal(mem + 64, src, 100);
  assert_int_equal(mem[64 + 107], 0xCD);
  assert_int_equal(mem[63], 0);
  /* Negative strides reach below the first element. */
  synth n;
  synth_init(&n, mem, 16);
  n.strides[0] = -1;
  n.t.dl_tensor.strides = n.strides;
  n.t.dl_tensor.byte_offset = 15;
  t4a_buffer nb;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &n.t, &nb));
  assert_true(buffer_info(nb).device_pointer == (uint64_t)(uintptr_t)mem);
  assert_int_equal(buffer_info(nb).bytes, 16);
  ASSERT_OK(t4a_buffer_release(nb));
  /* An empty tensor imports as an empty buffer (NULL data allowed). */
  synth e;
  synth_init(&e, NULL, 0);
  t4a_buffer eb;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &e.t, &eb));
  assert_int_equal(buffer_info(eb).bytes, 0);
  ASSERT_OK(t4a_buffer_release(eb));

  /* Released: the deleter waits for proof of completion. */
  ASSERT_OK(t4a_buffer_release(b));
  assert_int_equal(atomic_load(&s.deleted), 0);
  assert_int_equal(live_allocations(), base); /* nothing freed by us */
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
  assert_int_equal(atomic_load(&n.deleted), 1);
  assert_int_equal(atomic_load(&e.deleted), 1);

  /* Or a later DLPack call of the runtime finds its event complete (every
   * event is complete on the fake driver). */
  synth r;
  synth_init(&r, mem, 32);
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &r.t, &b));
  ASSERT_OK(t4a_buffer_release(b));
  assert_int_equal(atomic_load(&r.deleted), 0);
  t4a_buffer tmp;
  ASSERT_OK(t4a_buffer_alloc(rt, 16, 0, &tmp));
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, tmp, NULL, -1, &t));
  assert_int_equal(atomic_load(&r.deleted), 1);
  t->deleter(t);
  ASSERT_OK(t4a_buffer_release(tmp));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(atomic_load(&s.deleted), 1);
  assert_int_equal(atomic_load(&r.deleted), 1);
  forget_foreign(mem);
  free(mem); /* the producer frees its memory */
}

/* Issue 25 finding 2: the producer's shape is checked against the
 * allocation the driver reports, not trusted. */
static void test_import_checked_against_allocation(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, 64, 0, &b));
  void *p = (void *)(uintptr_t)buffer_info(b).device_pointer;
  synth s;
  synth_init(&s, p, INT64_MAX); /* 9.2e18 bytes described over 64 */
  expect_import_error(rt, &s, "describes 9223372036854775807 bytes at");
  ASSERT_MESSAGE_HAS("the allocation holding");
  ASSERT_MESSAGE_HAS("is 64 bytes at");
  ASSERT_MESSAGE_HAS("past the end of it");
  synth_init(&s, p, 65);
  expect_import_error(rt, &s, "describes 65 bytes at");
  ASSERT_MESSAGE_HAS("is 64 bytes at");
  /* From a byte offset: 56 bytes fit, 57 do not. */
  synth_init(&s, p, 57);
  s.t.dl_tensor.byte_offset = 8;
  expect_import_error(rt, &s, "describes 57 bytes at");
  ASSERT_MESSAGE_HAS("byte_offset 8");
  /* A 2-D strided tensor whose last element ends one float past it:
   * shape {2, 2}, strides {9, 1} floats reach elements 0..10 (44 bytes);
   * with byte_offset 24 they end at 68. */
  synth_init(&s, p, 2);
  s.t.dl_tensor.ndim = 2;
  s.shape[1] = 2;
  s.strides[0] = 9;
  s.strides[1] = 1;
  s.t.dl_tensor.strides = s.strides;
  s.t.dl_tensor.dtype.code = kDLFloat;
  s.t.dl_tensor.dtype.bits = 32;
  s.t.dl_tensor.byte_offset = 24;
  expect_import_error(rt, &s, "describes 44 bytes at");
  s.t.dl_tensor.byte_offset = 20; /* ends exactly at 64: fine */
  atomic_store(&s.deleted, 0);
  t4a_buffer ok;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ok));
  assert_int_equal(buffer_info(ok).bytes, 44);
  ASSERT_OK(t4a_buffer_release(ok));
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* its deleter runs */
  /* The exact allocation imports. */
  synth_init(&s, p, 64);
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ok));
  assert_int_equal(buffer_info(ok).bytes, 64);
  ASSERT_OK(t4a_buffer_release(ok));
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* its deleter runs */
  /* Memory the driver does not know: its size cannot be checked. */
  static unsigned char unknown[64];
  synth_init(&s, unknown, sizeof unknown);
  expect_import_error(rt, &s, "the CUDA driver knows no allocation holding");
  ASSERT_MESSAGE_HAS("CUDA_ERROR_NOT_FOUND");
  /* Declared to the driver (a foreign allocator's memory), it imports. */
  declare_foreign(unknown, sizeof unknown);
  atomic_store(&s.deleted, 0);
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ok));
  ASSERT_OK(t4a_buffer_release(ok));
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* its deleter runs */
  forget_foreign(unknown);
  /* An empty tensor reaches no memory: nothing asked, NULL data fine. */
  unsigned long calls = address_range_calls();
  synth_init(&s, NULL, 0);
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &s.t, &ok));
  assert_int_equal(address_range_calls(), calls);
  ASSERT_OK(t4a_buffer_release(ok));
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* its deleter runs */
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Issue 25 finding 1: overlap is a property of device memory, not of
 * handles: a DLPack import of a buffer is a second handle to it. */
static void test_copy_overlap_through_alias(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  t4a_runtime rt2 = runtime_on(0); /* another runtime of the device */
  unsigned char pattern[256], back[256];
  for (int i = 0; i < 256; ++i) pattern[i] = (unsigned char)i;
  t4a_buffer a, alias, alias2;
  ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &a));
  ASSERT_OK(t4a_buffer_upload(rt, a, 0, pattern, sizeof pattern));
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, a, NULL, -1, &t));
  ASSERT_OK(t4a_buffer_from_dlpack(rt, t, &alias));
  ASSERT_OK(t4a_buffer_to_dlpack(rt, a, NULL, -1, &t));
  ASSERT_OK(t4a_buffer_from_dlpack(rt2, t, &alias2));
  assert_true(buffer_info(alias).device_pointer ==
              buffer_info(a).device_pointer);

  /* Same runtime, both directions. */
  ASSERT_STATUS(t4a_buffer_copy(rt, alias, 0, a, 16, 128),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst range [0, 128)");
  ASSERT_MESSAGE_HAS("overlaps src range [16, 144)");
  ASSERT_MESSAGE_HAS("another handle to the same memory");
  ASSERT_STATUS(t4a_buffer_copy(rt, a, 16, alias, 0, 128),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("overlaps");
  /* Between runtimes of one device (the same-device event bracket). */
  ASSERT_STATUS(t4a_buffer_copy(rt2, alias2, 0, a, 16, 128),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("another handle to the same memory");
  ASSERT_STATUS(t4a_buffer_copy(rt, a, 0, alias2, 8, 16),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("overlaps");
  /* The same buffer keeps its message. */
  ASSERT_STATUS(t4a_buffer_copy(rt, a, 0, a, 4, 8), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("of the same buffer");
  /* Nothing was copied. */
  ASSERT_OK(t4a_buffer_download_sync(rt, a, 0, back, sizeof back));
  assert_memory_equal(back, pattern, sizeof back);

  /* Adjacent ranges are fine, through either handle and runtime. */
  ASSERT_OK(t4a_buffer_copy(rt, alias, 0, a, 128, 128));
  ASSERT_OK(t4a_buffer_download_sync(rt, a, 0, back, sizeof back));
  assert_memory_equal(back, pattern + 128, 128);
  assert_memory_equal(back + 128, pattern + 128, 128);
  ASSERT_OK(t4a_buffer_copy(rt2, alias2, 128, a, 0, 128));
  ASSERT_OK(t4a_runtime_synchronize(rt2));
  ASSERT_OK(t4a_buffer_download_sync(rt, a, 0, back, sizeof back));
  assert_memory_equal(back, pattern + 128, 128);
  assert_memory_equal(back + 128, pattern + 128, 128);

  ASSERT_OK(t4a_buffer_release(alias2));
  ASSERT_OK(t4a_buffer_release(alias));
  ASSERT_OK(t4a_buffer_release(a));
  /* alias's owner (the export of a, holding rt) is queued in rt itself:
   * released by a proven drain, not by destroy (which would wait for it). */
  ASSERT_OK(t4a_runtime_synchronize(rt));
  ASSERT_OK(t4a_runtime_destroy(rt2));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

int main(void) {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_round_trip),
      cmocka_unit_test(test_export_validation),
      cmocka_unit_test(test_stream_coding),
      cmocka_unit_test(test_deleters_threads),
      cmocka_unit_test(test_deleters_after_destroy),
      cmocka_unit_test(test_import_validation),
      cmocka_unit_test(test_import_read_only),
      cmocka_unit_test(test_import_released_by_the_drain),
      cmocka_unit_test(test_import_ownership),
      cmocka_unit_test(test_import_checked_against_allocation),
      cmocka_unit_test(test_copy_overlap_through_alias),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
