/*
 * Test-only entry points of t4acuda, present only in libraries built with
 * T4A_TESTING=ON (never in release builds or the ABI baseline). Not
 * installed. SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4ACUDA_TESTING_H
#define T4ACUDA_TESTING_H

#include "t4acuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Injection modes: fail instead of calling, or after really calling. */
enum t4a_testing_fault_mode {
  T4A_TESTING_FAULT_INSTEAD = 1,
  T4A_TESTING_FAULT_AFTER = 2
};

/* Makes the nth call (counted from now, 1-based) of the driver or NVRTC
 * entry point `entry` (e.g. "cuStreamSynchronize", "nvrtcGetCUBIN") return
 * `cu_result` (a CUresult, or an nvrtcResult for an NVRTC entry point).
 * INVALID_ARGUMENT for an unknown name, nth 0 or a bad mode. */
T4A_API t4a_status t4a_testing_fault_arm(const char *entry, uint64_t nth,
                                         int32_t cu_result, int32_t mode);
/* Disarms every rule, zeroes the call counts, stops counting. */
T4A_API void t4a_testing_fault_reset(void);
/* Starts (1) or stops (0) counting driver and NVRTC calls per entry
 * point. */
T4A_API void t4a_testing_count_calls(int32_t on);
/* Calls of `entry` counted so far; -1 for an unknown name. */
T4A_API int64_t t4a_testing_call_count(const char *entry);

/* Registry test objects (no driver): create, retain, release, resolve. */
T4A_API t4a_status t4a_testing_object_create(uint64_t value, uint64_t *id);
T4A_API t4a_status t4a_testing_object_retain(uint64_t id);
T4A_API t4a_status t4a_testing_object_release(uint64_t id);
T4A_API t4a_status t4a_testing_object_value(uint64_t id, uint64_t *value);
/* Objects of any kind currently registered. */
T4A_API uint64_t t4a_testing_live_handles(void);

/* Installs `hook` (NULL removes it): every ordinary admission of every
 * runtime calls hook(arg) on its own thread just before it waits for the
 * admission lock, with no lock held (lets a test stop a thread between
 * resolving a runtime and being admitted). */
T4A_API void t4a_testing_admission_hook(void (*hook)(void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
