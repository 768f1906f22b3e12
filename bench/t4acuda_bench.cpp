// t4acuda-bench: times each t4acuda operation against the raw CUDA driver
// call it wraps, in the same process, alternating, at least 5 repetitions;
// prints min / median / max and the ratio of medians as a table and writes
// JSON. By default the whole benchmark runs 3 times in fresh processes
// and each row also reports the spread of its ratio across the runs; a
// target counts as met when the median across runs meets it.
//
//   t4acuda-bench [--json PATH] [--runs N] [--reps N] [--quick]
//                 [--only GROUP,...] [--sweep]
//
// Groups: alloc, transfer, xrt, compile, launch, scaling (and those other
// bench/*.cpp files add). The harness (rows, timing, raw driver table,
// merging runs, output) is bench/harness.hpp.
//
// The raw calls go through the benchmark's own dlopen of libcuda (never
// through t4acuda), on the same runtime's stream, pool and context.
//
// "launch, alternating 8 modules" pairs t4a_launch cycling over 8 kernels
// of 8 modules with raw cuLaunchKernel cycling over the same 8 CUfunctions.
// The flatness measurement (docs/performance.md) runs 10^6 such
// launches (10^5 with --quick) on a thread with no context current and
// reports the last tenth against the first tenth.
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_rows.hpp"
#include "harness.hpp"
#include "t4acuda.h"

namespace {

using namespace bench;

const char *const k_kernels =
    "extern \"C\" __global__ void empty0() {}\n"
    "extern \"C\" __global__ void axpy4(float *y, const float *x, int n,\n"
    "                                    float a) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] += a * x[i];\n"
    "}\n";

// --disk-hit-probe DIR: run by the benchmark in a fresh process; times one
// t4a_compile answered by the disk cache in DIR, NVRTC loading included,
// and prints "probe <microseconds> <disk_hits> <nvrtc_invocations>".
int disk_hit_probe(const char *dir) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_kernels;
  r.cc_major = 9;
  r.cc_minor = 0;
  r.cache_dir = dir;
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE;
  double t0 = now_us();
  t4a_artifact a{};
  t4a_status s = t4a_compile(&r, &a);
  double t1 = now_us();
  t4a_compile_stats cs = T4A_COMPILE_STATS_INIT;
  t4a_compile_stats_get(&cs);
  std::printf("probe %.1f %llu %llu %d\n", t1 - t0,
              (unsigned long long)cs.disk_hits,
              (unsigned long long)cs.nvrtc_invocations, (int)s);
  t4a_artifact_release(a);
  return s == T4A_SUCCESS ? 0 : 1;
}

// A runtime's context, stream and a buffer's device pointer, for the raw
// side of the cross-runtime rows.
struct Side {
  t4a_runtime rt{};
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
};

Side side_of(t4a_runtime rt) {
  t4a_runtime_info i = T4A_RUNTIME_INFO_INIT;
  check(t4a_runtime_info_get(rt, &i), "runtime info");
  return {rt, static_cast<CUcontext>(i.context),
          static_cast<CUstream>(i.stream)};
}

CUdeviceptr ptr_of(t4a_buffer b) {
  t4a_buffer_info i = T4A_BUFFER_INFO_INIT;
  check(t4a_buffer_info_get(b, &i), "buffer info");
  return i.device_pointer;
}

t4a_runtime runtime_on(int32_t ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.device_ordinal = ordinal;
  t4a_runtime rt{};
  check(t4a_runtime_create(&o, &rt), "runtime create");
  return rt;
}

void raw_sync(const Side &s) {
  check_cu(raw.cuCtxSetCurrent(s.ctx), "cuCtxSetCurrent");
  check_cu(raw.cuStreamSynchronize(s.stream), "sync");
}

// Copies between runtimes (issue 10), each against the raw driver calls a
// careful user would write for the same ordering, on the same streams and
// buffers: `src` is a buffer of `rt` (device 0) holding `n` bytes.
void cross_runtime_rows(t4a_runtime rt, t4a_buffer src, uint64_t n, int reps,
                        int32_t devices) {
  const Side a = side_of(rt);
  const CUdeviceptr sp = ptr_of(src);

  // Same device: a second runtime of device 0. Raw: the two events and
  // waits around cuMemcpyDtoDAsync on the destination stream.
  {
    t4a_runtime rt2 = runtime_on(0);
    const Side b = side_of(rt2);
    t4a_buffer dst{};
    check(t4a_buffer_alloc(rt2, n, 0, &dst), "alloc");
    const CUdeviceptr dp = ptr_of(dst);
    CUevent ready = nullptr, done = nullptr;
    check_cu(raw.cuCtxSetCurrent(a.ctx), "cuCtxSetCurrent");
    check_cu(raw.cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING), "event");
    check_cu(raw.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING), "event");
    bandwidth(
        "xrt copy same device 256 MiB", reps, 2 * n,
        [&] {
          check(t4a_buffer_copy(rt2, dst, 0, src, 0, n), "copy");
          check(t4a_runtime_synchronize(rt2), "sync");
        },
        [&] {
          check_cu(raw.cuEventRecord(ready, a.stream), "record");
          check_cu(raw.cuStreamWaitEvent(b.stream, ready, 0), "wait");
          check_cu(raw.cuMemcpyDtoDAsync(dp, sp, n, b.stream), "copy");
          check_cu(raw.cuEventRecord(done, b.stream), "record");
          check_cu(raw.cuStreamWaitEvent(a.stream, done, 0), "wait");
          check_cu(raw.cuStreamSynchronize(b.stream), "sync");
        },
        0.95);
    check(t4a_runtime_synchronize(rt), "sync");
    check_cu(raw.cuEventDestroy(ready), "event destroy");
    check_cu(raw.cuEventDestroy(done), "event destroy");
    check(t4a_buffer_release(dst), "release");
    check(t4a_runtime_destroy(rt2), "destroy");
  }

  if (devices < 2) {
    std::printf("bench: xrt peer and staged rows skipped: %d device (they "
                "need two)\n",
                devices);
    return;
  }

  // Staged: a runtime on device 1 without peer access enabled. Raw: the
  // same pipeline by hand: 8 MiB chunks through 8 pinned slots (the
  // library's default staging budget), per chunk a D2H on the source
  // stream, an event, a wait and an H2D on the destination stream; a slot
  // is reused after a host wait for its H2D.
  {
    t4a_runtime rt1 = runtime_on(1);
    const Side b = side_of(rt1);
    t4a_buffer dst{};
    check(t4a_buffer_alloc(rt1, n, 0, &dst), "alloc");
    const CUdeviceptr dp = ptr_of(dst);
    const size_t chunk = size_t(8) << 20;
    const int slots = 8;
    void *pinned = nullptr;
    check_cu(raw.cuCtxSetCurrent(a.ctx), "cuCtxSetCurrent");
    check_cu(
        raw.cuMemHostAlloc(&pinned, chunk * slots, CU_MEMHOSTALLOC_PORTABLE),
        "pinned");
    std::vector<CUevent> d2h(slots), h2d(slots);
    std::vector<bool> used(slots, false);
    for (CUevent &e : d2h)
      check_cu(raw.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "event");
    check_cu(raw.cuCtxSetCurrent(b.ctx), "cuCtxSetCurrent");
    for (CUevent &e : h2d)
      check_cu(raw.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "event");
    bandwidth(
        "xrt copy staged 256 MiB", reps, n,
        [&] {
          check(t4a_buffer_copy(rt1, dst, 0, src, 0, n), "copy");
          check(t4a_runtime_synchronize(rt1), "sync");
        },
        [&] {
          int i = 0;
          for (uint64_t off = 0; off < n; off += chunk, ++i) {
            const int slot = i % slots;
            const size_t len = size_t(std::min<uint64_t>(chunk, n - off));
            auto *host = static_cast<unsigned char *>(pinned) + slot * chunk;
            if (used[slot])
              check_cu(raw.cuEventSynchronize(h2d[slot]), "slot wait");
            check_cu(raw.cuCtxSetCurrent(a.ctx), "cuCtxSetCurrent");
            check_cu(raw.cuMemcpyDtoHAsync(host, sp + off, len, a.stream),
                     "d2h");
            check_cu(raw.cuEventRecord(d2h[slot], a.stream), "record");
            check_cu(raw.cuCtxSetCurrent(b.ctx), "cuCtxSetCurrent");
            check_cu(raw.cuStreamWaitEvent(b.stream, d2h[slot], 0), "wait");
            check_cu(raw.cuMemcpyHtoDAsync(dp + off, host, len, b.stream),
                     "h2d");
            check_cu(raw.cuEventRecord(h2d[slot], b.stream), "record");
            used[slot] = true;
          }
          raw_sync(b);
        },
        0.90);
    raw_sync(a);
    t4a_runtime_stats s1 = T4A_RUNTIME_STATS_INIT;
    check(t4a_runtime_stats_get(rt1, &s1), "stats");
    if (s1.peer_copies != 0)
      std::printf("bench: the staged row ran %llu peer copies\n",
                  (unsigned long long)s1.peer_copies);
    for (CUevent e : d2h) check_cu(raw.cuEventDestroy(e), "event destroy");
    for (CUevent e : h2d) check_cu(raw.cuEventDestroy(e), "event destroy");
    check_cu(raw.cuMemFreeHost(pinned), "free pinned");
    check(t4a_buffer_release(dst), "release");
    check(t4a_runtime_destroy(rt1), "destroy");
    check_cu(raw.cuCtxSetCurrent(a.ctx), "cuCtxSetCurrent");
  }

  // Peer: after t4a_runtime_enable_peer. Raw: cuMemcpyPeerAsync on the
  // destination stream between the same two pool allocations.
  int32_t can01 = 0, can10 = 0;
  check(t4a_device_can_access_peer(0, 1, &can01), "can access peer");
  check(t4a_device_can_access_peer(1, 0, &can10), "can access peer");
  if (!can01 || !can10) {
    std::printf("bench: xrt peer row skipped: devices 0 and 1 are not peers "
                "(cuDeviceCanAccessPeer %d / %d)\n",
                can01, can10);
    return;
  }
  t4a_runtime rt1 = runtime_on(1);
  const Side b = side_of(rt1);
  check(t4a_runtime_enable_peer(rt, rt1), "enable peer");
  t4a_buffer dst{};
  check(t4a_buffer_alloc(rt1, n, 0, &dst), "alloc");
  const CUdeviceptr dp = ptr_of(dst);
  bandwidth(
      "xrt copy peer 256 MiB", reps, n,
      [&] {
        check(t4a_buffer_copy(rt1, dst, 0, src, 0, n), "copy");
        check(t4a_runtime_synchronize(rt1), "sync");
      },
      [&] {
        check_cu(raw.cuCtxSetCurrent(b.ctx), "cuCtxSetCurrent");
        check_cu(raw.cuMemcpyPeerAsync(dp, b.ctx, sp, a.ctx, n, b.stream),
                 "peer copy");
        check_cu(raw.cuStreamSynchronize(b.stream), "sync");
      },
      0.95);
  t4a_runtime_stats s1 = T4A_RUNTIME_STATS_INIT;
  check(t4a_runtime_stats_get(rt1, &s1), "stats");
  if (s1.staged_copies != 0)
    std::printf("bench: the peer row staged %llu copies\n",
                (unsigned long long)s1.staged_copies);
  raw_sync(a);
  check(t4a_buffer_release(dst), "release");
  check(t4a_runtime_destroy(rt1), "destroy");
  check_cu(raw.cuCtxSetCurrent(a.ctx), "cuCtxSetCurrent");
}

void alloc_rows(const Context &c) {
  const t4a_runtime rt = c.rt;
  const CUstream stream = c.stream;
  const CUmemoryPool pool = c.pool;
  const int reps = c.reps;
  const bool quick = c.quick;
  auto sync = [&] { c.sync(); };
  // ---- alloc + release ----
  for (uint64_t size :
       {uint64_t(1) << 10, uint64_t(1) << 20, uint64_t(64) << 20}) {
    char name[64];
    std::snprintf(name, sizeof name, "alloc+release %s",
                  size < (1u << 20)
                      ? "1 KiB"
                      : (size < (64u << 20) ? "1 MiB" : "64 MiB"));
    latency(
        name, reps, quick ? 2000 : 20000,
        [&] {
          t4a_buffer b{};
          check(t4a_buffer_alloc(rt, size, 0, &b), "alloc");
          check(t4a_buffer_release(b), "release");
        },
        [&] {
          CUdeviceptr p = 0;
          check_cu(raw.cuMemAllocFromPoolAsync(&p, size, pool, stream),
                   "raw alloc");
          check_cu(raw.cuMemFreeAsync(p, stream), "raw free");
        },
        sync, 1.15);
  }
}

void transfer_rows(const Context &c, bool sweep) {
  const t4a_runtime rt = c.rt;
  const CUstream stream = c.stream;
  const int reps = c.reps;
  const bool quick = c.quick;
  const unsigned cores = c.cores;
  auto sync = [&] { c.sync(); };
  // ---- transfers at 256 MiB ----
  const uint64_t n = quick ? (uint64_t(32) << 20) : (uint64_t(256) << 20);
  t4a_buffer dbuf{}, dbuf2{};
  check(t4a_buffer_alloc(rt, n, 0, &dbuf), "alloc");
  check(t4a_buffer_alloc(rt, n, 0, &dbuf2), "alloc");
  t4a_buffer_info binfo = T4A_BUFFER_INFO_INIT, binfo2 = T4A_BUFFER_INFO_INIT;
  check(t4a_buffer_info_get(dbuf, &binfo), "buffer info");
  check(t4a_buffer_info_get(dbuf2, &binfo2), "buffer info");
  CUdeviceptr dptr = binfo.device_pointer, dptr2 = binfo2.device_pointer;
  t4a_host_buffer hb{};
  check(t4a_host_buffer_alloc(rt, n, &hb), "host buffer");
  void *hptr = nullptr;
  check(t4a_host_buffer_pointer(hb, &hptr, nullptr), "host pointer");
  void *raw_pinned = nullptr;
  check_cu(raw.cuMemHostAlloc(&raw_pinned, n, CU_MEMHOSTALLOC_PORTABLE),
           "raw pinned");
  std::vector<unsigned char> pageable(n), pageable_out(n);
  for (uint64_t i = 0; i < n; ++i) pageable[i] = static_cast<unsigned char>(i);
  std::memset(hptr, 1, n);
  std::memset(raw_pinned, 1, n);

  bandwidth(
      "host-buffer upload 256 MiB", reps, n,
      [&] {
        check(t4a_buffer_upload_host(rt, dbuf, 0, hb, 0, n), "upload_host");
        check(t4a_runtime_synchronize(rt), "sync");
      },
      [&] {
        check_cu(raw.cuMemcpyHtoDAsync(dptr, raw_pinned, n, stream), "raw");
        sync();
      },
      0.95);
  bandwidth(
      "host-buffer download 256 MiB", reps, n,
      [&] {
        check(t4a_buffer_download_host(rt, dbuf, 0, hb, 0, n), "dl_host");
        check(t4a_runtime_synchronize(rt), "sync");
      },
      [&] {
        check_cu(raw.cuMemcpyDtoHAsync(raw_pinned, dptr, n, stream), "raw");
        sync();
      },
      0.95);
  bandwidth(
      "pageable upload 256 MiB", reps, n,
      [&] {
        check(t4a_buffer_upload(rt, dbuf, 0, pageable.data(), n), "upload");
        check(t4a_runtime_synchronize(rt), "sync");
      },
      [&] { check_cu(raw.cuMemcpyHtoD(dptr, pageable.data(), n), "raw"); },
      1.0);
  bandwidth(
      "pageable download 256 MiB", reps, n,
      [&] {
        check(t4a_buffer_download_sync(rt, dbuf, 0, pageable_out.data(), n),
              "download_sync");
      },
      [&] { check_cu(raw.cuMemcpyDtoH(pageable_out.data(), dptr, n), "raw"); },
      1.0);
  // The raised goal: pageable against the pinned DMA rate (raw
  // cuMemcpy*Async with pinned memory), >= 0.8x on a host with >= 16 cores.
  const double pinned_target = cores >= 16 ? 0.8 : 0.0;
  // Shared with the cold-source row below.
  const auto upload_pageable = [&] {
    check(t4a_buffer_upload(rt, dbuf, 0, pageable.data(), n), "upload");
    check(t4a_runtime_synchronize(rt), "sync");
  };
  const auto upload_pinned_raw = [&] {
    check_cu(raw.cuMemcpyHtoDAsync(dptr, raw_pinned, n, stream), "raw");
    sync();
  };
  bandwidth("pageable upload 256 MiB vs pinned", reps, n, upload_pageable,
            upload_pinned_raw, pinned_target);
  bandwidth(
      "pageable download 256 MiB vs pinned", reps, n,
      [&] {
        check(t4a_buffer_download_sync(rt, dbuf, 0, pageable_out.data(), n),
              "download_sync");
      },
      [&] {
        check_cu(raw.cuMemcpyDtoHAsync(raw_pinned, dptr, n, stream), "raw");
        sync();
      },
      pinned_target);
  // The same upload with its source out of the CPU caches (a 512 MiB
  // memset on 8 threads, untimed, before every call of either side): what
  // a caller uploading data written long ago sees. No target: the upload
  // against pinned moves with where its source is (docs/performance.md,
  // "Transfer sweep", session 6).
  {
    std::vector<unsigned char> flush(quick ? (size_t(64) << 20)
                                           : (size_t(512) << 20));
    const auto flush_caches = [&] {
      const size_t part = flush.size() / 8;
      std::vector<std::thread> ts;
      for (int t = 0; t < 8; ++t)
        ts.emplace_back(
            [&, t] { std::memset(flush.data() + t * part, t + 1, part); });
      for (std::thread &t : ts) t.join();
    };
    bandwidth("pageable upload 256 MiB vs pinned, cold source", reps, n,
              upload_pageable, upload_pinned_raw, 0.0, flush_caches);
  }
  // pending download: enqueue + wait
  bandwidth(
      "pending download 256 MiB", reps, n,
      [&] {
        t4a_download d{};
        check(t4a_buffer_download(rt, dbuf, 0, n, &d), "download");
        check(t4a_download_wait(d, pageable_out.data()), "wait");
        check(t4a_download_release(d), "release");
      },
      [&] { check_cu(raw.cuMemcpyDtoH(pageable_out.data(), dptr, n), "raw"); },
      1.0);
  bandwidth(
      "device copy 256 MiB", reps, 2 * n,
      [&] {
        check(t4a_buffer_copy(rt, dbuf2, 0, dbuf, 0, n), "copy");
        check(t4a_runtime_synchronize(rt), "sync");
      },
      [&] {
        check_cu(raw.cuMemcpyDtoDAsync(dptr2, dptr, n, stream), "raw");
        sync();
      },
      0.95);
  if (enabled("xrt")) cross_runtime_rows(rt, dbuf, n, reps, c.devices);
  if (sweep) {
    // Pageable transfer bandwidth over staging threads and chunk sizes, to
    // choose the defaults (printed only; not part of the table).
    std::printf("\nsweep: pageable %llu MiB, GB/s (upload / download)\n",
                (unsigned long long)(n >> 20));
    for (int threads : {8, 12, 16}) {
      for (uint64_t chunk : {uint64_t(8) << 20, uint64_t(16) << 20}) {
        t4a_runtime_options so = T4A_RUNTIME_OPTIONS_INIT;
        so.staging_threads = threads;
        so.staging_chunk_bytes = chunk;
        so.staging_bytes = 8 * chunk;
        t4a_runtime srt{};
        check(t4a_runtime_create(&so, &srt), "sweep runtime");
        t4a_buffer sb{};
        check(t4a_buffer_alloc(srt, n, 0, &sb), "sweep alloc");
        std::vector<double> up, down;
        for (int r = 0; r < 5; ++r) {
          up.push_back(n /
                       time_loop(1,
                                 [&] {
                                   check(t4a_buffer_upload(srt, sb, 0,
                                                           pageable.data(), n),
                                         "upload");
                                   check(t4a_runtime_synchronize(srt), "sync");
                                 }) /
                       1e9);
          down.push_back(
              n /
              time_loop(1,
                        [&] {
                          check(t4a_buffer_download_sync(
                                    srt, sb, 0, pageable_out.data(), n),
                                "download");
                        }) /
              1e9);
        }
        std::printf("  threads %2d chunk %2llu MiB: %6.2f / %6.2f\n", threads,
                    (unsigned long long)(chunk >> 20), median(up),
                    median(down));
        check(t4a_buffer_release(sb), "release");
        check(t4a_runtime_destroy(srt), "destroy");
      }
    }
  }
  check(t4a_buffer_release(dbuf), "release");
  check(t4a_buffer_release(dbuf2), "release");
  check(t4a_host_buffer_release(hb), "release");
  check_cu(raw.cuMemFreeHost(raw_pinned), "cuMemFreeHost");
}

void compile_launch_rows(const Context &c) {
  const t4a_runtime rt = c.rt;
  const CUstream stream = c.stream;
  const int reps = c.reps;
  const bool quick = c.quick;
  auto sync = [&] { c.sync(); };
  t4a_runtime_options opts = T4A_RUNTIME_OPTIONS_INIT;
  // Two small buffers for the launch arguments.
  t4a_buffer dbuf{}, dbuf2{};
  check(t4a_buffer_alloc(rt, 1 << 20, 0, &dbuf), "alloc");
  check(t4a_buffer_alloc(rt, 1 << 20, T4A_BUFFER_ZERO, &dbuf2), "alloc");
  const CUdeviceptr dptr = ptr_of(dbuf), dptr2 = ptr_of(dbuf2);
  // ---- compile caches and modules ----
  {
    char dir_template[] = "/tmp/t4a-bench-cache-XXXXXX";
    const char *dir = mkdtemp(dir_template);
    t4a_compile_request cr = T4A_COMPILE_REQUEST_INIT;
    cr.source = k_kernels;
    cr.runtime = rt; // CUBIN for this device
    cr.cache_dir = dir;
    double t0 = now_us();
    t4a_artifact art{};
    check(t4a_compile(&cr, &art), "cold compile"); // NVRTC + disk write
    double cold_us = now_us() - t0;
    std::vector<double> hits;
    for (int r = 0; r < reps; ++r) {
      const int n_hits = 2000;
      double t = now_us();
      for (int i = 0; i < n_hits; ++i) {
        t4a_artifact again{};
        check(t4a_compile(&cr, &again), "memory hit");
        check(t4a_artifact_release(again), "release");
      }
      hits.push_back((now_us() - t) / n_hits);
    }
    bounded("compile memory hit", median(hits), cold_us, 20.0);
    // A disk hit in a fresh process (this program, re-run), the same
    // source for sm_90 as a PTX-free CUBIN: first one run to write it.
    std::vector<double> probes;
    std::string self = "/proc/self/exe";
    char exe[4096];
    ssize_t len = readlink(self.c_str(), exe, sizeof exe - 1);
    if (len > 0) {
      exe[len] = '\0';
      std::string cmd = std::string(exe) + " --disk-hit-probe " + dir;
      for (int r = 0; r < reps + 1; ++r) {
        FILE *p = popen(cmd.c_str(), "r");
        double us = 0;
        unsigned long long dh = 0, nv = 0;
        int st = -1;
        if (p != nullptr) {
          if (std::fscanf(p, "probe %lf %llu %llu %d", &us, &dh, &nv, &st) != 4)
            st = -1;
          pclose(p);
        }
        if (r == 0) continue; // the first run wrote the sm_90 entry
        if (st != 0 || dh != 1 || nv != 0) {
          std::fprintf(stderr,
                       "bench: disk-hit probe: status %d, disk hits %llu, "
                       "nvrtc %llu\n",
                       st, dh, nv);
          probes.clear();
          break;
        }
        probes.push_back(us);
      }
    }
    if (!probes.empty())
      bounded("compile disk hit, fresh process", median(probes), cold_us,
              1000.0);

    // Module load: a cache hit against raw cuModuleLoadData + unload.
    size_t image_bytes = 0;
    check(t4a_artifact_image(art, nullptr, 0, &image_bytes), "image size");
    std::vector<unsigned char> image(image_bytes + 1, 0);
    check(t4a_artifact_image(art, image.data(), image.size(), &image_bytes),
          "image");
    t4a_module keep{};
    check(t4a_module_load(rt, art, &keep), "module load");
    latency(
        "module load (cache hit vs raw load)", reps, quick ? 50 : 200,
        [&] {
          t4a_module m{};
          check(t4a_module_load(rt, art, &m), "module load");
          check(t4a_module_release(m), "module release");
        },
        [&] {
          CUmodule m = nullptr;
          check_cu(raw.cuModuleLoadData(&m, image.data()), "raw load");
          check_cu(raw.cuModuleUnload(m), "raw unload");
        },
        sync, 1.0);

    // ---- launches: checked t4a_launch vs raw cuLaunchKernel ----
    t4a_kernel k0{}, k4{};
    check(t4a_kernel_get(keep, "empty0", &k0), "kernel empty0");
    check(t4a_kernel_get(keep, "axpy4", &k4), "kernel axpy4");
    CUmodule rm = nullptr;
    CUfunction f0 = nullptr, f4 = nullptr;
    check_cu(raw.cuModuleLoadData(&rm, image.data()), "raw load");
    check_cu(raw.cuModuleGetFunction(&f0, rm, "empty0"), "raw empty0");
    check_cu(raw.cuModuleGetFunction(&f4, rm, "axpy4"), "raw axpy4");
    t4a_launch_desc d0 = T4A_LAUNCH_DESC_INIT;
    d0.grid[0] = 1;
    d0.block[0] = 1;
    d0.kernel = k0;
    latency(
        "launch, 0 arguments", reps, quick ? 1000 : 5000,
        [&] { check(t4a_launch(rt, &d0), "launch"); },
        [&] {
          check_cu(raw.cuLaunchKernel(f0, 1, 1, 1, 1, 1, 1, 0, stream, nullptr,
                                      nullptr),
                   "raw launch");
        },
        sync, 1.05);
    int n_el = 256;
    float a_val = 2.0f;
    t4a_arg args[4] = {T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT};
    args[0].kind = T4A_ARG_BUFFER;
    args[0].buffer = dbuf2;
    args[1].kind = T4A_ARG_BUFFER;
    args[1].buffer = dbuf;
    args[2].kind = T4A_ARG_SCALAR;
    args[2].value = &n_el;
    args[2].size = sizeof n_el;
    args[3].kind = T4A_ARG_SCALAR;
    args[3].value = &a_val;
    args[3].size = sizeof a_val;
    t4a_launch_desc d4 = T4A_LAUNCH_DESC_INIT;
    d4.grid[0] = 1;
    d4.kernel = k4;
    d4.block[0] = 256;
    d4.arg_count = 4;
    d4.args = args;
    CUdeviceptr py = dptr2, px = dptr;
    void *params[4] = {&py, &px, &n_el, &a_val};
    latency(
        "launch, 4 arguments", reps, quick ? 1000 : 5000,
        [&] { check(t4a_launch(rt, &d4), "launch"); },
        [&] {
          check_cu(raw.cuLaunchKernel(f4, 1, 1, 1, 256, 1, 1, 0, stream, params,
                                      nullptr),
                   "raw launch");
        },
        sync, 1.03);
    // Informational: the same launch with the two buffers passed as raw
    // device pointers (no handle borrowed, no buffer check), to split the
    // 4-argument row's overhead into what the buffers cost and the rest.
    t4a_arg pargs[4] = {args[0], args[1], args[2], args[3]};
    pargs[0].kind = pargs[1].kind = T4A_ARG_DEVICE_POINTER;
    pargs[0].device_pointer = py;
    pargs[1].device_pointer = px;
    t4a_launch_desc dp = d4;
    dp.args = pargs;
    latency(
        "launch, 4 arguments, buffers as device pointers", reps,
        quick ? 1000 : 5000, [&] { check(t4a_launch(rt, &dp), "launch"); },
        [&] {
          check_cu(raw.cuLaunchKernel(f4, 1, 1, 1, 256, 1, 1, 0, stream, params,
                                      nullptr),
                   "raw launch");
        },
        sync, 0);
    graph_rows(rt, stream, d4, f4, params, reps, quick);
    cooperative_rows(rt, stream, cr, reps, quick);
    cluster_rows(rt, stream, cr, reps, quick);

    // ---- launches alternating over 8 modules ----
    constexpr int k_mods = 8;
    t4a_module mods[k_mods] = {};
    t4a_kernel kms[k_mods] = {};
    CUmodule rms[k_mods] = {};
    CUfunction rfs[k_mods] = {};
    t4a_launch_desc dm[k_mods];
    t4a_artifact marts[k_mods] = {}; // kept for the flatness runtime
    for (int m = 0; m < k_mods; ++m) {
      std::string src = module_source(m);
      t4a_compile_request mr = cr;
      mr.source = src.c_str();
      t4a_artifact &ma = marts[m];
      check(t4a_compile(&mr, &ma), "compile (8 modules)");
      check(t4a_module_load(rt, ma, &mods[m]), "module load (8 modules)");
      check(t4a_kernel_get(mods[m], "axpy4", &kms[m]), "kernel (8 modules)");
      size_t mb = 0;
      check(t4a_artifact_image(ma, nullptr, 0, &mb), "image size");
      std::vector<unsigned char> mimg(mb + 1, 0);
      check(t4a_artifact_image(ma, mimg.data(), mimg.size(), &mb), "image");
      check_cu(raw.cuModuleLoadData(&rms[m], mimg.data()), "raw load");
      check_cu(raw.cuModuleGetFunction(&rfs[m], rms[m], "axpy4"), "raw axpy4");
      dm[m] = d4;
      dm[m].kernel = kms[m];
    }
    unsigned next_ours = 0, next_raw = 0;
    latency(
        "launch, alternating 8 modules", reps, quick ? 1000 : 5000,
        [&] { check(t4a_launch(rt, &dm[next_ours++ % k_mods]), "launch"); },
        [&] {
          check_cu(raw.cuLaunchKernel(rfs[next_raw++ % k_mods], 1, 1, 1, 256, 1,
                                      1, 0, stream, params, nullptr),
                   "raw launch");
        },
        sync, 1.03);
    sync();

    // Flatness: 10^6 launches over the 8 modules on a thread with no
    // context current (the usual caller), timestamps every 1000 launches;
    // capped at 60 s (a warm path that is not flat would take hours), in
    // which case the tenths are of the launches done. On a fresh runtime
    // of its own (the same 8 artifacts loaded there), so that nothing the
    // rows above left behind (events already in its pool, epochs) helps or
    // hides its warm path.
    {
      const long planned = quick ? 100000 : 1000000;
      const long step = 1000;
      t4a_runtime frt{};
      check(t4a_runtime_create(&opts, &frt), "runtime (flatness)");
      t4a_buffer fy{}, fx{};
      check(t4a_buffer_alloc(frt, 256 * sizeof(float), T4A_BUFFER_ZERO, &fy),
            "alloc (flatness)");
      check(t4a_buffer_alloc(frt, 256 * sizeof(float), 0, &fx),
            "alloc (flatness)");
      std::vector<float> fxv(256, 0.5f);
      t4a_arg fargs[4] = {args[0], args[1], args[2], args[3]};
      fargs[0].buffer = fy;
      fargs[1].buffer = fx;
      t4a_kernel fk[k_mods] = {};
      t4a_launch_desc fd[k_mods];
      for (int m = 0; m < k_mods; ++m) {
        t4a_module fm{};
        check(t4a_module_load(frt, marts[m], &fm), "module load (flatness)");
        check(t4a_kernel_get(fm, "axpy4", &fk[m]), "kernel (flatness)");
        check(t4a_module_release(fm), "release");
        fd[m] = d4;
        fd[m].kernel = fk[m];
        fd[m].args = fargs;
      }
      t4a_runtime_stats f0 = T4A_RUNTIME_STATS_INIT;
      check(t4a_runtime_stats_get(frt, &f0), "stats");
      std::vector<double> stamps;
      stamps.reserve(planned / step + 1);
      bool clean = true;
      std::thread worker([&] {
        // The thread uploads its input (through staging) and then launches,
        // as a user's would; the upload is not timed.
        check(t4a_buffer_upload(frt, fx, 0, fxv.data(), 256 * sizeof(float)),
              "upload (flatness)");
        t4a_last_error_clear();
        double start = now_us();
        stamps.push_back(start);
        for (long i = 0; i < planned;) {
          for (long k = 0; k < step; ++k, ++i)
            check(t4a_launch(frt, &fd[i % k_mods]), "launch (flatness)");
          double t = now_us();
          stamps.push_back(t);
          if (t - start > 60e6) break;
        }
        t4a_error_info e = T4A_ERROR_INFO_INIT;
        clean = t4a_last_error(&e) == T4A_SUCCESS && e.status == T4A_SUCCESS;
      });
      worker.join();
      check(t4a_runtime_synchronize(frt), "synchronize (flatness)");
      t4a_runtime_stats f1 = T4A_RUNTIME_STATS_INIT;
      check(t4a_runtime_stats_get(frt, &f1), "stats");
      long chunks = static_cast<long>(stamps.size()) - 1;
      long tenth = chunks / 10;
      if (tenth >= 1) {
        const double first_us = (stamps[tenth] - stamps[0]) / (tenth * step);
        const double last_us =
            (stamps[chunks] - stamps[chunks - tenth]) / (tenth * step);
        const uint64_t events = f1.events_recorded - f0.events_recorded;
        const long launches = chunks * step;
        std::printf("flatness: %ld of %ld launches over %d modules, no "
                    "context current: first tenth %.3f us, last tenth %.3f "
                    "us per launch, last/first %.3f; %llu events recorded "
                    "(%.5f per launch); last error after them %s\n",
                    launches, planned, k_mods, first_us, last_us,
                    last_us / first_us, (unsigned long long)events,
                    double(events) / double(launches),
                    clean ? "SUCCESS" : "NOT SUCCESS");
        // t4acuda column: the last tenth; raw column: the first tenth.
        Row fr;
        fr.name = "launch flatness, 8 modules";
        fr.unit = "us";
        fr.ours = {last_us, last_us, last_us};
        fr.raw = {first_us, first_us, first_us};
        fr.goal = Goal::ratio_at_most;
        fr.bound = 1.05;
        fr.extra = {{"launches", double(launches)},
                    {"planned", double(planned)},
                    {"modules", double(k_mods)},
                    {"context_current", 0},
                    {"events_recorded", double(events)},
                    {"last_error_clean", clean ? 1.0 : 0.0}};
        add_row(std::move(fr));
      }
      for (t4a_kernel k : fk) check(t4a_kernel_release(k), "release");
      check(t4a_buffer_release(fy), "release");
      check(t4a_buffer_release(fx), "release");
      check(t4a_runtime_destroy(frt), "destroy (flatness)");
    }
    for (int m = 0; m < k_mods; ++m) {
      check_cu(raw.cuModuleUnload(rms[m]), "raw unload");
      check(t4a_kernel_release(kms[m]), "release");
      check(t4a_module_release(mods[m]), "release");
      check(t4a_artifact_release(marts[m]), "release");
    }
    check_cu(raw.cuModuleUnload(rm), "raw unload");
    check(t4a_kernel_release(k0), "release");
    check(t4a_kernel_release(k4), "release");
    check(t4a_module_release(keep), "release");
    check(t4a_artifact_release(art), "release");
    std::string rm_cmd = std::string("rm -rf ") + dir;
    if (std::system(rm_cmd.c_str()) != 0)
      std::fprintf(stderr, "bench: could not remove %s\n", dir);
  }
  check(t4a_buffer_release(dbuf), "release");
  check(t4a_buffer_release(dbuf2), "release");
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3 && !std::strcmp(argv[1], "--disk-hit-probe"))
    return disk_hit_probe(argv[2]);
  const char *json_path = nullptr;
  const char *one_run = nullptr;
  int runs = 3;
  int reps = 7;
  bool quick = false;
  bool sweep = false;
  std::vector<std::string> child_args; // passed on to each run
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--one-run") && i + 1 < argc)
      one_run = argv[++i];
    else {
      if (!std::strcmp(argv[i], "--sweep")) sweep = true;
      child_args.push_back(argv[i]);
    }
  }
  parse_common(argc, argv, reps, quick);
  int32_t count = 0;
  if (t4a_device_count(&count) != T4A_SUCCESS || count == 0 || !load_raw()) {
    std::printf("t4acuda-bench: no GPU available; nothing measured\n");
    return 0;
  }
  t4a_device_info dev = T4A_DEVICE_INFO_INIT;
  check(t4a_device_info_get(0, &dev), "device info");
  int32_t driver = 0;
  check(t4a_driver_version(&driver), "driver version");
  Meta meta;
  meta.device = dev.name;
  meta.driver = driver;
  meta.cores = std::thread::hardware_concurrency();
  meta.reps = reps;

  if (one_run == nullptr && runs > 1) {
    // Each run in a fresh process; rows merged across runs.
    bool ok = merge_runs(runs, child_args, meta);
    print_table(meta);
    if (json_path != nullptr && !write_json(json_path, meta))
      std::fprintf(stderr, "bench: cannot write %s\n", json_path);
    return ok ? 0 : 1;
  }

  Context c;
  c.reps = reps;
  c.quick = quick;
  c.cores = meta.cores;
  c.devices = count;
  t4a_runtime_options opts = T4A_RUNTIME_OPTIONS_INIT;
  check(t4a_runtime_create(&opts, &c.rt), "runtime create");
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  check(t4a_runtime_info_get(c.rt, &info), "runtime info");
  c.ctx = static_cast<CUcontext>(info.context);
  c.stream = static_cast<CUstream>(info.stream);
  c.pool = static_cast<CUmemoryPool>(info.memory_pool);
  check_cu(raw.cuCtxSetCurrent(c.ctx), "cuCtxSetCurrent");

  if (enabled("alloc")) alloc_rows(c);
  if (enabled("transfer") || enabled("xrt")) transfer_rows(c, sweep);
  if (enabled("compile") || enabled("launch")) compile_launch_rows(c);
  if (enabled("scaling")) scaling_rows(c);
  if (enabled("sweep")) transfer_sweep_rows(c);

  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  check(t4a_runtime_stats_get(c.rt, &st), "stats");
  print_table(meta);
  std::printf("counters: host_waits %llu staging_waits %llu events %llu "
              "staging_peak %llu\n",
              (unsigned long long)st.host_waits,
              (unsigned long long)st.staging_waits,
              (unsigned long long)st.events_recorded,
              (unsigned long long)st.staging_bytes_peak);
  if (one_run != nullptr && !write_run(one_run, meta)) {
    std::fprintf(stderr, "bench: cannot write %s\n", one_run);
    return 1;
  }
  if (json_path != nullptr && !write_json(json_path, meta))
    std::fprintf(stderr, "bench: cannot write %s\n", json_path);
  check(t4a_runtime_destroy(c.rt), "destroy");
  remove_scratch();
  return 0;
}
