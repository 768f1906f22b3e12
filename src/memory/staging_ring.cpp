#include "memory/staging_ring.hpp"

#include <mutex>
#include <new>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "driver/env.hpp"
#include "driver/result_class.hpp"

namespace t4a::memory {

using namespace t4a::driver;

namespace {
// The memory layer's parts (ranks 100..199, core/component.hpp): the
// staging ring is torn down before the copy workers (110).
const core::PartSlot k_staging_slot = core::register_part("staging ring", 100);

constexpr size_t k_align = 256;
size_t align_up(size_t n) { return (n + k_align - 1) & ~(k_align - 1); }
} // namespace

TransferTuning TransferTuning::from_env() {
  const char *v = env::raw(env::Var::transfer_force); // driver/env.hpp
  if (v == nullptr || *v == '\0') return {};
  TransferTuning t;
  if (!TransferTuning::parse(v, &t)) {
    core::log(T4A_LOG_WARN,
              env::rejection(env::Var::transfer_force, v,
                             "is malformed (expected a comma-separated list "
                             "of piece=BYTES, part=BYTES, direct=0|1, "
                             "stream=0|1, pend=event|stream, ahead=0..8; "
                             "BYTES may end in K or M)",
                             "every transfer parameter is chosen by size")
                  .c_str());
    return {};
  }
  return t;
}

void Chunk::last_ref_dropped() { ring->recycle(this); }

StagingRing &StagingRing::of(core::Runtime &rt) {
  auto *ring = static_cast<StagingRing *>(rt.part(k_staging_slot));
  if (ring == nullptr) {
    auto made = std::make_unique<StagingRing>(rt, rt.options().staging_bytes,
                                              rt.options().staging_chunk_bytes);
    ring = made.get();
    rt.set_part(k_staging_slot, std::move(made));
  }
  return *ring;
}

StagingRing::StagingRing(core::Runtime &rt, uint64_t budget,
                         uint64_t chunk_bytes)
    : rt_(rt), chunk_bytes_(static_cast<size_t>(chunk_bytes)),
      capacity_(static_cast<size_t>(budget / chunk_bytes)) {}

StagingRing::~StagingRing() = default;

namespace {
// Chunks leaked on purpose by torn-down rings (quarantined: the device may
// still write their pinned memory), reachable from here for good.
std::mutex g_leaked_mu;
std::vector<Chunk *> *g_leaked = nullptr;
} // namespace

void StagingRing::keep_leaked(Chunk *c) noexcept {
  std::lock_guard<std::mutex> lock(g_leaked_mu);
  try {
    if (g_leaked == nullptr) g_leaked = new std::vector<Chunk *>();
    g_leaked->push_back(c);
  } catch (const std::bad_alloc &) {
    // No room to remember it: it stays leaked, only unreachable.
  }
}

void StagingRing::recycle(Chunk *c) {
  if (c->quarantined) return; // leaked on purpose, counted at quarantine
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(c);
  rt_.counters().staging_bytes.sub(c->bytes);
}

void StagingRing::quarantine(Chunk &c) {
  if (c.quarantined) return;
  c.quarantined = true;
  ++quarantined_;
  rt_.counters().quarantined.add();
  core::ProcessCounters::instance().leaked_staging_bytes.add(c.bytes);
  core::logf(T4A_LOG_WARN,
             "a staging chunk of %zu bytes (runtime domain %llu) is "
             "quarantined: a transfer failed after it may have been enqueued",
             c.bytes, static_cast<unsigned long long>(rt_.domain()));
  if (current_.get() == &c) current_.reset();
}

t4a_status StagingRing::take_chunk(core::Ref<Chunk> *out, bool *exhausted) {
  *exhausted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      Chunk *c = free_.back();
      free_.pop_back();
      rt_.counters().staging_bytes.add(c->bytes);
      *out = core::Ref<Chunk>(c);
      return T4A_SUCCESS;
    }
  }
  // Quarantined chunks are outside the budget: they are leaked on purpose
  // (one or two per failure after enqueue), and counting them would make
  // every later transfer fail once they filled it.
  if (all_.size() - quarantined_ >= capacity_) {
    *exhausted = true;
    return T4A_SUCCESS;
  }
  void *p = nullptr;
  if (auto r = cu::mem_host_alloc(&p, chunk_bytes_, CU_MEMHOSTALLOC_PORTABLE);
      !r) {
    if (r.code == CUDA_ERROR_OUT_OF_MEMORY)
      return core::fail_message(
          T4A_ERROR_OUT_OF_HOST_MEMORY,
          core::format("allocating a pinned staging chunk of %zu bytes: %s "
                       "returned %s",
                       chunk_bytes_, r.entry, core::describe(r.code).c_str()),
          static_cast<int32_t>(r.code));
    return rt_.fail_op(r, "allocating a pinned staging chunk");
  }
  Chunk *c = new Chunk(this, static_cast<unsigned char *>(p), chunk_bytes_);
  all_.push_back(c);
  rt_.counters().staging_bytes.add(c->bytes);
  *out = core::Ref<Chunk>::adopt(c); // a new object holds one reference
  return T4A_SUCCESS;
}

t4a_status StagingRing::reserve(size_t len, Span *out, bool *blocked) {
  *blocked = false;
  size_t need = align_up(len == 0 ? 1 : len);
  if (current_ && used_ + need <= chunk_bytes_) {
    out->chunk = current_;
    out->host = current_->host + used_;
    out->bytes = len;
    used_ += need;
    return T4A_SUCCESS;
  }
  // A fresh chunk: seal what the open epoch keeps, so it can retire.
  current_.reset();
  if (t4a_status s = rt_.epochs().seal(rt_); s != T4A_SUCCESS) return s;
  core::Epochs::Items retired;
  for (;;) {
    core::Ref<Chunk> c;
    bool exhausted = false;
    if (t4a_status s = take_chunk(&c, &exhausted); s != T4A_SUCCESS) return s;
    if (!exhausted) {
      current_ = c;
      used_ = need;
      out->chunk = std::move(c);
      out->host = current_->host;
      out->bytes = len;
      return T4A_SUCCESS;
    }
    if (!rt_.epochs().has_sealed()) {
      *blocked = true; // every chunk is held by the caller's own stages
      return T4A_SUCCESS;
    }
    // Retire without blocking first; wait for the oldest epoch only when
    // nothing completed (a counted staging wait).
    if (t4a_status s = rt_.epochs().poll(rt_, &retired); s != T4A_SUCCESS)
      return s;
    if (!retired.empty()) {
      retired.clear();
      continue;
    }
    rt_.counters().staging_waits.add();
    if (t4a_status s = rt_.epochs().wait_oldest(rt_, &retired);
        s != T4A_SUCCESS)
      return s;
    retired.clear();
  }
}

void StagingRing::teardown(bool proven) {
  current_.reset();
  uint64_t failed_bytes = 0;
  DrvResult failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    torn_down_ = true;
    for (Chunk *c : all_) {
      bool is_free = false;
      for (Chunk *f : free_) is_free = is_free || f == c;
      if (proven && is_free && !c->quarantined) {
        // A free the driver refuses leaks like an unproven one (counted);
        // a driver already gone at exit has nothing left to free.
        if (auto r = cu::mem_free_host(c->host);
            !r && !driver::is_driver_gone(r.code)) {
          core::ProcessCounters::instance().leaked_staging_bytes.add(c->bytes);
          failed_bytes += c->bytes;
          failure = r;
        }
        delete c;
      } else if (!c->quarantined) {
        // Completion unproven, or still referenced: leak the pinned memory.
        core::ProcessCounters::instance().leaked_staging_bytes.add(c->bytes);
      } else {
        // Quarantined (counted when it was): leaked on purpose, the object
        // too (a reference may remain); kept reachable so that a leak
        // checker reports only what nobody meant to leak.
        keep_leaked(c);
      }
    }
    all_.clear();
    free_.clear();
  }
  if (failed_bytes != 0) // logged outside the lock (a callback may call in)
    core::logf(T4A_LOG_WARN,
               "staging memory of %llu bytes leaked: %s returned %s",
               static_cast<unsigned long long>(failed_bytes), failure.entry,
               core::describe(failure.code).c_str());
}

} // namespace t4a::memory
