// t4acuda-transfer-probe: the transfer sweep of the benchmark
// (bench/transfer_sweep.cpp) as a program of its own, with the candidate
// paths forced one at a time (--variants): host transfers at every size
// from 4 B to 256 MiB (powers of 4), both directions, each against the raw
// driver call in the same process, paired and alternating. It is how the
// thresholds of the transfer plan were chosen (docs/memory.md, "Transfer
// paths").
//
//   t4acuda-transfer-probe [--json PATH] [--reps N] [--max-bytes N]
//                          [--variants] [--quick]
//
// Rows, each timed as the call plus its completion, against:
//   upload          t4a_buffer_upload + t4a_runtime_synchronize
//                   vs cuMemcpyHtoD from the same pageable memory;
//   download        t4a_buffer_download_sync vs cuMemcpyDtoH;
//   pending         t4a_buffer_download + t4a_download_wait + release
//                   vs cuMemcpyDtoH;
//   host upload     t4a_buffer_upload_host + t4a_runtime_synchronize
//                   vs cuMemcpyHtoDAsync from pinned memory + sync;
//   host download   t4a_buffer_download_host + t4a_runtime_synchronize
//                   vs cuMemcpyDtoHAsync to pinned memory + sync.
// Each row: per-call time min / median / max over the repetitions for both
// sides, and the median of the paired ratios (ours / raw: below 1 is
// faster than raw).
//
// --variants also measures the candidate paths forced one at a time
// (T4A_TRANSFER_FORCE, read when a runtime's staging is made, and the
// runtime options staging_threads / staging_chunk_bytes / staging_bytes),
// upload and download only, so the thresholds of the automatic plan can
// be chosen from data.
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "t4acuda.h"

namespace {

// The raw driver table, checks and timing helpers are the benchmark's
// (bench/harness.hpp).
using bench::check;
using bench::check_cu;
using bench::Clock;
using bench::load_raw;
using bench::median;
using bench::raw;
using bench::size_name;
using bench::time_loop;

struct SweepRow {
  std::string variant; // "auto" for the library's own plan
  std::string op;      // upload, download, pending, host upload, ...
  uint64_t bytes;
  int iters;
  double ours_min, ours_med, ours_max; // us per call
  double raw_min, raw_med, raw_max;
  double ratio; // median of paired ours/raw
};
std::vector<SweepRow> rows;

// Paired, alternating: `reps` samples of `iters` calls each side.
void measure(const std::string &variant, const std::string &op, uint64_t bytes,
             int reps, const std::function<void()> &ours,
             const std::function<void()> &raw_op) {
  // Warm-up both, then size the loop to ~1.5 ms per sample.
  ours();
  raw_op();
  double t1 = std::max(time_loop(1, ours), time_loop(1, raw_op));
  int iters =
      static_cast<int>(std::clamp(1.5e-3 / std::max(t1, 1e-7), 1.0, 2000.0));
  time_loop(iters, ours);
  time_loop(iters, raw_op);
  std::vector<double> a, b, ratios;
  for (int r = 0; r < reps; ++r) {
    double ta = 0, tb = 0;
    if (r % 2 == 0) {
      ta = time_loop(iters, ours);
      tb = time_loop(iters, raw_op);
    } else {
      tb = time_loop(iters, raw_op);
      ta = time_loop(iters, ours);
    }
    a.push_back(ta * 1e6 / iters);
    b.push_back(tb * 1e6 / iters);
    ratios.push_back(ta / tb);
  }
  SweepRow row{variant,
               op,
               bytes,
               iters,
               *std::min_element(a.begin(), a.end()),
               median(a),
               *std::max_element(a.begin(), a.end()),
               *std::min_element(b.begin(), b.end()),
               median(b),
               *std::max_element(b.begin(), b.end()),
               median(ratios)};
  rows.push_back(row);
  std::printf("%-28s %-13s %10llu %10.2f %10.2f %7.3f%s  [%.2f..%.2f | "
              "%.2f..%.2f] x%d\n",
              variant.c_str(), op.c_str(), (unsigned long long)bytes,
              row.ours_med, row.raw_med, row.ratio,
              row.ratio <= 1.0 ? "" : " SLOWER", row.ours_min, row.ours_max,
              row.raw_min, row.raw_max, iters);
  std::fflush(stdout);
}

struct Variant {
  const char *name;
  const char *force; // T4A_TRANSFER_FORCE ("" for none)
  int32_t threads;   // 0: auto
  uint64_t chunk;    // 0: default
  uint64_t budget;   // 0: default
  bool up = true, down = true, pending = false;
};

struct Setup {
  std::vector<unsigned char> *in, *out;
  void *pinned;
  uint64_t max_bytes;
  std::vector<uint64_t> sizes;
  int reps;
};

void run_variant(const Variant &v, const Setup &su, bool host_rows) {
  if (v.force[0] != '\0')
    setenv("T4A_TRANSFER_FORCE", v.force, 1);
  else
    unsetenv("T4A_TRANSFER_FORCE");
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.staging_threads = v.threads;
  o.staging_chunk_bytes = v.chunk;
  o.staging_bytes = v.budget;
  t4a_runtime rt{};
  check(t4a_runtime_create(&o, &rt), "runtime create");
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  check(t4a_runtime_info_get(rt, &info), "runtime info");
  auto stream = static_cast<CUstream>(info.stream);
  check_cu(raw.cuCtxSetCurrent(static_cast<CUcontext>(info.context)),
           "cuCtxSetCurrent");
  t4a_buffer dbuf{};
  check(t4a_buffer_alloc(rt, su.max_bytes, 0, &dbuf), "alloc");
  t4a_buffer_info binfo = T4A_BUFFER_INFO_INIT;
  check(t4a_buffer_info_get(dbuf, &binfo), "buffer info");
  const CUdeviceptr dptr = binfo.device_pointer;
  unsigned char *in = su.in->data(), *out = su.out->data();
  t4a_host_buffer hb{};
  void *hptr = nullptr;
  if (host_rows) {
    check(t4a_host_buffer_alloc(rt, su.max_bytes, &hb), "host buffer");
    check(t4a_host_buffer_pointer(hb, &hptr, nullptr), "host pointer");
    std::memset(hptr, 1, su.max_bytes);
  }
  for (uint64_t n : su.sizes) {
    if (v.up)
      measure(
          v.name, "upload", n, su.reps,
          [&] {
            check(t4a_buffer_upload(rt, dbuf, 0, in, n), "upload");
            check(t4a_runtime_synchronize(rt), "sync");
          },
          [&] { check_cu(raw.cuMemcpyHtoD(dptr, in, n), "raw htod"); });
    if (v.down)
      measure(
          v.name, "download", n, su.reps,
          [&] {
            check(t4a_buffer_download_sync(rt, dbuf, 0, out, n), "download");
          },
          [&] { check_cu(raw.cuMemcpyDtoH(out, dptr, n), "raw dtoh"); });
    if (v.pending)
      measure(
          v.name, "pending", n, su.reps,
          [&] {
            t4a_download d{};
            check(t4a_buffer_download(rt, dbuf, 0, n, &d), "download");
            check(t4a_download_wait(d, out), "wait");
            check(t4a_download_release(d), "release");
          },
          [&] { check_cu(raw.cuMemcpyDtoH(out, dptr, n), "raw dtoh"); });
    if (host_rows) {
      measure(
          v.name, "host upload", n, su.reps,
          [&] {
            check(t4a_buffer_upload_host(rt, dbuf, 0, hb, 0, n), "up host");
            check(t4a_runtime_synchronize(rt), "sync");
          },
          [&] {
            check_cu(raw.cuMemcpyHtoDAsync(dptr, su.pinned, n, stream), "raw");
            check_cu(raw.cuStreamSynchronize(stream), "sync");
          });
      measure(
          v.name, "host download", n, su.reps,
          [&] {
            check(t4a_buffer_download_host(rt, dbuf, 0, hb, 0, n), "dl host");
            check(t4a_runtime_synchronize(rt), "sync");
          },
          [&] {
            check_cu(raw.cuMemcpyDtoHAsync(su.pinned, dptr, n, stream), "raw");
            check_cu(raw.cuStreamSynchronize(stream), "sync");
          });
    }
  }
  // Correctness at the largest size: what went up comes back.
  check(t4a_buffer_upload(rt, dbuf, 0, in, su.max_bytes), "upload");
  std::memset(out, 0, su.max_bytes);
  check(t4a_buffer_download_sync(rt, dbuf, 0, out, su.max_bytes), "download");
  if (std::memcmp(in, out, su.max_bytes) != 0) {
    std::fprintf(stderr, "sweep: variant %s: round trip differs\n", v.name);
    std::exit(1);
  }
  if (host_rows) check(t4a_host_buffer_release(hb), "release");
  check(t4a_buffer_release(dbuf), "release");
  check(t4a_runtime_destroy(rt), "destroy");
}

} // namespace

int main(int argc, char **argv) {
  const char *json_path = nullptr;
  int reps = 7;
  bool variants = false, quick = false;
  uint64_t max_bytes = uint64_t(256) << 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::max(3, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--max-bytes") && i + 1 < argc)
      max_bytes = std::strtoull(argv[++i], nullptr, 0);
    else if (!std::strcmp(argv[i], "--variants"))
      variants = true;
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--json PATH] [--reps N] [--max-bytes N] "
                   "[--variants] [--quick]\n",
                   argv[0]);
      return 2;
    }
  }
  int32_t count = 0;
  if (t4a_device_count(&count) != T4A_SUCCESS || count == 0 || !load_raw()) {
    std::printf("t4acuda-transfer-probe: no GPU available; nothing "
                "measured\n");
    return 0;
  }
  t4a_device_info dev = T4A_DEVICE_INFO_INIT;
  check(t4a_device_info_get(0, &dev), "device info");
  int32_t driver = 0;
  check(t4a_driver_version(&driver), "driver version");
  unsigned cores = std::thread::hardware_concurrency();

  Setup su;
  su.max_bytes =
      quick ? std::min<uint64_t>(max_bytes, uint64_t(16) << 20) : max_bytes;
  su.reps = reps;
  for (uint64_t n = 4; n <= su.max_bytes; n *= 4) su.sizes.push_back(n);
  std::vector<unsigned char> in(su.max_bytes), out(su.max_bytes);
  for (uint64_t i = 0; i < su.max_bytes; ++i)
    in[i] = static_cast<unsigned char>(i * 131 + (i >> 11));
  std::memset(out.data(), 0, su.max_bytes);
  su.in = &in;
  su.out = &out;
  {
    // Raw pinned memory for the host-buffer rows' raw side, made in the
    // context of a runtime (the device's primary context).
    t4a_runtime rt{};
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    check(t4a_runtime_create(&o, &rt), "runtime create");
    t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
    check(t4a_runtime_info_get(rt, &info), "runtime info");
    check_cu(raw.cuCtxSetCurrent(static_cast<CUcontext>(info.context)),
             "cuCtxSetCurrent");
    check_cu(
        raw.cuMemHostAlloc(&su.pinned, su.max_bytes, CU_MEMHOSTALLOC_PORTABLE),
        "raw pinned");
    std::memset(su.pinned, 1, su.max_bytes);
    check(t4a_runtime_destroy(rt), "destroy");
  }
  std::printf("t4acuda-transfer-probe: %s, driver %d.%d, %u host cores, %d "
              "reps; per-call us (medians), ratio = ours/raw (paired "
              "median)\n",
              dev.name, driver / 1000, (driver % 1000) / 10, cores, reps);
  std::printf("%-28s %-13s %10s %10s %10s %7s\n", "variant", "op", "bytes",
              "ours us", "raw us", "ratio");

  Variant automatic{"auto", "", 0, 0, 0};
  automatic.pending = true;
  run_variant(automatic, su, true);
  if (variants) {
    const uint64_t M = uint64_t(1) << 20;
    // The alternatives to the automatic plan's choices (docs/memory.md,
    // "Transfer paths"); the first probe's wider list is in the history.
    const Variant vs[] = {
        {"inline (1 thread)", "", 1, 0, 0},
        {"part 256K (from 512K)", "part=256K", 0, 0, 0},
        {"part 32K (from 64K)", "part=32K", 0, 0, 0},
        {"piece 2M", "piece=2M", 0, 0, 0},
        {"piece 4M", "piece=4M", 0, 0, 0},
        {"threads 8", "", 8, 0, 0},
        {"threads 12", "", 12, 0, 0},
        {"chunk 16M", "", 0, 16 * M, 128 * M},
        {"upload ahead 0", "ahead=0", 0, 0, 0, true, false},
        {"upload ahead 4", "ahead=4", 0, 0, 0, true, false},
        {"pending chained", "pend=stream", 0, 0, 0, false, false, true},
    };
    for (const Variant &v : vs) run_variant(v, su, false);
  }
  unsetenv("T4A_TRANSFER_FORCE");
  raw.cuMemFreeHost(su.pinned);

  if (json_path != nullptr) {
    FILE *f = std::fopen(json_path, "w");
    if (f == nullptr) {
      std::fprintf(stderr, "sweep: cannot write %s\n", json_path);
      return 1;
    }
    std::fprintf(f,
                 "{\n  \"device\": \"%s\",\n  \"driver\": %d,\n  "
                 "\"host_cores\": %u,\n  \"reps\": %d,\n  \"sweep\": [\n",
                 dev.name, driver, cores, reps);
    for (size_t i = 0; i < rows.size(); ++i) {
      const SweepRow &r = rows[i];
      std::fprintf(
          f,
          "    {\"variant\": \"%s\", \"operation\": \"%s\", \"bytes\": %llu, "
          "\"size\": \"%s\", \"iters\": %d, \"t4acuda_us\": {\"min\": %.4f, "
          "\"median\": %.4f, \"max\": %.4f}, \"raw_us\": {\"min\": %.4f, "
          "\"median\": %.4f, \"max\": %.4f}, \"ratio\": %.4f}%s\n",
          r.variant.c_str(), r.op.c_str(), (unsigned long long)r.bytes,
          size_name(r.bytes).c_str(), r.iters, r.ours_min, r.ours_med,
          r.ours_max, r.raw_min, r.raw_med, r.raw_max, r.ratio,
          i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
  }
  return 0;
}
