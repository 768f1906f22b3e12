/*
 * Support for the GPU lanes (labels gpu, multi_gpu): the lane gate and the
 * test's own, minimal access to libcuda, used to check what t4acuda did
 * (which context is current, what a pool's attributes are) independently of
 * the library. libcuda is loaded with dlopen and resolved through
 * cuGetProcAddress at CUDA_VERSION, as the library does; it is never linked.
 * <cuda.h> is used for types only.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_TESTS_GPU_SUPPORT_H
#define T4A_TESTS_GPU_SUPPORT_H

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Function pointer types of the driver entry points the tests use, written
 * out by hand to match the variants <cuda.h> declares for CUDA_VERSION
 * (cuCtxCreate is cuCtxCreate_v4, cuMemAlloc is cuMemAlloc_v2, ...);
 * gpu_support.c checks them against <cuda.h> at compile time. */
typedef CUresult (*gpu_cuGetProcAddress_fn)(const char *symbol, void **pfn,
                                            int cuda_version, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *st);
typedef CUresult (*gpu_cuInit_fn)(unsigned int flags);
typedef CUresult (*gpu_cuDriverGetVersion_fn)(int *version);
typedef CUresult (*gpu_cuDeviceGetCount_fn)(int *count);
typedef CUresult (*gpu_cuDeviceGet_fn)(CUdevice *device, int ordinal);
typedef CUresult (*gpu_cuDeviceGetName_fn)(char *name, int len, CUdevice dev);
typedef CUresult (*gpu_cuDeviceGetUuid_fn)(CUuuid *uuid, CUdevice dev);
typedef CUresult (*gpu_cuDeviceGetAttribute_fn)(int *value,
                                                CUdevice_attribute attrib,
                                                CUdevice dev);
typedef CUresult (*gpu_cuDeviceTotalMem_fn)(size_t *bytes, CUdevice dev);
typedef CUresult (*gpu_cuDeviceCanAccessPeer_fn)(int *can_access, CUdevice dev,
                                                 CUdevice peer);
typedef CUresult (*gpu_cuDevicePrimaryCtxRetain_fn)(CUcontext *pctx,
                                                    CUdevice dev);
typedef CUresult (*gpu_cuDevicePrimaryCtxRelease_fn)(CUdevice dev);
typedef CUresult (*gpu_cuDevicePrimaryCtxGetState_fn)(CUdevice dev,
                                                      unsigned int *flags,
                                                      int *active);
#if CUDA_VERSION >= 13000 /* cuCtxCreate is cuCtxCreate_v4 */
typedef CUresult (*gpu_cuCtxCreate_fn)(CUcontext *pctx,
                                       CUctxCreateParams *params,
                                       unsigned int flags, CUdevice dev);
#else /* cuCtxCreate is cuCtxCreate_v2 */
typedef CUresult (*gpu_cuCtxCreate_fn)(CUcontext *pctx, unsigned int flags,
                                       CUdevice dev);
#endif
typedef CUresult (*gpu_cuCtxDestroy_fn)(CUcontext ctx);
typedef CUresult (*gpu_cuCtxGetCurrent_fn)(CUcontext *pctx);
typedef CUresult (*gpu_cuCtxSetCurrent_fn)(CUcontext ctx);
typedef CUresult (*gpu_cuMemAlloc_fn)(CUdeviceptr *dptr, size_t bytes);
typedef CUresult (*gpu_cuMemFree_fn)(CUdeviceptr dptr);
typedef CUresult (*gpu_cuMemPoolGetAttribute_fn)(CUmemoryPool pool,
                                                 CUmemPool_attribute attr,
                                                 void *value);
typedef CUresult (*gpu_cuStreamGetFlags_fn)(CUstream stream,
                                            unsigned int *flags);
typedef CUresult (*gpu_cuGetErrorName_fn)(CUresult error, const char **name);

/* The test's own driver table; valid after gpu_lane_require() returned. */
typedef struct gpu_driver {
  gpu_cuInit_fn cuInit;
  gpu_cuDriverGetVersion_fn cuDriverGetVersion;
  gpu_cuDeviceGetCount_fn cuDeviceGetCount;
  gpu_cuDeviceGet_fn cuDeviceGet;
  gpu_cuDeviceGetName_fn cuDeviceGetName;
  gpu_cuDeviceGetUuid_fn cuDeviceGetUuid;
  gpu_cuDeviceGetAttribute_fn cuDeviceGetAttribute;
  gpu_cuDeviceTotalMem_fn cuDeviceTotalMem;
  gpu_cuDeviceCanAccessPeer_fn cuDeviceCanAccessPeer;
  gpu_cuDevicePrimaryCtxRetain_fn cuDevicePrimaryCtxRetain;
  gpu_cuDevicePrimaryCtxRelease_fn cuDevicePrimaryCtxRelease;
  gpu_cuDevicePrimaryCtxGetState_fn cuDevicePrimaryCtxGetState;
  gpu_cuCtxCreate_fn cuCtxCreate;
  gpu_cuCtxDestroy_fn cuCtxDestroy;
  gpu_cuCtxGetCurrent_fn cuCtxGetCurrent;
  gpu_cuCtxSetCurrent_fn cuCtxSetCurrent;
  gpu_cuMemAlloc_fn cuMemAlloc;
  gpu_cuMemFree_fn cuMemFree;
  gpu_cuMemPoolGetAttribute_fn cuMemPoolGetAttribute;
  gpu_cuStreamGetFlags_fn cuStreamGetFlags;
  gpu_cuGetErrorName_fn cuGetErrorName;
} gpu_driver;

extern gpu_driver gpu_cu;

/* The lane gate; call it first in main. Asks t4acuda for the device count.
 * With no usable driver, or fewer than `min_devices` devices:
 *   - T4A_REQUIRE_GPU set to a number >= min_devices (a non-numeric,
 *     non-empty value counts as 1): prints why and exits 1 (failure);
 *   - otherwise prints "SKIPPED: <reason>" and exits 77 (ctest SKIPPED).
 * Otherwise loads the test's own libcuda (T4A_CUDA_DRIVER_PATH, else
 * libcuda.so.1) into gpu_cu, exiting 1 when that fails, and returns the
 * device count. */
int gpu_lane_require(int min_devices);

/* The thread's current context through the test's own driver (aborts the
 * process if cuCtxGetCurrent itself fails). */
CUcontext gpu_current(void);
/* Makes `ctx` current (NULL: none); aborts on failure. */
void gpu_set_current(CUcontext ctx);
/* The CUdevice of ordinal `ordinal`; aborts on failure. */
CUdevice gpu_device(int ordinal);
/* Retains the primary context of `ordinal` and returns it; the caller
 * releases it with gpu_primary_release(). Aborts on failure. */
CUcontext gpu_primary_retain(int ordinal);
void gpu_primary_release(int ordinal);
/* Whether the primary context of `ordinal` is active (retained by anyone). */
int gpu_primary_active(int ordinal);
/* Creates a separate (non-primary) context on `ordinal`; cuCtxCreate makes
 * it current. Aborts on failure. */
CUcontext gpu_context_create(int ordinal);
void gpu_context_destroy(CUcontext ctx);
/* Allocates and frees `bytes` with cuMemAlloc/cuMemFree in the current
 * context: returns the first failing CUresult, CUDA_SUCCESS if both work. */
CUresult gpu_alloc_free(size_t bytes);
/* The driver's name of a CUresult ("CUDA_ERROR_LAUNCH_FAILED"). */
const char *gpu_error_name(CUresult r);

/* Fails the running cmocka test unless `want` is the current context. */
#define ASSERT_CURRENT(want)                                                   \
  do {                                                                         \
    CUcontext cur_ = gpu_current();                                            \
    if (cur_ != (want))                                                        \
      fail_msg("current context is %p, expected %p", (void *)cur_,             \
               (void *)(want));                                                \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
