#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>

#include "core/log.hpp"
#include "driver/result_class.hpp"

namespace t4a::core {

namespace {
thread_local LastError tl_last;
thread_local const char *tl_entry = "";

std::string vformat(const char *fmt, va_list ap) {
  char small[256];
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return std::string(fmt);
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, n);
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, ap);
  return out;
}
} // namespace

LastError &last_error() { return tl_last; }
const char *current_entry() { return tl_entry; }

EntryScope::EntryScope(const char *name) : saved_(tl_entry) { tl_entry = name; }
EntryScope::~EntryScope() { tl_entry = saved_; }

std::string format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

t4a_status fail_message(t4a_status status, std::string message,
                        int32_t driver_result, int32_t compiler_result) {
  std::string full;
  try {
    full = std::string(tl_entry) + ": " + message;
  } catch (...) { // out of host memory while reporting: keep the status
  }
  // Logged before it is recorded: a log callback that calls a failing
  // t4acuda function cannot overwrite this failure's last error.
  log(T4A_LOG_DEBUG, full.c_str());
  LastError &e = tl_last;
  e.status = status;
  e.driver_result = driver_result;
  e.compiler_result = compiler_result;
  e.entry_point = tl_entry;
  e.message.swap(full);
  return status;
}

t4a_status fail(t4a_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string m = vformat(fmt, ap);
  va_end(ap);
  return fail_message(status, std::move(m));
}

std::string describe(CUresult r) {
  const char *name = driver::error_name(r);
  const char *text = driver::error_string(r);
  std::string s = (name[0] != '\0') ? name : "CUresult " + std::to_string(r);
  if (text[0] != '\0') s += std::string(" (") + text + ")";
  return s;
}

t4a_status status_for(CUresult r) {
  if (r == CUDA_SUCCESS) return T4A_SUCCESS;
  if (r == CUDA_ERROR_NOT_READY) return T4A_NOT_READY;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return T4A_ERROR_OUT_OF_MEMORY;
  if (driver::is_sticky(r)) return T4A_ERROR_DEVICE_FAULT;
  if (driver::is_driver_gone(r)) return T4A_ERROR_NO_DRIVER;
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE)
    return T4A_ERROR_NO_DEVICE;
  return T4A_ERROR_DRIVER;
}

t4a_status fail_driver(driver::DrvResult r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string what = vformat(fmt, ap);
  va_end(ap);
  std::string m = what + ": " + r.entry + " returned " + describe(r.code);
  return fail_message(status_for(r.code), std::move(m),
                      static_cast<int32_t>(r.code));
}

t4a_status require_driver() {
  driver::LoadOutcome o = driver::load();
  if (o.state == driver::LoadState::Ready) return T4A_SUCCESS;
  return fail_message(T4A_ERROR_NO_DRIVER, *o.reason,
                      static_cast<int32_t>(o.init_result));
}

} // namespace t4a::core
