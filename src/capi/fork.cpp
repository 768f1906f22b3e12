// Fork safety (core/fork.hpp): the pthread_atfork handlers, registered
// once when the library is loaded (it is never unloaded: -z nodelete).
// Prepare takes the process-wide locks in one fixed order, each before
// the locks it may take while holding it; parent and child go in reverse.
#include <pthread.h>

#include "capi/name_expressions.hpp"
#include "compile/dependencies.hpp"
#include "compile/disk_cache.hpp"
#include "compile/in_flight.hpp"
#include "compile/key_plan.hpp"
#include "compile/memory_cache.hpp"
#include "compile/toolkit.hpp"
#include "core/fork.hpp"
#include "core/registry.hpp"
#include "driver/cuda_api.hpp"
#include "driver/nvrtc_api.hpp"

namespace t4a::capi {
namespace {

using core::ForkPhase;

void prepare() {
  // First: waits for the NVRTC calls in progress (driver/nvrtc_api.hpp),
  // which hold nothing else, so that libnvrtc's own locks are free.
  driver::nvrtc_fork_prepare();
  compile::InFlight::instance().at_fork(ForkPhase::Prepare);
  compile::MemoryCache::instance().at_fork(ForkPhase::Prepare); // registry
  core::Registry::instance().at_fork(ForkPhase::Prepare, false);
  core::process_fault_at_fork(ForkPhase::Prepare);
  compile::disk_cache_at_fork(ForkPhase::Prepare);   // a leaf: never logs
  compile::key_plan_at_fork(ForkPhase::Prepare);     // leaves: nothing is
  compile::toolkit_at_fork(ForkPhase::Prepare);      // called while one
  compile::dependencies_at_fork(ForkPhase::Prepare); // is held
  name_expressions_at_fork(ForkPhase::Prepare);      // a leaf: never logs
  core::log_at_fork(ForkPhase::Prepare);
}

void parent() {
  core::log_at_fork(ForkPhase::Parent);
  name_expressions_at_fork(ForkPhase::Parent);
  compile::dependencies_at_fork(ForkPhase::Parent);
  compile::toolkit_at_fork(ForkPhase::Parent);
  compile::key_plan_at_fork(ForkPhase::Parent);
  compile::disk_cache_at_fork(ForkPhase::Parent);
  core::process_fault_at_fork(ForkPhase::Parent);
  core::Registry::instance().at_fork(ForkPhase::Parent, false);
  compile::MemoryCache::instance().at_fork(ForkPhase::Parent);
  compile::InFlight::instance().at_fork(ForkPhase::Parent);
  driver::nvrtc_fork_parent();
}

void child() {
  // A child of a parent that began loading the driver cannot use CUDA:
  // the driver refuses from now on, and the parent's driver objects are
  // dropped from the registry (leaked, never destroyed here).
  bool refuse = driver::refuse_in_forked_child(core::k_fork_message);
  if (refuse) core::set_forked_child();
  core::log_at_fork(ForkPhase::Child);
  name_expressions_at_fork(ForkPhase::Child);
  compile::dependencies_at_fork(ForkPhase::Child);
  compile::toolkit_at_fork(ForkPhase::Child);
  compile::key_plan_at_fork(ForkPhase::Child);
  compile::disk_cache_at_fork(ForkPhase::Child);
  core::process_fault_at_fork(ForkPhase::Child);
  core::Registry::instance().at_fork(ForkPhase::Child, refuse);
  compile::MemoryCache::instance().at_fork(ForkPhase::Child);
  compile::InFlight::instance().at_fork(ForkPhase::Child);
  driver::nvrtc_fork_child();
}

__attribute__((constructor)) void register_fork_handlers() {
  // Fails only with ENOMEM at load time; nothing to report it to then,
  // and the library works without the handlers (only fork is unsafe).
  (void)pthread_atfork(prepare, parent, child);
}

} // namespace
} // namespace t4a::capi
