// The transfer sweep (group "sweep"): every host transfer at every size
// from 4 B to 256 MiB (powers of 4; 16 MiB at most with --quick), each
// against the raw driver call from the same memory, in the same process,
// paired and alternating (docs/performance.md, "Transfer sweep"):
//   upload pageable        a loop of t4a_buffer_upload, then one
//                          t4a_runtime_synchronize, vs a loop of
//                          cuMemcpyHtoD, then one cuStreamSynchronize of
//                          the legacy stream (cuMemcpyHtoD's): both calls
//                          return once the source is captured;
//   upload pageable, each synchronized (informational, no target)
//                          t4a_buffer_upload + t4a_runtime_synchronize
//                          vs cuMemcpyHtoD alone;
//   download pageable      t4a_buffer_download_sync vs cuMemcpyDtoH;
//   pending download       t4a_buffer_download + t4a_download_wait +
//                          t4a_download_release vs cuMemcpyDtoH;
//   upload host buffer     t4a_buffer_upload_host + t4a_runtime_synchronize
//                          vs cuMemcpyHtoDAsync from pinned memory + sync;
//   download host buffer   t4a_buffer_download_host + t4a_runtime_synchronize
//                          vs cuMemcpyDtoHAsync to pinned memory + sync.
// Each row is per-call microseconds (min / median / max over the
// repetitions, each repetition a loop of ~1.5 ms or one call), its ratio
// the median of the paired ratios ours / raw (a pair is timed back to
// back, alternating which goes first, which cancels drift better than a
// ratio of medians); target <= 1.0x, except the informational rows
// (each-synchronized uploads, "diag:" rows for the host-buffer gap). Series
// "transfer sweep: <kind>", x = bytes (bench/plot.py draws them).
// bench/transfer_probe.cpp is the same sweep with the candidate paths forced.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_rows.hpp"

namespace bench {

namespace {

// `ours_end` / `raw_end` (may be empty) run once after each timed loop,
// inside the timing: the completion of a loop of calls.
// `target`: false for informational rows (no goal).
void sweep_row(const char *kind, uint64_t bytes, int reps,
               const std::function<void()> &ours,
               const std::function<void()> &raw_op,
               const std::function<void()> &ours_end = {},
               const std::function<void()> &raw_end = {}, bool target = true) {
  auto loop = [](int iters, const std::function<void()> &f,
                 const std::function<void()> &end) {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) f();
    if (end) end();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // Warm-up, then a loop of ~1.5 ms per sample.
  loop(1, ours, ours_end);
  loop(1, raw_op, raw_end);
  double t1 = std::max(loop(1, ours, ours_end), loop(1, raw_op, raw_end));
  int iters =
      static_cast<int>(std::clamp(1.5e-3 / std::max(t1, 1e-7), 1.0, 2000.0));
  loop(iters, ours, ours_end);
  loop(iters, raw_op, raw_end);
  std::vector<double> a, b, ratios;
  for (int r = 0; r < reps; ++r) {
    double ta = 0, tb = 0;
    if (r % 2 == 0) {
      ta = loop(iters, ours, ours_end);
      tb = loop(iters, raw_op, raw_end);
    } else {
      tb = loop(iters, raw_op, raw_end);
      ta = loop(iters, ours, ours_end);
    }
    a.push_back(ta * 1e6 / iters);
    b.push_back(tb * 1e6 / iters);
    ratios.push_back(ta / tb);
  }
  Row row;
  row.name = std::string("sweep ") + kind + " " + size_name(bytes);
  row.unit = "us";
  row.ours = stats_of(a);
  row.raw = stats_of(b);
  row.ratio = median(ratios);
  row.goal = target ? Goal::ratio_at_most : Goal::none;
  row.bound = target ? 1.0 : 0.0;
  row.extra.push_back({"iters", double(iters)});
  row.extra.push_back({"bytes", double(bytes)});
  add_row(row);
  series(std::string("transfer sweep: ") + kind, double(bytes));
}

} // namespace

void transfer_sweep_rows(const Context &c) {
  const uint64_t max_bytes =
      c.quick ? (uint64_t(16) << 20) : (uint64_t(256) << 20);
  const int reps = std::max(5, c.reps);
  t4a_buffer dbuf{};
  check(t4a_buffer_alloc(c.rt, max_bytes, 0, &dbuf), "alloc");
  t4a_buffer_info bi = T4A_BUFFER_INFO_INIT;
  check(t4a_buffer_info_get(dbuf, &bi), "buffer info");
  const CUdeviceptr dptr = bi.device_pointer;
  t4a_host_buffer hb{};
  check(t4a_host_buffer_alloc(c.rt, max_bytes, &hb), "host buffer");
  void *hptr = nullptr;
  check(t4a_host_buffer_pointer(hb, &hptr, nullptr), "host pointer");
  void *pinned = nullptr;
  check_cu(raw.cuMemHostAlloc(&pinned, max_bytes, CU_MEMHOSTALLOC_PORTABLE),
           "raw pinned");
  std::vector<unsigned char> in(max_bytes), out(max_bytes);
  for (uint64_t i = 0; i < max_bytes; ++i)
    in[i] = static_cast<unsigned char>(i * 131 + (i >> 11));
  std::memset(out.data(), 0, max_bytes);
  std::memset(hptr, 1, max_bytes);
  std::memset(pinned, 1, max_bytes);
  const t4a_runtime rt = c.rt;
  const CUstream stream = c.stream;

  for (uint64_t n = 4; n <= max_bytes; n *= 4) {
    // Uploads: a loop of calls, then one completion on each side. The
    // two calls have the same contract (return once the source is
    // captured; the DMA may still run), so each side's completion is timed
    // once per loop, as a caller streaming uploads pays it.
    sweep_row(
        "upload pageable", n, reps,
        [&] { check(t4a_buffer_upload(rt, dbuf, 0, in.data(), n), "upload"); },
        [&] { check_cu(raw.cuMemcpyHtoD(dptr, in.data(), n), "raw htod"); },
        [&] { check(t4a_runtime_synchronize(rt), "sync"); },
        [&] {
          check_cu(raw.cuStreamSynchronize(CU_STREAM_LEGACY), "sync legacy");
        });
    // Informational: each upload followed by t4a_runtime_synchronize,
    // against cuMemcpyHtoD alone (which does not wait for its DMA).
    sweep_row(
        "upload pageable, each synchronized", n, reps,
        [&] {
          check(t4a_buffer_upload(rt, dbuf, 0, in.data(), n), "upload");
          check(t4a_runtime_synchronize(rt), "sync");
        },
        [&] { check_cu(raw.cuMemcpyHtoD(dptr, in.data(), n), "raw htod"); }, {},
        {}, false);
    sweep_row(
        "download pageable", n, reps,
        [&] {
          check(t4a_buffer_download_sync(rt, dbuf, 0, out.data(), n),
                "download");
        },
        [&] { check_cu(raw.cuMemcpyDtoH(out.data(), dptr, n), "raw dtoh"); });
    sweep_row(
        "pending download", n, reps,
        [&] {
          t4a_download d{};
          check(t4a_buffer_download(rt, dbuf, 0, n, &d), "download");
          check(t4a_download_wait(d, out.data()), "wait");
          check(t4a_download_release(d), "release");
        },
        [&] { check_cu(raw.cuMemcpyDtoH(out.data(), dptr, n), "raw dtoh"); });
    sweep_row(
        "upload host buffer", n, reps,
        [&] {
          check(t4a_buffer_upload_host(rt, dbuf, 0, hb, 0, n), "up host");
          check(t4a_runtime_synchronize(rt), "sync");
        },
        [&] {
          check_cu(raw.cuMemcpyHtoDAsync(dptr, pinned, n, stream), "raw");
          check_cu(raw.cuStreamSynchronize(stream), "sync");
        });
    sweep_row(
        "download host buffer", n, reps,
        [&] {
          check(t4a_buffer_download_host(rt, dbuf, 0, hb, 0, n), "dl host");
          check(t4a_runtime_synchronize(rt), "sync");
        },
        [&] {
          check_cu(raw.cuMemcpyDtoHAsync(pinned, dptr, n, stream), "raw");
          check_cu(raw.cuStreamSynchronize(stream), "sync");
        });
  }
  // Where the host-buffer rows' gap is (informational, 4 B and 64 KiB):
  // the same upload completed by a plain cuStreamSynchronize instead of
  // t4a_runtime_synchronize, and t4a_runtime_synchronize of an idle
  // runtime against cuStreamSynchronize.
  for (uint64_t n : {uint64_t(4), uint64_t(64) << 10}) {
    sweep_row(
        "diag: upload host buffer + cuStreamSynchronize", n, reps,
        [&] {
          check(t4a_buffer_upload_host(rt, dbuf, 0, hb, 0, n), "up host");
          check_cu(raw.cuStreamSynchronize(stream), "sync");
        },
        [&] {
          check_cu(raw.cuMemcpyHtoDAsync(dptr, pinned, n, stream), "raw");
          check_cu(raw.cuStreamSynchronize(stream), "sync");
        },
        {}, {}, false);
  }
  check(t4a_runtime_synchronize(rt), "sync"); // retire what the rows kept
  sweep_row(
      "diag: t4a_runtime_synchronize, idle", 0, reps,
      [&] { check(t4a_runtime_synchronize(rt), "sync"); },
      [&] { check_cu(raw.cuStreamSynchronize(stream), "sync"); }, {}, {},
      false);

  // What went up comes back, at the largest size.
  check(t4a_buffer_upload(rt, dbuf, 0, in.data(), max_bytes), "upload");
  std::memset(out.data(), 0, max_bytes);
  check(t4a_buffer_download_sync(rt, dbuf, 0, out.data(), max_bytes),
        "download");
  if (std::memcmp(in.data(), out.data(), max_bytes) != 0) {
    std::fprintf(stderr, "bench: transfer sweep: the round trip differs\n");
    std::exit(1);
  }
  check_cu(raw.cuMemFreeHost(pinned), "free pinned");
  check(t4a_host_buffer_release(hb), "release");
  check(t4a_buffer_release(dbuf), "release");
}

} // namespace bench
