#include "core/counters.hpp"

namespace t4a::core {

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
  s->module_loads = module_loads.get();
  s->module_unloads = module_unloads.get();
  s->module_cache_hits = module_cache_hits.get();
  s->module_evictions = module_evictions.get();
  s->leaked_modules = leaked_modules.get();
  s->completions_recorded = completions_recorded.get();
  s->same_device_copies = same_device_copies.get();
  s->same_device_bytes = same_device_bytes.get();
  s->peer_copies = peer_copies.get();
  s->peer_bytes = peer_bytes.get();
  s->staged_copies = staged_copies.get();
  s->staged_bytes = staged_bytes.get();
  s->cooperative_launches = cooperative_launches.get();
  s->barrier_audit_failures = barrier_audit_failures.get();
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
