/*
 * A fake libcuda for the host lane: enough of the driver API for t4acuda's
 * runtimes, buffers and transfers to run on a machine without a GPU, so
 * argument checks, byte-exact round trips, counters and threading run in
 * CI and under the sanitizers. "Device memory" is host memory; every
 * stream operation runs at once on the calling thread (a valid schedule of
 * stream order), so every event is complete when recorded. It is loaded by
 * t4acuda through T4A_CUDA_DRIVER_PATH and resolves entry points through
 * cuGetProcAddress_v2, as the real driver does. Not a model of timing.
 *
 * FAKE_CUDA_DEVICES: device count (default 1). Allocations above
 * FAKE_CUDA_MAX_ALLOC bytes (default 16 GiB) fail with OUT_OF_MEMORY.
 * FAKE_CUDA_DRIVER_VERSION: the CUDA version it reports and behaves as
 * (default the CUDA_VERSION it is built with; e.g. 12000, 12040). As the
 * real driver: a lookup at a version newer than the driver is
 * INVALID_VALUE; an entry point newer than the driver (cuFuncGetParamInfo,
 * 12.4) is not found; a base name's variant is chosen by the version
 * requested (cuStreamGetCtx at 12050 or later is the three-parameter
 * variant). fake_cuda_lookup_version(name) is the version last requested.
 *
 * Test controls (a test dlopens this library by the same path to reach
 * them): fake_cuda_fail_next() makes the next cuStreamCreate or
 * cuMemPoolCreate fail the way a real driver may, writing a garbage handle
 * into its out-parameter; the calls that take a stream or pool reject that
 * handle with INVALID_HANDLE; or the next cuMemAllocFromPoolAsync fail
 * with the result given (an out-of-memory pool). fake_cuda_live() counts live streams, pools,
 * stream-ordered allocations and loaded modules and the primary-context
 * references of device 0.
 * cuMemGetAddressRange knows the stream-ordered allocations, module
 * globals and memory declared with fake_cuda_foreign_add(p, bytes) (a
 * test's host memory standing for a foreign allocator's device memory);
 * anything else is CUDA_ERROR_NOT_FOUND.
 * Peers (issue 10): distinct devices are peers unless fake_cuda_set_peer()
 * says not; cuCtxEnablePeerAccess and cuMemPoolSetAccess are recorded
 * (fake_cuda_ctx_peer, fake_cuda_pool_access) and cuMemcpyPeerAsync
 * refuses a copy the grants do not cover (stricter than the driver).
 * Launch attributes (issue 28): FAKE_CUDA_CC (e.g. "80"; default "90")
 * is the compute capability the devices report, with
 * CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 1 from 90 on; FAKE_CUDA_HIDE (a
 * comma-separated list of entry-point names) makes cuGetProcAddress find
 * none of them, as a driver that lacks them. cuLaunchKernelEx records its
 * cluster and programmatic attributes (fake_cuda_last_launch_ex) and
 * refuses, as the driver does, a cluster that differs from the function's
 * compiled dimensions (fake_cuda_set_cluster_dims) or exceeds 8 blocks
 * without the non-portable attribute (CUDA_ERROR_INVALID_CLUSTER_SIZE).
 * Stream priorities range from 0 down to -5.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_API __attribute__((visibility("default")))

struct CUctx_st {
  int device;
  int refs;
};
struct fake_node {
  int kind; /* 0 kernel, 1 memset, 2 copy, 3 memset32, 4 cooperative */
  void *dst;
  const void *src;
  size_t n; /* bytes; 32-bit words (3); grid x (0, 4) */
  unsigned char value;
  unsigned value32; /* memset32 */
};
struct CUstream_st {
  CUcontext ctx;
  int priority;
  /* Stream capture (graphs): while capturing, kernels, memsets and copies
   * become nodes; anything else on the stream invalidates the capture. */
  int capturing, invalid, mode;
  struct fake_node *nodes;
  size_t n_nodes, cap_nodes;
  /* Host-DMA copies enqueued, and how many of them the host has seen
   * complete (a synchronize, or a query or wait of an event recorded
   * after them): the model of "in flight" for early frees, below. */
  uint64_t enqueued, observed;
  CUstream next_destroyed; /* kept, reachable, so events may outlive it */
};
struct CUevent_st {
  int recorded;
  CUstream stream; /* where it was last recorded, and after how many */
  uint64_t seq;    /* host-DMA copies of that stream */
};
struct CUmemPoolHandle_st {
  cuuint64_t threshold;
  int device;
  unsigned access; /* devices granted access by cuMemPoolSetAccess (bits) */
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* The garbage a failing create writes (see the test controls). */
#define FAKE_GARBAGE ((uintptr_t)0xDEAD0000u)
static int g_fail_stream_create, g_fail_pool_create, g_fail_alloc; /* CUresult, 0: none */
static int g_live_streams, g_live_pools, g_live_allocations;
/* Cooperative launch support off (fake_cuda_set_no_cooperative). */
static int g_no_cooperative;

/* The failure armed for `*slot`, disarmed; 0 when none (under g_mu). */
static int take_failure(int *slot) {
  pthread_mutex_lock(&g_mu);
  int r = *slot;
  *slot = 0;
  pthread_mutex_unlock(&g_mu);
  return r;
}
static void count(int *n, int delta) {
  pthread_mutex_lock(&g_mu);
  *n += delta;
  pthread_mutex_unlock(&g_mu);
}

/* In-flight host DMA (issue 8, item 5): every copy to or from host memory
 * is "in flight" until the host observes its stream past it. Freeing
 * pinned memory (cuMemFreeHost) that an in-flight copy uses is counted as
 * an early free (fake_cuda_early_host_frees): on a GPU that is a
 * use-after-free by the DMA engine. Copies run at once here; only the
 * bookkeeping models their timing. Guarded by g_mu. */
#define FAKE_DMA_SLOTS 4096
static struct {
  const unsigned char *host;
  size_t bytes;
  CUstream stream;
  uint64_t seq;
} g_dma[FAKE_DMA_SLOTS];
static struct {
  void *p;
  size_t bytes;
} g_pinned[FAKE_DMA_SLOTS];
static unsigned long g_early_frees;

static void observe(CUstream s, uint64_t through) {
  if (s != NULL && through > s->observed) s->observed = through;
}
static void note_dma(CUstream s, const void *host, size_t n) {
  pthread_mutex_lock(&g_mu);
  uint64_t seq = ++s->enqueued;
  int free_slot = -1;
  for (int i = 0; i < FAKE_DMA_SLOTS && free_slot < 0; ++i)
    if (g_dma[i].stream == NULL || g_dma[i].seq <= g_dma[i].stream->observed)
      free_slot = i;
  if (free_slot >= 0) { /* full: the copy goes unmodelled */
    g_dma[free_slot].host = host;
    g_dma[free_slot].bytes = n;
    g_dma[free_slot].stream = s;
    g_dma[free_slot].seq = seq;
  }
  pthread_mutex_unlock(&g_mu);
}
static void forget_stream(CUstream s) {
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_DMA_SLOTS; ++i)
    if (g_dma[i].stream == s) g_dma[i].stream = NULL;
  pthread_mutex_unlock(&g_mu);
}

/* Pinned frees of memory an in-flight copy used (see above). */
FAKE_API unsigned long fake_cuda_early_host_frees(void) {
  pthread_mutex_lock(&g_mu);
  unsigned long n = g_early_frees;
  pthread_mutex_unlock(&g_mu);
  return n;
}
static struct CUctx_st g_primary[16];
static _Thread_local CUcontext tl_current;

static int device_count(void) {
  const char *e = getenv("FAKE_CUDA_DEVICES");
  int n = e != NULL ? atoi(e) : 1;
  return n < 0 ? 0 : (n > 16 ? 16 : n);
}

static uint64_t max_alloc(void) {
  const char *e = getenv("FAKE_CUDA_MAX_ALLOC");
  return e != NULL ? strtoull(e, NULL, 10) : (16ull << 30);
}

static CUresult f_cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 16; ++i) g_primary[i].device = i;
  return device_count() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
static int driver_version(void) {
  const char *e = getenv("FAKE_CUDA_DRIVER_VERSION");
  return e != NULL && atoi(e) > 0 ? atoi(e) : CUDA_VERSION;
}
static CUresult f_cuDriverGetVersion(int *v) {
  if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
  *v = driver_version();
  return CUDA_SUCCESS;
}
static CUresult f_cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
  case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
  case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
  case CUDA_ERROR_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
  case (CUresult)226: *s = "CUDA_ERROR_CONTAINED"; break;
  default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}
static CUresult f_cuGetErrorString(CUresult r, const char **s) {
  (void)r;
  *s = "reported by the fake driver";
  return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGetCount(int *n) {
  *n = device_count();
  return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGetName(char *buf, int len, CUdevice d) {
  snprintf(buf, (size_t)len, "t4acuda fake device %d", d);
  return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGetUuid(CUuuid *u, CUdevice d) {
  memset(u, 0, sizeof *u);
  u->bytes[0] = (char)0xFA;
  u->bytes[15] = (char)d;
  return CUDA_SUCCESS;
}
static int fake_cc(void) {
  const char *e = getenv("FAKE_CUDA_CC");
  return e != NULL && atoi(e) > 0 ? atoi(e) : 90;
}
static CUresult f_cuDeviceGetAttribute(int *v, CUdevice_attribute a,
                                       CUdevice d) {
  (void)d;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = fake_cc() / 10; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = fake_cc() % 10; break;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = fake_cc() >= 90; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1000000; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *v = 232448;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    pthread_mutex_lock(&g_mu);
    *v = !g_no_cooperative;
    pthread_mutex_unlock(&g_mu);
    break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
static CUresult f_cuDeviceTotalMem(size_t *b, CUdevice d) {
  (void)d;
  *b = (size_t)16 << 30;
  return CUDA_SUCCESS;
}
/* Peers (issue 10): every two distinct devices are peers unless a test
 * said otherwise (fake_cuda_set_peer). Context peer access as enabled by
 * cuCtxEnablePeerAccess, [from][to]. Guarded by g_mu. */
static unsigned char g_not_peer[16][16];
static unsigned char g_ctx_peer[16][16];
static unsigned long g_peer_copies;
static int can_access_peer(CUdevice d, CUdevice p) {
  pthread_mutex_lock(&g_mu);
  int c = d != p && !g_not_peer[d][p];
  pthread_mutex_unlock(&g_mu);
  return c;
}
static CUresult f_cuDeviceCanAccessPeer(int *c, CUdevice d, CUdevice p) {
  if (d < 0 || d >= 16 || p < 0 || p >= 16) return CUDA_ERROR_INVALID_DEVICE;
  *c = can_access_peer(d, p);
  return CUDA_SUCCESS;
}
static CUresult f_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  if (d < 0 || d >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g_mu);
  g_primary[d].refs++;
  pthread_mutex_unlock(&g_mu);
  *c = &g_primary[d];
  return CUDA_SUCCESS;
}
static CUresult f_cuDevicePrimaryCtxRelease(CUdevice d) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_mu);
  if (g_primary[d].refs <= 0)
    r = CUDA_ERROR_INVALID_CONTEXT;
  else
    g_primary[d].refs--;
  pthread_mutex_unlock(&g_mu);
  return r;
}
static CUresult f_cuDevicePrimaryCtxGetState(CUdevice d, unsigned *f,
                                             int *active) {
  *f = 0;
  pthread_mutex_lock(&g_mu);
  *active = g_primary[d].refs > 0;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
static CUresult f_cuCtxGetCurrent(CUcontext *c) {
  *c = tl_current;
  return CUDA_SUCCESS;
}
static CUresult f_cuCtxSetCurrent(CUcontext c) {
  tl_current = c;
  return CUDA_SUCCESS;
}
static CUresult f_cuCtxGetDevice(CUdevice *d) {
  if (tl_current == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *d = tl_current->device;
  return CUDA_SUCCESS;
}
/* Calls that need a current context fail without one, as the driver's do. */
static int have_context(void) { return tl_current != NULL; }
static CUresult f_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (peer == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int from = tl_current->device, to = peer->device;
  if (from == to || !can_access_peer(from, to))
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_mu);
  if (g_ctx_peer[from][to]) r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  g_ctx_peer[from][to] = 1;
  pthread_mutex_unlock(&g_mu);
  return r;
}

/* ---- Stream capture and graphs ----
 * Stricter than the driver where the library must never go: an event
 * record, an allocation, a free, a wait, a synchronize or a query on a
 * capturing stream invalidates the capture and returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. Unsafe calls (host waits and
 * queries, pinned host memory, module loads and unloads, stream-ordered
 * allocation) while any global
 * capture is active return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT unless the
 * calling thread's mode is relaxed (cuThreadExchangeStreamCaptureMode).
 * Replays run the nodes in order on the calling thread; kernels do
 * nothing. fake_cuda_graphs_live() counts graphs and executable graphs. */
struct CUgraph_st {
  struct fake_node *nodes;
  size_t n;
};
struct CUgraphExec_st {
  struct fake_node *nodes;
  size_t n;
};
static int g_global_captures, g_live_graphs;
static _Thread_local int tl_capture_mode; /* CU_STREAM_CAPTURE_MODE_* */
static int capturing(CUstream s) {
  if (s == NULL || (uintptr_t)s <= 2 || (uintptr_t)s == FAKE_GARBAGE) return 0;
  pthread_mutex_lock(&g_mu);
  int c = s->capturing;
  pthread_mutex_unlock(&g_mu);
  return c;
}
/* An operation the library must never enqueue on a capturing stream. */
static CUresult refuse_in_capture(CUstream s) {
  pthread_mutex_lock(&g_mu);
  s->invalid = 1;
  pthread_mutex_unlock(&g_mu);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}
static CUresult add_node(CUstream s, int kind, void *dst, const void *src,
                         size_t n, unsigned char value) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_mu);
  if (s->invalid) {
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    if (s->n_nodes == s->cap_nodes) {
      size_t cap = s->cap_nodes ? 2 * s->cap_nodes : 16;
      struct fake_node *g = realloc(s->nodes, cap * sizeof *g);
      if (g == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
      else
        s->nodes = g, s->cap_nodes = cap;
    }
    if (r == CUDA_SUCCESS)
      s->nodes[s->n_nodes++] = (struct fake_node){kind, dst, src, n, value, 0};
  }
  pthread_mutex_unlock(&g_mu);
  return r;
}
/* An unsafe call while a global capture is active and this thread is not
 * relaxed. */
static int implicit_refusal(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_global_captures;
  pthread_mutex_unlock(&g_mu);
  return n > 0 && tl_capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED;
}
static CUresult f_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  if (s == NULL || (uintptr_t)s <= 2)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  pthread_mutex_lock(&g_mu);
  CUresult r = CUDA_SUCCESS;
  if (s->capturing) {
    r = CUDA_ERROR_ILLEGAL_STATE;
  } else {
    s->capturing = 1, s->invalid = 0, s->mode = (int)mode, s->n_nodes = 0;
    if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) ++g_global_captures;
  }
  pthread_mutex_unlock(&g_mu);
  return r;
}
static CUresult f_cuStreamEndCapture(CUstream s, CUgraph *g) {
  if (s == NULL || g == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  if (!s->capturing) {
    pthread_mutex_unlock(&g_mu);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  s->capturing = 0;
  if (s->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) --g_global_captures;
  CUresult r = CUDA_SUCCESS;
  *g = NULL;
  if (s->invalid) {
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    CUgraph x = calloc(1, sizeof *x);
    if (x == NULL) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      x->nodes = s->nodes, x->n = s->n_nodes;
      s->nodes = NULL, s->n_nodes = s->cap_nodes = 0;
      ++g_live_graphs;
      *g = x;
    }
  }
  s->n_nodes = 0;
  pthread_mutex_unlock(&g_mu);
  return r;
}
static CUresult f_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  if (s == NULL || st == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  *st = !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
        : s->invalid  ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
static CUresult f_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *m) {
  if (m == NULL) return CUDA_ERROR_INVALID_VALUE;
  int old = tl_capture_mode;
  tl_capture_mode = (int)*m;
  *m = (CUstreamCaptureMode)old;
  return CUDA_SUCCESS;
}
static CUresult f_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g,
                                              unsigned long long flags) {
  (void)flags;
  if (e == NULL || g == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec x = calloc(1, sizeof *x);
  if (x == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  x->n = g->n;
  if (g->n > 0) {
    x->nodes = malloc(g->n * sizeof *x->nodes);
    if (x->nodes == NULL) {
      free(x);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(x->nodes, g->nodes, g->n * sizeof *x->nodes);
  }
  count(&g_live_graphs, 1);
  *e = x;
  return CUDA_SUCCESS;
}
static void op_log(const char *fmt, unsigned long long a, unsigned long long b);
static void run_kernel(void);
static void memset32(CUdeviceptr d, unsigned v, size_t n);
static CUresult f_cuGraphLaunch(CUgraphExec e, CUstream s) {
  if (e == NULL || s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return refuse_in_capture(s);
  for (size_t i = 0; i < e->n; ++i) {
    const struct fake_node *n = &e->nodes[i];
    if (n->kind == 1) memset(n->dst, n->value, n->n);
    if (n->kind == 2) memmove(n->dst, n->src, n->n);
    if (n->kind == 3)
      memset32((CUdeviceptr)(uintptr_t)n->dst, n->value32, n->n);
    if (n->kind == 0 || n->kind == 4) {
      run_kernel();
      op_log(n->kind == 0 ? "launch %llu %llu\n" : "cooperative %llu %llu\n",
             (unsigned long long)n->n, 0ull);
    }
  }
  return CUDA_SUCCESS;
}
static CUresult f_cuGraphExecDestroy(CUgraphExec e) {
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  free(e->nodes);
  free(e);
  count(&g_live_graphs, -1);
  return CUDA_SUCCESS;
}
static CUresult f_cuGraphDestroy(CUgraph g) {
  if (g == NULL) return CUDA_ERROR_INVALID_VALUE;
  free(g->nodes);
  free(g);
  count(&g_live_graphs, -1);
  return CUDA_SUCCESS;
}
static CUresult f_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) {
  if (g == NULL || n == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (nodes != NULL) return CUDA_ERROR_NOT_SUPPORTED; /* counts only */
  *n = g->n;
  return CUDA_SUCCESS;
}
/* Graphs plus executable graphs alive. */
FAKE_API int fake_cuda_graphs_live(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_live_graphs;
  pthread_mutex_unlock(&g_mu);
  return n;
}

static CUresult f_cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  int fail = take_failure(&g_fail_stream_create);
  if (fail != 0) {
    *s = (CUstream)FAKE_GARBAGE;
    return (CUresult)fail;
  }
  CUstream x = calloc(1, sizeof *x);
  if (x == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  x->ctx = tl_current;
  count(&g_live_streams, 1);
  *s = x;
  return CUDA_SUCCESS;
}
static CUresult f_cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (least != NULL) *least = 0;
  if (greatest != NULL) *greatest = -5;
  return CUDA_SUCCESS;
}
static CUresult f_cuStreamCreateWithPriority(CUstream *s, unsigned flags,
                                             int priority) {
  CUresult r = f_cuStreamCreate(s, flags);
  /* As the driver: clamped into the range. */
  if (r == CUDA_SUCCESS)
    (*s)->priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
  return r;
}
static CUresult f_cuStreamGetPriority(CUstream s, int *priority) {
  if (s == NULL || (uintptr_t)s == FAKE_GARBAGE || priority == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *priority = s->priority;
  return CUDA_SUCCESS;
}
static CUstream g_destroyed_streams; /* guarded by g_mu */
static CUresult f_cuStreamDestroy(CUstream s) {
  if (s == NULL || (uintptr_t)s == FAKE_GARBAGE)
    return CUDA_ERROR_INVALID_HANDLE;
  count(&g_live_streams, -1);
  forget_stream(s);
  /* Not freed: an event recorded on it may still be queried. */
  pthread_mutex_lock(&g_mu);
  s->next_destroyed = g_destroyed_streams;
  g_destroyed_streams = s;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
/* fake_cuda_sync_delay_us: every cuStreamSynchronize first sleeps this
 * long (a drain in progress), then sees the stream as it is by then. */
static _Atomic unsigned g_sync_delay_us;
FAKE_API void fake_cuda_sync_delay_us(unsigned us) { g_sync_delay_us = us; }
/* Host-DMA copy calls and stream synchronizations, for the transfer-plan
 * tests (fake_cuda_live). */
static unsigned long g_htod_calls, g_dtoh_calls, g_stream_syncs;
static CUresult f_cuStreamSynchronize(CUstream s) {
  if ((uintptr_t)s == FAKE_GARBAGE) return CUDA_ERROR_INVALID_HANDLE;
  if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
  __atomic_fetch_add(&g_stream_syncs, 1, __ATOMIC_RELAXED);
  if (g_sync_delay_us != 0) {
    struct timespec ts = {0, (long)g_sync_delay_us * 1000L};
    nanosleep(&ts, NULL);
  }
  if (capturing(s)) return refuse_in_capture(s);
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  pthread_mutex_lock(&g_mu);
  observe(s, s->enqueued);
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
static CUresult f_cuStreamQuery(CUstream s) {
  if (capturing(s)) return refuse_in_capture(s);
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  return s != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
/* The default streams (CU_STREAM_LEGACY 0x1, CU_STREAM_PER_THREAD 0x2)
 * name one stream object per device here: the current context's. */
static struct CUstream_st g_default_streams[16];
static CUstream resolve_stream(CUstream s) {
  if ((uintptr_t)s != 1 && (uintptr_t)s != 2) return s;
  if (tl_current == NULL) return NULL;
  CUstream d = &g_default_streams[tl_current->device & 15];
  d->ctx = tl_current;
  return d;
}
/* cuStreamWaitEvent calls per waiting stream as given (the special handles
 * 0x1 and 0x2 count as themselves): fake_cuda_stream_waits. */
#define FAKE_WAIT_SLOTS 64
static struct {
  CUstream s;
  unsigned long n;
} g_waits[FAKE_WAIT_SLOTS];
static CUresult f_cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) {
  (void)f;
  if (s == NULL || e == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return refuse_in_capture(s);
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_WAIT_SLOTS; ++i)
    if (g_waits[i].s == s || g_waits[i].s == NULL) {
      g_waits[i].s = s;
      ++g_waits[i].n;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
/* How many cuStreamWaitEvent calls made `stream` wait. */
FAKE_API unsigned long fake_cuda_stream_waits(void *stream) {
  unsigned long n = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_WAIT_SLOTS; ++i)
    if (g_waits[i].s == (CUstream)stream) n = g_waits[i].n;
  pthread_mutex_unlock(&g_mu);
  return n;
}
/* The context a stream was created in; the NULL stream is the current
 * context's legacy stream, as in the driver. */
static CUresult f_cuStreamGetCtx(CUstream s, CUcontext *c) {
  if ((uintptr_t)s == FAKE_GARBAGE) return CUDA_ERROR_INVALID_HANDLE;
  if (c == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (s == NULL || (uintptr_t)s == 1 || (uintptr_t)s == 2) {
    if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
    *c = tl_current;
    return CUDA_SUCCESS;
  }
  *c = s->ctx;
  return CUDA_SUCCESS;
}
/* cuStreamGetCtx_v2 (12.5): also the stream's green context (none here). */
static CUresult f_cuStreamGetCtx_v2(CUstream s, CUcontext *c, CUgreenCtx *g) {
  CUresult r = f_cuStreamGetCtx(s, c);
  if (r == CUDA_SUCCESS && g != NULL) *g = NULL;
  return r;
}
/* cuCtxGetDevice_v2 (13.0): the device of `ctx` (NULL: the current one). */
static CUresult f_cuCtxGetDevice_v2(CUdevice *d, CUcontext ctx) {
  if (ctx == NULL) return f_cuCtxGetDevice(d);
  int known = 0;
  for (int i = 0; i < 16; ++i) known |= ctx == &g_primary[i];
  if (!known) return CUDA_ERROR_INVALID_CONTEXT;
  *d = ctx->device;
  return CUDA_SUCCESS;
}
static CUresult f_cuEventCreate(CUevent *e, unsigned f) {
  (void)f;
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  *e = calloc(1, sizeof **e);
  return *e != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult f_cuEventDestroy(CUevent e) {
  free(e);
  return CUDA_SUCCESS;
}
static CUresult f_cuEventRecord(CUevent e, CUstream s) {
  if ((uintptr_t)s == 1 || (uintptr_t)s == 2) {
    s = resolve_stream(s);
    if (s == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (e == NULL || s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return refuse_in_capture(s);
  pthread_mutex_lock(&g_mu);
  e->recorded = 1;
  e->stream = s;
  e->seq = s->enqueued;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
/* Every event is complete: querying or waiting observes its stream. */
static CUresult f_cuEventQuery(CUevent e) {
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  pthread_mutex_lock(&g_mu);
  observe(e->stream, e->seq);
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
/* fake_cuda_hold_event_syncs: while on, every cuEventSynchronize waits
 * (counted by fake_cuda_event_syncs_held) until it is turned off: a test
 * looks at what other threads can do while a host wait is in progress. */
static _Atomic int g_hold_event_syncs, g_event_syncs_held;
FAKE_API void fake_cuda_hold_event_syncs(int on) { g_hold_event_syncs = on; }
FAKE_API int fake_cuda_event_syncs_held(void) { return g_event_syncs_held; }
static CUresult f_cuEventSynchronize(CUevent e) {
  if (g_hold_event_syncs) {
    ++g_event_syncs_held;
    while (g_hold_event_syncs) {
      struct timespec ts = {0, 1000000L};
      nanosleep(&ts, NULL);
    }
    --g_event_syncs_held;
  }
  return f_cuEventQuery(e);
}
static CUresult f_cuMemPoolCreate(CUmemoryPool *p, const CUmemPoolProps *pr) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  int fail = take_failure(&g_fail_pool_create);
  if (fail != 0) {
    *p = (CUmemoryPool)FAKE_GARBAGE;
    return (CUresult)fail;
  }
  CUmemoryPool x = calloc(1, sizeof *x);
  if (x == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  x->device = pr->location.id;
  count(&g_live_pools, 1);
  *p = x;
  return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolDestroy(CUmemoryPool p) {
  if (p == NULL || (uintptr_t)p == FAKE_GARBAGE)
    return CUDA_ERROR_INVALID_HANDLE;
  count(&g_live_pools, -1);
  free(p);
  return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a,
                                        void *v) {
  if (a != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) return CUDA_ERROR_INVALID_VALUE;
  p->threshold = *(cuuint64_t *)v;
  return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute a,
                                        void *v) {
  if (a != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) return CUDA_ERROR_INVALID_VALUE;
  *(cuuint64_t *)v = p->threshold;
  return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolTrimTo(CUmemoryPool p, size_t keep) {
  (void)keep;
  return p != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_cuMemPoolSetAccess(CUmemoryPool p, const CUmemAccessDesc *map,
                                     size_t count) {
  if (p == NULL || (uintptr_t)p == FAKE_GARBAGE || map == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    int dev = map[i].location.id;
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || dev < 0 ||
        dev >= device_count())
      return CUDA_ERROR_INVALID_VALUE;
    /* The owner's access cannot be changed; another device needs to be a
     * peer of the owner. */
    if (dev == p->device) {
      if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUDA_ERROR_INVALID_VALUE;
      continue;
    }
    if (!can_access_peer(dev, p->device)) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&g_mu);
    if (map[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      p->access |= 1u << dev;
    else
      p->access &= ~(1u << dev);
    pthread_mutex_unlock(&g_mu);
  }
  return CUDA_SUCCESS;
}
/* Which pool each live allocation came from (for the access check of
 * cuMemcpyPeerAsync). Guarded by g_mu; a full table leaves an allocation
 * unmodelled (its peer copies are then not checked). */
static struct {
  CUdeviceptr d;
  size_t bytes;
  CUmemoryPool pool;
} g_allocs[FAKE_DMA_SLOTS];
static CUmemoryPool pool_of(CUdeviceptr d) {
  for (int i = 0; i < FAKE_DMA_SLOTS; ++i)
    if (g_allocs[i].d != 0 && d >= g_allocs[i].d &&
        d < g_allocs[i].d + g_allocs[i].bytes)
      return g_allocs[i].pool;
  return NULL;
}
static CUresult f_cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t bytes,
                                          CUmemoryPool p, CUstream s) {
  if (p == NULL || s == NULL || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return refuse_in_capture(s);
  /* as the H200 driver answered for another thread's allocation during a
   * global capture (issue 11 GPU run) */
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  if (bytes > max_alloc()) return CUDA_ERROR_OUT_OF_MEMORY;
  int fail = take_failure(&g_fail_alloc);
  if (fail != 0) return (CUresult)fail;
  void *m = NULL;
  if (posix_memalign(&m, 256, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  count(&g_live_allocations, 1);
  *d = (CUdeviceptr)(uintptr_t)m;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_DMA_SLOTS; ++i)
    if (g_allocs[i].d == 0) {
      g_allocs[i].d = *d;
      g_allocs[i].bytes = bytes;
      g_allocs[i].pool = p;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
static int inside_module_global(CUdeviceptr d); /* below, with modules */
static unsigned long g_global_frees;
static CUresult f_cuMemFreeAsync(CUdeviceptr d, CUstream s) {
  if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return refuse_in_capture(s);
  if (d != 0 && inside_module_global(d)) {
    __atomic_fetch_add(&g_global_frees, 1, __ATOMIC_RELAXED);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (d != 0) count(&g_live_allocations, -1);
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_DMA_SLOTS; ++i)
    if (g_allocs[i].d == d) {
      g_allocs[i].d = 0;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  free((void *)(uintptr_t)d);
  return CUDA_SUCCESS;
}
/* A peer copy, stricter than the driver (which would fall back to a slower
 * path): both contexts must have peer access to each other, and the pool
 * of each allocation must have granted the other device access, else
 * CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, so a test sees a missing grant. */
static CUresult f_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dctx,
                                    CUdeviceptr src, CUcontext sctx, size_t n,
                                    CUstream s) {
  if (s == NULL || dctx == NULL || sctx == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  int dd = dctx->device, sd = sctx->device;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_mu);
  if (dd != sd) {
    CUmemoryPool dp = pool_of(d), sp = pool_of(src);
    if (!g_ctx_peer[dd][sd] || !g_ctx_peer[sd][dd] ||
        (dp != NULL && !(dp->access & (1u << sd))) ||
        (sp != NULL && !(sp->access & (1u << dd))))
      r = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  }
  if (r == CUDA_SUCCESS) ++g_peer_copies;
  pthread_mutex_unlock(&g_mu);
  if (r != CUDA_SUCCESS) return r;
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
/* The stream-operation log (fake_cuda_op_log): while enabled, memsets,
 * device-to-host copies and launches append one line each, in stream
 * order (every stream operation runs at once here). */
static int g_op_log_on;
static char g_op_log[8192];
static size_t g_op_log_len;
static void op_log(const char *fmt, unsigned long long a,
                   unsigned long long b) {
  pthread_mutex_lock(&g_mu);
  if (g_op_log_on && g_op_log_len < sizeof g_op_log) {
    int n = snprintf(g_op_log + g_op_log_len, sizeof g_op_log - g_op_log_len,
                     fmt, a, b);
    if (n > 0) g_op_log_len += (size_t)n;
    if (g_op_log_len >= sizeof g_op_log) g_op_log_len = sizeof g_op_log - 1;
  }
  pthread_mutex_unlock(&g_mu);
}
static CUresult f_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n,
                                  CUstream s) {
  if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return add_node(s, 1, (void *)(uintptr_t)d, NULL, n, v);
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}
static void memset32(CUdeviceptr d, unsigned v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    memcpy((char *)(uintptr_t)d + 4 * i, &v, sizeof v);
  op_log("memset32 %llx=%llu\n", (unsigned long long)d, v);
}
static CUresult f_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n,
                                   CUstream s) {
  if (s == NULL || d % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) {
    CUresult r = add_node(s, 3, (void *)(uintptr_t)d, NULL, n, 0);
    if (r == CUDA_SUCCESS) {
      pthread_mutex_lock(&g_mu);
      s->nodes[s->n_nodes - 1].value32 = v;
      pthread_mutex_unlock(&g_mu);
    }
    return r;
  }
  memset32(d, v, n);
  return CUDA_SUCCESS;
}
static CUresult f_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n,
                                    CUstream s) {
  if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return add_node(s, 2, (void *)(uintptr_t)d, h, n, 0);
  __atomic_fetch_add(&g_htod_calls, 1, __ATOMIC_RELAXED);
  memcpy((void *)(uintptr_t)d, h, n);
  note_dma(s, h, n);
  return CUDA_SUCCESS;
}
static CUresult f_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n,
                                    CUstream s) {
  if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return add_node(s, 2, h, (const void *)(uintptr_t)d, n, 0);
  __atomic_fetch_add(&g_dtoh_calls, 1, __ATOMIC_RELAXED);
  memcpy(h, (const void *)(uintptr_t)d, n);
  note_dma(s, h, n);
  op_log("dtoh %llx %llu\n", (unsigned long long)d, (unsigned long long)n);
  return CUDA_SUCCESS;
}
static CUresult f_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr src, size_t n,
                                    CUstream s) {
  if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s))
    return add_node(s, 2, (void *)(uintptr_t)d, (const void *)(uintptr_t)src, n,
                    0);
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
static CUresult f_cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  if (n > max_alloc()) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = malloc(n);
  if (*p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_DMA_SLOTS; ++i)
    if (g_pinned[i].p == NULL) { /* full: this one goes unmodelled */
      g_pinned[i].p = *p;
      g_pinned[i].bytes = n;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
static CUresult f_cuMemFreeHost(void *p) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_DMA_SLOTS; ++i) {
    if (g_pinned[i].p != p) continue;
    const unsigned char *lo = p, *hi = lo + g_pinned[i].bytes;
    for (int j = 0; j < FAKE_DMA_SLOTS; ++j)
      if (g_dma[j].stream != NULL && g_dma[j].seq > g_dma[j].stream->observed &&
          g_dma[j].host >= lo && g_dma[j].host < hi) {
        ++g_early_frees;
        g_dma[j].stream = NULL;
      }
    g_pinned[i].p = NULL;
    break;
  }
  pthread_mutex_unlock(&g_mu);
  free(p);
  return CUDA_SUCCESS;
}

/* Modules and launches: enough for the library to load and for argument
 * checks to run; kernels do nothing. A function named "no_such_*" is
 * absent. No cuFuncGetParamInfo: parameters are unknown, as with an older
 * driver. */
/* Module globals (cuModuleGetGlobal): any name not starting with
 * "no_such_" exists, 8 bytes when it ends in "64", 3 bytes when it ends in
 * "odd", 64 bytes when it ends in "table", else 4 (zero-initialized,
 * 8-aligned), inside the module's own memory: freed by cuModuleUnload, so
 * a use after an early unload is a use after free. A cuMemFreeAsync of an
 * address inside a module's globals is refused (CUDA_ERROR_INVALID_VALUE)
 * and counted (fake_cuda_global_frees()): a view must never be freed.
 * fake_cuda_kernel_writes() makes every later launch store a value into the
 * globals of a name, as a kernel that leaves its barrier counter dirty would.
 */
#define FAKE_GLOBALS 16
struct fake_global {
  char name[64];
  size_t bytes;
  _Alignas(8) unsigned char data[64];
};
struct CUmod_st {
  int loaded;
  struct fake_global globals[FAKE_GLOBALS];
};
#define FAKE_MODULES 64
static CUmodule g_modules[FAKE_MODULES]; /* live modules, for the writes */
static char g_kernel_writes_name[64];
static unsigned long long g_kernel_writes_value;
static int g_kernel_writes_on;
static unsigned long g_coop_launches, g_plain_launches, g_occupancy_calls;
struct CUfunc_st {
  int dynamic_shared;
  int cluster_dims[3]; /* compiled __cluster_dims__ (0: none) */
  int cluster_must_be_set;
  int non_portable;
};
static struct CUfunc_st g_function;
static int inside_module_global(CUdeviceptr d) {
  int inside = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_MODULES && !inside; ++i)
    if (g_modules[i] != NULL) {
      uintptr_t lo = (uintptr_t)g_modules[i]->globals;
      uintptr_t hi = lo + sizeof g_modules[i]->globals;
      inside = (uintptr_t)d >= lo && (uintptr_t)d < hi;
    }
  pthread_mutex_unlock(&g_mu);
  return inside;
}
/* cuMemGetAddressRange: the allocation holding `d`, as the driver answers
 * for its own memory: a stream-ordered allocation (g_allocs; one the full
 * table left unmodelled is unknown here), a module global (its own bytes)
 * or memory a test declared foreign (fake_cuda_foreign_add: as memory of
 * cuMemAlloc or another allocator of the driver). Anything else is
 * CUDA_ERROR_NOT_FOUND, what drivers answer for a pointer they do not know
 * (the documentation lists CUDA_ERROR_INVALID_VALUE). Counted
 * (fake_cuda_address_range_calls). */
#define FAKE_FOREIGN 64
static struct {
  uintptr_t p;
  size_t bytes;
} g_foreign[FAKE_FOREIGN];
static unsigned long g_address_range_calls;
static CUresult f_cuMemGetAddressRange(CUdeviceptr *base, size_t *size,
                                       CUdeviceptr d) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  __atomic_fetch_add(&g_address_range_calls, 1, __ATOMIC_RELAXED);
  uintptr_t lo = 0;
  size_t n = 0;
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_DMA_SLOTS && !found; ++i)
    if (g_allocs[i].d != 0 && d >= g_allocs[i].d &&
        d - g_allocs[i].d < g_allocs[i].bytes) {
      lo = (uintptr_t)g_allocs[i].d;
      n = g_allocs[i].bytes;
      found = 1;
    }
  for (int i = 0; i < FAKE_MODULES && !found; ++i)
    if (g_modules[i] != NULL)
      for (int k = 0; k < FAKE_GLOBALS && !found; ++k) {
        struct fake_global *g = &g_modules[i]->globals[k];
        uintptr_t at = (uintptr_t)g->data;
        if (g->name[0] != '\0' && d >= at && d - at < g->bytes) {
          lo = at;
          n = g->bytes;
          found = 1;
        }
      }
  for (int i = 0; i < FAKE_FOREIGN && !found; ++i)
    if (g_foreign[i].p != 0 && d >= g_foreign[i].p &&
        d - g_foreign[i].p < g_foreign[i].bytes) {
      lo = g_foreign[i].p;
      n = g_foreign[i].bytes;
      found = 1;
    }
  pthread_mutex_unlock(&g_mu);
  if (!found) return CUDA_ERROR_NOT_FOUND;
  if (base != NULL) *base = (CUdeviceptr)lo;
  if (size != NULL) *size = n;
  return CUDA_SUCCESS;
}
/* Declares `bytes` at `p` (host memory here) an allocation the driver
 * knows, until fake_cuda_foreign_remove(p). 0, or -1 when the table is
 * full. */
FAKE_API int fake_cuda_foreign_add(void *p, size_t bytes) {
  int r = -1;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_FOREIGN && r < 0; ++i)
    if (g_foreign[i].p == 0) {
      g_foreign[i].p = (uintptr_t)p;
      g_foreign[i].bytes = bytes;
      r = 0;
    }
  pthread_mutex_unlock(&g_mu);
  return r;
}
FAKE_API void fake_cuda_foreign_remove(void *p) {
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_FOREIGN; ++i)
    if (g_foreign[i].p == (uintptr_t)p) g_foreign[i].p = 0;
  pthread_mutex_unlock(&g_mu);
}
FAKE_API unsigned long fake_cuda_address_range_calls(void) {
  return __atomic_load_n(&g_address_range_calls, __ATOMIC_RELAXED);
}
/* cuMemFreeAsync calls refused for an address inside a module global. */
FAKE_API unsigned long fake_cuda_global_frees(void) {
  return __atomic_load_n(&g_global_frees, __ATOMIC_RELAXED);
}
static CUresult f_cuModuleLoadData(CUmodule *m, const void *image) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (image == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  CUmodule x = calloc(1, sizeof *x);
  if (x == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  x->loaded = 1;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_MODULES; ++i)
    if (g_modules[i] == NULL) {
      g_modules[i] = x;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  *m = x;
  return CUDA_SUCCESS;
}
static CUresult f_cuModuleUnload(CUmodule m) {
  if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (implicit_refusal()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_MODULES; ++i)
    if (g_modules[i] == m) g_modules[i] = NULL;
  pthread_mutex_unlock(&g_mu);
  free(m);
  return CUDA_SUCCESS;
}
/* The name the last cuModuleGetFunction was given
 * (fake_cuda_last_function). */
static char g_last_function[256];
static CUresult f_cuModuleGetFunction(CUfunction *f, CUmodule m,
                                      const char *name) {
  if (m == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  snprintf(g_last_function, sizeof g_last_function, "%s", name);
  pthread_mutex_unlock(&g_mu);
  if (strncmp(name, "no_such_", 8) == 0) return CUDA_ERROR_NOT_FOUND;
  *f = &g_function;
  return CUDA_SUCCESS;
}
static CUresult f_cuFuncGetAttribute(int *v, CUfunction_attribute a,
                                     CUfunction f) {
  if (f == NULL || v == NULL) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *v = f->dynamic_shared != 0 ? f->dynamic_shared : 48 * 1024;
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *v = f->cluster_dims[0]; break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    *v = f->cluster_dims[1];
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *v = f->cluster_dims[2]; break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    *v = f->cluster_must_be_set;
    break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    *v = f->non_portable;
    break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
static CUresult f_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a,
                                     int v) {
  if (f == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    f->dynamic_shared = v;
  if (a == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
    if (fake_cc() < 90) return CUDA_ERROR_NOT_SUPPORTED;
    f->non_portable = v;
  }
  return CUDA_SUCCESS;
}
static CUresult f_cuModuleGetGlobal(CUdeviceptr *d, size_t *bytes, CUmodule m,
                                    const char *name) {
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (m == NULL || name == NULL || (d == NULL && bytes == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  if (strncmp(name, "no_such_", 8) == 0) return CUDA_ERROR_NOT_FOUND;
  size_t len = strlen(name);
  if (len >= sizeof m->globals[0].name) return CUDA_ERROR_NOT_FOUND;
  struct fake_global *g = NULL;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_GLOBALS && g == NULL; ++i)
    if (strcmp(m->globals[i].name, name) == 0) g = &m->globals[i];
  for (int i = 0; i < FAKE_GLOBALS && g == NULL; ++i)
    if (m->globals[i].name[0] == '\0') {
      g = &m->globals[i];
      memcpy(g->name, name, len + 1);
      g->bytes = len >= 2 && strcmp(name + len - 2, "64") == 0      ? 8
                 : len >= 3 && strcmp(name + len - 3, "odd") == 0   ? 3
                 : len >= 5 && strcmp(name + len - 5, "table") == 0 ? 64
                                                                    : 4;
    }
  pthread_mutex_unlock(&g_mu);
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  if (d != NULL) *d = (CUdeviceptr)(uintptr_t)g->data;
  if (bytes != NULL) *bytes = g->bytes;
  return CUDA_SUCCESS;
}
/* What a launch "runs": the armed global writes (see above). */
static void run_kernel(void) {
  pthread_mutex_lock(&g_mu);
  if (g_kernel_writes_on)
    for (int i = 0; i < FAKE_MODULES; ++i)
      for (int j = 0; g_modules[i] != NULL && j < FAKE_GLOBALS; ++j) {
        struct fake_global *g = &g_modules[i]->globals[j];
        if (strcmp(g->name, g_kernel_writes_name) == 0)
          memcpy(g->data, &g_kernel_writes_value,
                 g->bytes < sizeof g_kernel_writes_value
                     ? g->bytes
                     : sizeof g_kernel_writes_value);
      }
  pthread_mutex_unlock(&g_mu);
}
/* The extents of the last launch (fake_cuda_last_launch), and, while
 * fake_cuda_record_param0(1) is on, the first 8 bytes of its first
 * parameter (fake_cuda_last_param0; a test that turns it on passes a
 * buffer or an 8-byte value first: nothing else is read). */
static unsigned g_last_launch[6];
static unsigned long long g_last_param0;
static int g_record_param0;
static CUresult f_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, CUstream s,
                                 void **params, void **extra) {
  (void)shared;
  (void)extra;
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (capturing(s)) return add_node(s, 0, NULL, NULL, gx, 0);
  if (f == NULL || s == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  g_last_launch[0] = gx, g_last_launch[1] = gy, g_last_launch[2] = gz;
  g_last_launch[3] = bx, g_last_launch[4] = by, g_last_launch[5] = bz;
  g_last_param0 = 0;
  if (g_record_param0 && params != NULL && params[0] != NULL)
    memcpy(&g_last_param0, params[0], sizeof g_last_param0);
  ++g_plain_launches;
  pthread_mutex_unlock(&g_mu);
  run_kernel();
  op_log("launch %llu %llu\n", (unsigned long long)gx, 0ull);
  return CUDA_SUCCESS;
}
static CUresult f_cuLaunchCooperativeKernel(CUfunction f, unsigned gx,
                                            unsigned gy, unsigned gz,
                                            unsigned bx, unsigned by,
                                            unsigned bz, unsigned shared,
                                            CUstream s, void **params) {
  (void)shared, (void)params;
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (f == NULL || s == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (capturing(s)) return add_node(s, 4, NULL, NULL, gx, 0);
  pthread_mutex_lock(&g_mu);
  int refuse = g_no_cooperative;
  if (!refuse) {
    g_last_launch[0] = gx, g_last_launch[1] = gy, g_last_launch[2] = gz;
    g_last_launch[3] = bx, g_last_launch[4] = by, g_last_launch[5] = bz;
    ++g_coop_launches;
  }
  pthread_mutex_unlock(&g_mu);
  if (refuse) return CUDA_ERROR_NOT_SUPPORTED;
  run_kernel();
  op_log("cooperative %llu %llu\n", (unsigned long long)gx, 0ull);
  return CUDA_SUCCESS;
}
/* cuLaunchKernelEx: the last launch's attributes (fake_cuda_last_launch_ex:
 * count, cluster x y z, programmatic) and the launches so far. */
static unsigned g_last_ex[5];
static unsigned long g_ex_launches;
/* The cluster of a configuration: 1 when it names one and writes `dims`,
 * 0 when none, -1 for an invalid one (CUDA_ERROR_INVALID_CLUSTER_SIZE). */
static int config_cluster(CUfunction f, const CUlaunchConfig *c,
                          unsigned dims[3], int *programmatic) {
  int named = 0;
  *programmatic = 0;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    const CUlaunchAttribute *a = &c->attrs[i];
    if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      dims[0] = a->value.clusterDim.x, dims[1] = a->value.clusterDim.y;
      dims[2] = a->value.clusterDim.z;
      named = 1;
    } else if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
      *programmatic = a->value.programmaticStreamSerializationAllowed != 0;
    } else {
      return -1;
    }
  }
  if (!named) return 0;
  if (f->cluster_dims[0] != 0)
    for (int i = 0; i < 3; ++i)
      if ((int)dims[i] != (f->cluster_dims[i] ? f->cluster_dims[i] : 1))
        return -1;
  unsigned blocks = dims[0] * dims[1] * dims[2];
  if (blocks == 0 || blocks > (f->non_portable ? 16u : 8u)) return -1;
  return 1;
}
static CUresult f_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f,
                                   void **params, void **extra) {
  (void)params, (void)extra;
  if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (c == NULL || f == NULL || c->hStream == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (fake_cc() < 90) return CUDA_ERROR_NOT_SUPPORTED;
  unsigned dims[3] = {1, 1, 1};
  int programmatic = 0;
  int cl = config_cluster(f, c, dims, &programmatic);
  if (cl < 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (cl > 0 && (c->gridDimX % dims[0] != 0 || c->gridDimY % dims[1] != 0 ||
                 c->gridDimZ % dims[2] != 0))
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (capturing(c->hStream))
    return add_node(c->hStream, 0, NULL, NULL, c->gridDimX, 0);
  pthread_mutex_lock(&g_mu);
  g_last_launch[0] = c->gridDimX, g_last_launch[1] = c->gridDimY;
  g_last_launch[2] = c->gridDimZ, g_last_launch[3] = c->blockDimX;
  g_last_launch[4] = c->blockDimY, g_last_launch[5] = c->blockDimZ;
  g_last_ex[0] = c->numAttrs;
  g_last_ex[1] = cl > 0 ? dims[0] : 0, g_last_ex[2] = cl > 0 ? dims[1] : 0;
  g_last_ex[3] = cl > 0 ? dims[2] : 0;
  g_last_ex[4] = (unsigned)programmatic;
  ++g_ex_launches;
  pthread_mutex_unlock(&g_mu);
  run_kernel();
  op_log("launch_ex %llu %llu\n", (unsigned long long)c->gridDimX,
         (unsigned long long)programmatic);
  return CUDA_SUCCESS;
}
static CUresult f_cuOccupancyMaxActiveClusters(int *n, CUfunction f,
                                               const CUlaunchConfig *c) {
  if (n == NULL || f == NULL || c == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned dims[3] = {1, 1, 1};
  int programmatic = 0;
  int cl = config_cluster(f, c, dims, &programmatic);
  if (cl < 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (cl == 0 && f->cluster_dims[0] != 0)
    for (int i = 0; i < 3; ++i)
      dims[i] = f->cluster_dims[i] ? (unsigned)f->cluster_dims[i] : 1u;
  else if (cl == 0)
    return CUDA_ERROR_INVALID_CLUSTER_SIZE; /* the size must be given */
  unsigned threads = c->blockDimX * c->blockDimY * c->blockDimZ;
  unsigned per_sm = threads == 0 ? 0 : 2048 / threads;
  if (per_sm > 32) per_sm = 32;
  /* 4 multiprocessors (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT). */
  *n = (int)(4 * per_sm / (dims[0] * dims[1] * dims[2]));
  return CUDA_SUCCESS;
}
static CUresult f_cuOccupancyMaxPotentialClusterSize(int *n, CUfunction f,
                                                     const CUlaunchConfig *c) {
  if (n == NULL || f == NULL || c == NULL) return CUDA_ERROR_INVALID_VALUE;
  *n = f->non_portable ? 16 : 8;
  return CUDA_SUCCESS;
}
static CUresult f_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n,
                                                              CUfunction f,
                                                              int block,
                                                              size_t shared) {
  if (f == NULL || block <= 0) return CUDA_ERROR_INVALID_VALUE;
  int by_threads = 2048 / block > 32 ? 32 : 2048 / block;
  /* 228 KiB of shared memory per multiprocessor. As on a device, no block
   * fits with more dynamic shared bytes than the function's limit (48 KiB
   * until cuFuncSetAttribute raised it). */
  size_t limit = f->dynamic_shared > 48 * 1024 ? (size_t)f->dynamic_shared
                                               : (size_t)48 * 1024;
  int by_shared = shared == 0      ? by_threads
                  : shared > limit ? 0
                                   : (int)((228u << 10) / shared);
  *n = by_threads < by_shared ? by_threads : by_shared;
  pthread_mutex_lock(&g_mu);
  ++g_occupancy_calls;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}
static CUresult f_cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block,
                                                   CUfunction f,
                                                   CUoccupancyB2DSize fn,
                                                   size_t shared, int limit) {
  (void)fn, (void)shared, (void)limit;
  if (f == NULL) return CUDA_ERROR_INVALID_VALUE;
  *min_grid = 264;
  *block = 256;
  return CUDA_SUCCESS;
}

#define E(n) {#n, (void *)f_##n, 2000},
/* Each row: a base name, its implementation and the CUDA version its
 * variant appeared in (2000: as old as anything the library asks for). A
 * name with several rows has variants; the newest not after the requested
 * version is returned. */
static const struct {
  const char *name;
  void *fn;
  int since;
} k_table[] = {
    {"cuStreamGetCtx", (void *)f_cuStreamGetCtx_v2, 12050},
    {"cuCtxGetDevice", (void *)f_cuCtxGetDevice_v2, 13000},
    E(cuInit) E(cuDriverGetVersion) E(cuGetErrorName) E(cuGetErrorString) E(
        cuDeviceGetCount) E(cuDeviceGet) E(cuDeviceGetName) E(cuDeviceGetUuid)
        E(cuDeviceGetAttribute) E(cuDeviceTotalMem) E(cuDeviceCanAccessPeer) E(
            cuDevicePrimaryCtxRetain) E(cuDevicePrimaryCtxRelease)
            E(cuDevicePrimaryCtxGetState) E(cuCtxGetCurrent) E(
                cuCtxSetCurrent) E(cuCtxGetDevice) E(cuCtxEnablePeerAccess)
                E(cuStreamCreate) E(cuStreamDestroy) E(cuStreamSynchronize) E(
                    cuStreamQuery) E(cuStreamWaitEvent) E(cuStreamGetCtx)
                    E(cuEventCreate) E(cuEventDestroy) E(cuEventRecord) E(
                        cuEventQuery) E(cuEventSynchronize) E(cuMemPoolCreate)
                        E(cuMemPoolDestroy) E(cuMemPoolSetAttribute) E(
                            cuMemPoolGetAttribute) E(cuMemPoolTrimTo)
                            E(cuMemAllocFromPoolAsync) E(cuMemFreeAsync) E(
                                cuMemPoolSetAccess) E(cuMemsetD8Async)
                                E(cuMemcpyHtoDAsync) E(cuMemcpyDtoHAsync) E(
                                    cuMemcpyDtoDAsync) E(cuMemcpyPeerAsync)
                                    E(cuMemHostAlloc) E(cuMemFreeHost) E(
                                        cuMemGetAddressRange) E(cuModuleLoadData)
                                        E(cuModuleUnload) E(cuModuleGetFunction) E(
                                            cuFuncGetAttribute) E(cuFuncSetAttribute)
                                            E(cuLaunchKernel) E(
                                                cuOccupancyMaxActiveBlocksPerMultiprocessor)
                                                E(cuOccupancyMaxPotentialBlockSize) E(
                                                    cuLaunchCooperativeKernel)
                                                    E(cuModuleGetGlobal) E(
                                                        cuMemsetD32Async) E(cuStreamBeginCapture)
                                                        E(cuStreamEndCapture) E(
                                                            cuStreamIsCapturing) E(cuThreadExchangeStreamCaptureMode)
                                                            E(cuGraphInstantiateWithFlags) E(
                                                                cuGraphLaunch) E(cuGraphExecDestroy)
                                                                E(cuGraphDestroy) E(
                                                                    cuGraphGetNodes)
                                                                    E(cuLaunchKernelEx) E(
                                                                        cuOccupancyMaxActiveClusters)
                                                                        E(cuOccupancyMaxPotentialClusterSize)
                                                                            E(cuCtxGetStreamPriorityRange)
                                                                                E(cuStreamCreateWithPriority)
                                                                                    E(cuStreamGetPriority)};
#undef E

#define FAKE_LOOKUPS 128
static struct {
  const char *name;
  int version;
} g_lookups[FAKE_LOOKUPS];

static void record_lookup(const char *symbol, int version) {
  pthread_mutex_lock(&g_mu);
  int slot = -1;
  for (int i = 0; i < FAKE_LOOKUPS && slot < 0; ++i)
    if (g_lookups[i].name == NULL || strcmp(g_lookups[i].name, symbol) == 0)
      slot = i;
  if (slot >= 0) {
    if (g_lookups[slot].name == NULL) g_lookups[slot].name = strdup(symbol);
    g_lookups[slot].version = version;
  }
  pthread_mutex_unlock(&g_mu);
}

/* The CUDA version `symbol` was last requested at (0: never). */
FAKE_API int fake_cuda_lookup_version(const char *symbol) {
  int v = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < FAKE_LOOKUPS && g_lookups[i].name != NULL; ++i)
    if (strcmp(g_lookups[i].name, symbol) == 0) v = g_lookups[i].version;
  pthread_mutex_unlock(&g_mu);
  return v;
}

/* Whether FAKE_CUDA_HIDE names `symbol` (a whole item of its list). */
static int hidden(const char *symbol) {
  const char *list = getenv("FAKE_CUDA_HIDE");
  size_t n = strlen(symbol);
  for (const char *p = list; p != NULL && *p != '\0';) {
    const char *end = strchr(p, ',');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, symbol, n) == 0) return 1;
    p = end != NULL ? end + 1 : NULL;
  }
  return 0;
}

FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                      int version, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *status) {
  (void)flags;
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  record_lookup(symbol, version);
  *pfn = NULL;
  if (hidden(symbol)) {
    if (status != NULL) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
  }
  /* As the driver documents: a version newer than the driver's. */
  if (version > driver_version()) return CUDA_ERROR_INVALID_VALUE;
  int best = -1, named = 0;
  for (size_t i = 0; i < sizeof k_table / sizeof k_table[0]; ++i) {
    if (strcmp(k_table[i].name, symbol) != 0) continue;
    named = 1;
    if (k_table[i].since > version || k_table[i].since > driver_version())
      continue;
    if (best < 0 || k_table[i].since > k_table[best].since) best = (int)i;
  }
  if (best >= 0) {
    *pfn = k_table[best].fn;
    if (status != NULL) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  if (status != NULL)
    *status = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                    : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  /* The driver documents CUDA_SUCCESS with a NULL pointer here. */
  return CUDA_SUCCESS;
}

/* Test controls (see the file comment). */
FAKE_API int fake_cuda_fail_next(const char *entry, int cu_result) {
  int *slot = NULL;
  if (strcmp(entry, "cuStreamCreate") == 0) slot = &g_fail_stream_create;
  if (strcmp(entry, "cuMemPoolCreate") == 0) slot = &g_fail_pool_create;
  if (strcmp(entry, "cuMemAllocFromPoolAsync") == 0) slot = &g_fail_alloc;
  if (slot == NULL || cu_result == 0) return -1;
  pthread_mutex_lock(&g_mu);
  *slot = cu_result;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* The grid and block extents (x, y, z each) of the last cuLaunchKernel. */
FAKE_API void fake_cuda_last_launch(unsigned dims[6]) {
  pthread_mutex_lock(&g_mu);
  memcpy(dims, g_last_launch, sizeof g_last_launch);
  pthread_mutex_unlock(&g_mu);
}
FAKE_API void fake_cuda_last_function(char *buf, size_t capacity) {
  pthread_mutex_lock(&g_mu);
  snprintf(buf, capacity, "%s", g_last_function);
  pthread_mutex_unlock(&g_mu);
}
FAKE_API void fake_cuda_record_param0(int on) {
  pthread_mutex_lock(&g_mu);
  g_record_param0 = on;
  pthread_mutex_unlock(&g_mu);
}
FAKE_API unsigned long long fake_cuda_last_param0(void) {
  pthread_mutex_lock(&g_mu);
  unsigned long long v = g_last_param0;
  pthread_mutex_unlock(&g_mu);
  return v;
}

/* Makes devices `a` and `b` peers (both ways) or not; before any runtime
 * uses them. */
FAKE_API void fake_cuda_set_peer(int a, int b, int peer) {
  if (a < 0 || a >= 16 || b < 0 || b >= 16) return;
  pthread_mutex_lock(&g_mu);
  g_not_peer[a][b] = g_not_peer[b][a] = (unsigned char)!peer;
  pthread_mutex_unlock(&g_mu);
}

/* Whether context peer access from device `from` to `to` was enabled. */
FAKE_API int fake_cuda_ctx_peer(int from, int to) {
  if (from < 0 || from >= 16 || to < 0 || to >= 16) return -1;
  pthread_mutex_lock(&g_mu);
  int r = g_ctx_peer[from][to];
  pthread_mutex_unlock(&g_mu);
  return r;
}

/* The devices (bits) granted access to pool `pool` (a CUmemoryPool). */
FAKE_API unsigned fake_cuda_pool_access(void *pool) {
  if (pool == NULL) return 0;
  pthread_mutex_lock(&g_mu);
  unsigned r = ((CUmemoryPool)pool)->access;
  pthread_mutex_unlock(&g_mu);
  return r;
}

/* "streams", "pools", "allocations" (stream-ordered, not yet freed),
 * "context_refs" (device 0) or "peer_copies" (peer copies that passed the
 * access check); the calls so far of cuMemcpyHtoDAsync ("htod_calls"),
 * cuMemcpyDtoHAsync ("dtoh_calls") and cuStreamSynchronize
 * ("stream_syncs"); -1 for another name. */
FAKE_API int fake_cuda_live(const char *what) {
  int n = -1;
  pthread_mutex_lock(&g_mu);
  if (strcmp(what, "streams") == 0) n = g_live_streams;
  if (strcmp(what, "pools") == 0) n = g_live_pools;
  if (strcmp(what, "allocations") == 0) n = g_live_allocations;
  if (strcmp(what, "context_refs") == 0) n = g_primary[0].refs;
  if (strcmp(what, "peer_copies") == 0) n = (int)g_peer_copies;
  if (strcmp(what, "htod_calls") == 0)
    n = (int)__atomic_load_n(&g_htod_calls, __ATOMIC_RELAXED);
  if (strcmp(what, "dtoh_calls") == 0)
    n = (int)__atomic_load_n(&g_dtoh_calls, __ATOMIC_RELAXED);
  if (strcmp(what, "stream_syncs") == 0)
    n = (int)__atomic_load_n(&g_stream_syncs, __ATOMIC_RELAXED);
  if (strcmp(what, "modules") == 0) {
    n = 0;
    for (int i = 0; i < FAKE_MODULES; ++i) n += g_modules[i] != NULL;
  }
  pthread_mutex_unlock(&g_mu);
  return n;
}

/* Cooperative launches and grid barriers (issue 11). */

/* Launches so far: cooperative (cuLaunchCooperativeKernel) or plain
 * (cuLaunchKernel); and occupancy queries. */
FAKE_API unsigned long fake_cuda_launch_count(int cooperative) {
  pthread_mutex_lock(&g_mu);
  unsigned long n = cooperative ? g_coop_launches : g_plain_launches;
  pthread_mutex_unlock(&g_mu);
  return n;
}
FAKE_API unsigned long fake_cuda_occupancy_calls(void) {
  pthread_mutex_lock(&g_mu);
  unsigned long n = g_occupancy_calls;
  pthread_mutex_unlock(&g_mu);
  return n;
}

/* Devices report CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH as !off, and
 * cuLaunchCooperativeKernel fails with NOT_SUPPORTED while off. */
FAKE_API void fake_cuda_set_no_cooperative(int off) {
  pthread_mutex_lock(&g_mu);
  g_no_cooperative = off;
  pthread_mutex_unlock(&g_mu);
}

/* Every later launch writes `value` (its width's low bytes) into the
 * globals named `name` of every live module; a NULL name stops it. */
FAKE_API void fake_cuda_kernel_writes(const char *name,
                                      unsigned long long value) {
  pthread_mutex_lock(&g_mu);
  g_kernel_writes_on = name != NULL && strlen(name) < 64;
  if (g_kernel_writes_on) {
    strcpy(g_kernel_writes_name, name);
    g_kernel_writes_value = value;
  }
  pthread_mutex_unlock(&g_mu);
}

/* Starts (on != 0, cleared) or stops the stream-operation log; copies the
 * log so far into `buf` (NUL-terminated, at most `cap` bytes) when given. */
FAKE_API void fake_cuda_op_log(int on, char *buf, size_t cap) {
  pthread_mutex_lock(&g_mu);
  if (buf != NULL && cap > 0) {
    size_t n = g_op_log_len < cap - 1 ? g_op_log_len : cap - 1;
    memcpy(buf, g_op_log, n);
    buf[n] = '\0';
  }
  if (on && !g_op_log_on) g_op_log_len = 0;
  g_op_log_on = on;
  pthread_mutex_unlock(&g_mu);
}

/* Launch attributes (issue 28). */

/* The function's compiled cluster dimensions (__cluster_dims__; 0 0 0:
 * none) and CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, for kernels looked
 * up after the call; and its non-portable attribute cleared. */
FAKE_API void fake_cuda_set_cluster_dims(int x, int y, int z, int must) {
  pthread_mutex_lock(&g_mu);
  g_function.cluster_dims[0] = x, g_function.cluster_dims[1] = y;
  g_function.cluster_dims[2] = z;
  g_function.cluster_must_be_set = must;
  g_function.non_portable = 0;
  pthread_mutex_unlock(&g_mu);
}
/* Whether the function's non-portable cluster attribute is set. */
FAKE_API int fake_cuda_non_portable(void) {
  pthread_mutex_lock(&g_mu);
  int v = g_function.non_portable;
  pthread_mutex_unlock(&g_mu);
  return v;
}
/* The last cuLaunchKernelEx: attribute count, cluster x y z (0 0 0: none),
 * programmatic; returns the cuLaunchKernelEx launches so far. */
FAKE_API unsigned long fake_cuda_last_launch_ex(unsigned out[5]) {
  pthread_mutex_lock(&g_mu);
  if (out != NULL) memcpy(out, g_last_ex, sizeof g_last_ex);
  unsigned long n = g_ex_launches;
  pthread_mutex_unlock(&g_mu);
  return n;
}
