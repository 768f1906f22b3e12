// t4acuda-porting: the recipes of docs/porting.md ("Porting a CUDA
// kernel"), each a kernel written for this project, run through the C++
// facade and checked against the CPU. No -I option anywhere: the toolkit
// headers (cuda_fp16.h, cooperative_groups.h) are found by the library.
//   1. a template kernel, found by its name expression as a string;
//   2. cooperative groups: grid.sync() in a cooperative launch;
//   3. fp16: half2 arithmetic from cuda_fp16.h;
//   4. a __constant__ table and a __device__ counter through module globals;
//   5. a header on disk with host declarations, compiled with
//      -default-device (and cached on disk by its content);
//   6. dynamic shared memory above 48 KiB.
// Prints one line per recipe; exits 0 when every result matches.
// SPDX-License-Identifier: MIT OR Apache-2.0
#define T4A_EXPERIMENTAL
#include <t4acuda.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

int g_failures = 0;

void report(const char *recipe, bool ok, const t4a::Artifact &a) {
  t4a_artifact_info info = a.info();
  static const char *const k_origin[] = {"?", "NVRTC", "memory", "disk"};
  std::printf("%-34s %s  (%s, %.1f ms)\n", recipe, ok ? "ok" : "WRONG",
              k_origin[info.origin < 4 ? info.origin : 0],
              static_cast<double>(info.compile_ns) / 1e6);
  if (!ok) ++g_failures;
}

// 1. A template kernel: block sums of x or x*x, picked by its expression.
void template_kernel(t4a::Runtime &rt) {
  const char *src = R"(
template <int Block, bool Square>
__global__ void block_sums(const float *in, float *out, int n) {
  __shared__ float s[Block];
  int i = blockIdx.x * Block + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  s[threadIdx.x] = Square ? v * v : v;
  __syncthreads();
  for (int w = Block / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
})";
  t4a::Artifact a = t4a::compile(
      t4a::CompileRequest(src).for_runtime(rt).with_name_expression(
          "block_sums<256, true>"));
  t4a::Module m(rt, a);
  const int n = 256 * 40;
  std::vector<float> x(n), sums(n / 256);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7);
  t4a::DeviceArray<float> dx(rt, x), dsums(rt, sums);
  m.kernel("block_sums<256,true>").launch(rt, n / 256, 256, dx, dsums, n);
  dsums.download(rt, sums);
  bool ok = true;
  for (int b = 0; b < n / 256; ++b) {
    float want = 0;
    for (int i = b * 256; i < (b + 1) * 256; ++i) want += x[i] * x[i];
    ok = ok && sums[b] == want;
  }
  report("1 template by name expression", ok, a);
}

// 2. Cooperative groups: double every element, grid.sync(), then one
// thread sums them.
void cooperative_groups(t4a::Runtime &rt) {
  const char *src = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void double_then_sum(int *data, int *total, int n) {
  cg::grid_group grid = cg::this_grid();
  for (int i = grid.thread_rank(); i < n; i += grid.size()) data[i] *= 2;
  grid.sync();
  if (grid.thread_rank() == 0) {
    int s = 0;
    for (int i = 0; i < n; ++i) s += data[i];
    *total = s;
  }
})";
  t4a::Artifact a = t4a::compile(t4a::CompileRequest(src).for_runtime(rt));
  t4a::Module m(rt, a);
  t4a::Kernel k = m.kernel("double_then_sum");
  const int n = 100000, block = 256;
  int blocks = k.max_cooperative_blocks(block, 0);
  if (blocks > 64) blocks = 64;
  std::vector<int> data(n), total(1, 0);
  long long want = 0;
  for (int i = 0; i < n; ++i) {
    data[i] = i % 11;
    want += 2 * (i % 11);
  }
  t4a::DeviceArray<int> dd(rt, data), dt(rt, total);
  k.launch(rt, t4a::LaunchConfig(blocks, block).cooperative(), dd, dt, n);
  dt.download(rt, total);
  std::vector<int> doubled = dd.to_vector(rt);
  bool ok = total[0] == want;
  for (int i = 0; i < n && ok; ++i) ok = doubled[i] == 2 * (i % 11);
  report("2 cooperative groups, grid.sync()", ok, a);
}

// 3. fp16: each thread multiplies two pairs as half2 and adds the four
// products into a float total (values chosen so half is exact).
void fp16(t4a::Runtime &rt) {
  const char *src = R"(
#include <cuda_fp16.h>
extern "C" __global__ void dot_half2(const float *x, const float *y,
                                     float *total, int pairs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  __half2 a = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
  __half2 b = __floats2half2_rn(y[2 * i], y[2 * i + 1]);
  __half2 p = __hmul2(a, b);
  atomicAdd(total, __low2float(p) + __high2float(p));
})";
  t4a::Artifact a = t4a::compile(t4a::CompileRequest(src).for_runtime(rt));
  t4a::Module m(rt, a);
  const int pairs = 4096;
  std::vector<float> x(2 * pairs), y(2 * pairs), total(1, 0.0f);
  double want = 0;
  for (int i = 0; i < 2 * pairs; ++i) {
    x[i] = 0.25f * static_cast<float>(i % 4);
    y[i] = 0.5f * static_cast<float>(i % 3);
    want += static_cast<double>(x[i]) * y[i];
  }
  t4a::DeviceArray<float> dx(rt, x), dy(rt, y), dt(rt, total);
  m.kernel("dot_half2").launch(rt, pairs / 256, 256, dx, dy, dt, pairs);
  dt.download(rt, total);
  report("3 fp16 half2", static_cast<double>(total[0]) == want, a);
}

// 4. A __constant__ table written through a module global, and a
// __device__ counter read back through another.
void constant_table(t4a::Runtime &rt) {
  const char *src = R"(
__constant__ float coeffs[4];
__device__ unsigned int evaluations;
extern "C" __global__ void poly(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  y[i] = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0];
  atomicAdd(&evaluations, 1u);
})";
  t4a::Artifact a = t4a::compile(t4a::CompileRequest(src).for_runtime(rt));
  t4a::Module m(rt, a);
  const std::vector<float> c = {1.0f, -2.0f, 0.5f, 3.0f};
  t4a::Buffer table = m.global("coeffs");
  t4a::upload(rt, table, c);
  t4a::Buffer counter = m.global("evaluations");
  t4a::fill(rt, counter, 0, sizeof(unsigned int), 0);
  const int n = 5000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 9) - 4.0f;
  t4a::DeviceArray<float> dx(rt, x), dy(rt, y);
  m.kernel("poly").launch(rt, (n + 255) / 256, 256, dx, dy, n);
  dy.download(rt, y);
  std::vector<unsigned int> evaluations(1);
  t4a::download(rt, counter, evaluations);
  bool ok = evaluations[0] == static_cast<unsigned>(n) &&
            table.size() == 4 * sizeof(float);
  for (int i = 0; i < n && ok; ++i) {
    float v = x[i];
    ok = y[i] == ((c[3] * v + c[2]) * v + c[1]) * v + c[0];
  }
  report("4 __constant__ table, __device__", ok, a);
}

// 5. A header on disk shared with host code: host declarations, and
// functions without __device__, compiled with -default-device.
void host_header(t4a::Runtime &rt) {
  char dir[] = "/tmp/t4acuda-porting-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    ++g_failures;
    return;
  }
  const std::string header = std::string(dir) + "/geometry.h";
  std::ofstream(header) << "#pragma once\n"
                           "struct Vec2 { float x, y; };\n"
                           "inline float dot(Vec2 a, Vec2 b) {\n"
                           "  return a.x * b.x + a.y * b.y;\n"
                           "}\n"
                           "// For the host side only; never called on the "
                           "device.\n"
                           "void print_vec(const Vec2 &v);\n";
  const char *src = R"(
#include "geometry.h"
extern "C" __global__ void dots(const Vec2 *a, const Vec2 *b, float *out,
                                int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = dot(a[i], b[i]);
})";
  t4a::Artifact a = t4a::compile(t4a::CompileRequest(src)
                                     .for_runtime(rt)
                                     .with_option("-default-device")
                                     .with_option(std::string("-I") + dir));
  t4a::Module m(rt, a);
  const int n = 3000;
  std::vector<float> av(2 * n), bv(2 * n), out(n);
  for (int i = 0; i < 2 * n; ++i) {
    av[i] = static_cast<float>(i % 5);
    bv[i] = static_cast<float>(i % 6) - 2.0f;
  }
  t4a::DeviceArray<float> da(rt, av), db(rt, bv), dout(rt, out);
  m.kernel("dots").launch(rt, (n + 127) / 128, 128, da, db, dout, n);
  dout.download(rt, out);
  bool ok = true;
  for (int i = 0; i < n && ok; ++i)
    ok = out[i] == av[2 * i] * bv[2 * i] + av[2 * i + 1] * bv[2 * i + 1];
  report("5 host header, -default-device", ok, a);
  std::remove(header.c_str());
  rmdir(dir);
}

// 6. Dynamic shared memory above 48 KiB: each block reverses a 64 KiB
// tile in shared memory (the library raises the kernel's limit).
void big_shared(t4a::Runtime &rt) {
  const char *src = R"(
extern "C" __global__ void reverse_tiles(const float *in, float *out,
                                         int tile) {
  extern __shared__ float buf[];
  const float *src = in + static_cast<size_t>(blockIdx.x) * tile;
  for (int i = threadIdx.x; i < tile; i += blockDim.x) buf[i] = src[i];
  __syncthreads();
  float *dst = out + static_cast<size_t>(blockIdx.x) * tile;
  for (int i = threadIdx.x; i < tile; i += blockDim.x)
    dst[i] = buf[tile - 1 - i];
})";
  t4a::Artifact a = t4a::compile(t4a::CompileRequest(src).for_runtime(rt));
  t4a::Module m(rt, a);
  const int tile = 16384, blocks = 8; // 64 KiB of shared memory per block
  std::vector<float> in(tile * blocks), out(tile * blocks);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  t4a::DeviceArray<float> din(rt, in), dout(rt, out);
  m.kernel("reverse_tiles")
      .launch(rt, t4a::LaunchConfig(blocks, 256, tile * sizeof(float)), din,
              dout, tile);
  dout.download(rt, out);
  bool ok = true;
  for (int b = 0; b < blocks && ok; ++b)
    for (int i = 0; i < tile && ok; ++i)
      ok = out[b * tile + i] == in[b * tile + tile - 1 - i];
  report("6 dynamic shared memory, 64 KiB", ok, a);
}

// 7. Thread block clusters (Hopper): each block of a cluster of 4 reads
// the next block's shared tile through distributed shared memory
// (cooperative_groups::this_cluster(), map_shared_rank). Skipped on
// devices below compute capability 9.0.
void clusters(t4a::Runtime &rt) {
  t4a_device_info di = T4A_DEVICE_INFO_INIT;
  if (t4a_device_info_get(rt.info().device_ordinal, &di) != T4A_SUCCESS ||
      di.cc_major < 9) {
    std::printf("%-34s skipped (compute capability %d.%d)\n", "7 clusters",
                di.cc_major, di.cc_minor);
    return;
  }
  const char *src = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void rotate_tiles(const int *in, int *out) {
  __shared__ int tile[128];
  cg::cluster_group cluster = cg::this_cluster();
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = in[g];
  cluster.sync();
  unsigned next = (cluster.block_rank() + 1) % cluster.num_blocks();
  out[g] = cluster.map_shared_rank(tile, next)[threadIdx.x];
  cluster.sync(); // keep this block's tile until every reader is done
})";
  t4a::Artifact a = t4a::compile(t4a::CompileRequest(src).for_runtime(rt));
  t4a::Module m(rt, a);
  const int blocks = 64, cl = 4;
  std::vector<int> in(blocks * 128), out(blocks * 128);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 7);
  t4a::DeviceArray<int> din(rt, in), dout(rt, out);
  m.kernel("rotate_tiles")
      .launch(rt, t4a::LaunchConfig(blocks, 128).cluster(cl), din, dout);
  dout.download(rt, out);
  bool ok = true;
  for (int b = 0; b < blocks && ok; ++b) {
    int next = b - b % cl + (b % cl + 1) % cl;
    for (int t = 0; t < 128 && ok; ++t)
      ok = out[b * 128 + t] == in[next * 128 + t];
  }
  report("7 clusters, distributed shared", ok, a);
}

} // namespace

int main() {
  try {
    t4a::Runtime rt(t4a::RuntimeOptions{});
    template_kernel(rt);
    cooperative_groups(rt);
    fp16(rt);
    constant_table(rt);
    host_header(rt);
    big_shared(rt);
    clusters(rt);
  } catch (const t4a::Error &e) {
    std::fprintf(stderr, "t4acuda-porting: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", g_failures == 0 ? "all recipes match the CPU"
                                      : "some recipes are WRONG");
  return g_failures == 0 ? 0 : 1;
}
