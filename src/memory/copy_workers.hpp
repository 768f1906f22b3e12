// Parallel host copies between pageable memory and pinned staging. A small
// bounded pool of threads per runtime (runtime option staging_threads,
// default default_copy_threads(): the host's cores, at most 16), started on
// first parallel copy. A copy is split into at most `threads` parts of at
// least `min_part` bytes (the transfer plan chooses it, transfer_plan.hpp);
// a copy of fewer than two such parts, or with one thread, runs inline.
//
// Copies are queued: submit() hands one to the workers and returns at
// once, wait() completes it, the calling thread copying parts meanwhile.
// Up to k_jobs copies are outstanding, and the workers take parts in
// submission order across them, so a pipelined upload keeps every thread
// busy while its caller enqueues the DMA of the piece before (no barrier
// per piece; docs/memory.md, "Transfer paths"). submit, wait and copy are
// called by one thread at a time (the runtime's admission holder). A
// runtime's workers are its part "copy workers" (made by the transfers,
// transfer.cpp); this file knows no runtime, so the host lane tests it
// alone.
//
// Between copies the workers spin for up to 200 us before sleeping, so a
// pipelined transfer does not pay a wake-up per piece; an idle pool sleeps
// on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/component.hpp"

namespace t4a::memory {

class CopyWorkers final : public core::RuntimeComponent {
public:
  // A queued copy; 0 names a copy that ran inline (already complete).
  using Ticket = uint64_t;
  static constexpr size_t k_jobs = 8;

  explicit CopyWorkers(int threads);
  // Completes every queued copy, then stops the threads.
  ~CopyWorkers() override;

  // Queues a copy of `bytes` from src to dst (with `streaming`, the bulk
  // of each part is written with non-temporal stores: the transfer plan's
  // `stream`). When k_jobs copies are outstanding, the oldest is waited
  // for first. Both ranges must stay valid until wait() returns for it.
  Ticket submit(void *dst, const void *src, size_t bytes, size_t min_part,
                bool streaming = false);
  // Returns once copy `t` and every copy submitted before it are complete
  // (a ticket beyond the newest waits for every copy submitted).
  void wait(Ticket t);
  void copy(void *dst, const void *src, size_t bytes, size_t min_part,
            bool streaming = false) {
    wait(submit(dst, src, bytes, min_part, streaming));
  }
  int threads() const { return threads_; }
  // Copies handed to the workers, in two parts or more (for tests and
  // docs).
  uint64_t parallel_copies() const {
    return parallel_copies_.load(std::memory_order_relaxed);
  }
  void teardown(bool) override {}

private:
  struct Job {
    unsigned char *dst = nullptr;
    const unsigned char *src = nullptr;
    size_t bytes = 0;
    size_t part = 0;
    size_t parts = 0;
    size_t next = 0; // the next part to take (under mu_)
    bool streaming = false;
    std::atomic<size_t> done{0}; // parts copied
  };

  void run();
  // Under `lock` (released around each part's copy): takes and copies
  // parts, oldest copy first, of copies up to ticket `limit`, until none
  // is left to take.
  void work(std::unique_lock<std::mutex> &lock, Ticket limit);
  Job &job(Ticket t) { return jobs_[t % k_jobs]; }

  const int threads_; // including the caller
  std::vector<std::thread> pool_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> generation_{0}; // changed under mu_
  int sleepers_ = 0;
  bool caller_sleeping_ = false;
  Job jobs_[k_jobs];
  Ticket submitted_ = 0; // the last ticket queued (written under mu_)
  Ticket take_from_ = 1; // the oldest ticket that may have parts to take
  Ticket retired_ = 0;   // every ticket up to it is complete (caller's)
  std::atomic<uint64_t> parallel_copies_{0};
};

// The automatic copy thread count: the host's cores, at most 16 (the
// caller copies too, so a 16-core host runs 15 workers). Measured on a
// 16-core H200 host: see docs/memory.md.
int default_copy_threads();

} // namespace t4a::memory
