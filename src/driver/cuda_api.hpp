// The CUDA driver: loaded with dlopen on first need, entry points resolved
// through cuGetProcAddress, each at the CUDA version of the ABI variant it
// is called as (driver/entry_points.def). This header is the only place above
// the driver layer's .cpp files that names entry points: everything else calls
// the typed wrappers below, which return a DrvResult carrying the CUresult and
// the entry point's name.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <string>
#include <type_traits>

#include "driver/fault_injection.hpp"

namespace t4a::driver {

enum class Entry : int {
#define X(name, version, required) name,
#include "driver/entry_points.def"
#undef X
  count_
};

struct CudaTable {
#define X(name, version, required) PFN_##name##_v##version name = nullptr;
#include "driver/entry_points.def"
#undef X
};
// The variant requested is the one the calling code (written against
// cuda.h) calls: a mismatch does not compile.
#define X(name, version, required)                                             \
  static_assert(std::is_same_v<PFN_##name##_v##version, decltype(&::name)>,    \
                #name " at " #version " is not the variant cuda.h declares");
#include "driver/entry_points.def"
#undef X

extern CudaTable g_cuda; // valid once loaded
// Indexed by Entry. Visible here so that a wrapper's entry name folds to a
// constant: a driver call reads no table for it.
inline constexpr const char *k_entry_names[] = {
#define X(name, version, required) #name,
#include "driver/entry_points.def"
#undef X
};

// The outcome of one driver call: the CUresult and which entry point.
struct DrvResult {
  CUresult code = CUDA_SUCCESS;
  const char *entry = "";
  explicit operator bool() const { return code == CUDA_SUCCESS; }
};

// Loading state. `load()` is idempotent and thread-safe; it returns
// LoadState::Ready once libcuda is loaded, its required entry points are
// resolved and cuInit succeeded (or reported no device).
enum class LoadState { Ready, NoDriver };
struct LoadOutcome {
  LoadState state;
  const std::string *reason; // when NoDriver: libraries tried, symbol, cuInit
  CUresult init_result;      // cuInit's result (CUDA_ERROR_NO_DEVICE is Ready)
};
LoadOutcome load();
// Fork safety (core/fork.hpp), in a forked child: when the parent had begun
// loading the driver, every later load() reports NoDriver with `reason`
// (the once-flag and the driver are not touched again). Returns whether
// it does.
bool refuse_in_forked_child(const char *reason);
// Whether an optional entry point was resolved.
bool has(Entry e);
// The CUDA version an entry point is requested at (its ABI variant).
int entry_version(Entry e);
// The driver's cuDriverGetVersion, once loaded (0 before).
int loaded_driver_version();
// One line per optional entry point the loaded driver lacks: its name, the
// CUDA version it needs and what is unavailable without it ("" if none or
// not loaded).
std::string lacking_entry_points();
// "the CUDA driver (CUDA 12.0) lacks cuFuncGetParamInfo, which needs CUDA
// 12.4": the text of an UNSUPPORTED for a missing optional entry point.
std::string lacks_text(Entry e);
// The driver's error name and description for a CUresult ("" if unknown).
const char *error_name(CUresult r);
const char *error_string(CUresult r);

template <class F, class... A>
inline DrvResult invoke(Entry e, F fn, A... args) {
#if defined(T4A_TESTING)
  if (fault::g_active.load(std::memory_order_relaxed)) {
    fault::Decision d = fault::on_call(static_cast<int>(e));
    if (d.mode == fault::Mode::Instead)
      return {static_cast<CUresult>(d.result), k_entry_names[int(e)]};
    if (d.mode == fault::Mode::After) {
      (void)fn(args...);
      return {static_cast<CUresult>(d.result), k_entry_names[int(e)]};
    }
  }
#endif
  return {fn(args...), k_entry_names[static_cast<int>(e)]};
}

#define T4A_CU(name, ...) invoke(Entry::name, g_cuda.name, __VA_ARGS__)

// Stream captures begun in the process and not yet ended (any mode; the
// library's own count, core/capture.cpp keeps it). While it is non-zero, the
// "potentially unsafe" calls below (host waits and queries, pinned host
// allocation, module loads and unloads, pool trims, stream-ordered
// allocation and free, stream and event creation and destruction) run with the
// calling thread's capture mode exchanged to relaxed: CUDA refuses them in
// every thread while any global-mode capture is active
// (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), even on streams the capture never
// touches. The library never makes them on a capturing stream (those
// operations return T4A_ERROR_CAPTURING first), so relaxing is safe. When
// the count is zero this costs one relaxed load.
extern std::atomic<int> g_active_captures;
class RelaxedCaptureMode {
public:
  RelaxedCaptureMode() {
    if (g_active_captures.load(std::memory_order_relaxed) == 0) [[likely]]
      return;
    if (g_cuda.cuThreadExchangeStreamCaptureMode == nullptr) return;
    mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
    swapped_ = g_cuda.cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS;
  }
  ~RelaxedCaptureMode() {
    // Restoring the thread's own earlier mode cannot fail in a way the
    // caller could act on; the call that needed relaxing has its result.
    if (swapped_) (void)g_cuda.cuThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode &) = delete;
  RelaxedCaptureMode &operator=(const RelaxedCaptureMode &) = delete;

private:
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool swapped_ = false;
};
#define T4A_CU_RELAXED(name, ...)                                              \
  (RelaxedCaptureMode{}, invoke(Entry::name, g_cuda.name, __VA_ARGS__))

// ---- Typed wrappers, grouped like the driver documentation. ----
namespace cu {
// Version management.
inline DrvResult driver_get_version(int *v) {
  return T4A_CU(cuDriverGetVersion, v);
}
// Device management.
inline DrvResult device_get_count(int *n) {
  return T4A_CU(cuDeviceGetCount, n);
}
inline DrvResult device_get(CUdevice *d, int ordinal) {
  return T4A_CU(cuDeviceGet, d, ordinal);
}
inline DrvResult device_get_name(char *buf, int len, CUdevice d) {
  return T4A_CU(cuDeviceGetName, buf, len, d);
}
inline DrvResult device_get_uuid(CUuuid *u, CUdevice d) {
  return T4A_CU(cuDeviceGetUuid, u, d);
}
inline DrvResult device_get_attribute(int *v, CUdevice_attribute a,
                                      CUdevice d) {
  return T4A_CU(cuDeviceGetAttribute, v, a, d);
}
inline DrvResult device_total_mem(size_t *bytes, CUdevice d) {
  return T4A_CU(cuDeviceTotalMem, bytes, d);
}
inline DrvResult device_can_access_peer(int *can, CUdevice d, CUdevice peer) {
  return T4A_CU(cuDeviceCanAccessPeer, can, d, peer);
}
// Makes `peer`'s memory accessible from the current context (one way).
inline DrvResult ctx_enable_peer_access(CUcontext peer, unsigned flags) {
  return T4A_CU(cuCtxEnablePeerAccess, peer, flags);
}
// Primary context management.
inline DrvResult primary_ctx_retain(CUcontext *c, CUdevice d) {
  return T4A_CU(cuDevicePrimaryCtxRetain, c, d);
}
inline DrvResult primary_ctx_release(CUdevice d) {
  return T4A_CU(cuDevicePrimaryCtxRelease, d);
}
inline DrvResult primary_ctx_get_state(CUdevice d, unsigned *flags,
                                       int *active) {
  return T4A_CU(cuDevicePrimaryCtxGetState, d, flags, active);
}
// Context management.
inline DrvResult ctx_get_current(CUcontext *c) {
  return T4A_CU(cuCtxGetCurrent, c);
}
inline DrvResult ctx_set_current(CUcontext c) {
  return T4A_CU(cuCtxSetCurrent, c);
}
// Stream management.
inline DrvResult stream_create(CUstream *s, unsigned flags) {
  return T4A_CU_RELAXED(cuStreamCreate, s, flags);
}
inline DrvResult stream_create_with_priority(CUstream *s, unsigned flags,
                                             int priority) {
  return T4A_CU_RELAXED(cuStreamCreateWithPriority, s, flags, priority);
}
// The context's stream priorities: `least` (the default, 0) down to
// `greatest` (a negative number on devices with priorities).
inline DrvResult ctx_get_stream_priority_range(int *least, int *greatest) {
  return T4A_CU(cuCtxGetStreamPriorityRange, least, greatest);
}
inline DrvResult stream_get_priority(CUstream s, int *priority) {
  return T4A_CU(cuStreamGetPriority, s, priority);
}
inline DrvResult stream_destroy(CUstream s) {
  return T4A_CU_RELAXED(cuStreamDestroy, s);
}
inline DrvResult stream_synchronize(CUstream s) {
  return T4A_CU_RELAXED(cuStreamSynchronize, s);
}
inline DrvResult stream_query(CUstream s) {
  return T4A_CU_RELAXED(cuStreamQuery, s);
}
inline DrvResult stream_wait_event(CUstream s, CUevent e, unsigned flags) {
  return T4A_CU(cuStreamWaitEvent, s, e, flags);
}
inline DrvResult stream_get_ctx(CUstream s, CUcontext *c) {
  return T4A_CU(cuStreamGetCtx, s, c);
}
// Event management.
inline DrvResult event_create(CUevent *e, unsigned flags) {
  return T4A_CU_RELAXED(cuEventCreate, e, flags);
}
inline DrvResult event_destroy(CUevent e) {
  return T4A_CU_RELAXED(cuEventDestroy, e);
}
inline DrvResult event_record(CUevent e, CUstream s) {
  return T4A_CU(cuEventRecord, e, s);
}
inline DrvResult event_query(CUevent e) {
  return T4A_CU_RELAXED(cuEventQuery, e);
}
inline DrvResult event_synchronize(CUevent e) {
  return T4A_CU_RELAXED(cuEventSynchronize, e);
}
// Stream-ordered memory allocator.
inline DrvResult mem_pool_create(CUmemoryPool *p, const CUmemPoolProps *props) {
  return T4A_CU(cuMemPoolCreate, p, props);
}
inline DrvResult mem_pool_destroy(CUmemoryPool p) {
  return T4A_CU(cuMemPoolDestroy, p);
}
inline DrvResult mem_pool_set_attribute(CUmemoryPool p, CUmemPool_attribute a,
                                        void *v) {
  return T4A_CU(cuMemPoolSetAttribute, p, a, v);
}
inline DrvResult mem_pool_get_attribute(CUmemoryPool p, CUmemPool_attribute a,
                                        void *v) {
  return T4A_CU(cuMemPoolGetAttribute, p, a, v);
}
inline DrvResult mem_pool_trim_to(CUmemoryPool p, size_t keep) {
  return T4A_CU_RELAXED(cuMemPoolTrimTo, p, keep);
}
inline DrvResult mem_alloc_from_pool_async(CUdeviceptr *d, size_t bytes,
                                           CUmemoryPool p, CUstream s) {
  return T4A_CU_RELAXED(cuMemAllocFromPoolAsync, d, bytes, p, s);
}
inline DrvResult mem_free_async(CUdeviceptr d, CUstream s) {
  return T4A_CU_RELAXED(cuMemFreeAsync, d, s);
}
// Memory management.
inline DrvResult memset_d8_async(CUdeviceptr d, unsigned char v, size_t n,
                                 CUstream s) {
  return T4A_CU(cuMemsetD8Async, d, v, n, s);
}
inline DrvResult memset_d32_async(CUdeviceptr d, unsigned v, size_t n,
                                  CUstream s) {
  return T4A_CU(cuMemsetD32Async, d, v, n, s);
}
inline DrvResult memcpy_htod_async(CUdeviceptr d, const void *h, size_t n,
                                   CUstream s) {
  return T4A_CU(cuMemcpyHtoDAsync, d, h, n, s);
}
inline DrvResult memcpy_dtoh_async(void *h, CUdeviceptr d, size_t n,
                                   CUstream s) {
  return T4A_CU(cuMemcpyDtoHAsync, h, d, n, s);
}
inline DrvResult memcpy_dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                   CUstream s) {
  return T4A_CU(cuMemcpyDtoDAsync, dst, src, n, s);
}
inline DrvResult memcpy_peer_async(CUdeviceptr dst, CUcontext dst_ctx,
                                   CUdeviceptr src, CUcontext src_ctx, size_t n,
                                   CUstream s) {
  return T4A_CU(cuMemcpyPeerAsync, dst, dst_ctx, src, src_ctx, n, s);
}
inline DrvResult mem_pool_set_access(CUmemoryPool p, const CUmemAccessDesc *map,
                                     size_t count) {
  return T4A_CU(cuMemPoolSetAccess, p, map, count);
}
inline DrvResult mem_host_alloc(void **p, size_t n, unsigned flags) {
  return T4A_CU_RELAXED(cuMemHostAlloc, p, n, flags);
}
inline DrvResult mem_free_host(void *p) {
  return T4A_CU_RELAXED(cuMemFreeHost, p);
}
// The base and size of the allocation holding `d` (memory the driver does
// not know: INVALID_VALUE or NOT_FOUND).
inline DrvResult mem_get_address_range(CUdeviceptr *base, size_t *size,
                                       CUdeviceptr d) {
  return T4A_CU(cuMemGetAddressRange, base, size, d);
}
// Modules, kernels and launches.
inline DrvResult module_load_data(CUmodule *m, const void *image) {
  return T4A_CU_RELAXED(cuModuleLoadData, m, image);
}
inline DrvResult module_unload(CUmodule m) {
  return T4A_CU_RELAXED(cuModuleUnload, m);
}
inline DrvResult module_get_function(CUfunction *f, CUmodule m,
                                     const char *name) {
  return T4A_CU(cuModuleGetFunction, f, m, name);
}
inline DrvResult func_get_attribute(int *v, CUfunction_attribute a,
                                    CUfunction f) {
  return T4A_CU(cuFuncGetAttribute, v, a, f);
}
inline DrvResult func_set_attribute(CUfunction f, CUfunction_attribute a,
                                    int v) {
  return T4A_CU(cuFuncSetAttribute, f, a, v);
}
// Optional: check has(Entry::cuFuncGetParamInfo) first.
inline DrvResult func_get_param_info(CUfunction f, size_t index, size_t *offset,
                                     size_t *size) {
  return T4A_CU(cuFuncGetParamInfo, f, index, offset, size);
}
inline DrvResult launch_kernel(CUfunction f, const unsigned grid[3],
                               const unsigned block[3], unsigned shared,
                               CUstream s, void **params) {
  return T4A_CU(cuLaunchKernel, f, grid[0], grid[1], grid[2], block[0],
                block[1], block[2], shared, s, params, nullptr);
}
// Optional: check has(Entry::cuLaunchCooperativeKernel) first.
inline DrvResult launch_cooperative_kernel(CUfunction f, const unsigned grid[3],
                                           const unsigned block[3],
                                           unsigned shared, CUstream s,
                                           void **params) {
  return T4A_CU(cuLaunchCooperativeKernel, f, grid[0], grid[1], grid[2],
                block[0], block[1], block[2], shared, s, params);
}
// Optional: check has(Entry::cuLaunchKernelEx) first.
inline DrvResult launch_kernel_ex(const CUlaunchConfig *c, CUfunction f,
                                  void **params) {
  return T4A_CU(cuLaunchKernelEx, c, f, params, nullptr);
}
// Optional: check has(Entry::cuOccupancyMaxActiveClusters) and
// has(Entry::cuOccupancyMaxPotentialClusterSize) first.
inline DrvResult occupancy_max_active_clusters(int *n, CUfunction f,
                                               const CUlaunchConfig *c) {
  return T4A_CU(cuOccupancyMaxActiveClusters, n, f, c);
}
inline DrvResult occupancy_max_potential_cluster_size(int *n, CUfunction f,
                                                      const CUlaunchConfig *c) {
  return T4A_CU(cuOccupancyMaxPotentialClusterSize, n, f, c);
}
inline DrvResult module_get_global(CUdeviceptr *d, size_t *bytes, CUmodule m,
                                   const char *name) {
  return T4A_CU(cuModuleGetGlobal, d, bytes, m, name);
}
inline DrvResult occupancy_max_active_blocks(int *n, CUfunction f, int block,
                                             size_t shared) {
  return T4A_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, n, f, block,
                shared);
}
inline DrvResult occupancy_max_potential_block_size(int *min_grid, int *block,
                                                    CUfunction f,
                                                    size_t shared) {
  return T4A_CU(cuOccupancyMaxPotentialBlockSize, min_grid, block, f, nullptr,
                shared, 0);
}
// Stream capture and graphs: optional, check has(Entry::...) first.
inline DrvResult stream_begin_capture(CUstream s, CUstreamCaptureMode mode) {
  return T4A_CU(cuStreamBeginCapture, s, mode);
}
inline DrvResult stream_end_capture(CUstream s, CUgraph *g) {
  return T4A_CU(cuStreamEndCapture, s, g);
}
inline DrvResult stream_is_capturing(CUstream s, CUstreamCaptureStatus *st) {
  return T4A_CU(cuStreamIsCapturing, s, st);
}
inline DrvResult graph_instantiate(CUgraphExec *e, CUgraph g) {
  return T4A_CU(cuGraphInstantiateWithFlags, e, g, 0);
}
inline DrvResult graph_launch(CUgraphExec e, CUstream s) {
  return T4A_CU(cuGraphLaunch, e, s);
}
inline DrvResult graph_exec_destroy(CUgraphExec e) {
  return T4A_CU_RELAXED(cuGraphExecDestroy, e);
}
inline DrvResult graph_destroy(CUgraph g) {
  return T4A_CU_RELAXED(cuGraphDestroy, g);
}
inline DrvResult graph_get_nodes(CUgraph g, size_t *n) {
  return T4A_CU(cuGraphGetNodes, g, nullptr, n);
}
} // namespace cu

#undef T4A_CU
#undef T4A_CU_RELAXED

} // namespace t4a::driver
