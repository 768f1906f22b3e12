/*
 * GPU lane: runtimes on real devices: device discovery, creation and
 * independence of runtimes, the current context, handles and struct
 * sizes, fault injection, destroy and broken runtimes. Values are checked
 * against the test's own libcuda (tests/support/gpu_support.h), never only
 * against the library.
 *
 * Groups (argv[1]): "basic", "faults" (fault injection: leaks contexts and
 * breaks runtimes on purpose, so it runs in its own process), or "all".
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"

#define MAX_DEVICES 64

static int g_devices;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/* Whether `msg` holds the decimal `value` as a number of its own (not part
 * of a longer number, not negated). */
static int contains_number(const char *msg, long value) {
  char digits[32];
  snprintf(digits, sizeof digits, "%ld", value);
  size_t n = strlen(digits);
  for (const char *p = strstr(msg, digits); p != NULL;
       p = strstr(p + 1, digits)) {
    int before_ok = p == msg || (p[-1] != '-' && (p[-1] < '0' || p[-1] > '9'));
    int after_ok = p[n] < '0' || p[n] > '9';
    if (before_ok && after_ok) return 1;
  }
  return 0;
}

/* Checks the thread's last error: status, driver result, entry point and
 * that the message contains every string of the NULL-terminated list. */
static void check_last_error_at(const char *file, int line, t4a_status status,
                                int32_t driver_result, const char *entry, ...) {
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  if (t4a_last_error(&ei) != T4A_SUCCESS) {
    print_error("t4a_last_error failed\n");
    _fail(file, line);
  }
  const char *msg = last_message();
  if (ei.status != status || ei.driver_result != driver_result ||
      ei.entry_point == NULL || strcmp(ei.entry_point, entry) != 0) {
    print_error("last error is %s / CUresult %d / '%s', expected %s / %d / "
                "'%s'; message: %s\n",
                t4a_status_name(ei.status), (int)ei.driver_result,
                ei.entry_point ? ei.entry_point : "(null)",
                t4a_status_name(status), (int)driver_result, entry, msg);
    _fail(file, line);
  }
  va_list ap;
  va_start(ap, entry);
  for (const char *want = va_arg(ap, const char *); want != NULL;
       want = va_arg(ap, const char *)) {
    if (strstr(msg, want) == NULL) {
      va_end(ap);
      print_error("last error message lacks '%s': %s\n", want, msg);
      _fail(file, line);
    }
  }
  va_end(ap);
}
#define CHECK_LAST_ERROR(status, driver_result, entry, ...)                    \
  check_last_error_at(__FILE__, __LINE__, status, driver_result, entry,        \
                      __VA_ARGS__, (const char *)NULL)

/* Runtimes created by the running test; teardown destroys those a failed
 * assertion left behind, so one failure does not cascade into the next
 * tests (destroying an already destroyed one is a harmless
 * INVALID_HANDLE: ids are never reused). */
#define MAX_TRACKED 256
static t4a_runtime g_tracked[MAX_TRACKED];
static int g_ntracked;

static t4a_runtime track(t4a_runtime rt) {
  if (g_ntracked < MAX_TRACKED) g_tracked[g_ntracked++] = rt;
  return rt;
}

/* t4a_runtime_create, tracked on success. */
static t4a_status create(const t4a_runtime_options *o, t4a_runtime *rt) {
  t4a_status s = t4a_runtime_create(o, rt);
  if (s == T4A_SUCCESS) track(*rt);
  return s;
}

static t4a_runtime_options options_for(int ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.device_ordinal = ordinal;
  return o;
}

static t4a_runtime create_on(int ordinal) {
  t4a_runtime_options o = options_for(ordinal);
  t4a_runtime rt = {T4A_NULL_ID};
  ASSERT_OK(create(&o, &rt));
  assert_true(rt.id != T4A_NULL_ID);
  return rt;
}

static t4a_runtime_info info_of(t4a_runtime rt) {
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  return info;
}

static t4a_runtime_stats stats_of(t4a_runtime rt) {
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st));
  return st;
}

/* The pool's release threshold as the driver reports it. */
static uint64_t pool_threshold(const t4a_runtime_info *info) {
  CUcontext saved = gpu_current();
  gpu_set_current((CUcontext)info->context);
  cuuint64_t v = 0;
  CUresult r = gpu_cu.cuMemPoolGetAttribute(
      (CUmemoryPool)info->memory_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
  gpu_set_current(saved);
  if (r != CUDA_SUCCESS)
    fail_msg("cuMemPoolGetAttribute(RELEASE_THRESHOLD) returned %s",
             gpu_error_name(r));
  return (uint64_t)v;
}

static int64_t calls(const char *entry) {
  int64_t n = t4a_testing_call_count(entry);
  if (n < 0) fail_msg("t4a_testing_call_count does not know '%s'", entry);
  return n;
}

/* Log capture (warnings and errors). */
static char g_log[16384];
static int g_log_count;

static void capture_log(void *user, int32_t level, const char *message) {
  (void)user;
  if (level > T4A_LOG_WARN) return;
  ++g_log_count;
  size_t used = strlen(g_log);
  snprintf(g_log + used, sizeof g_log - used, "%s\n", message);
}

static void log_capture_start(void) {
  g_log[0] = '\0';
  g_log_count = 0;
  ASSERT_OK(t4a_set_log_callback(capture_log, NULL, T4A_LOG_WARN));
}

static void log_capture_stop(void) {
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
}

/* Every test starts and ends with no current context, no fault rule, no
 * counting and the default logger. */
static int setup(void **state) {
  (void)state;
  gpu_set_current(NULL);
  t4a_testing_fault_reset();
  t4a_last_error_clear();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  t4a_testing_fault_reset();
  for (int i = 0; i < g_ntracked; ++i) (void)t4a_runtime_destroy(g_tracked[i]);
  g_ntracked = 0;
  t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN);
  gpu_set_current(NULL);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

static int attr(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  CUresult r = gpu_cu.cuDeviceGetAttribute(&v, a, dev);
  if (r != CUDA_SUCCESS)
    fail_msg("cuDeviceGetAttribute(%d) returned %s", (int)a, gpu_error_name(r));
  return v;
}

/* Device discovery: count, driver version and every device's info equal what
 * the driver itself reports, and are sane for a device t4acuda supports. */
static void test_device_discovery(void **state) {
  (void)state;
  int32_t count = -1;
  ASSERT_OK(t4a_device_count(&count));
  int drv_count = -1;
  assert_int_equal(gpu_cu.cuDeviceGetCount(&drv_count), CUDA_SUCCESS);
  assert_int_equal(count, drv_count);
  assert_int_equal(count, g_devices);
  assert_true(count >= 1);

  int32_t version = -1;
  ASSERT_OK(t4a_driver_version(&version));
  int drv_version = -1;
  assert_int_equal(gpu_cu.cuDriverGetVersion(&drv_version), CUDA_SUCCESS);
  assert_int_equal(version, drv_version);
  assert_true(version >= 12000);
  assert_int_equal(t4a_built_cuda_version(), CUDA_VERSION);

  for (int i = 0; i < count; ++i) {
    t4a_device_info info = T4A_DEVICE_INFO_INIT;
    ASSERT_OK(t4a_device_info_get(i, &info));
    CUdevice dev = gpu_device(i);
    char name[T4A_DEVICE_NAME_CAPACITY];
    assert_int_equal(gpu_cu.cuDeviceGetName(name, sizeof name - 1, dev),
                     CUDA_SUCCESS);
    name[sizeof name - 1] = '\0';
    size_t total = 0;
    assert_int_equal(gpu_cu.cuDeviceTotalMem(&total, dev), CUDA_SUCCESS);
    CUuuid uuid;
    assert_int_equal(gpu_cu.cuDeviceGetUuid(&uuid, dev), CUDA_SUCCESS);

    print_message("device %d: %s, cc %d.%d, %d SMs, %llu bytes\n", i, info.name,
                  (int)info.cc_major, (int)info.cc_minor,
                  (int)info.multiprocessor_count,
                  (unsigned long long)info.total_memory_bytes);
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(info.ordinal, i);
    assert_true(info.name[0] != '\0');
    assert_string_equal(info.name, name);
    assert_memory_equal(info.uuid, uuid.bytes, sizeof info.uuid);
    static const uint8_t zero_uuid[16];
    assert_memory_not_equal(info.uuid, zero_uuid, sizeof zero_uuid);
    assert_int_equal(info.total_memory_bytes, (uint64_t)total);
    assert_true(info.total_memory_bytes > 0);
    assert_true(info.cc_major >= 7);
    assert_int_equal(info.cc_major,
                     attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    assert_int_equal(info.cc_minor,
                     attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    assert_true(info.multiprocessor_count > 0);
    assert_int_equal(info.multiprocessor_count,
                     attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    assert_int_equal(info.clock_rate_khz,
                     attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
    assert_int_equal(info.warp_size, 32);
    assert_int_equal(info.max_threads_per_block, 1024);
    assert_int_equal(info.max_block_dim[0], 1024);
    assert_int_equal(info.max_block_dim[1], 1024);
    assert_int_equal(info.max_block_dim[2], 64);
    assert_int_equal(info.max_grid_dim[0],
                     attr(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X));
    assert_int_equal(info.max_grid_dim[1],
                     attr(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y));
    assert_int_equal(info.max_grid_dim[2],
                     attr(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z));
    assert_int_equal(info.max_shared_per_block, 48 * 1024);
    assert_int_equal(
        info.max_shared_per_block_optin,
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    assert_true(info.max_shared_per_block_optin >= info.max_shared_per_block);
    assert_int_equal(info.max_registers_per_block,
                     attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK));
    assert_int_equal(
        info.max_threads_per_multiprocessor,
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
    assert_int_equal(info.pci_domain_id,
                     attr(dev, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
    assert_int_equal(info.pci_bus_id,
                     attr(dev, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID));
    assert_int_equal(info.pci_device_id,
                     attr(dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
    assert_int_equal(info.memory_pools_supported, 1);
    assert_int_equal(info.unified_addressing, 1);
    assert_int_equal(info.cooperative_launch,
                     attr(dev, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH));
  }

  /* An older, smaller info struct is filled only up to its size. */
  struct {
    t4a_device_info info;
    unsigned char guard[8];
  } small;
  memset(&small, 0xA5, sizeof small);
  small.info.struct_size = (uint32_t)offsetof(t4a_device_info, uuid);
  ASSERT_OK(t4a_device_info_get(0, &small.info));
  assert_int_equal(small.info.struct_size, offsetof(t4a_device_info, uuid));
  assert_int_equal(small.info.ordinal, 0);
  assert_true(small.info.name[0] != '\0');
  const unsigned char *raw = (const unsigned char *)&small;
  for (size_t k = offsetof(t4a_device_info, uuid); k < sizeof small; ++k)
    assert_int_equal(raw[k], 0xA5);

  /* Out of range. */
  t4a_device_info bad = T4A_DEVICE_INFO_INIT;
  bad.ordinal = 12345;
  ASSERT_STATUS(t4a_device_info_get(count, &bad), T4A_ERROR_NO_DEVICE);
  assert_int_equal(bad.ordinal, 12345); /* untouched */
  ASSERT_STATUS(t4a_device_info_get(-1, &bad), T4A_ERROR_NO_DEVICE);
}

/* ------------------------------------------------------------------------ */
/* Runtimes                                                                  */
/* ------------------------------------------------------------------------ */

/* A runtime on every device; its info matches the device, its
 * context is the device's primary context, its stream is non-blocking, its
 * domain id is fresh; destroy releases everything. */
static void test_create_destroy_every_device(void **state) {
  (void)state;
  uint64_t domains[MAX_DEVICES + 1];
  int ndomains = 0;
  uint64_t live0 = t4a_testing_live_handles();
  for (int i = 0; i < g_devices && i < MAX_DEVICES; ++i) {
    CUcontext primary = gpu_primary_retain(i);
    t4a_runtime rt = create_on(i);
    assert_int_equal(t4a_testing_live_handles(), live0 + 1);
    t4a_runtime_info info = info_of(rt);
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(info.device_ordinal, i);
    assert_ptr_equal(info.context, primary);
    assert_non_null(info.stream);
    assert_non_null(info.memory_pool);
    assert_true(info.domain_id != 0);
    for (int k = 0; k < ndomains; ++k)
      assert_true(info.domain_id != domains[k]);
    domains[ndomains++] = info.domain_id;
    assert_true(info.pool_release_threshold == T4A_POOL_KEEP_ALL);

    unsigned int flags = 0xFFFF;
    gpu_set_current(primary);
    assert_int_equal(gpu_cu.cuStreamGetFlags((CUstream)info.stream, &flags),
                     CUDA_SUCCESS);
    gpu_set_current(NULL);
    assert_int_equal(flags & CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);

    t4a_runtime_stats st = stats_of(rt);
    assert_int_equal(st.host_waits, 0);
    assert_int_equal(st.trims, 0);
    ASSERT_OK(t4a_runtime_synchronize(rt));
    ASSERT_OK(t4a_runtime_destroy(rt));
    assert_int_equal(t4a_testing_live_handles(), live0);
    ASSERT_CURRENT(NULL);
    gpu_primary_release(i);
    /* Nobody retains the primary context any more: the runtime's reference
     * was released. */
    assert_int_equal(gpu_primary_active(i), 0);
  }

  /* NULL options: the defaults (device 0, keep-all pool). */
  t4a_runtime rt = {T4A_NULL_ID};
  ASSERT_OK(create(NULL, &rt));
  t4a_runtime_info info = info_of(rt);
  assert_int_equal(info.device_ordinal, 0);
  assert_true(info.pool_release_threshold == T4A_POOL_KEEP_ALL);
  for (int k = 0; k < ndomains; ++k) assert_true(info.domain_id != domains[k]);
  ASSERT_OK(t4a_runtime_destroy(rt));
  ASSERT_CURRENT(NULL);
}

/* Two runtimes of one ordinal are independent (stream, pool,
 * domain) and share the device's primary context. */
static void test_two_runtimes_one_ordinal(void **state) {
  (void)state;
  CUcontext primary = gpu_primary_retain(0);
  t4a_runtime a = create_on(0);
  t4a_runtime b = create_on(0);
  assert_true(a.id != b.id);
  t4a_runtime_info ia = info_of(a);
  t4a_runtime_info ib = info_of(b);
  assert_ptr_not_equal(ia.stream, ib.stream);
  assert_ptr_not_equal(ia.memory_pool, ib.memory_pool);
  assert_true(ia.domain_id != ib.domain_id);
  assert_ptr_equal(ia.context, ib.context);
  assert_ptr_equal(ia.context, primary);
  /* Each works on its own. */
  ASSERT_OK(t4a_runtime_synchronize(a));
  ASSERT_OK(t4a_runtime_synchronize(b));
  ASSERT_OK(t4a_runtime_destroy(a));
  /* b is untouched by a's destruction. */
  t4a_runtime_info ib2 = info_of(b);
  assert_memory_equal(&ib, &ib2, sizeof ib);
  ASSERT_OK(t4a_runtime_synchronize(b));
  ASSERT_OK(t4a_runtime_trim(b));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_CURRENT(NULL);
  gpu_primary_release(0);
}

/* Runtime counters: host_waits and trims are counted exactly where they
 * happen. */
static void test_counters_exact(void **state) {
  (void)state;
  t4a_runtime rt = create_on(0);
  t4a_runtime_stats st = stats_of(rt);
  assert_int_equal(st.struct_size, sizeof st);
  assert_int_equal(st.host_waits, 0);
  assert_int_equal(st.trims, 0);
  for (int k = 0; k < 3; ++k) ASSERT_OK(t4a_runtime_synchronize(rt));
  st = stats_of(rt);
  assert_int_equal(st.host_waits, 3);
  assert_int_equal(st.trims, 0);
  ASSERT_OK(t4a_runtime_trim(rt));
  st = stats_of(rt);
  assert_int_equal(st.host_waits, 3); /* trim does not wait */
  assert_int_equal(st.trims, 1);
  ASSERT_OK(t4a_runtime_trim(rt));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  st = stats_of(rt);
  assert_int_equal(st.host_waits, 4);
  assert_int_equal(st.trims, 2);
  /* Reading stats and info waits for nothing. */
  (void)info_of(rt);
  assert_int_equal(stats_of(rt).host_waits, 4);

  /* An older stats struct that knows only host_waits: trims untouched. */
  t4a_runtime_stats old;
  memset(&old, 0x5A, sizeof old);
  old.struct_size = (uint32_t)offsetof(t4a_runtime_stats, trims);
  ASSERT_OK(t4a_runtime_stats_get(rt, &old));
  assert_int_equal(old.struct_size, offsetof(t4a_runtime_stats, trims));
  assert_int_equal(old.host_waits, 4);
  assert_int_equal(old.trims, 0x5A5A5A5A5A5A5A5AULL);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* The pool release threshold from options reaches the
 * driver's pool; an older options struct takes the default. */
static void test_pool_release_threshold(void **state) {
  (void)state;
  /* Default via NULL options and via the INIT macro. */
  t4a_runtime rt = {T4A_NULL_ID};
  ASSERT_OK(create(NULL, &rt));
  t4a_runtime_info info = info_of(rt);
  assert_true(info.pool_release_threshold == T4A_POOL_KEEP_ALL);
  assert_true(pool_threshold(&info) == T4A_POOL_KEEP_ALL);
  ASSERT_OK(t4a_runtime_destroy(rt));

  /* The INIT macro holds 0, which means the default (keep all). */
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  assert_true(o.pool_release_threshold == 0);
  assert_int_equal(o.device_ordinal, 0);
  ASSERT_OK(create(&o, &rt));
  info = info_of(rt);
  assert_true(info.pool_release_threshold == T4A_POOL_KEEP_ALL);
  assert_true(pool_threshold(&info) == T4A_POOL_KEEP_ALL);
  ASSERT_OK(t4a_runtime_destroy(rt));
  o.pool_release_threshold = T4A_POOL_KEEP_ALL;
  ASSERT_OK(create(&o, &rt));
  info = info_of(rt);
  assert_true(pool_threshold(&info) == T4A_POOL_KEEP_ALL);
  ASSERT_OK(t4a_runtime_destroy(rt));

  /* A custom threshold on every device. */
  for (int i = 0; i < g_devices; ++i) {
    o = options_for(i);
    o.pool_release_threshold = 123456789u;
    ASSERT_OK(create(&o, &rt));
    info = info_of(rt);
    assert_int_equal(info.device_ordinal, i);
    assert_int_equal(info.pool_release_threshold, 123456789u);
    assert_int_equal(pool_threshold(&info), 123456789u);
    ASSERT_OK(t4a_runtime_destroy(rt));
  }

  /* T4A_POOL_RELEASE_ALL asks the driver for exactly 0 (release
   * everything at each sync). */
  o = options_for(0);
  o.pool_release_threshold = T4A_POOL_RELEASE_ALL;
  ASSERT_OK(create(&o, &rt));
  info = info_of(rt);
  assert_int_equal(info.pool_release_threshold, 0);
  assert_int_equal(pool_threshold(&info), 0);
  ASSERT_OK(t4a_runtime_destroy(rt));

  /* An older options struct without the threshold: whatever lies beyond
   * its size is ignored and the default applies. */
  o = options_for(g_devices - 1);
  o.struct_size =
      (uint32_t)offsetof(t4a_runtime_options, pool_release_threshold);
  o.pool_release_threshold = 4242;
  ASSERT_OK(create(&o, &rt));
  info = info_of(rt);
  assert_int_equal(info.device_ordinal, g_devices - 1);
  assert_true(info.pool_release_threshold == T4A_POOL_KEEP_ALL);
  assert_true(pool_threshold(&info) == T4A_POOL_KEEP_ALL);
  ASSERT_OK(t4a_runtime_destroy(rt));

  /* A newer options struct with a zero tail is accepted. */
  struct {
    t4a_runtime_options o;
    uint64_t future;
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.o = options_for(0);
  newer.o.struct_size = (uint32_t)sizeof newer;
  newer.o.pool_release_threshold = 987654321u;
  ASSERT_OK(create(&newer.o, &rt));
  info = info_of(rt);
  assert_int_equal(pool_threshold(&info), 987654321u);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* An ordinal out of range is NO_DEVICE naming the field and the
 * device count; nothing is created, the out-handle is untouched. */
static void test_invalid_ordinal(void **state) {
  (void)state;
  const int32_t bad[] = {-1, g_devices, g_devices + 7, INT32_MIN};
  uint64_t live0 = t4a_testing_live_handles();
  t4a_testing_count_calls(1);
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    t4a_runtime_options o = options_for(bad[k]);
    t4a_runtime rt = {0xABCDEF12345ULL};
    ASSERT_STATUS(t4a_runtime_create(&o, &rt), T4A_ERROR_NO_DEVICE);
    assert_int_equal(rt.id, 0xABCDEF12345ULL);
    char ordinal[32];
    snprintf(ordinal, sizeof ordinal, "%d", (int)bad[k]);
    CHECK_LAST_ERROR(T4A_ERROR_NO_DEVICE, 0, "t4a_runtime_create",
                     "device_ordinal", ordinal);
    const char *msg = last_message();
    if (!contains_number(msg, g_devices))
      fail_msg("message does not name the device count %d: %s", g_devices, msg);
    assert_int_equal(t4a_testing_live_handles(), live0);
  }
  /* No context was retained or created for any of them. */
  assert_int_equal(calls("cuDevicePrimaryCtxRetain"), 0);
  assert_int_equal(calls("cuStreamCreate"), 0);
  assert_int_equal(calls("cuMemPoolCreate"), 0);
  ASSERT_CURRENT(NULL);
}

/* A released handle and forged handles are INVALID_HANDLE on
 * every runtime function; out-params stay untouched. */
static void check_rejected(t4a_runtime rt) {
  ASSERT_STATUS(t4a_runtime_synchronize(rt), T4A_ERROR_INVALID_HANDLE);
  CHECK_LAST_ERROR(T4A_ERROR_INVALID_HANDLE, 0, "t4a_runtime_synchronize",
                   "runtime");
  ASSERT_STATUS(t4a_runtime_trim(rt), T4A_ERROR_INVALID_HANDLE);
  CHECK_LAST_ERROR(T4A_ERROR_INVALID_HANDLE, 0, "t4a_runtime_trim", "runtime");
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  info.domain_id = 77;
  ASSERT_STATUS(t4a_runtime_info_get(rt, &info), T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(info.domain_id, 77);
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  st.host_waits = 99;
  ASSERT_STATUS(t4a_runtime_stats_get(rt, &st), T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(st.host_waits, 99);
  ASSERT_STATUS(t4a_runtime_destroy(rt), T4A_ERROR_INVALID_HANDLE);
  CHECK_LAST_ERROR(T4A_ERROR_INVALID_HANDLE, 0, "t4a_runtime_destroy",
                   "runtime");
}

static void test_released_and_forged_handles(void **state) {
  (void)state;
  uint64_t live0 = t4a_testing_live_handles();
  t4a_runtime keep = create_on(0);
  t4a_runtime rt = create_on(0);
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(t4a_testing_live_handles(), live0 + 1);
  check_rejected(rt);
  /* Forged: the released slot's next generation; a live runtime's id with
   * another kind; an object of another kind; garbage. */
  check_rejected((t4a_runtime){rt.id + (1ULL << 32)});
  check_rejected((t4a_runtime){(keep.id & ~(0xFFULL << 56)) | (0x7EULL << 56)});
  check_rejected((t4a_runtime){0x1234});
  check_rejected((t4a_runtime){UINT64_MAX});
  uint64_t obj = 0;
  ASSERT_OK(t4a_testing_object_create(5, &obj));
  check_rejected((t4a_runtime){obj});
  ASSERT_OK(t4a_testing_object_release(obj));
  /* A new runtime may reuse the slot; the old handle still fails. */
  t4a_runtime again = create_on(0);
  assert_true(again.id != rt.id);
  check_rejected(rt);
  ASSERT_OK(t4a_runtime_synchronize(again));
  ASSERT_OK(t4a_runtime_destroy(again));
  /* The survivor was never disturbed. */
  ASSERT_OK(t4a_runtime_synchronize(keep));
  assert_int_equal(stats_of(keep).host_waits, 1);
  ASSERT_OK(t4a_runtime_destroy(keep));
  /* Destroying the null handle is a successful no-op. */
  ASSERT_OK(t4a_runtime_destroy((t4a_runtime){T4A_NULL_ID}));
  assert_int_equal(t4a_testing_live_handles(), live0);
  ASSERT_CURRENT(NULL);
}

/* ------------------------------------------------------------------------ */
/* Current context                                                          */
/* ------------------------------------------------------------------------ */

/* Runs `call`, checks its status, then checks that `expect` is still
 * current. */
#define KEEP_STATUS(call, want)                                                \
  do {                                                                         \
    ASSERT_STATUS(call, want);                                                 \
    CUcontext cur_ = gpu_current();                                            \
    if (cur_ != expect)                                                        \
      fail_msg("%s left context %p current; the caller had %p", #call,         \
               (void *)cur_, (void *)expect);                                  \
  } while (0)

#define KEEP(call)                                                             \
  do {                                                                         \
    (void)(call);                                                              \
    CUcontext cur_ = gpu_current();                                            \
    if (cur_ != expect)                                                        \
      fail_msg("%s left context %p current; the caller had %p", #call,         \
               (void *)cur_, (void *)expect);                                  \
  } while (0)

/* Calls every t4a_ function, succeeding and failing, and checks after each
 * that `expect` (which the caller made current) is still current. */
static void every_call_keeps(CUcontext expect) {
  assert_ptr_equal(gpu_current(), expect);
  /* Context-free functions. */
  KEEP(t4a_version());
  KEEP(t4a_version_string());
  KEEP(t4a_status_name(T4A_ERROR_DEVICE_FAULT));
  KEEP(t4a_status_description(T4A_ERROR_DEVICE_FAULT));
  KEEP(t4a_built_cuda_version());
  KEEP(t4a_last_error_clear());
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  KEEP_STATUS(t4a_last_error(&ei), T4A_SUCCESS);
  char buf[64];
  size_t needed = 0;
  KEEP_STATUS(t4a_last_error_message(buf, sizeof buf, &needed), T4A_SUCCESS);
  KEEP_STATUS(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  int32_t major = 0, minor = 0;
  KEEP(t4a_nvrtc_version(&major, &minor)); /* NVRTC may be absent */

  /* Devices. */
  int32_t v = 0;
  KEEP_STATUS(t4a_driver_version(&v), T4A_SUCCESS);
  KEEP_STATUS(t4a_driver_version(NULL), T4A_ERROR_INVALID_ARGUMENT);
  int32_t count = 0;
  KEEP_STATUS(t4a_device_count(&count), T4A_SUCCESS);
  assert_int_equal(count, g_devices);
  KEEP_STATUS(t4a_device_count(NULL), T4A_ERROR_INVALID_ARGUMENT);
  for (int i = 0; i < count; ++i) {
    t4a_device_info info = T4A_DEVICE_INFO_INIT;
    KEEP_STATUS(t4a_device_info_get(i, &info), T4A_SUCCESS);
    for (int j = 0; j < count; ++j) {
      int32_t can = -1;
      KEEP_STATUS(t4a_device_can_access_peer(i, j, &can), T4A_SUCCESS);
    }
  }
  t4a_device_info info = T4A_DEVICE_INFO_INIT;
  KEEP_STATUS(t4a_device_info_get(count, &info), T4A_ERROR_NO_DEVICE);
  KEEP_STATUS(t4a_device_info_get(0, NULL), T4A_ERROR_INVALID_ARGUMENT);
  int32_t can = 0;
  KEEP_STATUS(t4a_device_can_access_peer(0, count, &can), T4A_ERROR_NO_DEVICE);
  KEEP_STATUS(t4a_device_can_access_peer(-1, 0, &can), T4A_ERROR_NO_DEVICE);
  KEEP_STATUS(t4a_device_can_access_peer(0, 0, NULL),
              T4A_ERROR_INVALID_ARGUMENT);

  /* Runtimes: one from NULL options, one per device. */
  t4a_runtime def = {T4A_NULL_ID};
  KEEP_STATUS(create(NULL, &def), T4A_SUCCESS);
  t4a_runtime rts[MAX_DEVICES];
  int n = count < MAX_DEVICES ? count : MAX_DEVICES;
  for (int i = 0; i < n; ++i) {
    t4a_runtime_options o = options_for(i);
    KEEP_STATUS(create(&o, &rts[i]), T4A_SUCCESS);
  }
  /* Failing creates. */
  t4a_runtime none = {T4A_NULL_ID};
  t4a_runtime_options o = options_for(count);
  KEEP_STATUS(t4a_runtime_create(&o, &none), T4A_ERROR_NO_DEVICE);
  o = options_for(-1);
  KEEP_STATUS(t4a_runtime_create(&o, &none), T4A_ERROR_NO_DEVICE);
  o = options_for(0);
  o.struct_size = 2;
  KEEP_STATUS(t4a_runtime_create(&o, &none), T4A_ERROR_INVALID_ARGUMENT);
  struct {
    t4a_runtime_options o;
    uint64_t future;
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.o = options_for(0);
  newer.o.struct_size = (uint32_t)sizeof newer;
  newer.future = 1;
  KEEP_STATUS(t4a_runtime_create(&newer.o, &none), T4A_ERROR_VERSION_MISMATCH);
  KEEP_STATUS(t4a_runtime_create(NULL, NULL), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(none.id, T4A_NULL_ID);

  /* Every runtime operation, on every runtime. */
  for (int i = -1; i < n; ++i) {
    t4a_runtime rt = i < 0 ? def : rts[i];
    t4a_runtime_info ri = T4A_RUNTIME_INFO_INIT;
    KEEP_STATUS(t4a_runtime_info_get(rt, &ri), T4A_SUCCESS);
    KEEP_STATUS(t4a_runtime_info_get(rt, NULL), T4A_ERROR_INVALID_ARGUMENT);
    t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
    KEEP_STATUS(t4a_runtime_stats_get(rt, &st), T4A_SUCCESS);
    KEEP_STATUS(t4a_runtime_stats_get(rt, NULL), T4A_ERROR_INVALID_ARGUMENT);
    KEEP_STATUS(t4a_runtime_synchronize(rt), T4A_SUCCESS);
    KEEP_STATUS(t4a_runtime_trim(rt), T4A_SUCCESS);
  }
  /* Forged handles on every runtime function. */
  t4a_runtime forged = {0x1234};
  t4a_runtime_info ri = T4A_RUNTIME_INFO_INIT;
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  KEEP_STATUS(t4a_runtime_info_get(forged, &ri), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_stats_get(forged, &st), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_synchronize(forged), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_trim(forged), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_destroy(forged), T4A_ERROR_INVALID_HANDLE);
  /* Destroy (the last ones release the primary contexts), then released
   * handles. */
  KEEP_STATUS(t4a_runtime_destroy(def), T4A_SUCCESS);
  for (int i = 0; i < n; ++i)
    KEEP_STATUS(t4a_runtime_destroy(rts[i]), T4A_SUCCESS);
  KEEP_STATUS(t4a_runtime_destroy(def), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_synchronize(def), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_trim(def), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_info_get(def, &ri), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_stats_get(def, &st), T4A_ERROR_INVALID_HANDLE);
  KEEP_STATUS(t4a_runtime_destroy((t4a_runtime){T4A_NULL_ID}), T4A_SUCCESS);
}

/* A separate context (cuCtxCreate) is current: every call leaves it. */
static void test_current_context_foreign(void **state) {
  (void)state;
  CUcontext own = gpu_context_create(0);
  assert_non_null(own);
  ASSERT_CURRENT(own);
  CUcontext primary = gpu_primary_retain(0);
  assert_ptr_not_equal(own, primary);
  every_call_keeps(own);
  /* The context is still usable after all of that. */
  assert_int_equal(gpu_alloc_free(1 << 20), CUDA_SUCCESS);
  gpu_primary_release(0);
  gpu_set_current(NULL);
  gpu_context_destroy(own);
}

/* No context is current: every call leaves none. */
static void test_current_context_none(void **state) {
  (void)state;
  ASSERT_CURRENT(NULL);
  every_call_keeps(NULL);
}

/* The primary context of the last device is current (held by the test):
 * every call leaves it, including calls on runtimes of other devices. */
static void test_current_context_primary(void **state) {
  (void)state;
  int last = g_devices - 1;
  CUcontext primary = gpu_primary_retain(last);
  gpu_set_current(primary);
  every_call_keeps(primary);
  assert_int_equal(gpu_alloc_free(1 << 20), CUDA_SUCCESS);
  gpu_set_current(NULL);
  gpu_primary_release(last);
}

/* Destroying runtime A while runtime B (same device) has the shared
 * primary context current leaves it current and usable. */
static void test_destroy_other_keeps_current(void **state) {
  (void)state;
  t4a_runtime a = create_on(0);
  t4a_runtime b = create_on(0);
  t4a_runtime_info ib = info_of(b);
  CUcontext ctx = (CUcontext)ib.context;
  assert_ptr_equal(info_of(a).context, ctx);
  gpu_set_current(ctx);
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_CURRENT(ctx);
  assert_int_equal(gpu_primary_active(0), 1);
  ASSERT_OK(t4a_runtime_synchronize(b));
  ASSERT_CURRENT(ctx);
  /* The test's own driver calls work in that current context. */
  assert_int_equal(gpu_alloc_free(4 << 20), CUDA_SUCCESS);
  ASSERT_OK(t4a_runtime_trim(b));
  assert_int_equal(stats_of(b).host_waits, 1);
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_CURRENT(ctx);
  gpu_set_current(NULL);
}

/* Destroying the last runtime while its primary context
 * is current leaves the same handle current (never NULL), although the
 * primary context is now released by everyone. */
static void test_destroy_last_keeps_current(void **state) {
  (void)state;
  t4a_runtime rt = create_on(0);
  CUcontext ctx = (CUcontext)info_of(rt).context;
  assert_non_null(ctx);
  gpu_set_current(ctx);
  ASSERT_OK(t4a_runtime_destroy(rt));
  ASSERT_CURRENT(ctx);
  /* The runtime held the only reference. */
  assert_int_equal(gpu_primary_active(0), 0);
  gpu_set_current(NULL);
  /* A new runtime retains the primary context again and works. */
  rt = create_on(0);
  CUcontext primary = gpu_primary_retain(0);
  assert_ptr_equal(info_of(rt).context, primary);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  ASSERT_OK(t4a_runtime_destroy(rt));
  gpu_primary_release(0);
  ASSERT_CURRENT(NULL);
}

/* ------------------------------------------------------------------------ */
/* Fault injection ("a failed create creates nothing")                      */
/* ------------------------------------------------------------------------ */

static void arm(const char *entry, uint64_t nth, CUresult result, int mode) {
  ASSERT_OK(t4a_testing_fault_arm(entry, nth, (int32_t)result, mode));
}

/* A create whose `entry` fails with `result` (the caller's own context
 * current): the status; the last error naming the entry point and the
 * CUresult; the out-handle untouched; nothing leaked: as many primary
 * context releases as retains, `streams` and `pools` destroyed (those
 * created before the failure), no live handle; the caller's context kept. */
static void create_fails(const char *entry, CUresult result, t4a_status status,
                         int64_t streams, int64_t pools) {
  CUcontext own = gpu_context_create(0);
  uint64_t live0 = t4a_testing_live_handles();
  t4a_testing_count_calls(1);
  arm(entry, 1, result, T4A_TESTING_FAULT_INSTEAD);
  t4a_runtime rt = {0x5151515151ULL};
  ASSERT_STATUS(t4a_runtime_create(NULL, &rt), status);
  CHECK_LAST_ERROR(status, (int32_t)result, "t4a_runtime_create", entry,
                   gpu_error_name(result));
  assert_int_equal(rt.id, 0x5151515151ULL);
  assert_int_equal(t4a_testing_live_handles(), live0);
  assert_int_equal(calls(entry), 1);
  assert_int_equal(calls("cuDevicePrimaryCtxRetain"), 1);
  assert_int_equal(calls("cuDevicePrimaryCtxRelease"), 1);
  assert_int_equal(calls("cuStreamDestroy"), streams);
  assert_int_equal(calls("cuMemPoolDestroy"), pools);
  ASSERT_CURRENT(own);
  /* The rule fired once: the next create works. */
  t4a_testing_fault_reset();
  ASSERT_OK(create(NULL, &rt));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  ASSERT_OK(t4a_runtime_destroy(rt));
  ASSERT_CURRENT(own);
  assert_int_equal(t4a_testing_live_handles(), live0);
  gpu_set_current(NULL);
  gpu_context_destroy(own);
}

static void test_fault_stream_create(void **state) {
  (void)state;
  /* No stream was created, so none is destroyed; no pool was tried. */
  create_fails("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY,
               T4A_ERROR_OUT_OF_MEMORY, 0, 0);
}

static void test_fault_pool_create(void **state) {
  (void)state;
  create_fails("cuMemPoolCreate", CUDA_ERROR_OUT_OF_MEMORY,
               T4A_ERROR_OUT_OF_MEMORY, 1, 0);
}

static void test_fault_pool_set_attribute(void **state) {
  (void)state;
  create_fails("cuMemPoolSetAttribute", CUDA_ERROR_INVALID_VALUE,
               T4A_ERROR_DRIVER, 1, 1);
}

static void test_fault_primary_retain(void **state) {
  (void)state;
  uint64_t live0 = t4a_testing_live_handles();
  t4a_testing_count_calls(1);
  arm("cuDevicePrimaryCtxRetain", 1, CUDA_ERROR_OUT_OF_MEMORY,
      T4A_TESTING_FAULT_INSTEAD);
  t4a_runtime rt = {T4A_NULL_ID};
  ASSERT_STATUS(t4a_runtime_create(NULL, &rt), T4A_ERROR_OUT_OF_MEMORY);
  CHECK_LAST_ERROR(T4A_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY,
                   "t4a_runtime_create", "cuDevicePrimaryCtxRetain");
  /* Not retained, so not released. */
  assert_int_equal(calls("cuDevicePrimaryCtxRelease"), 0);
  assert_int_equal(calls("cuStreamCreate"), 0);
  assert_int_equal(t4a_testing_live_handles(), live0);
  assert_int_equal(rt.id, T4A_NULL_ID);
  ASSERT_CURRENT(NULL);
}

/* A destroy whose drain fails with a sticky error reports
 * DEVICE_FAULT, releases the handle, and leaks (never frees) the stream,
 * the pool and the context reference, logging it. */
static void test_fault_destroy_failed_drain(void **state) {
  (void)state;
  uint64_t live0 = t4a_testing_live_handles();
  t4a_runtime rt = create_on(0);
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  log_capture_start();
  arm("cuStreamSynchronize", 1, CUDA_ERROR_LAUNCH_FAILED,
      T4A_TESTING_FAULT_AFTER);
  ASSERT_STATUS(t4a_runtime_destroy(rt), T4A_ERROR_DEVICE_FAULT);
  log_capture_stop();
  CHECK_LAST_ERROR(T4A_ERROR_DEVICE_FAULT, CUDA_ERROR_LAUNCH_FAILED,
                   "t4a_runtime_destroy", "cuStreamSynchronize",
                   "CUDA_ERROR_LAUNCH_FAILED");
  assert_int_equal(calls("cuStreamSynchronize"), 1);
  assert_int_equal(calls("cuStreamDestroy"), 0);
  assert_int_equal(calls("cuMemPoolDestroy"), 0);
  assert_int_equal(calls("cuDevicePrimaryCtxRelease"), 0);
  /* The leak is said, not silent. */
  if (strstr(g_log, "leak") == NULL)
    fail_msg("no warning about the leak was logged; log: %s", g_log);
  /* The handle is released anyway. */
  assert_int_equal(t4a_testing_live_handles(), live0);
  ASSERT_STATUS(t4a_runtime_synchronize(rt), T4A_ERROR_INVALID_HANDLE);
  ASSERT_STATUS(t4a_runtime_destroy(rt), T4A_ERROR_INVALID_HANDLE);
  ASSERT_CURRENT(NULL);
  /* The device is fine (the fault was injected): new runtimes work. */
  t4a_runtime again = create_on(0);
  ASSERT_OK(t4a_runtime_synchronize(again));
  ASSERT_OK(t4a_runtime_destroy(again));
}

/* A sticky error marks the runtime broken: its later operations
 * return DEVICE_FAULT naming the original fault without calling the driver;
 * another runtime of the same device stays usable. */
static void test_fault_sticky_runtime(void **state) {
  (void)state;
  t4a_runtime bad = create_on(0);
  t4a_runtime good = create_on(0);
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  log_capture_start();
  arm("cuStreamSynchronize", 1, CUDA_ERROR_LAUNCH_FAILED,
      T4A_TESTING_FAULT_AFTER);
  ASSERT_STATUS(t4a_runtime_synchronize(bad), T4A_ERROR_DEVICE_FAULT);
  CHECK_LAST_ERROR(T4A_ERROR_DEVICE_FAULT, CUDA_ERROR_LAUNCH_FAILED,
                   "t4a_runtime_synchronize", "cuStreamSynchronize",
                   "CUDA_ERROR_LAUNCH_FAILED");
  assert_int_equal(calls("cuStreamSynchronize"), 1);
  assert_true(g_log_count >= 1); /* the fault is logged once, as an error */

  /* Later operations: DEVICE_FAULT with the original fault, no driver
   * call. */
  t4a_last_error_clear();
  ASSERT_STATUS(t4a_runtime_synchronize(bad), T4A_ERROR_DEVICE_FAULT);
  CHECK_LAST_ERROR(T4A_ERROR_DEVICE_FAULT, CUDA_ERROR_LAUNCH_FAILED,
                   "t4a_runtime_synchronize", "cuStreamSynchronize",
                   "CUDA_ERROR_LAUNCH_FAILED", "device 0");
  t4a_last_error_clear();
  ASSERT_STATUS(t4a_runtime_trim(bad), T4A_ERROR_DEVICE_FAULT);
  CHECK_LAST_ERROR(T4A_ERROR_DEVICE_FAULT, CUDA_ERROR_LAUNCH_FAILED,
                   "t4a_runtime_trim", "cuStreamSynchronize",
                   "CUDA_ERROR_LAUNCH_FAILED", "device 0");
  assert_int_equal(calls("cuStreamSynchronize"), 1);
  assert_int_equal(calls("cuMemPoolTrimTo"), 0);
  /* Only the real wait was counted; the trim was not done. */
  t4a_runtime_stats st = stats_of(bad);
  assert_int_equal(st.host_waits, 1);
  assert_int_equal(st.trims, 0);
  /* Info still works on a broken runtime. */
  assert_int_equal(info_of(bad).device_ordinal, 0);

  /* The other runtime is not broken by an injected fault. */
  ASSERT_OK(t4a_runtime_synchronize(good));
  ASSERT_OK(t4a_runtime_trim(good));
  assert_int_equal(calls("cuStreamSynchronize"), 2);
  assert_int_equal(calls("cuMemPoolTrimTo"), 1);

  /* Destroy: the broken one reports the fault and leaks; the good one is
   * freed. */
  ASSERT_STATUS(t4a_runtime_destroy(bad), T4A_ERROR_DEVICE_FAULT);
  CHECK_LAST_ERROR(T4A_ERROR_DEVICE_FAULT, CUDA_ERROR_LAUNCH_FAILED,
                   "t4a_runtime_destroy", "cuStreamSynchronize");
  assert_int_equal(calls("cuStreamDestroy"), 0);
  assert_int_equal(calls("cuMemPoolDestroy"), 0);
  assert_int_equal(calls("cuDevicePrimaryCtxRelease"), 0);
  ASSERT_OK(t4a_runtime_destroy(good));
  assert_int_equal(calls("cuStreamDestroy"), 1);
  assert_int_equal(calls("cuMemPoolDestroy"), 1);
  assert_int_equal(calls("cuDevicePrimaryCtxRelease"), 1);
  log_capture_stop();
  ASSERT_STATUS(t4a_runtime_synchronize(bad), T4A_ERROR_INVALID_HANDLE);
  ASSERT_CURRENT(NULL);
}

/* A non-sticky driver error is reported as DRIVER and does not break the
 * runtime. */
static void test_fault_non_sticky(void **state) {
  (void)state;
  t4a_runtime rt = create_on(0);
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  arm("cuStreamSynchronize", 1, CUDA_ERROR_INVALID_VALUE,
      T4A_TESTING_FAULT_INSTEAD);
  ASSERT_STATUS(t4a_runtime_synchronize(rt), T4A_ERROR_DRIVER);
  CHECK_LAST_ERROR(T4A_ERROR_DRIVER, CUDA_ERROR_INVALID_VALUE,
                   "t4a_runtime_synchronize", "cuStreamSynchronize",
                   "CUDA_ERROR_INVALID_VALUE");
  ASSERT_OK(t4a_runtime_synchronize(rt));
  ASSERT_OK(t4a_runtime_trim(rt));
  assert_int_equal(calls("cuStreamSynchronize"), 2);
  arm("cuMemPoolTrimTo", 1, CUDA_ERROR_INVALID_VALUE,
      T4A_TESTING_FAULT_INSTEAD);
  ASSERT_STATUS(t4a_runtime_trim(rt), T4A_ERROR_DRIVER);
  CHECK_LAST_ERROR(T4A_ERROR_DRIVER, CUDA_ERROR_INVALID_VALUE,
                   "t4a_runtime_trim", "cuMemPoolTrimTo");
  t4a_runtime_stats st = stats_of(rt);
  assert_int_equal(st.host_waits, 2);
  assert_int_equal(st.trims, 1); /* the failed trim is not counted */
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(calls("cuStreamDestroy"), 1);
  assert_int_equal(calls("cuMemPoolDestroy"), 1);
  assert_int_equal(calls("cuDevicePrimaryCtxRelease"), 1);
}

/* ------------------------------------------------------------------------ */

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(int argc, char **argv) {
  g_devices = gpu_lane_require(1);
  const char *group = argc > 1 ? argv[1] : "all";
  int all = strcmp(group, "all") == 0;
  int ran = 0;
  int failed = 0;
  if (all || strcmp(group, "basic") == 0) {
    const struct CMUnitTest basic[] = {
        T(test_device_discovery),
        T(test_create_destroy_every_device),
        T(test_two_runtimes_one_ordinal),
        T(test_counters_exact),
        T(test_pool_release_threshold),
        T(test_invalid_ordinal),
        T(test_released_and_forged_handles),
        T(test_current_context_foreign),
        T(test_current_context_none),
        T(test_current_context_primary),
        T(test_destroy_other_keeps_current),
        T(test_destroy_last_keeps_current),
    };
    failed +=
        cmocka_run_group_tests_name("runtime_gpu_basic", basic, NULL, NULL);
    ran = 1;
  }
  if (all || strcmp(group, "faults") == 0) {
    const struct CMUnitTest faults[] = {
        T(test_fault_stream_create),      T(test_fault_pool_create),
        T(test_fault_pool_set_attribute), T(test_fault_primary_retain),
        T(test_fault_non_sticky),         T(test_fault_destroy_failed_drain),
        T(test_fault_sticky_runtime),
    };
    failed +=
        cmocka_run_group_tests_name("runtime_gpu_faults", faults, NULL, NULL);
    ran = 1;
  }
  if (!ran) {
    fprintf(stderr, "unknown group '%s' (all, basic, faults)\n", group);
    return 2;
  }
  return failed == 0 ? 0 : 1;
}
