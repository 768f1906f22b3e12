// Fork safety (issue 8 item 10). One set of pthread_atfork
// handlers (capi/fork.cpp, registered when the library is loaded) makes
// every library lock usable in a child forked while other threads are
// inside the library: prepare first waits for the NVRTC calls in
// progress (driver::NvrtcSection: libnvrtc's own locks must be free in
// the child), then takes the process-wide locks in one fixed
// order (compile's in-flight table, the memory cache, the registry, the
// process fault record, the disk cache's set of untrusted directories,
// compile's leaf memos (known dependency sets, toolkits found, toolkit
// file states), the name-expression table, the log sink: each before the
// ones it may take while holding it), the
// parent releases them, and the child releases or re-initializes them.
// A child forked after the parent began loading the CUDA driver cannot
// use CUDA: its driver-needing calls return NO_DRIVER
// with k_fork_message, and the parent's driver objects (runtimes and all
// that hang off them) are unreachable there: their handles report the
// same, and the objects are leaked, never destroyed, in the child.
// Context-free calls (versions, status names, last error, logging, compile
// from the caches) keep working. std::call_once is fork-safe on glibc (an
// initialization interrupted by the fork runs again in the child).
#pragma once

namespace t4a::core {

enum class ForkPhase { Prepare, Parent, Child };

// The status message of a driver-needing call in such a child.
extern const char k_fork_message[];

// Whether this process is a child forked after its parent began loading
// the driver (set by the child handler).
bool in_forked_child();
void set_forked_child();

// Hooks of core's locks, called by capi/fork.cpp in its fixed order.
void process_fault_at_fork(ForkPhase phase);
void log_at_fork(ForkPhase phase); // core/log.cpp

} // namespace t4a::core
