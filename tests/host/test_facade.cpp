// Host lane: the C++17 facade (t4acuda.hpp), compiled -std=c++17 -pedantic
// -Werror. Without a driver (T4A_CUDA_DRIVER_PATH points nowhere) every
// operation must report NO_DRIVER through t4a::Error or the non-throwing
// overloads, and the ownership rules must hold.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstdarg>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <setjmp.h>
#include <string>
#include <type_traits>

extern "C" {
#include <cmocka.h>
}

#include "t4acuda.hpp"

// The same operations in a translation unit built with -fno-exceptions.
t4a_status facade_noexcept_create(t4a::Runtime &out);

static_assert(!std::is_copy_constructible_v<t4a::Runtime>,
              "an owning runtime is move-only");
static_assert(std::is_nothrow_move_constructible_v<t4a::Runtime>);
static_assert(std::is_copy_constructible_v<t4a::RuntimeView>);
static_assert(sizeof(t4a::Runtime) == sizeof(t4a_runtime),
              "a wrapper holds only its C handle");

static void test_throwing_create(void **) {
  bool thrown = false;
  try {
    t4a::Runtime rt{t4a::RuntimeOptions{}.device(0)};
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_NO_DRIVER);
    assert_string_equal(e.entry_point().c_str(), "t4a_runtime_create");
    assert_non_null(std::strstr(e.what(), "T4A_ERROR_NO_DRIVER"));
    assert_non_null(std::strstr(e.what(), "/nonexistent/libcuda.so.1"));
  }
  assert_true(thrown);
  thrown = false;
  try {
    (void)t4a::device_count();
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_NO_DRIVER);
    assert_string_equal(e.entry_point().c_str(), "t4a_device_count");
  }
  assert_true(thrown);
}

static void test_nothrow_paths(void **) {
  t4a::Runtime rt;
  assert_false(static_cast<bool>(rt));
  assert_int_equal(t4a::Runtime::create(t4a::RuntimeOptions{}, rt,
                                        std::nothrow),
                   T4A_ERROR_NO_DRIVER);
  assert_false(static_cast<bool>(rt)); // untouched on error
  assert_non_null(std::strstr(t4a::last_error_message().c_str(),
                              "t4a_runtime_create"));
  int32_t n = 7;
  assert_int_equal(t4a::device_count(n, std::nothrow), T4A_ERROR_NO_DRIVER);
  assert_int_equal(n, 7);
  t4a::Runtime other;
  assert_int_equal(facade_noexcept_create(other), T4A_ERROR_NO_DRIVER);
  // A view of the null handle reports INVALID_HANDLE, it never crashes.
  t4a::RuntimeView v;
  assert_int_equal(v.synchronize(std::nothrow), T4A_ERROR_INVALID_HANDLE);
  t4a_runtime_stats s;
  assert_int_equal(v.stats(s, std::nothrow), T4A_ERROR_INVALID_HANDLE);
}

static void test_ownership(void **) {
  // A forged handle adopted: destroy reports INVALID_HANDLE, the
  // destructor swallows it; release() hands the handle back untouched.
  t4a_runtime forged{0x0100000100000007ull};
  t4a::Runtime a(forged);
  assert_true(static_cast<bool>(a));
  t4a::Runtime b(std::move(a));
  assert_false(static_cast<bool>(a));
  assert_int_equal(b.get().id, forged.id);
  assert_int_equal(b.view().get().id, forged.id);
  t4a_runtime back = b.release();
  assert_int_equal(back.id, forged.id);
  assert_false(static_cast<bool>(b));
  t4a::Runtime c(forged);
  assert_int_equal(c.destroy(std::nothrow), T4A_ERROR_INVALID_HANDLE);
  assert_false(static_cast<bool>(c));
  t4a::Runtime d(forged);
  d = t4a::Runtime(nullptr); // destroying the forged one: no throw
  assert_false(static_cast<bool>(d));
}

static void test_versions(void **) {
  auto v = t4a::nvrtc_version();
  assert_true(v.first >= 12);
  assert_int_equal(t4a_version(), T4A_VERSION_NUMBER);
}

int main() {
  setenv("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_throwing_create),
      cmocka_unit_test(test_nothrow_paths),
      cmocka_unit_test(test_ownership),
      cmocka_unit_test(test_versions),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
