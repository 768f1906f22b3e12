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

#include "memory/copy_workers.hpp"

using t4a::memory::CopyWorkers;

namespace {

constexpr size_t KiB = 1024;

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 40
#endif

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  uint32_t x = seed * 2654435761u + 7;
  for (auto &c : v) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

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

} // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inline),
      cmocka_unit_test(test_queue),
      cmocka_unit_test(test_destroy_queued),
      cmocka_unit_test(test_after_idle),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
