// libFuzzer target (issue 8, "Fuzz targets": t4a_launch through the C API
// on the fake driver): arbitrary descriptors through the public entry
// point, on the fake libcuda of tests/fake (set in LLVMFuzzerInitialize).
// Handles are real, of the other runtime, released (stale), forged or
// null: runtimes, kernels and buffers; struct_size older, equal or newer
// with a zero or non-zero tail; flags, dimensions, shared memory, argument
// counts, kinds, offsets, scalar sizes and device pointers arbitrary.
// Every call must return without crashing and with a status t4a_launch
// documents; a failure must record itself as the thread's last error
// (the same status, a message, the entry point); a success must leave the
// last error clean. The count may claim more arguments than the
// array holds only when `args` is NULL or the count is beyond the parameter
// limit (the entry point reads nothing then either), as in
// fuzz_launch_validation.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "t4acuda.h"

#include "fuzz_reader.hpp"

namespace {

using t4a_fuzz::Reader;

[[noreturn]] void die(const char *what, t4a_status s) {
  char msg[2048];
  if (t4a_last_error_message(msg, sizeof msg, nullptr) != T4A_SUCCESS)
    msg[0] = '\0';
  std::fprintf(stderr, "fuzz_launch_capi: %s (%s): %s\n", what,
               t4a_status_name(s), msg);
  std::abort();
}

void must(t4a_status s, const char *what) {
  if (s != T4A_SUCCESS) die(what, s);
}

// The objects the descriptors choose from, made once.
t4a_runtime g_rt[2];    // live runtimes: 0 launches, 1 is "another"
t4a_runtime g_dead;     // destroyed: a stale handle
t4a_kernel g_kernel[2]; // a kernel of each runtime
t4a_kernel g_released;  // a released kernel
t4a_buffer g_buf[2][3]; // per runtime: 0 bytes (empty), 1 byte, 4096
t4a_buffer g_released_buf;
unsigned long g_calls = 0;
unsigned long g_by_status[T4A_ERROR_INTERNAL + 1];

// T4A_FUZZ_VERBOSE set: how many calls ended with each status, at exit
// (to see that the corpus reaches successful launches too).
void report() {
  for (int s = 0; s <= T4A_ERROR_INTERNAL; ++s)
    if (g_by_status[s] != 0)
      std::fprintf(stderr, "fuzz_launch_capi: %-28s %lu\n",
                   t4a_status_name(static_cast<t4a_status>(s)), g_by_status[s]);
}

uint64_t forged(Reader &r) { return r.get<uint64_t>(); }

t4a_runtime pick_runtime(Reader &r) {
  switch (r.get<uint8_t>() % 8) {
  case 0: return t4a_runtime{0};
  case 1: return g_rt[1];
  case 2: return g_dead;
  case 3: return t4a_runtime{forged(r)};
  default: return g_rt[0];
  }
}

t4a_kernel pick_kernel(Reader &r) {
  switch (r.get<uint8_t>() % 8) {
  case 0: return t4a_kernel{0};
  case 1: return g_kernel[1];
  case 2: return g_released;
  case 3: return t4a_kernel{forged(r)};
  case 4: return t4a_kernel{g_buf[0][2].id}; // a handle of another type
  default: return g_kernel[0];
  }
}

t4a_buffer pick_buffer(Reader &r) {
  uint8_t k = r.get<uint8_t>() % 10;
  switch (k) {
  case 0: return t4a_buffer{0};
  case 1: return g_buf[1][2];
  case 2: return g_released_buf;
  case 3: return t4a_buffer{forged(r)};
  case 4: return t4a_buffer{g_kernel[0].id}; // a handle of another type
  default: return g_buf[0][k % 3];
  }
}

bool documented(t4a_status s) {
  switch (s) {
  case T4A_SUCCESS:
  case T4A_ERROR_INVALID_HANDLE:
  case T4A_ERROR_INVALID_ARGUMENT:
  case T4A_ERROR_WRONG_RUNTIME:
  case T4A_ERROR_VERSION_MISMATCH:
  case T4A_ERROR_DRIVER:
  case T4A_ERROR_DEVICE_FAULT: return true;
  default: return false;
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  setenv("T4A_LOG", "off", 1); // rejected launches are not logged anyway
  for (t4a_runtime &rt : g_rt) must(t4a_runtime_create(nullptr, &rt), "create");
  must(t4a_runtime_create(nullptr, &g_dead), "create");
  must(t4a_runtime_destroy(g_dead), "destroy");
  // The fake driver accepts any image and any entry name ("no_such_*"
  // aside); it reports no parameter layout, as an older driver.
  static const char image[] = "fake image";
  for (int i = 0; i < 2; ++i) {
    t4a_module m{};
    must(t4a_module_load_data(g_rt[i], image, sizeof image, &m), "load");
    must(t4a_kernel_get(m, "k", &g_kernel[i]), "kernel");
    if (i == 0) {
      must(t4a_kernel_get(m, "k", &g_released), "kernel");
      must(t4a_kernel_release(g_released), "release");
    }
    must(t4a_module_release(m), "release");
    const uint64_t sizes[3] = {0, 1, 4096};
    for (int b = 0; b < 3; ++b)
      must(t4a_buffer_alloc(g_rt[i], sizes[b], 0, &g_buf[i][b]), "alloc");
  }
  must(t4a_buffer_alloc(g_rt[0], 64, 0, &g_released_buf), "alloc");
  must(t4a_buffer_release(g_released_buf), "release");
  if (getenv("T4A_FUZZ_VERBOSE") != nullptr) std::atexit(report);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  t4a_runtime rt = pick_runtime(r);

  // The descriptor inside a larger block, so that a newer caller's tail
  // (struct_size beyond ours) is real memory: zero, or not.
  constexpr size_t ours = sizeof(t4a_launch_desc);
  alignas(t4a_launch_desc) unsigned char block[ours + 64];
  std::memset(block, 0, sizeof block);
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  switch (r.get<uint8_t>() % 8) {
  case 0: d.struct_size = r.get<uint8_t>() % 4; break;
  case 1: { // an older caller: the struct up to the end of one field
    static const uint32_t ends[] = {
        offsetof(t4a_launch_desc, flags),
        offsetof(t4a_launch_desc, kernel),
        offsetof(t4a_launch_desc, grid),
        offsetof(t4a_launch_desc, block),
        offsetof(t4a_launch_desc, dynamic_shared_bytes),
        offsetof(t4a_launch_desc, arg_count),
        offsetof(t4a_launch_desc, args)};
    d.struct_size = ends[r.get<uint8_t>() % (sizeof ends / sizeof ends[0])];
    break;
  }
  case 2:
    d.struct_size = static_cast<uint32_t>(ours + 1 + r.get<uint8_t>() % 64);
    break;
  case 3: // any size below ours: one ending inside a field (half of the
    // args pointer) is refused before the field is read
    d.struct_size = static_cast<uint32_t>(r.get<uint8_t>() % ours);
    break;
  default: break; // sizeof
  }
  d.flags = (r.get<uint8_t>() & 7) == 0 ? r.get<uint32_t>() : 0;
  d.kernel = pick_kernel(r);
  uint8_t dims = r.get<uint8_t>();
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = dims & 1 ? r.get<uint32_t>() : 1 + r.get<uint8_t>() % 4;
    d.block[i] = dims & 2 ? r.get<uint32_t>() : 1 + r.get<uint8_t>() % 64;
    dims >>= 2;
  }
  d.dynamic_shared_bytes = (r.get<uint8_t>() & 3) == 0 ? r.get<uint32_t>() : 0;

  uint32_t nargs = r.get<uint8_t>() % 40;
  std::vector<t4a_arg> args(nargs);
  static unsigned char scalar[T4A_MAX_PARAM_BYTES + 16];
  for (t4a_arg &a : args) {
    a.kind = r.get<uint8_t>() % 5;
    a.reserved0 = (r.get<uint8_t>() & 15) == 0 ? r.get<uint32_t>() : 0;
    a.buffer = pick_buffer(r);
    uint8_t off = r.get<uint8_t>();
    a.offset = off & 1 ? r.get<uint64_t>() : off >> 1;
    a.size = r.get<uint16_t>();
    a.value = r.get<uint8_t>() & 1 ? scalar : nullptr;
    if (a.size > sizeof scalar) a.value = nullptr;
    a.device_pointer = r.get<uint64_t>();
  }
  d.arg_count = nargs;
  d.args = nargs > 0 ? args.data() : nullptr;
  switch (r.get<uint8_t>() % 4) {
  case 1:
    d.args = nullptr;
    d.arg_count = r.get<uint32_t>();
    break;
  case 2: d.arg_count = T4A_MAX_PARAM_BYTES + 1 + r.get<uint16_t>(); break;
  default: break;
  }
  std::memcpy(block, &d, ours);
  if (d.struct_size > ours && (r.get<uint8_t>() & 1))
    block[ours + r.get<uint8_t>() % (d.struct_size - ours)] =
        static_cast<unsigned char>(1 + r.get<uint8_t>() % 255);
  const t4a_launch_desc *desc =
      r.get<uint8_t>() % 16 == 0 ? nullptr
                                 : reinterpret_cast<t4a_launch_desc *>(block);

  t4a_last_error_clear();
  t4a_status s = t4a_launch(rt, desc);
  if (!documented(s)) die("undocumented status", s);
  ++g_by_status[s];
  t4a_error_info e = T4A_ERROR_INFO_INIT;
  if (t4a_last_error(&e) != T4A_SUCCESS) die("t4a_last_error failed", s);
  if (s == T4A_SUCCESS) {
    if (e.status != T4A_SUCCESS)
      die("a successful launch left an error behind", e.status);
  } else {
    char msg[16];
    size_t needed = 0;
    if (e.status != s) die("the last error is not the status returned", s);
    if (t4a_last_error_message(msg, sizeof msg, &needed) != T4A_SUCCESS ||
        needed <= 1)
      die("a failure without a message", s);
    if (e.entry_point == nullptr || std::strcmp(e.entry_point, "t4a_launch"))
      die("a failure not naming t4a_launch", s);
  }
  // Keep the runtimes' open epochs and the fake's bookkeeping small: the
  // fuzzer is about validation, not about a million launches.
  if (++g_calls % 128 == 0)
    for (t4a_runtime live : g_rt)
      must(t4a_runtime_synchronize(live), "synchronize");
  return 0;
}
