/*
 * t4acuda — header-only C++17 RAII facade over the C API.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
/**
 * @file t4acuda.hpp
 * @brief Header-only C++17 facade over t4acuda.h.
 *
 * Each wrapper holds only its C handle. Owning wrappers are move-only and
 * release their handle in the destructor, which never throws. Non-owning
 * views (t4a::RuntimeView) borrow a handle the caller owns elsewhere.
 *
 * Errors: every throwing method throws t4a::Error (status, driver result,
 * entry point and the library's message). Every operation also has a
 * non-throwing overload taking `std::nothrow` that returns the
 * ::t4a_status and leaves the details in the thread's last error
 * (t4a::last_error_message()). Code built without exceptions (or with
 * `T4A_NO_EXCEPTIONS` defined) gets only the non-throwing overloads.
 *
 * Each method names the C function it wraps.
 */
#ifndef T4ACUDA_HPP
#define T4ACUDA_HPP

#include "t4acuda.h"

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

#if !defined(T4A_NO_EXCEPTIONS) &&                                            \
    (defined(__cpp_exceptions) || defined(__EXCEPTIONS))
/** 1 when the facade's throwing methods are available. */
#define T4A_HPP_EXCEPTIONS 1
#include <stdexcept>
#else
#define T4A_HPP_EXCEPTIONS 0
#endif

/** The t4acuda C++ facade. */
namespace t4a {

/**
 * @brief The calling thread's last error message (t4a_last_error_message()).
 * @return the full message; empty if no call failed on this thread.
 */
inline std::string last_error_message() {
  size_t needed = 0;
  if (t4a_last_error_message(nullptr, 0, &needed) != T4A_SUCCESS ||
      needed <= 1)
    return std::string();
  std::string s(needed, '\0');
  t4a_last_error_message(&s[0], s.size(), &needed);
  s.resize(needed - 1);
  return s;
}

#if T4A_HPP_EXCEPTIONS
/**
 * @brief A failed t4acuda call: status, driver result, entry point, message.
 */
class Error : public std::runtime_error {
public:
  /** Builds an error from explicit parts. */
  Error(t4a_status status, int32_t driver_result, std::string entry_point,
        const std::string &message)
      : std::runtime_error(message), status_(status),
        driver_result_(driver_result), entry_point_(std::move(entry_point)) {}

  /** Builds an error from the calling thread's last error. */
  static Error from_last_error(t4a_status status) {
    t4a_error_info info = T4A_ERROR_INFO_INIT;
    t4a_last_error(&info);
    std::string message = last_error_message();
    if (message.empty()) message = t4a_status_description(status);
    return Error(status, info.status == status ? info.driver_result : 0,
                 info.entry_point != nullptr ? info.entry_point : "",
                 std::string(t4a_status_name(status)) + ": " + message);
  }

  /** The ::t4a_status. */
  t4a_status status() const noexcept { return status_; }
  /** The CUresult the driver returned, or 0. */
  int32_t driver_result() const noexcept { return driver_result_; }
  /** The failing C entry point ("t4a_runtime_create"). */
  const std::string &entry_point() const noexcept { return entry_point_; }

private:
  t4a_status status_;
  int32_t driver_result_;
  std::string entry_point_;
};

/** @brief Throws t4a::Error unless `status` is T4A_SUCCESS. */
inline void check(t4a_status status) {
  if (status != T4A_SUCCESS) throw Error::from_last_error(status);
}
#endif

// ---------------------------------------------------------------------------
// Driver, compiler and devices
// ---------------------------------------------------------------------------

/** @brief Number of devices (t4a_device_count()); non-throwing. */
inline t4a_status device_count(int32_t &count, std::nothrow_t) noexcept {
  return t4a_device_count(&count);
}

/** @brief Device info (t4a_device_info_get()); non-throwing. */
inline t4a_status device_info(int32_t ordinal, t4a_device_info &info,
                              std::nothrow_t) noexcept {
  info = t4a_device_info T4A_DEVICE_INFO_INIT;
  return t4a_device_info_get(ordinal, &info);
}

/** @brief Driver version (t4a_driver_version()); non-throwing. */
inline t4a_status driver_version(int32_t &version, std::nothrow_t) noexcept {
  return t4a_driver_version(&version);
}

/** @brief NVRTC version (t4a_nvrtc_version()); non-throwing. */
inline t4a_status nvrtc_version(int32_t &major, int32_t &minor,
                                std::nothrow_t) noexcept {
  return t4a_nvrtc_version(&major, &minor);
}

/** @brief Peer access (t4a_device_can_access_peer()); non-throwing. */
inline t4a_status can_access_peer(int32_t ordinal, int32_t peer, bool &can,
                                  std::nothrow_t) noexcept {
  int32_t v = 0;
  t4a_status s = t4a_device_can_access_peer(ordinal, peer, &v);
  if (s == T4A_SUCCESS) can = v != 0;
  return s;
}

#if T4A_HPP_EXCEPTIONS
/** @brief Number of devices (t4a_device_count()). @throws Error */
inline int32_t device_count() {
  int32_t n = 0;
  check(t4a_device_count(&n));
  return n;
}

/** @brief Device info (t4a_device_info_get()). @throws Error */
inline t4a_device_info device_info(int32_t ordinal) {
  t4a_device_info info = T4A_DEVICE_INFO_INIT;
  check(t4a_device_info_get(ordinal, &info));
  return info;
}

/** @brief Driver version (t4a_driver_version()). @throws Error */
inline int32_t driver_version() {
  int32_t v = 0;
  check(t4a_driver_version(&v));
  return v;
}

/** @brief NVRTC version as {major, minor} (t4a_nvrtc_version()).
 *  @throws Error */
inline std::pair<int32_t, int32_t> nvrtc_version() {
  int32_t major = 0, minor = 0;
  check(t4a_nvrtc_version(&major, &minor));
  return {major, minor};
}

/** @brief Peer access (t4a_device_can_access_peer()). @throws Error */
inline bool can_access_peer(int32_t ordinal, int32_t peer) {
  int32_t v = 0;
  check(t4a_device_can_access_peer(ordinal, peer, &v));
  return v != 0;
}
#endif

// ---------------------------------------------------------------------------
// Runtime
// ---------------------------------------------------------------------------

/** @brief Runtime options with the defaults of #T4A_RUNTIME_OPTIONS_INIT. */
struct RuntimeOptions : t4a_runtime_options {
  /** The defaults. */
  RuntimeOptions() noexcept : t4a_runtime_options T4A_RUNTIME_OPTIONS_INIT {}
  /** Sets the device ordinal. */
  RuntimeOptions &device(int32_t ordinal) noexcept {
    device_ordinal = ordinal;
    return *this;
  }
  /** Sets the pool release threshold in bytes. */
  RuntimeOptions &release_threshold(uint64_t bytes) noexcept {
    pool_release_threshold = bytes;
    return *this;
  }
};

namespace detail {
/** Operations shared by the owning Runtime and the borrowing RuntimeView. */
template <class Derived> class RuntimeOps {
public:
  /** Host wait for all work (t4a_runtime_synchronize()); non-throwing. */
  t4a_status synchronize(std::nothrow_t) const noexcept {
    return t4a_runtime_synchronize(h());
  }
  /** Returns unused pool memory (t4a_runtime_trim()); non-throwing. */
  t4a_status trim(std::nothrow_t) const noexcept {
    return t4a_runtime_trim(h());
  }
  /** Describes the runtime (t4a_runtime_info_get()); non-throwing. */
  t4a_status info(t4a_runtime_info &out, std::nothrow_t) const noexcept {
    out = t4a_runtime_info T4A_RUNTIME_INFO_INIT;
    return t4a_runtime_info_get(h(), &out);
  }
  /** Reads the counters (t4a_runtime_stats_get()); non-throwing. */
  t4a_status stats(t4a_runtime_stats &out, std::nothrow_t) const noexcept {
    out = t4a_runtime_stats T4A_RUNTIME_STATS_INIT;
    return t4a_runtime_stats_get(h(), &out);
  }
#if T4A_HPP_EXCEPTIONS
  /** Host wait for all work (t4a_runtime_synchronize()). @throws Error */
  void synchronize() const { check(t4a_runtime_synchronize(h())); }
  /** Returns unused pool memory (t4a_runtime_trim()). @throws Error */
  void trim() const { check(t4a_runtime_trim(h())); }
  /** Describes the runtime (t4a_runtime_info_get()). @throws Error */
  t4a_runtime_info info() const {
    t4a_runtime_info out = T4A_RUNTIME_INFO_INIT;
    check(t4a_runtime_info_get(h(), &out));
    return out;
  }
  /** Reads the counters (t4a_runtime_stats_get()). @throws Error */
  t4a_runtime_stats stats() const {
    t4a_runtime_stats out = T4A_RUNTIME_STATS_INIT;
    check(t4a_runtime_stats_get(h(), &out));
    return out;
  }
#endif

private:
  t4a_runtime h() const noexcept {
    return static_cast<const Derived *>(this)->get();
  }
};
} // namespace detail

/**
 * @brief A runtime handle the caller does not own (no release on scope exit).
 */
class RuntimeView : public detail::RuntimeOps<RuntimeView> {
public:
  /** The null view. */
  RuntimeView() noexcept = default;
  /** Borrows `handle`; the owner must keep it alive while the view is used. */
  explicit RuntimeView(t4a_runtime handle) noexcept : handle_(handle) {}
  /** The borrowed C handle. */
  t4a_runtime get() const noexcept { return handle_; }
  /** True unless null. */
  explicit operator bool() const noexcept { return handle_.id != T4A_NULL_ID; }

private:
  t4a_runtime handle_{T4A_NULL_ID};
};

/**
 * @brief An owned runtime (t4a_runtime_create() / t4a_runtime_destroy()).
 *
 * Move-only. The destructor destroys the runtime (draining its stream) and
 * never throws; call destroy() to see the outcome.
 */
class Runtime : public detail::RuntimeOps<Runtime> {
public:
  /** An empty runtime (holds the null handle). */
  Runtime() noexcept = default;
  /** An empty runtime (holds the null handle). */
  Runtime(std::nullptr_t) noexcept {}
  /** Takes ownership of a C handle. */
  explicit Runtime(t4a_runtime adopt) noexcept : handle_(adopt) {}
#if T4A_HPP_EXCEPTIONS
  /** Creates a runtime (t4a_runtime_create()). @throws Error */
  explicit Runtime(const t4a_runtime_options &options) {
    check(t4a_runtime_create(&options, &handle_));
  }
#endif
  /**
   * @brief Creates a runtime without throwing (t4a_runtime_create()).
   * @param options the options (or a RuntimeOptions).
   * @param out     receives the runtime on success; untouched on error.
   */
  static t4a_status create(const t4a_runtime_options &options, Runtime &out,
                           std::nothrow_t) noexcept {
    t4a_runtime h{T4A_NULL_ID};
    t4a_status s = t4a_runtime_create(&options, &h);
    if (s == T4A_SUCCESS) out = Runtime(h);
    return s;
  }

  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;
  /** Moves ownership; `other` becomes empty. */
  Runtime(Runtime &&other) noexcept : handle_(other.release()) {}
  /** Destroys the held runtime, then takes `other`'s. */
  Runtime &operator=(Runtime &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.release();
    }
    return *this;
  }
  /** Destroys the runtime; errors are left in the thread's last error. */
  ~Runtime() { reset(); }

  /** The C handle (still owned by this object). */
  t4a_runtime get() const noexcept { return handle_; }
  /** A non-owning view of this runtime. */
  RuntimeView view() const noexcept { return RuntimeView(handle_); }
  /** True unless empty. */
  explicit operator bool() const noexcept { return handle_.id != T4A_NULL_ID; }
  /** Gives the C handle back to the caller, who must destroy it. */
  t4a_runtime release() noexcept {
    t4a_runtime h = handle_;
    handle_ = t4a_runtime{T4A_NULL_ID};
    return h;
  }
  /** Destroys the runtime (t4a_runtime_destroy()); non-throwing. */
  t4a_status destroy(std::nothrow_t) noexcept {
    return t4a_runtime_destroy(release());
  }
#if T4A_HPP_EXCEPTIONS
  /** Destroys the runtime (t4a_runtime_destroy()). @throws Error when the
   *  drain failed (the runtime is gone either way). */
  void destroy() { check(t4a_runtime_destroy(release())); }
#endif

private:
  void reset() noexcept {
    if (handle_.id != T4A_NULL_ID) (void)t4a_runtime_destroy(release());
  }
  t4a_runtime handle_{T4A_NULL_ID};
};

} // namespace t4a

#endif /* T4ACUDA_HPP */
