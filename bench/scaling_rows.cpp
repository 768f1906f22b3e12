// The scaling rows (group "scaling"): how the cost of an operation grows
// with the number of alternating modules, live handles, threads and
// cached artifacts, each paired with the raw driver call where there is
// one. Every row carries a series name and an x value; bench/plot.py
// draws cost against count per series.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_rows.hpp"
#include "harness.hpp"
#include "t4acuda.h"

namespace bench {

namespace {

constexpr int k_threads_per_block = 256;

// Compiles module_source(first .. last-1) into arts[first..], `workers`
// threads at a time (NVRTC is the slow part: ~75 ms each), through a disk
// cache in the benchmark's scratch directory, so that the second and
// later runs read them from disk.
void compile_range(const Context &c, std::vector<t4a_artifact> &arts, int first,
                   int last, unsigned workers) {
  const std::string dir = scratch_dir() + "/compile-cache";
  std::atomic<int> next{first};
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < std::max(1u, workers); ++w)
    pool.emplace_back([&] {
      for (int m = next++; m < last; m = next++) {
        std::string src = module_source(m);
        t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
        r.source = src.c_str();
        r.runtime = c.rt;
        r.cache_dir = dir.c_str();
        check(t4a_compile(&r, &arts[m]), "compile (scaling)");
      }
    });
  for (std::thread &t : pool) t.join();
}

// Memory-cache hits cycling over the first `cached` sources: per-call us,
// `reps` samples of `n` hits each.
std::vector<double> memory_hits(const Context &c, int cached, int n, int reps) {
  std::vector<std::string> srcs;
  for (int m = 0; m < cached; ++m) srcs.push_back(module_source(m));
  const std::string dir = scratch_dir() + "/compile-cache";
  std::vector<double> out;
  for (int r = 0; r < reps; ++r) {
    double t = now_us();
    for (int i = 0; i < n; ++i) {
      t4a_compile_request q = T4A_COMPILE_REQUEST_INIT;
      q.source = srcs[size_t(i) % srcs.size()].c_str();
      q.runtime = c.rt;
      q.cache_dir = dir.c_str();
      t4a_artifact a{};
      check(t4a_compile(&q, &a), "memory hit");
      check(t4a_artifact_release(a), "release");
    }
    out.push_back((now_us() - t) / n);
  }
  return out;
}

std::vector<unsigned char> image_of(t4a_artifact a) {
  size_t bytes = 0;
  check(t4a_artifact_image(a, nullptr, 0, &bytes), "image size");
  std::vector<unsigned char> img(bytes + 1, 0);
  check(t4a_artifact_image(a, img.data(), img.size(), &bytes), "image");
  return img;
}

// The 4 arguments of axpy4 for buffers y, x.
struct Args4 {
  int n = k_threads_per_block;
  float a = 2.0f;
  t4a_arg args[4] = {T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT};
  CUdeviceptr py = 0, px = 0;
  void *params[4] = {&py, &px, &n, &a};
  Args4(t4a_buffer y, t4a_buffer x) {
    args[0].kind = T4A_ARG_BUFFER;
    args[0].buffer = y;
    args[1].kind = T4A_ARG_BUFFER;
    args[1].buffer = x;
    args[2].kind = T4A_ARG_SCALAR;
    args[2].value = &n;
    args[2].size = sizeof n;
    args[3].kind = T4A_ARG_SCALAR;
    args[3].value = &a;
    args[3].size = sizeof a;
    t4a_buffer_info i = T4A_BUFFER_INFO_INIT;
    check(t4a_buffer_info_get(y, &i), "buffer info");
    py = i.device_pointer;
    check(t4a_buffer_info_get(x, &i), "buffer info");
    px = i.device_pointer;
  }
  Args4(const Args4 &) = delete;
  t4a_launch_desc desc(t4a_kernel k) {
    t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
    d.kernel = k;
    d.grid[0] = 1;
    d.block[0] = k_threads_per_block;
    d.arg_count = 4;
    d.args = args;
    return d;
  }
};

// Aggregate launches per second of `threads` threads, each launching `n`
// times on its own runtime (ours) or its own raw stream (raw), started
// together; M launches/s over the wall time until every thread's stream
// is idle.
struct ThreadSide {
  t4a_runtime rt{};
  t4a_kernel kernel{};
  t4a_buffer y{}, x{};
  CUstream raw_stream = nullptr;
};

double aggregate_rate(const Context &c, std::vector<ThreadSide> &sides,
                      CUfunction rf, bool ours, int n) {
  const size_t threads = sides.size();
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (size_t t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      ThreadSide &s = sides[t];
      Args4 a4(s.y, s.x);
      t4a_launch_desc d = a4.desc(s.kernel);
      check_cu(raw.cuCtxSetCurrent(c.ctx), "cuCtxSetCurrent");
      ready++;
      while (!go.load(std::memory_order_acquire)) {
      }
      if (ours) {
        for (int i = 0; i < n; ++i) check(t4a_launch(s.rt, &d), "launch");
        check(t4a_runtime_synchronize(s.rt), "sync");
      } else {
        for (int i = 0; i < n; ++i)
          check_cu(raw.cuLaunchKernel(rf, 1, 1, 1, k_threads_per_block, 1, 1, 0,
                                      s.raw_stream, a4.params, nullptr),
                   "raw launch");
        check_cu(raw.cuStreamSynchronize(s.raw_stream), "sync");
      }
    });
  while (ready.load() < threads) {
  }
  double t0 = now_us();
  go.store(true, std::memory_order_release);
  for (std::thread &t : ts) t.join();
  double us = now_us() - t0;
  return double(threads) * n / us; // launches per us = M launches/s
}

} // namespace

void scaling_rows(const Context &c) {
  const int reps = c.reps;
  const bool quick = c.quick;
  auto sync = [&] { c.sync(); };
  const int k_max_modules = 64;
  const int k_cached_large = T4A_MEMORY_CACHE_ENTRIES; // the cache's bound
  std::vector<t4a_artifact> arts(size_t(k_cached_large), t4a_artifact{});
  const unsigned workers = std::max(1u, std::min(16u, c.cores));

  // ---- compile memory hit with 10 and 256 cached artifacts ----
  // The in-memory cache holds at most T4A_MEMORY_CACHE_ENTRIES (256)
  // artifacts, so 256 is the largest count it can hold; a hit cycles over
  // every cached source.
  compile_range(c, arts, 0, 10, workers);
  bounded("compile memory hit, 10 cached", memory_hits(c, 10, 2000, reps), 0,
          20.0);
  series("compile memory hit vs cached artifacts", 10);
  compile_range(c, arts, 10, k_cached_large, workers);
  bounded("compile memory hit, 256 cached",
          memory_hits(c, k_cached_large, 2000, reps), 0, 20.0);
  series("compile memory hit vs cached artifacts", k_cached_large);

  // ---- launch with 1 / 8 / 64 alternating modules ----
  t4a_buffer y{}, x{};
  check(t4a_buffer_alloc(c.rt, 4 * k_threads_per_block, T4A_BUFFER_ZERO, &y),
        "alloc");
  check(t4a_buffer_alloc(c.rt, 4 * k_threads_per_block, T4A_BUFFER_ZERO, &x),
        "alloc");
  Args4 a4(y, x);
  std::vector<t4a_module> mods(k_max_modules);
  std::vector<t4a_kernel> kernels(k_max_modules);
  std::vector<CUmodule> rmods(k_max_modules);
  std::vector<CUfunction> rfs(k_max_modules);
  std::vector<t4a_launch_desc> descs(k_max_modules);
  for (int m = 0; m < k_max_modules; ++m) {
    check(t4a_module_load(c.rt, arts[m], &mods[m]), "module load");
    check(t4a_kernel_get(mods[m], "axpy4", &kernels[m]), "kernel");
    std::vector<unsigned char> img = image_of(arts[m]);
    check_cu(raw.cuModuleLoadData(&rmods[m], img.data()), "raw load");
    check_cu(raw.cuModuleGetFunction(&rfs[m], rmods[m], "axpy4"), "raw get");
    descs[m] = a4.desc(kernels[m]);
  }
  const int launch_iters = quick ? 1000 : 5000;
  for (int count : {1, 8, 64}) {
    unsigned next_ours = 0, next_raw = 0;
    latency(
        "launch, " + std::to_string(count) + " alternating modules", reps,
        launch_iters,
        [&] {
          check(t4a_launch(c.rt, &descs[next_ours++ % unsigned(count)]),
                "launch");
        },
        [&] {
          check_cu(raw.cuLaunchKernel(rfs[next_raw++ % unsigned(count)], 1, 1,
                                      1, k_threads_per_block, 1, 1, 0, c.stream,
                                      a4.params, nullptr),
                   "raw launch");
        },
        sync, 1.03);
    series("launch vs alternating modules", count);
  }

  // ---- launch and alloc with 0 / 10^3 / 10^6 live handles ----
  // Live handles are buffers of 256 bytes (pool allocations of the same
  // pool the raw side uses), created before and released after the rows;
  // an allocation the pool refuses is replaced by an empty buffer (a
  // handle without device memory), counted in "empty_buffers".
  {
    std::vector<t4a_buffer> live;
    long empty = 0;
    const long big = quick ? 100000 : 1000000;
    for (long count : {0L, 1000L, big}) {
      live.reserve(size_t(count));
      while (long(live.size()) < count) {
        t4a_buffer b{};
        if (t4a_buffer_alloc(c.rt, 256, 0, &b) != T4A_SUCCESS) {
          t4a_last_error_clear();
          check(t4a_buffer_alloc(c.rt, 0, 0, &b), "alloc (empty)");
          ++empty;
        }
        live.push_back(b);
      }
      sync();
      check(t4a_runtime_synchronize(c.rt), "sync");
      const bool heavy = count >= 100000;
      const int r = heavy ? std::max(3, reps / 2) : reps;
      const std::string n = count == 0      ? "0"
                            : count == 1000 ? "10^3"
                                            : (quick ? "10^5" : "10^6");
      latency(
          "launch, " + n + " live handles", r, launch_iters,
          [&] { check(t4a_launch(c.rt, &descs[0]), "launch"); },
          [&] {
            check_cu(raw.cuLaunchKernel(rfs[0], 1, 1, 1, k_threads_per_block, 1,
                                        1, 0, c.stream, a4.params, nullptr),
                     "raw launch");
          },
          sync, 1.03);
      series("launch vs live handles", double(count));
      rows().back().extra.push_back({"empty_buffers", double(empty)});
      latency(
          "alloc+release 1 MiB, " + n + " live handles", r,
          quick ? 2000 : 10000,
          [&] {
            t4a_buffer b{};
            check(t4a_buffer_alloc(c.rt, 1 << 20, 0, &b), "alloc");
            check(t4a_buffer_release(b), "release");
          },
          [&] {
            CUdeviceptr p = 0;
            check_cu(raw.cuMemAllocFromPoolAsync(&p, 1 << 20, c.pool, c.stream),
                     "raw alloc");
            check_cu(raw.cuMemFreeAsync(p, c.stream), "raw free");
          },
          sync, 1.15);
      series("alloc+release vs live handles", double(count));
      rows().back().extra.push_back({"empty_buffers", double(empty)});
    }
    for (t4a_buffer b : live) check(t4a_buffer_release(b), "release");
    check(t4a_runtime_synchronize(c.rt), "sync");
  }

  // ---- aggregate launches/s with 1 / 2 / 4 / 8 threads ----
  // Each thread on a runtime of its own (ours) or a raw stream of its own
  // in the same context (raw), launching axpy4 of module 0.
  {
    const int per_thread = quick ? 2000 : 10000;
    for (int threads : {1, 2, 4, 8}) {
      std::vector<ThreadSide> sides(static_cast<size_t>(threads));
      for (ThreadSide &s : sides) {
        t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
        check(t4a_runtime_create(&o, &s.rt), "runtime (threads)");
        t4a_module m{};
        check(t4a_module_load(s.rt, arts[0], &m), "module load (threads)");
        check(t4a_kernel_get(m, "axpy4", &s.kernel), "kernel (threads)");
        check(t4a_module_release(m), "release");
        check(t4a_buffer_alloc(s.rt, 4 * k_threads_per_block, T4A_BUFFER_ZERO,
                               &s.y),
              "alloc");
        check(t4a_buffer_alloc(s.rt, 4 * k_threads_per_block, T4A_BUFFER_ZERO,
                               &s.x),
              "alloc");
        check_cu(raw.cuStreamCreate(&s.raw_stream, CU_STREAM_NON_BLOCKING),
                 "raw stream");
      }
      // One untimed round each side (first launch per thread and runtime).
      aggregate_rate(c, sides, rfs[0], true, 100);
      aggregate_rate(c, sides, rfs[0], false, 100);
      std::vector<double> ours, raws;
      const int r = std::max(3, reps / 2);
      for (int i = 0; i < r; ++i) {
        const bool ours_first = i % 2 == 0;
        if (ours_first)
          ours.push_back(aggregate_rate(c, sides, rfs[0], true, per_thread));
        raws.push_back(aggregate_rate(c, sides, rfs[0], false, per_thread));
        if (!ours_first)
          ours.push_back(aggregate_rate(c, sides, rfs[0], true, per_thread));
      }
      Row row;
      row.name = "launches/s, " + std::to_string(threads) + " thread" +
                 (threads == 1 ? "" : "s") + " (own runtimes)";
      row.unit = "M/s";
      row.ours = stats_of(ours);
      row.raw = stats_of(raws);
      row.goal = Goal::ratio_at_least;
      row.bound = 0.90;
      add_row(std::move(row));
      series("aggregate launches/s vs threads", threads);
      for (ThreadSide &s : sides) {
        check_cu(raw.cuStreamDestroy(s.raw_stream), "raw stream destroy");
        check(t4a_kernel_release(s.kernel), "release");
        check(t4a_buffer_release(s.y), "release");
        check(t4a_buffer_release(s.x), "release");
        check(t4a_runtime_destroy(s.rt), "runtime destroy");
      }
    }
  }

  sync();
  for (int m = 0; m < k_max_modules; ++m) {
    check_cu(raw.cuModuleUnload(rmods[m]), "raw unload");
    check(t4a_kernel_release(kernels[m]), "release");
    check(t4a_module_release(mods[m]), "release");
  }
  for (t4a_artifact a : arts) check(t4a_artifact_release(a), "release");
  check(t4a_buffer_release(y), "release");
  check(t4a_buffer_release(x), "release");
}

} // namespace bench
