// Host lane: the C++17 facade (t4acuda.hpp), compiled -std=c++17 -pedantic
// -Werror. Without a driver (T4A_CUDA_DRIVER_PATH points nowhere) every
// operation must report NO_DRIVER through t4a::Error or the non-throwing
// overloads, and the ownership rules must hold.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <array>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <list>
#include <setjmp.h>
#include <string>
#include <type_traits>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#define T4A_EXPERIMENTAL 1 // the graph and cooperative wrappers too
#include "t4acuda.hpp"

// The same operations in a translation unit built with -fno-exceptions.
t4a_status facade_noexcept_create(t4a::Runtime &out);
t4a_status facade_noexcept_buffers(t4a::Buffer &out, uint64_t forged_id);
t4a_status facade_noexcept_compile(t4a::Artifact &out, std::string &log);
t4a_status facade_noexcept_launch(t4a::Module &module, t4a::Kernel &kernel,
                                  t4a::Completion &completion,
                                  uint64_t forged_module,
                                  uint64_t forged_kernel,
                                  uint64_t forged_completion);
t4a_status facade_noexcept_variadic(uint64_t forged_kernel,
                                    uint64_t forged_buffer);

static_assert(!std::is_copy_constructible_v<t4a::Runtime>,
              "an owning runtime is move-only");
static_assert(std::is_nothrow_move_constructible_v<t4a::Runtime>);
static_assert(std::is_copy_constructible_v<t4a::RuntimeView>);
static_assert(sizeof(t4a::Runtime) == sizeof(t4a_runtime),
              "a wrapper holds only its C handle");

// Buffers and host buffers are shared (copying retains); downloads are
// delivered once, so move-only. Each wrapper holds only its C handle.
static_assert(sizeof(t4a::Buffer) == 8);
static_assert(sizeof(t4a::Buffer) == sizeof(t4a_buffer));
static_assert(sizeof(t4a::HostBuffer) == sizeof(t4a_host_buffer));
static_assert(sizeof(t4a::Download) == sizeof(t4a_download));
static_assert(std::is_copy_constructible_v<t4a::Buffer>);
static_assert(std::is_copy_assignable_v<t4a::Buffer>);
static_assert(std::is_nothrow_copy_constructible_v<t4a::Buffer>);
static_assert(std::is_nothrow_move_constructible_v<t4a::Buffer>);
static_assert(std::is_nothrow_move_assignable_v<t4a::Buffer>);
static_assert(std::is_nothrow_destructible_v<t4a::Buffer>);
static_assert(std::is_copy_constructible_v<t4a::HostBuffer>);
static_assert(std::is_copy_assignable_v<t4a::HostBuffer>);
static_assert(std::is_nothrow_move_constructible_v<t4a::HostBuffer>);
static_assert(!std::is_copy_constructible_v<t4a::Download>,
              "a pending download is move-only");
static_assert(!std::is_copy_assignable_v<t4a::Download>);
static_assert(std::is_nothrow_move_constructible_v<t4a::Download>);
static_assert(std::is_nothrow_move_assignable_v<t4a::Download>);
// Adopting a C handle is explicit: no silent ownership transfer.
static_assert(!std::is_convertible_v<t4a_buffer, t4a::Buffer>);
static_assert(std::is_constructible_v<t4a::Buffer, t4a_buffer>);
static_assert(!std::is_convertible_v<t4a_host_buffer, t4a::HostBuffer>);
static_assert(!std::is_convertible_v<t4a_download, t4a::Download>);
// Different handle types do not mix.
static_assert(!std::is_constructible_v<t4a::Buffer, t4a_host_buffer>);
static_assert(!std::is_constructible_v<t4a::HostBuffer, t4a_buffer>);

// Modules, kernels and completions are reference counted (each has a
// retain and a release): shared like buffers, holding only the C handle.
static_assert(sizeof(t4a::Module) == sizeof(t4a_module));
static_assert(sizeof(t4a::Kernel) == sizeof(t4a_kernel));
static_assert(sizeof(t4a::Completion) == sizeof(t4a_completion));
static_assert(sizeof(t4a::Completion) == 8);
static_assert(std::is_copy_constructible_v<t4a::Module>);
static_assert(std::is_copy_assignable_v<t4a::Module>);
static_assert(std::is_nothrow_copy_constructible_v<t4a::Module>);
static_assert(std::is_nothrow_move_constructible_v<t4a::Module>);
static_assert(std::is_nothrow_move_assignable_v<t4a::Module>);
static_assert(std::is_nothrow_destructible_v<t4a::Module>);
static_assert(std::is_copy_constructible_v<t4a::Kernel>);
static_assert(std::is_copy_assignable_v<t4a::Kernel>);
static_assert(std::is_nothrow_copy_constructible_v<t4a::Kernel>);
static_assert(std::is_nothrow_move_constructible_v<t4a::Kernel>);
static_assert(std::is_nothrow_move_assignable_v<t4a::Kernel>);
static_assert(std::is_copy_constructible_v<t4a::Completion>);
static_assert(std::is_copy_assignable_v<t4a::Completion>);
static_assert(std::is_nothrow_copy_constructible_v<t4a::Completion>);
static_assert(std::is_nothrow_move_constructible_v<t4a::Completion>);
static_assert(std::is_nothrow_move_assignable_v<t4a::Completion>);
static_assert(!std::is_convertible_v<t4a_module, t4a::Module>);
static_assert(std::is_constructible_v<t4a::Module, t4a_module>);
static_assert(!std::is_convertible_v<t4a_kernel, t4a::Kernel>);
static_assert(!std::is_convertible_v<t4a_completion, t4a::Completion>);
static_assert(!std::is_constructible_v<t4a::Module, t4a_kernel>);
static_assert(!std::is_constructible_v<t4a::Kernel, t4a_module>);
static_assert(!std::is_constructible_v<t4a::Completion, t4a_kernel>);
static_assert(!std::is_constructible_v<t4a::Kernel, t4a::Module>);
// Launch helpers: plain values, no allocation.
static_assert(std::is_trivially_copyable_v<t4a::Dim3>);
static_assert(std::is_convertible_v<uint32_t, t4a::Dim3>);
static_assert(t4a::Dim3().x == 1 && t4a::Dim3().y == 1 && t4a::Dim3().z == 1);
static_assert(t4a::Dim3(7).y == 1 && t4a::Dim3(7, 3).z == 1);
static_assert(noexcept(t4a::arg_scalar(1.0f)));
static_assert(noexcept(t4a::arg_device_pointer(0)));
static_assert(noexcept(t4a::launch(t4a::RuntimeView(), t4a::Kernel(), 1, 1, 0,
                                   {}, std::nothrow)));

// A Runtime converts to the RuntimeView every facade call takes; a
// temporary one does not (the view would dangle).
static_assert(std::is_convertible_v<t4a::Runtime &, t4a::RuntimeView>);
static_assert(std::is_convertible_v<const t4a::Runtime &, t4a::RuntimeView>);
static_assert(!std::is_convertible_v<t4a::Runtime &&, t4a::RuntimeView>);
static_assert(!std::is_convertible_v<t4a_runtime, t4a::RuntimeView>);
static_assert(std::is_constructible_v<t4a::Buffer, t4a::Runtime &, uint64_t>);
static_assert(
    std::is_constructible_v<t4a::HostBuffer, t4a::Runtime &, uint64_t>);
// Typed arrays: from a runtime and a count or a container of the same
// element type; copying retains like Buffer.
static_assert(
    std::is_constructible_v<t4a::DeviceArray<float>, t4a::Runtime &, size_t>);
static_assert(std::is_constructible_v<t4a::DeviceArray<float>, t4a::Runtime &,
                                      const std::vector<float> &>);
static_assert(std::is_constructible_v<t4a::DeviceArray<float>, t4a::Runtime &,
                                      const std::array<float, 4> &>);
static_assert(!std::is_constructible_v<t4a::DeviceArray<float>, t4a::Runtime &,
                                       std::vector<double>>);
static_assert(!std::is_constructible_v<t4a::DeviceArray<float>, t4a::Runtime &,
                                       std::list<float>>);
static_assert(std::is_nothrow_move_constructible_v<t4a::DeviceArray<float>>);
static_assert(std::is_copy_constructible_v<t4a::DeviceArray<float>>);
// Contiguous containers: data() and size() of trivially copyable elements.
static_assert(t4a::detail::is_contiguous<std::vector<int>>::value);
static_assert(t4a::detail::is_contiguous<const std::array<double, 3>>::value);
static_assert(t4a::detail::is_contiguous<float[8]>::value);
static_assert(t4a::detail::is_contiguous<std::string>::value);
static_assert(!t4a::detail::is_contiguous<std::list<int>>::value);
static_assert(!t4a::detail::is_contiguous<int *>::value);
static_assert(!t4a::detail::is_contiguous<std::vector<std::string>>::value);
// Launch shapes: Dim3 from one number or {x, y, z}; LaunchConfig only
// explicitly.
static_assert(t4a::Dim3{4, 3, 2}.z == 2 && t4a::Dim3(5).x == 5);
static_assert(!std::is_convertible_v<t4a::Dim3, t4a::LaunchConfig>);
static_assert(t4a::LaunchConfig(2, 64).shared_bytes == 0);
static_assert(t4a::LaunchConfig(2, {8, 8}, 512).block.y == 8);
static_assert(t4a::detail::ends_with_nothrow<int, std::nothrow_t>::value);
static_assert(!t4a::detail::ends_with_nothrow<std::nothrow_t, int>::value);
static_assert(!t4a::detail::ends_with_nothrow<>::value);

// Forged ids (kind byte << 56 | generation << 32 | slot; no driver, so no
// real object of these kinds can exist).
static constexpr uint64_t k_forged_buffer = 0x0200000100000011ull;
static constexpr uint64_t k_forged_buffer2 = 0x0200000100000022ull;
static constexpr uint64_t k_forged_host = 0x0300000100000033ull;
static constexpr uint64_t k_forged_download = 0x0400000100000044ull;
static constexpr uint64_t k_forged_module = 0x0600000100000066ull;
static constexpr uint64_t k_forged_module2 = 0x0600000100000067ull;
static constexpr uint64_t k_forged_kernel = 0x0700000100000077ull;
static constexpr uint64_t k_forged_kernel2 = 0x0700000100000078ull;
static constexpr uint64_t k_forged_completion = 0x0800000100000088ull;
static constexpr uint64_t k_forged_completion2 = 0x0800000100000089ull;

static std::string hex_id(uint64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%016llx",
                static_cast<unsigned long long>(id));
  return text;
}

// The last failing call was `entry`, INVALID_HANDLE, naming `arg` = `id`.
static void expect_last_bad_handle(const char *entry, const char *arg,
                                   uint64_t id) {
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.status, T4A_ERROR_INVALID_HANDLE);
  assert_string_equal(info.entry_point, entry);
  std::string named =
      std::string(entry) + ": " + arg + " (id " + hex_id(id) + ") is ";
  std::string message = t4a::last_error_message();
  if (message.find(named) == std::string::npos)
    fail_msg("message \"%s\" does not contain \"%s\"", message.c_str(),
             named.c_str());
}

// Nothing failed since the last t4a_last_error_clear().
static void expect_no_call_failed() {
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.status, T4A_SUCCESS);
  assert_string_equal(info.entry_point, "");
}

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
  assert_int_equal(
      t4a::Runtime::create(t4a::RuntimeOptions{}, rt, std::nothrow),
      T4A_ERROR_NO_DRIVER);
  assert_false(static_cast<bool>(rt)); // untouched on error
  assert_non_null(
      std::strstr(t4a::last_error_message().c_str(), "t4a_runtime_create"));
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

// Buffer: null semantics. Copying, moving, assigning and destroying the
// null buffer call nothing.
static void test_buffer_null(void **) {
  t4a_last_error_clear();
  {
    t4a::Buffer a;
    t4a::Buffer b(nullptr);
    assert_false(static_cast<bool>(a));
    assert_false(static_cast<bool>(b));
    assert_int_equal(a.get().id, T4A_NULL_ID);
    t4a::Buffer c(a);            // copy of null: no retain
    t4a::Buffer d(std::move(b)); // move of null
    c = a;
    d = std::move(c);
    a.reset();
    assert_false(static_cast<bool>(c));
    assert_false(static_cast<bool>(d));
    assert_int_equal(a.release().id, T4A_NULL_ID);
  } // destructors of null buffers: no release
  expect_no_call_failed();
  // Operations on the null buffer report INVALID_HANDLE naming it.
  t4a::Buffer n;
  t4a_buffer_info info;
  assert_int_equal(n.info(info, std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_buffer_info_get", "buffer", T4A_NULL_ID);
  bool thrown = false;
  try {
    (void)n.size();
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_buffer_info_get");
    assert_non_null(std::strstr(e.what(), "T4A_ERROR_INVALID_HANDLE"));
    assert_non_null(std::strstr(e.what(), "buffer (id 0x0000000000000000)"));
  }
  assert_true(thrown);
}

// Buffer: copying a non-null buffer retains, destroying releases; with a
// forged handle both fail silently (recorded in the last error) and the
// wrappers still hold exactly the handle they were given.
static void test_buffer_copy_retains(void **) {
  t4a_last_error_clear();
  t4a::Buffer a(t4a_buffer{k_forged_buffer});
  assert_true(static_cast<bool>(a));
  assert_int_equal(a.get().id, k_forged_buffer);
  expect_no_call_failed(); // adopting calls nothing
  {
    t4a::Buffer b(a); // retain
    expect_last_bad_handle("t4a_buffer_retain", "buffer", k_forged_buffer);
    // A failed retain leaves the copy null: it must not release a
    // reference it never took.
    assert_int_equal(b.get().id, T4A_NULL_ID);
    assert_int_equal(a.get().id, k_forged_buffer);
    t4a_last_error_clear();
  } // b is null: its destructor calls nothing
  expect_no_call_failed();
  assert_int_equal(a.get().id, k_forged_buffer);

  // Copy assignment: retains the source, then releases the old handle.
  t4a::Buffer c(t4a_buffer{k_forged_buffer2});
  t4a_last_error_clear();
  c = a; // the retain fails: c becomes null, its old handle is released
  expect_last_bad_handle("t4a_buffer_release", "buffer", k_forged_buffer2);
  assert_int_equal(c.get().id, T4A_NULL_ID);
  assert_int_equal(a.get().id, k_forged_buffer);
  // Self-assignment calls nothing.
  t4a::Buffer s(t4a_buffer{k_forged_buffer});
  t4a_last_error_clear();
  t4a::Buffer &self = s;
  s = self;
  expect_no_call_failed();
  assert_int_equal(s.get().id, k_forged_buffer);

  // Move: no retain, no release; the source becomes null.
  t4a::Buffer m(std::move(s));
  expect_no_call_failed();
  assert_false(static_cast<bool>(s));
  assert_int_equal(m.get().id, k_forged_buffer);
  // Move assignment releases the target's old handle only.
  t4a::Buffer t(t4a_buffer{k_forged_buffer2});
  t = std::move(m);
  expect_last_bad_handle("t4a_buffer_release", "buffer", k_forged_buffer2);
  assert_false(static_cast<bool>(m));
  assert_int_equal(t.get().id, k_forged_buffer);
  // Assigning null releases.
  t4a_last_error_clear();
  t = nullptr;
  expect_last_bad_handle("t4a_buffer_release", "buffer", k_forged_buffer);
  assert_false(static_cast<bool>(t));
  // release() hands the handle back without calling anything.
  t4a_last_error_clear();
  t4a_buffer back = a.release();
  expect_no_call_failed();
  assert_int_equal(back.id, k_forged_buffer);
  assert_false(static_cast<bool>(a));
  // reset() releases now.
  t4a::Buffer r(back);
  r.reset();
  expect_last_bad_handle("t4a_buffer_release", "buffer", k_forged_buffer);
  assert_false(static_cast<bool>(r));
}

// Buffer allocation through a null runtime view: INVALID_HANDLE naming the
// runtime; the nothrow form leaves `out` as it was, the throwing
// constructor throws t4a::Error.
static void test_buffer_alloc_null_runtime(void **) {
  t4a::RuntimeView none;
  t4a::Buffer out;
  assert_int_equal(
      t4a::Buffer::alloc(none, 256, T4A_BUFFER_ZERO, out, std::nothrow),
      T4A_ERROR_INVALID_HANDLE);
  assert_false(static_cast<bool>(out));
  expect_last_bad_handle("t4a_buffer_alloc", "runtime", T4A_NULL_ID);
  // A held buffer is not replaced (nor released) by a failed alloc.
  t4a::Buffer held(t4a_buffer{k_forged_buffer});
  t4a_last_error_clear();
  t4a::RuntimeView forged_rt(t4a_runtime{0x0100000100000055ull});
  assert_int_equal(t4a::Buffer::alloc(forged_rt, 1, 0, held, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_buffer_alloc", "runtime", 0x0100000100000055ull);
  assert_int_equal(held.get().id, k_forged_buffer);
  held.release();

  bool thrown = false;
  try {
    t4a::Buffer b(none, 1024);
    fail_msg("%s", "t4a::Buffer(null view, 1024) did not throw");
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_int_equal(e.driver_result(), 0);
    assert_string_equal(e.entry_point().c_str(), "t4a_buffer_alloc");
    assert_non_null(std::strstr(e.what(), "T4A_ERROR_INVALID_HANDLE"));
    assert_non_null(std::strstr(e.what(), "runtime (id 0x0000000000000000)"));
  }
  assert_true(thrown);
  thrown = false;
  try {
    t4a::Buffer b(forged_rt, 1024, T4A_BUFFER_ZERO);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_non_null(std::strstr(e.what(), "0x0100000100000055"));
  }
  assert_true(thrown);
}

// The free functions (upload, download, download_async, fill, copy) name
// the runtime when it is invalid, throwing or not.
static void test_transfers_null_runtime(void **) {
  t4a::RuntimeView none;
  t4a::Buffer b(t4a_buffer{k_forged_buffer}), c(t4a_buffer{k_forged_buffer2});
  unsigned char host[32];
  std::memset(host, 0x5A, sizeof host);
  unsigned char expected[32];
  std::memcpy(expected, host, sizeof host);

  assert_int_equal(t4a::upload(none, b, 0, host, sizeof host, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_buffer_upload", "runtime", T4A_NULL_ID);
  assert_int_equal(t4a::download(none, b, 0, host, sizeof host, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_buffer_download_sync", "runtime", T4A_NULL_ID);
  assert_memory_equal(host, expected, sizeof host); // nothing written

  struct Case {
    const char *entry;
    void (*call)(t4a::RuntimeView, const t4a::Buffer &, const t4a::Buffer &,
                 unsigned char *);
  };
  const Case cases[] = {
      {"t4a_buffer_upload",
       [](t4a::RuntimeView rt, const t4a::Buffer &dst, const t4a::Buffer &,
          unsigned char *h) { t4a::upload(rt, dst, 0, h, 32); }},
      {"t4a_buffer_download_sync",
       [](t4a::RuntimeView rt, const t4a::Buffer &src, const t4a::Buffer &,
          unsigned char *h) { t4a::download(rt, src, 0, h, 32); }},
      {"t4a_buffer_download",
       [](t4a::RuntimeView rt, const t4a::Buffer &src, const t4a::Buffer &,
          unsigned char *) { (void)t4a::download_async(rt, src, 0, 32); }},
      {"t4a_buffer_fill",
       [](t4a::RuntimeView rt, const t4a::Buffer &dst, const t4a::Buffer &,
          unsigned char *) { t4a::fill(rt, dst, 0, 32, 0xAB); }},
      {"t4a_buffer_copy",
       [](t4a::RuntimeView rt, const t4a::Buffer &dst, const t4a::Buffer &src,
          unsigned char *) { t4a::copy(rt, dst, 0, src, 0, 32); }},
  };
  for (const Case &k : cases) {
    bool thrown = false;
    try {
      k.call(none, b, c, host);
    } catch (const t4a::Error &e) {
      thrown = true;
      assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
      assert_string_equal(e.entry_point().c_str(), k.entry);
      assert_non_null(std::strstr(e.what(), "runtime (id 0x0000000000000000)"));
    }
    if (!thrown)
      fail_msg("%s through a null runtime view did not throw", k.entry);
  }
  assert_memory_equal(host, expected, sizeof host);
  b.release();
  c.release();
}

// HostBuffer: shared like Buffer; alloc through a null view fails.
static void test_host_buffer(void **) {
  t4a::RuntimeView none;
  t4a::HostBuffer out;
  assert_int_equal(t4a::HostBuffer::alloc(none, 4096, out, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  assert_false(static_cast<bool>(out));
  expect_last_bad_handle("t4a_host_buffer_alloc", "runtime", T4A_NULL_ID);
  bool thrown = false;
  try {
    t4a::HostBuffer h(none, 4096);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_host_buffer_alloc");
  }
  assert_true(thrown);

  t4a_last_error_clear();
  t4a::HostBuffer a(t4a_host_buffer{k_forged_host});
  {
    t4a::HostBuffer copy = a; // retain fails: the copy is null
    expect_last_bad_handle("t4a_host_buffer_retain", "host_buffer",
                           k_forged_host);
    assert_int_equal(copy.get().id, T4A_NULL_ID);
    const t4a::HostBuffer &b = a;
    void *p = &thrown;
    uint64_t bytes = 77;
    assert_int_equal(b.data(p, bytes, std::nothrow), T4A_ERROR_INVALID_HANDLE);
    assert_ptr_equal(p, &thrown); // untouched on error
    assert_int_equal(bytes, 77);
    expect_last_bad_handle("t4a_host_buffer_pointer", "host_buffer",
                           k_forged_host);
    thrown = false;
    try {
      (void)b.data();
    } catch (const t4a::Error &e) {
      thrown = true;
      assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    }
    assert_true(thrown);
    t4a_last_error_clear();
  } // the null copy releases nothing
  expect_no_call_failed();
  t4a::HostBuffer m(std::move(a));
  assert_false(static_cast<bool>(a));
  assert_int_equal(m.get().id, k_forged_host);
  t4a_last_error_clear();
  m.reset();
  expect_last_bad_handle("t4a_host_buffer_release", "host_buffer",
                         k_forged_host);
}

// Download: move-only; destruction releases; poll and wait on a forged
// download report INVALID_HANDLE and write nothing.
static void test_download(void **) {
  t4a_last_error_clear();
  {
    t4a::Download none;
    assert_int_equal(none.get().id, T4A_NULL_ID);
    t4a::Download moved(std::move(none));
    none = std::move(moved);
  } // null: nothing released
  expect_no_call_failed();

  t4a::Download d(t4a_download{k_forged_download});
  assert_int_equal(d.get().id, k_forged_download);
  unsigned char host[16];
  std::memset(host, 0x5A, sizeof host);
  assert_int_equal(d.poll(host, std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_download_poll", "download", k_forged_download);
  assert_int_equal(d.wait(host, std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_download_wait", "download", k_forged_download);
  bool thrown = false;
  try {
    (void)d.poll(host);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_download_poll");
  }
  assert_true(thrown);
  thrown = false;
  try {
    d.wait(host);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_download_wait");
  }
  assert_true(thrown);
  for (unsigned char byte : host) assert_int_equal(byte, 0x5A);

  t4a_last_error_clear();
  t4a::Download e(std::move(d));
  expect_no_call_failed();
  assert_int_equal(d.get().id, T4A_NULL_ID);
  assert_int_equal(e.get().id, k_forged_download);
  t4a::Download f(t4a_download{k_forged_download + 1});
  f = std::move(e); // releases f's old download
  expect_last_bad_handle("t4a_download_release", "download",
                         k_forged_download + 1);
  assert_int_equal(f.get().id, k_forged_download);
  t4a_last_error_clear();
  t4a_download back = f.release();
  expect_no_call_failed();
  assert_int_equal(back.id, k_forged_download);
  { t4a::Download g(back); } // destructor releases
  expect_last_bad_handle("t4a_download_release", "download", k_forged_download);
}

// The -fno-exceptions translation unit uses the nothrow buffer API.
static void test_buffers_without_exceptions(void **) {
  t4a::Buffer out;
  assert_int_equal(facade_noexcept_buffers(out, k_forged_buffer),
                   T4A_ERROR_INVALID_HANDLE);
  assert_false(static_cast<bool>(out));
  expect_last_bad_handle("t4a_buffer_alloc", "runtime", T4A_NULL_ID);
}

// The ownership rules of a shared wrapper W over handle H, with two forged
// ids: null semantics, copy (a failed retain gives a null copy), copy
// assignment, self-assignment, move, move assignment, nullptr assignment,
// release() and reset(). `retain` and `release` are the C entry points,
// `arg` the name they give the handle.
template <class W, class H>
static void check_shared(uint64_t id, uint64_t id2, const char *retain,
                         const char *release, const char *arg) {
  t4a_last_error_clear();
  {
    W a;
    W b(nullptr);
    assert_false(static_cast<bool>(a));
    assert_int_equal(b.get().id, T4A_NULL_ID);
    W c(a);
    W d(std::move(b));
    c = a;
    d = std::move(c);
    a.reset();
    assert_false(static_cast<bool>(d));
    assert_int_equal(a.release().id, T4A_NULL_ID);
  } // null wrappers call nothing
  expect_no_call_failed();

  W a(H{id});
  assert_true(static_cast<bool>(a));
  assert_int_equal(a.get().id, id);
  expect_no_call_failed(); // adopting calls nothing
  {
    W b(a); // the retain fails: the copy is null
    expect_last_bad_handle(retain, arg, id);
    assert_int_equal(b.get().id, T4A_NULL_ID);
    assert_int_equal(a.get().id, id);
    t4a_last_error_clear();
  } // b is null: nothing released
  expect_no_call_failed();

  W c(H{id2});
  c = a; // the retain fails: c becomes null, its old handle is released
  expect_last_bad_handle(release, arg, id2);
  assert_int_equal(c.get().id, T4A_NULL_ID);
  assert_int_equal(a.get().id, id);
  t4a_last_error_clear();
  W &self = a;
  a = self;
  expect_no_call_failed();
  assert_int_equal(a.get().id, id);

  W m(std::move(a)); // no retain, no release
  expect_no_call_failed();
  assert_false(static_cast<bool>(a));
  assert_int_equal(m.get().id, id);
  W t(H{id2});
  t = std::move(m); // releases t's old handle only
  expect_last_bad_handle(release, arg, id2);
  assert_false(static_cast<bool>(m));
  assert_int_equal(t.get().id, id);
  t4a_last_error_clear();
  t = nullptr;
  expect_last_bad_handle(release, arg, id);
  assert_false(static_cast<bool>(t));

  W r(H{id});
  t4a_last_error_clear();
  H back = r.release();
  expect_no_call_failed();
  assert_int_equal(back.id, id);
  assert_false(static_cast<bool>(r));
  { W g(back); } // the destructor releases
  expect_last_bad_handle(release, arg, id);
  W n(H{id2});
  n.reset();
  expect_last_bad_handle(release, arg, id2);
  assert_false(static_cast<bool>(n));
}

static void test_module_kernel_completion_ownership(void **) {
  check_shared<t4a::Module, t4a_module>(k_forged_module, k_forged_module2,
                                        "t4a_module_retain",
                                        "t4a_module_release", "module");
  check_shared<t4a::Kernel, t4a_kernel>(k_forged_kernel, k_forged_kernel2,
                                        "t4a_kernel_retain",
                                        "t4a_kernel_release", "kernel");
  check_shared<t4a::Completion, t4a_completion>(
      k_forged_completion, k_forged_completion2, "t4a_completion_retain",
      "t4a_completion_release", "completion");
}

// Module loads through a null or forged runtime view: INVALID_HANDLE naming
// the runtime; a held module is neither replaced nor released.
static void test_module_load(void **) {
  t4a::RuntimeView none;
  t4a::Artifact art(t4a_artifact{0x0500000100000055ull});
  t4a::Module held(t4a_module{k_forged_module});
  t4a_last_error_clear();
  assert_int_equal(t4a::Module::load(none, art, held, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_module_load", "runtime", T4A_NULL_ID);
  assert_int_equal(held.get().id, k_forged_module);
  const unsigned char image[4] = {1, 2, 3, 4};
  t4a::RuntimeView forged_rt(t4a_runtime{0x0100000100000055ull});
  assert_int_equal(
      t4a::Module::load(forged_rt, image, sizeof image, held, std::nothrow),
      T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_module_load_data", "runtime",
                         0x0100000100000055ull);
  assert_int_equal(held.get().id, k_forged_module);
  t4a::Module out;
  assert_int_equal(
      t4a::Module::load(none, image, sizeof image, out, std::nothrow),
      T4A_ERROR_INVALID_HANDLE);
  assert_false(static_cast<bool>(out));

  bool thrown = false;
  try {
    t4a::Module m(none, art);
    fail_msg("%s", "t4a::Module(null view, artifact) did not throw");
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_int_equal(e.driver_result(), 0);
    assert_string_equal(e.entry_point().c_str(), "t4a_module_load");
    assert_non_null(std::strstr(e.what(), "runtime (id 0x0000000000000000)"));
  }
  assert_true(thrown);
  thrown = false;
  try {
    t4a::Module m(forged_rt, image, sizeof image);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_module_load_data");
    assert_non_null(std::strstr(e.what(), "0x0100000100000055"));
  }
  assert_true(thrown);
  held.release();
  art.release();
}

// Kernel lookup and queries on forged handles: INVALID_HANDLE, out-params
// untouched, t4a::Error with the entry point.
static void test_kernel_queries(void **) {
  t4a::Module owned(t4a_module{k_forged_module});
  const t4a::Module &m = owned; // lookups are const
  t4a::Kernel held(t4a_kernel{k_forged_kernel2});
  t4a_last_error_clear();
  assert_int_equal(m.kernel("saxpy", held, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_kernel_get", "module", k_forged_module);
  assert_int_equal(held.get().id, k_forged_kernel2);
  bool thrown = false;
  try {
    (void)m.kernel("saxpy");
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_kernel_get");
  }
  assert_true(thrown);

  t4a::Kernel kernel(t4a_kernel{k_forged_kernel});
  const t4a::Kernel &k = kernel; // queries are const
  t4a_kernel_info info;
  std::memset(&info, 0xAB, sizeof info);
  t4a_kernel_info expected;
  std::memcpy(&expected, &info, sizeof info);
  assert_int_equal(k.info(info, std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_kernel_info_get", "kernel", k_forged_kernel);
  assert_memory_equal(&info, &expected, sizeof info);
  uint64_t offset = 11, size = 12;
  assert_int_equal(k.param(0, offset, size, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_kernel_param", "kernel", k_forged_kernel);
  assert_int_equal(offset, 11);
  assert_int_equal(size, 12);
  int32_t blocks = 13;
  assert_int_equal(k.occupancy(256, 0, blocks, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_kernel_occupancy", "kernel", k_forged_kernel);
  assert_int_equal(blocks, 13);
  int32_t block = 14, grid = 15;
  assert_int_equal(k.suggest_block_size(0, block, grid, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_kernel_suggest_block_size", "kernel",
                         k_forged_kernel);
  assert_int_equal(block, 14);
  assert_int_equal(grid, 15);

  struct Case {
    const char *entry;
    void (*call)(const t4a::Kernel &);
  };
  const Case cases[] = {
      {"t4a_kernel_info_get", [](const t4a::Kernel &x) { (void)x.info(); }},
      {"t4a_kernel_param", [](const t4a::Kernel &x) { (void)x.param(0); }},
      {"t4a_kernel_occupancy",
       [](const t4a::Kernel &x) { (void)x.occupancy(128); }},
      {"t4a_kernel_suggest_block_size",
       [](const t4a::Kernel &x) { (void)x.suggest_block_size(); }},
  };
  for (const Case &c : cases) {
    thrown = false;
    try {
      c.call(k);
    } catch (const t4a::Error &e) {
      thrown = true;
      assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
      assert_string_equal(e.entry_point().c_str(), c.entry);
      assert_non_null(std::strstr(e.what(), "kernel (id 0x0700000100000077)"));
    }
    if (!thrown) fail_msg("%s on a forged kernel did not throw", c.entry);
  }
  held.release();
  owned.release();
  kernel.release();
}

// The t4a_arg helpers and the descriptor t4a::launch() builds.
static void test_launch_args(void **) {
  t4a::Buffer b(t4a_buffer{k_forged_buffer});
  t4a_arg a = t4a::arg_buffer(b, 64);
  assert_int_equal(a.kind, T4A_ARG_BUFFER);
  assert_int_equal(a.reserved0, 0);
  assert_int_equal(a.buffer.id, k_forged_buffer);
  assert_int_equal(a.offset, 64);
  assert_null(a.value);
  assert_int_equal(a.size, 0);
  assert_int_equal(a.device_pointer, 0);
  assert_int_equal(t4a::arg_buffer(b).offset, 0);

  const double x = 2.5;
  t4a_arg s = t4a::arg_scalar(x);
  assert_int_equal(s.kind, T4A_ARG_SCALAR);
  assert_ptr_equal(s.value, &x);
  assert_int_equal(s.size, sizeof(double));
  assert_int_equal(s.buffer.id, T4A_NULL_ID);
  struct Pair {
    int32_t a;
    float b;
    uint16_t c;
  } const pair{1, 2.0f, 3};
  assert_int_equal(t4a::arg_scalar(pair).size, sizeof(Pair));

  t4a_arg p = t4a::arg_device_pointer(0x7f0000001000ull);
  assert_int_equal(p.kind, T4A_ARG_DEVICE_POINTER);
  assert_int_equal(p.device_pointer, 0x7f0000001000ull);
  assert_null(p.value);

  t4a::Kernel k(t4a_kernel{k_forged_kernel});
  const t4a_arg args[3] = {a, s, p};
  t4a_launch_desc d =
      t4a::detail::launch_desc(k.get(), {8, 4, 2}, 256, 1024, args, 3);
  assert_int_equal(d.struct_size, sizeof(t4a_launch_desc));
  assert_int_equal(d.flags, 0);
  assert_int_equal(d.kernel.id, k_forged_kernel);
  assert_int_equal(d.grid[0], 8);
  assert_int_equal(d.grid[1], 4);
  assert_int_equal(d.grid[2], 2);
  assert_int_equal(d.block[0], 256);
  assert_int_equal(d.block[1], 1);
  assert_int_equal(d.block[2], 1);
  assert_int_equal(d.dynamic_shared_bytes, 1024);
  assert_int_equal(d.arg_count, 3);
  assert_ptr_equal(d.args, args);
  b.release();
  k.release();
}

// Launch through a null runtime view: every form reports INVALID_HANDLE
// naming the runtime, thrown or returned.
static void test_launch_null_runtime(void **) {
  t4a::RuntimeView none;
  t4a::Buffer b(t4a_buffer{k_forged_buffer});
  t4a::Kernel k(t4a_kernel{k_forged_kernel});
  const float alpha = 2.0f;
  const uint32_t n = 1u << 20;
  t4a_last_error_clear();
  assert_int_equal(t4a::launch(none, k, (n + 255) / 256, 256, 0,
                               {t4a::arg_scalar(n), t4a::arg_scalar(alpha),
                                t4a::arg_buffer(b), t4a::arg_buffer(b, 4)},
                               std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_launch", "runtime", T4A_NULL_ID);
  const t4a_arg args[2] = {t4a::arg_device_pointer(0x1000), t4a::arg_scalar(n)};
  t4a_last_error_clear();
  assert_int_equal(
      t4a::launch(none, k, {16, 16}, {8, 8, 4}, 4096, args, 2, std::nothrow),
      T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_launch", "runtime", T4A_NULL_ID);
  t4a_last_error_clear();
  assert_int_equal(t4a::launch(none, k, 1, 1, 0, {}, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_launch", "runtime", T4A_NULL_ID);
  t4a_launch_desc desc = T4A_LAUNCH_DESC_INIT;
  desc.kernel = k.get();
  t4a_last_error_clear();
  assert_int_equal(t4a::launch(none, desc, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_launch", "runtime", T4A_NULL_ID);

  struct Case {
    const char *what;
    void (*call)(t4a::RuntimeView, const t4a::Kernel &, const t4a::Buffer &);
  };
  const Case cases[] = {
      {"initializer list",
       [](t4a::RuntimeView rt, const t4a::Kernel &kk, const t4a::Buffer &bb) {
         t4a::launch(rt, kk, 4, 128, 0,
                     {t4a::arg_buffer(bb), t4a::arg_scalar(1)});
       }},
      {"no arguments",
       [](t4a::RuntimeView rt, const t4a::Kernel &kk, const t4a::Buffer &) {
         t4a::launch(rt, kk, 1, 1, 0, {});
       }},
      {"pointer and count",
       [](t4a::RuntimeView rt, const t4a::Kernel &kk, const t4a::Buffer &bb) {
         const t4a_arg one[1] = {t4a::arg_buffer(bb)};
         t4a::launch(rt, kk, {2, 2}, 32, 0, one, 1);
       }},
      {"descriptor",
       [](t4a::RuntimeView rt, const t4a::Kernel &kk, const t4a::Buffer &) {
         t4a_launch_desc dd = T4A_LAUNCH_DESC_INIT;
         dd.kernel = kk.get();
         t4a::launch(rt, dd);
       }},
  };
  for (const Case &c : cases) {
    bool thrown = false;
    try {
      c.call(none, k, b);
    } catch (const t4a::Error &e) {
      thrown = true;
      assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
      assert_string_equal(e.entry_point().c_str(), "t4a_launch");
      assert_non_null(std::strstr(e.what(), "runtime (id 0x0000000000000000)"));
    }
    if (!thrown) fail_msg("launch (%s) did not throw", c.what);
  }
  b.release();
  k.release();
}

// Completions: poll and wait on a forged completion, record and runtime wait
// through a null view.
static void test_completion(void **) {
  t4a::Completion c(t4a_completion{k_forged_completion});
  t4a_last_error_clear();
  assert_int_equal(c.poll(std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_completion_poll", "completion",
                         k_forged_completion);
  assert_int_equal(c.wait(std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_completion_wait", "completion",
                         k_forged_completion);
  bool thrown = false;
  try {
    (void)c.poll();
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_completion_poll");
  }
  assert_true(thrown);
  thrown = false;
  try {
    c.wait();
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_completion_wait");
  }
  assert_true(thrown);

  t4a::RuntimeView none;
  t4a::Completion held(t4a_completion{k_forged_completion2});
  t4a_last_error_clear();
  assert_int_equal(t4a::record(none, held, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_runtime_record", "runtime", T4A_NULL_ID);
  assert_int_equal(held.get().id, k_forged_completion2); // untouched
  assert_int_equal(t4a::wait(none, c, std::nothrow), T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_runtime_wait", "runtime", T4A_NULL_ID);
  thrown = false;
  try {
    (void)t4a::record(none);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_runtime_record");
    assert_non_null(std::strstr(e.what(), "runtime (id 0x0000000000000000)"));
  }
  assert_true(thrown);
  thrown = false;
  try {
    t4a::wait(none, c);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_runtime_wait");
  }
  assert_true(thrown);
  held.release();
  c.release();
}

// The -fno-exceptions translation unit uses the nothrow launch API; the
// wrappers it is handed stay as they were.
static void test_launch_without_exceptions(void **) {
  t4a::Module m(t4a_module{k_forged_module});
  t4a::Kernel k(t4a_kernel{k_forged_kernel});
  t4a::Completion c(t4a_completion{k_forged_completion});
  assert_int_equal(facade_noexcept_launch(m, k, c, k_forged_module2,
                                          k_forged_kernel2,
                                          k_forged_completion2),
                   T4A_ERROR_INVALID_HANDLE);
  expect_last_bad_handle("t4a_runtime_record", "runtime", T4A_NULL_ID);
  assert_int_equal(m.get().id, k_forged_module);
  assert_int_equal(k.get().id, k_forged_kernel);
  assert_int_equal(c.get().id, k_forged_completion);
  m.release();
  k.release();
  c.release();
}

static void test_log_and_process_stats(void **) {
  // Process counters need no driver; a fresh process has leaked nothing.
  t4a_process_stats st = t4a::process_stats();
  assert_int_equal(st.runtimes_leaked, 0);
  assert_int_equal(st.leaked_device_allocations, 0);
  t4a_process_stats st2;
  std::memset(&st2, 0xAB, sizeof st2);
  assert_int_equal(t4a::process_stats(st2, std::nothrow), T4A_SUCCESS);
  assert_int_equal(st2.struct_size, sizeof(t4a_process_stats));
  assert_int_equal(st2.runtimes_live, st.runtimes_live);
  // An invalid level is INVALID_ARGUMENT, thrown or returned.
  assert_int_equal(t4a::set_log_callback(nullptr, nullptr, 9, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  bool thrown = false;
  try {
    t4a::set_log_callback(nullptr, nullptr, -1);
  } catch (const t4a::Error &e) {
    thrown = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_ARGUMENT);
    assert_string_equal(e.entry_point().c_str(), "t4a_set_log_callback");
  }
  assert_true(thrown);
  t4a::set_log_callback(nullptr, nullptr, T4A_LOG_WARN); // the default
}

// Compiling needs NVRTC only. The disk cache is off: this test must not
// write to the user's cache directory.
static void test_compile(void **) {
  t4a::CompileRequest r;
  r.with_source("extern \"C\" __global__ void k(int *p) { *p = 1; }")
      .for_cc(9, 0)
      .with_output(T4A_COMPILE_PTX);
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a::Artifact a = t4a::compile(r);
  assert_true(static_cast<bool>(a));
  t4a_artifact_info info = a.info();
  assert_int_equal(info.output, T4A_COMPILE_PTX);
  assert_int_equal(info.cc_major, 9);
  std::string image = a.image();
  assert_int_equal(image.size(), info.image_bytes);
  assert_true(image.find(".entry k") != std::string::npos);
  assert_int_equal(a.key().size(), 64);
  {
    t4a::Artifact copy = a; // retains: the same handle
    assert_int_equal(copy.get().id, a.get().id);
    t4a::Artifact again = t4a::compile(r); // memory hit: the same handle
    assert_int_equal(again.get().id, a.get().id);
  }
  assert_true(a.info().image_bytes > 0); // still held
  assert_true(t4a::compile_stats().memory_hits >= 1);

  // A failed compile throws COMPILE; the whole log stays available.
  t4a::CompileRequest bad;
  bad.with_source("__global__ void k() { nope; }").for_cc(9, 0);
  bad.flags = T4A_COMPILE_NO_DISK_CACHE;
  bool threw = false;
  try {
    (void)t4a::compile(bad);
  } catch (const t4a::Error &e) {
    threw = true;
    assert_int_equal(e.status(), T4A_ERROR_COMPILE);
    assert_string_equal(e.entry_point().c_str(), "t4a_compile");
    assert_true(std::string(e.what()).find("nope") != std::string::npos);
  }
  assert_true(threw);
  assert_true(t4a::last_compile_log().find("\"nope\" is undefined") !=
              std::string::npos);

  // The -fno-exceptions translation unit: the same through nothrow.
  t4a::Artifact out;
  std::string log;
  assert_int_equal(facade_noexcept_compile(out, log), T4A_ERROR_COMPILE);
  assert_false(static_cast<bool>(out));
  assert_true(log.find("error") != std::string::npos);
}

// Each argument of the variadic launch becomes one t4a_arg: buffers and
// arrays as BUFFER at offset 0, arithmetic and enum values as SCALAR of
// their own size (pointing at the value), t4a_arg as given.
static void test_variadic_arg_packing(void **) {
  t4a::Buffer b(t4a_buffer{k_forged_buffer});
  const int i = 7;
  const double d = 2.5;
  const float f = 1.5f;
  const char c = 'x';
  const bool flag = true;
  enum class Mode : uint16_t { a = 3 };
  const Mode mode = Mode::a;
  const int64_t wide = -1;
  t4a_arg a = t4a::detail::to_arg(i);
  assert_int_equal(a.kind, T4A_ARG_SCALAR);
  assert_int_equal(a.size, 4);
  assert_ptr_equal(a.value, &i);
  a = t4a::detail::to_arg(d);
  assert_int_equal(a.size, 8); // int vs double: the sizes differ
  assert_ptr_equal(a.value, &d);
  assert_int_equal(t4a::detail::to_arg(f).size, 4);
  assert_int_equal(t4a::detail::to_arg(c).size, 1);
  assert_int_equal(t4a::detail::to_arg(flag).size, 1);
  assert_int_equal(t4a::detail::to_arg(mode).size, 2);
  assert_int_equal(t4a::detail::to_arg(wide).size, 8);
  a = t4a::detail::to_arg(b);
  assert_int_equal(a.kind, T4A_ARG_BUFFER);
  assert_int_equal(a.buffer.id, k_forged_buffer);
  assert_int_equal(a.offset, 0);
  const t4a_arg given = t4a::arg_device_pointer(0x1000);
  a = t4a::detail::to_arg(given);
  assert_int_equal(a.kind, T4A_ARG_DEVICE_POINTER);
  assert_int_equal(a.device_pointer, 0x1000);
  assert_int_equal(t4a::detail::to_arg(std::nothrow).kind, 0);
  // arg_buffer of a typed array: the offset is in elements.
  t4a::DeviceArray<double> none;
  a = t4a::arg_buffer(none, 3);
  assert_int_equal(a.kind, T4A_ARG_BUFFER);
  assert_int_equal(a.offset, 3 * sizeof(double));
  a = t4a::detail::to_arg(none);
  assert_int_equal(a.kind, T4A_ARG_BUFFER);
  assert_int_equal(a.buffer.id, T4A_NULL_ID);
  // Sizes saturate instead of wrapping: the C call then rejects them.
  assert_true(t4a::detail::saturating_bytes(UINT64_MAX / 4 + 1, 4) ==
              UINT64_MAX);
  assert_int_equal(t4a::detail::saturating_bytes(3, 8), 24);
  b.release();
}

// The variadic launch through a null runtime: INVALID_HANDLE, thrown or
// returned (with std::nothrow last).
static void test_variadic_launch_null_runtime(void **) {
  t4a::RuntimeView none;
  t4a::Kernel k(t4a_kernel{k_forged_kernel});
  t4a::Buffer b(t4a_buffer{k_forged_buffer});
  const int n = 4;
  assert_int_equal(k.launch(none, 1, 32, b, n, 2.0, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(
      k.launch(none, t4a::LaunchConfig(1, 32, 256), b, n, std::nothrow),
      T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(k.launch(none, {2, 2, 2}, {4, 4}, std::nothrow),
                   T4A_ERROR_INVALID_HANDLE);
  bool threw = false;
  try {
    k.launch(none, 1, 32, b, n);
  } catch (const t4a::Error &e) {
    threw = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_HANDLE);
    assert_string_equal(e.entry_point().c_str(), "t4a_launch");
  }
  assert_true(threw);
  k.release();
  b.release();
  // The same through the -fno-exceptions translation unit.
  assert_int_equal(facade_noexcept_variadic(k_forged_kernel, k_forged_buffer),
                   T4A_SUCCESS);
}

// The CompileRequest builder owns its strings: the C request's pointers
// point at its copies, a copy points at its own, a moved-from builder
// holds null fields again, and fields it never set keep the caller's.
static void test_compile_request_builder(void **) {
  std::string text = "extern \"C\" __global__ void k() {}";
  t4a::CompileRequest r(text);
  text.assign(text.size(), 'x'); // the builder holds its own copy
  r.with_program_name("k.cu")
      .with_options({"-DA=1", "-DB=2"})
      .with_option("-std=c++17")
      .with_header("h.h", "#define H 1")
      .with_name_expression("&k")
      .with_cache_dir("")
      .with_flags(T4A_COMPILE_NO_DISK_CACHE)
      .for_cc(8, 6)
      .with_disk_cache_max_bytes(1 << 20);
  const t4a_compile_request &c = r.c_request();
  assert_ptr_equal(&c, static_cast<const t4a_compile_request *>(&r));
  assert_string_equal(c.source, "extern \"C\" __global__ void k() {}");
  assert_string_equal(c.program_name, "k.cu");
  assert_int_equal(c.option_count, 3);
  assert_string_equal(c.options[0], "-DA=1");
  assert_string_equal(c.options[1], "-DB=2");
  assert_string_equal(c.options[2], "-std=c++17");
  assert_int_equal(c.header_count, 1);
  assert_string_equal(c.header_names[0], "h.h");
  assert_string_equal(c.header_sources[0], "#define H 1");
  assert_int_equal(c.name_expression_count, 1);
  assert_string_equal(c.name_expressions[0], "&k");
  assert_string_equal(c.cache_dir, "");
  assert_int_equal(c.flags, T4A_COMPILE_NO_DISK_CACHE);
  assert_int_equal(c.cc_major, 8);
  assert_int_equal(c.cc_minor, 6);
  assert_int_equal(c.disk_cache_max_bytes, 1 << 20);
  assert_int_equal(c.struct_size, sizeof(t4a_compile_request));

  t4a::CompileRequest copy = r;
  assert_true(copy.source != r.source);
  assert_true(copy.options != r.options);
  assert_true(copy.options[2] != r.options[2]);
  assert_string_equal(copy.source, r.source);
  assert_string_equal(copy.options[2], "-std=c++17");
  assert_string_equal(copy.header_sources[0], "#define H 1");
  assert_int_equal(copy.option_count, 3);

  t4a::CompileRequest moved = std::move(copy);
  assert_string_equal(moved.source, r.source);
  assert_string_equal(moved.program_name, "k.cu");
  assert_string_equal(moved.options[1], "-DB=2");
  assert_string_equal(moved.name_expressions[0], "&k");
  assert_null(copy.source); // NOLINT(bugprone-use-after-move): by design
  assert_null(copy.options);
  assert_int_equal(copy.option_count, 0);
  assert_int_equal(copy.header_count, 0);
  assert_int_equal(copy.name_expression_count, 0);

  // A field set directly, never through a setter, is left alone.
  static const char *const raw_options[] = {"-DRAW=1"};
  t4a::CompileRequest raw;
  raw.options = raw_options;
  raw.option_count = 1;
  raw.with_source("x").with_header("a.h", "");
  t4a::CompileRequest raw_copy = raw;
  assert_ptr_equal(raw_copy.options, raw_options);
  assert_int_equal(raw_copy.option_count, 1);

  // A null source stays null, and t4a_compile names it.
  t4a::CompileRequest empty;
  empty.with_source(static_cast<const char *>(nullptr)).for_cc(9, 0);
  assert_null(empty.source);
  bool threw = false;
  try {
    (void)t4a::compile(empty);
  } catch (const t4a::Error &e) {
    threw = true;
    assert_int_equal(e.status(), T4A_ERROR_INVALID_ARGUMENT);
    assert_true(std::string(e.what()).find("source") != std::string::npos);
  }
  assert_true(threw);
}

// The builder through real NVRTC: a header, an option and a name
// expression reach the compiler, from a copy whose original is gone.
static void test_compile_request_nvrtc(void **) {
  t4a::CompileRequest request;
  {
    t4a::CompileRequest original(
        "#include \"scale.h\"\n"
        "template <class T> __global__ void scale(T *x) { x[0] *= FACTOR; }");
    original.with_header("scale.h", "#define FACTOR SCALE_BY")
        .with_option("-DSCALE_BY=3")
        .with_name_expression("scale<float>")
        .with_name_expression("scale<double>")
        .with_output(T4A_COMPILE_PTX)
        .with_flags(T4A_COMPILE_NO_DISK_CACHE)
        .for_cc(9, 0);
    request = original; // copy assignment; then the original is destroyed
  }
  t4a::Artifact a = t4a::compile(request);
  const std::string f = a.lowered_name(0), d = a.lowered_name(1);
  assert_string_equal(f.c_str(), "_Z5scaleIfEvPT_");
  assert_string_equal(d.c_str(), "_Z5scaleIdEvPT_");
  const std::string ptx = a.image();
  assert_true(ptx.find(".entry " + f) != std::string::npos);
  assert_true(ptx.find(".entry " + d) != std::string::npos);
  // The option reached NVRTC: without it, FACTOR is undefined.
  t4a::CompileRequest without(
      "#include \"scale.h\"\n"
      "template <class T> __global__ void scale(T *x) { x[0] *= FACTOR; }");
  without.with_header("scale.h", "#define FACTOR SCALE_BY")
      .with_name_expression("scale<float>")
      .with_flags(T4A_COMPILE_NO_DISK_CACHE)
      .for_cc(9, 0);
  t4a::Artifact none;
  assert_int_equal(t4a::compile(without, none, std::nothrow),
                   T4A_ERROR_COMPILE);
  assert_true(t4a::last_compile_log().find("SCALE_BY") != std::string::npos);
}

// ---------------------------------------------------------------------------
// On the fake driver (tests/fake; "fake" group, its own process): typed
// arrays and container transfers move real bytes, and launches go through
// the library's checks (the fake driver runs no kernel and reports no
// parameters, so the scalar-size check is tests/gpu/test_facade_gpu.cpp's).
// ---------------------------------------------------------------------------

static t4a::Kernel fake_kernel(t4a::Runtime &rt) {
  t4a::Artifact a = t4a::compile(
      t4a::CompileRequest("extern \"C\" __global__ void k(float *x, int n, "
                          "double d) {}")
          .for_cc(9, 0)
          .with_flags(T4A_COMPILE_NO_DISK_CACHE));
  return t4a::Module(rt, a).kernel("k");
}

template <class F> static std::string error_of(F &&f, t4a_status want) {
  try {
    f();
  } catch (const t4a::Error &e) {
    if (e.status() != want)
      fail_msg("threw %s, expected %s: %s", t4a_status_name(e.status()),
               t4a_status_name(want), e.what());
    return e.what();
  }
  fail_msg("did not throw %s", t4a_status_name(want));
  return std::string();
}

static void expect_contains(const std::string &text, const char *part) {
  if (text.find(part) == std::string::npos)
    fail_msg("\"%s\" does not contain \"%s\"", text.c_str(), part);
}

static void test_fake_device_array(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  const std::vector<float> host = {1, 2, 3, 4};
  t4a::DeviceArray<float> d(rt, host); // allocate + upload, from rt itself
  assert_int_equal(d.size(), 4);
  assert_int_equal(d.bytes(), 16);
  assert_int_equal(d.buffer().size(), 16);
  assert_true(d.to_vector(rt) == host);

  // Element offsets; pointer + count; std::array and C arrays.
  const std::array<float, 2> two = {9, 8};
  d.upload(rt, two, 1);
  const float three[3] = {5, 6, 7};
  d.upload(rt, three, 1, 3); // pointer + count at element 3
  std::vector<float> out(4, 0.0f);
  d.download(rt, out);
  assert_true(out == std::vector<float>({1, 9, 8, 5}));
  std::array<float, 2> tail{};
  d.download(rt, tail, 2); // elements 2..3
  assert_true(tail[0] == 8 && tail[1] == 5);
  float one = 0;
  d.download(rt, &one, 1, 1);
  assert_true(one == 9);
  std::vector<float> bigger(6, -1.0f); // larger: the first 4 are written
  d.download(rt, bigger);
  assert_true(bigger == std::vector<float>({1, 9, 8, 5, -1, -1}));

  // A container too small: an error naming both sizes, nothing copied.
  std::vector<float> small(3, -1.0f);
  std::string m =
      error_of([&] { d.download(rt, small); }, T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "t4a::DeviceArray::download");
  expect_contains(m, "holds 3 elements");
  expect_contains(m, "the array 4");
  assert_true(small == std::vector<float>(3, -1.0f));
  std::array<float, 1> tiny{};
  m = error_of([&] { d.download(rt, tiny, 2); }, T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "holds 1 elements");
  expect_contains(m, "(2 to copy)");
  m = error_of([&] { d.download(rt, out, 5); }, T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "offset 5 is past the end of the array (4 elements)");
  // Past the end through the C calls: the library names the range.
  m = error_of([&] { d.upload(rt, host, 1); }, T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "t4a_buffer_upload");
  m = error_of([&] { d.download(rt, &one, 1, 4); }, T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "t4a_buffer_download_sync");
  // A count whose byte size overflows is rejected, never wrapped.
  m = error_of([&] { d.upload(rt, &one, SIZE_MAX / 2, 0); },
               T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "t4a_buffer_upload");

  // Non-throwing forms.
  t4a::DeviceArray<int32_t> ints;
  assert_int_equal(t4a::DeviceArray<int32_t>::alloc(rt, 8, T4A_BUFFER_ZERO,
                                                    ints, std::nothrow),
                   T4A_SUCCESS);
  const std::vector<int32_t> seq = {1, 2, 3};
  assert_int_equal(ints.upload(rt, seq, 5, std::nothrow), T4A_SUCCESS);
  assert_int_equal(ints.upload(rt, seq, 6, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  int32_t got[8] = {};
  assert_int_equal(ints.download(rt, got, 8, 0, std::nothrow), T4A_SUCCESS);
  assert_true(got[0] == 0 && got[4] == 0 && got[5] == 1 && got[7] == 3);

  // Untyped buffers take containers too, at byte offsets.
  t4a::Buffer raw(rt, 16);
  t4a::upload(rt, raw, std::array<uint8_t, 4>{1, 2, 3, 4});
  t4a::upload(rt, raw, std::vector<uint8_t>{9, 9}, 14);
  std::array<uint8_t, 16> bytes{};
  t4a::download(rt, raw, bytes);
  assert_true(bytes[0] == 1 && bytes[3] == 4 && bytes[14] == 9);
  std::vector<uint8_t> last(2);
  t4a::download(rt, raw, last, 14);
  assert_true(last[0] == 9 && last[1] == 9);
  assert_int_equal(t4a::download(rt, raw, last, 15, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a::upload(rt, raw, last, std::nothrow), T4A_SUCCESS);

  // Copies retain; the count travels with the copy.
  t4a::DeviceArray<float> copy = d;
  assert_int_equal(copy.get().id, d.get().id);
  assert_int_equal(copy.size(), 4);
  t4a::DeviceArray<float> moved = std::move(copy);
  assert_int_equal(moved.size(), 4);
  assert_false(static_cast<bool>(copy)); // NOLINT(bugprone-use-after-move)
}

static void test_fake_wrong_runtime(void **) {
  t4a::Runtime rt1(t4a::RuntimeOptions{}), rt2(t4a::RuntimeOptions{});
  t4a::DeviceArray<float> d1(rt1, 64);
  std::vector<float> host(64, 1.0f);
  std::string m =
      error_of([&] { d1.upload(rt2, host); }, T4A_ERROR_WRONG_RUNTIME);
  expect_contains(m, "t4a_buffer_upload");
  m = error_of([&] { d1.download(rt2, host); }, T4A_ERROR_WRONG_RUNTIME);
  expect_contains(m, "t4a_buffer_download_sync");
  // A buffer of another runtime as a launch argument: named by index.
  t4a::Kernel k2 = fake_kernel(rt2);
  const int n = 64;
  const double x = 1.0;
  m = error_of([&] { k2.launch(rt2, 1, 64, d1, n, x); },
               T4A_ERROR_WRONG_RUNTIME);
  expect_contains(m, "t4a_launch");
  expect_contains(m, "args[0]");
  assert_int_equal(k2.launch(rt2, 1, 64, d1, n, x, std::nothrow),
                   T4A_ERROR_WRONG_RUNTIME);
  assert_int_equal(rt2.stats().launches, 0);
}

// Copies between runtimes through t4a::copy (issue 10): rt is the runtime
// of dst; enable_peer on one device succeeds with nothing to do.
static void test_fake_cross_runtime_copy(void **) {
  t4a::Runtime rt1(t4a::RuntimeOptions{}), rt2(t4a::RuntimeOptions{});
  const std::vector<float> host = {1, 2, 3, 4, 5};
  t4a::DeviceArray<float> src(rt1, host);
  t4a::DeviceArray<float> dst(rt2, 5);
  rt2.enable_peer(rt1);
  assert_int_equal(rt1.enable_peer(rt2, std::nothrow), T4A_SUCCESS);
  t4a::copy(rt2, dst.buffer(), 0, src.buffer(), 0, src.bytes());
  assert_true(dst.to_vector(rt2) == host);
  assert_int_equal(rt2.stats().same_device_copies, 1);
  assert_int_equal(rt1.stats().same_device_copies, 1);
  // The source's runtime is not the destination's: refused.
  std::string m =
      error_of([&] { t4a::copy(rt1, dst.buffer(), 0, src.buffer(), 0, 4); },
               T4A_ERROR_WRONG_RUNTIME);
  expect_contains(m, "dst belongs");
}

// The experimental wrappers at run time: a capture made into a graph and
// replayed, a capture dropped unfinished (the runtime works after), and a
// cooperative launch through LaunchConfig::cooperative() against the
// kernel's maximum cooperative grid.
static void test_fake_graph_and_cooperative(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Kernel k = fake_kernel(rt);
  t4a::DeviceArray<float> d(rt, 256);
  t4a::Capture cap = t4a::Capture::begin(rt);
  k.launch(rt, 4, 64, d, 256, 0.5);
  k.launch(rt, 4, 64, d, 256, 1.5);
  t4a::Graph g = cap.end();
  t4a_graph_info gi = g.info();
  assert_int_equal(gi.node_count, 2);
  assert_int_equal(gi.launches, 0);
  g.launch(rt);
  assert_int_equal(g.launch(rt, std::nothrow), T4A_SUCCESS);
  assert_int_equal(g.info().launches, 2);
  {
    t4a::Capture dropped = t4a::Capture::begin(rt);
    k.launch(rt, 1, 1, d, 1, 1.0);
  }                                     // ended, its graph dropped
  t4a::DeviceArray<float> after(rt, 8); // not capturing any more
  t4a::Runtime other(t4a::RuntimeOptions{});
  std::string m = error_of([&] { g.launch(other); }, T4A_ERROR_WRONG_RUNTIME);
  expect_contains(m, "t4a_graph_launch");
  const int32_t max = k.max_cooperative_blocks(64);
  assert_true(max > 0);
  const uint64_t coop = rt.stats().cooperative_launches;
  k.launch(rt, t4a::LaunchConfig(static_cast<uint32_t>(max), 64).cooperative(),
           d, 256, 0.5);
  assert_int_equal(rt.stats().cooperative_launches, coop + 1);
  m = error_of(
      [&] {
        k.launch(
            rt,
            t4a::LaunchConfig(static_cast<uint32_t>(max) + 1, 64).cooperative(),
            d, 256, 0.5);
      },
      T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "co-resident");
  assert_int_equal(rt.stats().cooperative_launches, coop + 1);
  rt.synchronize();
}

static void test_fake_variadic_launch(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Kernel k = fake_kernel(rt);
  t4a::DeviceArray<float> d(rt, 256);
  const uint64_t before = rt.stats().launches;
  k.launch(rt, 4, 64, d, 256, 0.5); // an int and a double, packed
  k.launch(rt, {2, 2}, {8, 8}, t4a::arg_buffer(d, 16), 3, 2.0);
  k.launch(rt, t4a::LaunchConfig(1, 32, 4096), d, 1, 1.0);
  assert_int_equal(k.launch(rt, 1, 1, d.buffer(), 1, 1.0, std::nothrow),
                   T4A_SUCCESS);
  assert_int_equal(rt.stats().launches, before + 4);
  // Rejections come from the C checks, named: a zero x extent (y and z 0
  // mean 1), too much shared memory, an offset past the buffer.
  k.launch(rt, {1, 0, 0}, {32, 0, 0}, d, 1, 1.0);
  std::string m = error_of(
      [&] {
        k.launch(rt, {0, 1, 1}, 1, d, 1, 1.0);
      },
      T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "grid[0]");
  m = error_of(
      [&] { k.launch(rt, t4a::LaunchConfig(1, 1, 1u << 30), d, 1, 1.0); },
      T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "dynamic_shared_bytes");
  m = error_of([&] { k.launch(rt, 1, 1, t4a::arg_buffer(d, 256), 1, 1.0); },
               T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "args[0]");
  assert_int_equal(rt.stats().launches, before + 5);
  rt.synchronize();
}

static void test_small_wrappers(void **) {
  assert_int_equal(t4a::version(), T4A_VERSION_NUMBER);
  assert_string_equal(t4a::version_string(), T4A_VERSION_STRING);
  assert_int_equal(t4a::built_cuda_version(), t4a_built_cuda_version());
  // A failure, then clear_last_error() empties the record.
  int32_t n = 0;
  assert_int_equal(t4a::device_count(n, std::nothrow), T4A_ERROR_NO_DRIVER);
  assert_false(t4a::last_error_message().empty());
  t4a::clear_last_error();
  assert_true(t4a::last_error_message().empty());
  // No driver, no fault: the record says so, thrown or not.
  t4a_process_fault f;
  std::memset(&f, 0x5A, sizeof f);
  assert_int_equal(t4a::process_fault(f, std::nothrow), T4A_SUCCESS);
  assert_int_equal(f.has_fault, 0);
  assert_int_equal(f.struct_size, sizeof(t4a_process_fault));
  assert_int_equal(t4a::process_fault().has_fault, 0);
}

static void test_versions(void **) {
  auto v = t4a::nvrtc_version();
  assert_true(v.first >= 12);
  assert_int_equal(t4a_version(), T4A_VERSION_NUMBER);
}

// Module globals and name expressions through the facade: a view of a
// global is a Buffer (both forms), kernels and lowered names by expression.
static void test_fake_module_global(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Artifact a = t4a::compile(
      t4a::CompileRequest("__constant__ float table[16];\n"
                          "__device__ unsigned counter;\n"
                          "template <int N> __global__ void k(float *x) {}\n")
          .for_cc(9, 0)
          .with_flags(T4A_COMPILE_NO_DISK_CACHE)
          .with_name_expression("table")
          .with_name_expression("&counter")
          .with_name_expression("k<4>"));
  assert_string_equal(a.lowered_name_of("&table").c_str(), "table");
  assert_true(a.lowered_name_of("k< 4 >") == a.lowered_name(2));
  expect_contains(error_of([&] { (void)a.lowered_name_of("k<5>"); },
                           T4A_ERROR_UNKNOWN_ENTRY_POINT),
                  "'k<5>'");
  t4a::Buffer view;
  t4a::Kernel kernel;
  {
    t4a::Module m(rt, a);
    kernel = m.kernel("k<4>");
    view = m.global("table");
    t4a::Buffer other;
    assert_int_equal(m.global("no_such_x", other, std::nothrow),
                     T4A_ERROR_UNKNOWN_ENTRY_POINT);
    assert_false(static_cast<bool>(other));
    assert_int_equal(m.global("counter", other, std::nothrow), T4A_SUCCESS);
    assert_true(other.is_view());
    assert_int_equal(other.size(), 4);
    expect_contains(error_of([&] { (void)m.global("no_such_y"); },
                             T4A_ERROR_UNKNOWN_ENTRY_POINT),
                    "'no_such_y'");
  } // the module's handle goes; the view keeps it loaded
  assert_true(view.is_view());
  assert_int_equal(view.size(), 64);
  std::vector<float> in(16), out(16);
  for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i) / 4;
  t4a::upload(rt, view, 0, in.data(), 64);
  t4a::download(rt, view, 0, out.data(), 64);
  assert_true(in == out);
  t4a::launch(rt, kernel, {1}, {16}, 0, {t4a::arg_buffer(view, 4)});
  expect_contains(error_of([&] { t4a::fill(rt, view, 60, 8, 0); },
                           T4A_ERROR_INVALID_ARGUMENT),
                  "(64 bytes)");
  rt.synchronize();
}

// Launch attributes (issue 28) through the facade's builders. Each sets
// its bit or field and clears it with `false`; attributes() is the C
// struct; a configuration without any has none.
static_assert(!t4a::LaunchConfig(4, 64).has_attributes());
static_assert(sizeof(t4a::LaunchConfig) ==
                  sizeof(t4a::Dim3) * 2 + sizeof(uint32_t) * 6,
              "the attribute fields are there with or without "
              "T4A_EXPERIMENTAL");
static_assert(std::is_same_v<decltype(t4a::LaunchConfig(1, 1).cluster(2)),
                             t4a::LaunchConfig &>);
static_assert(noexcept(t4a::LaunchConfig(1, 1).cluster(2, 1, 1)));
static_assert(noexcept(t4a::LaunchConfig(1, 1).programmatic()));
static_assert(noexcept(t4a::LaunchConfig(1, 1).non_portable_cluster()));
static_assert(
    std::is_same_v<decltype(std::declval<const t4a::Kernel &>()
                                .cluster_occupancy(t4a::LaunchConfig(1, 1))),
                   t4a_cluster_occupancy>);
static_assert(std::is_same_v<
              decltype(std::declval<const t4a::Kernel &>().cluster_occupancy(
                  t4a::LaunchConfig(1, 1),
                  std::declval<t4a_cluster_occupancy &>(), std::nothrow)),
              t4a_status>);
static_assert(noexcept(std::declval<const t4a::Kernel &>().cluster_occupancy(
    t4a::LaunchConfig(1, 1), std::declval<t4a_cluster_occupancy &>(),
    std::nothrow)));

static void test_launch_config_attributes(void **) {
  t4a::LaunchConfig c(8, 64);
  assert_false(c.has_attributes());
  t4a_launch_attrs a = c.attributes();
  assert_int_equal(a.struct_size, sizeof(t4a_launch_attrs));
  assert_int_equal(a.flags, 0);
  assert_int_equal(a.cluster[0] | a.cluster[1] | a.cluster[2], 0);
  assert_int_equal(a.reserved0, 0);
  c.cluster(2).programmatic().non_portable_cluster().cooperative();
  assert_true(c.has_attributes());
  a = c.attributes();
  assert_int_equal(a.flags, T4A_LAUNCH_ATTR_PROGRAMMATIC |
                                T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE);
  assert_int_equal(a.cluster[0], 2);
  assert_int_equal(a.cluster[1], 1);
  assert_int_equal(a.cluster[2], 1);
  assert_int_equal(c.flags, T4A_LAUNCH_COOPERATIVE); // a descriptor flag
  c.cluster(2, 4, 1);
  assert_int_equal(c.attributes().cluster[1], 4);
  c.programmatic(false);
  assert_int_equal(c.attr_flags, T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE);
  c.non_portable_cluster(false).cooperative(false);
  assert_int_equal(c.attr_flags, 0);
  assert_int_equal(c.flags, 0);
  assert_true(c.has_attributes()); // the cluster is still set
  c.cluster(0, 0, 0);
  assert_false(c.has_attributes());
  assert_false(t4a::LaunchConfig(1, 1)
                   .programmatic()
                   .programmatic(false)
                   .has_attributes());
}

#if defined(T4A_FAKE_CUDA_PATH)
// The fake driver's record of its cuLaunchKernelEx calls: out = {attribute
// count, cluster x, y, z (0 0 0: none), programmatic}; returns how many.
static unsigned long fake_launch_ex(unsigned out[5]) {
  void *fake = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  auto fn = fake == nullptr ? nullptr
                            : reinterpret_cast<unsigned long (*)(unsigned *)>(
                                  dlsym(fake, "fake_cuda_last_launch_ex"));
  if (fn == nullptr) fail_msg("fake_cuda_last_launch_ex not found");
  const unsigned long n = fn(out);
  dlclose(fake);
  return n;
}

// On the fake driver (compute capability 9.0, clusters): a launch with
// attributes goes through t4a_launch_ex() to cuLaunchKernelEx with them,
// one without attributes through t4a_launch() (cuLaunchKernel); a cluster
// that does not divide the grid is refused before anything is enqueued,
// thrown and not; cluster occupancy of a shape; the non-portable opt-in.
static void test_fake_launch_attributes(void **) {
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Kernel k = fake_kernel(rt);
  t4a::DeviceArray<float> d(rt, 256);
  unsigned ex[5] = {0, 0, 0, 0, 0};
  const unsigned long ex0 = fake_launch_ex(ex);
  const uint64_t launches0 = rt.stats().launches;

  // No attributes: not cuLaunchKernelEx.
  k.launch(rt, t4a::LaunchConfig(4, 64), d, 256, 0.5);
  k.launch(rt, t4a::LaunchConfig(4, 64).cluster(0, 0, 0), d, 256, 0.5);
  assert_int_equal(
      k.launch(rt, t4a::LaunchConfig(4, 64), d, 256, 0.5, std::nothrow),
      T4A_SUCCESS);
  assert_int_equal(fake_launch_ex(ex), ex0);
  assert_int_equal(rt.stats().launches, launches0 + 3);

  // A cluster of 2 on a grid of 4.
  k.launch(rt, t4a::LaunchConfig(4, 64).cluster(2), d, 256, 0.5);
  assert_int_equal(fake_launch_ex(ex), ex0 + 1);
  assert_int_equal(ex[0], 1); // one attribute: the cluster
  assert_int_equal(ex[1], 2);
  assert_int_equal(ex[2], 1);
  assert_int_equal(ex[3], 1);
  assert_int_equal(ex[4], 0);

  // Programmatic, alone and with a 2 x 2 cluster; the non-throwing form.
  k.launch(rt, t4a::LaunchConfig(4, 64).programmatic(), d, 256, 0.5);
  assert_int_equal(fake_launch_ex(ex), ex0 + 2);
  assert_int_equal(ex[0], 1);
  assert_int_equal(ex[1] | ex[2] | ex[3], 0); // no cluster
  assert_int_equal(ex[4], 1);
  assert_int_equal(
      k.launch(rt, t4a::LaunchConfig({4, 2}, 64).cluster(2, 2).programmatic(),
               d, 256, 0.5, std::nothrow),
      T4A_SUCCESS);
  assert_int_equal(fake_launch_ex(ex), ex0 + 3);
  assert_int_equal(ex[0], 2);
  assert_int_equal(ex[1], 2);
  assert_int_equal(ex[2], 2);
  assert_int_equal(ex[3], 1);
  assert_int_equal(ex[4], 1);
  assert_int_equal(rt.stats().launches, launches0 + 6);

  // A cluster of 2 does not divide a grid of 3: refused, nothing launched.
  std::string m = error_of(
      [&] { k.launch(rt, t4a::LaunchConfig(3, 64).cluster(2), d, 256, 0.5); },
      T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "grid[0]");
  assert_int_equal(k.launch(rt, t4a::LaunchConfig(3, 64).cluster(2), d, 256,
                            0.5, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(fake_launch_ex(ex), ex0 + 3);
  assert_int_equal(rt.stats().launches, launches0 + 6);

  // Cluster occupancy: 4 multiprocessors of 32 blocks of 64 threads hold
  // 64 clusters of 2; at most 8 blocks per cluster (portable).
  t4a_cluster_occupancy occ =
      k.cluster_occupancy(t4a::LaunchConfig(8, 64).cluster(2));
  assert_int_equal(occ.struct_size, sizeof(t4a_cluster_occupancy));
  assert_int_equal(occ.max_active_clusters, 64);
  assert_int_equal(occ.max_cluster_size, 8);
  t4a_cluster_occupancy kept = T4A_CLUSTER_OCCUPANCY_INIT;
  kept.max_active_clusters = -7;
  assert_int_equal(k.cluster_occupancy(t4a::LaunchConfig(3, 64).cluster(2),
                                       kept, std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(kept.max_active_clusters, -7); // written only on success
  error_of(
      [&] { (void)k.cluster_occupancy(t4a::LaunchConfig(3, 64).cluster(2)); },
      T4A_ERROR_INVALID_ARGUMENT);

  // 16 blocks per cluster: above the portable 8 only with the opt-in.
  m = error_of(
      [&] { k.launch(rt, t4a::LaunchConfig(16, 64).cluster(16), d, 256, 0.5); },
      T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE");
  assert_int_equal(fake_launch_ex(ex), ex0 + 3);
  k.launch(rt, t4a::LaunchConfig(16, 64).cluster(16).non_portable_cluster(), d,
           256, 0.5);
  assert_int_equal(fake_launch_ex(ex), ex0 + 4);
  assert_int_equal(ex[1], 16);
  assert_int_equal(rt.stats().launches, launches0 + 7);
  rt.synchronize();
}

// RuntimeOptions::priority() reaches t4a_runtime_options and the
// runtime reports the priority in info(); outside the device's range (0
// down to -5 on the fake driver) is refused, naming it.
static void test_fake_stream_priority(void **) {
  t4a::RuntimeOptions o;
  assert_int_equal(o.stream_priority, 0);
  static_assert(
      std::is_same_v<decltype(o.priority(-2)), t4a::RuntimeOptions &>);
  static_assert(noexcept(o.priority(-2)));
  assert_int_equal(static_cast<t4a_runtime_options &>(o.priority(-2).device(0))
                       .stream_priority,
                   -2);
  t4a::Runtime rt(o);
  assert_int_equal(rt.info().stream_priority, -2);
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  assert_int_equal(t4a::RuntimeView(rt).info(info, std::nothrow), T4A_SUCCESS);
  assert_int_equal(info.stream_priority, -2);
  t4a::Runtime def(t4a::RuntimeOptions{});
  assert_int_equal(def.info().stream_priority, 0);
  std::string m =
      error_of([&] { t4a::Runtime bad(t4a::RuntimeOptions{}.priority(-6)); },
               T4A_ERROR_INVALID_ARGUMENT);
  expect_contains(m, "stream_priority");
  t4a::Runtime none;
  assert_int_equal(t4a::Runtime::create(t4a::RuntimeOptions{}.priority(1), none,
                                        std::nothrow),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_false(static_cast<bool>(none));
}
#endif

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "fake") == 0) {
#if defined(T4A_FAKE_CUDA_PATH)
    setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
    const struct CMUnitTest fake[] = {
        cmocka_unit_test(test_fake_device_array),
        cmocka_unit_test(test_fake_wrong_runtime),
        cmocka_unit_test(test_fake_cross_runtime_copy),
        cmocka_unit_test(test_fake_variadic_launch),
        cmocka_unit_test(test_fake_graph_and_cooperative),
        cmocka_unit_test(test_fake_module_global),
        cmocka_unit_test(test_fake_launch_attributes),
        cmocka_unit_test(test_fake_stream_priority),
    };
    return cmocka_run_group_tests(fake, nullptr, nullptr);
#else
    std::fprintf(stderr, "built without the fake driver\n");
    return 1;
#endif
  }
  setenv("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_throwing_create),
      cmocka_unit_test(test_nothrow_paths),
      cmocka_unit_test(test_ownership),
      cmocka_unit_test(test_buffer_null),
      cmocka_unit_test(test_buffer_copy_retains),
      cmocka_unit_test(test_buffer_alloc_null_runtime),
      cmocka_unit_test(test_transfers_null_runtime),
      cmocka_unit_test(test_host_buffer),
      cmocka_unit_test(test_download),
      cmocka_unit_test(test_buffers_without_exceptions),
      cmocka_unit_test(test_module_kernel_completion_ownership),
      cmocka_unit_test(test_module_load),
      cmocka_unit_test(test_kernel_queries),
      cmocka_unit_test(test_launch_args),
      cmocka_unit_test(test_launch_null_runtime),
      cmocka_unit_test(test_completion),
      cmocka_unit_test(test_launch_without_exceptions),
      cmocka_unit_test(test_log_and_process_stats),
      cmocka_unit_test(test_compile),
      cmocka_unit_test(test_small_wrappers),
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_variadic_arg_packing),
      cmocka_unit_test(test_variadic_launch_null_runtime),
      cmocka_unit_test(test_compile_request_builder),
      cmocka_unit_test(test_compile_request_nvrtc),
      cmocka_unit_test(test_launch_config_attributes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
