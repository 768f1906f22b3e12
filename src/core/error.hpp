// Per-thread last error and the helpers that record a failure.
// Every failing path calls one of the fail* functions exactly once; they
// record status, driver/compiler result, the current entry point's name and
// a message naming the offending argument and values, and return the status
// so a caller can write `return fail(...)`.
#pragma once

#include <cstdint>
#include <string>

#include "t4acuda.h"
#include "driver/cuda_api.hpp"

namespace t4a::core {

struct LastError {
  t4a_status status = T4A_SUCCESS;
  int32_t driver_result = 0;
  int32_t compiler_result = 0;
  const char *entry_point = "";
  std::string message;
};

LastError &last_error();

// The public entry point now running on this thread (set by EntryScope).
const char *current_entry();

// Sets the current entry point's name for the lifetime of the scope.
class EntryScope {
public:
  explicit EntryScope(const char *name);
  ~EntryScope();
  EntryScope(const EntryScope &) = delete;
  EntryScope &operator=(const EntryScope &) = delete;

private:
  const char *saved_;
};

#if defined(__GNUC__)
#define T4A_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define T4A_PRINTF(fmt, args)
#endif

std::string format(const char *fmt, ...) T4A_PRINTF(1, 2);

// Records a failure without a driver result.
t4a_status fail(t4a_status status, const char *fmt, ...) T4A_PRINTF(2, 3);

// Records a driver failure: the status is mapped from the CUresult
// (status_for), the message names the entry point, the driver's own error
// name and description, then what was being done.
t4a_status fail_driver(driver::DrvResult r, const char *fmt, ...)
    T4A_PRINTF(2, 3);

// Records a failure with a ready-made message and optional driver result.
t4a_status fail_message(t4a_status status, std::string message,
                        int32_t driver_result = 0,
                        int32_t compiler_result = 0);

// Maps a CUresult to a status: OUT_OF_MEMORY, DEVICE_FAULT for sticky
// errors, NO_DRIVER when the driver is gone, NO_DEVICE, NOT_READY, DRIVER.
t4a_status status_for(CUresult r);

// "CUDA_ERROR_X (description)" for a CUresult.
std::string describe(CUresult r);

// NO_DRIVER (or SUCCESS) after loading the driver on first need.
t4a_status require_driver();

} // namespace t4a::core
