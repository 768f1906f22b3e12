#include "core/counters.hpp"

#include <cstdio>
#include <cstdlib>

namespace t4a::core {

namespace {
// Zero-initialized before any dynamic initializer runs, so a counter may
// be registered from any translation unit's initializer.
struct CounterTable {
  int count;
  const char *names[k_max_part_counters];
  uint64_t t4a_runtime_stats::*fields[k_max_part_counters];
};
constinit CounterTable g_counters{};

[[noreturn]] void bad_counter(const char *name, const char *why) {
  // Static initialization: no runtime, no log callback yet; stderr only.
  std::fprintf(stderr, "t4acuda: part counter '%s': %s\n", name, why);
  std::abort();
}
} // namespace

CounterSlot register_counter(const char *name,
                             uint64_t t4a_runtime_stats::*field) {
  CounterTable &t = g_counters;
  if (t.count == k_max_part_counters)
    bad_counter(name, "no slot left (core::k_max_part_counters is too small)");
  for (int i = 0; i < t.count; ++i)
    if (t.fields[i] == field)
      bad_counter(name, "its stats field is already filled by another");
  const auto index = static_cast<uint8_t>(t.count);
  t.names[index] = name;
  t.fields[index] = field;
  ++t.count;
  return CounterSlot{index};
}

void RuntimeCounters::fill(t4a_runtime_stats *s) const {
  s->host_waits = host_waits.get();
  s->trims = trims.get();
  // Frees before allocations, as bytes_now() reads them: a free seen is
  // one whose allocation is seen too.
  s->frees = frees.v.load(std::memory_order_acquire) +
             owned.frees.v.load(std::memory_order_acquire);
  s->allocations = allocation_count();
  s->zero_fills = zero_fills.get();
  s->fills = fills.get();
  s->device_copies = device_copies.get();
  s->bytes_allocated = bytes_now();
  s->bytes_allocated_peak = device_bytes.peak.get();
  s->uploads = uploads.get();
  s->downloads = downloads.get();
  s->bytes_uploaded = bytes_uploaded.get();
  s->bytes_downloaded = bytes_downloaded.get();
  s->staging_bytes_in_use = staging_bytes.now.load(std::memory_order_relaxed);
  s->staging_bytes_peak = staging_bytes.peak.load(std::memory_order_relaxed);
  s->staging_waits = staging_waits.get();
  s->events_recorded = events_recorded.get();
  s->quarantined = quarantined.get();
  s->leaked_allocations = leaked_allocations.get();
  s->launches = launches.get();
  for (int i = 0; i < g_counters.count; ++i)
    s->*g_counters.fields[i] = parts[i].get();
}

bool RuntimeCounters::claim(const void *me) {
  const void *none = &Owned::k_unowned;
  return owned.owner.compare_exchange_strong(none, me,
                                             std::memory_order_acq_rel) ||
         none == me;
}

ProcessCounters &ProcessCounters::instance() {
  static ProcessCounters *p = new ProcessCounters(); // never destroyed
  return *p;
}

void ProcessCounters::fill(t4a_process_stats *s) const {
  s->runtimes_live = runtimes_live.get();
  s->runtimes_leaked = runtimes_leaked.get();
  s->leaked_device_allocations = leaked_device_allocations.get();
  s->leaked_device_bytes = leaked_device_bytes.get();
  s->leaked_staging_bytes = leaked_staging_bytes.get();
  s->leaked_host_buffers = leaked_host_buffers.get();
}

} // namespace t4a::core
