// The exception barrier every extern "C" entry point goes through: sets the
// entry point's name for last-error messages and turns any C++ exception
// into a status (std::bad_alloc -> OUT_OF_HOST_MEMORY, anything else ->
// INTERNAL). Nothing is thrown across the C boundary (R-ABI-7).
#pragma once

#include <exception>
#include <new>

#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"

namespace t4a::capi {

template <class F> t4a_status guarded(const char *entry, F &&body) noexcept {
  t4a_status s;
  try {
    s = body();
  } catch (const std::bad_alloc &) {
    s = core::fail_quietly(T4A_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    s = core::fail_quietly(T4A_ERROR_INTERNAL, e.what());
  } catch (...) {
    s = core::fail_quietly(T4A_ERROR_INTERNAL, "unknown exception");
  }
  if (s != T4A_SUCCESS && s != T4A_NOT_READY) [[unlikely]]
    core::finish_failure(entry, s);
  return s;
}

#define T4A_ENTRY(...)                                                         \
  ::t4a::capi::guarded(__func__, [&]() -> t4a_status __VA_ARGS__)

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

// Registers a new object and returns its id.
template <class T> uint64_t publish(core::Ref<T> obj) {
  return core::Registry::instance().insert(
      core::Ref<core::Object>(core::Ref<core::Object>::adopt(obj.detach())));
}

// Drops one handle reference of kind K (the null id is a no-op); the
// object goes when its last internal reference does.
inline t4a_status release_handle(uint64_t id, core::Kind kind,
                                 const char *arg) {
  if (id == T4A_NULL_ID) return T4A_SUCCESS;
  core::Ref<core::Object> removed;
  core::HandleCheck c = core::Registry::instance().release(id, kind, &removed);
  if (c != core::HandleCheck::Ok) return core::fail_handle(c, id, arg);
  return T4A_SUCCESS;
}

inline t4a_status retain_handle(uint64_t id, core::Kind kind, const char *arg) {
  core::HandleCheck c = core::Registry::instance().retain(id, kind);
  if (c != core::HandleCheck::Ok) return core::fail_handle(c, id, arg);
  return T4A_SUCCESS;
}

// Resolves the `runtime` argument every runtime operation takes.
inline t4a_status resolve_runtime(t4a_runtime h,
                                  core::Ref<core::Runtime> *out) {
  return resolve(h.id, core::Kind::Runtime, "runtime", out);
}

inline t4a_status null_arg(const char *arg) {
  return core::fail(T4A_ERROR_INVALID_ARGUMENT, "%s is NULL", arg);
}

} // namespace t4a::capi
