// A runtime: one device's primary context (retained), one non-blocking
// stream, one explicit memory pool, one allocation-domain id (R-RT-1).
// Teardown (the destructor, run when the last reference goes) frees what
// was created only when completion of all work was proven; otherwise it
// leaks and logs (R-RT-5). A sticky driver error marks the runtime broken:
// from then on its operations return DEVICE_FAULT naming the original fault
// (R-RT-6).
#pragma once

#include <atomic>
#include <cuda.h>
#include <mutex>
#include <string>

#include "core/object.hpp"
#include "driver/cuda_api.hpp"
#include "t4acuda.h"

namespace t4a::core {

class Runtime final : public Object {
public:
  static t4a_status create(const t4a_runtime_options &options,
                           Ref<Runtime> *out);
  ~Runtime() override;

  // Host wait for the stream (counted); marks broken on a sticky error.
  t4a_status synchronize(const char *what);
  t4a_status trim();
  // destroy: drain; remembers whether completion was proven for teardown.
  t4a_status drain_for_destroy();

  void info(t4a_runtime_info *out) const;
  void stats(t4a_runtime_stats *out) const;

  // DEVICE_FAULT (with the original fault) once broken, else SUCCESS.
  t4a_status check_usable() const;
  // Records a driver failure; a sticky one marks the runtime broken.
  t4a_status fail_op(driver::DrvResult r, const char *what);

  int32_t ordinal() const { return ordinal_; }
  CUcontext context() const { return ctx_; }
  CUstream stream() const { return stream_; }
  uint64_t domain() const { return domain_; }

private:
  Runtime();
  void mark_broken(driver::DrvResult r, const char *what);
  void teardown();

  int32_t ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUmemoryPool pool_ = nullptr;
  uint64_t domain_ = 0;
  uint64_t release_threshold_ = 0;
  bool ctx_retained_ = false;

  // Completion of all enqueued work proven (set by a successful drain;
  // true while nothing was ever enqueued).
  std::atomic<bool> drained_{true};
  std::atomic<bool> broken_{false};
  mutable std::mutex fault_mu_;
  std::string fault_message_;
  int32_t fault_result_ = 0;

  std::atomic<uint64_t> host_waits_{0};
  std::atomic<uint64_t> trims_{0};
};

} // namespace t4a::core
