#include "memory/dlpack.hpp"

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/admission.hpp"
#include "core/component.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/op_scope.hpp"
#include "core/raw_scope.hpp"
#include "core/stream_context.hpp"
#include "core/struct_io.hpp"
#include "memory/dlpack_validation.hpp"


namespace t4a::memory {

using namespace t4a::driver;
using core::fail;

namespace {

using ll = long long;
using ull = unsigned long long;

// ---- the foreign owner of an imported tensor -----------------------------

class ForeignOwner final : public core::Object {
public:
  ForeignOwner(void *tensor, void (*call)(void *))
      : Object(core::Kind::Internal), tensor_(tensor), call_(call) {}
  ~ForeignOwner() override { call_(tensor_); }

private:
  void *tensor_;
  void (*call_)(void *);
};

void call_versioned(void *p) {
  auto *t = static_cast<DLManagedTensorVersioned *>(p);
  if (t->deleter != nullptr) t->deleter(t);
}
void call_legacy(void *p) {
  auto *t = static_cast<DLManagedTensor *>(p);
  if (t->deleter != nullptr) t->deleter(t);
}

core::Ref<core::Object> adopt(void *tensor, void (*call)(void *)) {
  if (tensor == nullptr) return nullptr;
  try {
    return core::Ref<core::Object>::adopt(new ForeignOwner(tensor, call));
  } catch (const std::bad_alloc &) {
    call(tensor); // owned in every case: handed back before the failure
    throw;
  }
}

// ---- pending foreign releases: a runtime part -----------------------------

const core::PartSlot k_foreign_slot =
    core::register_part("foreign releases", 130);

// Also the releases of module-global views (Buffer::adopt_view): their
// owner is the module (`view`), which holds the runtime, so the drained
// destroy drops them (on_destroy) rather than the teardown, which they
// would otherwise keep from ever running. Dropping a module runs no user
// code (it may unload the module there).
class ForeignReleases final : public core::RuntimeComponent {
public:
  explicit ForeignReleases(core::Runtime &rt) : rt_(rt) {}
  ~ForeignReleases() override { leak_all("the runtime part went away"); }

  // From an imported buffer's or a view's destructor (any thread, maybe
  // under the runtime's admission): no user code here.
  void add(core::Ref<core::Object> owner, bool view) noexcept {
    if (rt_.completion_unprovable()) {
      // A module dropped now leaks its image itself (counted as a leaked
      // module: launch/module.hpp), but gives its runtime reference back.
      if (view) {
        owner.reset();
        return;
      }
      leak(std::move(owner), "the runtime's completion cannot be proven");
      return;
    }
    CUevent e = nullptr;
    // Without an event the entry is released only by a proven drain
    // (synchronize, teardown): never early.
    if (rt_.events().take(&e, false) == T4A_SUCCESS) {
      // Not on a capturing stream (the record would be captured, the
      // capture invalidated): while the runtime captures, no event, the
      // next proven drain releases it. Checked and recorded under the
      // capture gate (core/capture.hpp).
      DrvResult r{};
      bool capturing = false;
      {
        std::shared_lock<core::CaptureGate> gate(rt_.capture().gate());
        capturing = rt_.capturing();
        if (!capturing)
          r = core::in_stream_context(
              rt_, [&] { return cu::event_record(e, rt_.stream()); });
      }
      if (capturing) {
        rt_.events().give_back(e);
        e = nullptr;
      } else if (r) {
        rt_.counters().events_recorded.add();
      } else {
        rt_.events().give_back(e);
        e = nullptr;
        // The release still happens, after the next proven drain.
        (void)rt_.note_failure(r, view ? "recording the release event of a "
                                         "module global's view"
                                       : "recording the release event of an "
                                         "imported DLPack buffer");
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A view released after the drained destroy (on_destroy): its work
      // is proven complete (nothing is admitted after the drain); dropped
      // below rather than queued, where nothing would ever drop it.
      if (!(view && destroyed_)) {
        try {
          pending_.push_back(Pending{e, next_seq_++, owner.get(), view});
          (void)owner.detach(); // owned by the entry now
        } catch (const std::bad_alloc &) {
          if (e != nullptr) rt_.events().give_back(e);
          leak(std::move(owner), "no host memory to queue its release", view);
        }
        return;
      }
    }
    if (e != nullptr) rt_.events().give_back(e);
    owner.reset();
  }

  // t4a_runtime_destroy drained the stream (under admission): the views'
  // modules are proven unused and hold the runtime; dropped here. Imported
  // owners stay for the teardown (their deleters are user code, which
  // never runs under a library lock).
  void on_destroy() override {
    std::vector<core::Object *> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      destroyed_ = true;
      size_t keep = 0;
      done.reserve(pending_.size());
      for (Pending &p : pending_) {
        if (p.view) {
          if (p.event != nullptr) rt_.events().give_back(p.event);
          done.push_back(p.owner);
        } else {
          pending_[keep++] = p;
        }
      }
      pending_.resize(keep);
    }
    drop(done);
  }

  // Entries whose event completed (non-blocking queries).
  void reap() {
    std::vector<core::Object *> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.empty()) return;
      done.reserve(pending_.size());
      size_t keep = 0;
      for (Pending &p : pending_) {
        bool complete = false;
        if (p.event != nullptr) {
          DrvResult r = core::in_stream_context(
              rt_, [&] { return cu::event_query(p.event); });
          // NOT_READY and failures leave it for a proven drain.
          complete = static_cast<bool>(r);
        }
        if (complete) {
          rt_.events().give_back(p.event);
          done.push_back(p.owner);
        } else {
          pending_[keep++] = p;
        }
      }
      pending_.resize(keep);
    }
    drop(done); // the deleters run here, no lock held
  }

  uint64_t mark() {
    std::lock_guard<std::mutex> lock(mu_);
    return next_seq_ - 1;
  }

  // A drain proved the work before `mark` complete.
  void release_through(uint64_t mark) {
    std::vector<core::Object *> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      size_t keep = 0;
      done.reserve(pending_.size());
      for (Pending &p : pending_) {
        if (p.seq <= mark) {
          if (p.event != nullptr) rt_.events().give_back(p.event);
          done.push_back(p.owner);
        } else {
          pending_[keep++] = p;
        }
      }
      pending_.resize(keep);
    }
    drop(done);
  }

  void teardown(bool completion_proven) override {
    if (!completion_proven) {
      leak_all("the runtime's completion was not proven at teardown");
      return;
    }
    release_through(UINT64_MAX);
  }

private:
  struct Pending {
    CUevent event; // recorded after the buffer's last use, or null
    uint64_t seq;
    core::Object *owner; // one reference
    bool view;           // the owner is a view's module
  };

  static void drop(std::vector<core::Object *> &done) {
    for (core::Object *o : done) o->drop_ref();
  }
  void leak(core::Ref<core::Object> owner, const char *why, bool view = false) {
    rt_.counters().quarantined.add();
    core::logf(T4A_LOG_WARN, "%s of runtime domain %llu is leaked (%s): %s",
               view ? "a module global's view" : "an imported DLPack buffer",
               static_cast<ull>(rt_.domain()),
               view ? "its module is never unloaded"
                    : "its deleter is never called",
               why);
    (void)owner.detach();
  }
  void leak_all(const char *why) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Pending &p : pending_) {
      rt_.counters().quarantined.add();
      core::logf(T4A_LOG_WARN, "%s of runtime domain %llu is leaked (%s): %s",
                 p.view ? "a module global's view"
                        : "an imported DLPack buffer",
                 static_cast<ull>(rt_.domain()),
                 p.view ? "its module is never unloaded"
                        : "its deleter is never called",
                 why);
    }
    pending_.clear();
  }

  core::Runtime &rt_;
  std::mutex mu_;
  std::vector<Pending> pending_;
  uint64_t next_seq_ = 1;
  bool destroyed_ = false; // on_destroy ran (under mu_)
};

// The part, read where its creation (under admission) happened before:
// an imported buffer's release.
ForeignReleases *releases(core::Runtime &rt) {
  return static_cast<ForeignReleases *>(rt.part(k_foreign_slot));
}
// The part read under admission (Internal: a destroyed runtime still
// releases), for callers that no import ordered; null when there is none
// or when this thread holds the runtime's admission (a raw scope). A
// runtime that never imported has none: found without admission (the
// common t4a_runtime_synchronize pays no lock for it).
ForeignReleases *releases_admitted(core::Runtime &rt) {
  if (!rt.part_made(k_foreign_slot)) return nullptr;
  if (core::raw_scope_open_here(rt)) return nullptr; // would be REENTRANT
  core::Admission adm(rt.admission(), core::Admission::Internal);
  if (adm.status() != T4A_SUCCESS) return nullptr;
  return releases(rt); // lives until the runtime's teardown
}

// ---- export ----------------------------------------------------------------

struct Exported {
  DLManagedTensorVersioned v{};
  DLManagedTensor legacy{};
  int64_t shape[T4A_DLPACK_MAX_NDIM] = {};
  int64_t strides[T4A_DLPACK_MAX_NDIM] = {};
  core::Ref<Buffer> buffer;
  int64_t stream_code = -1;
  CUstream consumer = nullptr;
};

// The deleter's work (any thread, no admission, no wait): the runtime's
// stream waits for the consumer's work so far, then the reference goes.
void retire_export(Exported *x) noexcept {
  Buffer &b = *x->buffer;
  core::Runtime &rt = b.runtime();
  if (x->stream_code != -1 && !rt.completion_unprovable()) {
    // Codes 1 and 2: the legacy default stream of the runtime's context,
    // which orders after the work of every blocking stream of it (the
    // per-thread default streams of all threads included), so the thread
    // running the deleter does not matter.
    CUstream s = x->stream_code <= 2 ? CU_STREAM_LEGACY : x->consumer;
    bool ordered = false;
    core::ContextScope scope;
    if (scope.enter(rt.context(), "a DLPack deleter", false) == T4A_SUCCESS) {
      CUevent e = nullptr;
      if (rt.events().take(&e, false) == T4A_SUCCESS) {
        DrvResult r = cu::event_record(e, s);
        if (r) {
          rt.counters().events_recorded.add();
          // While the runtime captures, a wait on its stream would be
          // captured (and invalidate the capture): the consumer's work is
          // waited for on the host instead (rare: a deleter run during a
          // capture). Checked and enqueued under the capture gate.
          std::shared_lock<core::CaptureGate> gate(rt.capture().gate());
          if (rt.capturing()) [[unlikely]] {
            gate.unlock();
            rt.counters().host_waits.add();
            r = cu::event_synchronize(e);
          } else {
            r = cu::stream_wait_event(rt.stream(), e, 0);
          }
        }
        // The wait (if made) uses the record above: the event may go back.
        rt.events().give_back(e);
        if (r)
          ordered = true;
        else
          (void)rt.note_failure(r, "ordering a DLPack buffer's free after "
                                   "the consumer stream");
      }
    }
    if (!ordered) {
      // Freed too early it could be used by the consumer's work: never
      // freed instead (counted, logged).
      core::logf(T4A_LOG_WARN,
                 "DLPack deleter: the consumer stream %p could not be "
                 "ordered before the buffer's free; the buffer (%llu "
                 "bytes) is leaked",
                 static_cast<void *>(s), static_cast<ull>(b.bytes()));
      b.quarantine();
    }
  }
  delete x; // drops the buffer reference
}

void delete_versioned(DLManagedTensorVersioned *self) {
  if (self == nullptr) return;
  retire_export(static_cast<Exported *>(self->manager_ctx));
}
void delete_legacy(DLManagedTensor *self) {
  if (self == nullptr) return;
  retire_export(static_cast<Exported *>(self->manager_ctx));
}

// The consumer stream after the runtime's stream (coding checked).
t4a_status order_consumer(core::Runtime &rt, int64_t code, CUstream s) {
  if (code == -1) return T4A_SUCCESS;
  if (code > 2) {
    CUcontext ctx = nullptr;
    if (DrvResult r = cu::stream_get_ctx(s, &ctx); !r) {
      std::string what = core::format(
          "finding the context of consumer_stream %p", static_cast<void *>(s));
      return rt.fail_op(r, what.c_str());
    }
    if (ctx != rt.context())
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "consumer_stream %p belongs to context %p, not to the "
                  "runtime's context %p (the primary context of device %d): "
                  "the tensor's deleter records an event on it, which needs "
                  "a stream of the runtime's context",
                  static_cast<void *>(s), static_cast<void *>(ctx),
                  static_cast<void *>(rt.context()), rt.ordinal());
  }
  return core::signal_external_stream(rt, s);
}

// The import's range against the allocation the driver says holds its
// first byte (cuMemGetAddressRange; under the runtime's admission). Memory
// the driver does not know (its answer INVALID_VALUE, as documented, or
// NOT_FOUND, as drivers answer: host memory, some foreign allocators) is
// refused: its size cannot be checked. One allocation: a tensor spanning
// several adjacent cuMemMap mappings is refused (the driver reports the
// mapping holding the pointer only).
t4a_status check_allocation(core::Runtime &rt, const DLTensor &t,
                            const ImportRange &range) {
  CUdeviceptr base = 0;
  size_t size = 0;
  // With the runtime's context current: drivers answer INVALID_CONTEXT
  // without one and NOT_FOUND for memory of another device than the
  // current context's.
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), "checking an imported "
                                               "tensor's allocation");
      s != T4A_SUCCESS)
    return s;
  DrvResult r = cu::mem_get_address_range(
      &base, &size, static_cast<CUdeviceptr>(range.start));
  if (r.code == CUDA_ERROR_INVALID_VALUE || r.code == CUDA_ERROR_NOT_FOUND)
    return core::fail_message(
        T4A_ERROR_INVALID_ARGUMENT,
        core::format(
            "tensor->dl_tensor: the tensor describes %llu bytes at 0x%llx "
            "(data "
            "%p + byte_offset %llu, with its shape and strides), but the CUDA "
            "driver knows no allocation holding 0x%llx (cuMemGetAddressRange: "
            "%s), so its size cannot be checked; only memory of the driver's "
            "allocators (cuMemAlloc, memory pools, cuMemAllocManaged, "
            "cuMemMap) "
            "can be imported",
            static_cast<ull>(range.bytes), static_cast<ull>(range.start),
            t.data, static_cast<ull>(t.byte_offset),
            static_cast<ull>(range.start), error_name(r.code)),
        static_cast<int32_t>(r.code));
  if (!r)
    return rt.fail_op(r, "asking the driver for the allocation of an "
                         "imported tensor (cuMemGetAddressRange)");
  core::Check check;
  check_import_allocation(range, t.data, t.byte_offset,
                          static_cast<uint64_t>(base), size, &check);
  if (!check.ok()) return fail(check.status, "%s", check.message);
  return T4A_SUCCESS;
}

} // namespace

core::Ref<core::Object> adopt_versioned(DLManagedTensorVersioned *t) {
  return adopt(t, call_versioned);
}
core::Ref<core::Object> adopt_legacy(DLManagedTensor *t) {
  return adopt(t, call_legacy);
}

t4a_status export_dlpack(core::Runtime &rt, core::Ref<Buffer> b,
                         const t4a_dlpack_desc *desc, int64_t consumer_stream,
                         DLManagedTensorVersioned **out_v,
                         DLManagedTensor **out_legacy) {
  t4a_dlpack_desc d = T4A_DLPACK_DESC_INIT;
  if (desc != nullptr)
    if (t4a_status s = core::read_struct(desc, &d, "desc"); s != T4A_SUCCESS)
      return s;
  ExportLayout lay;
  core::Check check;
  check_export_desc(d, b->bytes(), b->read_only(), out_legacy != nullptr,
                    consumer_stream, &lay, &check);
  if (!check.ok()) return fail(check.status, "%s", check.message);
  auto x = std::make_unique<Exported>();
  for (int32_t i = 0; i < lay.ndim; ++i) {
    x->shape[i] = lay.shape[i];
    x->strides[i] = lay.strides[i];
  }

  x->stream_code = consumer_stream;
  CUstream s = nullptr;
  if (consumer_stream == 1) s = CU_STREAM_LEGACY;
  if (consumer_stream == 2) s = CU_STREAM_PER_THREAD;
  if (consumer_stream > 2)
    s = reinterpret_cast<CUstream>(static_cast<uintptr_t>(consumer_stream));
  x->consumer = s;
  if (t4a_status st = order_consumer(rt, consumer_stream, s); st != T4A_SUCCESS)
    return st;

  DLTensor t{};
  t.data = reinterpret_cast<void *>(static_cast<uintptr_t>(b->ptr()));
  t.device.device_type = kDLCUDA;
  t.device.device_id = rt.ordinal();
  t.ndim = lay.ndim;
  t.dtype.code = lay.code;
  t.dtype.bits = lay.bits;
  t.dtype.lanes = lay.lanes;
  t.shape = x->shape;
  t.strides = x->strides;
  t.byte_offset = d.byte_offset;
  x->buffer = std::move(b);
  Exported *p = x.release();
  if (out_v != nullptr) {
    p->v.version.major = DLPACK_MAJOR_VERSION;
    p->v.version.minor = DLPACK_MINOR_VERSION;
    p->v.manager_ctx = p;
    p->v.deleter = delete_versioned;
    p->v.flags = lay.read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    p->v.dl_tensor = t;
    *out_v = &p->v;
  } else {
    p->legacy.manager_ctx = p;
    p->legacy.deleter = delete_legacy;
    p->legacy.dl_tensor = t;
    *out_legacy = &p->legacy;
  }
  return T4A_SUCCESS;
}

// ---- import ----------------------------------------------------------------

t4a_status import_dlpack(core::Ref<core::Runtime> rt, const DLTensor &t,
                         const DLPackVersion *version, uint64_t flags,
                         bool legacy, core::Ref<core::Object> owner,
                         core::Ref<Buffer> *out) {
  ImportRange range;
  core::Check check;
  check_import_tensor(t, version, rt->ordinal(), &range, &check);
  if (!check.ok()) return fail(check.status, "%s", check.message);
  bool read_only = legacy || (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  {
    // The part that queues the buffer's release, made under admission
    // (a destroyed runtime refuses the import here).
    core::Admission adm(rt->admission());
    if (adm.status() != T4A_SUCCESS) return adm.status();
    if (t4a_status s = rt->check_usable(); s != T4A_SUCCESS) return s;
    if (releases(*rt) == nullptr)
      rt->set_part(k_foreign_slot, std::make_unique<ForeignReleases>(*rt));
    if (range.bytes > 0)
      if (t4a_status s = check_allocation(*rt, t, range); s != T4A_SUCCESS)
        return s;
  }
  *out = Buffer::adopt_foreign(std::move(rt), range.start, range.bytes,
                               read_only, std::move(owner));
  return T4A_SUCCESS;
}

// ---- releases ---------------------------------------------------------------

void release_foreign(core::Runtime &rt, core::Ref<core::Object> owner) {
  ForeignReleases *r = releases(rt);
  if (r == nullptr) { // cannot happen: the import made the part
    core::logf(T4A_LOG_WARN, "an imported DLPack buffer has no release queue; "
                             "its deleter is never called");
    (void)owner.detach();
    return;
  }
  r->add(std::move(owner), false);
}

t4a_status prepare_view_releases(core::Runtime &rt) {
  // As an import: made under admission (a destroyed runtime refuses here),
  // so that every later view release finds it.
  core::Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  if (releases(rt) == nullptr)
    rt.set_part(k_foreign_slot, std::make_unique<ForeignReleases>(rt));
  return T4A_SUCCESS;
}

void release_view(core::Runtime &rt, core::Ref<core::Object> module) {
  ForeignReleases *r = releases(rt);
  if (r == nullptr) { // cannot happen: making the view made the part
    core::logf(T4A_LOG_WARN, "a module global's view has no release queue; "
                             "its module is never unloaded");
    (void)module.detach();
    return;
  }
  r->add(std::move(module), true);
}

void reap_foreign(core::Runtime &rt) {
  if (ForeignReleases *r = releases_admitted(rt)) r->reap();
}

uint64_t mark_foreign(core::Runtime &rt) {
  ForeignReleases *r = releases_admitted(rt);
  return r != nullptr ? r->mark() : 0;
}

void release_foreign_through(core::Runtime &rt, uint64_t mark) {
  if (mark == 0 || rt.completion_unprovable()) return;
  if (ForeignReleases *r = releases_admitted(rt)) r->release_through(mark);
}

} // namespace t4a::memory
