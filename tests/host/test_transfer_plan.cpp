// Host lane (fake driver): the transfer plan (src/memory/transfer_plan.hpp,
// docs/memory.md "Transfer paths"). Each size class takes its path:
//  - plan: one piece up to the staging chunk, pieces of a chunk above it;
//    parallel copy parts of at least 64 KiB from 1 MiB; a forced piece is
//    clamped to the chunk; direct applies to downloads only; T4A_TRANSFER_FORCE
//    parsing accepts the documented forms and rejects everything else;
//  - through the C API on the fake driver: the number of DMA calls per
//    transfer (pieces), a one-piece download drains the stream (no event),
//    a pipelined one records one event per piece; copy workers start only
//    when a piece has two parts (threads in /proc/self/task); forced
//    pieces, direct downloads (no staging) and chained pending deliveries
//    (T4A_TRANSFER_FORCE is read at a runtime's first pageable transfer);
//  - bytes are exact across piece and part boundaries, at odd sizes and
//    offsets, both directions, with plain and with non-temporal host copies
//    (stream, from 1 MiB; forced for every size);
//  - small pending downloads take pinned host snapshot slots (16, then a
//    device snapshot), given back on delivery and on release; a released
//    slot whose event query fails (injected NOT_READY) is not reused;
//  - failures: copy threads that cannot start, a delivery retried after
//    one that failed part-way.
// Nothing here is timed.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <setjmp.h>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "byte_pattern.hpp"
#include "memory/transfer_plan.hpp"
#include "t4acuda.h"

using t4a::memory::k_copy_part_bytes;
using t4a::memory::k_download_piece_min;
using t4a::memory::k_parallel_from_bytes;
using t4a::memory::k_upload_ahead;
using t4a::memory::plan_transfer;
using t4a::memory::TransferPlan;
using t4a::memory::TransferTuning;

// Thread creation fails while this is set (this executable's pthread_create
// interposes the C library's, so std::thread in t4acuda sees EAGAIN).
std::atomic<bool> g_fail_threads{false};

extern "C" int pthread_create(pthread_t *t, const pthread_attr_t *a,
                              void *(*f)(void *), void *arg) {
  if (g_fail_threads.load()) return EAGAIN;
  using Fn =
      int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_create"));
  return real(t, a, f, arg);
}

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

int (*fake_live)(const char *) = nullptr;

int calls(const char *what) {
  int n = fake_live(what);
  assert_true(n >= 0);
  return n;
}

void ok(t4a_status s) {
  if (s != T4A_SUCCESS) {
    char msg[1024];
    size_t needed = 0;
    t4a_last_error_message(msg, sizeof msg, &needed);
    print_error("%s: %s\n", t4a_status_name(s), msg);
  }
  assert_int_equal(s, T4A_SUCCESS);
}

// The fault seam, present in test builds only (T4A_TESTING): looked up
// at run time.
struct FaultSeam {
  using Arm = t4a_status (*)(const char *, uint64_t, int32_t, int32_t);
  Arm arm = reinterpret_cast<Arm>(dlsym(RTLD_DEFAULT, "t4a_testing_fault_arm"));
  void (*reset)() = reinterpret_cast<void (*)()>(
      dlsym(RTLD_DEFAULT, "t4a_testing_fault_reset"));
  bool present() const { return arm != nullptr && reset != nullptr; }
};

int threads_now() {
  int n = 0;
  for (const auto &e : std::filesystem::directory_iterator("/proc/self/task"))
    n += e.is_directory() ? 1 : 0;
  return n;
}

// The thread count once threads that just exited are gone: a thread joined
// by an earlier test (its runtime destroyed) can still be listed in
// /proc/self/task for a moment after pthread_join returned.
int settled_threads() {
  int n = threads_now();
  for (int stable = 0, i = 0; stable < 20 && i < 4000; ++i) {
    struct timespec ts = {0, 250 * 1000};
    nanosleep(&ts, nullptr);
    int m = threads_now();
    stable = m == n ? stable + 1 : 0;
    n = m;
  }
  return n;
}

// ---- the plan itself ----

void test_plan_sizes(void **) {
  const TransferTuning none;
  const size_t chunk = 8 * MiB;
  const size_t inline_copy = ~size_t(0);
  // Uploads: one piece up to a chunk, then pieces of a chunk.
  for (uint64_t n :
       {uint64_t(1), uint64_t(4), 4 * KiB, 64 * KiB, MiB, 8 * MiB - 1, 8 * MiB})
    assert_int_equal(plan_transfer(none, chunk, true, n).piece, n);
  for (uint64_t n : {8 * MiB + 1, 16 * MiB, 256 * MiB})
    assert_int_equal(plan_transfer(none, chunk, true, n).piece, chunk);
  // Downloads: one piece up to 2 MiB; above, a quarter of the transfer
  // rounded up to a power of two, 2 MiB .. a chunk.
  for (uint64_t n : {uint64_t(1), 4 * KiB, 256 * KiB, MiB, 2 * MiB})
    assert_int_equal(plan_transfer(none, chunk, false, n).piece, n);
  assert_int_equal(k_download_piece_min, 2 * MiB);
  assert_int_equal(plan_transfer(none, chunk, false, 2 * MiB + 1).piece,
                   2 * MiB);
  assert_int_equal(plan_transfer(none, chunk, false, 4 * MiB).piece, 2 * MiB);
  assert_int_equal(plan_transfer(none, chunk, false, 8 * MiB).piece, 2 * MiB);
  assert_int_equal(plan_transfer(none, chunk, false, 8 * MiB + 1).piece,
                   4 * MiB);
  assert_int_equal(plan_transfer(none, chunk, false, 16 * MiB).piece, 4 * MiB);
  assert_int_equal(plan_transfer(none, chunk, false, 32 * MiB).piece, chunk);
  assert_int_equal(plan_transfer(none, chunk, false, 256 * MiB).piece, chunk);
  // A smaller chunk bounds the piece.
  assert_int_equal(plan_transfer(none, MiB, false, 16 * MiB).piece, MiB);
  // Host copies: inline below 1 MiB, else parts of at least 64 KiB.
  assert_int_equal(k_parallel_from_bytes, MiB);
  assert_int_equal(k_copy_part_bytes, 64 * KiB);
  for (bool up : {true, false}) {
    TransferPlan p = plan_transfer(none, chunk, up, 256 * MiB);
    assert_false(p.direct);
    assert_int_equal(p.part_for(MiB - 1), inline_copy);
    assert_int_equal(p.part_for(256 * KiB), inline_copy);
    assert_int_equal(p.part_for(MiB), 64 * KiB);
    assert_int_equal(p.part_for(8 * MiB), 64 * KiB);
  }
  // Non-temporal host copies: both directions from 1 MiB, uploads only
  // below 128 MiB.
  assert_false(plan_transfer(none, chunk, true, MiB - 1).stream);
  assert_false(plan_transfer(none, chunk, false, MiB - 1).stream);
  assert_true(plan_transfer(none, chunk, true, MiB).stream);
  assert_true(plan_transfer(none, chunk, false, MiB).stream);
  assert_true(plan_transfer(none, chunk, true, 128 * MiB - 1).stream);
  assert_false(plan_transfer(none, chunk, true, 128 * MiB).stream);
  assert_true(plan_transfer(none, chunk, false, 256 * MiB).stream);
  // A zero-byte plan still has a non-zero piece (never divides by zero).
  assert_int_equal(plan_transfer(none, chunk, true, 0).piece, 1);
  // Uploads queue the copies of two pieces beyond the next DMA.
  assert_int_equal(plan_transfer(none, chunk, true, 256 * MiB).ahead,
                   k_upload_ahead);
  assert_int_equal(k_upload_ahead, 2);
}

void test_plan_forced(void **) {
  TransferTuning t;
  t.piece = 64 * MiB; // larger than the chunk: clamped
  t.min_part = 64 * KiB;
  t.direct = 1;
  TransferPlan up = plan_transfer(t, 8 * MiB, true, 256 * MiB);
  assert_int_equal(up.piece, 8 * MiB);
  assert_int_equal(up.min_part, 64 * KiB);
  assert_int_equal(up.part_for(128 * KiB), 64 * KiB); // from 2 parts
  assert_int_equal(up.part_for(128 * KiB - 1), ~size_t(0));
  assert_false(up.direct); // never for uploads: src must be captured
  TransferPlan down = plan_transfer(t, 8 * MiB, false, 256 * MiB);
  assert_true(down.direct);
  t.stream = 1; // both directions, any size
  assert_true(plan_transfer(t, 8 * MiB, true, 256 * MiB).stream);
  assert_true(plan_transfer(t, 8 * MiB, false, 4).stream);
  t.stream = 0;
  assert_false(plan_transfer(t, 8 * MiB, false, 256 * MiB).stream);
  t.piece = 256 * KiB;
  assert_int_equal(plan_transfer(t, 8 * MiB, true, MiB).piece, 256 * KiB);
  assert_int_equal(plan_transfer(t, 8 * MiB, true, 100).piece, 100);
  t.ahead = 0;
  assert_int_equal(plan_transfer(t, 8 * MiB, true, 256 * MiB).ahead, 0);
  t.ahead = 8;
  assert_int_equal(plan_transfer(t, 8 * MiB, true, 256 * MiB).ahead, 8);
}

void test_parse(void **) {
  TransferTuning t;
  assert_true(TransferTuning::parse("piece=256K,part=64K", &t));
  assert_int_equal(t.piece, 256 * KiB);
  assert_int_equal(t.min_part, 64 * KiB);
  assert_int_equal(t.direct, -1);
  assert_int_equal(t.pend_stream, -1);
  assert_true(TransferTuning::parse("direct=1,pend=stream,piece=4096", &t));
  assert_int_equal(t.direct, 1);
  assert_int_equal(t.pend_stream, 1);
  assert_int_equal(t.piece, 4096);
  assert_int_equal(t.stream, -1);
  assert_true(TransferTuning::parse("stream=0,part=4K", &t));
  assert_int_equal(t.stream, 0);
  assert_true(TransferTuning::parse("stream=1", &t));
  assert_int_equal(t.stream, 1);
  assert_true(TransferTuning::parse("pend=event,,part=2M", &t));
  assert_int_equal(t.pend_stream, 0);
  assert_int_equal(t.min_part, 2 * MiB);
  assert_true(TransferTuning::parse("", &t));
  assert_int_equal(t.piece, 0);
  assert_int_equal(t.ahead, -1);
  assert_true(TransferTuning::parse("ahead=0", &t));
  assert_int_equal(t.ahead, 0);
  assert_true(TransferTuning::parse("ahead=8,stream=0", &t));
  assert_int_equal(t.ahead, 8);
  const char *bad[] = {"piece",
                       "piece=",
                       "piece=x",
                       "piece=-1",
                       "piece=1G",
                       "piece=4KK",
                       "part=1M ",
                       "direct=2",
                       "pend=spin",
                       "stream=2",
                       "stream=",
                       "ahead=9",
                       "ahead=",
                       "ahead=1K",
                       "threads=4",
                       "piece=99999999999999999999",
                       "piece=18014398509481984M"};
  for (const char *b : bad) {
    TransferTuning u;
    u.piece = 7;
    assert_false(TransferTuning::parse(b, &u));
    assert_int_equal(u.piece, 7); // untouched
  }
}

// ---- through the C API on the fake driver ----

struct Rt {
  t4a_runtime rt{};
  t4a_buffer buf{};
  Rt(int32_t threads, uint64_t chunk, uint64_t budget, uint64_t bytes) {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.staging_threads = threads;
    o.staging_chunk_bytes = chunk;
    o.staging_bytes = budget;
    ok(t4a_runtime_create(&o, &rt));
    ok(t4a_buffer_alloc(rt, bytes, 0, &buf));
  }
  ~Rt() {
    ok(t4a_buffer_release(buf));
    ok(t4a_runtime_destroy(rt));
  }
  uint64_t events() {
    t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
    ok(t4a_runtime_stats_get(rt, &s));
    return s.events_recorded;
  }
  uint64_t staging_peak() {
    t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
    ok(t4a_runtime_stats_get(rt, &s));
    return s.staging_bytes_peak;
  }
};

uint64_t pieces(uint64_t n, uint64_t piece) { return (n + piece - 1) / piece; }

// Pieces per transfer and exact bytes, chunk 1 MiB, 4 copy threads.
void test_pieces_and_bytes(void **) {
  const uint64_t chunk = MiB, total = 10 * MiB;
  Rt r(4, chunk, 4 * MiB, total);
  const uint64_t sizes[] = {1,   4,       255,           4 * KiB + 3, MiB - 1,
                            MiB, MiB + 1, 3 * MiB + 777, 9 * MiB + 13};
  unsigned seed = 1;
  for (uint64_t n : sizes) {
    for (uint64_t offset : {uint64_t(0), uint64_t(3)}) {
      if (offset + n > total) continue;
      auto in = pattern(n, seed++);
      int h0 = calls("htod_calls");
      ok(t4a_buffer_upload(r.rt, r.buf, offset, in.data(), n));
      assert_int_equal(calls("htod_calls") - h0, pieces(n, chunk));

      std::vector<unsigned char> out(n + 2, 0xEE);
      int d0 = calls("dtoh_calls"), s0 = calls("stream_syncs");
      uint64_t e0 = r.events();
      ok(t4a_buffer_download_sync(r.rt, r.buf, offset, out.data() + 1, n));
      assert_int_equal(calls("dtoh_calls") - d0, pieces(n, chunk));
      if (n <= chunk) {
        // One piece: the stream is drained once; no event per piece (at
        // most the one that seals the epoch when a fresh chunk is taken).
        assert_int_equal(calls("stream_syncs") - s0, 1);
        assert_true(r.events() - e0 <= 1);
      } else {
        // Pipelined: one event per piece, no stream drain.
        assert_int_equal(calls("stream_syncs") - s0, 0);
        assert_true(r.events() - e0 >= pieces(n, chunk));
      }
      assert_memory_equal(out.data() + 1, in.data(), n);
      assert_int_equal(out[0], 0xEE); // nothing written outside
      assert_int_equal(out[n + 1], 0xEE);
    }
  }
}

// Copy workers start only for a piece of at least 1 MiB; then the pool
// (threads - 1 workers) runs.
void test_parallel_threshold(void **) {
  Rt r(4, 8 * MiB, 16 * MiB, 4 * MiB);
  int t0 = settled_threads();
  auto small = pattern(k_parallel_from_bytes - 1, 7);
  ok(t4a_buffer_upload(r.rt, r.buf, 0, small.data(), small.size()));
  std::vector<unsigned char> back(small.size());
  ok(t4a_buffer_download_sync(r.rt, r.buf, 0, back.data(), back.size()));
  assert_memory_equal(back.data(), small.data(), small.size());
  assert_int_equal(threads_now(), t0); // inline: no workers
  auto big = pattern(k_parallel_from_bytes, 8);
  ok(t4a_buffer_upload(r.rt, r.buf, 0, big.data(), big.size()));
  assert_int_equal(threads_now(), t0 + 3); // the pool started
  // A parallel copy across part boundaries at an odd size and offset.
  auto odd = pattern(3 * MiB + 4093, 9);
  ok(t4a_buffer_upload(r.rt, r.buf, 5, odd.data(), odd.size()));
  std::vector<unsigned char> back2(odd.size());
  ok(t4a_buffer_download_sync(r.rt, r.buf, 5, back2.data(), back2.size()));
  assert_memory_equal(back2.data(), odd.data(), odd.size());
}

// T4A_TRANSFER_FORCE, read when a runtime's staging is made.
void test_forced_paths(void **) {
  auto in = pattern(MiB + 5, 11);
  std::vector<unsigned char> out(in.size());
  {
    setenv("T4A_TRANSFER_FORCE", "piece=64K", 1);
    Rt r(2, 8 * MiB, 16 * MiB, 2 * MiB);
    int h0 = calls("htod_calls");
    ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), in.size()));
    // Read once, at the runtime's first pageable transfer: it keeps it.
    unsetenv("T4A_TRANSFER_FORCE");
    assert_int_equal(calls("htod_calls") - h0, pieces(in.size(), 64 * KiB));
    int d0 = calls("dtoh_calls");
    ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), out.size()));
    assert_int_equal(calls("dtoh_calls") - d0, pieces(in.size(), 64 * KiB));
    assert_memory_equal(out.data(), in.data(), in.size());
  }
  {
    // Direct downloads: one DMA into the caller's memory, no staging.
    setenv("T4A_TRANSFER_FORCE", "direct=1", 1);
    Rt r(2, 8 * MiB, 16 * MiB, 2 * MiB);
    t4a_host_buffer hb{};
    ok(t4a_host_buffer_alloc(r.rt, in.size(), &hb));
    void *hp = nullptr;
    ok(t4a_host_buffer_pointer(hb, &hp, nullptr));
    std::memcpy(hp, in.data(), in.size());
    ok(t4a_buffer_upload_host(r.rt, r.buf, 0, hb, 0, in.size()));
    ok(t4a_host_buffer_release(hb));
    std::fill(out.begin(), out.end(), 0);
    int d0 = calls("dtoh_calls");
    ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), out.size()));
    unsetenv("T4A_TRANSFER_FORCE");
    assert_int_equal(calls("dtoh_calls") - d0, 1);
    assert_int_equal(r.staging_peak(), 0);
    assert_memory_equal(out.data(), in.data(), in.size());
  }
  {
    // Non-temporal host copies forced for every size: exact bytes around
    // the 16-byte-aligned bulk (head, tail, odd offsets) both ways.
    setenv("T4A_TRANSFER_FORCE", "stream=1", 1);
    Rt r(2, 8 * MiB, 16 * MiB, 2 * MiB);
    unsigned seed = 40;
    for (uint64_t n : {uint64_t(1), uint64_t(15), uint64_t(64), uint64_t(65),
                       uint64_t(4 * KiB + 3), uint64_t(MiB + 5)}) {
      for (uint64_t offset : {uint64_t(0), uint64_t(3), uint64_t(17)}) {
        auto src = pattern(n, seed++);
        ok(t4a_buffer_upload(r.rt, r.buf, offset, src.data(), n));
        std::vector<unsigned char> dst(n + 2, 0xEE);
        ok(t4a_buffer_download_sync(r.rt, r.buf, offset, dst.data() + 1, n));
        assert_memory_equal(dst.data() + 1, src.data(), n);
        assert_int_equal(dst[0], 0xEE);
        assert_int_equal(dst[n + 1], 0xEE);
      }
    }
    unsetenv("T4A_TRANSFER_FORCE");
  }
  {
    // A malformed value is ignored as a whole: the plan by size.
    setenv("T4A_TRANSFER_FORCE", "piece=64K,bogus", 1);
    Rt r(2, 8 * MiB, 16 * MiB, 2 * MiB);
    int h0 = calls("htod_calls");
    ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), in.size()));
    unsetenv("T4A_TRANSFER_FORCE");
    assert_int_equal(calls("htod_calls") - h0, 1);
  }
}

// Pending downloads, both ways of ordering a waited delivery.
void test_pending(void **) {
  for (const char *mode : {"", "pend=stream"}) {
    if (*mode != '\0') setenv("T4A_TRANSFER_FORCE", mode, 1);
    Rt r(4, MiB, 4 * MiB, 8 * MiB);
    for (uint64_t n : {uint64_t(4), 4 * KiB + 1, 3 * MiB + 3}) {
      auto in = pattern(n, static_cast<unsigned>(n));
      ok(t4a_buffer_upload(r.rt, r.buf, 1, in.data(), n));
      unsetenv("T4A_TRANSFER_FORCE"); // read at the first transfer
      t4a_download d{};
      ok(t4a_buffer_download(r.rt, r.buf, 1, n, &d));
      std::vector<unsigned char> out(n, 0);
      ok(t4a_download_wait(d, out.data()));
      assert_memory_equal(out.data(), in.data(), n);
      // Delivered once: a second delivery is an error, not empty data.
      assert_int_equal(t4a_download_wait(d, out.data()),
                       T4A_ERROR_INVALID_ARGUMENT);
      ok(t4a_download_release(d));
    }
  }
}

// Small pending downloads take pinned host snapshot slots (no device
// allocation), 16 at a time; the 17th takes a device snapshot; larger
// ones always do. Slots come back on delivery and on release.
void test_host_snapshots(void **) {
  Rt r(2, MiB, 4 * MiB, 2 * MiB);
  auto in = pattern(2 * MiB, 21);
  ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), in.size()));
  auto allocations = [&] {
    t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
    ok(t4a_runtime_stats_get(r.rt, &s));
    return s.allocations;
  };
  const uint64_t small = 256 * KiB; // the largest that takes a slot
  for (int round = 0; round < 2; ++round) {
    uint64_t a0 = allocations();
    std::vector<t4a_download> ds(17);
    for (size_t i = 0; i < ds.size(); ++i)
      ok(t4a_buffer_download(r.rt, r.buf, i * 1000, small, &ds[i]));
    assert_int_equal(allocations() - a0, 1); // only the 17th
    t4a_download big{};
    ok(t4a_buffer_download(r.rt, r.buf, 7, small + 1, &big));
    assert_int_equal(allocations() - a0, 2);
    // Delivered in reverse order, each exact; the 5th released undelivered.
    for (size_t k = ds.size(); k-- > 0;) {
      if (k == 5) continue;
      std::vector<unsigned char> out(small, 0);
      ok(t4a_download_wait(ds[k], out.data()));
      assert_memory_equal(out.data(), in.data() + k * 1000, small);
      ok(t4a_download_release(ds[k]));
    }
    ok(t4a_download_release(ds[5]));
    std::vector<unsigned char> out(small + 1, 0);
    ok(t4a_download_wait(big, out.data()));
    assert_memory_equal(out.data(), in.data() + 7, small + 1);
    ok(t4a_download_release(big));
  }
  // Every slot came back (round 2 again took 16 slots and one device
  // snapshot, checked above); nothing was quarantined.
  t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
  ok(t4a_runtime_stats_get(r.rt, &s));
  assert_int_equal(s.quarantined, 0);
}

// The copy workers cannot start (thread creation fails: std::system_error
// from std::thread): a parallel copy runs on the threads there are, and the
// transfer succeeds with exact bytes. Before, the exception left a pipelined
// download's enqueued stages (their chunks returned to the free list while
// their copies could still run) and reached the caller as INTERNAL.
void test_copy_threads_fail(void **) {
  Rt r(4, MiB, 4 * MiB, 8 * MiB);
  const uint64_t n = 3 * MiB + 5; // pipelined download: pieces of 1 MiB
  auto in = pattern(n, 31);
  // Filled through a host buffer: no host copy, no workers yet.
  t4a_host_buffer hb{};
  ok(t4a_host_buffer_alloc(r.rt, n, &hb));
  void *hp = nullptr;
  ok(t4a_host_buffer_pointer(hb, &hp, nullptr));
  std::memcpy(hp, in.data(), n);
  ok(t4a_buffer_upload_host(r.rt, r.buf, 0, hb, 0, n));
  ok(t4a_host_buffer_release(hb));
  int t0 = settled_threads();
  g_fail_threads = true;
  std::vector<unsigned char> out(n, 0);
  t4a_status s = t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n);
  auto up = pattern(n, 32);
  t4a_status u = t4a_buffer_upload(r.rt, r.buf, 0, up.data(), n);
  g_fail_threads = false;
  ok(s);
  assert_memory_equal(out.data(), in.data(), n);
  ok(u);
  assert_int_equal(threads_now(), t0); // none started
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ok(t4a_runtime_stats_get(r.rt, &st));
  assert_int_equal(st.quarantined, 0);
  // Threads can be made again: the pool starts on the next parallel copy.
  ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n));
  assert_memory_equal(out.data(), up.data(), n);
  assert_int_equal(threads_now(), t0 + 3);
}

// Uploads whose pieces are copied ahead of their DMAs, with every depth
// and a staging budget of one, two and eight chunks: with fewer chunks
// than queued pieces the upload enqueues its oldest piece to make room.
// Exact bytes; one DMA per piece; nothing quarantined.
void test_upload_ahead(void **) {
  const uint64_t chunk = MiB, n = 7 * MiB + 5;
  auto in = pattern(n, 61);
  std::vector<unsigned char> out(n);
  for (const char *ahead : {"ahead=0", "ahead=1", "ahead=2", "ahead=8"}) {
    for (uint64_t budget : {chunk, 2 * chunk, 8 * chunk}) {
      setenv("T4A_TRANSFER_FORCE", ahead, 1);
      Rt r(4, chunk, budget, n + 3);
      for (uint64_t offset : {uint64_t(0), uint64_t(3)}) {
        int h0 = calls("htod_calls");
        ok(t4a_buffer_upload(r.rt, r.buf, offset, in.data(), n));
        unsetenv("T4A_TRANSFER_FORCE");
        assert_int_equal(calls("htod_calls") - h0, pieces(n, chunk));
        std::fill(out.begin(), out.end(), 0);
        ok(t4a_buffer_download_sync(r.rt, r.buf, offset, out.data(), n));
        assert_memory_equal(out.data(), in.data(), n);
      }
      t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
      ok(t4a_runtime_stats_get(r.rt, &s));
      assert_int_equal(s.quarantined, 0);
      assert_true(s.staging_bytes_peak <= budget);
    }
  }
}

// A DMA enqueue that fails in the middle of an upload with pieces copied
// ahead: ABANDONED, naming the failed step; the failed piece's chunk is
// quarantined; every queued copy is complete when the call returns (the
// source is freed right after it: the asan lane sees a late read); the
// runtime goes on working.
void test_upload_ahead_fault(void **) {
  const FaultSeam seam;
  if (!seam.present()) skip();
  const uint64_t chunk = MiB, n = 6 * MiB;
  Rt r(4, chunk, 8 * chunk, n);
  auto *src = new std::vector<unsigned char>(pattern(n, 71));
  ok(seam.arm("cuMemcpyHtoDAsync", 3, 1 /* CUDA_ERROR_INVALID_VALUE */,
              1 /* T4A_TESTING_FAULT_INSTEAD */));
  t4a_status s = t4a_buffer_upload(r.rt, r.buf, 0, src->data(), n);
  delete src;
  seam.reset();
  assert_int_equal(s, T4A_ERROR_ABANDONED);
  char msg[512];
  size_t needed = 0;
  t4a_last_error_message(msg, sizeof msg, &needed);
  assert_non_null(std::strstr(msg, "uploading from staging to the device"));
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ok(t4a_runtime_stats_get(r.rt, &st));
  assert_int_equal(st.quarantined, 1);
  // The runtime still works, through the chunks left.
  auto in = pattern(n, 72);
  ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), n));
  std::vector<unsigned char> out(n);
  ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n));
  assert_memory_equal(out.data(), in.data(), n);
}

// The queue depth shows in the epoch seals: 64 pieces through a budget of
// two chunks. Each fresh chunk seals the open epoch; copied ahead, both
// chunks are taken before the first piece is kept, so that seal records
// nothing: 62 events, against 63 with no copy ahead (each piece kept
// before the next chunk is taken). An upload that ignored the depth
// records 63 either way.
void test_upload_ahead_seals(void **) {
  const uint64_t chunk = MiB, n = 64 * MiB;
  auto in = pattern(n, 17);
  for (const char *f : {"", "ahead=0"}) {
    setenv("T4A_TRANSFER_FORCE", f, 1);
    Rt r(4, chunk, 2 * chunk, n);
    // Warm-up: both chunks allocated, then everything retired.
    ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), 4 * MiB));
    unsetenv("T4A_TRANSFER_FORCE");
    ok(t4a_runtime_synchronize(r.rt));
    uint64_t e0 = r.events();
    ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), n));
    assert_int_equal(r.events() - e0, f[0] == '\0' ? 62 : 63);
    assert_true(r.staging_peak() <= 2 * chunk);
    std::vector<unsigned char> out(n);
    ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n));
    assert_memory_equal(out.data(), in.data(), n);
  }
}

// Pieces sharing one chunk (forced pieces of 256 and 300 KiB) with a
// budget of one and two chunks and queue depths 0, 3 and 8: bytes exact,
// the budget kept.
void test_upload_ahead_shared_chunk(void **) {
  const uint64_t chunk = MiB, n = 5 * MiB + 777;
  auto in = pattern(n, 91);
  std::vector<unsigned char> out(n);
  for (const char *f :
       {"piece=256K,part=64K,ahead=0", "piece=256K,part=64K,ahead=3",
        "piece=256K,part=64K,ahead=8", "piece=300K,part=64K,ahead=8"}) {
    for (uint64_t budget : {chunk, 2 * chunk}) {
      setenv("T4A_TRANSFER_FORCE", f, 1);
      Rt r(3, chunk, budget, n);
      ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), n));
      unsetenv("T4A_TRANSFER_FORCE");
      std::fill(out.begin(), out.end(), 0);
      ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n));
      assert_memory_equal(out.data(), in.data(), n);
      assert_true(r.staging_peak() <= budget);
    }
  }
}

// An upload whose DMA fails while the newest queued piece is its short
// last piece, copied inline (ticket 0): the call returns only once every
// queued copy is complete. The first version waited for the newest
// ticket only, and the copy queued before the short piece read the
// caller's memory after the return (in 3 to 7 of 10 runs). The source is
// made unreadable as the call returns; a SIGSEGV handler counts a late
// read (and makes the memory readable again so the copy can finish).
namespace late {
unsigned char *g_src = nullptr;
size_t g_len = 0;
std::atomic<int> g_reads{0};
void on_segv(int, siginfo_t *si, void *) {
  auto *a = static_cast<unsigned char *>(si->si_addr);
  if (a >= g_src && a < g_src + g_len) {
    g_reads.fetch_add(1);
    mprotect(g_src, g_len, PROT_READ | PROT_WRITE);
    return;
  }
  signal(SIGSEGV, SIG_DFL);
  raise(SIGSEGV);
}
} // namespace late

void test_upload_fault_waits_for_copies(void **) {
  const FaultSeam seam;
  if (!seam.present()) skip();
  struct sigaction sa = {};
  sa.sa_sigaction = late::on_segv;
  sa.sa_flags = SA_SIGINFO;
  struct sigaction old = {};
  assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
  const uint64_t chunk = 16 * MiB, n = 6 * chunk + 5; // last piece: 5 bytes
  const size_t len = (n + 4095) & ~size_t(4095);
  auto p = pattern(n, 81);
  int late_runs = 0;
  for (int iter = 0; iter < 10; ++iter) {
    Rt r(2, chunk, 8 * chunk, n);
    auto *src =
        static_cast<unsigned char *>(mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    assert_true(src != MAP_FAILED);
    std::memcpy(src, p.data(), n);
    late::g_src = src;
    late::g_len = len;
    late::g_reads = 0;
    // Pieces 0..5 of 16 MiB are queued (ahead 2), piece 6 of 5 bytes is
    // copied inline; the 5th DMA (piece 4) fails once piece 6 is queued.
    ok(seam.arm("cuMemcpyHtoDAsync", 5, 1 /* CUDA_ERROR_INVALID_VALUE */,
                1 /* T4A_TESTING_FAULT_INSTEAD */));
    t4a_status s = t4a_buffer_upload(r.rt, r.buf, 0, src, n);
    assert_int_equal(mprotect(src, len, PROT_NONE), 0); // no reads from now
    seam.reset();
    assert_int_equal(s, T4A_ERROR_ABANDONED);
    struct timespec ts = {0, 20 * 1000 * 1000}; // a copy still running ends
    nanosleep(&ts, nullptr);
    if (late::g_reads.load() > 0) ++late_runs;
    assert_int_equal(mprotect(src, len, PROT_READ | PROT_WRITE), 0);
    munmap(src, len);
  }
  sigaction(SIGSEGV, &old, nullptr);
  assert_int_equal(late_runs, 0);
}

// A pinned staging allocation that fails with pieces queued: before any
// DMA, the allocation's own error; after one, ABANDONED naming the bytes
// whose DMAs were enqueued. The runtime goes on working.
void test_upload_staging_fails_queued(void **) {
  const FaultSeam seam;
  if (!seam.present()) skip();
  const uint64_t chunk = MiB, n = 6 * MiB;
  auto in = pattern(n, 5);
  std::vector<unsigned char> out(n);
  // The 2nd chunk (piece 1, nothing enqueued yet), then the 4th (piece 3:
  // piece 0's DMA was enqueued when piece 2 was queued).
  for (uint64_t nth : {uint64_t(2), uint64_t(4)}) {
    Rt r(4, chunk, 8 * chunk, n);
    ok(seam.arm("cuMemHostAlloc", nth, 2 /* CUDA_ERROR_OUT_OF_MEMORY */,
                1 /* T4A_TESTING_FAULT_INSTEAD */));
    t4a_status s = t4a_buffer_upload(r.rt, r.buf, 0, in.data(), n);
    seam.reset();
    char msg[512];
    size_t needed = 0;
    t4a_last_error_message(msg, sizeof msg, &needed);
    if (nth == 2) {
      assert_int_equal(s, T4A_ERROR_OUT_OF_HOST_MEMORY);
      assert_non_null(std::strstr(msg, "pinned staging chunk"));
    } else {
      assert_int_equal(s, T4A_ERROR_ABANDONED);
      assert_non_null(std::strstr(
          msg, "staging failed after 1048576 of 6291456 bytes were enqueued"));
    }
    ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), n));
    ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n));
    assert_memory_equal(out.data(), in.data(), n);
  }
}

// A delivery of a device snapshot that fails part-way leaks the snapshot
// and leaves the download undelivered; delivering it again is a clear
// error. Before, the retry copied from device address 0 (the quarantined
// snapshot's pointer was cleared and then used).
void test_delivery_retry_after_failure(void **) {
  const FaultSeam seam;
  if (!seam.present()) skip();
  Rt r(2, MiB, 4 * MiB, MiB);
  const uint64_t n = 300 * KiB; // above the host snapshot limit
  auto in = pattern(n, 41);
  ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), n));
  t4a_download d{};
  ok(t4a_buffer_download(r.rt, r.buf, 0, n, &d));
  std::vector<unsigned char> out(n, 0);
  // The delivery's copy out of the snapshot fails (not sticky).
  ok(seam.arm("cuMemcpyDtoHAsync", 1, 1 /* CUDA_ERROR_INVALID_VALUE */,
              1 /* T4A_TESTING_FAULT_INSTEAD */));
  t4a_status s1 = t4a_download_wait(d, out.data());
  seam.reset();
  assert_int_not_equal(s1, T4A_SUCCESS);
  int d0 = calls("dtoh_calls");
  assert_int_equal(t4a_download_wait(d, out.data()), T4A_ERROR_ABANDONED);
  assert_int_equal(t4a_download_poll(d, out.data()), T4A_ERROR_ABANDONED);
  assert_int_equal(calls("dtoh_calls"), d0); // nothing copied
  ok(t4a_download_release(d));
  // The runtime still works.
  ok(t4a_buffer_download_sync(r.rt, r.buf, 0, out.data(), n));
  assert_memory_equal(out.data(), in.data(), n);
}

// A host snapshot slot released undelivered is reused only once a query of
// its event succeeds: with that query failing (NOT_READY: its DMA may still
// run), the next small download takes a device snapshot instead.
void test_slot_not_reused_in_flight(void **) {
  const FaultSeam seam;
  if (!seam.present()) skip();
  Rt r(2, MiB, 4 * MiB, MiB);
  auto in = pattern(MiB, 51);
  ok(t4a_buffer_upload(r.rt, r.buf, 0, in.data(), MiB));
  auto allocations = [&] {
    t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
    ok(t4a_runtime_stats_get(r.rt, &s));
    return s.allocations;
  };
  std::vector<t4a_download> ds(16);
  for (size_t i = 0; i < ds.size(); ++i)
    ok(t4a_buffer_download(r.rt, r.buf, i, 4096, &ds[i]));
  ok(t4a_download_release(ds[15])); // undelivered, never observed
  uint64_t a0 = allocations();
  ok(seam.arm("cuEventQuery", 1, 600 /* CUDA_ERROR_NOT_READY */,
              1 /* T4A_TESTING_FAULT_INSTEAD */));
  t4a_download e{};
  ok(t4a_buffer_download(r.rt, r.buf, 100, 4096, &e));
  seam.reset();
  assert_int_equal(allocations() - a0, 1); // the slot was not taken
  // Its query succeeds now: the next one takes the slot.
  t4a_download f{};
  ok(t4a_buffer_download(r.rt, r.buf, 200, 4096, &f));
  assert_int_equal(allocations() - a0, 1);
  for (auto [d, at] : {std::pair{e, 100}, std::pair{f, 200}}) {
    std::vector<unsigned char> out(4096);
    ok(t4a_download_wait(d, out.data()));
    assert_memory_equal(out.data(), in.data() + at, 4096);
    ok(t4a_download_release(d));
  }
  for (size_t i = 0; i < 15; ++i) ok(t4a_download_release(ds[i]));
}

} // namespace

int main() {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  unsetenv("T4A_TRANSFER_FORCE");
  void *fake = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW);
  if (fake == nullptr) return 1;
  fake_live =
      reinterpret_cast<int (*)(const char *)>(dlsym(fake, "fake_cuda_live"));
  if (fake_live == nullptr) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_sizes),
      cmocka_unit_test(test_plan_forced),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_pieces_and_bytes),
      cmocka_unit_test(test_parallel_threshold),
      cmocka_unit_test(test_forced_paths),
      cmocka_unit_test(test_pending),
      cmocka_unit_test(test_host_snapshots),
      cmocka_unit_test(test_copy_threads_fail),
      cmocka_unit_test(test_upload_ahead),
      cmocka_unit_test(test_upload_ahead_fault),
      cmocka_unit_test(test_upload_ahead_seals),
      cmocka_unit_test(test_upload_ahead_shared_chunk),
      cmocka_unit_test(test_upload_fault_waits_for_copies),
      cmocka_unit_test(test_upload_staging_fails_queued),
      cmocka_unit_test(test_delivery_retry_after_failure),
      cmocka_unit_test(test_slot_not_reused_in_flight),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
