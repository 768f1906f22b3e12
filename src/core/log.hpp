// Logging: one sink (a user callback or the default stderr writer) and a
// level threshold; T4A_LOG overrides the threshold. The sink is called with
// no internal lock held.
#pragma once

#include <cstdint>

#include "t4acuda.h"

namespace t4a::core {

bool log_enabled(int32_t level);
void log(int32_t level, const char *message);
void logf(int32_t level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
t4a_status set_log_callback(t4a_log_fn fn, void *user, int32_t max_level);

// While a thread holds a runtime's admission lock, what it logs is kept
// and delivered when it releases its last such lock, so that no log
// callback ever runs with an internal lock held (R-ABI-8).
void log_defer_begin();
void log_defer_end();

} // namespace t4a::core
