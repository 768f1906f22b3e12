#include "core/raw_scope.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>
#include <string>

#include "core/error.hpp"
#include "core/fork.hpp"
#include "core/log.hpp"
#include "core/op_scope.hpp"
#include "core/registry.hpp"

namespace t4a::core {

using namespace t4a::driver;

namespace {
// The innermost open raw scope of this thread (each links to the one below).
thread_local RawScope *tl_top = nullptr;

long this_tid() { return static_cast<long>(::syscall(SYS_gettid)); }

// A thread that exits with scopes open: they are ended when it exits, on
// that thread (the only one that may unlock their admission), last first,
// with a warning, and their handles go. Otherwise the runtime's admission
// would stay locked by a dead thread (its other operations and its destroy
// would wait forever), and a new thread given the same std::thread::id
// would pass for the owner (REENTRANT where it should be admitted). A
// pthread key (set while the thread has an open scope) runs this at thread
// exit; the main thread's exit ends the process instead. Not in a forked
// child: the parent's objects are unreachable there and leaked.
void end_at_thread_exit(void *) {
  if (in_forked_child()) return;
  while (RawScope *top = tl_top) {
    Ref<RawScope> keep(top);
    uint64_t id = top->handle_id();
    logf(T4A_LOG_WARN,
         "a thread (%ld) exited with a raw scope (id 0x%016llx) of runtime "
         "domain %llu still open; it is ended now (t4a_raw_end belongs "
         "before the thread's exit)",
         this_tid(), static_cast<unsigned long long>(id),
         static_cast<unsigned long long>(top->runtime().domain()));
    bool ended = false;
    (void)top->end(&ended);
    if (!ended) return; // cannot happen: `top` is this thread's innermost
    Ref<Object> removed;
    (void)Registry::instance().remove(id, Kind::RawScope, &removed);
  }
}

struct ExitKey {
  pthread_key_t key{};
  // Without a key (PTHREAD_KEYS_MAX reached) a thread that exits inside a
  // scope keeps the runtime locked, as without this: nothing else breaks.
  bool made = pthread_key_create(&key, end_at_thread_exit) == 0;
};

// Keeps the key's value non-null exactly while this thread has a scope
// open (a null value runs no destructor).
void track_top() {
  static const ExitKey k;
  if (k.made) (void)pthread_setspecific(k.key, tl_top); // fails only ENOMEM
}
} // namespace

RawScope::RawScope(Ref<Runtime> rt)
    : Object(Kind::RawScope), rt_(std::move(rt)) {}

RawScope::~RawScope() {
  // An open scope is destroyed only if its handle was never ended (the
  // registry is never destroyed, so only by a fork child's cleanup, which
  // leaks instead): its lock belongs to the thread that began it and is
  // not unlocked here.
  if (open_ && adm_) adm_->abandon();
}

t4a_status RawScope::begin(Ref<Runtime> rt, Ref<RawScope> *out) {
  Runtime &r = *rt;
  Ref<RawScope> s = Ref<RawScope>::adopt(new RawScope(std::move(rt)));
  // Holding admission: a failure below drops `s`, whose Admission unlocks
  // here, on the thread that locked it.
  s->adm_.emplace(r.admission());
  if (t4a_status st = s->adm_->status(); st != T4A_SUCCESS) return st;
  if (t4a_status st = r.check_usable(); st != T4A_SUCCESS) return st;
  // Under admission (an earlier check races another thread's capture).
  if (t4a_status st = refuse_capturing(r, "t4a_raw_begin"); st != T4A_SUCCESS)
    return st;
  CUcontext current = nullptr;
  if (auto e = cu::ctx_get_current(&current); !e)
    return r.fail_op(e, "reading the current context at t4a_raw_begin");
  if (current != r.context())
    if (auto e = cu::ctx_set_current(r.context()); !e)
      return r.fail_op(e, "making the runtime's context current");
  s->saved_ = current;
  s->owner_ = std::this_thread::get_id();
  s->owner_tid_ = static_cast<pid_t>(this_tid());
  s->open_ = true;
  s->below_ = tl_top;
  tl_top = s.get();
  track_top();
  r.admission().raw_scope = true;
  *out = std::move(s);
  return T4A_SUCCESS;
}

t4a_status RawScope::check_owner_thread(const char *what) const {
  if (!open_)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s: the raw scope (id 0x%016llx) has ended", what,
                static_cast<unsigned long long>(handle_id_));
  if (owner_ == std::this_thread::get_id()) return T4A_SUCCESS;
  return fail(T4A_ERROR_INVALID_ARGUMENT,
              "%s: the raw scope (id 0x%016llx) was begun on thread %ld and "
              "holds that thread's admission of the runtime (domain %llu); "
              "only that thread may register buffers and end it, and this "
              "is thread %ld",
              what, static_cast<unsigned long long>(handle_id_),
              static_cast<long>(owner_tid_),
              static_cast<unsigned long long>(rt_->domain()), this_tid());
}

t4a_status RawScope::hold(Ref<Object> obj) {
  for (const Ref<Object> &h : held_)
    if (h.get() == obj.get()) return T4A_SUCCESS; // registered already
  held_.push_back(std::move(obj));                // may throw bad_alloc
  return T4A_SUCCESS;
}

t4a_status RawScope::keep_held() {
  Runtime &rt = *rt_;
  t4a_status first = T4A_SUCCESS;
  size_t kept = 0;
  try {
    // One reservation at a time, each committed at once: the raw work is
    // enqueued already, so the epoch's event (recorded when it is sealed,
    // from now on) comes after it on the stream.
    for (; kept < held_.size(); ++kept) {
      Epochs::Reservation r = rt.epochs().reserve_keep(rt);
      if (r.status() != T4A_SUCCESS) {
        first = r.status();
        break;
      }
      rt.epochs().keep(std::move(r), std::move(held_[kept]));
    }
  } catch (const std::bad_alloc &) {
    first = fail(T4A_ERROR_OUT_OF_HOST_MEMORY,
                 "keeping the raw scope's buffers until the raw work is done");
  }
  if (kept == held_.size()) {
    held_.clear();
    return T4A_SUCCESS;
  }
  // Not kept by an epoch: a host wait proves the raw work complete, after
  // which the rest may go; should the wait fail, they are leaked (never
  // freed while the device may still use them).
  rt.counters().host_waits.add();
  if (DrvResult w = cu::stream_synchronize(rt.stream()); !w) {
    (void)rt.note_failure(w, "waiting for the raw work at t4a_raw_end");
    logf(T4A_LOG_WARN,
         "t4a_raw_end: %zu registered buffers of runtime domain %llu are "
         "leaked: their raw work cannot be proven complete",
         held_.size() - kept, static_cast<unsigned long long>(rt.domain()));
    for (size_t i = kept; i < held_.size(); ++i) (void)held_[i].detach();
  }
  held_.clear();
  return first;
}

t4a_status RawScope::end(bool *ended) {
  *ended = false;
  if (t4a_status s = check_owner_thread("ending it"); s != T4A_SUCCESS)
    return s;
  if (tl_top != this) {
    const RawScope *later = tl_top;
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "the raw scope (id 0x%016llx, runtime domain %llu) cannot end "
                "before the scope begun after it on this thread (id "
                "0x%016llx, runtime domain %llu), which is still open: raw "
                "scopes end in the reverse order of their t4a_raw_begin; "
                "nothing was ended",
                static_cast<unsigned long long>(handle_id_),
                static_cast<unsigned long long>(rt_->domain()),
                static_cast<unsigned long long>(
                    later != nullptr ? later->handle_id_ : 0),
                static_cast<unsigned long long>(
                    later != nullptr ? later->rt_->domain() : 0));
  }
  t4a_status first = keep_held();
  if (auto e = cu::ctx_set_current(saved_); !e) {
    std::string what =
        format("restoring the context that was current at t4a_raw_begin (%p)",
               static_cast<void *>(saved_));
    t4a_status s = rt_->fail_op(e, what.c_str());
    if (first == T4A_SUCCESS) first = s;
  }
  tl_top = below_;
  track_top();
  below_ = nullptr;
  open_ = false;
  rt_->admission().raw_scope = false;
  adm_.reset(); // unlocks; what was logged meanwhile is delivered now
  *ended = true;
  return first;
}

bool raw_scope_open_here(Runtime &rt) {
  AdmissionLock &lock = rt.admission();
  // raw_scope is read only by the owner, who wrote it.
  return lock.owner.load(std::memory_order_relaxed) ==
             std::this_thread::get_id() &&
         lock.raw_scope;
}

t4a_status wait_external_stream(Runtime &rt, CUstream stream) {
  OpScope op(rt, "making the runtime's stream wait for a stream",
             "t4a_runtime_wait_stream");
  if (op.status() != T4A_SUCCESS) return op.status();
  CUcontext ctx = nullptr;
  if (auto e = cu::stream_get_ctx(stream, &ctx); !e) {
    std::string what =
        format("finding the context of stream %p", static_cast<void *>(stream));
    return rt.fail_op(e, what.c_str());
  }
  // cuEventRecord needs an event of the stream's context; the runtime's
  // events are of its own.
  if (ctx != rt.context())
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "stream %p belongs to context %p, not to the runtime's "
                "context %p (the primary context of device %d): the runtime "
                "can wait only for streams of its own context; use a runtime "
                "of that stream's device, or t4a_runtime_signal_stream the "
                "other way round",
                static_cast<void *>(stream), static_cast<void *>(ctx),
                static_cast<void *>(rt.context()), rt.ordinal());
  CUevent e = nullptr;
  if (t4a_status s = rt.events().take(&e); s != T4A_SUCCESS) return s;
  if (auto r = cu::event_record(e, stream); !r) {
    rt.events().give_back(e); // not recorded: unchanged
    return rt.fail_op(r, "recording an event on the caller's stream");
  }
  rt.counters().events_recorded.add();
  // The wait uses the record made above; a later record of the recycled
  // event does not change it, so the event goes back to the pool at once.
  DrvResult w = cu::stream_wait_event(rt.stream(), e, 0);
  rt.events().give_back(e);
  if (!w)
    return rt.fail_op(w, "making the runtime's stream wait for the caller's "
                         "stream (cuStreamWaitEvent)");
  return T4A_SUCCESS;
}

t4a_status signal_external_stream(Runtime &rt, CUstream stream) {
  OpScope op(rt, "making a stream wait for the runtime's stream",
             "t4a_runtime_signal_stream");
  if (op.status() != T4A_SUCCESS) return op.status();
  CUevent e = nullptr;
  if (t4a_status s = rt.events().take(&e); s != T4A_SUCCESS) return s;
  if (auto r = cu::event_record(e, rt.stream()); !r) {
    rt.events().give_back(e);
    return rt.fail_op(r, "recording an event on the runtime's stream");
  }
  rt.counters().events_recorded.add();
  // cuStreamWaitEvent accepts an event of another context or device.
  DrvResult w = cu::stream_wait_event(stream, e, 0);
  rt.events().give_back(e);
  if (!w) {
    std::string what = format("making stream %p wait for the runtime's stream "
                              "(cuStreamWaitEvent)",
                              static_cast<void *>(stream));
    return rt.fail_op(w, what.c_str());
  }
  return T4A_SUCCESS;
}

} // namespace t4a::core
