#include "core/borrow.hpp"

#include <pthread.h>

#include <mutex>
#include <new>
#include <vector>

#include "core/log.hpp"

namespace t4a::core {

namespace borrow {

__thread BorrowRecord *tl_record __attribute__((tls_model("initial-exec"))) =
    nullptr;
std::atomic<bool> g_pending{false};

namespace {

std::atomic<BorrowRecord *> g_records{nullptr};

// The deferred references and their lock (a leaf: nothing else is taken
// while it is held, and no destructor runs under it). Constant-initialized
// and never destroyed: sections end in static destructors at exit too.
union Deferred {
  struct State {
    std::mutex mu;
    std::vector<Object *> items;
  } s;
  constexpr Deferred() : s() {}
  ~Deferred() {}
};
constinit Deferred g_deferred;

// seq_cst throughout, the list head too: a record pushed after this scan
// read the head belongs to a reader whose slot loads come after the
// writer's unpublishing store (borrow.hpp).
bool any_active() {
  for (BorrowRecord *r = g_records.load(std::memory_order_seq_cst);
       r != nullptr; r = r->next)
    if (r->active.load(std::memory_order_seq_cst) != 0) return true;
  return false;
}

void thread_exit(void *p) {
  auto *r = static_cast<BorrowRecord *>(p);
  // No section is open at thread exit; the record is free for a new thread.
  tl_record = nullptr;
  r->in_use.store(false, std::memory_order_release);
}

pthread_key_t exit_key() {
  static pthread_key_t key = [] {
    pthread_key_t k;
    (void)pthread_key_create(&k, &thread_exit); // failure: records not reused
    return k;
  }();
  return key;
}

} // namespace

BorrowRecord *attach() {
  BorrowRecord *r = nullptr;
  for (BorrowRecord *f = g_records.load(std::memory_order_acquire);
       f != nullptr; f = f->next) {
    bool free = false;
    if (!f->in_use.load(std::memory_order_relaxed) &&
        f->in_use.compare_exchange_strong(free, true,
                                          std::memory_order_acquire)) {
      r = f;
      break;
    }
  }
  if (r == nullptr) {
    // Never freed: a reader of the list may hold it at any time. If even
    // this small allocation fails, std::bad_alloc leaves the entry point
    // (reported as OUT_OF_HOST_MEMORY) before anything was read.
    r = new BorrowRecord();
    BorrowRecord *head = g_records.load(std::memory_order_relaxed);
    do {
      r->next = head;
    } while (!g_records.compare_exchange_weak(
        head, r, std::memory_order_release, std::memory_order_relaxed));
  }
  r->depth = 0;
  tl_record = r;
  // A thread that reaches the library after its TLS destructors ran (a
  // static destructor at exit) keeps its record: at most one per thread.
  (void)pthread_setspecific(exit_key(), r); // failure: the record is kept
  return r;
}

void drain() {
  std::vector<Object *> items;
  {
    std::lock_guard<std::mutex> lock(g_deferred.s.mu);
    if (g_deferred.s.items.empty() || any_active()) return;
    items.swap(g_deferred.s.items);
    g_pending.store(false, std::memory_order_seq_cst);
  }
  for (Object *o : items) o->drop_ref();
}

} // namespace borrow

void retire(Object *obj) {
  if (!borrow::any_active()) {
    obj->drop_ref_fast(); // registered objects are never recycled
    if (borrow::g_pending.load(std::memory_order_acquire)) [[unlikely]]
      borrow::drain();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(borrow::g_deferred.s.mu);
    try {
      borrow::g_deferred.s.items.push_back(obj);
    } catch (const std::bad_alloc &) {
      // Never dropped early: leaked rather than freed under a reader.
      logf(T4A_LOG_ERROR, "internal: a released object is leaked (no memory "
                          "to defer its release past a concurrent reader)");
      return;
    }
    borrow::g_pending.store(true, std::memory_order_seq_cst);
  }
  // The sections that were open may all have ended before `pending` was
  // set (and so not seen it): scan again.
  borrow::drain();
}

size_t borrow_deferred() {
  std::lock_guard<std::mutex> lock(borrow::g_deferred.s.mu);
  return borrow::g_deferred.s.items.size();
}

void borrow_at_fork(ForkPhase phase) {
  if (phase == ForkPhase::Prepare) {
    borrow::g_deferred.s.mu.lock();
    return;
  }
  if (phase == ForkPhase::Child) {
    // Only this thread exists here: every other record is closed and free.
    for (BorrowRecord *r = borrow::g_records.load(std::memory_order_acquire);
         r != nullptr; r = r->next) {
      if (r == borrow::tl_record) continue;
      r->active.store(0, std::memory_order_relaxed);
      r->depth = 0;
      r->in_use.store(false, std::memory_order_relaxed);
    }
    // The parent's deferred references are leaked in the child (their
    // objects may need the parent's driver state to be destroyed).
    borrow::g_deferred.s.items.clear();
    borrow::g_pending.store(false, std::memory_order_relaxed);
  }
  borrow::g_deferred.s.mu.unlock();
}

} // namespace t4a::core
