// A part of a runtime owned by a higher layer (the memory layer's staging
// ring and copy workers). The runtime holds it type-erased so core does not
// depend on memory; teardown tells it whether completion was proven.
#pragma once

namespace t4a::core {

class RuntimeComponent {
public:
  virtual ~RuntimeComponent() = default;
  // Frees what it owns when `completion_proven`, else leaks and counts.
  virtual void teardown(bool completion_proven) = 0;
  // t4a_runtime_destroy drained the stream: drop the references this part
  // holds to objects that hold the runtime (cached modules), which would
  // otherwise keep it alive for ever. Runs under admission, after destroy
  // closed it: no operation is admitted afterwards, so nothing refills
  // the part (admission.hpp).
  virtual void on_destroy() {}
};

} // namespace t4a::core
