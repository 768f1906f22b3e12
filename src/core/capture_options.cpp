#include "core/capture_options.hpp"

namespace t4a::core {

void check_capture_options(const t4a_capture_options &o, Check *c) {
  if (o.mode != T4A_CAPTURE_GLOBAL && o.mode != T4A_CAPTURE_THREAD_LOCAL &&
      o.mode != T4A_CAPTURE_RELAXED)
    c->reject(T4A_ERROR_INVALID_ARGUMENT,
              "options->mode is %d; it must be T4A_CAPTURE_GLOBAL (0), "
              "T4A_CAPTURE_THREAD_LOCAL (1) or T4A_CAPTURE_RELAXED (2)",
              o.mode);
}

} // namespace t4a::core
