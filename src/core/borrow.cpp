#include "core/borrow.hpp"

#include <pthread.h>

#include <cstddef>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "core/log.hpp"

namespace t4a::core {

namespace borrow {

__thread BorrowRecord *tl_record __attribute__((tls_model("initial-exec"))) =
    nullptr;
std::atomic<bool> g_pending{false};

namespace {

// The directory of the threads in the library: chunks of entries, each
// null (free) or the record of a live thread that has entered a section.
// A scan reads the entries (15 to a 128-byte chunk) and only the records
// of live threads, so threads that have exited (a pool of compile workers)
// cost it nothing but a null entry. Chunks are never freed.
struct alignas(64) DirChunk {
  static constexpr int k_entries = 15;
  std::atomic<BorrowRecord *> entry[k_entries] = {};
  std::atomic<DirChunk *> next{nullptr};
};
constinit DirChunk g_dir;
// Entries ever used, in directory order (a thread takes the first free
// one): a scan reads no further. Raised before an entry is taken.
std::atomic<uint32_t> g_dir_high{0};

// A section open when a deferred batch was closed: its record and the
// value `active` had then (the section's number in the high half).
struct Seen {
  BorrowRecord *record;
  uint64_t active;
};
// Deferred references waiting for the sections in `seen` to end.
struct Batch {
  std::vector<Object *> items;
  std::vector<Seen> seen;
};

// The deferred references, and the records of exited threads kept for
// reuse, with their lock (a leaf: nothing else is taken while it is held,
// and no destructor runs under it). `open` collects references deferred
// since the last drain; a drain closes it into a batch with the sections
// open at that moment (every reference in it was unpublished before).
// Constant-initialized and never destroyed: sections end in static
// destructors at exit too.
union Deferred {
  struct State {
    std::mutex mu;
    std::vector<Object *> open;
    // Batches, oldest first, from index `head` on (a queue in a vector:
    // std::deque cannot be constant-initialized).
    std::vector<Batch> waiting;
    size_t head = 0;
    std::vector<BorrowRecord *> free_records;
  } s;
  constexpr Deferred() : s() {}
  ~Deferred() {}
};
constinit Deferred g_deferred;
// Batches checked by drains so far (tests: the scan stops at the first
// batch still waiting).
std::atomic<uint64_t> g_batch_checks{0};

// Calls f(record) for the record of each live thread in the directory
// until f returns true; returns whether one did. seq_cst throughout, the
// entries too: a record entered after this walk read its entry belongs to
// a reader whose slot loads come after the writer's unpublishing store
// (borrow.hpp). Inline: retire walks on every release.
template <class F> [[gnu::always_inline]] inline bool walk_records(F f) {
  uint32_t left = g_dir_high.load(std::memory_order_seq_cst);
  for (const DirChunk *c = &g_dir; left != 0;
       c = c->next.load(std::memory_order_seq_cst)) {
    uint32_t n = left < DirChunk::k_entries ? left : DirChunk::k_entries;
    for (uint32_t i = 0; i < n; ++i) {
      BorrowRecord *r = c->entry[i].load(std::memory_order_seq_cst);
      if (r != nullptr && f(r)) return true;
    }
    left -= n;
  }
  return false;
}

[[gnu::always_inline]] inline bool any_active() {
  return walk_records([](BorrowRecord *r) {
    return r->active.load(std::memory_order_seq_cst) != 0;
  });
}

// Appends every section open now to `out` (may throw std::bad_alloc).
void open_sections(std::vector<Seen> &out) {
  walk_records([&](BorrowRecord *r) {
    uint64_t a = r->active.load(std::memory_order_seq_cst);
    if (a != 0) out.push_back({r, a});
    return false;
  });
}

// Whether every section in `seen` has ended: its record shows no section
// or another one (a later number: begun after the end of the one seen,
// in that thread's program order). acquire: the section's uses happen
// before the drop. A record whose thread exited shows 0 (or, reused,
// another thread's later section). The read may see a newer section than
// the one recorded only after that one ended, never an older one.
bool ended(const std::vector<Seen> &seen) {
  // Written under the list's lock only: no locked add.
  g_batch_checks.store(g_batch_checks.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  for (const Seen &s : seen) {
    uint64_t now = s.record->active.load(std::memory_order_acquire);
    if (now != 0 && (now >> 32) == (s.active >> 32)) return false;
  }
  return true;
}

// Whether `older` waits for every section in `now` (the same record with
// the same section number; a window opened or closed in it since does not
// matter): references that need `now` may wait with it. A section of
// `older` missing from `now` has ended, so they wait no longer.
bool covers(const std::vector<Seen> &older, const std::vector<Seen> &now) {
  for (const Seen &s : now) {
    bool found = false;
    for (const Seen &o : older)
      if (o.record == s.record && (o.active >> 32) == (s.active >> 32)) {
        found = true;
        break;
      }
    if (!found) return false;
  }
  return true;
}

// Moves `from`'s references to the end of `to` (false, both unchanged,
// when there is no memory to: they stay deferred for a later drain).
bool move_items(std::vector<Object *> &from, std::vector<Object *> &to) {
  if (to.empty()) {
    to.swap(from);
    return true;
  }
  try {
    to.insert(to.end(), from.begin(), from.end());
  } catch (const std::bad_alloc &) {
    return false;
  }
  from.clear();
  return true;
}

// Each gate window open in another thread now: waits until it closes.
// seq_cst loads, as any_active's: a window entered after its entry was
// read here belongs to a reader whose load of the gate's flag comes after
// the caller's store of it in the single order, so it sees the new flag
// (core/capture_gate.hpp). A window is waited for until the record shows
// anything else (closed, or another window, whose stamp differs).
void wait_windows() {
  const BorrowRecord *self = tl_record;
  walk_records([&](const BorrowRecord *r) {
    if (r == self) return false;
    uint64_t seen = r->active.load(std::memory_order_seq_cst);
    if ((seen & 1) == 0) return false; // no window open
    // acquire: what the window's thread did in it happens before the
    // caller goes on (its release store closed the window).
    while (r->active.load(std::memory_order_acquire) == seen)
      std::this_thread::yield();
    return false;
  });
}

// Raises the high-water mark to cover entry `index` (before it is taken).
void cover(uint32_t index) {
  uint32_t high = g_dir_high.load(std::memory_order_seq_cst);
  while (high <= index && !g_dir_high.compare_exchange_weak(
                              high, index + 1, std::memory_order_seq_cst)) {
  }
}

// Enters `r` in a free entry of the directory (a new chunk if none).
void enter_directory(BorrowRecord *r) {
  uint32_t base = 0;
  for (DirChunk *c = &g_dir;; base += DirChunk::k_entries) {
    for (uint32_t i = 0; i < DirChunk::k_entries; ++i) {
      std::atomic<BorrowRecord *> &e = c->entry[i];
      if (e.load(std::memory_order_relaxed) != nullptr) continue;
      cover(base + i);
      BorrowRecord *none = nullptr;
      if (e.compare_exchange_strong(none, r, std::memory_order_seq_cst)) {
        r->entry = &e;
        return;
      }
    }
    DirChunk *next = c->next.load(std::memory_order_seq_cst);
    if (next == nullptr) {
      // May throw std::bad_alloc: before anything was read through the
      // record. Appended empty; the loop then takes one of its entries.
      auto *chunk = new DirChunk();
      if (c->next.compare_exchange_strong(next, chunk,
                                          std::memory_order_seq_cst))
        next = chunk;
      else
        delete chunk; // another thread appended first: `next` is its chunk
    }
    c = next;
  }
}

void thread_exit(void *p) {
  auto *r = static_cast<BorrowRecord *>(p);
  // No section is open at thread exit, unless one was left without its
  // end (a longjmp out of a callback): the thread uses nothing borrowed
  // any more, so it shows none; else a batch that saw it would never end
  // (and, batches ending in order, none after it), and a capture gate
  // writer would wait for its window forever. The entry is freed and the
  // record kept for another thread (leaked if there is no memory to keep
  // it).
  r->depth = 0;
  r->gate_depth = 0;
  r->active.store(0, std::memory_order_release);
  tl_record = nullptr;
  r->entry->store(nullptr, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> lock(g_deferred.s.mu);
  try {
    g_deferred.s.free_records.push_back(r);
  } catch (const std::bad_alloc &) {
  }
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
  {
    std::lock_guard<std::mutex> lock(g_deferred.s.mu);
    if (!g_deferred.s.free_records.empty()) {
      r = g_deferred.s.free_records.back();
      g_deferred.s.free_records.pop_back();
    }
  }
  // Never freed: a scan may read it at any time. If even this small
  // allocation fails, std::bad_alloc leaves the entry point (reported as
  // OUT_OF_HOST_MEMORY) before anything was read.
  if (r == nullptr) r = new BorrowRecord();
  enter_directory(r); // may throw std::bad_alloc: the record is leaked
  r->depth = 0;
  r->gate_depth = 0;
  tl_record = r;
  // A thread that reaches the library after its TLS destructors ran (a
  // static destructor at exit) keeps its record: at most one per thread.
  (void)pthread_setspecific(exit_key(), r); // failure: the record is kept
  return r;
}

void wait_for_gate_windows() { wait_windows(); }

void open_window_nested(BorrowRecord *r) {
  ++r->depth;
  if (r->gate_depth++ == 0) { // in a plain section: a window now
    r->stamp += 2;
    r->active.store(r->window(), std::memory_order_seq_cst);
  }
}

void close_window_nested(BorrowRecord *r) {
  --r->depth;
  if (--r->gate_depth != 0) return;
  if (r->depth == 0)
    leave_outermost(r);
  else // back to the enclosing plain section (its number unchanged)
    r->active.store(r->plain(), std::memory_order_release);
}

// drain(), dropping nothing when `close_only` (the caller is inside a
// section of its own: a drop may run a destructor that waits, which must
// not run there; the section's end drains, `pending` being set).
void drain_batches(bool close_only) {
  std::vector<Object *> items;
  {
    std::lock_guard<std::mutex> lock(g_deferred.s.mu);
    auto &st = g_deferred.s;
    // Batches whose sections have all ended. They end in the order they
    // were made: a section of an older batch that was still open when a
    // younger one was closed is in the younger one too, with the same
    // number (the younger one's scan read it), and numbers never go back
    // (short of 2^32 sections of one thread, which can only delay a drop),
    // so a younger batch never ends first. The scan stops at the first
    // batch still waiting: one check per drain while a long section holds
    // them all (a thread blocked in the driver inside its section while
    // another's short sections end and drain), however many there are.
    if (!close_only) {
      while (st.head < st.waiting.size() && ended(st.waiting[st.head].seen) &&
             move_items(st.waiting[st.head].items, items))
        ++st.head;
      if (st.head == st.waiting.size()) {
        st.waiting.clear();
        st.head = 0;
      } else if (st.head > 64 && 2 * st.head > st.waiting.size()) {
        // Dropped batches at the front: removed once they are half the
        // vector (amortized constant per batch).
        st.waiting.erase(st.waiting.begin(),
                         st.waiting.begin() + ptrdiff_t(st.head));
        st.head = 0;
      }
    }
    // The references deferred since the last drain: dropped now if no
    // section is open, else a batch waiting for the sections open now:
    // the last batch when it waits for each of them already (a burst of
    // releases while the same sections stay open makes one batch, not one
    // per release, which every drain would check), else a new one.
    if (!st.open.empty()) {
      try {
        std::vector<Seen> seen;
        open_sections(seen);
        if (seen.empty()) {
          move_items(st.open, items);
        } else if (st.head < st.waiting.size() &&
                   covers(st.waiting.back().seen, seen) &&
                   move_items(st.open, st.waiting.back().items)) {
        } else {
          st.waiting.push_back(Batch{{}, std::move(seen)});
          st.waiting.back().items.swap(st.open);
        }
      } catch (const std::bad_alloc &) {
        // No memory for the batch: the references stay in `open`, for the
        // next drain (never dropped early).
      }
    }
    g_pending.store(!st.open.empty() || st.head < st.waiting.size(),
                    std::memory_order_seq_cst);
  }
  for (Object *o : items) o->drop_ref();
}

void drain() { drain_batches(false); }

uint64_t batch_checks() {
  return g_batch_checks.load(std::memory_order_relaxed);
}

size_t waiting_batches() {
  std::lock_guard<std::mutex> lock(g_deferred.s.mu);
  return g_deferred.s.waiting.size() - g_deferred.s.head;
}

size_t deferred_count() {
  std::lock_guard<std::mutex> lock(g_deferred.s.mu);
  size_t n = g_deferred.s.open.size();
  for (size_t i = g_deferred.s.head; i < g_deferred.s.waiting.size(); ++i)
    n += g_deferred.s.waiting[i].items.size();
  return n;
}

} // namespace borrow

namespace {
// retire() when a section is open somewhere: defer.
[[gnu::noinline]] void retire_deferred(Object *obj) {
  bool leaked = false;
  {
    std::lock_guard<std::mutex> lock(borrow::g_deferred.s.mu);
    try {
      borrow::g_deferred.s.open.push_back(obj);
      borrow::g_pending.store(true, std::memory_order_seq_cst);
    } catch (const std::bad_alloc &) {
      leaked = true; // never dropped early: leaked rather than freed under
                     // a reader
    }
  }
  if (leaked) {
    // Logged outside the lock: a log callback may call into the library,
    // whose section ends drain (and take the lock).
    logf(T4A_LOG_ERROR, "internal: a released object is leaked (no memory "
                        "to defer its release past a concurrent reader)");
    return;
  }
  // The sections that were open may all have ended before `pending` was
  // set (and so not seen it): scan again; if not, the drain records the
  // sections to wait for. Inside a section of its own (a log callback
  // releasing a handle, a nested SectionAdmission dropping its references)
  // the caller only closes the batch: what has ended is dropped by its
  // section's end, outside it.
  const BorrowRecord *self = borrow::tl_record;
  borrow::drain_batches(self != nullptr && self->depth != 0);
}
} // namespace

void retire(Object *obj) {
  if (borrow::any_active()) [[unlikely]] {
    retire_deferred(obj);
    return;
  }
  obj->drop_ref_fast(); // registered objects are never recycled
  if (borrow::g_pending.load(std::memory_order_acquire)) [[unlikely]]
    borrow::drain();
}

void borrow_at_fork(ForkPhase phase) {
  if (phase == ForkPhase::Prepare) {
    borrow::g_deferred.s.mu.lock();
    return;
  }
  if (phase == ForkPhase::Child) {
    // Only this thread exists here: every other thread's entry is freed
    // (its record leaked).
    for (borrow::DirChunk *c = &borrow::g_dir; c != nullptr;
         c = c->next.load(std::memory_order_relaxed))
      for (auto &e : c->entry) {
        BorrowRecord *r = e.load(std::memory_order_relaxed);
        if (r == nullptr || r == borrow::tl_record) continue;
        r->active.store(0, std::memory_order_relaxed);
        e.store(nullptr, std::memory_order_relaxed);
      }
    // The parent's deferred references are leaked in the child (their
    // objects may need the parent's driver state to be destroyed).
    borrow::g_deferred.s.open.clear();
    borrow::g_deferred.s.waiting.clear();
    borrow::g_deferred.s.head = 0;
    borrow::g_pending.store(false, std::memory_order_relaxed);
  }
  borrow::g_deferred.s.mu.unlock();
}

} // namespace t4a::core
