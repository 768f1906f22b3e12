// GPU lane: the C++ facade's typed arrays and variadic launch on a real
// device. saxpy through t4a::DeviceArray and Kernel::launch, checked
// element by element; the parameter-size check through the variadic
// launch (a double where the kernel takes an int is rejected, naming the
// argument and both sizes, and nothing runs); dynamic shared memory through
// t4a::LaunchConfig; the std::nothrow form. Exits 77 (SKIPPED) without a
// GPU unless T4A_REQUIRE_GPU is set (tests/support/gpu_support.h).
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <setjmp.h>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "gpu_support.h"
#include "t4acuda.hpp"

static const char *const k_source =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y,\n"
    "                                   int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void reverse(int *v, int n) {\n"
    "  extern __shared__ int s[];\n"
    "  int i = threadIdx.x;\n"
    "  if (i < n) s[i] = v[i];\n"
    "  __syncthreads();\n"
    "  if (i < n) v[i] = s[n - 1 - i];\n"
    "}\n";

static t4a::Module load(t4a::Runtime &rt) {
  return t4a::Module(rt,
                     t4a::compile(t4a::CompileRequest(k_source)
                                      .for_runtime(rt)
                                      .with_program_name("facade.cu")
                                      .with_flags(T4A_COMPILE_NO_DISK_CACHE)));
}

static void test_saxpy(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Kernel saxpy = load(rt).kernel("saxpy");
  const int n = (1 << 20) + 3; // not a multiple of the block
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.25f;
    y[i] = static_cast<float>(i % 777);
  }
  t4a::DeviceArray<float> dx(rt, x), dy(rt, y);
  saxpy.launch(rt, (n + 255) / 256, 256, 2.0f, dx, dy, n);
  std::vector<float> got(n);
  dy.download(rt, got);
  for (int i = 0; i < n; ++i)
    if (got[i] != 2.0f * x[i] + y[i])
      fail_msg("saxpy[%d] = %g, expected %g", i, static_cast<double>(got[i]),
               static_cast<double>(2.0f * x[i] + y[i]));
}

static void test_scalar_size_checked(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Kernel saxpy = load(rt).kernel("saxpy");
  const int n = 256;
  std::vector<float> y(n, 1.0f);
  t4a::DeviceArray<float> dx(rt, std::vector<float>(n, 1.0f)), dy(rt, y);
  const uint64_t before = rt.stats().launches;
  // A double for `float a` and a size_t for `int n`: sizes 8, not 4.
  bool threw = false;
  try {
    saxpy.launch(rt, 1, n, 2.0, dx, dy, n);
  } catch (const t4a::Error &e) {
    threw = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_ARGUMENT);
    const std::string m = e.what();
    if (m.find("desc->args[0] has 8 bytes; the kernel's parameter 0 has 4 "
               "bytes") == std::string::npos)
      fail_msg("unexpected message: %s", m.c_str());
  }
  assert_true(threw);
  assert_int_equal(
      saxpy.launch(rt, 1, n, 2.0f, dx, dy, size_t{n}, std::nothrow),
      T4A_ERROR_INVALID_ARGUMENT);
  assert_true(t4a::last_error_message().find("desc->args[3] has 8 bytes") !=
              std::string::npos);
  assert_int_equal(rt.stats().launches, before); // nothing ran
  std::vector<float> got(n);
  dy.download(rt, got);
  assert_true(got == y);
  // The right sizes run.
  assert_int_equal(saxpy.launch(rt, 1, n, 2.0f, dx, dy, n, std::nothrow),
                   T4A_SUCCESS);
  dy.download(rt, got);
  assert_true(got == std::vector<float>(n, 3.0f));
}

static void test_dynamic_shared(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Kernel reverse = load(rt).kernel("reverse");
  const int n = 512;
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  t4a::DeviceArray<int> d(rt, v);
  reverse.launch(rt, t4a::LaunchConfig(1, n, n * sizeof(int)), d, n);
  std::vector<int> got = d.to_vector(rt);
  for (int i = 0; i < n; ++i)
    if (got[i] != n - 1 - i) fail_msg("reverse[%d] = %d", i, got[i]);
}

int main() {
  gpu_lane_require(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_saxpy),
      cmocka_unit_test(test_scalar_size_checked),
      cmocka_unit_test(test_dynamic_shared),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
