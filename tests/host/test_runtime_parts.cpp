// Host lane, pure: the runtime-part slot registry (src/core/component.cpp,
// compiled into this test). Parts registered in any order come back in
// ascending teardown rank; slots are distinct indices below k_max_parts;
// a duplicate rank or one slot too many aborts, naming the part.
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

extern "C" {
#include <cmocka.h>
}

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/component.hpp"

using t4a::core::k_max_parts;
using t4a::core::part_count;
using t4a::core::part_in_order;
using t4a::core::PartSlot;
using t4a::core::register_part;

namespace {

// Registered as a layer would (static initialization), out of rank order.
const PartSlot k_late = register_part("late part", 300);
const PartSlot k_early = register_part("early part", 100);
const PartSlot k_middle = register_part("middle part", 200);

void test_order_by_rank(void **) {
  assert_int_equal(part_count(), 3);
  // Slots are registration indices...
  assert_int_equal(k_late.index, 0);
  assert_int_equal(k_early.index, 1);
  assert_int_equal(k_middle.index, 2);
  // ...and teardown goes by rank, whatever the registration order.
  assert_int_equal(part_in_order(0).index, k_early.index);
  assert_int_equal(part_in_order(1).index, k_middle.index);
  assert_int_equal(part_in_order(2).index, k_late.index);
}

// Runs `fn` in a child; true when it died of SIGABRT.
template <class Fn> bool aborts(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

void test_duplicate_rank_aborts(void **) {
  assert_true(aborts([] { (void)register_part("clash", 200); }));
  // The parent's table is untouched (the child had its own copy).
  assert_int_equal(part_count(), 3);
}

void test_capacity_aborts(void **) {
  assert_true(aborts([] {
    for (int i = part_count(); i < k_max_parts; ++i)
      (void)register_part("filler", 1000 + i);
    (void)register_part("one too many", 5000);
  }));
  // Exactly k_max_parts fit.
  assert_false(aborts([] {
    for (int i = part_count(); i < k_max_parts; ++i)
      (void)register_part("filler", 1000 + i);
  }));
}

} // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_by_rank),
      cmocka_unit_test(test_duplicate_rank_aborts),
      cmocka_unit_test(test_capacity_aborts),
  };
  return cmocka_run_group_tests_name("runtime_parts", tests, nullptr, nullptr);
}
