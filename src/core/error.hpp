// Per-thread last error and the helpers that record a failure.
// Every failing path calls one of the fail* functions exactly once; they
// record status, driver/compiler result, the current entry point's name and
// a message naming the offending argument and values, and return the status
// so a caller can write `return fail(...)`.
#pragma once

#include <cstdint>
#include <string>

#include "driver/cuda_api.hpp"
#include "t4acuda.h"

namespace t4a::core {

struct LastError {
  t4a_status status = T4A_SUCCESS;
  int32_t driver_result = 0;
  int32_t compiler_result = 0;
  const char *entry_point = "";
  std::string message;
  // Recorded by fail*() but not yet stamped with the entry point's name.
  bool pending = false;
  // The complete log of the thread's last failed compile (set by the
  // compile layer; fail*() leave it alone).
  std::string compile_log;
};

// The calling thread's record for reading: an empty one when the thread
// has none (yet, or any more at its exit).
const LastError &last_error();
// Clears the calling thread's record (its compile log too).
void clear_last_error();
// Puts back a record saved with last_error() (after running a log callback
// that may have recorded failures of its own).
void restore_last_error(LastError saved);
// Keeps the complete log of a failed compile in the thread's record.
void set_compile_log(std::string log);

#if defined(__GNUC__)
#define T4A_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
// Failure paths: the compiler predicts every branch into a call of a cold
// function as not taken and moves that code out of the hot text, so a warm
// launch touches fewer instruction cache lines.
#define T4A_COLD __attribute__((cold))
#else
#define T4A_PRINTF(fmt, args)
#define T4A_COLD
#endif

// Called by the entry guard (capi/entry.hpp) when an entry point returns an
// error: stamps the thread's last error with the entry point's name
// (prefixing the message), then logs it at debug level. The success path of an
// entry point touches no thread-local state.
T4A_COLD void finish_failure(const char *entry, t4a_status status);

std::string format(const char *fmt, ...) T4A_PRINTF(1, 2);

// Records a failure without a driver result.
T4A_COLD t4a_status fail(t4a_status status, const char *fmt, ...)
    T4A_PRINTF(2, 3);

// Records a driver failure: the status is mapped from the CUresult
// (status_for), the message names the entry point, the driver's own error
// name and description, then what was being done.
T4A_COLD t4a_status fail_driver(driver::DrvResult r, const char *fmt, ...)
    T4A_PRINTF(2, 3);

// Records a failure with a ready-made message and optional driver result.
T4A_COLD t4a_status fail_message(t4a_status status, std::string message,
                                 int32_t driver_result = 0,
                                 int32_t compiler_result = 0);

// Records a failure from an exception handler; never throws (when even
// the message cannot be stored, the status alone is kept).
T4A_COLD t4a_status fail_quietly(t4a_status status, const char *what) noexcept;

// Maps a CUresult to a status: OUT_OF_MEMORY, DEVICE_FAULT for sticky
// errors, NO_DRIVER when the driver is gone, NO_DEVICE, NOT_READY, DRIVER.
t4a_status status_for(CUresult r);

// "CUDA_ERROR_X (description)" for a CUresult.
std::string describe(CUresult r);

// NO_DRIVER (or SUCCESS) after loading the driver on first need.
t4a_status require_driver();

} // namespace t4a::core
