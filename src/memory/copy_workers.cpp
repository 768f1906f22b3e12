#include "memory/copy_workers.hpp"

#include <algorithm>
#include <cstring>

namespace t4a::memory {

namespace {
constexpr size_t k_min_part = size_t(1) << 20;

int default_threads() {
  unsigned hc = std::thread::hardware_concurrency();
  int n = static_cast<int>(hc / 2);
  return std::clamp(n, 1, 8);
}
} // namespace

CopyWorkers &CopyWorkers::of(core::Runtime &rt) {
  auto *w =
      static_cast<CopyWorkers *>(rt.part(core::Runtime::Part::CopyWorkers));
  if (w == nullptr) {
    int n = rt.options().staging_threads;
    auto made = std::make_unique<CopyWorkers>(n > 0 ? n : default_threads());
    w = made.get();
    rt.set_part(core::Runtime::Part::CopyWorkers, std::move(made));
  }
  return *w;
}

CopyWorkers::CopyWorkers(int threads) : threads_(threads) {}

CopyWorkers::~CopyWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto &t : pool_) t.join();
}

void CopyWorkers::run() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (next_ < parts_) {
      size_t i = next_++;
      unsigned char *d = dst_ + i * part_;
      const unsigned char *s = src_ + i * part_;
      size_t n = std::min(part_, bytes_ - i * part_);
      lock.unlock();
      std::memcpy(d, s, n);
      lock.lock();
      if (++done_ == parts_) done_cv_.notify_all();
    }
  }
}

void CopyWorkers::copy(void *dst, const void *src, size_t bytes) {
  size_t parts = std::min<size_t>(static_cast<size_t>(threads_),
                                  bytes / k_min_part);
  if (parts <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  if (pool_.empty()) {
    // Started on first use: a runtime that never copies much has none.
    for (int i = 1; i < threads_; ++i) pool_.emplace_back([this] { run(); });
  }
  std::unique_lock<std::mutex> lock(mu_);
  dst_ = static_cast<unsigned char *>(dst);
  src_ = static_cast<const unsigned char *>(src);
  bytes_ = bytes;
  part_ = (bytes + parts - 1) / parts;
  part_ = (part_ + 4095) & ~size_t(4095);
  parts_ = (bytes + part_ - 1) / part_;
  next_ = 0;
  done_ = 0;
  ++generation_;
  work_cv_.notify_all();
  // The caller works too.
  while (next_ < parts_) {
    size_t i = next_++;
    unsigned char *d = dst_ + i * part_;
    const unsigned char *s = src_ + i * part_;
    size_t n = std::min(part_, bytes_ - i * part_);
    lock.unlock();
    std::memcpy(d, s, n);
    lock.lock();
    ++done_;
  }
  done_cv_.wait(lock, [&] { return done_ == parts_; });
  parts_ = 0;
}

} // namespace t4a::memory
