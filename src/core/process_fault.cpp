#include "core/process_fault.hpp"

#include "core/fork.hpp"

#include <cstring>
#include <mutex>

namespace t4a::core {

namespace {
// Plain data with a constant initializer and a mutex with a trivial
// destructor: usable from any thread at any time, process exit included.
std::mutex g_mu;
t4a_process_fault g_fault = T4A_PROCESS_FAULT_INIT;
} // namespace

void record_process_fault(int32_t device_ordinal, int32_t driver_result,
                          uint64_t domain_id, const char *operation) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_fault.has_fault) return;
  g_fault.has_fault = 1;
  g_fault.device_ordinal = device_ordinal;
  g_fault.driver_result = driver_result;
  g_fault.domain_id = domain_id;
  const char *op = operation != nullptr ? operation : "";
  size_t n = std::strlen(op);
  if (n > sizeof g_fault.operation - 1) n = sizeof g_fault.operation - 1;
  std::memcpy(g_fault.operation, op, n);
  g_fault.operation[n] = '\0';
}

void read_process_fault(t4a_process_fault *out) {
  std::lock_guard<std::mutex> lock(g_mu);
  *out = g_fault;
}

void process_fault_at_fork(ForkPhase phase) {
  if (phase == ForkPhase::Prepare)
    g_mu.lock();
  else
    g_mu.unlock(); // the child's only thread is the one that locked it
}

} // namespace t4a::core
