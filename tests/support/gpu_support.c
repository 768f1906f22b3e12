/*
 * The GPU lanes' gate and the test's own access to libcuda; see
 * gpu_support.h. SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include "gpu_support.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4acuda.h"

gpu_driver gpu_cu;

/* Every entry point the tests resolve: the base name given to
 * cuGetProcAddress (which picks the variant of CUDA_VERSION, as <cuda.h>'s
 * macros do). */
#define GPU_ENTRIES(X)                                                         \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetUuid)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDeviceCanAccessPeer)                                                     \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuDevicePrimaryCtxGetState)                                                \
  X(cuCtxCreate)                                                               \
  X(cuCtxDestroy)                                                              \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemPoolGetAttribute)                                                     \
  X(cuStreamGetFlags)                                                          \
  X(cuGetErrorName)

/* The hand-written types must be those <cuda.h> declares (the names expand
 * to the versioned variants, e.g. cuCtxCreate to cuCtxCreate_v4). */
#if defined(__GNUC__)
#define GPU_CHECK_TYPE(name)                                                   \
  _Static_assert(                                                              \
      __builtin_types_compatible_p(gpu_##name##_fn, __typeof__(&name)),        \
      "gpu_" #name "_fn does not match <cuda.h>");
GPU_ENTRIES(GPU_CHECK_TYPE)
_Static_assert(__builtin_types_compatible_p(gpu_cuGetProcAddress_fn,
                                            __typeof__(&cuGetProcAddress)),
               "gpu_cuGetProcAddress_fn does not match <cuda.h>");
#undef GPU_CHECK_TYPE
#endif

static void die(const char *what, CUresult r) {
  fprintf(stderr, "gpu_support: %s failed with %s (%d)\n", what,
          gpu_error_name(r), (int)r);
  abort();
}

/* Loads libcuda into gpu_cu; on failure writes why into `why`. */
static int load_driver(char *why, size_t cap) {
  const char *path = getenv("T4A_CUDA_DRIVER_PATH");
  if (path == NULL || path[0] == '\0') path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(why, cap, "dlopen(\"%s\"): %s", path, dlerror());
    return 0;
  }
  void *sym = dlsym(lib, "cuGetProcAddress_v2");
  if (sym == NULL) {
    snprintf(why, cap, "%s has no cuGetProcAddress_v2", path);
    return 0;
  }
  gpu_cuGetProcAddress_fn gpa;
  memcpy(&gpa, &sym, sizeof gpa);
#define GPU_RESOLVE(name)                                                      \
  {                                                                            \
    void *fn = NULL;                                                           \
    CUdriverProcAddressQueryResult found =                                     \
        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                                  \
    CUresult r =                                                               \
        gpa(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);    \
    if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS ||           \
        fn == NULL) {                                                          \
      snprintf(why, cap,                                                       \
               "cuGetProcAddress(\"%s\", CUDA_VERSION %d) failed: "            \
               "CUresult %d, symbol status %d",                                \
               #name, CUDA_VERSION, (int)r, (int)found);                       \
      return 0;                                                                \
    }                                                                          \
    memcpy(&gpu_cu.name, &fn, sizeof fn);                                      \
  }
  GPU_ENTRIES(GPU_RESOLVE)
#undef GPU_RESOLVE
  CUresult r = gpu_cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    snprintf(why, cap, "cuInit(0) returned %s (%d)", gpu_error_name(r), (int)r);
    return 0;
  }
  return 1;
}

/* T4A_REQUIRE_GPU: unset, empty or "0": nothing required; a number: that
 * many devices required; any other non-empty value: one device. */
static long required_devices(const char **raw) {
  const char *v = getenv("T4A_REQUIRE_GPU");
  *raw = v != NULL ? v : "";
  if (v == NULL || v[0] == '\0') return 0;
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') return 1;
  return n;
}

int gpu_lane_require(int min_devices) {
  char reason[2048];
  char message[1536];
  int32_t count = 0;
  t4a_status s = t4a_device_count(&count);
  if (s != T4A_SUCCESS &&
      t4a_last_error_message(message, sizeof message, NULL) != T4A_SUCCESS)
    message[0] = '\0';
  if (s == T4A_ERROR_NO_DRIVER) {
    snprintf(reason, sizeof reason, "no usable CUDA driver (%s)", message);
  } else if (s != T4A_SUCCESS) {
    /* A driver that loads but fails to count devices is broken: always a
     * failure, never a skip. */
    fprintf(stderr, "FAILED: t4a_device_count returned %s: %s\n",
            t4a_status_name(s), message);
    exit(1);
  } else if (count < min_devices) {
    snprintf(reason, sizeof reason,
             "this test needs %d CUDA device(s); the driver reports %d",
             min_devices, (int)count);
  } else {
    char why[1024];
    if (!load_driver(why, sizeof why)) {
      fprintf(stderr,
              "FAILED: t4acuda sees %d device(s) but the test cannot load "
              "its own libcuda: %s\n",
              (int)count, why);
      exit(1);
    }
    return (int)count;
  }
  const char *raw = NULL;
  long required = required_devices(&raw);
  if (required >= min_devices) {
    fprintf(stderr,
            "FAILED: %s, and T4A_REQUIRE_GPU=%s requires %ld device(s)\n",
            reason, raw, required);
    exit(1);
  }
  printf("SKIPPED: %s\n", reason);
  fflush(stdout);
  exit(77);
}

CUcontext gpu_current(void) {
  CUcontext ctx = NULL;
  CUresult r = gpu_cu.cuCtxGetCurrent(&ctx);
  if (r != CUDA_SUCCESS) die("cuCtxGetCurrent", r);
  return ctx;
}

void gpu_set_current(CUcontext ctx) {
  CUresult r = gpu_cu.cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) die("cuCtxSetCurrent", r);
}

CUdevice gpu_device(int ordinal) {
  CUdevice dev = 0;
  CUresult r = gpu_cu.cuDeviceGet(&dev, ordinal);
  if (r != CUDA_SUCCESS) die("cuDeviceGet", r);
  return dev;
}

CUcontext gpu_primary_retain(int ordinal) {
  CUcontext ctx = NULL;
  CUresult r = gpu_cu.cuDevicePrimaryCtxRetain(&ctx, gpu_device(ordinal));
  if (r != CUDA_SUCCESS) die("cuDevicePrimaryCtxRetain", r);
  return ctx;
}

void gpu_primary_release(int ordinal) {
  CUresult r = gpu_cu.cuDevicePrimaryCtxRelease(gpu_device(ordinal));
  if (r != CUDA_SUCCESS) die("cuDevicePrimaryCtxRelease", r);
}

int gpu_primary_active(int ordinal) {
  unsigned int flags = 0;
  int active = 0;
  CUresult r =
      gpu_cu.cuDevicePrimaryCtxGetState(gpu_device(ordinal), &flags, &active);
  if (r != CUDA_SUCCESS) die("cuDevicePrimaryCtxGetState", r);
  return active;
}

CUcontext gpu_context_create(int ordinal) {
  CUcontext ctx = NULL;
  CUdevice dev = gpu_device(ordinal);
#if CUDA_VERSION >= 13000
  CUresult r = gpu_cu.cuCtxCreate(&ctx, NULL, 0, dev);
  if (r == CUDA_ERROR_INVALID_VALUE) { /* a driver that wants the params */
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    r = gpu_cu.cuCtxCreate(&ctx, &params, 0, dev);
  }
#else
  CUresult r = gpu_cu.cuCtxCreate(&ctx, 0, dev);
#endif
  if (r != CUDA_SUCCESS) die("cuCtxCreate", r);
  gpu_set_current(ctx);
  return ctx;
}

void gpu_context_destroy(CUcontext ctx) {
  CUresult r = gpu_cu.cuCtxDestroy(ctx);
  if (r != CUDA_SUCCESS) die("cuCtxDestroy", r);
}

CUresult gpu_alloc_free(size_t bytes) {
  CUdeviceptr p = 0;
  CUresult r = gpu_cu.cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) return r;
  return gpu_cu.cuMemFree(p);
}

const char *gpu_error_name(CUresult r) {
  const char *name = NULL;
  if (gpu_cu.cuGetErrorName == NULL ||
      gpu_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
    return "unknown CUresult";
  return name;
}
