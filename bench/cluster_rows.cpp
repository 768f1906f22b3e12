// Hopper launch attributes (issue 28, called from the launch rows, so
// group "launch"; only on devices of compute capability 9.0 and later):
// a cluster launch through t4a_launch_ex against raw cuLaunchKernelEx of
// the same kernel and attributes; a chain of 1,000 small dependent
// kernels with programmatic dependent launch against the same chain
// through raw cuLaunchKernelEx; and the chain with PDL against the chain
// without it, both through t4acuda (the caller's choice, reported, no
// target). Chains are timed to completion (enqueue and a stream
// synchronize) and reported per kernel.
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_rows.hpp"
#include "harness.hpp"

namespace bench {

namespace {

// cluster_empty: an empty kernel launched in clusters. step: a small
// dependent kernel (64 Ki elements, 16 blocks): waits for the previous
// grid (a no-op without PDL), adds 1, lets the next grid start.
const char *const k_src =
    "extern \"C\" __global__ void cluster_empty(unsigned *p) {\n"
    "  if (p) *p = 0;\n"
    "}\n"
    "extern \"C\" __global__ void step(unsigned *x, unsigned n) {\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) x[i] += 1;\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "}\n";

} // namespace

void cluster_rows(t4a_runtime rt, CUstream stream,
                  const t4a_compile_request &cr, int reps, bool quick) {
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  check(t4a_runtime_info_get(rt, &info), "runtime info");
  t4a_device_info di = T4A_DEVICE_INFO_INIT;
  check(t4a_device_info_get(info.device_ordinal, &di), "device info");
  if (di.cc_major < 9) {
    std::fprintf(stderr,
                 "bench: cluster rows need compute capability 9.0 "
                 "(the device is %d.%d); skipped\n",
                 di.cc_major, di.cc_minor);
    return;
  }
  auto launch_ex = raw_fn<decltype(&::cuLaunchKernelEx)>("cuLaunchKernelEx");
  if (launch_ex == nullptr) {
    std::fprintf(stderr, "bench: cluster rows: no cuLaunchKernelEx\n");
    return;
  }
  t4a_compile_request r = cr;
  r.source = k_src;
  r.cache_dir = nullptr;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact art{};
  check(t4a_compile(&r, &art), "compile (cluster)");
  t4a_module m{};
  check(t4a_module_load(rt, art, &m), "module load (cluster)");
  t4a_kernel ke{}, ks{};
  check(t4a_kernel_get(m, "cluster_empty", &ke), "kernel cluster_empty");
  check(t4a_kernel_get(m, "step", &ks), "kernel step");
  size_t bytes = 0;
  check(t4a_artifact_image(art, nullptr, 0, &bytes), "image size");
  std::vector<unsigned char> image(bytes + 1, 0);
  check(t4a_artifact_image(art, image.data(), image.size(), &bytes), "image");
  CUmodule rm = nullptr;
  CUfunction rfe = nullptr, rfs = nullptr;
  check_cu(raw.cuModuleLoadData(&rm, image.data()), "raw load (cluster)");
  check_cu(raw.cuModuleGetFunction(&rfe, rm, "cluster_empty"), "raw kernel");
  check_cu(raw.cuModuleGetFunction(&rfs, rm, "step"), "raw kernel");
  auto sync = [&] { check_cu(raw.cuStreamSynchronize(stream), "sync"); };

  // ---- a cluster launch: 264 blocks of 128 threads in clusters of 2 ----
  t4a_arg arg = T4A_ARG_INIT;
  arg.kind = T4A_ARG_DEVICE_POINTER;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = ke;
  d.grid[0] = 264;
  d.block[0] = 128;
  d.args = &arg;
  d.arg_count = 1;
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  CUdeviceptr none = 0;
  void *params[1] = {&none};
  CUlaunchAttribute ra[1];
  std::memset(ra, 0, sizeof ra);
  ra[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  ra[0].value.clusterDim.x = 2;
  ra[0].value.clusterDim.y = 1;
  ra[0].value.clusterDim.z = 1;
  CUlaunchConfig rc;
  std::memset(&rc, 0, sizeof rc);
  rc.gridDimX = 264, rc.gridDimY = 1, rc.gridDimZ = 1;
  rc.blockDimX = 128, rc.blockDimY = 1, rc.blockDimZ = 1;
  rc.hStream = stream;
  rc.attrs = ra;
  rc.numAttrs = 1;
  latency(
      "cluster launch, 264 blocks in clusters of 2", reps, quick ? 1000 : 5000,
      [&] { check(t4a_launch_ex(rt, &d, &a), "cluster launch"); },
      [&] { check_cu(launch_ex(&rc, rfe, params, nullptr), "raw cluster"); },
      sync, 1.04);
  // Informational rows that split the cluster row: the same launches 200
  // per synchronize (the queue never fills: host enqueue cost alone), the
  // same kernel and grid without a cluster through both paths, and raw
  // with a cluster against raw without one (what a cluster costs the
  // driver).
  latency(
      "cluster launch, 200 per synchronize (enqueue only)", reps, 200,
      [&] { check(t4a_launch_ex(rt, &d, &a), "cluster launch"); },
      [&] { check_cu(launch_ex(&rc, rfe, params, nullptr), "raw cluster"); },
      sync, 0);
  latency(
      "the cluster row's kernel and grid without a cluster (cuLaunchKernel)",
      reps, quick ? 1000 : 5000, [&] { check(t4a_launch(rt, &d), "launch"); },
      [&] {
        check_cu(raw.cuLaunchKernel(rfe, 264, 1, 1, 128, 1, 1, 0, stream,
                                    params, nullptr),
                 "raw launch");
      },
      sync, 0);
  latency(
      "raw: cuLaunchKernelEx with a cluster vs cuLaunchKernel without", reps,
      quick ? 1000 : 5000,
      [&] { check_cu(launch_ex(&rc, rfe, params, nullptr), "raw cluster"); },
      [&] {
        check_cu(raw.cuLaunchKernel(rfe, 264, 1, 1, 128, 1, 1, 0, stream,
                                    params, nullptr),
                 "raw launch");
      },
      sync, 0);

  // ---- chains of 1,000 small dependent kernels ----
  constexpr int k_chain = 1000;
  unsigned n = 1u << 16;
  t4a_buffer x{};
  check(t4a_buffer_alloc(rt, n * 4ull, 0, &x), "chain buffer");
  t4a_buffer_info bi = T4A_BUFFER_INFO_INIT;
  check(t4a_buffer_info_get(x, &bi), "chain buffer info");
  CUdeviceptr xp = static_cast<CUdeviceptr>(bi.device_pointer);
  t4a_arg sa[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
  sa[0].kind = T4A_ARG_BUFFER;
  sa[0].buffer = x;
  sa[1].kind = T4A_ARG_SCALAR;
  sa[1].value = &n;
  sa[1].size = sizeof n;
  t4a_launch_desc ds = T4A_LAUNCH_DESC_INIT;
  ds.kernel = ks;
  ds.grid[0] = 16;
  ds.block[0] = 256;
  ds.args = sa;
  ds.arg_count = 2;
  t4a_launch_attrs pdl = T4A_LAUNCH_ATTRS_INIT;
  pdl.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  void *sparams[2] = {&xp, &n};
  CUlaunchAttribute pa[1];
  std::memset(pa, 0, sizeof pa);
  pa[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  pa[0].value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig pc;
  std::memset(&pc, 0, sizeof pc);
  pc.gridDimX = 16, pc.gridDimY = 1, pc.gridDimZ = 1;
  pc.blockDimX = 256, pc.blockDimY = 1, pc.blockDimZ = 1;
  pc.hStream = stream;
  pc.attrs = pa;
  pc.numAttrs = 1;
  auto per_kernel = [&](Row &row) {
    for (Stats *s : {&row.ours, &row.raw}) {
      s->min /= k_chain;
      s->median /= k_chain;
      s->max /= k_chain;
    }
  };
  const int iters = quick ? 2 : 5;
  Row &r1 = latency(
      "programmatic chain of 1000 kernels vs raw cuLaunchKernelEx (per "
      "kernel, to completion)",
      reps, iters,
      [&] {
        for (int i = 0; i < k_chain; ++i)
          check(t4a_launch_ex(rt, &ds, &pdl), "programmatic launch");
        sync();
      },
      [&] {
        for (int i = 0; i < k_chain; ++i)
          check_cu(launch_ex(&pc, rfs, sparams, nullptr), "raw programmatic");
        sync();
      },
      sync, 0);
  per_kernel(r1);
  Row &r2 = latency(
      "chain of 1000 kernels: programmatic vs plain, both t4acuda (per "
      "kernel, to completion)",
      reps, iters,
      [&] {
        for (int i = 0; i < k_chain; ++i)
          check(t4a_launch_ex(rt, &ds, &pdl), "programmatic launch");
        sync();
      },
      [&] {
        for (int i = 0; i < k_chain; ++i)
          check(t4a_launch(rt, &ds), "plain launch");
        sync();
      },
      sync, 0);
  per_kernel(r2);
  for (size_t i = rows().size() - 6; i < rows().size(); ++i)
    std::printf("%s: %.3f us vs %.3f us (%.3fx)\n", rows()[i].name.c_str(),
                rows()[i].ours.median, rows()[i].raw.median, rows()[i].ratio);
  std::fflush(stdout);
  // The raw module is left to process exit (as the other rows' are).
  check(t4a_buffer_release(x), "release");
  check(t4a_kernel_release(ke), "release");
  check(t4a_kernel_release(ks), "release");
  check(t4a_module_release(m), "release");
  check(t4a_artifact_release(art), "release");
}

} // namespace bench
