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

namespace t4a::core {
// Where each field of t4a_dlpack_desc begins (core/struct_io.hpp).
template <> struct FieldStarts<t4a_dlpack_desc> {
  static constexpr size_t at[] = {offsetof(t4a_dlpack_desc, flags),
                                  offsetof(t4a_dlpack_desc, dtype_code),
                                  offsetof(t4a_dlpack_desc, dtype_bits),
                                  offsetof(t4a_dlpack_desc, dtype_lanes),
                                  offsetof(t4a_dlpack_desc, ndim),
                                  offsetof(t4a_dlpack_desc, shape),
                                  offsetof(t4a_dlpack_desc, strides),
                                  offsetof(t4a_dlpack_desc, byte_offset)};
};
} // namespace t4a::core

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

// ---- shapes ----------------------------------------------------------------

// The element span of a shape and strides (in elements): the lowest and
// highest element offsets. false on overflow (`*why` says where).
struct Span {
  bool empty = false;
  int64_t lo = 0, hi = 0;
};

t4a_status span_of(const char *prefix, int32_t ndim, const int64_t *shape,
                   const int64_t *strides, Span *out) {
  Span s;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0)
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "%sshape[%d] is %lld; extents must not be negative", prefix,
                  i, static_cast<ll>(shape[i]));
    if (shape[i] == 0) s.empty = true;
  }
  if (s.empty) {
    *out = s;
    return T4A_SUCCESS;
  }
  for (int32_t i = 0; i < ndim; ++i) {
    int64_t reach = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach))
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "%sshape[%d] (%lld) times %sstrides[%d] (%lld) overflows "
                  "64 bits",
                  prefix, i, static_cast<ll>(shape[i]), prefix, i,
                  static_cast<ll>(strides[i]));
    int64_t *side = reach < 0 ? &s.lo : &s.hi;
    if (__builtin_add_overflow(*side, reach, side))
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "%sshape and %sstrides reach past 64 bits at dimension %d",
                  prefix, prefix, i);
  }
  *out = s;
  return T4A_SUCCESS;
}

// C-contiguous strides (in elements) of `shape`.
t4a_status compact_strides(const char *prefix, int32_t ndim,
                           const int64_t *shape, int64_t *strides) {
  int64_t step = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    strides[i] = step;
    if (shape[i] > 0 && __builtin_mul_overflow(step, shape[i], &step))
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "%sshape: the element count overflows 64 bits at "
                  "dimension %d (%lld)",
                  prefix, i, static_cast<ll>(shape[i]));
  }
  return T4A_SUCCESS;
}

// Bytes per element of a dtype (bits * lanes, a multiple of 8).
t4a_status element_bytes(const char *prefix, uint8_t code, uint8_t bits,
                         uint16_t lanes, uint64_t *out) {
  if (code > kDLBool)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%sdtype code is %u; known codes are kDLInt (0), kDLUInt (1), "
                "kDLFloat (2), kDLOpaqueHandle (3), kDLBfloat (4), "
                "kDLComplex (5) and kDLBool (6)",
                prefix, code);
  uint64_t total = static_cast<uint64_t>(bits) * lanes;
  if (total == 0 || total % 8 != 0)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%sdtype bits (%u) times lanes (%u) is %llu; it must be a "
                "positive multiple of 8 (sub-byte element types are not "
                "supported)",
                prefix, bits, lanes, static_cast<ull>(total));
  *out = total / 8;
  return T4A_SUCCESS;
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
  if ((d.flags & ~T4A_DLPACK_READ_ONLY) != 0)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "desc->flags is 0x%x; only T4A_DLPACK_READ_ONLY (0x1) is known",
                d.flags);
  bool read_only = (d.flags & T4A_DLPACK_READ_ONLY) != 0 || b->read_only();
  if (out_legacy != nullptr && read_only)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s: a legacy DLManagedTensor has no flags to say it is "
                "read-only; use t4a_buffer_to_dlpack",
                b->read_only() ? "the buffer is a read-only import"
                               : "desc->flags has T4A_DLPACK_READ_ONLY");
  if (consumer_stream == 0)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "consumer_stream is 0, which the DLPack stream coding leaves "
                "ambiguous; pass 1 (the legacy default stream), 2 (the "
                "per-thread default stream), -1 (no synchronization) or a "
                "CUstream");
  if (consumer_stream < -1)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "consumer_stream is %lld; the DLPack stream coding knows -1, "
                "1, 2 and CUstream values",
                static_cast<ll>(consumer_stream));
  uint8_t code = d.dtype_code;
  uint8_t bits = d.dtype_bits != 0 ? d.dtype_bits : 8;
  uint16_t lanes = d.dtype_lanes != 0 ? d.dtype_lanes : 1;
  if (d.dtype_bits == 0 && d.dtype_code == 0) code = kDLUInt;
  uint64_t elem = 0;
  if (t4a_status s = element_bytes("desc->", code, bits, lanes, &elem);
      s != T4A_SUCCESS)
    return s;
  if (d.ndim < 0 || d.ndim > T4A_DLPACK_MAX_NDIM)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "desc->ndim is %d; it must be 0..%d", d.ndim,
                T4A_DLPACK_MAX_NDIM);
  if (d.byte_offset > b->bytes())
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "desc->byte_offset (%llu) is past the end of the buffer (%llu "
                "bytes)",
                static_cast<ull>(d.byte_offset), static_cast<ull>(b->bytes()));

  auto x = std::make_unique<Exported>();
  int32_t ndim = d.ndim;
  if (ndim == 0) {
    uint64_t rest = b->bytes() - d.byte_offset;
    if (rest % elem != 0)
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "desc->ndim is 0 (1-D over the buffer from "
                  "desc->byte_offset): the %llu bytes from byte_offset %llu "
                  "are not a whole number of %llu-byte elements",
                  static_cast<ull>(rest), static_cast<ull>(d.byte_offset),
                  static_cast<ull>(elem));
    ndim = 1;
    x->shape[0] = static_cast<int64_t>(rest / elem);
    x->strides[0] = 1;
  } else {
    if (d.shape == nullptr)
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "desc->shape is NULL with desc->ndim %d", d.ndim);
    for (int32_t i = 0; i < ndim; ++i) x->shape[i] = d.shape[i];
    if (d.strides != nullptr) {
      for (int32_t i = 0; i < ndim; ++i) x->strides[i] = d.strides[i];
    } else if (t4a_status s =
                   compact_strides("desc->", ndim, x->shape, x->strides);
               s != T4A_SUCCESS) {
      return s;
    }
    Span sp;
    if (t4a_status s = span_of("desc->", ndim, x->shape, x->strides, &sp);
        s != T4A_SUCCESS)
      return s;
    if (!sp.empty) {
      // Bytes below and from the first element, checked against the
      // buffer: [byte_offset + lo * elem, byte_offset + (hi + 1) * elem).
      // -lo in unsigned arithmetic: lo may be INT64_MIN.
      int64_t below = 0, above = 0;
      if (__builtin_mul_overflow(0 - static_cast<uint64_t>(sp.lo), elem,
                                 &below) ||
          __builtin_add_overflow(sp.hi, 1, &above) ||
          __builtin_mul_overflow(above, static_cast<int64_t>(elem), &above))
        return fail(T4A_ERROR_INVALID_ARGUMENT,
                    "desc->shape and desc->strides reach past 64 bits of "
                    "bytes");
      if (static_cast<uint64_t>(below) > d.byte_offset)
        return fail(T4A_ERROR_INVALID_ARGUMENT,
                    "desc->strides: negative strides reach %lld bytes below "
                    "the first element, but desc->byte_offset is only %llu",
                    static_cast<ll>(below), static_cast<ull>(d.byte_offset));
      if (static_cast<uint64_t>(above) > b->bytes() - d.byte_offset)
        return fail(T4A_ERROR_INVALID_ARGUMENT,
                    "desc->shape and desc->strides reach byte %llu (%lld "
                    "elements of %llu bytes from desc->byte_offset %llu), "
                    "past the end of the buffer (%llu bytes)",
                    static_cast<ull>(d.byte_offset) + static_cast<ull>(above),
                    static_cast<ll>(sp.hi + 1), static_cast<ull>(elem),
                    static_cast<ull>(d.byte_offset),
                    static_cast<ull>(b->bytes()));
    }
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
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = lanes;
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
    p->v.flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
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
  if (version != nullptr && version->major != DLPACK_MAJOR_VERSION)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "tensor->version is %u.%u; only DLPack major version 1 is "
                "supported (the tensor's deleter was called)",
                version->major, version->minor);
  const char *pre = "tensor->dl_tensor.";
  if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCUDAManaged)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%sdevice.device_type is %d; only kDLCUDA (2) and "
                "kDLCUDAManaged (13) tensors can be imported",
                pre, static_cast<int>(t.device.device_type));
  if (t.device.device_id != rt->ordinal())
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%sdevice.device_id is %d, but the runtime is of device %d",
                pre, t.device.device_id, rt->ordinal());
  uint64_t elem = 0;
  if (t4a_status s = element_bytes("tensor->dl_tensor.", t.dtype.code,
                                   t.dtype.bits, t.dtype.lanes, &elem);
      s != T4A_SUCCESS)
    return s;
  if (t.ndim < 0 || t.ndim > T4A_DLPACK_MAX_NDIM)
    return fail(T4A_ERROR_INVALID_ARGUMENT, "%sndim is %d; it must be 0..%d",
                pre, t.ndim, T4A_DLPACK_MAX_NDIM);
  if (t.ndim > 0 && t.shape == nullptr)
    return fail(T4A_ERROR_INVALID_ARGUMENT, "%sshape is NULL with ndim %d", pre,
                t.ndim);
  int64_t strides[T4A_DLPACK_MAX_NDIM] = {};
  if (t.strides != nullptr) {
    for (int32_t i = 0; i < t.ndim; ++i) strides[i] = t.strides[i];
  } else if (t4a_status s = compact_strides(pre, t.ndim, t.shape, strides);
             s != T4A_SUCCESS) {
    return s;
  }
  Span sp;
  if (t4a_status s = span_of(pre, t.ndim, t.shape, strides, &sp);
      s != T4A_SUCCESS)
    return s;
  uint64_t bytes = 0;
  CUdeviceptr start = 0;
  if (!sp.empty) {
    if (t.data == nullptr)
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "%sdata is NULL for a tensor with elements", pre);
    // [data + byte_offset + lo * elem, data + byte_offset + (hi+1) * elem)
    uint64_t base = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.data));
    // hi >= 0 >= lo: -lo and hi - lo fit 64 unsigned bits (lo may be
    // INT64_MIN, hi - lo may pass INT64_MAX).
    uint64_t first = 0, below = 0, count = 0;
    uint64_t down = 0 - static_cast<uint64_t>(sp.lo);
    if (__builtin_add_overflow(base, t.byte_offset, &first) ||
        __builtin_mul_overflow(down, elem, &below) || below > first ||
        __builtin_add_overflow(static_cast<uint64_t>(sp.hi) + down, 1,
                               &count) ||
        __builtin_mul_overflow(count, elem, &bytes) ||
        first - below > UINT64_MAX - bytes)
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "%sdata (%p) + byte_offset (%llu) with the shape and "
                  "strides reaches outside the 64-bit address space",
                  pre, t.data, static_cast<ull>(t.byte_offset));
    start = first - below;
  }
  bool read_only = legacy || (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  {
    // The part that queues the buffer's release, made under admission
    // (a destroyed runtime refuses the import here).
    core::Admission adm(rt->admission());
    if (adm.status() != T4A_SUCCESS) return adm.status();
    if (t4a_status s = rt->check_usable(); s != T4A_SUCCESS) return s;
    if (releases(*rt) == nullptr)
      rt->set_part(k_foreign_slot, std::make_unique<ForeignReleases>(*rt));
  }
  *out = Buffer::adopt_foreign(std::move(rt), start, bytes, read_only,
                               std::move(owner));
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
