// Issue 11's rows: graph replay (group "launch") and cooperative launches,
// each against the raw driver calls they wrap.
#include <cuda.h>

#include <cstdio>
#include <string>

#include "bench_rows.hpp"
#include "harness.hpp"
#include "t4acuda.h"

namespace bench {

#define DRV_FN(name) decltype(&::name) name = nullptr

// ---- graphs (issue 11): self-contained, called once from main ----
// Replay of a graph captured through t4a_capture_begin/end against raw
// cuGraphLaunch of the same chain captured with the raw driver; and a chain
// of 100 small launches replayed as one graph against the same launches one
// by one (per-kernel microseconds).
void graph_rows(t4a_runtime rt, CUstream stream, const t4a_launch_desc &d4,
                CUfunction f4, void **params, int reps, bool quick) {
  struct {
    DRV_FN(cuStreamBeginCapture);
    DRV_FN(cuStreamEndCapture);
    DRV_FN(cuGraphInstantiateWithFlags);
    DRV_FN(cuGraphLaunch);
    DRV_FN(cuGraphExecDestroy);
    DRV_FN(cuGraphDestroy);
  } g{};
#define GET(name) g.name = raw_fn<decltype(&::name)>(#name)
  GET(cuStreamBeginCapture);
  GET(cuStreamEndCapture);
  GET(cuGraphInstantiateWithFlags);
  GET(cuGraphLaunch);
  GET(cuGraphExecDestroy);
  GET(cuGraphDestroy);
#undef GET
  const bool ok = g.cuStreamBeginCapture && g.cuStreamEndCapture &&
                  g.cuGraphInstantiateWithFlags && g.cuGraphLaunch &&
                  g.cuGraphExecDestroy && g.cuGraphDestroy;
  if (!ok) {
    std::fprintf(stderr, "bench: no graph entry points; graph rows skipped\n");
    return;
  }
  auto sync = [&] { check_cu(raw.cuStreamSynchronize(stream), "sync"); };
  auto capture = [&](int links, t4a_graph *out) {
    check(t4a_capture_begin(rt, nullptr), "capture begin");
    for (int i = 0; i < links; ++i) check(t4a_launch(rt, &d4), "launch");
    check(t4a_capture_end(rt, out), "capture end");
  };
  auto raw_capture = [&](int links, CUgraph *graph, CUgraphExec *exec) {
    check_cu(g.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
             "raw begin capture");
    for (int i = 0; i < links; ++i)
      check_cu(raw.cuLaunchKernel(f4, 1, 1, 1, 256, 1, 1, 0, stream, params,
                                  nullptr),
               "raw launch");
    check_cu(g.cuStreamEndCapture(stream, graph), "raw end capture");
    check_cu(g.cuGraphInstantiateWithFlags(exec, *graph, 0), "instantiate");
  };
  // Replay vs raw replay, a chain of 10 launches each.
  t4a_graph g10{};
  capture(10, &g10);
  CUgraph rg = nullptr;
  CUgraphExec rx = nullptr;
  raw_capture(10, &rg, &rx);
  latency(
      "graph replay, 10 launches", reps, quick ? 500 : 2000,
      [&] { check(t4a_graph_launch(rt, g10), "graph launch"); },
      [&] { check_cu(g.cuGraphLaunch(rx, stream), "raw graph launch"); }, sync,
      1.05);
  // 100 launches: one graph replay vs one by one; per kernel.
  constexpr int k_chain = 100;
  t4a_graph g100{};
  capture(k_chain, &g100);
  Row &r = latency(
      "chain of 100 launches: graph vs one by one (per kernel)", reps,
      quick ? 50 : 200,
      [&] { check(t4a_graph_launch(rt, g100), "graph launch"); },
      [&] {
        for (int i = 0; i < k_chain; ++i) check(t4a_launch(rt, &d4), "launch");
      },
      sync, 0.25);
  for (Stats *s : {&r.ours, &r.raw}) {
    s->min /= k_chain;
    s->median /= k_chain;
    s->max /= k_chain;
  }
  sync();
  check(t4a_runtime_synchronize(rt), "sync");
  check(t4a_graph_release(g10), "graph release");
  check(t4a_graph_release(g100), "graph release");
  check_cu(g.cuGraphExecDestroy(rx), "raw exec destroy");
  check_cu(g.cuGraphDestroy(rg), "raw graph destroy");
}

// Cooperative launches (issue 11): t4a_launch with T4A_LAUNCH_COOPERATIVE
// against raw cuLaunchCooperativeKernel of the same kernel at the same
// (maximum co-resident) grid; then the same with a declared grid-barrier
// counter (reset before, audit copy after) against raw
// cuMemsetD32Async + cuLaunchCooperativeKernel + cuMemcpyDtoHAsync into
// pinned memory. The raw entry points outside the harness's table come
// from raw_fn(). `cr` is a compile request for
// the runtime's device (its source is replaced).
void cooperative_rows(t4a_runtime rt, CUstream stream,
                      const t4a_compile_request &cr, int reps, bool quick) {
  auto coop = raw_fn<decltype(&::cuLaunchCooperativeKernel)>(
      "cuLaunchCooperativeKernel");
  auto getglobal = raw_fn<decltype(&::cuModuleGetGlobal)>("cuModuleGetGlobal");
  auto memset32 = raw_fn<decltype(&::cuMemsetD32Async)>("cuMemsetD32Async");
  if (coop == nullptr || getglobal == nullptr || memset32 == nullptr) {
    std::fprintf(stderr, "bench: cooperative rows: no cooperative launch, "
                         "module global or memset entry point\n");
    return;
  }
  // The rest is in the raw table (harness.hpp).
  auto load = raw.cuModuleLoadData;
  auto getfn = raw.cuModuleGetFunction;
  auto dtoh = raw.cuMemcpyDtoHAsync;
  auto host_alloc = raw.cuMemHostAlloc;
  static const char *const src =
      "extern \"C\" {\n"
      "__device__ unsigned int bench_bar;\n"
      "__global__ void coop_empty(unsigned *p) { if (p) *p = 0; }\n"
      "__global__ void coop_barrier(unsigned *p) { if (p) *p = 0; }\n"
      "}\n";
  t4a_compile_request r = cr;
  r.source = src;
  r.cache_dir = nullptr;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact art{};
  check(t4a_compile(&r, &art), "compile (cooperative)");
  t4a_module m{};
  check(t4a_module_load(rt, art, &m), "module load (cooperative)");
  t4a_kernel k{}, kb{};
  check(t4a_kernel_get(m, "coop_empty", &k), "kernel coop_empty");
  check(t4a_kernel_get(m, "coop_barrier", &kb), "kernel coop_barrier");
  t4a_barrier_desc bd = T4A_BARRIER_DESC_INIT;
  bd.global_name = "bench_bar";
  check(t4a_kernel_declare_barrier(kb, &bd, nullptr), "declare barrier");
  size_t bytes = 0;
  check(t4a_artifact_image(art, nullptr, 0, &bytes), "image size");
  std::vector<unsigned char> image(bytes + 1, 0);
  check(t4a_artifact_image(art, image.data(), image.size(), &bytes), "image");
  CUmodule rm = nullptr;
  CUfunction rf = nullptr, rfb = nullptr;
  CUdeviceptr bar = 0;
  size_t bar_bytes = 0;
  void *slot = nullptr;
  check_cu(load(&rm, image.data()), "raw load (cooperative)");
  check_cu(getfn(&rf, rm, "coop_empty"), "raw coop_empty");
  check_cu(getfn(&rfb, rm, "coop_barrier"), "raw coop_barrier");
  check_cu(getglobal(&bar, &bar_bytes, rm, "bench_bar"), "raw bench_bar");
  check_cu(host_alloc(&slot, 8, 0), "raw pinned slot");
  int32_t max = 0;
  check(t4a_kernel_max_cooperative_blocks(k, 256, 0, &max), "max blocks");
  const unsigned grid = static_cast<unsigned>(max);
  CUdeviceptr none = 0;
  t4a_arg arg = T4A_ARG_INIT;
  arg.kind = T4A_ARG_DEVICE_POINTER;
  arg.device_pointer = 0;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.flags = T4A_LAUNCH_COOPERATIVE;
  d.kernel = k;
  d.grid[0] = grid;
  d.block[0] = 256;
  d.args = &arg;
  d.arg_count = 1;
  void *params[1] = {&none};
  auto sync = [&] { check_cu(raw.cuStreamSynchronize(stream), "sync"); };
  char name[96];
  std::snprintf(name, sizeof name, "cooperative launch, %u blocks", grid);
  latency(
      name, reps, quick ? 500 : 2000,
      [&] { check(t4a_launch(rt, &d), "cooperative launch"); },
      [&] {
        check_cu(coop(rf, grid, 1, 1, 256, 1, 1, 0, stream, params),
                 "raw cooperative launch");
      },
      sync, 1.05);
  t4a_launch_desc db = d;
  db.kernel = kb;
  std::snprintf(name, sizeof name,
                "cooperative launch + barrier reset/audit, %u blocks", grid);
  latency(
      name, reps, quick ? 500 : 2000,
      [&] { check(t4a_launch(rt, &db), "cooperative launch (barrier)"); },
      [&] {
        check_cu(memset32(bar, 0, 1, stream), "raw reset");
        check_cu(coop(rfb, grid, 1, 1, 256, 1, 1, 0, stream, params),
                 "raw cooperative launch");
        check_cu(dtoh(slot, bar, 4, stream), "raw audit copy");
      },
      sync, 1.10);
  sync();
  // Printed at once too (the table comes at the end of the whole run).
  for (size_t i = rows().size() - 2; i < rows().size(); ++i)
    std::printf("%s: %.3f us vs raw %.3f us (%.3fx)\n", rows()[i].name.c_str(),
                rows()[i].ours.median, rows()[i].raw.median, rows()[i].ratio);
  std::fflush(stdout);
  t4a_barrier_audit a = T4A_BARRIER_AUDIT_INIT;
  check(t4a_kernel_barrier_audit(kb, 0, &a), "barrier audit");
  if (a.failures != 0)
    std::fprintf(stderr, "bench: %llu barrier audits failed\n",
                 static_cast<unsigned long long>(a.failures));
  // The raw module and pinned slot are left to process exit (the bench's
  // other raw modules are too); the t4acuda objects are released.
  check(t4a_kernel_release(k), "release");
  check(t4a_kernel_release(kb), "release");
  check(t4a_module_release(m), "release");
  check(t4a_artifact_release(art), "release");
}

} // namespace bench
