// Host lane, pure: the copy workers' queue (src/memory/copy_workers.cpp,
// compiled into this test; the tsan lane runs it under TSan). Copies
// queued without waiting, beyond the job slots, at odd sizes and with
// non-temporal stores, come out exact; waiting for one copy completes it
// and every copy queued before it; a small copy runs inline (ticket 0);
// destroying the workers completes what is queued.
#include <algorithm>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "byte_pattern.hpp"
#include "memory/copy_workers.hpp"

using t4a::memory::CopyWorkers;

namespace {

constexpr size_t KiB = 1024;

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 40
#endif

struct Copy {
  std::vector<unsigned char> src, dst;
  CopyWorkers::Ticket ticket = 0;
};

// Sizes around the part boundaries (parts are rounded up to 4 KiB).
size_t size_of(unsigned i) {
  const size_t sizes[] = {64 * KiB,     64 * KiB + 1, 200 * KiB + 13,
                          1024 * KiB,   16 * KiB - 1, 4 * KiB * 4 + 3,
                          333 * KiB + 5};
  return sizes[i % (sizeof sizes / sizeof sizes[0])];
}

void test_inline(void **) {
  CopyWorkers one(1);
  auto src = pattern(256 * KiB, 1);
  std::vector<unsigned char> dst(src.size());
  assert_int_equal(one.submit(dst.data(), src.data(), src.size(), 4 * KiB), 0);
  assert_memory_equal(dst.data(), src.data(), src.size());
  one.wait(0); // nothing to wait for
  CopyWorkers four(4);
  // Fewer than two parts of min_part: inline too, and no thread starts.
  assert_int_equal(four.submit(dst.data(), src.data(), src.size(), src.size()),
                   0);
  assert_int_equal(four.parallel_copies(), 0);
}

// Many copies queued at once (more than the job slots: the oldest is
// waited for to free one), waited for in order, every k-th, or only the
// last.
void test_queue(void **) {
  for (int threads : {2, 4, 8}) {
    CopyWorkers w(threads);
    for (unsigned stride : {1u, 3u, 100u}) {
      const unsigned n = 3 * CopyWorkers::k_jobs + 1;
      std::vector<Copy> copies(n);
      for (unsigned i = 0; i < n; ++i) {
        Copy &c = copies[i];
        c.src = pattern(size_of(i), i + 10 * stride);
        c.dst.assign(c.src.size() + 2, 0xEE);
        c.ticket = w.submit(c.dst.data() + 1, c.src.data(), c.src.size(),
                            4 * KiB, i % 2 == 1);
        assert_int_not_equal(c.ticket, 0);
        if (i > 0) assert_true(c.ticket > copies[i - 1].ticket);
        if ((i + 1) % stride == 0) {
          w.wait(c.ticket);
          // Every copy up to this one is complete.
          for (unsigned k = 0; k <= i; ++k) {
            assert_memory_equal(copies[k].dst.data() + 1, copies[k].src.data(),
                                copies[k].src.size());
          }
        }
      }
      w.wait(copies.back().ticket);
      for (Copy &c : copies) {
        assert_memory_equal(c.dst.data() + 1, c.src.data(), c.src.size());
        assert_int_equal(c.dst.front(), 0xEE); // nothing outside
        assert_int_equal(c.dst.back(), 0xEE);
      }
      w.wait(copies.front().ticket); // already retired: returns
    }
    assert_true(w.parallel_copies() >= 3 * (3 * CopyWorkers::k_jobs + 1));
  }
}

// Destroying the workers with copies queued completes them first.
void test_destroy_queued(void **) {
  for (int i = 0; i < T4A_RACE_ITERATIONS; ++i) {
    std::vector<Copy> copies(5);
    {
      CopyWorkers w(4);
      for (unsigned k = 0; k < copies.size(); ++k) {
        copies[k].src = pattern(size_of(k + i), k + 100 * i);
        copies[k].dst.assign(copies[k].src.size(), 0);
        w.submit(copies[k].dst.data(), copies[k].src.data(),
                 copies[k].src.size(), 4 * KiB);
      }
    }
    for (Copy &c : copies)
      assert_memory_equal(c.dst.data(), c.src.data(), c.src.size());
  }
}

// Copies queued while the workers sleep (past their spin) and while they
// spin: each wakes them.
void test_after_idle(void **) {
  CopyWorkers w(3);
  for (int i = 0; i < T4A_RACE_ITERATIONS; ++i) {
    auto src = pattern(512 * KiB, i);
    std::vector<unsigned char> dst(src.size());
    w.copy(dst.data(), src.data(), src.size(), 4 * KiB, i % 3 == 0);
    assert_memory_equal(dst.data(), src.data(), src.size());
    if (i % 8 == 0) {
      struct timespec ts = {0, 1000000}; // 1 ms: past the 200 us spin
      nanosleep(&ts, nullptr);
    }
  }
}

// Many small two-part copies, 8 outstanding, each slot's copy waited for
// just before its destination is reused, and at random points a wait for
// an older or newer outstanding copy; 2, 3 and 5 threads.
void test_stress_waits(void **) {
  for (int threads : {2, 3, 5}) {
    CopyWorkers w(threads);
    const size_t n = 8 * KiB;
    std::vector<std::vector<unsigned char>> src(16), dst(16);
    std::vector<CopyWorkers::Ticket> tk(16, 0);
    std::vector<unsigned> gen(16, 0);
    uint32_t x = 12345;
    auto rnd = [&] {
      x = x * 1664525u + 1013904223u;
      return x >> 8;
    };
    for (int i = 0; i < 200 * T4A_RACE_ITERATIONS; ++i) {
      unsigned s = i % 16;
      if (tk[s] != 0) {
        w.wait(tk[s]);
        auto want = pattern(n + (gen[s] % 3) * 4096, gen[s]);
        assert_int_equal(dst[s].size(), want.size());
        assert_memory_equal(dst[s].data(), want.data(), want.size());
      }
      gen[s] = i + 1;
      src[s] = pattern(n + (gen[s] % 3) * 4096, gen[s]);
      dst[s].assign(src[s].size(), 0);
      tk[s] = w.submit(dst[s].data(), src[s].data(), src[s].size(), 4 * KiB,
                       (rnd() & 1) != 0);
      assert_int_not_equal(tk[s], 0);
      if (rnd() % 5 == 0) w.wait(tk[(s + 16 - rnd() % 8) % 16]);
    }
    for (unsigned s = 0; s < 16; ++s) w.wait(tk[s]);
    for (unsigned s = 0; s < 16; ++s) {
      auto want = pattern(src[s].size(), gen[s]);
      assert_memory_equal(dst[s].data(), want.data(), want.size());
    }
  }
}

// A wait for a ticket never handed out waits for every copy submitted and
// leaves the queue usable (it once moved the retired mark past the newest
// ticket, and the next submit waited for ever).
void test_wait_beyond_newest(void **) {
  CopyWorkers w(3);
  auto src = pattern(256 * KiB, 5);
  std::vector<unsigned char> dst(src.size()), dst2(src.size());
  CopyWorkers::Ticket t = w.submit(dst.data(), src.data(), src.size(), 4 * KiB);
  w.wait(t + 5);
  assert_memory_equal(dst.data(), src.data(), src.size());
  for (size_t k = 0; k < 3 * CopyWorkers::k_jobs; ++k) {
    CopyWorkers::Ticket u =
        w.submit(dst2.data(), src.data(), src.size(), 4 * KiB);
    assert_true(u > t);
    w.wait(u);
    t = u;
  }
  assert_memory_equal(dst2.data(), src.data(), src.size());
  // One page in three parts rounds up to one page-sized part: inline.
  assert_int_equal(w.submit(dst.data(), src.data(), 4096, 1024), 0);
}

} // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inline),
      cmocka_unit_test(test_queue),
      cmocka_unit_test(test_destroy_queued),
      cmocka_unit_test(test_after_idle),
      cmocka_unit_test(test_stress_waits),
      cmocka_unit_test(test_wait_beyond_newest),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
