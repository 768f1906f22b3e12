// Row groups of the benchmark that live in their own files; main()
// (t4acuda_bench.cpp) calls each when its group is enabled.
#pragma once

#include <cstdio>
#include <string>

#include "harness.hpp"

namespace bench {

// The source of module m of the alternating and scaling rows: axpy4
// (y[i] += a * x[i] + m + 1) with a per-module constant, so that each
// source is a distinct artifact and module.
inline std::string module_source(int m) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "extern \"C\" __global__ void axpy4(float *y, const float *x,\n"
                "                                    int n, float a) {\n"
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) y[i] += a * x[i] + %d.0f;\n"
                "}\n",
                m + 1);
  return buf;
}

// bench/scaling_rows.cpp (group "scaling"): how cost grows with the
// number of alternating modules, live handles, threads and cached
// artifacts.
void scaling_rows(const Context &c);

// bench/graph_coop_rows.cpp (called from the launch rows, so group
// "launch"): graph replay against raw cuGraphLaunch, a chain of 100
// launches as one graph against the same launches one by one, and
// cooperative launches (with and without a declared grid barrier) against
// raw cuLaunchCooperativeKernel.
void graph_rows(t4a_runtime rt, CUstream stream, const t4a_launch_desc &d4,
                CUfunction f4, void **params, int reps, bool quick);
void cooperative_rows(t4a_runtime rt, CUstream stream,
                      const t4a_compile_request &cr, int reps, bool quick);

// bench/cluster_rows.cpp (called from the launch rows, so group
// "launch"; compute capability 9.0 and later): a cluster launch against
// raw cuLaunchKernelEx, and chains of 1,000 small kernels with
// programmatic dependent launch against raw and against plain launches.
void cluster_rows(t4a_runtime rt, CUstream stream,
                  const t4a_compile_request &cr, int reps, bool quick);

// bench/transfer_sweep.cpp (group "sweep"): host transfers 4 B .. 256 MiB.
void transfer_sweep_rows(const Context &c);

} // namespace bench
