// Recycled CUDA events (timing disabled) of one runtime. Creating an event
// costs more than recording one, so events are taken from and given back
// to a free list. Thread-safe.
#pragma once

#include <cuda.h>

#include <mutex>
#include <vector>

#include "t4acuda.h"

namespace t4a::core {

class Runtime;

class EventPool {
public:
  // The runtime whose failures these are: a sticky result of creating an
  // event breaks it (fail_op) like any other of its driver calls.
  void set_owner(Runtime *owner) { owner_ = owner; }
  // Gets an event, creating one if none is free. cuEventCreate makes an
  // event of the current context, so creating one enters the owner's
  // context for the call (and restores the caller's): no context need be
  // current. With `record` false a failure is not recorded as the thread's
  // last error (the caller's own operation succeeded).
  t4a_status take(CUevent *out, bool record = true);
  void give_back(CUevent e);
  // Destroys the free events (teardown with completion proven).
  void destroy_all();

private:
  Runtime *owner_ = nullptr;
  std::mutex mu_;
  std::vector<CUevent> free_;
};

} // namespace t4a::core
