// Handles at the C boundary: resolving a handle argument to its object,
// publishing a new object as a handle, retain/release, the NULL-argument
// checks, and capi::call, the one shape of an entry point's argument
// checks (see below).
#pragma once

#include <cstddef>
#include <tuple>
#include <utility>

#include "core/borrow.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"
#include "core/struct_io.hpp"

namespace t4a::memory {
class Buffer;
class HostBuffer;
class PendingDownload;
} // namespace t4a::memory
namespace t4a::compile {
class Artifact;
} // namespace t4a::compile
namespace t4a::core {
class RawScope;
} // namespace t4a::core
namespace t4a::launch {
class Module;
class Kernel;
} // namespace t4a::launch

namespace t4a::capi {
class Completion;
class Graph;

// Each C handle type: the object it names and that object's kind.
template <class H> struct HandleOf;
#define T4A_HANDLE_OF_(Handle, Type, K)                                        \
  template <> struct HandleOf<Handle> {                                        \
    using type = Type;                                                         \
    static constexpr core::Kind kind = core::Kind::K;                          \
  }
T4A_HANDLE_OF_(t4a_runtime, core::Runtime, Runtime);
T4A_HANDLE_OF_(t4a_buffer, memory::Buffer, Buffer);
T4A_HANDLE_OF_(t4a_host_buffer, memory::HostBuffer, HostBuffer);
T4A_HANDLE_OF_(t4a_download, memory::PendingDownload, Download);
T4A_HANDLE_OF_(t4a_artifact, compile::Artifact, Artifact);
T4A_HANDLE_OF_(t4a_module, launch::Module, Module);
T4A_HANDLE_OF_(t4a_kernel, launch::Kernel, Kernel);
T4A_HANDLE_OF_(t4a_completion, capi::Completion, Completion);
T4A_HANDLE_OF_(t4a_raw_scope, core::RawScope, RawScope);
T4A_HANDLE_OF_(t4a_graph, capi::Graph, Graph);
#undef T4A_HANDLE_OF_

// Resolves a handle id of kind K to a reference to T, or records
// INVALID_HANDLE naming the argument, the id and why.
template <class T>
t4a_status resolve(uint64_t id, core::Kind kind, const char *arg,
                   core::Ref<T> *out) {
  core::Ref<core::Object> obj;
  core::HandleCheck c = core::Registry::instance().resolve(id, kind, &obj);
  if (c != core::HandleCheck::Ok) return core::fail_handle(c, id, arg);
  *out = core::Ref<T>::adopt(static_cast<T *>(obj.detach()));
  return T4A_SUCCESS;
}

// Resolves the `runtime` argument every runtime operation takes.
inline t4a_status resolve_runtime(t4a_runtime h,
                                  core::Ref<core::Runtime> *out) {
  return resolve(h.id, core::Kind::Runtime, "runtime", out);
}

// Registers a new object and stores its handle in `*out`.
template <class H, class T>
[[gnu::always_inline]] inline t4a_status publish(core::Ref<T> obj, H *out) {
  out->id = core::Registry::instance().insert(
      core::Ref<core::Object>(core::Ref<core::Object>::adopt(obj.detach())));
  return T4A_SUCCESS;
}

// Drops one handle reference of kind K (the null id is a no-op); the
// object goes when its last internal reference does.
inline t4a_status release_handle(uint64_t id, core::Kind kind,
                                 const char *arg) {
  if (id == T4A_NULL_ID) return T4A_SUCCESS;
  // The registry retires its reference itself (core/borrow.hpp).
  core::HandleCheck c = core::Registry::instance().release(id, kind, nullptr);
  if (c != core::HandleCheck::Ok) return core::fail_handle(c, id, arg);
  return T4A_SUCCESS;
}

inline t4a_status retain_handle(uint64_t id, core::Kind kind, const char *arg) {
  core::HandleCheck c = core::Registry::instance().retain(id, kind);
  if (c != core::HandleCheck::Ok) return core::fail_handle(c, id, arg);
  return T4A_SUCCESS;
}

// t4a_<object>_retain / _release of a handle argument.
template <class H> t4a_status retain(H h, const char *arg) {
  return retain_handle(h.id, HandleOf<H>::kind, arg);
}
template <class H> t4a_status release(H h, const char *arg) {
  return release_handle(h.id, HandleOf<H>::kind, arg);
}

inline t4a_status null_arg(const char *arg) {
  return core::fail(T4A_ERROR_INVALID_ARGUMENT, "%s is NULL", arg);
}

// ---- capi::call ---------------------------------------------------------
//
// An entry point's first checks, in the order it lists them, then its body:
//
//   return capi::call(capi::in(runtime, "runtime"), capi::in(buffer, "dst"),
//                     capi::not_null(out, "out"),
//                     [&](Ref<core::Runtime> &rt,
//                         Ref<memory::Buffer> &b) -> t4a_status {
//                       ... checks that need the objects, then the call
//                     });
//
// Each item is checked in turn and the first failure is returned (so the
// order of the items is the order of the argument checks, which the entry
// point tests pin down). A handle item (capi::in) resolves to a reference
// that the body receives, in item order, as `core::Ref<T> &` (it may move
// it); the references live until the body has returned. Other items only
// check. The body returns t4a_status (spell it: `-> t4a_status`, since
// T4A_SUCCESS is an enumerator and t4a_status an int). Admission, context and
// driver calls belong to the layer the body calls, not here.

// A handle argument of object type T.
template <class T> struct In {
  using type = T;
  uint64_t id;
  core::Kind kind;
  const char *arg;
};
template <class H> In<typename HandleOf<H>::type> in(H h, const char *arg) {
  return {h.id, HandleOf<H>::kind, arg};
}

// A pointer argument that must not be NULL ("<arg> is NULL").
struct NotNull {
  const void *p;
  const char *arg;
};
inline NotNull not_null(const void *p, const char *arg) { return {p, arg}; }

// An out-struct argument: not NULL, struct_size set (core::check_out_struct).
template <class S> struct OutStruct {
  const S *p;
  const char *arg;
};
template <class S> OutStruct<S> out_struct(const S *p, const char *arg) {
  return {p, arg};
}

// Inside a borrow section: borrows a handle argument, or records
// INVALID_HANDLE naming it (each capi::in item of capi::call and
// capi::call_borrowed, and a further handle in a call_borrowed body).
template <class T>
[[gnu::always_inline]] inline t4a_status borrow(const In<T> &c, T **out) {
  core::Object *obj = nullptr;
  core::HandleCheck hc = core::Registry::instance().borrow(c.id, c.kind, &obj);
  if (hc != core::HandleCheck::Ok) return core::fail_handle(hc, c.id, c.arg);
  *out = static_cast<T *>(obj);
  return T4A_SUCCESS;
}

// Inside a borrow section (a gate window included): the handle's object,
// or nullptr, recording nothing, when it does not resolve (a fast path
// whose fallback reports it).
template <class T>
[[gnu::always_inline]] inline T *borrow_quietly(const In<T> &c) {
  core::Object *obj = nullptr;
  if (core::Registry::instance().borrow(c.id, c.kind, &obj) !=
      core::HandleCheck::Ok) [[unlikely]]
    return nullptr;
  return static_cast<T *>(obj);
}

namespace detail {

inline t4a_status check(const NotNull &c) {
  return c.p != nullptr ? T4A_SUCCESS : null_arg(c.arg);
}
template <class S> t4a_status check(const OutStruct<S> &c) {
  return core::check_out_struct(c.p, c.arg);
}

template <class C> constexpr bool is_in = false;
template <class T> constexpr bool is_in<In<T>> = true;

// The references an item list resolves to: one core::Ref<T> per handle
// item, in item order.
template <class C> struct RefsOf { using type = std::tuple<>; };
template <class T> struct RefsOf<In<T>> {
  using type = std::tuple<core::Ref<T>>;
};
template <class... C>
using Refs = decltype(std::tuple_cat(
    std::declval<typename RefsOf<std::decay_t<C>>::type>()...));

// What a handle item resolves to: a reference (capi::call) or the borrowed
// pointer itself (capi::call_borrowed).
template <class T> void keep(core::Ref<T> &slot, T *obj) {
  slot = core::Ref<T>(obj);
}
template <class T> void keep(T *&slot, T *obj) { slot = obj; }

// Checks item I onwards, in order; handle item I is the J-th. Runs inside
// the caller's borrow section: each handle is borrowed
// (Registry::borrow) and kept in `refs` (a reference taken before the
// section ends, or the pointer).
// Inlined into the entry point: one function per entry point rather than
// a call per item.
template <size_t I, size_t J, class Items, class R>
[[gnu::always_inline]] inline t4a_status check_items(const Items &items,
                                                     R &refs) {
  if constexpr (I == std::tuple_size_v<Items>) {
    return T4A_SUCCESS;
  } else {
    using C = std::decay_t<std::tuple_element_t<I, Items>>;
    const C &c = std::get<I>(items);
    if constexpr (is_in<C>) {
      typename C::type *obj = nullptr;
      if (t4a_status s = borrow(c, &obj); s != T4A_SUCCESS) return s;
      keep(std::get<J>(refs), obj);
      return check_items<I + 1, J + 1>(items, refs);
    } else {
      if (t4a_status s = check(c); s != T4A_SUCCESS) return s;
      return check_items<I + 1, J>(items, refs);
    }
  }
}

template <class Body, class R, size_t... K>
t4a_status run_body(Body &body, R &refs, std::index_sequence<K...>) {
  return body(std::get<K>(refs)...);
}

// The items are a[0..n-1], the body a[n].
template <class All, size_t... I>
t4a_status call_items(All &all, std::index_sequence<I...>) {
  auto items = std::forward_as_tuple(std::get<I>(all)...);
  Refs<std::tuple_element_t<I, All>...> refs;
  {
    // One borrow section for every handle of the call (a reference to
    // each is taken inside it): one section entry per entry point, not
    // one per handle. The body runs outside it, holding the references
    // (it may wait).
    core::BorrowSection section;
    if (t4a_status s = check_items<0, 0>(items, refs); s != T4A_SUCCESS)
      return s;
  }
  return run_body(
      std::get<sizeof...(I)>(all), refs,
      std::make_index_sequence<std::tuple_size_v<decltype(refs)>>());
}

// The pointers an item list borrows: one T * per handle item.
template <class C> struct PtrsOf { using type = std::tuple<>; };
template <class T> struct PtrsOf<In<T>> { using type = std::tuple<T *>; };
template <class... C>
using Ptrs = decltype(std::tuple_cat(
    std::declval<typename PtrsOf<std::decay_t<C>>::type>()...));

template <class Body, class P, size_t... K>
t4a_status run_borrowed(Body &body, core::BorrowSection &section, P &ptrs,
                        std::index_sequence<K...>) {
  return body(section, *std::get<K>(ptrs)...);
}

template <class All, size_t... I>
t4a_status call_borrowed_items(All &all, std::index_sequence<I...>) {
  auto items = std::forward_as_tuple(std::get<I>(all)...);
  Ptrs<std::tuple_element_t<I, All>...> ptrs;
  // Declared first, so destroyed after the section ended: what the body
  // logs (a driver failure under admission, a context retry) is delivered
  // outside the section, and no user callback runs inside it.
  core::LogDefer defer;
  core::BorrowSection section;
  if (t4a_status s = check_items<0, 0>(items, ptrs); s != T4A_SUCCESS) return s;
  return run_borrowed(
      std::get<sizeof...(I)>(all), section, ptrs,
      std::make_index_sequence<std::tuple_size_v<decltype(ptrs)>>());
}

} // namespace detail

// The items, then the body (last).
template <class... A> t4a_status call(A &&...a) {
  static_assert(sizeof...(A) >= 1, "capi::call needs a body");
  auto all = std::forward_as_tuple(a...);
  return detail::call_items(all, std::make_index_sequence<sizeof...(A) - 1>());
}

// ---- capi::call_borrowed -------------------------------------------------
//
// capi::call for a body that never waits on the host (a warm transfer from
// a host buffer): the same items, checked in the same order, but the body
// runs inside the borrow section that resolved the handles and receives
// `core::BorrowSection &`, then `T &` per handle item, in item order: no
// reference is counted. The objects stay valid until the body returns
// (core/borrow.hpp); the body takes admission with core::SectionAdmission
// (given the section and what it borrowed), which leaves the section for
// a wait on a busy lock. What the body logs is delivered after the
// section has ended; failures are recorded (core::fail records, it does
// not log) and reported by the entry guard after the call returned.
template <class... A> t4a_status call_borrowed(A &&...a) {
  static_assert(sizeof...(A) >= 1, "capi::call_borrowed needs a body");
  auto all = std::forward_as_tuple(a...);
  return detail::call_borrowed_items(
      all, std::make_index_sequence<sizeof...(A) - 1>());
}

} // namespace t4a::capi
