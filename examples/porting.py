"""t4acuda porting recipes from Python (docs/porting.md), the same kernels
as examples/porting.cpp, each checked against NumPy. No -I option for a
toolkit header anywhere: cuda_fp16.h is found by the library.
  1. a template kernel, found by its name expression as a string;
  3. fp16: half2 arithmetic from cuda_fp16.h;
  4. a __constant__ table and a __device__ counter through module globals;
  5. a header on disk with host declarations, with -default-device;
  6. dynamic shared memory above 48 KiB.
Recipe 2 (cooperative groups, grid.sync()) needs a cooperative launch,
which the Python package does not wrap yet; examples/porting.cpp runs it.
Run: PYTHONPATH=bindings/python/src python3 examples/porting.py
Prints one line per recipe; exits 0 when every result matches.
SPDX-License-Identifier: MIT OR Apache-2.0"""

import os
import sys
import tempfile

import numpy as np

import t4acuda
from t4acuda import i32

ORIGIN = {1: "NVRTC", 2: "memory", 3: "disk"}


def report(recipe, ok, artifact):
    info = artifact.info()
    print(f"{recipe:<34} {'ok' if ok else 'WRONG'}  "
          f"({ORIGIN.get(info['origin'], '?')}, {info['compile_ns'] / 1e6:.1f} ms)")
    return ok


def template_kernel(rt):
    src = r"""
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
}"""
    art = t4acuda.compile(src, runtime=rt, name_expressions=["block_sums<256, true>"])
    mod = rt.load(art)
    n = 256 * 40
    x = (np.arange(n) % 7).astype(np.float32)
    dx, dsums = rt.upload(x), rt.alloc(n // 256 * 4)
    mod.kernel("block_sums<256,true>").launch(n // 256, 256, dx, dsums, i32(n))
    sums = dsums.download(np.float32)
    want = (x.astype(np.float64) ** 2).reshape(-1, 256).sum(axis=1)
    return report("1 template by name expression", np.array_equal(sums, want), art)


def fp16(rt):
    src = r"""
#include <cuda_fp16.h>
extern "C" __global__ void dot_half2(const float *x, const float *y,
                                     float *total, int pairs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  __half2 a = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
  __half2 b = __floats2half2_rn(y[2 * i], y[2 * i + 1]);
  __half2 p = __hmul2(a, b);
  atomicAdd(total, __low2float(p) + __high2float(p));
}"""
    art = t4acuda.compile(src, runtime=rt)
    mod = rt.load(art)
    pairs = 4096
    x = (0.25 * (np.arange(2 * pairs) % 4)).astype(np.float32)
    y = (0.5 * (np.arange(2 * pairs) % 3)).astype(np.float32)
    dx, dy, dt = rt.upload(x), rt.upload(y), rt.upload(np.zeros(1, np.float32))
    mod.kernel("dot_half2").launch(pairs // 256, 256, dx, dy, dt, i32(pairs))
    total = dt.download(np.float32)[0]
    want = float(np.dot(x.astype(np.float64), y.astype(np.float64)))
    return report("3 fp16 half2", float(total) == want, art)


def constant_table(rt):
    src = r"""
__constant__ float coeffs[4];
__device__ unsigned int evaluations;
extern "C" __global__ void poly(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  y[i] = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0];
  atomicAdd(&evaluations, 1u);
}"""
    art = t4acuda.compile(src, runtime=rt, options=["-fmad=false"])
    mod = rt.load(art)
    c = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    table = mod.get_global("coeffs", dtype=np.float32)
    table.upload(c)
    counter = mod.get_global("evaluations", dtype=np.uint32)
    counter.fill(0)
    n = 5000
    x = ((np.arange(n) % 9) - 4).astype(np.float32)
    dx, dy = rt.upload(x), rt.alloc(n * 4)
    mod.kernel("poly").launch((n + 255) // 256, 256, dx, dy, i32(n))
    y = dy.download(np.float32)
    want = ((c[3] * x + c[2]) * x + c[1]) * x + c[0]  # float32, no FMA
    ok = (counter.download(np.uint32)[0] == n and table.nbytes == 16
          and np.array_equal(y, want))
    return report("4 __constant__ table, __device__", ok, art)


def host_header(rt):
    with tempfile.TemporaryDirectory(prefix="t4acuda-porting-") as d:
        with open(os.path.join(d, "geometry.h"), "w") as f:
            f.write("#pragma once\n"
                    "struct Vec2 { float x, y; };\n"
                    "inline float dot(Vec2 a, Vec2 b) { return a.x * b.x + a.y * b.y; }\n"
                    "// For the host side only; never called on the device.\n"
                    "void print_vec(const Vec2 &v);\n")
        src = r"""
#include "geometry.h"
extern "C" __global__ void dots(const Vec2 *a, const Vec2 *b, float *out,
                                int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = dot(a[i], b[i]);
}"""
        art = t4acuda.compile(src, runtime=rt,
                              options=["-default-device", "-fmad=false", "-I" + d])
    mod = rt.load(art)
    n = 3000
    a = (np.arange(2 * n) % 5).astype(np.float32)
    b = ((np.arange(2 * n) % 6) - 2).astype(np.float32)
    da, db, dout = rt.upload(a), rt.upload(b), rt.alloc(n * 4)
    mod.kernel("dots").launch((n + 127) // 128, 128, da, db, dout, i32(n))
    out = dout.download(np.float32)
    want = a[0::2] * b[0::2] + a[1::2] * b[1::2]
    return report("5 host header, -default-device", np.array_equal(out, want), art)


def big_shared(rt):
    src = r"""
extern "C" __global__ void reverse_tiles(const float *in, float *out,
                                         int tile) {
  extern __shared__ float buf[];
  const float *src = in + static_cast<size_t>(blockIdx.x) * tile;
  for (int i = threadIdx.x; i < tile; i += blockDim.x) buf[i] = src[i];
  __syncthreads();
  float *dst = out + static_cast<size_t>(blockIdx.x) * tile;
  for (int i = threadIdx.x; i < tile; i += blockDim.x)
    dst[i] = buf[tile - 1 - i];
}"""
    art = t4acuda.compile(src, runtime=rt)
    mod = rt.load(art)
    tile, blocks = 16384, 8  # 64 KiB of shared memory per block
    x = np.arange(tile * blocks, dtype=np.float32)
    din, dout = rt.upload(x), rt.alloc(x.nbytes)
    mod.kernel("reverse_tiles").launch(blocks, 256, din, dout, i32(tile),
                                       shared=tile * 4)
    out = dout.download(np.float32)
    want = x.reshape(blocks, tile)[:, ::-1].reshape(-1)
    return report("6 dynamic shared memory, 64 KiB", np.array_equal(out, want), art)


def main():
    rt = t4acuda.Runtime()
    try:
        results = [f(rt) for f in (template_kernel, fp16, constant_table,
                                   host_header, big_shared)]
        rt.synchronize()
    finally:
        rt.close()
    ok = all(results)
    print("all recipes match NumPy" if ok else "some recipes are WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
