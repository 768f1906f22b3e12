// A captured, instantiated CUDA graph (t4a_graph): the CUgraph, its
// CUgraphExec and everything the captured work uses (buffers, modules,
// host buffers, staging: the capture's keep list). Replays are kept alive
// by the runtime's completion epochs (reserve -> enqueue -> keep, a replay
// among the open epoch's last keeps adds nothing), so the destructor, which
// destroys the executable graph and the graph and drops the keeps, runs
// only when no handle holds the graph and its last replay was proven
// complete. It runs where a last reference is dropped: a graph release or
// an epoch retirement that hands objects out (synchronize, waits, teardown;
// a seal made for room parks it instead, core/epochs.hpp "Parking"), never
// on a CUDA callback thread (the library registers none).
#pragma once

#include <cuda.h>

#include <atomic>

#include "core/capture.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"

namespace t4a::capi {

class Graph final : public core::Object {
public:
  // t4a_capture_end: ends the runtime's capture (under admission) and
  // instantiates what it captured.
  static t4a_status end_capture(core::Ref<core::Runtime> rt,
                                core::Ref<Graph> *out);
  ~Graph() override;

  // t4a_graph_launch on `rt` (WRONG_RUNTIME unless the graph's).
  t4a_status launch(core::Runtime &rt);
  void info(t4a_graph_info *out) const;
  core::Runtime &runtime() const { return *rt_; }

  // Graphs alive in the process (tests).
  static uint64_t live();

private:
  explicit Graph(core::Ref<core::Runtime> rt);

  core::Ref<core::Runtime> rt_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  core::Capture::Items keeps_;
  uint64_t nodes_ = 0;
  std::atomic<uint64_t> launches_{0};
};

} // namespace t4a::capi
