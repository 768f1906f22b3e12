/*
 * Host lane: t4acuda.h is self-contained, strict C11 (compiled with
 * -std=c11 -pedantic -Wall -Wextra -Werror) and links. Uses every *_INIT
 * macro (a test fails when the header gains one this file does not use)
 * and checks the defaults and layout they promise. Built twice: as is and
 * with T4A_EXPERIMENTAL defined (the experimental section compiles too).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include "t4acuda.h"        /* first: it must need nothing before it */
#include "t4acuda_dlpack.h" /* the DLPack header, also strict C11 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The experimental section is declared exactly when T4A_EXPERIMENTAL is
 * defined before the header (ctest header_c11_experimental defines it). */
#if defined(T4A_EXPERIMENTAL)
_Static_assert(T4A_EXPERIMENTAL_REVISION >= 1, "experimental revision");
/* Cooperative launches and grid barriers (issue 11). */
_Static_assert(T4A_LAUNCH_COOPERATIVE == 1u, "cooperative flag");
_Static_assert(offsetof(t4a_barrier_desc, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_barrier_audit, struct_size) == 0, "size first");
static const t4a_barrier_desc k_barrier_desc = T4A_BARRIER_DESC_INIT;
static const t4a_barrier_audit k_barrier_audit = T4A_BARRIER_AUDIT_INIT;
/* Launch attributes (issue 28). */
_Static_assert(T4A_EXPERIMENTAL_REVISION >= 4, "launch attributes");
_Static_assert(sizeof(t4a_launch_attrs) == 24, "no padding");
_Static_assert(sizeof(t4a_cluster_occupancy) == 16, "no padding");
static const t4a_launch_attrs k_launch_attrs = T4A_LAUNCH_ATTRS_INIT;
typedef t4a_cluster_occupancy cluster_occ;
static const cluster_occ k_cluster_occupancy = T4A_CLUSTER_OCCUPANCY_INIT;
#elif defined(T4A_EXPERIMENTAL_REVISION)
#error "experimental declarations are visible without T4A_EXPERIMENTAL"
#endif

/* ABI layout: handles are 8 bytes, statuses 32 bits, every struct starts
 * with its size. */
_Static_assert(sizeof(t4a_runtime) == 8, "handles are 8 bytes");
_Static_assert(sizeof(t4a_buffer) == 8, "handles are 8 bytes");
_Static_assert(sizeof(t4a_host_buffer) == 8, "handles are 8 bytes");
_Static_assert(sizeof(t4a_download) == 8, "handles are 8 bytes");
_Static_assert(sizeof(t4a_status) == 4, "t4a_status is 32 bits");
_Static_assert(T4A_NULL_ID == 0, "the null id is 0");
_Static_assert(offsetof(t4a_error_info, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_device_info, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_runtime_options, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_runtime_info, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_runtime_stats, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_buffer_info, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_process_stats, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_process_fault, struct_size) == 0, "size first");
_Static_assert(offsetof(t4a_raw_info, struct_size) == 0, "size first");
_Static_assert(sizeof(t4a_raw_info) == 4 + 4 + 2 * sizeof(void *),
               "t4a_raw_info has no padding");
/* No hidden padding in the structs of this version (reserved fields fill
 * the gaps), so a caller's zeroed struct has no indeterminate bytes and
 * the 64-bit fields are 8-byte aligned. */
_Static_assert(sizeof(t4a_runtime_options) ==
                   4 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 4 + 8 + 4 + 4 + 4 + 4,
               "t4a_runtime_options has no padding");
_Static_assert(offsetof(t4a_runtime_options, stream_priority) == 64,
               "the stream priority is appended");
_Static_assert(sizeof(t4a_runtime_info) == 4 + 4 + 8 + 3 * 8 + 8 + 4 + 4,
               "t4a_runtime_info has no padding");
_Static_assert(offsetof(t4a_runtime_options, peer_access) == 56,
               "the peer access mode is appended");
_Static_assert(offsetof(t4a_runtime_options, module_cache_entries) == 40,
               "the module cache fields are appended");
_Static_assert(offsetof(t4a_runtime_options, staging_bytes) == 16,
               "the 0.1.0 foundation fields come first, unchanged");
_Static_assert(sizeof(t4a_runtime_stats) == 4 + 4 + 36 * 8,
               "t4a_runtime_stats has no padding");
_Static_assert(offsetof(t4a_runtime_stats, trims) == 16,
               "the 0.1.0 foundation counters come first, unchanged");
_Static_assert(sizeof(t4a_buffer_info) == 4 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 4,
               "t4a_buffer_info has no padding");
_Static_assert(offsetof(t4a_buffer_info, flags) == 40, "flags appended");
/* DLPack 1.x ABI (LP64): the published sizes and offsets. */
_Static_assert(sizeof(DLPackVersion) == 8, "DLPackVersion");
_Static_assert(sizeof(DLDevice) == 8 && sizeof(DLDeviceType) == 4, "DLDevice");
_Static_assert(sizeof(DLDataType) == 4, "DLDataType");
_Static_assert(sizeof(DLTensor) == 48 && offsetof(DLTensor, byte_offset) == 40,
               "DLTensor");
_Static_assert(sizeof(DLManagedTensor) == 64 &&
                   offsetof(DLManagedTensor, deleter) == 56,
               "DLManagedTensor");
_Static_assert(sizeof(DLManagedTensorVersioned) == 80 &&
                   offsetof(DLManagedTensorVersioned, flags) == 24 &&
                   offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
               "DLManagedTensorVersioned");
_Static_assert(kDLCUDA == 2 && kDLCUDAManaged == 13 && kDLBool == 6 &&
                   kDLBfloat == 4,
               "DLPack enum values");
_Static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == 1 &&
                   DLPACK_FLAG_BITMASK_IS_COPIED == 2,
               "DLPack flags");
_Static_assert(sizeof(t4a_dlpack_desc) == 40, "t4a_dlpack_desc");
_Static_assert(offsetof(t4a_buffer_info, runtime) == 24, "layout");
_Static_assert(sizeof(t4a_process_stats) == 4 + 4 + 6 * 8,
               "t4a_process_stats has no padding");
_Static_assert(sizeof(t4a_process_fault) ==
                   4 + 4 + 4 + 4 + 8 + T4A_PROCESS_FAULT_OPERATION_BYTES,
               "t4a_process_fault has no padding");
_Static_assert(offsetof(t4a_process_fault, domain_id) == 16, "layout");
_Static_assert(T4A_PROCESS_FAULT_OPERATION_BYTES == 256,
               "T4A_PROCESS_FAULT_OPERATION_BYTES");
/* Constants are integer constant expressions with the documented values. */
_Static_assert(T4A_BUFFER_ZERO == 0x1u, "T4A_BUFFER_ZERO");
_Static_assert(T4A_DEFAULT_STAGING_BYTES == 64u * 1024u * 1024u,
               "default staging budget: 64 MiB");
_Static_assert(T4A_DEFAULT_STAGING_CHUNK_BYTES == 8u * 1024u * 1024u,
               "default staging chunk: 8 MiB");
_Static_assert(T4A_DEFAULT_STAGING_CHUNK_BYTES >= 4096 &&
                   T4A_DEFAULT_STAGING_CHUNK_BYTES <= T4A_DEFAULT_STAGING_BYTES,
               "the default chunk is valid for the default budget");
_Static_assert(T4A_STAGING_THREADS_AUTO == 0, "automatic thread count");
_Static_assert(T4A_VERSION_NUMBER == T4A_VERSION_MAJOR * 10000 +
                                         T4A_VERSION_MINOR * 100 +
                                         T4A_VERSION_PATCH,
               "version number");

/* Every initializer is a constant expression usable at file scope. */
static const t4a_error_info k_error_info = T4A_ERROR_INFO_INIT;
static const t4a_device_info k_device_info = T4A_DEVICE_INFO_INIT;
static const t4a_runtime_options k_runtime_options = T4A_RUNTIME_OPTIONS_INIT;
static const t4a_runtime_info k_runtime_info = T4A_RUNTIME_INFO_INIT;
static const t4a_runtime_stats k_runtime_stats = T4A_RUNTIME_STATS_INIT;
static const t4a_buffer_info k_buffer_info = T4A_BUFFER_INFO_INIT;
static const t4a_process_stats k_process_stats = T4A_PROCESS_STATS_INIT;
static const t4a_process_fault k_process_fault = T4A_PROCESS_FAULT_INIT;
static const t4a_raw_info k_raw_info = T4A_RAW_INFO_INIT;
static const t4a_dlpack_desc k_dlpack_desc = T4A_DLPACK_DESC_INIT;
static const t4a_compile_request k_compile_request = T4A_COMPILE_REQUEST_INIT;
static const t4a_artifact_info k_artifact_info = T4A_ARTIFACT_INFO_INIT;
static const t4a_compile_stats k_compile_stats = T4A_COMPILE_STATS_INIT;
/* The compile constants are usable where a constant is needed. */
_Static_assert(T4A_COMPILE_CUBIN == 0 && T4A_COMPILE_PTX == 1, "outputs");
_Static_assert((T4A_COMPILE_NO_MEMORY_CACHE & T4A_COMPILE_NO_DISK_CACHE) == 0,
               "distinct compile flags");
_Static_assert(T4A_DEFAULT_DISK_CACHE_BYTES == ((uint64_t)1 << 30),
               "1 GiB disk cache by default");
_Static_assert(T4A_ARTIFACT_KEY_CAPACITY == 65, "64 hex digits and a NUL");
_Static_assert(sizeof(t4a_compile_request) == 112, "no implicit padding");
/* Launch layer: handles, argument and descriptor layout. */
_Static_assert(sizeof(t4a_module) == 8 && sizeof(t4a_kernel) == 8 &&
                   sizeof(t4a_completion) == 8,
               "handles are 8 bytes");
_Static_assert(sizeof(t4a_arg) == 48, "t4a_arg is frozen: 48 bytes");
_Static_assert(offsetof(t4a_arg, offset) == 16 &&
                   offsetof(t4a_arg, value) == 24 &&
                   offsetof(t4a_arg, device_pointer) == 40,
               "t4a_arg layout");
_Static_assert(sizeof(t4a_launch_desc) == 56, "no implicit padding");
_Static_assert(offsetof(t4a_launch_desc, args) == 48, "args last");
_Static_assert(sizeof(t4a_kernel_info) == 4 + 4 + 8 + 10 * 4,
               "t4a_kernel_info has no padding");
_Static_assert(T4A_ARG_BUFFER == 1 && T4A_ARG_SCALAR == 2 &&
                   T4A_ARG_DEVICE_POINTER == 3,
               "argument kinds");
_Static_assert(T4A_MAX_PARAM_BYTES == 32764, "CUDA 12.1+ parameter limit");
_Static_assert(T4A_PARAMS_UNKNOWN == -1, "unknown parameter count");
_Static_assert(T4A_DEFAULT_MODULE_CACHE_ENTRIES == 64 &&
                   T4A_DEFAULT_MODULE_CACHE_BYTES == ((uint64_t)256 << 20),
               "module cache defaults");
static const t4a_arg k_arg = T4A_ARG_INIT;
static const t4a_launch_desc k_launch_desc = T4A_LAUNCH_DESC_INIT;
static const t4a_kernel_info k_kernel_info = T4A_KERNEL_INFO_INIT;
#if defined(T4A_EXPERIMENTAL)
/* Graphs (experimental): handle, options, info. */
_Static_assert(sizeof(t4a_graph) == 8, "handles are 8 bytes");
_Static_assert(sizeof(t4a_capture_options) == 8, "no implicit padding");
_Static_assert(sizeof(t4a_graph_info) == 32, "no implicit padding");
_Static_assert(T4A_CAPTURE_GLOBAL == 0 && T4A_CAPTURE_THREAD_LOCAL == 1 &&
                   T4A_CAPTURE_RELAXED == 2,
               "capture modes");
static const t4a_capture_options k_capture_options = T4A_CAPTURE_OPTIONS_INIT;
static const t4a_graph_info k_graph_info = T4A_GRAPH_INFO_INIT;
#endif
_Static_assert(T4A_ERROR_CAPTURING == 19, "status values never change");
/* The buffer flag is usable where a constant is needed. */
static const uint32_t k_buffer_flags = T4A_BUFFER_ZERO;
static const char k_version[] = T4A_VERSION_STRING;

static void test_init_macros(void **state) {
  /* ...and at block scope. */
  t4a_error_info error_info = T4A_ERROR_INFO_INIT;
  t4a_device_info device_info = T4A_DEVICE_INFO_INIT;
  t4a_runtime_options runtime_options = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime_info runtime_info = T4A_RUNTIME_INFO_INIT;
  t4a_runtime_stats runtime_stats = T4A_RUNTIME_STATS_INIT;
  t4a_buffer_info buffer_info = T4A_BUFFER_INFO_INIT;
  t4a_process_stats process_stats = T4A_PROCESS_STATS_INIT;
  t4a_process_fault process_fault = T4A_PROCESS_FAULT_INIT;
  t4a_raw_info raw_info = T4A_RAW_INFO_INIT;
  t4a_compile_request compile_request = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact_info artifact_info = T4A_ARTIFACT_INFO_INIT;
  t4a_compile_stats compile_stats = T4A_COMPILE_STATS_INIT;
  t4a_artifact artifact = {T4A_NULL_ID};
  t4a_arg arg = T4A_ARG_INIT;
  t4a_launch_desc launch_desc = T4A_LAUNCH_DESC_INIT;
  t4a_kernel_info kernel_info = T4A_KERNEL_INFO_INIT;
  (void)state;
  assert_int_equal(arg.kind, 0);
  assert_null(arg.value);
  assert_memory_equal(&k_arg, &arg, sizeof arg);
  assert_int_equal(launch_desc.struct_size, sizeof(t4a_launch_desc));
  /* zero extents: x must be set, 0 in y and z means 1 */
  assert_int_equal(launch_desc.grid[0], 0);
  assert_int_equal(launch_desc.grid[1] + launch_desc.grid[2], 0);
  assert_int_equal(launch_desc.block[0], 0);
  assert_int_equal(launch_desc.block[1] + launch_desc.block[2], 0);
  assert_int_equal(launch_desc.kernel.id, T4A_NULL_ID);
  assert_int_equal(launch_desc.arg_count, 0);
  assert_null(launch_desc.args);
  assert_memory_equal(&k_launch_desc, &launch_desc, sizeof launch_desc);
  assert_int_equal(kernel_info.struct_size, sizeof(t4a_kernel_info));
  assert_memory_equal(&k_kernel_info, &kernel_info, sizeof kernel_info);
#if defined(T4A_EXPERIMENTAL)
  assert_int_equal(k_capture_options.struct_size, sizeof(t4a_capture_options));
  assert_int_equal(k_capture_options.mode, T4A_CAPTURE_GLOBAL);
  assert_int_equal(k_graph_info.struct_size, sizeof(t4a_graph_info));
#endif
  assert_int_equal(compile_request.struct_size, sizeof(t4a_compile_request));
  assert_int_equal(compile_request.output, T4A_COMPILE_CUBIN);
  assert_null(compile_request.source);
  assert_null(compile_request.program_name);
  assert_int_equal(compile_request.header_count, 0);
  assert_int_equal(compile_request.option_count, 0);
  assert_int_equal(compile_request.name_expression_count, 0);
  assert_int_equal(compile_request.cc_major, 0);
  assert_int_equal(compile_request.flags, 0);
  assert_int_equal(compile_request.runtime.id, T4A_NULL_ID);
  assert_int_equal(compile_request.disk_cache_max_bytes, 0);
  assert_null(compile_request.cache_dir);
  assert_memory_equal(&k_compile_request, &compile_request,
                      sizeof compile_request);
  assert_int_equal(artifact_info.struct_size, sizeof(t4a_artifact_info));
  assert_memory_equal(&k_artifact_info, &artifact_info, sizeof artifact_info);
  assert_int_equal(compile_stats.struct_size, sizeof(t4a_compile_stats));
  assert_int_equal(compile_stats.requests, 0);
  assert_memory_equal(&k_compile_stats, &compile_stats, sizeof compile_stats);
  assert_int_equal(artifact.id, T4A_NULL_ID);
  assert_int_equal(error_info.struct_size, sizeof(t4a_error_info));
  assert_int_equal(error_info.status, T4A_SUCCESS);
  assert_null(error_info.entry_point);
  assert_int_equal(device_info.struct_size, sizeof(t4a_device_info));
  assert_int_equal(device_info.ordinal, 0);
  assert_int_equal(device_info.name[0], '\0');
  assert_int_equal(runtime_options.struct_size, sizeof(t4a_runtime_options));
  assert_int_equal(runtime_options.device_ordinal, 0);
  /* zero means the default (keep all); RELEASE_ALL is its own value */
  assert_true(runtime_options.pool_release_threshold == 0);
  assert_true(T4A_POOL_KEEP_ALL == UINT64_MAX);
  assert_true(T4A_POOL_RELEASE_ALL == UINT64_MAX - 1);
  assert_int_equal(runtime_info.struct_size, sizeof(t4a_runtime_info));
  assert_null(runtime_info.context);
  assert_int_equal(runtime_stats.struct_size, sizeof(t4a_runtime_stats));
  assert_int_equal(runtime_stats.host_waits, 0);
  /* zero: T4A_DEFAULT_STAGING_BYTES and T4A_DEFAULT_STAGING_CHUNK_BYTES */
  assert_int_equal(runtime_options.staging_bytes, 0);
  assert_int_equal(T4A_DEFAULT_STAGING_BYTES, UINT64_C(67108864));
  assert_int_equal(runtime_options.staging_chunk_bytes, 0);
  assert_int_equal(T4A_DEFAULT_STAGING_CHUNK_BYTES, UINT64_C(8388608));
  assert_int_equal(runtime_options.staging_threads, T4A_STAGING_THREADS_AUTO);
  assert_int_equal(runtime_options.reserved0, 0);
  /* zero: T4A_DEFAULT_MODULE_CACHE_ENTRIES and _BYTES */
  assert_int_equal(runtime_options.module_cache_entries, 0);
  assert_int_equal(runtime_options.module_cache_bytes, 0);
  assert_int_equal(runtime_stats.leaked_allocations, 0);
  assert_int_equal(runtime_stats.staging_bytes_peak, 0);
  assert_int_equal(buffer_info.struct_size, sizeof(t4a_buffer_info));
  assert_int_equal(buffer_info.reserved0, 0);
  assert_int_equal(buffer_info.bytes, 0);
  assert_int_equal(buffer_info.device_pointer, 0);
  assert_int_equal(buffer_info.runtime.id, T4A_NULL_ID);
  assert_int_equal(buffer_info.device_ordinal, 0);
  assert_int_equal(buffer_info.reserved1, 0);
  assert_int_equal(process_stats.struct_size, sizeof(t4a_process_stats));
  assert_int_equal(process_stats.reserved0, 0);
  assert_int_equal(process_stats.runtimes_live, 0);
  assert_int_equal(process_stats.runtimes_leaked, 0);
  assert_int_equal(process_stats.leaked_device_allocations, 0);
  assert_int_equal(process_stats.leaked_device_bytes, 0);
  assert_int_equal(process_stats.leaked_staging_bytes, 0);
  assert_int_equal(process_stats.leaked_host_buffers, 0);
  assert_int_equal(process_fault.struct_size, sizeof(t4a_process_fault));
  assert_int_equal(raw_info.struct_size, sizeof(t4a_raw_info));
  assert_int_equal(k_raw_info.struct_size, sizeof(t4a_raw_info));
  assert_int_equal(k_dlpack_desc.struct_size, sizeof(t4a_dlpack_desc));
  assert_int_equal(k_dlpack_desc.ndim, 0);
  assert_null(k_dlpack_desc.shape);
  assert_null(raw_info.context);
  assert_null(raw_info.stream);
  assert_int_equal(process_fault.has_fault, 0);
  assert_int_equal(process_fault.device_ordinal, 0);
  assert_int_equal(process_fault.driver_result, 0);
  assert_int_equal(process_fault.domain_id, 0);
  assert_int_equal(process_fault.operation[0], 0);
  assert_int_equal(
      process_fault.operation[T4A_PROCESS_FAULT_OPERATION_BYTES - 1], 0);
  assert_int_equal(k_buffer_flags, 1);
  assert_memory_equal(&k_error_info, &error_info, sizeof error_info);
  assert_int_equal(k_device_info.struct_size, device_info.struct_size);
  assert_memory_equal(&k_runtime_options, &runtime_options,
                      sizeof runtime_options);
  assert_int_equal(k_runtime_info.struct_size, runtime_info.struct_size);
  assert_int_equal(k_runtime_stats.struct_size, runtime_stats.struct_size);
  /* Structs without padding compare whole. */
  assert_memory_equal(&k_runtime_stats, &runtime_stats, sizeof runtime_stats);
  assert_memory_equal(&k_buffer_info, &buffer_info, sizeof buffer_info);
  assert_memory_equal(&k_process_stats, &process_stats, sizeof process_stats);
  assert_memory_equal(&k_process_fault, &process_fault, sizeof process_fault);
#if defined(T4A_EXPERIMENTAL)
  /* The experimental initializers: struct_size, then zero bytes. */
  {
    t4a_barrier_desc bd;
    t4a_barrier_audit ba;
    memset(&bd, 0, sizeof bd);
    bd.struct_size = sizeof bd;
    memset(&ba, 0, sizeof ba);
    ba.struct_size = sizeof ba;
    assert_memory_equal(&k_barrier_desc, &bd, sizeof bd);
    assert_memory_equal(&k_barrier_audit, &ba, sizeof ba);
  }
  {
    t4a_launch_attrs la;
    t4a_cluster_occupancy co;
    memset(&la, 0, sizeof la);
    la.struct_size = sizeof la;
    memset(&co, 0, sizeof co);
    co.struct_size = sizeof co;
    assert_memory_equal(&k_launch_attrs, &la, sizeof la);
    assert_memory_equal(&k_cluster_occupancy, &co, sizeof co);
  }
#endif
}

static void test_version_macros_and_link(void **state) {
  char expected[32];
  (void)state;
  snprintf(expected, sizeof expected, "%d.%d.%d", T4A_VERSION_MAJOR,
           T4A_VERSION_MINOR, T4A_VERSION_PATCH);
  assert_string_equal(k_version, expected);
  /* Linked: the library answers with the header's version. */
  assert_int_equal(t4a_version(), T4A_VERSION_NUMBER);
  assert_string_equal(t4a_version_string(), T4A_VERSION_STRING);
  assert_string_equal(t4a_status_name(T4A_SUCCESS), "T4A_SUCCESS");
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *text;
  long n;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = malloc((size_t)n + 1);
  if (text != NULL) {
    size_t got = fread(text, 1, (size_t)n, f);
    text[got] = '\0';
  }
  fclose(f);
  return text;
}

/* Every `#define T4A_<NAME>_INIT` of the header is used above. */
static void test_every_init_macro_used(void **state) {
  char *header = read_file(T4A_TEST_SOURCE_DIR "/include/t4acuda.h");
  char *self = read_file(T4A_TEST_SOURCE_DIR "/tests/host/header_c11.c");
  const char *p;
  int found = 0;
  (void)state;
  assert_non_null(header);
  assert_non_null(self);
  for (p = strstr(header, "#define T4A_"); p != NULL;
       p = strstr(p + 1, "#define T4A_")) {
    char name[128], use[160];
    size_t n = 0;
    const char *q = p + strlen("#define ");
    while (n + 1 < sizeof name &&
           (q[n] == '_' || (q[n] >= 'A' && q[n] <= 'Z') ||
            (q[n] >= '0' && q[n] <= '9')))
      ++n;
    memcpy(name, q, n);
    name[n] = '\0';
    if (n < 5 || strcmp(name + n - 5, "_INIT") != 0) continue;
    ++found;
    snprintf(use, sizeof use, "= %s;", name);
    if (strstr(self, use) == NULL)
      fail_msg("%s is not used in header_c11.c", name);
  }
  assert_true(found >= 7); /* the seven of 0.1.0 at least */
  free(header);
  free(self);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_macros),
      cmocka_unit_test(test_version_macros_and_link),
      cmocka_unit_test(test_every_init_macro_used),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
