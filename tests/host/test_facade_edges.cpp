// Host lane: edge cases of the C++17 facade (t4acuda.hpp) found in review,
// compiled -std=c++17 -pedantic -Werror, on the fake driver of tests/fake:
//  - Kernel::launch() takes std::nothrow only as its last argument (a tag
//    anywhere else would be packed as a kernel argument);
//  - a C array is a container for DeviceArray transfers, const or not:
//    `upload(rt, a, 2)` / `download(rt, a, 2)` mean element offset 2, as
//    for a std::vector (the pointer forms take real pointers);
//  - CompileRequest's copy assignment is strongly exception safe: a copy
//    that runs out of memory leaves the target as it was, never pointing
//    into the source's strings;
//  - RuntimeOptions::release_threshold(0) releases all unused pool memory
//    (the C field's 0 means "keep all", the default);
//  - a grid or block extent from a wider integer (a size_t `(n + 255) /
//    256`) that does not fit in 32 bits is rejected by the launch, never
//    truncated to a smaller grid; `{w, h}` of ints compiles;
//  - without T4A_EXPERIMENTAL (this unit) LaunchConfig has its attribute
//    fields but no builders, and a configuration carrying attributes is
//    refused (T4A_ERROR_UNSUPPORTED), never launched without them.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <array>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <setjmp.h>
#include <string>
#include <type_traits>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "t4acuda.hpp"

// ---- operator new that fails on demand ------------------------------------

// The replacements pair malloc with free; GCC's inliner sees a new-ed
// pointer reach free() and warns.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

static bool g_armed = false;
static long g_fail_after = 0; // successful allocations left while armed

void *operator new(std::size_t n) {
  if (g_armed) {
    if (g_fail_after == 0) throw std::bad_alloc();
    --g_fail_after;
  }
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

// ---- std::nothrow only last -------------------------------------------------

template <class Void, class... A> struct can_launch_ : std::false_type {};
template <class... A>
struct can_launch_<
    std::void_t<decltype(std::declval<const t4a::Kernel &>().launch(
        std::declval<t4a::RuntimeView>(), t4a::Dim3(), t4a::Dim3(),
        std::declval<const A &>()...))>,
    A...> : std::true_type {};
template <class... A> using can_launch = can_launch_<void, A...>;

template <class Void, class... A>
struct can_launch_config_ : std::false_type {};
template <class... A>
struct can_launch_config_<
    std::void_t<decltype(std::declval<const t4a::Kernel &>().launch(
        std::declval<t4a::RuntimeView>(), t4a::LaunchConfig(1, 1),
        std::declval<const A &>()...))>,
    A...> : std::true_type {};
template <class... A> using can_launch_config = can_launch_config_<void, A...>;

static_assert(can_launch<>::value);
static_assert(can_launch<int, float>::value);
static_assert(can_launch<int, float, std::nothrow_t>::value);
static_assert(can_launch<std::nothrow_t>::value);
static_assert(!can_launch<std::nothrow_t, int>::value,
              "std::nothrow first would be packed as a kernel argument");
static_assert(!can_launch<int, std::nothrow_t, float>::value);
static_assert(!can_launch<int, std::nothrow_t, std::nothrow_t>::value);
static_assert(can_launch_config<int, std::nothrow_t>::value);
static_assert(!can_launch_config<std::nothrow_t, int>::value);
static_assert(!can_launch_config<std::nothrow_t, std::nothrow_t>::value);
// The non-throwing form still returns the status.
static_assert(
    std::is_same<decltype(std::declval<const t4a::Kernel &>().launch(
                     std::declval<t4a::RuntimeView>(), 1, 1, 1, std::nothrow)),
                 t4a_status>::value);

// ---- C arrays are containers
// --------------------------------------------------

static std::vector<float> zeros_then(t4a::Runtime &rt,
                                     const t4a::DeviceArray<float> &d) {
  return d.to_vector(rt);
}

static void test_c_array_is_a_container(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  const std::vector<float> want = {0, 0, 1, 2};

  // upload(rt, x, 2): x at element offset 2, for a vector and for C arrays
  // of either constness.
  const std::vector<float> v = {1, 2};
  float a[2] = {1, 2};
  const float ca[2] = {1, 2};
  t4a::DeviceArray<float> dv(rt, 4, T4A_BUFFER_ZERO);
  t4a::DeviceArray<float> da(rt, 4, T4A_BUFFER_ZERO);
  t4a::DeviceArray<float> dc(rt, 4, T4A_BUFFER_ZERO);
  dv.upload(rt, v, 2);
  da.upload(rt, a, 2);
  dc.upload(rt, ca, 2);
  assert_true(zeros_then(rt, dv) == want);
  assert_true(zeros_then(rt, da) == want);
  assert_true(zeros_then(rt, dc) == want); // was: 2 elements at offset 0

  // download(rt, x, 1): elements 1.. into x, for a vector and a C array.
  std::vector<float> out_v(4, 9.0f);
  float out_a[4] = {9, 9, 9, 9};
  dv.download(rt, out_v, 1);
  dv.download(rt, out_a, 1); // was: 1 element from offset 0
  assert_true(out_v == std::vector<float>({0, 1, 2, 9}));
  assert_true(out_a[0] == 0 && out_a[1] == 1 && out_a[2] == 2 && out_a[3] == 9);

  // Real pointers keep the pointer + count meaning, offset 0 unless given.
  t4a::DeviceArray<float> dp(rt, 4, T4A_BUFFER_ZERO);
  const float *p = ca;
  dp.upload(rt, p, 2);
  assert_true(zeros_then(rt, dp) == std::vector<float>({1, 2, 0, 0}));
  dp.upload(rt, ca, 1, 3); // array, count and offset: the pointer form
  assert_true(zeros_then(rt, dp) == std::vector<float>({1, 2, 0, 1}));
  float one[1] = {0};
  float *q = one;
  dp.download(rt, q, 1);
  assert_true(one[0] == 1);
  dp.download(rt, one, 1, 3);
  assert_true(one[0] == 1);
  dp.upload(rt, nullptr, 0); // nothing to copy
}

// ---- CompileRequest copy assignment under allocation failure ---------------

static void expect_target_unchanged(const t4a::CompileRequest &t,
                                    const t4a::CompileRequest &src,
                                    const std::string &source) {
  assert_string_equal(t.source, source.c_str());
  assert_true(t.source != src.source);
  assert_int_equal(t.option_count, 1);
  assert_true(t.options != src.options);
  assert_string_equal(t.options[0], "-DTARGET=1");
  assert_int_equal(t.header_count, 1);
  assert_string_equal(t.header_names[0], "target.h");
  assert_string_equal(t.header_sources[0], "#define TARGET 1");
  assert_int_equal(t.name_expression_count, 0);
  assert_null(t.name_expressions);
  assert_null(t.program_name);
}

static void test_compile_request_copy_assign_strong(void **) {
  const std::string target_source(200, 't'), source_source(300, 's');
  t4a::CompileRequest target(target_source);
  target.with_option("-DTARGET=1").with_header("target.h", "#define TARGET 1");
  auto src = std::make_unique<t4a::CompileRequest>(source_source);
  src->with_program_name(std::string(64, 'p'))
      .with_option("-DSOURCE=1")
      .with_option(std::string(100, 'o'))
      .with_header("source.h", std::string(80, 'h'))
      .with_name_expression("&k<float>")
      .with_cache_dir(std::string(90, 'c'));

  int failures = 0;
  for (long n = 0;; ++n) {
    bool threw = false;
    g_fail_after = n;
    g_armed = true;
    try {
      target = *src;
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    g_armed = false;
    if (!threw) break;
    ++failures;
    expect_target_unchanged(target, *src, target_source);
    assert_true(n < 1000);
  }
  assert_true(failures > 0); // the copy allocates, so each step was tried
  // The copy is the target's own: the source can go.
  src.reset();
  assert_string_equal(target.source, source_source.c_str());
  assert_string_equal(target.program_name, std::string(64, 'p').c_str());
  assert_int_equal(target.option_count, 2);
  assert_string_equal(target.options[0], "-DSOURCE=1");
  assert_string_equal(target.options[1], std::string(100, 'o').c_str());
  assert_int_equal(target.header_count, 1);
  assert_string_equal(target.header_names[0], "source.h");
  assert_string_equal(target.header_sources[0], std::string(80, 'h').c_str());
  assert_int_equal(target.name_expression_count, 1);
  assert_string_equal(target.name_expressions[0], "&k<float>");
  assert_string_equal(target.cache_dir, std::string(90, 'c').c_str());
}

// ---- release_threshold(0) ---------------------------------------------------

static void test_release_threshold_zero(void **) {
  // What the driver got, as t4a_runtime_info reports it.
  t4a::Runtime all(t4a::RuntimeOptions().release_threshold(0));
  assert_int_equal(all.info().pool_release_threshold, 0);
  t4a::Runtime some(t4a::RuntimeOptions().release_threshold(1 << 20));
  assert_int_equal(some.info().pool_release_threshold, 1 << 20);
  t4a::Runtime keep(t4a::RuntimeOptions{});
  assert_true(keep.info().pool_release_threshold == T4A_POOL_KEEP_ALL);
  t4a::Runtime spelled(
      t4a::RuntimeOptions().release_threshold(T4A_POOL_KEEP_ALL));
  assert_true(spelled.info().pool_release_threshold == T4A_POOL_KEEP_ALL);
}

// ---- extents wider than 32 bits
// -----------------------------------------------

static_assert(t4a::Dim3(uint64_t(1) << 32).x == UINT32_MAX,
              "2^32 blocks must not become 0");
static_assert(t4a::Dim3((uint64_t(1) << 32) + 1).x == UINT32_MAX,
              "2^32 + 1 blocks must not become 1");
static_assert(t4a::Dim3(size_t(7), int64_t(-1)).y == UINT32_MAX);
static_assert(t4a::Dim3(-1).x == UINT32_MAX);
static_assert(t4a::Dim3(5).x == 5 && t4a::Dim3(5).y == 1);
static_assert(t4a::Dim3{4, 3, 2}.z == 2 && t4a::Dim3().z == 1);
static_assert(t4a::Dim3(uint8_t(200), short(3)).y == 3);
static_assert(std::is_trivially_copyable<t4a::Dim3>::value);
static_assert(std::is_convertible<size_t, t4a::Dim3>::value);

static void test_wide_extent_rejected(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Artifact a = t4a::compile(
      t4a::CompileRequest("extern \"C\" __global__ void k(float *x) {}")
          .for_cc(9, 0)
          .with_flags(T4A_COMPILE_NO_DISK_CACHE));
  t4a::Kernel k = t4a::Module(rt, a).kernel("k");
  t4a::DeviceArray<float> d(rt, 256);
  size_t n = (size_t(1) << 40) + 256; // elements, one thread each
  assert_int_equal(k.launch(rt, (n + 255) / 256, 256, d, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  const std::string m = t4a::last_error_message();
  assert_true(m.find("grid[0]") != std::string::npos);
  assert_int_equal(rt.stats().launches, 0);
  // {w, h} of ints: a 2 x 3 grid.
  const int w = 2, h = 3;
  int ww = w, hh = h; // not constants: no narrowing allowed in braces
  k.launch(rt, {ww, hh}, 32, d);
  assert_int_equal(rt.stats().launches, 1);
  rt.synchronize();
}

// ---- launch attributes without T4A_EXPERIMENTAL ----------------------------

// This unit is built without T4A_EXPERIMENTAL: the attribute builders and
// Kernel::cluster_occupancy() are not declared, the fields are (the same
// layout as in a unit with it), and a launch whose configuration carries
// attributes anyway is refused with T4A_ERROR_UNSUPPORTED (this unit
// cannot reach t4a_launch_ex()), never launched without them.
template <class C, class = void> struct has_cluster : std::false_type {};
template <class C>
struct has_cluster<C, std::void_t<decltype(std::declval<C &>().cluster(2))>>
    : std::true_type {};
template <class C, class = void> struct has_programmatic : std::false_type {};
template <class C>
struct has_programmatic<
    C, std::void_t<decltype(std::declval<C &>().programmatic())>>
    : std::true_type {};
template <class K, class = void>
struct has_cluster_occupancy : std::false_type {};
template <class K>
struct has_cluster_occupancy<
    K, std::void_t<decltype(std::declval<const K &>().cluster_occupancy(
           t4a::LaunchConfig(1, 1)))>> : std::true_type {};
static_assert(!has_cluster<t4a::LaunchConfig>::value);
static_assert(!has_programmatic<t4a::LaunchConfig>::value);
static_assert(!has_cluster_occupancy<t4a::Kernel>::value);
static_assert(T4A_HPP_LAUNCH_ATTRS == 0);
static_assert(sizeof(t4a::LaunchConfig) ==
              sizeof(t4a::Dim3) * 2 + sizeof(uint32_t) * 6);
static_assert(!t4a::LaunchConfig(1, 1).has_attributes());

static void test_attributes_without_experimental(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Artifact a = t4a::compile(
      t4a::CompileRequest("extern \"C\" __global__ void k(float *x) {}")
          .for_cc(9, 0)
          .with_flags(T4A_COMPILE_NO_DISK_CACHE));
  t4a::Kernel k = t4a::Module(rt, a).kernel("k");
  t4a::DeviceArray<float> d(rt, 256);
  k.launch(rt, t4a::LaunchConfig(4, 64), d); // no attributes: t4a_launch()
  assert_int_equal(rt.stats().launches, 1);
  t4a::LaunchConfig cluster(4, 64);
  cluster.cluster_dims[0] = 2;
  t4a::LaunchConfig programmatic(4, 64);
  programmatic.attr_flags = 1; // T4A_LAUNCH_ATTR_PROGRAMMATIC
  assert_true(cluster.has_attributes() && programmatic.has_attributes());
  // An earlier failure leaves its message; the refusal clears it, so a
  // stale message never describes it.
  assert_int_equal(k.launch(rt, {0, 1, 1}, 64, d, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_false(t4a::last_error_message().empty());
  assert_int_equal(k.launch(rt, cluster, d, std::nothrow),
                   T4A_ERROR_UNSUPPORTED);
  assert_true(t4a::last_error_message().empty());
  bool thrown = false;
  try {
    k.launch(rt, programmatic, d);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_UNSUPPORTED);
    assert_int_equal(e.driver_result(), 0);
    assert_true(e.entry_point().empty());
  }
  assert_true(thrown);
  assert_int_equal(rt.stats().launches, 1); // neither was launched
  rt.synchronize();
}

int main() {
#if defined(T4A_FAKE_CUDA_PATH)
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c_array_is_a_container),
      cmocka_unit_test(test_compile_request_copy_assign_strong),
      cmocka_unit_test(test_release_threshold_zero),
      cmocka_unit_test(test_wide_extent_rejected),
      cmocka_unit_test(test_attributes_without_experimental),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
