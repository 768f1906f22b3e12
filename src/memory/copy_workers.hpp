// Parallel host copies between pageable memory and pinned staging. A small
// bounded pool of threads per runtime (runtime option staging_threads,
// default half the host's cores, at most 8), started on first large copy.
// A copy is split into parts of at least 1 MiB; the calling thread copies
// one part itself. Copies below 2 MiB, or with one thread, run inline.
#pragma once

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

  void copy(void *dst, const void *src, size_t bytes);
  int threads() const { return threads_; }
  void teardown(bool) override {}

private:
  void run();

  const int threads_; // including the caller
  std::vector<std::thread> pool_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  // The job being worked on.
  unsigned char *dst_ = nullptr;
  const unsigned char *src_ = nullptr;
  size_t bytes_ = 0;
  size_t part_ = 0;
  size_t parts_ = 0;
  size_t next_ = 0;
  size_t done_ = 0;
};

} // namespace t4a::memory
