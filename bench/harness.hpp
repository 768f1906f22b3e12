// The benchmark harness: rows, timing helpers, the raw driver table, the
// run-merging scheme and the JSON / table output. Every bench/*.cpp file
// adds rows through these functions; t4acuda_bench.cpp's main() calls the
// row groups.
//
// A row pairs one t4acuda operation with the raw driver call it wraps.
// Each side keeps min / median / max over the repetitions of one run;
// `ratio` is the ratio of the medians (ours / raw). With `--runs N`
// (default 3) the benchmark re-executes itself N times (`--one-run FILE`)
// and merges: per row the medians of every run, the ratio's median, min
// and max across runs, and `met` decided on the median across runs.
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "t4acuda.h"

namespace bench {

using Clock = std::chrono::steady_clock;

// ---- the raw driver: the benchmark's own dlopen of libcuda ----
#define BENCH_DRV_FN(name) decltype(&::name) name = nullptr
struct Raw {
  BENCH_DRV_FN(cuCtxSetCurrent);
  BENCH_DRV_FN(cuStreamSynchronize);
  BENCH_DRV_FN(cuStreamCreate);
  BENCH_DRV_FN(cuStreamDestroy);
  BENCH_DRV_FN(cuMemAllocFromPoolAsync);
  BENCH_DRV_FN(cuMemFreeAsync);
  BENCH_DRV_FN(cuMemcpyHtoDAsync);
  BENCH_DRV_FN(cuMemcpyDtoHAsync);
  BENCH_DRV_FN(cuMemcpyDtoDAsync);
  BENCH_DRV_FN(cuMemcpyHtoD);
  BENCH_DRV_FN(cuMemcpyDtoH);
  BENCH_DRV_FN(cuMemHostAlloc);
  BENCH_DRV_FN(cuMemFreeHost);
  BENCH_DRV_FN(cuModuleLoadData);
  BENCH_DRV_FN(cuModuleUnload);
  BENCH_DRV_FN(cuModuleGetFunction);
  BENCH_DRV_FN(cuLaunchKernel);
  BENCH_DRV_FN(cuEventCreate);
  BENCH_DRV_FN(cuEventDestroy);
  BENCH_DRV_FN(cuEventRecord);
  BENCH_DRV_FN(cuEventSynchronize);
  BENCH_DRV_FN(cuStreamWaitEvent);
  BENCH_DRV_FN(cuMemcpyPeerAsync);
};
#undef BENCH_DRV_FN
extern Raw raw;

// Loads libcuda and fills `raw`; false (with a message) when it cannot.
bool load_raw();
// Any other driver entry point by name, for row files that need one the
// table lacks: nullptr when it cannot be resolved.
void *raw_symbol(const char *name);
template <class F> F raw_fn(const char *name) {
  return reinterpret_cast<F>(raw_symbol(name));
}

// Exit with a message unless the call succeeded.
void check(t4a_status s, const char *what);
void check_cu(CUresult r, const char *what);

// ---- timing ----
double median(std::vector<double> v);
double now_us();
// "4 B", "64 KiB", "256 MiB": a transfer size as the rows name it.
std::string size_name(uint64_t n);
// Times `iters` calls of f; seconds.
double time_loop(int iters, const std::function<void()> &f);

struct Stats {
  double min = 0, median = 0, max = 0;
};
Stats stats_of(const std::vector<double> &v);

// What a row's target compares.
enum class Goal {
  none,           // recorded only
  ratio_at_most,  // ratio <= bound (lower is better: latencies)
  ratio_at_least, // ratio >= bound (higher is better: bandwidths, rates)
  value_at_most,  // ours.median <= bound (a fixed bound in `unit`)
};

struct Row {
  std::string name;
  std::string unit; // "us" (lower is better), "GB/s", "M/s" (higher)
  // Scaling rows: the series (plot) they belong to and their x value
  // (count of modules, live handles, threads, bytes); "" for other rows.
  std::string series;
  double x = 0;
  Stats ours, raw;  // over the repetitions of one run (merged: see below)
  double ratio = 0; // ours.median / raw.median (0 without a raw side)
  Goal goal = Goal::none;
  double bound = 0;
  bool met = true;
  // Extra named numbers (events recorded, launches done, ...).
  std::vector<std::pair<std::string, double>> extra;
  // Filled by merging runs: the per-run ratios, medians and the ratio's
  // spread; `ours` and `raw` then hold the min and max over every
  // repetition of every run and the median of the per-run medians, and
  // `ratio` the median of the per-run ratios.
  std::vector<double> run_ratios;
  std::vector<double> run_ours, run_raw;
  Stats ratio_runs;
};

// The rows added so far, in order.
std::vector<Row> &rows();
// Appends a row, deciding `met` from goal and bound; returns it (the
// reference is valid until the next add).
Row &add_row(Row r);
// Tags the last row added with a series and x value.
void series(const std::string &name, double x);
// The target as text ("<= 1.03x", ">= 0.95x", "<= 20 us", "-").
std::string target_text(const Row &r);
// Decides met from goal, bound, ratio and ours.median.
bool meets(const Row &r);

// Latency row: per-call microseconds, ours and raw alternating for
// 3 * reps paired samples of `iters` calls each (after two warm-up
// rounds), `settle` run between samples (untimed). Target: ratio <=
// max_ratio (0: none).
Row &latency(const std::string &name, int reps, int iters,
             const std::function<void()> &ours,
             const std::function<void()> &raw_op,
             const std::function<void()> &settle, double max_ratio);

// Bandwidth row: GB/s of one call moving `bytes` (its completion included),
// `reps` samples each side after one untimed call; `prepare` (if set) runs
// untimed before every call of either side. Target: ratio >= min_ratio
// (0: none).
Row &bandwidth(const std::string &name, int reps, uint64_t bytes,
               const std::function<void()> &ours,
               const std::function<void()> &raw_op, double min_ratio,
               const std::function<void()> &prepare = nullptr);

// A row with a fixed bound instead of a raw counterpart (unit us, lower is
// better); `reference_us` is shown in the raw column (0: none).
Row &bounded(const std::string &name, const std::vector<double> &ours_us,
             double reference_us, double max_us);
Row &bounded(const std::string &name, double ours_us, double reference_us,
             double max_us);

// ---- row groups ----
// `--only a,b` selects groups by name; every group is on by default.
bool enabled(const char *group);

// What a row group gets from main().
struct Context {
  t4a_runtime rt{};
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUmemoryPool pool = nullptr;
  int reps = 7;
  bool quick = false;
  unsigned cores = 1;
  int32_t devices = 1;
  void sync() const; // cuStreamSynchronize(stream), checked
};

// A scratch directory (mode 0700) shared by every run of one benchmark:
// merge_runs() creates it and passes it to the runs in
// T4A_BENCH_SCRATCH; a single run creates its own. Rows use it for disk
// caches that later runs may reuse (the compile results of the scaling
// rows). remove_scratch() deletes it when this process created it.
const std::string &scratch_dir();
void remove_scratch();

// ---- output ----
struct Meta {
  std::string device;
  int driver = 0;
  unsigned cores = 0;
  int reps = 0;
  int runs = 1;
};
// Parses the shared options (--only, --reps, --quick); main() handles
// the rest.
void parse_common(int argc, char **argv, int &reps, bool &quick);
// Prints the table of rows() (merged or one run).
void print_table(const Meta &m);
// Writes the JSON of rows().
bool write_json(const char *path, const Meta &m);
// One run's rows in the line format merge_runs() reads.
bool write_run(const char *path, const Meta &m);
// Re-executes this program `runs` times with `child_args` plus
// `--one-run FILE`, and replaces rows() with the merged rows. False when a
// run failed (its status is printed).
bool merge_runs(int runs, const std::vector<std::string> &child_args, Meta &m);

} // namespace bench
