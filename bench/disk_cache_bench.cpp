// t4acuda-disk-bench: the disk cache's share of a compile miss, without a
// GPU or NVRTC (docs/performance.md, "Host-only rows"). The disk cache's
// sources are compiled into this program and called directly, as
// t4a_compile does on a miss: disk_read (a Miss) then disk_write of a
// 4 KiB-image entry (about a small kernel's CUBIN).
//
//   t4acuda-disk-bench [--entries N,...] [--reps N]
//
// For each N (default 0, 10^4, 10^5) the row fills a fresh temporary
// directory with N such entries through disk_write, then times `reps`
// misses (default 200) of new keys: median, min, max. A second figure per
// N has a bound that the misses overflow, so that their writes evict:
// mean and max, cleanups included. The directory is removed after. Target:
// the median miss with 10^5 entries ≤ 1 ms; exit status 1 if not met.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compile/compile_stats.hpp"
#include "compile/disk_cache.hpp"
#include "core/log.hpp"

// The library's logger is not linked: warnings go to stderr, the INFO
// lines of evictions are dropped.
namespace t4a::core {
void logf(int32_t level, const char *fmt, ...) {
  if (level > T4A_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}
namespace detail {
__thread int tl_defer_depth = 0;
__thread DeferredLog *tl_deferred = nullptr;
void deliver_deferred() {}
} // namespace detail
} // namespace t4a::core

namespace {

using t4a::compile::Artifact;
using t4a::compile::DiskConfig;
using t4a::core::Digest;

constexpr size_t k_image_bytes = 4096;

Digest key_of(uint64_t i) {
  std::string s = "bench " + std::to_string(i);
  return t4a::core::Sha256::of(s.data(), s.size());
}

Artifact artifact_of(const Digest &key) {
  t4a::compile::Target t;
  t.output = T4A_COMPILE_CUBIN;
  t.arch = 90;
  return Artifact(key, t, std::string(k_image_bytes, 'c'), "", {});
}

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One miss as t4a_compile has it: a lookup that misses, then the write.
double time_miss(const DiskConfig &c, uint64_t serial) {
  Digest key = key_of(serial);
  Artifact a = artifact_of(key);
  t4a::compile::DiskEntry e;
  std::string why;
  double t0 = now_us();
  if (t4a::compile::disk_read(c, key, &e, &why) !=
          t4a::compile::DiskRead::Miss ||
      !t4a::compile::disk_write(c, a, &why)) {
    std::fprintf(stderr, "disk-bench: miss %llu failed: %s\n",
                 static_cast<unsigned long long>(serial), why.c_str());
    std::exit(2);
  }
  return now_us() - t0;
}

void fill(const DiskConfig &c, uint64_t n) {
  std::string why;
  for (uint64_t i = 0; i < n; ++i)
    if (!t4a::compile::disk_write(c, artifact_of(key_of(i)), &why)) {
      std::fprintf(stderr, "disk-bench: fill: %s\n", why.c_str());
      std::exit(2);
    }
}

struct Row {
  double median, min, max, full_mean, full_max;
  uint64_t evictions;
};

Row measure(uint64_t n, int reps) {
  char tmpl[] = "/tmp/t4a-disk-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::exit(2);
  DiskConfig c;
  c.enabled = true;
  c.dir = std::string(tmpl) + "/cache";
  c.max_bytes = uint64_t{1} << 40; // no eviction while filling
  fill(c, n);
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) us.push_back(time_miss(c, (1ull << 40) + r));
  std::sort(us.begin(), us.end());
  Row row{us[us.size() / 2], us.front(), us.back(), 0, 0, 0};
  // Full: a bound the misses overflow, so that their writes evict.
  const uint64_t entry = 128 + k_image_bytes;
  c.max_bytes = (n + static_cast<uint64_t>(reps) / 2) * entry;
  uint64_t evicted = t4a::compile::compile_stats().disk_evictions.get();
  double sum = 0;
  for (int r = 0; r < 2 * reps; ++r) {
    double t = time_miss(c, (1ull << 41) + r);
    sum += t;
    row.full_max = std::max(row.full_max, t);
  }
  row.full_mean = sum / (2 * reps);
  row.evictions = t4a::compile::compile_stats().disk_evictions.get() - evicted;
  std::string cmd = std::string("rm -rf ") + tmpl;
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "disk-bench: could not remove %s\n", tmpl);
  return row;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<uint64_t> counts = {0, 10000, 100000};
  int reps = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) {
      reps = std::max(5, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--entries")) {
      counts.clear();
      for (char *p = argv[i + 1]; *p != '\0';) {
        counts.push_back(std::strtoull(p, &p, 10));
        if (*p == ',') ++p;
      }
    }
  }
  bool met = true;
  std::printf("| row | entries | median | min | max | full: mean | full: max "
              "(evictions) | target |\n|---|---|---|---|---|---|---|---|\n");
  for (uint64_t n : counts) {
    Row r = measure(n, reps);
    bool row_met = n != 100000 || r.median <= 1000.0;
    met = met && row_met;
    std::printf(
        "| compile miss, disk cache bookkeeping | %llu | %.1f us | "
        "%.1f us | %.1f us | %.1f us | %.1f us (%llu) | %s |\n",
        static_cast<unsigned long long>(n), r.median, r.min, r.max, r.full_mean,
        r.full_max, static_cast<unsigned long long>(r.evictions),
        n == 100000 ? (row_met ? "<= 1000 us: yes" : "<= 1000 us: NO") : "-");
    std::fflush(stdout);
  }
  return met ? 0 : 1;
}
