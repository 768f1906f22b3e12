#include "memory/copy_workers.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace t4a::memory {

namespace {
constexpr auto k_spin = std::chrono::microseconds(200);

// memcpy with non-temporal stores for the 16-byte-aligned bulk (SSE2, part
// of every x86-64 CPU): they skip reading each destination line into the
// cache first (the transfer plan says when that pays). Plain memcpy on
// other CPUs. The closing fence orders the streaming stores before
// whatever the caller does next (the part's completion count, then the
// DMA's enqueue or the transfer's return).
void stream_copy(unsigned char *d, const unsigned char *s, size_t n) {
#if defined(__x86_64__)
  size_t head =
      std::min<size_t>((16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15, n);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  size_t body = n & ~size_t(63);
  for (size_t i = 0; i < body; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 48), e);
  }
  std::memcpy(d + body, s + body, n - body);
  _mm_sfence();
#else
  std::memcpy(d, s, n);
#endif
}

} // namespace

int default_copy_threads() {
  unsigned hc = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hc), 1, 16);
}

namespace {
inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() holds or the spin budget is spent; true if it held.
template <class Pred> bool spin_until(Pred pred) {
  auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    cpu_pause();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > k_spin)
      return pred();
  }
}
} // namespace

CopyWorkers::CopyWorkers(int threads) : threads_(threads) {}

CopyWorkers::~CopyWorkers() {
  wait(submitted_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  work_cv_.notify_all();
  for (auto &t : pool_) t.join();
}

void CopyWorkers::work(std::unique_lock<std::mutex> &lock, Ticket limit) {
  for (;;) {
    // The oldest copy with a part left, if it is within `limit`.
    while (take_from_ <= submitted_ &&
           job(take_from_).next >= job(take_from_).parts)
      ++take_from_;
    if (take_from_ > submitted_ || take_from_ > limit) return;
    Job &j = job(take_from_);
    size_t i = j.next++;
    unsigned char *d = j.dst + i * j.part;
    const unsigned char *s = j.src + i * j.part;
    size_t n = std::min(j.part, j.bytes - i * j.part);
    // Read under the lock: once the last part is counted the caller may
    // reuse the job's slot while this thread runs on.
    const size_t total = j.parts;
    const bool streaming = j.streaming;
    lock.unlock();
    if (streaming)
      stream_copy(d, s, n);
    else
      std::memcpy(d, s, n);
    bool last = j.done.fetch_add(1, std::memory_order_acq_rel) + 1 == total;
    lock.lock();
    if (last && caller_sleeping_) done_cv_.notify_one();
  }
}

void CopyWorkers::run() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (generation_.load(std::memory_order_relaxed) == seen && !stop_.load()) {
      lock.unlock();
      spin_until([&] {
        return generation_.load(std::memory_order_acquire) != seen ||
               stop_.load(std::memory_order_relaxed);
      });
      lock.lock();
      ++sleepers_;
      work_cv_.wait(lock, [&] {
        return stop_.load() ||
               generation_.load(std::memory_order_relaxed) != seen;
      });
      --sleepers_;
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_relaxed);
    work(lock, ~Ticket(0));
  }
}

CopyWorkers::Ticket CopyWorkers::submit(void *dst, const void *src,
                                        size_t bytes, size_t min_part,
                                        bool streaming) {
  size_t parts = std::min<size_t>(static_cast<size_t>(threads_),
                                  bytes / std::max<size_t>(min_part, 1));
  if (parts > 1 && pool_.size() + 1 < static_cast<size_t>(threads_)) {
    // Started on first use: a runtime that never copies much has none. A
    // thread that cannot be made (std::system_error, or std::bad_alloc
    // growing pool_) is tried again at the next parallel copy; this copy
    // runs on the threads there are. Never thrown: the caller may have
    // copies into staging in flight that it must still wait for.
    try {
      while (pool_.size() + 1 < static_cast<size_t>(threads_))
        pool_.emplace_back([this] { run(); });
    } catch (const std::exception &) {
    }
    parts = std::min(parts, pool_.size() + 1);
  }
  // Parts are whole pages (the last one shorter): rounding may leave one.
  size_t part = 0;
  if (parts > 1) {
    part = (bytes + parts - 1) / parts;
    part = (part + 4095) & ~size_t(4095);
    parts = (bytes + part - 1) / part;
  }
  if (parts <= 1) {
    if (streaming)
      stream_copy(static_cast<unsigned char *>(dst),
                  static_cast<const unsigned char *>(src), bytes);
    else
      std::memcpy(dst, src, bytes);
    return 0;
  }
  const Ticket t = submitted_ + 1;
  if (t - retired_ > k_jobs) wait(t - k_jobs); // its slot is t's
  parallel_copies_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(mu_);
  Job &j = job(t);
  j.dst = static_cast<unsigned char *>(dst);
  j.src = static_cast<const unsigned char *>(src);
  j.bytes = bytes;
  j.part = part;
  j.parts = parts;
  j.next = 0;
  j.streaming = streaming;
  j.done.store(0, std::memory_order_relaxed);
  submitted_ = t;
  generation_.fetch_add(1, std::memory_order_release);
  if (sleepers_ > 0) work_cv_.notify_all();
  return t;
}

void CopyWorkers::wait(Ticket t) {
  t = std::min(t, submitted_); // a ticket never handed out: nothing newer
  if (t <= retired_) return;
  std::unique_lock<std::mutex> lock(mu_);
  work(lock, t); // the caller copies too
  lock.unlock();
  for (Ticket u = retired_ + 1; u <= t; ++u) {
    Job &j = job(u);
    const size_t total = j.parts; // written by this thread
    auto complete = [&] {
      return j.done.load(std::memory_order_acquire) == total;
    };
    if (spin_until(complete)) continue;
    lock.lock();
    caller_sleeping_ = true;
    done_cv_.wait(lock, complete);
    caller_sleeping_ = false;
    lock.unlock();
  }
  retired_ = t;
}

} // namespace t4a::memory
