/*
 * GPU lane: DLPack (docs/dlpack.md) with real device memory. The test's
 * own libcuda (dlopen, never linked) plays the other framework.
 *   - export to a consumer stream the test creates: the consumer's copy
 *     out of the tensor (cuMemcpyDtoDAsync on that stream, no host sync
 *     between) sees the runtime's upload; then writes queued on the
 *     consumer stream, the deleter called at once and the handle released:
 *     a buffer allocated next reads back exactly what is uploaded into it
 *     (the free waited for the consumer's work; memcheck catches a use
 *     after free);
 *   - import of cuMemAlloc'd memory through a hand-made
 *     DLManagedTensorVersioned whose deleter cuMemFree's it: the runtime
 *     reads and writes it (data verified), the deleter is not called
 *     before the release and a synchronize, exactly once after; a
 *     read-only import refuses a fill.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "t4acuda_dlpack.h"
#include "test_assert.h"

typedef CUresult (*memset_d32_fn)(CUdeviceptr, unsigned, size_t, CUstream);
typedef CUresult (*memcpy_dtod_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*memcpy_dtoh_fn)(void *, CUdeviceptr, size_t);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*stream_destroy_fn)(CUstream);
typedef CUresult (*stream_sync_fn)(CUstream);
static memset_d32_fn g_memset_d32;
static memcpy_dtod_fn g_dtod;
static memcpy_dtoh_fn g_dtoh;
static stream_create_fn g_stream_create;
static stream_destroy_fn g_stream_destroy;
static stream_sync_fn g_stream_sync;

static void *entry(const char *name) {
  typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) fail_msg("dlopen libcuda.so.1: %s", dlerror());
  gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
  void *fn = NULL;
  if (gpa == NULL || gpa(name, &fn, CUDA_VERSION, 0, NULL) != CUDA_SUCCESS ||
      fn == NULL)
    fail_msg("libcuda.so.1 does not give %s", name);
  return fn;
}

#define CU_OK(call)                                                            \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS)                                                    \
      fail_msg("%s returned %s", #call, gpu_error_name(r_));                   \
  } while (0)

static void expect_words(const uint32_t *got, size_t from, size_t to,
                         uint32_t want, const char *what) {
  for (size_t i = from; i < to; ++i)
    if (got[i] != want)
      fail_msg("%s: word %zu is 0x%08x, expected 0x%08x", what, i, got[i],
               want);
}

static void test_export_consumer_stream(void **state) {
  (void)state;
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt;
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  t4a_runtime_info ri = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &ri));
  const size_t n = (size_t)32 << 20; /* 128 MiB of words */
  uint32_t *host = malloc(n * 4);
  assert_non_null(host);
  for (size_t i = 0; i < n; ++i) host[i] = 0xC0DE0000u + (uint32_t)(i & 0xFFFF);
  gpu_set_current((CUcontext)ri.context);
  CUstream user = NULL;
  CU_OK(g_stream_create(&user, CU_STREAM_NON_BLOCKING));
  CUdeviceptr copy = 0;
  CU_OK(gpu_cu.cuMemAlloc(&copy, n * 4));
  gpu_set_current(NULL);

  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, n * 4, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, host, n * 4));
  DLManagedTensorVersioned *t = NULL;
  t4a_dlpack_desc d = T4A_DLPACK_DESC_INIT;
  d.dtype_code = kDLUInt;
  d.dtype_bits = 32;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, b, &d, (int64_t)(uintptr_t)user, &t));
  assert_int_equal(t->dl_tensor.shape[0], (int64_t)n);
  /* The consumer reads on its stream, ordered by the export alone. */
  gpu_set_current((CUcontext)ri.context);
  CU_OK(g_dtod(copy, (CUdeviceptr)(uintptr_t)t->dl_tensor.data, n * 4, user));
  CU_OK(g_stream_sync(user));
  memset(host, 0, n * 4);
  CU_OK(g_dtoh(host, copy, n * 4));
  for (size_t i = 0; i < n; ++i)
    if (host[i] != 0xC0DE0000u + (uint32_t)(i & 0xFFFF))
      fail_msg("the consumer read word %zu as 0x%08x before the upload", i,
               host[i]);
  /* Writes queued on the consumer stream, then the deleter at once. */
  for (int k = 0; k < 20; ++k)
    CU_OK(g_memset_d32((CUdeviceptr)(uintptr_t)t->dl_tensor.data,
                       0x11111111u * (unsigned)(k % 15 + 1), n, user));
  gpu_set_current(NULL);
  t->deleter(t);
  ASSERT_OK(t4a_buffer_release(b));
  t4a_buffer c;
  for (size_t i = 0; i < n; ++i) host[i] = (uint32_t)i * 2654435761u;
  ASSERT_OK(t4a_buffer_alloc(rt, n * 4, 0, &c));
  ASSERT_OK(t4a_buffer_upload(rt, c, 0, host, n * 4));
  uint32_t *back = malloc(n * 4);
  assert_non_null(back);
  ASSERT_OK(t4a_buffer_download_sync(rt, c, 0, back, n * 4));
  for (size_t i = 0; i < n; ++i)
    if (back[i] != (uint32_t)i * 2654435761u)
      fail_msg("word %zu of the next buffer is 0x%08x: the consumer's work "
               "ran after the exported buffer was freed",
               i, back[i]);
  ASSERT_OK(t4a_buffer_release(c));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  gpu_set_current((CUcontext)ri.context);
  CU_OK(g_stream_sync(user));
  CU_OK(g_stream_destroy(user));
  CU_OK(gpu_cu.cuMemFree(copy));
  gpu_set_current(NULL);
  free(back);
  free(host);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

typedef struct {
  DLManagedTensorVersioned t;
  int64_t shape[1];
  CUcontext ctx;
  CUdeviceptr p;
  atomic_int deleted;
} owned;

static void owned_delete(DLManagedTensorVersioned *self) {
  owned *o = self->manager_ctx;
  /* The user's deleter may call CUDA: it runs with no library lock held,
   * after the runtime's work on the memory is complete. */
  CUcontext prev = gpu_current();
  gpu_set_current(o->ctx);
  if (gpu_cu.cuMemFree(o->p) != CUDA_SUCCESS) abort();
  gpu_set_current(prev);
  atomic_fetch_add(&o->deleted, 1);
}

static void test_import_cumemalloc(void **state) {
  (void)state;
  t4a_runtime_options opt = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt;
  ASSERT_OK(t4a_runtime_create(&opt, &rt));
  t4a_runtime_info ri = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &ri));
  const size_t n = (size_t)4 << 20;
  owned *o = calloc(1, sizeof *o);
  assert_non_null(o);
  atomic_init(&o->deleted, 0);
  o->ctx = (CUcontext)ri.context;
  gpu_set_current(o->ctx);
  CU_OK(gpu_cu.cuMemAlloc(&o->p, n * 4));
  CU_OK(g_memset_d32(o->p, 0x7E7E7E7Eu, n, NULL));
  CU_OK(g_stream_sync(NULL)); /* the producer's work is done */
  gpu_set_current(NULL);
  o->shape[0] = (int64_t)n;
  o->t.version.major = 1;
  o->t.manager_ctx = o;
  o->t.deleter = owned_delete;
  o->t.dl_tensor.data = (void *)(uintptr_t)o->p;
  o->t.dl_tensor.device.device_type = kDLCUDA;
  o->t.dl_tensor.device.device_id = ri.device_ordinal;
  o->t.dl_tensor.ndim = 1;
  o->t.dl_tensor.dtype.code = kDLFloat;
  o->t.dl_tensor.dtype.bits = 32;
  o->t.dl_tensor.dtype.lanes = 1;
  o->t.dl_tensor.shape = o->shape;
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &o->t, &b));
  uint32_t *host = malloc(n * 4);
  assert_non_null(host);
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, host, n * 4));
  expect_words(host, 0, n, 0x7E7E7E7Eu, "the imported memory");
  ASSERT_OK(t4a_buffer_fill(rt, b, 0, 4096, 0x01));
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, host, n * 4));
  expect_words(host, 0, 1024, 0x01010101u, "the fill of the import");
  expect_words(host, 1024, n, 0x7E7E7E7Eu, "the rest of the import");
  ASSERT_OK(t4a_buffer_fill(rt, b, 0, n * 4, 0x02)); /* queued, then release */
  ASSERT_OK(t4a_buffer_release(b));
  assert_int_equal(atomic_load(&o->deleted), 0);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(atomic_load(&o->deleted), 1);

  /* Read-only: the fill is refused. */
  gpu_set_current(o->ctx);
  CU_OK(gpu_cu.cuMemAlloc(&o->p, n * 4));
  gpu_set_current(NULL);
  o->t.dl_tensor.data = (void *)(uintptr_t)o->p;
  o->t.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  ASSERT_OK(t4a_buffer_from_dlpack(rt, &o->t, &b));
  ASSERT_STATUS(t4a_buffer_fill(rt, b, 0, 16, 0), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("read-only import");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt)); /* teardown proves it: deleter */
  assert_int_equal(atomic_load(&o->deleted), 2);
  free(host);
  free(o);
}

int main(void) {
  gpu_lane_require(1);
  g_memset_d32 = (memset_d32_fn)entry("cuMemsetD32Async");
  g_dtod = (memcpy_dtod_fn)entry("cuMemcpyDtoDAsync");
  g_dtoh = (memcpy_dtoh_fn)entry("cuMemcpyDtoH");
  g_stream_create = (stream_create_fn)entry("cuStreamCreate");
  g_stream_destroy = (stream_destroy_fn)entry("cuStreamDestroy");
  g_stream_sync = (stream_sync_fn)entry("cuStreamSynchronize");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_consumer_stream),
      cmocka_unit_test(test_import_cumemalloc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
