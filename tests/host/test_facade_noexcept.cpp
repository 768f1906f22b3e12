// Compiled with -fno-exceptions: only the non-throwing facade exists.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "t4acuda.hpp"

#if T4A_HPP_EXCEPTIONS
#error "the facade must hide its throwing methods without exceptions"
#endif

t4a_status facade_noexcept_create(t4a::Runtime &out) {
  int32_t count = 0;
  t4a_status s = t4a::device_count(count, std::nothrow);
  if (s != T4A_ERROR_NO_DRIVER) return T4A_ERROR_INTERNAL;
  return t4a::Runtime::create(t4a::RuntimeOptions{}, out, std::nothrow);
}

// Buffers, host buffers and downloads without exceptions: every call goes
// through the non-throwing API. Returns the final Buffer::alloc status
// (the last call made), or T4A_ERROR_INTERNAL if an earlier step gave
// something other than expected.
t4a_status facade_noexcept_buffers(t4a::Buffer &out, uint64_t forged_id) {
  t4a::RuntimeView none;
  {
    t4a::Buffer a(t4a_buffer{forged_id});
    t4a::Buffer b = a; // retain of a forged id fails: the copy is null
    if (b.get().id != T4A_NULL_ID || a.get().id != forged_id)
      return T4A_ERROR_INTERNAL;
    t4a_buffer_info info;
    if (b.info(info, std::nothrow) != T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
    unsigned char host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (t4a::upload(none, a, 0, host, sizeof host, std::nothrow) !=
        T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
    if (t4a::download(none, a, 0, host, sizeof host, std::nothrow) !=
        T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
    if (host[0] != 1 || host[7] != 8) return T4A_ERROR_INTERNAL;
  } // both release (fails silently)
  t4a::HostBuffer h;
  if (t4a::HostBuffer::alloc(none, 64, h, std::nothrow) !=
          T4A_ERROR_INVALID_HANDLE ||
      h)
    return T4A_ERROR_INTERNAL;
  t4a::Download d;
  unsigned char byte = 0x5A;
  if (d.poll(&byte, std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
      d.wait(&byte, std::nothrow) != T4A_ERROR_INVALID_HANDLE || byte != 0x5A)
    return T4A_ERROR_INTERNAL;
  return t4a::Buffer::alloc(none, 64, T4A_BUFFER_ZERO, out, std::nothrow);
}

// A failing compile without exceptions: the status, no artifact, and the
// complete log through t4a::last_compile_log().
t4a_status facade_noexcept_compile(t4a::Artifact &out, std::string &log) {
  t4a::CompileRequest r;
  r.with_source("__global__ void k() { undefined_here; }").for_cc(8, 0);
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_status s = t4a::compile(r, out, std::nothrow);
  log = t4a::last_compile_log();
  return s;
}

// Modules, kernels, launches and completions without exceptions, on forged
// handles and a null runtime view. The wrappers passed in must come back
// untouched (every call fails). Returns the final t4a::record status (the
// last call made), or T4A_ERROR_INTERNAL if an earlier step gave something
// other than expected.
t4a_status facade_noexcept_launch(t4a::Module &module, t4a::Kernel &kernel,
                                  t4a::Completion &completion,
                                  uint64_t forged_module,
                                  uint64_t forged_kernel,
                                  uint64_t forged_completion) {
  t4a::RuntimeView none;
  const unsigned char image[2] = {'/', '/'};
  if (t4a::Module::load(none, image, sizeof image, module, std::nothrow) !=
          T4A_ERROR_INVALID_HANDLE ||
      t4a::Module::load(none, t4a::Artifact(), module, std::nothrow) !=
          T4A_ERROR_INVALID_HANDLE)
    return T4A_ERROR_INTERNAL;
  {
    t4a::Module m(t4a_module{forged_module});
    t4a::Module copy = m; // retain of a forged id fails: the copy is null
    if (copy || m.get().id != forged_module) return T4A_ERROR_INTERNAL;
    if (m.kernel("k", kernel, std::nothrow) != T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
    t4a::Buffer view;
    if (m.global("counter", view, std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
        view)
      return T4A_ERROR_INTERNAL;
  } // m releases (fails silently)
  {
    const t4a::Kernel k(t4a_kernel{forged_kernel});
    t4a_kernel_info info;
    info.registers = 99;
    int32_t blocks = 7, block = 8, grid = 9;
    uint64_t offset = 10, size = 11;
    if (k.info(info, std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
        k.param(0, offset, size, std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
        k.occupancy(128, 0, blocks, std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
        k.suggest_block_size(0, block, grid, std::nothrow) !=
            T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
    if (info.registers != 99 || blocks != 7 || block != 8 || grid != 9 ||
        offset != 10 || size != 11)
      return T4A_ERROR_INTERNAL;
    const int32_t n = 4;
    if (t4a::launch(none, k, 1, {32, 4}, 0,
                    {t4a::arg_scalar(n), t4a::arg_device_pointer(0x1000)},
                    std::nothrow) != T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
  }
  {
    t4a::Completion c(t4a_completion{forged_completion});
    if (c.poll(std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
        c.wait(std::nothrow) != T4A_ERROR_INVALID_HANDLE ||
        t4a::wait(none, c, std::nothrow) != T4A_ERROR_INVALID_HANDLE)
      return T4A_ERROR_INTERNAL;
  }
  return t4a::record(none, completion, std::nothrow);
}

// The variadic launch and typed arrays without exceptions: the forms
// ending in std::nothrow. Through the null runtime every call reports
// INVALID_HANDLE; returns T4A_ERROR_INTERNAL if one did not.
t4a_status facade_noexcept_variadic(uint64_t forged_kernel,
                                    uint64_t forged_buffer) {
  t4a::RuntimeView none;
  t4a::Kernel k(t4a_kernel{forged_kernel});
  t4a::Buffer b(t4a_buffer{forged_buffer});
  const int n = 3;
  if (k.launch(none, 1, 32, b, n, 1.5, std::nothrow) !=
      T4A_ERROR_INVALID_HANDLE)
    return T4A_ERROR_INTERNAL;
  if (k.launch(none, t4a::LaunchConfig(1, 32, 64), b, std::nothrow) !=
      T4A_ERROR_INVALID_HANDLE)
    return T4A_ERROR_INTERNAL;
  t4a::DeviceArray<float> d;
  if (t4a::DeviceArray<float>::alloc(none, 4, 0, d, std::nothrow) !=
          T4A_ERROR_INVALID_HANDLE ||
      d)
    return T4A_ERROR_INTERNAL;
  const float host[4] = {1, 2, 3, 4};
  if (d.upload(none, host, std::nothrow) != T4A_ERROR_INVALID_HANDLE)
    return T4A_ERROR_INTERNAL;
  float out[4] = {};
  if (d.download(none, out, 4, 0, std::nothrow) != T4A_ERROR_INVALID_HANDLE)
    return T4A_ERROR_INTERNAL;
  if (t4a::upload(none, b, host, std::nothrow) != T4A_ERROR_INVALID_HANDLE)
    return T4A_ERROR_INTERNAL;
  b.release(); // forged: never released
  k.release();
  return T4A_SUCCESS;
}
