#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <new>

#include <pthread.h>

#include "core/log.hpp"
#include "driver/result_class.hpp"

namespace t4a::core {

namespace {
// The record is on the heap, reached through a trivially destructible
// thread-local pointer: a C++ thread_local std::string would be destroyed
// by the thread's TLS destructors, and a t4acuda call failing after that
// (a static destructor releasing a handle at process exit) would write to
// freed memory. A pthread key frees the record when a thread exits; the
// main thread's record lives until the process ends.
thread_local LastError *tl_record = nullptr;

pthread_key_t record_key() {
  static pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, [](void *p) {
      delete static_cast<LastError *>(p);
      tl_record = nullptr;
    });
    return k;
  }();
  return key;
}

// The thread's record, made on first failure; nullptr when even that
// small allocation fails (the failure is then not recorded).
LastError *record() {
  if (tl_record == nullptr) {
    tl_record = new (std::nothrow) LastError();
    if (tl_record != nullptr) pthread_setspecific(record_key(), tl_record);
  }
  return tl_record;
}

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

const LastError &last_error() {
  static const LastError empty;
  return tl_record != nullptr ? *tl_record : empty;
}

void clear_last_error() {
  if (tl_record != nullptr) *tl_record = LastError{};
}

void restore_last_error(LastError saved) {
  if (tl_record != nullptr) *tl_record = std::move(saved);
}

void set_compile_log(std::string log) {
  if (LastError *rec = record()) rec->compile_log.swap(log);
}

void finish_failure(const char *entry, t4a_status status) {
  LastError *rec = record();
  if (rec == nullptr) return;
  LastError &e = *rec;
  if (!e.pending || e.status != status) {
    // A path that returned an error without recording one: record the
    // status itself so the last error always matches what was returned.
    e.status = status;
    e.driver_result = 0;
    e.compiler_result = 0;
    e.message = t4a_status_description(status);
  }
  e.pending = false;
  e.entry_point = entry;
  try {
    e.message.insert(0, std::string(entry) + ": ");
  } catch (...) { // out of host memory while reporting: keep the status
  }
  if (!log_enabled(T4A_LOG_DEBUG)) return;
  // A log callback may call a failing t4acuda function on this thread:
  // keep this failure's record and put it back after logging.
  LastError saved = e;
  log(T4A_LOG_DEBUG, saved.message.c_str());
  if (LastError *again = record()) *again = std::move(saved);
}

std::string format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

t4a_status fail_message(t4a_status status, std::string message,
                        int32_t driver_result, int32_t compiler_result) {
  LastError *rec = record();
  if (rec == nullptr) return status;
  LastError &e = *rec;
  e.status = status;
  e.driver_result = driver_result;
  e.compiler_result = compiler_result;
  e.entry_point = "";
  e.message.swap(message);
  e.pending = true;
  return status;
}

t4a_status fail_quietly(t4a_status status, const char *what) noexcept {
  try {
    return fail_message(status, std::string("internal: ") + what);
  } catch (...) {
    if (LastError *e = record()) {
      e->status = status;
      e->pending = true;
      e->message.clear();
    }
    return status;
  }
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
  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) .. _WRONG_THREAD (908): a
  // capture refused or invalidated; not sticky (driver/result_class.hpp).
  if (static_cast<int>(r) >= 900 && static_cast<int>(r) <= 908)
    return T4A_ERROR_CAPTURING;
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
