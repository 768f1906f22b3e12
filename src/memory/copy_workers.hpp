// Parallel host copies between pageable memory and pinned staging. A small
// bounded pool of threads per runtime (runtime option staging_threads,
// default default_copy_threads(): the host's cores, at most 16), started on
// first parallel copy. A copy is split into at most `threads` parts of at
// least `min_part` bytes (the transfer plan chooses it, transfer.hpp); the
// calling thread copies one part itself. A copy of fewer than two such
// parts, or with one thread, runs inline.
// Between the chunks of one transfer the workers spin for up to 200 us
// before sleeping, so a pipelined transfer does not pay a wake-up per
// chunk; an idle pool sleeps on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/component.hpp"
#include "core/runtime.hpp"

namespace t4a::memory {

class CopyWorkers final : public core::RuntimeComponent {
public:
  // Finds or makes the runtime's workers (under admission).
  static CopyWorkers &of(core::Runtime &rt);
  explicit CopyWorkers(int threads);
  ~CopyWorkers() override;

  // With `streaming`, the bulk of each part is written with non-temporal
  // stores (the transfer plan's `stream`).
  void copy(void *dst, const void *src, size_t bytes, size_t min_part,
            bool streaming = false);
  int threads() const { return threads_; }
  // Copies that ran on more than one thread (for tests and docs).
  uint64_t parallel_copies() const {
    return parallel_copies_.load(std::memory_order_relaxed);
  }
  void teardown(bool) override {}

private:
  void run();
  // Takes and copies parts of the current job until none is left; under
  // `lock`, which it releases around each memcpy.
  void work(std::unique_lock<std::mutex> &lock);

  const int threads_; // including the caller
  std::vector<std::thread> pool_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> generation_{0}; // changed under mu_
  int sleepers_ = 0;
  bool caller_sleeping_ = false;
  // The job being worked on (under mu_).
  unsigned char *dst_ = nullptr;
  const unsigned char *src_ = nullptr;
  size_t bytes_ = 0;
  bool streaming_ = false;
  size_t part_ = 0;
  size_t parts_ = 0;
  size_t next_ = 0;
  std::atomic<size_t> done_{0};
  std::atomic<uint64_t> parallel_copies_{0};
};

// The automatic copy thread count: the host's cores, at most 16 (the
// caller copies too, so a 16-core host runs 15 workers). Measured on a
// 16-core H200 host: see docs/memory.md.
int default_copy_threads();

} // namespace t4a::memory
