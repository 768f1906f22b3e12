// Context-free entry points: versions, status names, last error, logging.
#include <cstring>

#include "capi/entry.hpp"
#include "core/log.hpp"
#include "core/struct_io.hpp"

using namespace t4a;

extern "C" {

T4A_API uint32_t t4a_version(void) { return T4A_VERSION_NUMBER; }

T4A_API const char *t4a_version_string(void) { return T4A_VERSION_STRING; }

T4A_API int32_t t4a_built_cuda_version(void) { return CUDA_VERSION; }

T4A_API const char *t4a_status_name(t4a_status status) {
  switch (status) {
#define T4A_NAME_CASE_(name, value, text)                                      \
  case value: return #name;
    T4A_STATUS_MAP(T4A_NAME_CASE_)
#undef T4A_NAME_CASE_
  }
  return "T4A_STATUS_UNKNOWN";
}

T4A_API const char *t4a_status_description(t4a_status status) {
  switch (status) {
#define T4A_TEXT_CASE_(name, value, text)                                      \
  case value: return text;
    T4A_STATUS_MAP(T4A_TEXT_CASE_)
#undef T4A_TEXT_CASE_
  }
  return "unknown status";
}

// The last-error readers do not go through the entry guard (T4A_ENTRY):
// they must not change the error they report.
T4A_API t4a_status t4a_last_error(t4a_error_info *info) {
  if (info == nullptr || info->struct_size < sizeof(uint32_t))
    return T4A_ERROR_INVALID_ARGUMENT;
  const core::LastError &e = core::last_error();
  t4a_error_info full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  full.status = e.status;
  full.driver_result = e.driver_result;
  full.compiler_result = e.compiler_result;
  full.entry_point = e.entry_point;
  core::write_struct(info, full);
  return T4A_SUCCESS;
}

T4A_API t4a_status t4a_last_error_message(char *buf, size_t capacity,
                                          size_t *needed) {
  if (buf == nullptr && capacity != 0) return T4A_ERROR_INVALID_ARGUMENT;
  const std::string &m = core::last_error().message;
  if (needed != nullptr) *needed = m.size() + 1;
  if (capacity > 0) {
    size_t n = m.size() < capacity - 1 ? m.size() : capacity - 1;
    std::memcpy(buf, m.data(), n);
    buf[n] = '\0';
  }
  return T4A_SUCCESS;
}

T4A_API void t4a_last_error_clear(void) { core::clear_last_error(); }

T4A_API t4a_status t4a_set_log_callback(t4a_log_fn fn, void *user,
                                        int32_t max_level) {
  return T4A_ENTRY({ return core::set_log_callback(fn, user, max_level); });
}

} // extern "C"
