// Completion epochs (R-RT-4). Resources that must outlive enqueued work but
// are not freed in stream order (staging chunks, host buffers, later
// modules and other runtimes' objects) are kept alive by the runtime's open
// epoch. The open epoch is sealed by one event record only when something
// must wait on it or its keepalives must be retired (staging pressure, too
// many keepalives, synchronize, teardown) — never one event per operation.
// Sealed epochs retire oldest first: by a non-blocking query where it pays
// (staging, allocation), by a counted host wait when the staging budget is
// exhausted, and without any query after a proven drain of the stream.
//
// All methods run under the runtime's admission lock. Retired keepalives
// are moved to the caller, who drops them after unlocking where it can
// (synchronize, allocation). Staging reservation drops them under the
// lock: that is safe because no destructor of a kept object takes an
// admission lock (buffers, host buffers and staging chunks free in stream
// order or with the driver alone), though a host buffer's cuMemFreeHost
// then runs while the lock is held.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "core/object.hpp"
#include "t4acuda.h"

namespace t4a::core {

class Runtime;

class Epochs {
public:
  using Items = std::vector<Ref<Object>>;

  // Makes room for one more keep, before the enqueue it will follow, so
  // that keep() cannot fail (run out of memory) once work is enqueued.
  void reserve_keep() { open_.reserve(open_.size() + 1); }
  // Keeps `obj` alive until the open epoch retires. Consecutive keeps of
  // one object add one item. Call reserve_keep() first.
  void keep(Ref<Object> obj);
  size_t open_items() const { return open_.size(); }
  // Whether the last keep of the open epoch was `obj` (keep() would add
  // nothing): lets a hot path skip reserve_keep() and the reference.
  bool keeps_last(const Object *obj) const { return last_ == obj; }
  bool has_sealed() const { return !sealed_.empty(); }
  uint64_t sealed_through() const { return next_seq_ - 1; }

  // Seals the open epoch with an event recorded on the runtime's stream.
  // Nothing happens when the open epoch is empty. With `record` false a
  // failure is not recorded as the thread's last error (the caller's own
  // operation succeeded); a sticky one still marks the runtime broken.
  t4a_status seal(Runtime &rt, bool record = true);
  // Retires completed sealed epochs, oldest first, without blocking.
  t4a_status poll(Runtime &rt, Items *out);
  // Waits on the host for the oldest sealed epoch (counted), retires it.
  t4a_status wait_oldest(Runtime &rt, Items *out);
  // After a drain proved all work up to sealed epoch `seq` complete.
  void retire_through(Runtime &rt, uint64_t seq, Items *out);
  // Teardown with completion proven: everything retires.
  void retire_all(Runtime &rt, Items *out);
  // Teardown without proof: the keepalives are leaked on purpose.
  void leak_all();

private:
  struct Sealed {
    uint64_t seq = 0;
    CUevent event = nullptr;
    Items items;
  };
  void retire_front(Runtime &rt, Items *out);

  // First, read by every launch: the last keep of the open epoch (null when
  // it is empty; compared without reading the item array) and the array.
  const Object *last_ = nullptr;
  Items open_;
  std::deque<Sealed> sealed_;
  uint64_t next_seq_ = 1;
};

} // namespace t4a::core
