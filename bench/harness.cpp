// The benchmark harness (see harness.hpp).
#include "harness.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace bench {

Raw raw;

namespace {

using Gpa = CUresult (*)(const char *, void **, int, cuuint64_t,
                         CUdriverProcAddressQueryResult *);
Gpa g_gpa = nullptr;
std::vector<Row> g_rows;
std::set<std::string> g_only; // empty: every group
std::string g_scratch;
bool g_scratch_owned = false;

} // namespace

void *raw_symbol(const char *name) {
  if (g_gpa == nullptr) return nullptr;
  void *slot = nullptr;
  CUdriverProcAddressQueryResult q{};
  if (g_gpa(name, &slot, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) !=
      CUDA_SUCCESS)
    return nullptr;
  return slot;
}

bool load_raw() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  g_gpa = reinterpret_cast<Gpa>(dlsym(h, "cuGetProcAddress_v2"));
  if (g_gpa == nullptr) return false;
  bool ok = true;
  auto get = [&](const char *name, void **slot) {
    *slot = raw_symbol(name);
    if (*slot == nullptr) {
      std::fprintf(stderr, "bench: cannot resolve %s\n", name);
      ok = false;
    }
  };
#define GET(name) get(#name, reinterpret_cast<void **>(&raw.name))
  GET(cuCtxSetCurrent);
  GET(cuStreamSynchronize);
  GET(cuStreamCreate);
  GET(cuStreamDestroy);
  GET(cuMemAllocFromPoolAsync);
  GET(cuMemFreeAsync);
  GET(cuMemcpyHtoDAsync);
  GET(cuMemcpyDtoHAsync);
  GET(cuMemcpyDtoDAsync);
  GET(cuMemcpyHtoD);
  GET(cuMemcpyDtoH);
  GET(cuMemHostAlloc);
  GET(cuMemFreeHost);
  GET(cuModuleLoadData);
  GET(cuModuleUnload);
  GET(cuModuleGetFunction);
  GET(cuLaunchKernel);
  GET(cuEventCreate);
  GET(cuEventDestroy);
  GET(cuEventRecord);
  GET(cuEventSynchronize);
  GET(cuStreamWaitEvent);
  GET(cuMemcpyPeerAsync);
#undef GET
  return ok;
}

void check(t4a_status s, const char *what) {
  if (s == T4A_SUCCESS) return;
  char msg[2048];
  size_t needed = 0;
  t4a_last_error_message(msg, sizeof msg, &needed);
  std::fprintf(stderr, "bench: %s failed: %s: %s\n", what, t4a_status_name(s),
               msg);
  std::exit(1);
}

void check_cu(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return;
  std::fprintf(stderr, "bench: %s failed: CUresult %d\n", what, int(r));
  std::exit(1);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(
             Clock::now().time_since_epoch())
      .count();
}

std::string size_name(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%llu MiB", (unsigned long long)(n >> 20));
  else if (n >= 1024)
    std::snprintf(buf, sizeof buf, "%llu KiB", (unsigned long long)(n >> 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)n);
  return buf;
}

double time_loop(int iters, const std::function<void()> &f) {
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Stats stats_of(const std::vector<double> &v) {
  if (v.empty()) return {};
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {*lo, median(v), *hi};
}

std::vector<Row> &rows() { return g_rows; }

bool meets(const Row &r) {
  switch (r.goal) {
  case Goal::none: return true;
  case Goal::ratio_at_most: return r.ratio <= r.bound;
  case Goal::ratio_at_least: return r.ratio >= r.bound;
  case Goal::value_at_most: return r.ours.median <= r.bound;
  }
  return true;
}

std::string target_text(const Row &r) {
  char t[64];
  switch (r.goal) {
  case Goal::none: return "-";
  case Goal::ratio_at_most:
    std::snprintf(t, sizeof t, "<= %.2fx", r.bound);
    break;
  case Goal::ratio_at_least:
    std::snprintf(t, sizeof t, ">= %.2fx", r.bound);
    break;
  case Goal::value_at_most:
    std::snprintf(t, sizeof t, "<= %.0f %s", r.bound, r.unit.c_str());
    break;
  }
  return t;
}

Row &add_row(Row r) {
  if (r.ratio == 0 && r.raw.median > 0) r.ratio = r.ours.median / r.raw.median;
  r.met = meets(r);
  g_rows.push_back(std::move(r));
  return g_rows.back();
}

void series(const std::string &name, double x) {
  if (g_rows.empty()) return;
  g_rows.back().series = name;
  g_rows.back().x = x;
}

Row &latency(const std::string &name, int reps, int iters,
             const std::function<void()> &ours,
             const std::function<void()> &raw_op,
             const std::function<void()> &settle, double max_ratio) {
  for (int w = 0; w < 2; ++w) { // warm-up
    time_loop(iters / 4 + 1, ours);
    settle();
    time_loop(iters / 4 + 1, raw_op);
    settle();
  }
  // Paired samples, three per rep, alternating which side goes first.
  std::vector<double> a, b, paired;
  for (int r = 0; r < 3 * reps; ++r) {
    double ta = 0, tb = 0;
    if (r % 2 == 0) {
      ta = time_loop(iters, ours);
      settle();
      tb = time_loop(iters, raw_op);
      settle();
    } else {
      tb = time_loop(iters, raw_op);
      settle();
      ta = time_loop(iters, ours);
      settle();
    }
    a.push_back(ta * 1e6 / iters);
    b.push_back(tb * 1e6 / iters);
    paired.push_back(ta / tb);
  }
  Row r;
  r.name = name;
  r.unit = "us";
  r.ours = stats_of(a);
  r.raw = stats_of(b);
  r.goal = max_ratio > 0 ? Goal::ratio_at_most : Goal::none;
  r.bound = max_ratio;
  r.extra.push_back({"paired_ratio_median", median(paired)});
  return add_row(std::move(r));
}

Row &bandwidth(const std::string &name, int reps, uint64_t bytes,
               const std::function<void()> &ours,
               const std::function<void()> &raw_op, double min_ratio,
               const std::function<void()> &prepare) {
  std::vector<double> a, b;
  auto gbps = [&](const std::function<void()> &f) {
    if (prepare) prepare();
    return double(bytes) / time_loop(1, f) / 1e9;
  };
  ours();
  raw_op();
  for (int r = 0; r < reps; ++r) {
    if (r % 2 == 0) {
      a.push_back(gbps(ours));
      b.push_back(gbps(raw_op));
    } else {
      b.push_back(gbps(raw_op));
      a.push_back(gbps(ours));
    }
  }
  Row r;
  r.name = name;
  r.unit = "GB/s";
  r.ours = stats_of(a);
  r.raw = stats_of(b);
  r.goal = min_ratio > 0 ? Goal::ratio_at_least : Goal::none;
  r.bound = min_ratio;
  return add_row(std::move(r));
}

Row &bounded(const std::string &name, const std::vector<double> &ours_us,
             double reference_us, double max_us) {
  Row r;
  r.name = name;
  r.unit = "us";
  r.ours = stats_of(ours_us);
  r.raw = {reference_us, reference_us, reference_us};
  r.ratio = reference_us > 0 ? r.ours.median / reference_us : 0.0;
  r.goal = Goal::value_at_most;
  r.bound = max_us;
  return add_row(std::move(r));
}

Row &bounded(const std::string &name, double ours_us, double reference_us,
             double max_us) {
  return bounded(name, std::vector<double>{ours_us}, reference_us, max_us);
}

const std::string &scratch_dir() {
  if (!g_scratch.empty()) return g_scratch;
  if (const char *e = std::getenv("T4A_BENCH_SCRATCH"); e && *e) {
    g_scratch = e;
    return g_scratch;
  }
  char dir_template[] = "/tmp/t4a-bench-scratch-XXXXXX";
  if (const char *d = mkdtemp(dir_template); d != nullptr) {
    g_scratch = d;
    g_scratch_owned = true;
  }
  return g_scratch;
}

void remove_scratch() {
  if (!g_scratch_owned || g_scratch.empty()) return;
  std::string cmd = "rm -rf '" + g_scratch + "'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "bench: could not remove %s\n", g_scratch.c_str());
  g_scratch.clear();
  g_scratch_owned = false;
}

bool enabled(const char *group) {
  return g_only.empty() || g_only.count(group) != 0;
}

void Context::sync() const {
  check_cu(raw.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void parse_common(int argc, char **argv, int &reps, bool &quick) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::max(5, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      std::string g;
      while (std::getline(ss, g, ',')) g_only.insert(g);
    }
  }
}

void print_table(const Meta &m) {
  std::printf("\nt4acuda-bench: %s, driver %d.%d, %u host cores, %d reps, "
              "%d run%s (medians; across runs: median [min .. max] of the "
              "per-run ratios); library built %s\n",
              m.device.c_str(), m.driver / 1000, (m.driver % 1000) / 10,
              m.cores, m.reps, m.runs, m.runs == 1 ? "" : "s",
              T4A_BENCH_LIBRARY_BUILD);
  std::printf("%-40s %12s %12s %8s %17s %10s %s\n", "operation", "t4acuda",
              "raw", "ratio", "runs [min..max]", "target", "met");
  for (const Row &r : g_rows) {
    char spread[48] = "";
    if (r.run_ratios.size() > 1)
      std::snprintf(spread, sizeof spread, "[%.3f..%.3f]", r.ratio_runs.min,
                    r.ratio_runs.max);
    std::printf("%-40s %9.3f %-4s %7.3f %-4s %7.3f %17s %10s %s\n",
                r.name.c_str(), r.ours.median, r.unit.c_str(), r.raw.median,
                r.unit.c_str(), r.ratio, spread, target_text(r).c_str(),
                r.met ? "yes" : "NO");
  }
}

namespace {

void json_stats(FILE *f, const char *key, const Stats &s) {
  std::fprintf(f, "\"%s\": {\"min\": %.4f, \"median\": %.4f, \"max\": %.4f}",
               key, s.min, s.median, s.max);
}

void json_list(FILE *f, const char *key, const std::vector<double> &v) {
  std::fprintf(f, "\"%s\": [", key);
  for (size_t i = 0; i < v.size(); ++i)
    std::fprintf(f, "%s%.4f", i ? ", " : "", v[i]);
  std::fprintf(f, "]");
}

} // namespace

bool write_json(const char *path, const Meta &m) {
  FILE *f = std::fopen(path, "w");
  if (f == nullptr) return false;
  std::fprintf(f,
               "{\n  \"device\": \"%s\",\n  \"driver\": %d,\n  "
               "\"host_cores\": %u,\n  \"reps\": %d,\n  \"runs\": %d,\n  "
               "\"library_build\": \"%s\",\n  \"rows\": [\n",
               m.device.c_str(), m.driver, m.cores, m.reps, m.runs,
               T4A_BENCH_LIBRARY_BUILD);
  for (size_t i = 0; i < g_rows.size(); ++i) {
    const Row &r = g_rows[i];
    std::fprintf(f,
                 "    {\"operation\": \"%s\", \"unit\": \"%s\", "
                 "\"series\": \"%s\", \"x\": %.6g, ",
                 r.name.c_str(), r.unit.c_str(), r.series.c_str(), r.x);
    // "t4acuda" and "raw" are the medians (the keys earlier JSON had).
    std::fprintf(f, "\"t4acuda\": %.4f, \"raw\": %.4f, ", r.ours.median,
                 r.raw.median);
    json_stats(f, "t4acuda_stats", r.ours);
    std::fprintf(f, ", ");
    json_stats(f, "raw_stats", r.raw);
    std::fprintf(f, ", \"ratio\": %.4f, ", r.ratio);
    if (!r.run_ratios.empty()) {
      json_stats(f, "ratio_runs", r.ratio_runs);
      std::fprintf(f, ", ");
      json_list(f, "run_ratios", r.run_ratios);
      std::fprintf(f, ", ");
      json_list(f, "run_t4acuda", r.run_ours);
      std::fprintf(f, ", ");
      json_list(f, "run_raw", r.run_raw);
      std::fprintf(f, ", ");
    }
    std::fprintf(f, "\"extra\": {");
    for (size_t k = 0; k < r.extra.size(); ++k)
      std::fprintf(f, "%s\"%s\": %.6g", k ? ", " : "", r.extra[k].first.c_str(),
                   r.extra[k].second);
    std::fprintf(f, "}, \"target\": \"%s\", \"met\": %s}%s\n",
                 target_text(r).c_str(), r.met ? "true" : "false",
                 i + 1 < g_rows.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  return std::fclose(f) == 0;
}

// One run's rows, one per line, tab-separated:
//   meta <device> <driver> <cores> <reps>
//   row <name> <unit> <series> <x> <goal> <bound> <ours min med max>
//       <raw min med max> <ratio> <extra k=v;k=v>
bool write_run(const char *path, const Meta &m) {
  FILE *f = std::fopen(path, "w");
  if (f == nullptr) return false;
  std::fprintf(f, "meta\t%s\t%d\t%u\t%d\n", m.device.c_str(), m.driver, m.cores,
               m.reps);
  for (const Row &r : g_rows) {
    std::fprintf(f, "row\t%s\t%s\t%s\t%.17g\t%d\t%.17g", r.name.c_str(),
                 r.unit.c_str(), r.series.empty() ? "-" : r.series.c_str(), r.x,
                 int(r.goal), r.bound);
    for (const Stats *s : {&r.ours, &r.raw})
      std::fprintf(f, "\t%.17g\t%.17g\t%.17g", s->min, s->median, s->max);
    std::fprintf(f, "\t%.17g\t", r.ratio);
    for (size_t k = 0; k < r.extra.size(); ++k)
      std::fprintf(f, "%s%s=%.17g", k ? ";" : "", r.extra[k].first.c_str(),
                   r.extra[k].second);
    std::fprintf(f, "\n");
  }
  return std::fclose(f) == 0;
}

namespace {

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::stringstream ss(s);
  while (std::getline(ss, cur, sep)) out.push_back(cur);
  // getline drops an empty last field ("a\tb\t"): a row without extras
  // ends with one, and must keep it (read_run counts the fields).
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

bool read_run(const std::string &path, Meta &m, std::vector<Row> &out) {
  FILE *f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char line[8192];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    auto v = split(s, '\t');
    if (v.size() >= 5 && v[0] == "meta") {
      m.device = v[1];
      m.driver = std::atoi(v[2].c_str());
      m.cores = unsigned(std::atoi(v[3].c_str()));
      m.reps = std::atoi(v[4].c_str());
    } else if (v.size() >= 15 && v[0] == "row") {
      Row r;
      r.name = v[1];
      r.unit = v[2];
      r.series = v[3] == "-" ? "" : v[3];
      r.x = std::atof(v[4].c_str());
      r.goal = Goal(std::atoi(v[5].c_str()));
      r.bound = std::atof(v[6].c_str());
      r.ours = {std::atof(v[7].c_str()), std::atof(v[8].c_str()),
                std::atof(v[9].c_str())};
      r.raw = {std::atof(v[10].c_str()), std::atof(v[11].c_str()),
               std::atof(v[12].c_str())};
      r.ratio = std::atof(v[13].c_str());
      if (v.size() > 14 && !v[14].empty())
        for (const std::string &kv : split(v[14], ';')) {
          auto eq = kv.find('=');
          if (eq != std::string::npos)
            r.extra.push_back(
                {kv.substr(0, eq), std::atof(kv.c_str() + eq + 1)});
        }
      out.push_back(std::move(r));
    }
  }
  std::fclose(f);
  return true;
}

} // namespace

bool merge_runs(int runs, const std::vector<std::string> &child_args, Meta &m) {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return false;
  exe[len] = '\0';
  char dir_template[] = "/tmp/t4a-bench-runs-XXXXXX";
  const char *dir = mkdtemp(dir_template);
  if (dir == nullptr) return false;
  std::vector<std::vector<Row>> per_run;
  bool ok = true;
  if (!scratch_dir().empty())
    setenv("T4A_BENCH_SCRATCH", scratch_dir().c_str(), 1);
  for (int i = 0; i < runs; ++i) {
    std::string file = std::string(dir) + "/run" + std::to_string(i);
    std::string cmd = std::string("'") + exe + "'";
    for (const std::string &a : child_args) cmd += " '" + a + "'";
    cmd += " --one-run '" + file + "'";
    std::printf("bench: run %d of %d\n", i + 1, runs);
    std::fflush(stdout);
    int st = std::system(cmd.c_str());
    std::vector<Row> rs;
    if (st != 0 || !read_run(file, m, rs)) {
      std::fprintf(stderr, "bench: run %d failed (status %d)\n", i + 1, st);
      ok = false;
      continue;
    }
    per_run.push_back(std::move(rs));
    std::remove(file.c_str());
  }
  rmdir(dir);
  unsetenv("T4A_BENCH_SCRATCH");
  remove_scratch();
  if (per_run.empty()) return false;
  // Merge by row name, in the order of the first run that has the row.
  g_rows.clear();
  std::map<std::string, size_t> index;
  for (const auto &rs : per_run)
    for (const Row &r : rs) {
      auto it = index.find(r.name);
      if (it == index.end()) {
        index[r.name] = g_rows.size();
        Row merged = r;
        for (auto &e : merged.extra) e.first = "run1_" + e.first;
        merged.run_ratios = {r.ratio};
        merged.run_ours = {r.ours.median};
        merged.run_raw = {r.raw.median};
        g_rows.push_back(std::move(merged));
      } else {
        Row &mr = g_rows[it->second];
        mr.run_ratios.push_back(r.ratio);
        mr.run_ours.push_back(r.ours.median);
        mr.run_raw.push_back(r.raw.median);
        mr.ours.min = std::min(mr.ours.min, r.ours.min);
        mr.ours.max = std::max(mr.ours.max, r.ours.max);
        mr.raw.min = std::min(mr.raw.min, r.raw.min);
        mr.raw.max = std::max(mr.raw.max, r.raw.max);
        for (const auto &e : r.extra)
          mr.extra.push_back(
              {"run" + std::to_string(mr.run_ratios.size()) + "_" + e.first,
               e.second});
      }
    }
  // Merged: min and max over every repetition of every run, the median
  // of the per-run medians; the ratio is the median of the per-run ratios.
  for (Row &r : g_rows) {
    r.ratio_runs = stats_of(r.run_ratios);
    r.ratio = r.ratio_runs.median;
    r.ours.median = median(r.run_ours);
    r.raw.median = median(r.run_raw);
    r.met = meets(r);
  }
  m.runs = int(per_run.size());
  return ok;
}

} // namespace bench
