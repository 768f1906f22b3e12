// The process-wide compile counters of t4a_compile_stats, each
// incremented where the thing happens.
#pragma once

#include "core/counters.hpp"
#include "t4acuda.h"

namespace t4a::compile {

struct CompileStats {
  core::Counter requests, memory_hits, disk_hits, nvrtc_invocations,
      nvrtc_successes, disk_corrupt_entries, disk_writes, disk_evictions,
      memory_evictions;
  void fill(t4a_compile_stats *s) const {
    s->requests = requests.get();
    s->memory_hits = memory_hits.get();
    s->disk_hits = disk_hits.get();
    s->nvrtc_invocations = nvrtc_invocations.get();
    s->nvrtc_successes = nvrtc_successes.get();
    s->disk_corrupt_entries = disk_corrupt_entries.get();
    s->disk_writes = disk_writes.get();
    s->disk_evictions = disk_evictions.get();
    s->memory_evictions = memory_evictions.get();
  }
};

// Created on first use, never destroyed.
inline CompileStats &compile_stats() {
  static CompileStats *s = new CompileStats();
  return *s;
}

} // namespace t4a::compile
