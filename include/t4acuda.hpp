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

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(T4A_NO_EXCEPTIONS) &&                                             \
    (defined(__cpp_exceptions) || defined(__EXCEPTIONS))
/** 1 when the facade's throwing methods are available. */
#define T4A_HPP_EXCEPTIONS 1
#include <stdexcept>
#else
#define T4A_HPP_EXCEPTIONS 0
#endif

#if defined(T4A_EXPERIMENTAL)
/** 1 when the facade's launch path can pass launch attributes
 *  (t4a_launch_ex(); `T4A_EXPERIMENTAL` at the first inclusion). */
#define T4A_HPP_LAUNCH_ATTRS 1
#else
#define T4A_HPP_LAUNCH_ATTRS 0
#endif

/** The t4acuda C++ facade. */
namespace t4a {

/**
 * @brief The calling thread's last error message (t4a_last_error_message()).
 * @return the full message; empty if no call failed on this thread.
 */
inline std::string last_error_message() {
  size_t needed = 0;
  if (t4a_last_error_message(nullptr, 0, &needed) != T4A_SUCCESS || needed <= 1)
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

namespace detail {
/**
 * @brief Derives a throwing method from its non-throwing twin: `twin(out)`
 *        calls the twin with `out` as its output; its status goes through
 *        t4a::check(), and `out` is returned on success.
 * @tparam T the result (value-initialised; the twin fills it).
 */
template <class T, class Twin> T checked(Twin twin) {
  T out{};
  check(twin(out));
  return out;
}

/** A poll's status as true (#T4A_SUCCESS) or false (#T4A_NOT_READY);
 *  t4a::check() for anything else. */
inline bool ready(t4a_status s) {
  if (s == T4A_NOT_READY) return false;
  check(s);
  return true;
}

/** The error of DeviceArray::download() into a container of `have`
 *  elements from element `offset` of an array of `count`. */
inline Error too_small(const char *entry, size_t count, size_t have,
                       size_t offset) {
  std::string m = std::string(t4a_status_name(T4A_ERROR_INVALID_ARGUMENT)) +
                  ": " + entry + ": ";
  if (offset > count)
    m += "offset " + std::to_string(offset) +
         " is past the end of the array (" + std::to_string(count) +
         " elements)";
  else
    m += "the destination holds " + std::to_string(have) +
         " elements, the array " + std::to_string(count) + " from offset " +
         std::to_string(offset) + " (" + std::to_string(count - offset) +
         " to copy)";
  return Error(T4A_ERROR_INVALID_ARGUMENT, 0, entry, m);
}
} // namespace detail
#endif

namespace detail {
/**
 * @brief The one move-only owner of a C handle: moving hands it over,
 *        destruction and reset() give it to `Release`, which never throws
 *        here (its status is left in the thread's last error).
 * @tparam H       the C handle type (`id` is #T4A_NULL_ID when null).
 * @tparam Release the C function that ends the handle.
 */
template <class H, t4a_status (*Release)(H)> class Unique {
public:
  /** The null handle. */
  Unique() noexcept = default;
  /** Takes ownership of a C handle. */
  explicit Unique(H adopt) noexcept : h_(adopt) {}
  Unique(const Unique &) = delete;
  Unique &operator=(const Unique &) = delete;
  /** Moves ownership; `o` becomes null. */
  Unique(Unique &&o) noexcept : h_(o.release()) {}
  /** Releases the held handle, then takes `o`'s. */
  Unique &operator=(Unique &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = o.release();
    }
    return *this;
  }
  /** Releases the handle; never throws. */
  ~Unique() { reset(); }
  /** The C handle (still owned by this object). */
  H get() const noexcept { return h_; }
  /** True unless null. */
  explicit operator bool() const noexcept { return h_.id != T4A_NULL_ID; }
  /** Hands the handle to the caller, who must release it. */
  H release() noexcept {
    H h = h_;
    h_ = H{T4A_NULL_ID};
    return h;
  }
  /** Releases the handle now; the object becomes null. */
  void reset() noexcept {
    if (h_.id != T4A_NULL_ID) (void)Release(release());
  }

private:
  H h_{T4A_NULL_ID};
};
} // namespace detail

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

/** @brief Installs a log callback or restores the default
 *  (t4a_set_log_callback()); non-throwing. */
inline t4a_status set_log_callback(t4a_log_fn fn, void *user, int32_t max_level,
                                   std::nothrow_t) noexcept {
  return t4a_set_log_callback(fn, user, max_level);
}

/** @brief The library's version number (t4a_version()). */
inline uint32_t version() noexcept { return t4a_version(); }

/** @brief The library's version string (t4a_version_string()). */
inline const char *version_string() noexcept { return t4a_version_string(); }

/** @brief The CUDA version the library was built against
 *  (t4a_built_cuda_version()). */
inline int32_t built_cuda_version() noexcept {
  return t4a_built_cuda_version();
}

/** @brief Clears the calling thread's last error (t4a_last_error_clear()). */
inline void clear_last_error() noexcept { t4a_last_error_clear(); }

/** @brief The process's first device fault (t4a_process_fault_get());
 *  non-throwing; `out` is written only on success. */
inline t4a_status process_fault(t4a_process_fault &out,
                                std::nothrow_t) noexcept {
  t4a_process_fault tmp = T4A_PROCESS_FAULT_INIT;
  t4a_status s = t4a_process_fault_get(&tmp);
  if (s == T4A_SUCCESS) out = tmp;
  return s;
}

/** @brief Process-wide counters (t4a_process_stats_get()); non-throwing;
 *  `out` is written only on success. */
inline t4a_status process_stats(t4a_process_stats &out,
                                std::nothrow_t) noexcept {
  t4a_process_stats tmp = T4A_PROCESS_STATS_INIT;
  t4a_status s = t4a_process_stats_get(&tmp);
  if (s == T4A_SUCCESS) out = tmp;
  return s;
}

#if T4A_HPP_EXCEPTIONS
/** @brief Number of devices (t4a_device_count()). @throws Error */
inline int32_t device_count() {
  return detail::checked<int32_t>(
      [](auto &n) { return device_count(n, std::nothrow); });
}

/** @brief Device info (t4a_device_info_get()). @throws Error */
inline t4a_device_info device_info(int32_t ordinal) {
  return detail::checked<t4a_device_info>(
      [&](auto &o) { return device_info(ordinal, o, std::nothrow); });
}

/** @brief Driver version (t4a_driver_version()). @throws Error */
inline int32_t driver_version() {
  return detail::checked<int32_t>(
      [](auto &v) { return driver_version(v, std::nothrow); });
}

/** @brief NVRTC version as {major, minor} (t4a_nvrtc_version()).
 *  @throws Error */
inline std::pair<int32_t, int32_t> nvrtc_version() {
  return detail::checked<std::pair<int32_t, int32_t>>(
      [](auto &v) { return nvrtc_version(v.first, v.second, std::nothrow); });
}

/** @brief Peer access (t4a_device_can_access_peer()). @throws Error */
inline bool can_access_peer(int32_t ordinal, int32_t peer) {
  return detail::checked<bool>(
      [&](auto &c) { return can_access_peer(ordinal, peer, c, std::nothrow); });
}

/** @brief Installs a log callback or restores the default
 *  (t4a_set_log_callback()). @throws Error */
inline void set_log_callback(t4a_log_fn fn, void *user, int32_t max_level) {
  check(set_log_callback(fn, user, max_level, std::nothrow));
}

/** @brief The process's first device fault (t4a_process_fault_get()).
 *  @throws Error */
inline t4a_process_fault process_fault() {
  return detail::checked<t4a_process_fault>(
      [](auto &o) { return process_fault(o, std::nothrow); });
}

/** @brief Process-wide counters (t4a_process_stats_get()). @throws Error */
inline t4a_process_stats process_stats() {
  return detail::checked<t4a_process_stats>(
      [](auto &o) { return process_stats(o, std::nothrow); });
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
  /** Sets the pool release threshold in bytes: 0 releases all unused
   *  memory (stored as #T4A_POOL_RELEASE_ALL, since a 0 in the C field
   *  means the default, #T4A_POOL_KEEP_ALL). */
  RuntimeOptions &release_threshold(uint64_t bytes) noexcept {
    pool_release_threshold = bytes == 0 ? T4A_POOL_RELEASE_ALL : bytes;
    return *this;
  }
  /** Sets the priority of the runtime's stream (0, the default: the
   *  device's default; lower runs first; it must lie in the device's
   *  range, 0 down to -5 on Hopper). Runtime::info() reports it
   *  (::t4a_runtime_info::stream_priority); the C field
   *  ::t4a_runtime_options::stream_priority holds it. */
  RuntimeOptions &priority(int32_t value) noexcept {
    stream_priority = value;
    return *this;
  }
};

class RuntimeView;

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
  /** Describes the runtime (t4a_runtime_info_get()); non-throwing;
   *  `out` is written only on success. */
  t4a_status info(t4a_runtime_info &out, std::nothrow_t) const noexcept {
    t4a_runtime_info tmp = T4A_RUNTIME_INFO_INIT;
    t4a_status s = t4a_runtime_info_get(h(), &tmp);
    if (s == T4A_SUCCESS) out = tmp;
    return s;
  }
  /** Reads the counters (t4a_runtime_stats_get()); non-throwing; `out` is
   *  written only on success. */
  t4a_status stats(t4a_runtime_stats &out, std::nothrow_t) const noexcept {
    t4a_runtime_stats tmp = T4A_RUNTIME_STATS_INIT;
    t4a_status s = t4a_runtime_stats_get(h(), &tmp);
    if (s == T4A_SUCCESS) out = tmp;
    return s;
  }
  /** Enables peer access with `peer`'s device, both ways
   *  (t4a_runtime_enable_peer()); non-throwing. */
  t4a_status enable_peer(RuntimeView peer, std::nothrow_t) const noexcept;
#if T4A_HPP_EXCEPTIONS
  /** Enables peer access with `peer`'s device, both ways
   *  (t4a_runtime_enable_peer()), so that copies between their buffers
   *  (t4a::copy() with buffers of the two runtimes) run peer to peer.
   *  @throws Error (T4A_ERROR_UNSUPPORTED when the devices are not peers) */
  void enable_peer(RuntimeView peer) const;
  /** Host wait for all work (t4a_runtime_synchronize()). @throws Error */
  void synchronize() const { check(synchronize(std::nothrow)); }
  /** Returns unused pool memory (t4a_runtime_trim()). @throws Error */
  void trim() const { check(trim(std::nothrow)); }
  /** Describes the runtime (t4a_runtime_info_get()). @throws Error */
  t4a_runtime_info info() const {
    return detail::checked<t4a_runtime_info>(
        [&](auto &o) { return info(o, std::nothrow); });
  }
  /** Reads the counters (t4a_runtime_stats_get()). @throws Error */
  t4a_runtime_stats stats() const {
    return detail::checked<t4a_runtime_stats>(
        [&](auto &o) { return stats(o, std::nothrow); });
  }
#endif

private:
  t4a_runtime h() const noexcept {
    return static_cast<const Derived *>(this)->get();
  }
};
} // namespace detail

class Runtime;

/**
 * @brief A runtime handle the caller does not own (no release on scope exit).
 *
 * Every facade function that names a runtime takes a RuntimeView, and a
 * t4a::Runtime converts to one implicitly: pass `rt` itself (`rt.view()`
 * still works). A temporary Runtime does not convert (the view would
 * dangle).
 */
class RuntimeView : public detail::RuntimeOps<RuntimeView> {
public:
  /** The null view. */
  RuntimeView() noexcept = default;
  /** Borrows `handle`; the owner must keep it alive while the view is used. */
  explicit RuntimeView(t4a_runtime handle) noexcept : handle_(handle) {}
  /** Borrows an owned runtime's handle (implicit, so `rt` converts). */
  RuntimeView(const Runtime &runtime) noexcept;
  /** A temporary runtime would be destroyed while viewed: not allowed. */
  RuntimeView(const Runtime &&runtime) = delete;
  /** The borrowed C handle. */
  t4a_runtime get() const noexcept { return handle_; }
  /** True unless null. */
  explicit operator bool() const noexcept { return handle_.id != T4A_NULL_ID; }

private:
  t4a_runtime handle_{T4A_NULL_ID};
};

namespace detail {
template <class Derived>
t4a_status RuntimeOps<Derived>::enable_peer(RuntimeView peer,
                                            std::nothrow_t) const noexcept {
  return t4a_runtime_enable_peer(h(), peer.get());
}
#if T4A_HPP_EXCEPTIONS
template <class Derived>
void RuntimeOps<Derived>::enable_peer(RuntimeView peer) const {
  check(enable_peer(peer, std::nothrow));
}
#endif
} // namespace detail

/**
 * @brief An owned runtime (t4a_runtime_create() / t4a_runtime_destroy()).
 *
 * Move-only. The destructor destroys the runtime (draining its stream) and
 * never throws; call destroy() to see the outcome.
 */
class Runtime : public detail::RuntimeOps<Runtime>,
                private detail::Unique<t4a_runtime, t4a_runtime_destroy> {
public:
  /** An empty runtime (holds the null handle). */
  Runtime() noexcept = default;
  /** An empty runtime (holds the null handle). */
  Runtime(std::nullptr_t) noexcept {}
  /** Takes ownership of a C handle. */
  explicit Runtime(t4a_runtime adopt) noexcept : Unique(adopt) {}
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
  // Moving hands the runtime over; assigning or destroying destroys the
  // held one (detail::Unique), errors left in the thread's last error.
  /** The C handle (still owned by this object). */
  t4a_runtime get() const noexcept { return Unique::get(); }
  /** True unless empty. */
  explicit operator bool() const noexcept { return Unique::operator bool(); }
  /** Gives the C handle back to the caller, who must destroy it. */
  t4a_runtime release() noexcept { return Unique::release(); }
  /** A non-owning view of this runtime. */
  RuntimeView view() const noexcept { return RuntimeView(get()); }
  /** Destroys the runtime (t4a_runtime_destroy()); non-throwing. */
  t4a_status destroy(std::nothrow_t) noexcept {
    return t4a_runtime_destroy(release());
  }
#if T4A_HPP_EXCEPTIONS
  /** Creates a runtime (t4a_runtime_create()). @throws Error */
  explicit Runtime(const t4a_runtime_options &options) {
    check(create(options, *this, std::nothrow));
  }
  /** Destroys the runtime (t4a_runtime_destroy()). @throws Error when the
   *  drain failed (the runtime is gone either way). */
  void destroy() { check(destroy(std::nothrow)); }
#endif
};

inline RuntimeView::RuntimeView(const Runtime &runtime) noexcept
    : handle_(runtime.get()) {}

// ---------------------------------------------------------------------------
// Buffers, host buffers, downloads
// ---------------------------------------------------------------------------

namespace detail {
/** A reference-counted C handle: copying retains, destruction releases
 *  (a detail::Unique that can also be copied). */
template <class H, t4a_status (*Retain)(H), t4a_status (*Release)(H)>
class Shared : public Unique<H, Release> {
public:
  /** The null handle. */
  Shared() noexcept = default;
  /** The null handle. */
  Shared(std::nullptr_t) noexcept {}
  /** Takes over one reference the caller owns. */
  explicit Shared(H adopt) noexcept : Unique<H, Release>(adopt) {}
  /** Retains: both objects hold a reference. If the retain fails (a
   *  stale handle, or a saturated count) the copy is null. */
  Shared(const Shared &o) noexcept : Unique<H, Release>(retained(o.get())) {}
  /** Moves the reference; `o` becomes null. */
  Shared(Shared &&o) noexcept = default;
  /** Releases the held reference, then retains `o`'s. */
  Shared &operator=(const Shared &o) noexcept {
    if (this != &o) *this = Shared(o);
    return *this;
  }
  /** Releases the held reference, then takes `o`'s. */
  Shared &operator=(Shared &&o) noexcept = default;

private:
  static H retained(H h) noexcept {
    if (h.id != T4A_NULL_ID && Retain(h) != T4A_SUCCESS) return H{T4A_NULL_ID};
    return h;
  }
};
} // namespace detail

/**
 * @brief A device buffer (t4a_buffer_alloc()); copying retains.
 *
 * The last release frees the memory in stream order (t4a_buffer_release()).
 */
class Buffer
    : public detail::Shared<t4a_buffer, t4a_buffer_retain, t4a_buffer_release> {
public:
  using Shared::Shared;
  /** Allocates without throwing (t4a_buffer_alloc()). */
  static t4a_status alloc(RuntimeView rt, uint64_t bytes, uint32_t flags,
                          Buffer &out, std::nothrow_t) noexcept {
    t4a_buffer h{T4A_NULL_ID};
    t4a_status s = t4a_buffer_alloc(rt.get(), bytes, flags, &h);
    if (s == T4A_SUCCESS) out = Buffer(h);
    return s;
  }
  /** Facts about the buffer (t4a_buffer_info_get()); non-throwing;
   *  `out` is written only on success. */
  t4a_status info(t4a_buffer_info &out, std::nothrow_t) const noexcept {
    t4a_buffer_info tmp = T4A_BUFFER_INFO_INIT;
    t4a_status s = t4a_buffer_info_get(get(), &tmp);
    if (s == T4A_SUCCESS) out = tmp;
    return s;
  }
#if T4A_HPP_EXCEPTIONS
  /** Allocates (t4a_buffer_alloc()). @throws Error */
  Buffer(RuntimeView rt, uint64_t bytes, uint32_t flags = 0) {
    check(alloc(rt, bytes, flags, *this, std::nothrow));
  }
  /** Facts about the buffer (t4a_buffer_info_get()). @throws Error */
  t4a_buffer_info info() const {
    return detail::checked<t4a_buffer_info>(
        [&](auto &o) { return info(o, std::nothrow); });
  }
  /** Size in bytes. @throws Error */
  uint64_t size() const { return info().bytes; }
  /** The device pointer, for interop. @throws Error */
  uint64_t device_pointer() const { return info().device_pointer; }
  /** Whether this is a view of a module global (Module::global(),
   *  #T4A_BUFFER_INFO_VIEW). @throws Error */
  bool is_view() const { return (info().flags & T4A_BUFFER_INFO_VIEW) != 0; }
#endif
};

/** @brief Pinned host memory (t4a_host_buffer_alloc()); copying retains. */
class HostBuffer
    : public detail::Shared<t4a_host_buffer, t4a_host_buffer_retain,
                            t4a_host_buffer_release> {
public:
  using Shared::Shared;
  /** Allocates without throwing (t4a_host_buffer_alloc()). */
  static t4a_status alloc(RuntimeView rt, uint64_t bytes, HostBuffer &out,
                          std::nothrow_t) noexcept {
    t4a_host_buffer h{T4A_NULL_ID};
    t4a_status s = t4a_host_buffer_alloc(rt.get(), bytes, &h);
    if (s == T4A_SUCCESS) out = HostBuffer(h);
    return s;
  }
  /** The host memory and size (t4a_host_buffer_pointer()); non-throwing. */
  t4a_status data(void *&pointer, uint64_t &bytes,
                  std::nothrow_t) const noexcept {
    return t4a_host_buffer_pointer(get(), &pointer, &bytes);
  }
#if T4A_HPP_EXCEPTIONS
  /** Allocates (t4a_host_buffer_alloc()). @throws Error */
  HostBuffer(RuntimeView rt, uint64_t bytes) {
    check(alloc(rt, bytes, *this, std::nothrow));
  }
  /** The host memory (t4a_host_buffer_pointer()). @throws Error */
  void *data() const {
    void *p = nullptr;
    check(t4a_host_buffer_pointer(get(), &p, nullptr));
    return p;
  }
#endif
};

/** @brief A pending download (t4a_buffer_download()); move-only; the
 *  destructor releases it (t4a_download_release()), delivered or not. */
class Download : public detail::Unique<t4a_download, t4a_download_release> {
public:
  using Unique::Unique;
  /** The download's size (t4a_download_size()); non-throwing. */
  t4a_status size(uint64_t &bytes, std::nothrow_t) const noexcept {
    return t4a_download_size(get(), &bytes);
  }
  /** Delivers if complete (t4a_download_poll()): SUCCESS or NOT_READY. */
  t4a_status poll(void *dst, std::nothrow_t) noexcept {
    return t4a_download_poll(get(), dst);
  }
  /** Waits and delivers (t4a_download_wait()); non-throwing. */
  t4a_status wait(void *dst, std::nothrow_t) noexcept {
    return t4a_download_wait(get(), dst);
  }
#if T4A_HPP_EXCEPTIONS
  /** Delivers if complete (t4a_download_poll()); true when delivered.
   *  @throws Error */
  bool poll(void *dst) { return detail::ready(poll(dst, std::nothrow)); }
  /** Waits and delivers (t4a_download_wait()). @throws Error */
  void wait(void *dst) { check(wait(dst, std::nothrow)); }
#endif
};

/** @brief Pinned-staged upload (t4a_buffer_upload()); non-throwing. */
inline t4a_status upload(RuntimeView rt, const Buffer &dst, uint64_t offset,
                         const void *src, uint64_t bytes,
                         std::nothrow_t) noexcept {
  return t4a_buffer_upload(rt.get(), dst.get(), offset, src, bytes);
}
/** @brief Synchronous download (t4a_buffer_download_sync());
 *  non-throwing. */
inline t4a_status download(RuntimeView rt, const Buffer &src, uint64_t offset,
                           void *dst, uint64_t bytes, std::nothrow_t) noexcept {
  return t4a_buffer_download_sync(rt.get(), src.get(), offset, dst, bytes);
}
/** @brief DMA from a host buffer (t4a_buffer_upload_host());
 *  non-throwing. */
inline t4a_status upload(RuntimeView rt, const Buffer &dst, uint64_t dst_offset,
                         const HostBuffer &src, uint64_t src_offset,
                         uint64_t bytes, std::nothrow_t) noexcept {
  return t4a_buffer_upload_host(rt.get(), dst.get(), dst_offset, src.get(),
                                src_offset, bytes);
}
/** @brief DMA into a host buffer (t4a_buffer_download_host());
 *  non-throwing. */
inline t4a_status download(RuntimeView rt, const Buffer &src,
                           uint64_t src_offset, const HostBuffer &dst,
                           uint64_t dst_offset, uint64_t bytes,
                           std::nothrow_t) noexcept {
  return t4a_buffer_download_host(rt.get(), src.get(), src_offset, dst.get(),
                                  dst_offset, bytes);
}
/** @brief Enqueues a pending download (t4a_buffer_download());
 *  non-throwing; `out` is written only on success. */
inline t4a_status download_async(RuntimeView rt, const Buffer &src,
                                 uint64_t offset, uint64_t bytes, Download &out,
                                 std::nothrow_t) noexcept {
  t4a_download h{T4A_NULL_ID};
  t4a_status s = t4a_buffer_download(rt.get(), src.get(), offset, bytes, &h);
  if (s == T4A_SUCCESS) out = Download(h);
  return s;
}
/** @brief Fills bytes (t4a_buffer_fill()); non-throwing. */
inline t4a_status fill(RuntimeView rt, const Buffer &b, uint64_t offset,
                       uint64_t bytes, uint8_t value, std::nothrow_t) noexcept {
  return t4a_buffer_fill(rt.get(), b.get(), offset, bytes, value);
}
/** @brief Device-to-device copy (t4a_buffer_copy()); non-throwing. */
inline t4a_status copy(RuntimeView rt, const Buffer &dst, uint64_t dst_offset,
                       const Buffer &src, uint64_t src_offset, uint64_t bytes,
                       std::nothrow_t) noexcept {
  return t4a_buffer_copy(rt.get(), dst.get(), dst_offset, src.get(), src_offset,
                         bytes);
}

// ---------------------------------------------------------------------------
// Contiguous containers and typed device arrays
// ---------------------------------------------------------------------------

namespace detail {
/** The element type of a contiguous container (std::data(), std::size()),
 *  const removed. */
template <class C>
using element_t = std::remove_cv_t<
    std::remove_pointer_t<decltype(std::data(std::declval<C &>()))>>;

/** True for a type with std::data() and std::size() (std::vector,
 *  std::array, std::string, a C array, ...) whose elements are trivially
 *  copyable: what the facade copies bytewise to and from the device. */
template <class C, class = void> struct is_contiguous : std::false_type {};
/** @copydoc is_contiguous */
template <class C>
struct is_contiguous<C, std::void_t<decltype(std::data(std::declval<C &>())),
                                    decltype(std::size(std::declval<C &>()))>>
    : std::integral_constant<
          bool,
          std::is_pointer<decltype(std::data(std::declval<C &>()))>::value &&
              std::is_trivially_copyable<element_t<C>>::value> {};

/** `count * size`, or UINT64_MAX when that overflows: the C call then
 *  rejects the size (naming it) instead of the facade wrapping around. */
inline uint64_t saturating_bytes(uint64_t count, uint64_t size) noexcept {
  if (size != 0 && count > UINT64_MAX / size) return UINT64_MAX;
  return count * size;
}

/** The bytes of a contiguous container. */
template <class C> uint64_t container_bytes(const C &c) noexcept {
  return saturating_bytes(static_cast<uint64_t>(std::size(c)),
                          sizeof(element_t<C>));
}
} // namespace detail

/** @brief Uploads a contiguous container's bytes to `dst` at byte `offset`
 *  (t4a_buffer_upload()); non-throwing. Any container with std::data() and
 *  std::size() of trivially copyable elements: std::vector, std::array, a
 *  C array, ... */
template <class C,
          std::enable_if_t<detail::is_contiguous<const C>::value, int> = 0>
t4a_status upload(RuntimeView rt, const Buffer &dst, const C &src,
                  uint64_t offset, std::nothrow_t) noexcept {
  return t4a_buffer_upload(rt.get(), dst.get(), offset, std::data(src),
                           detail::container_bytes(src));
}
/** @brief Uploads a container's bytes to the start of `dst`
 *  (t4a_buffer_upload()); non-throwing. */
template <class C,
          std::enable_if_t<detail::is_contiguous<const C>::value, int> = 0>
t4a_status upload(RuntimeView rt, const Buffer &dst, const C &src,
                  std::nothrow_t) noexcept {
  return upload(rt, dst, src, 0, std::nothrow);
}
/** @brief Fills a contiguous container from `src` at byte `offset`
 *  (t4a_buffer_download_sync()): exactly the container's bytes, which the
 *  buffer must hold from `offset` on (the C call checks it); non-throwing. */
template <class C, std::enable_if_t<detail::is_contiguous<C>::value &&
                                        !std::is_const<C>::value,
                                    int> = 0>
t4a_status download(RuntimeView rt, const Buffer &src, C &dst, uint64_t offset,
                    std::nothrow_t) noexcept {
  return t4a_buffer_download_sync(rt.get(), src.get(), offset, std::data(dst),
                                  detail::container_bytes(dst));
}
/** @brief Fills a container from the start of `src`
 *  (t4a_buffer_download_sync()); non-throwing. */
template <class C, std::enable_if_t<detail::is_contiguous<C>::value &&
                                        !std::is_const<C>::value,
                                    int> = 0>
t4a_status download(RuntimeView rt, const Buffer &src, C &dst,
                    std::nothrow_t) noexcept {
  return download(rt, src, dst, 0, std::nothrow);
}
#if T4A_HPP_EXCEPTIONS
/** @brief Pinned-staged upload (t4a_buffer_upload()). @throws Error */
inline void upload(RuntimeView rt, const Buffer &dst, uint64_t offset,
                   const void *src, uint64_t bytes) {
  check(upload(rt, dst, offset, src, bytes, std::nothrow));
}
/** @brief Synchronous download (t4a_buffer_download_sync()).
 *  @throws Error */
inline void download(RuntimeView rt, const Buffer &src, uint64_t offset,
                     void *dst, uint64_t bytes) {
  check(download(rt, src, offset, dst, bytes, std::nothrow));
}
/** @brief DMA from a host buffer (t4a_buffer_upload_host()).
 *  @throws Error */
inline void upload(RuntimeView rt, const Buffer &dst, uint64_t dst_offset,
                   const HostBuffer &src, uint64_t src_offset, uint64_t bytes) {
  check(upload(rt, dst, dst_offset, src, src_offset, bytes, std::nothrow));
}
/** @brief DMA into a host buffer (t4a_buffer_download_host()).
 *  @throws Error */
inline void download(RuntimeView rt, const Buffer &src, uint64_t src_offset,
                     const HostBuffer &dst, uint64_t dst_offset,
                     uint64_t bytes) {
  check(download(rt, src, src_offset, dst, dst_offset, bytes, std::nothrow));
}
/** @brief Enqueues a pending download (t4a_buffer_download()).
 *  @throws Error */
inline Download download_async(RuntimeView rt, const Buffer &src,
                               uint64_t offset, uint64_t bytes) {
  return detail::checked<Download>([&](auto &o) {
    return download_async(rt, src, offset, bytes, o, std::nothrow);
  });
}
/** @brief Fills bytes (t4a_buffer_fill()). @throws Error */
inline void fill(RuntimeView rt, const Buffer &b, uint64_t offset,
                 uint64_t bytes, uint8_t value) {
  check(fill(rt, b, offset, bytes, value, std::nothrow));
}
/** @brief Device-to-device copy (t4a_buffer_copy()): `rt` is the runtime of
 *  `dst`; `src` may belong to another runtime, of the same device or
 *  another (see t4a_buffer_copy() for the paths). For a t4a::DeviceArray
 *  pass `array.buffer()` and byte offsets. @throws Error */
inline void copy(RuntimeView rt, const Buffer &dst, uint64_t dst_offset,
                 const Buffer &src, uint64_t src_offset, uint64_t bytes) {
  check(copy(rt, dst, dst_offset, src, src_offset, bytes, std::nothrow));
}
/** @brief Uploads a contiguous container's bytes to `dst` at byte `offset`
 *  (default 0) (t4a_buffer_upload()). @throws Error */
template <class C,
          std::enable_if_t<detail::is_contiguous<const C>::value, int> = 0>
void upload(RuntimeView rt, const Buffer &dst, const C &src,
            uint64_t offset = 0) {
  check(upload(rt, dst, src, offset, std::nothrow));
}
/** @brief Fills a contiguous container from `src` at byte `offset`
 *  (default 0) (t4a_buffer_download_sync()). @throws Error (the buffer
 *  must hold the container's bytes from `offset` on) */
template <class C, std::enable_if_t<detail::is_contiguous<C>::value &&
                                        !std::is_const<C>::value,
                                    int> = 0>
void download(RuntimeView rt, const Buffer &src, C &dst, uint64_t offset = 0) {
  check(download(rt, src, dst, offset, std::nothrow));
}
#endif

/**
 * @brief A device buffer of `size()` elements of `T` (t4a_buffer_alloc());
 *        copying retains the buffer, like t4a::Buffer.
 *
 * Sizes and offsets are in elements. Built from a runtime directly
 * (`t4a::DeviceArray<float> d(rt, n)`, or `d(rt, host_vector)` to allocate
 * and upload); transfers take the runtime as every facade call does
 * (`d.upload(rt, v)`, `d.download(rt, v)`). A DeviceArray is a kernel
 * argument of Kernel::launch() (its device address, #T4A_ARG_BUFFER).
 * The element count is kept in the object, so size() makes no C call.
 * @tparam T a trivially copyable element type.
 */
template <class T> class DeviceArray {
  static_assert(std::is_trivially_copyable<T>::value,
                "device array elements are copied bytewise");
  static_assert(!std::is_const<T>::value && !std::is_volatile<T>::value,
                "use DeviceArray<T>, not DeviceArray<const T>");
  template <class C>
  using if_source =
      std::enable_if_t<detail::is_contiguous<const C>::value &&
                           std::is_same<detail::element_t<const C>, T>::value,
                       int>;
  template <class C>
  using if_destination =
      std::enable_if_t<detail::is_contiguous<C>::value &&
                           !std::is_const<C>::value &&
                           std::is_same<detail::element_t<C>, T>::value,
                       int>;
  // A real pointer (or nullptr) convertible to `Q`, never an array: a C
  // array is a container, so `upload(rt, a, 2)` and `download(rt, a, 2)`
  // mean element offset 2 for a C array as for a std::vector, whatever the
  // array's constness.
  template <class P, class Q>
  using if_pointer = std::enable_if_t<(std::is_pointer<P>::value ||
                                       std::is_null_pointer<P>::value) &&
                                          std::is_convertible<P, Q>::value,
                                      int>;

public:
  /** The element type. */
  using value_type = T;

  /** The empty array (the null buffer, no elements). */
  DeviceArray() noexcept = default;

  /** Allocates `count` elements without throwing (t4a_buffer_alloc() of
   *  `count * sizeof(T)` bytes; #T4A_BUFFER_ZERO in `flags` zeroes them);
   *  `out` is written only on success. */
  static t4a_status alloc(RuntimeView rt, size_t count, uint32_t flags,
                          DeviceArray &out, std::nothrow_t) noexcept {
    Buffer b;
    t4a_status s = Buffer::alloc(rt, detail::saturating_bytes(count, sizeof(T)),
                                 flags, b, std::nothrow);
    if (s == T4A_SUCCESS) out = DeviceArray(std::move(b), count);
    return s;
  }

  /** The number of elements. */
  size_t size() const noexcept { return count_; }
  /** The size in bytes. */
  uint64_t bytes() const noexcept {
    return static_cast<uint64_t>(count_) * sizeof(T);
  }
  /** True when the array has no elements. */
  bool empty() const noexcept { return count_ == 0; }
  /** The underlying buffer. */
  const Buffer &buffer() const noexcept { return buffer_; }
  /** The C handle (still owned by this object). */
  t4a_buffer get() const noexcept { return buffer_.get(); }
  /** True unless null. */
  explicit operator bool() const noexcept { return static_cast<bool>(buffer_); }

  /** Uploads `count` elements from `src` to element `offset`
   *  (t4a_buffer_upload()); non-throwing. */
  t4a_status upload(RuntimeView rt, const T *src, size_t count, size_t offset,
                    std::nothrow_t) const noexcept {
    return t4a_buffer_upload(rt.get(), buffer_.get(),
                             detail::saturating_bytes(offset, sizeof(T)), src,
                             detail::saturating_bytes(count, sizeof(T)));
  }
  /** Uploads a contiguous container of `T` to element `offset`
   *  (t4a_buffer_upload()); non-throwing. */
  template <class C, if_source<C> = 0>
  t4a_status upload(RuntimeView rt, const C &src, size_t offset,
                    std::nothrow_t) const noexcept {
    return upload(rt, std::data(src), std::size(src), offset, std::nothrow);
  }
  /** Uploads a contiguous container of `T` to the start
   *  (t4a_buffer_upload()); non-throwing. */
  template <class C, if_source<C> = 0>
  t4a_status upload(RuntimeView rt, const C &src,
                    std::nothrow_t) const noexcept {
    return upload(rt, std::data(src), std::size(src), 0, std::nothrow);
  }
  /** Downloads `count` elements from element `offset` into `dst`
   *  (t4a_buffer_download_sync(), which checks the range); non-throwing. */
  t4a_status download(RuntimeView rt, T *dst, size_t count, size_t offset,
                      std::nothrow_t) const noexcept {
    return t4a_buffer_download_sync(
        rt.get(), buffer_.get(), detail::saturating_bytes(offset, sizeof(T)),
        dst, detail::saturating_bytes(count, sizeof(T)));
  }

#if T4A_HPP_EXCEPTIONS
  /** Allocates `count` elements (t4a_buffer_alloc(); #T4A_BUFFER_ZERO in
   *  `flags` zeroes them). @throws Error */
  DeviceArray(RuntimeView rt, size_t count, uint32_t flags = 0) {
    check(alloc(rt, count, flags, *this, std::nothrow));
  }
  /** Allocates as many elements as `host` holds and uploads them
   *  (t4a_buffer_alloc(), t4a_buffer_upload()); `host` is reusable on
   *  return. @throws Error */
  template <class C, if_source<C> = 0>
  DeviceArray(RuntimeView rt, const C &host) {
    check(alloc(rt, std::size(host), 0, *this, std::nothrow));
    upload(rt, host);
  }
  /** Uploads `count` elements from `src` to element `offset`
   *  (t4a_buffer_upload()). @throws Error */
  void upload(RuntimeView rt, const T *src, size_t count, size_t offset) const {
    check(upload(rt, src, count, offset, std::nothrow));
  }
  /** Uploads `count` elements from the pointer `src` to the start
   *  (t4a_buffer_upload()); a C array is a container (element offset).
   *  @throws Error */
  template <class P, if_pointer<P, const T *> = 0>
  void upload(RuntimeView rt, const P &src, size_t count) const {
    check(upload(rt, src, count, 0, std::nothrow));
  }
  /** Uploads a contiguous container of `T` to element `offset` (default 0)
   *  (t4a_buffer_upload()). @throws Error (#T4A_ERROR_INVALID_ARGUMENT when
   *  it does not fit) */
  template <class C, if_source<C> = 0>
  void upload(RuntimeView rt, const C &src, size_t offset = 0) const {
    check(upload(rt, std::data(src), std::size(src), offset, std::nothrow));
  }
  /** Downloads `count` elements from element `offset` into `dst`
   *  (t4a_buffer_download_sync()). @throws Error */
  void download(RuntimeView rt, T *dst, size_t count, size_t offset) const {
    check(download(rt, dst, count, offset, std::nothrow));
  }
  /** Downloads the first `count` elements into the pointer `dst`
   *  (t4a_buffer_download_sync()); a C array is a container (element
   *  offset). @throws Error */
  template <class P, if_pointer<P, T *> = 0>
  void download(RuntimeView rt, const P &dst, size_t count) const {
    check(download(rt, dst, count, 0, std::nothrow));
  }
  /**
   * @brief Downloads elements `offset` (default 0) to size() into the
   *        start of a contiguous container of `T`
   *        (t4a_buffer_download_sync()); waits.
   * @throws Error #T4A_ERROR_INVALID_ARGUMENT, naming both sizes, when the
   *         container holds fewer elements (nothing is copied), or when
   *         `offset` is past the end; any error of the C call.
   */
  template <class C, if_destination<C> = 0>
  void download(RuntimeView rt, C &dst, size_t offset = 0) const {
    const size_t have = std::size(dst);
    if (offset > count_ || have < count_ - offset)
      throw detail::too_small("t4a::DeviceArray::download", count_, have,
                              offset);
    check(download(rt, std::data(dst), count_ - offset, offset, std::nothrow));
  }
  /** All elements as a new std::vector (t4a_buffer_download_sync()).
   *  @throws Error */
  std::vector<T> to_vector(RuntimeView rt) const {
    static_assert(!std::is_same_v<T, bool>,
                  "t4a::DeviceArray<bool>::to_vector: std::vector<bool> is "
                  "packed bits, not contiguous bools; download into a bool "
                  "array or a std::vector<unsigned char> instead");
    std::vector<T> out(count_);
    check(download(rt, out.data(), count_, 0, std::nothrow));
    return out;
  }
#endif

private:
  DeviceArray(Buffer buffer, size_t count) noexcept
      : buffer_(std::move(buffer)), count_(count) {}
  Buffer buffer_;
  size_t count_ = 0;
};

// ---------------------------------------------------------------------------
// Compilation and artifacts
// ---------------------------------------------------------------------------

namespace detail {
/** Query-then-copy of a string getter `get(buf, capacity, needed)`. */
template <class Get> t4a_status read_string(Get get, std::string &out) {
  size_t needed = 0;
  t4a_status s = get(nullptr, 0, &needed);
  if (s != T4A_SUCCESS) return s;
  std::string tmp(needed, '\0');
  s = get(&tmp[0], tmp.size(), &needed);
  if (s != T4A_SUCCESS) return s;
  tmp.resize(needed > 0 ? needed - 1 : 0);
  out.swap(tmp);
  return T4A_SUCCESS;
}
} // namespace detail

/**
 * @brief The complete NVRTC log of this thread's last failed compile
 *        (t4a_last_compile_log()); empty if none.
 */
inline std::string last_compile_log() {
  std::string log;
  (void)detail::read_string(
      [](char *b, size_t c, size_t *n) {
        return t4a_last_compile_log(b, c, n);
      },
      log);
  return log;
}

/**
 * @brief A builder of ::t4a_compile_request that owns its strings.
 *
 * It starts from the defaults of #T4A_COMPILE_REQUEST_INIT, and it *is* a
 * ::t4a_compile_request: pass it to t4a::compile() as is, or read or set
 * the plain fields (`flags`, `disk_cache_max_bytes`) directly. The setters
 * copy every string (source, program name, options, headers, name
 * expressions, cache directory) into the builder, and keep the request's
 * pointer fields and arrays pointing at those copies; copying or moving the
 * builder re-points them at the new object's copies. The pointers stay
 * valid while the builder lives and is not changed.
 *
 * @code
 * t4a::Artifact a = t4a::compile(t4a::CompileRequest(source)
 *                                    .for_runtime(rt)
 *                                    .with_option("-std=c++17")
 *                                    .with_header("config.h", "#define N 4")
 *                                    .with_name_expression("&k<float>"));
 * @endcode
 */
struct CompileRequest : t4a_compile_request {
  /** The defaults (CUBIN, no target, caches on). */
  CompileRequest() noexcept : t4a_compile_request T4A_COMPILE_REQUEST_INIT {}
  /** The defaults with `source_text` as the source. */
  explicit CompileRequest(std::string source_text)
      : t4a_compile_request T4A_COMPILE_REQUEST_INIT {
    with_source(std::move(source_text));
  }
  /** A copy whose pointers point at its own strings. */
  CompileRequest(const CompileRequest &o)
      : t4a_compile_request(o), owned_(o.owned_) {
    sync();
  }
  /** Takes `o`'s strings; the pointers follow them. */
  CompileRequest(CompileRequest &&o) noexcept
      : t4a_compile_request(o), owned_(std::move(o.owned_)) {
    sync();
    o.forget();
  }
  /** Copies `o` (see the copy constructor). If copying a string throws,
   *  this builder is left as it was (never pointing into `o`). */
  CompileRequest &operator=(const CompileRequest &o) {
    if (this != &o) *this = CompileRequest(o);
    return *this;
  }
  /** Takes `o`'s strings (see the move constructor). */
  CompileRequest &operator=(CompileRequest &&o) noexcept {
    if (this != &o) {
      static_cast<t4a_compile_request &>(*this) = o;
      owned_ = std::move(o.owned_);
      sync();
      o.forget();
    }
    return *this;
  }
  /** Nothing to release: the strings are the builder's own. */
  ~CompileRequest() = default;

  /** Sets the source (required); copied. */
  CompileRequest &with_source(std::string text) {
    owned_.source = std::move(text);
    owned_.has_source = true;
    sync();
    return *this;
  }
  /** Sets the source (required); copied. A null `text` sets the null
   *  source, which t4a_compile() rejects. */
  CompileRequest &with_source(const char *text) {
    if (text == nullptr) {
      owned_.source.clear();
      owned_.has_source = false;
      source = nullptr;
      return *this;
    }
    return with_source(std::string(text));
  }
  /** Sets the program name used in diagnostics (default "t4a.cu"). */
  CompileRequest &with_program_name(std::string name) {
    owned_.program_name = std::move(name);
    owned_.has_program_name = true;
    sync();
    return *this;
  }
  /** Targets compute capability `major`.`minor`. */
  CompileRequest &for_cc(int32_t major, int32_t minor) noexcept {
    cc_major = major;
    cc_minor = minor;
    return *this;
  }
  /** Targets the device of a runtime (not retained). */
  CompileRequest &for_runtime(t4a_runtime rt) noexcept {
    runtime = rt;
    return *this;
  }
  /** Targets the device of a runtime or t4a::Runtime (not retained). */
  CompileRequest &for_runtime(RuntimeView rt) noexcept {
    runtime = rt.get();
    return *this;
  }
  /** Asks for #T4A_COMPILE_CUBIN or #T4A_COMPILE_PTX. */
  CompileRequest &with_output(uint32_t kind) noexcept {
    output = kind;
    return *this;
  }
  /** Sets #T4A_COMPILE_NO_MEMORY_CACHE and #T4A_COMPILE_NO_DISK_CACHE
   *  bits (replacing `flags`). */
  CompileRequest &with_flags(uint32_t bits) noexcept {
    flags = bits;
    return *this;
  }
  /** Appends one NVRTC option ("-std=c++17", "-DN=4"). */
  CompileRequest &with_option(std::string option) {
    owned_.option_ptrs.reserve(owned_.options.size() + 1);
    owned_.options.push_back(std::move(option));
    owned_.has_options = true;
    sync();
    return *this;
  }
  /** Appends NVRTC options, one per string, in order. */
  CompileRequest &with_options(std::initializer_list<std::string> list) {
    owned_.option_ptrs.reserve(owned_.options.size() + list.size());
    owned_.options.insert(owned_.options.end(), list.begin(), list.end());
    owned_.has_options = true;
    sync();
    return *this;
  }
  /** Adds a header that `#include "name"` finds, with its contents. */
  CompileRequest &with_header(std::string name, std::string contents) {
    const size_t n = owned_.header_names.size() + 1;
    owned_.header_name_ptrs.reserve(n);
    owned_.header_source_ptrs.reserve(n);
    owned_.header_sources.reserve(n);
    owned_.header_names.push_back(std::move(name));
    owned_.header_sources.push_back(std::move(contents)); // reserved
    owned_.has_headers = true;
    sync();
    return *this;
  }
  /** Appends a name expression ("&kernel<float>"); its lowered name is
   *  Artifact::lowered_name() at the same index, in the order added. */
  CompileRequest &with_name_expression(std::string expression) {
    owned_.name_expression_ptrs.reserve(owned_.name_expressions.size() + 1);
    owned_.name_expressions.push_back(std::move(expression));
    owned_.has_names = true;
    sync();
    return *this;
  }
  /** Sets the disk cache directory ("" disables the disk cache). */
  CompileRequest &with_cache_dir(std::string directory) {
    owned_.cache_dir = std::move(directory);
    owned_.has_cache_dir = true;
    sync();
    return *this;
  }
  /** Names the CUDA toolkit include directory added after the options
   *  (t4a_compile_request::toolkit_include; "" finds it automatically).
   *  Opt out with `with_flags(T4A_COMPILE_NO_TOOLKIT_HEADERS)`. */
  CompileRequest &with_toolkit_include(std::string directory) {
    owned_.toolkit_include = std::move(directory);
    owned_.has_toolkit_include = true;
    sync();
    return *this;
  }
  /** Sets the disk cache bound in bytes (0: the default). */
  CompileRequest &with_disk_cache_max_bytes(uint64_t bytes) noexcept {
    disk_cache_max_bytes = bytes;
    return *this;
  }
  /** The C request (this object), for C calls that take one. */
  const t4a_compile_request &c_request() const noexcept { return *this; }

private:
  struct Owned {
    std::string source, program_name, cache_dir, toolkit_include;
    bool has_toolkit_include = false;
    bool has_source = false, has_program_name = false, has_cache_dir = false,
         has_options = false, has_headers = false, has_names = false;
    std::vector<std::string> options, header_names, header_sources,
        name_expressions;
    std::vector<const char *> option_ptrs, header_name_ptrs, header_source_ptrs,
        name_expression_ptrs;
  };
  // Points `to` at the strings of `from`. Each setter reserves `to` for the
  // new size before it adds a string, and a copy's pointer vectors have
  // their source's size, so this never allocates.
  static void point(const std::vector<std::string> &from,
                    std::vector<const char *> &to) noexcept {
    to.clear();
    for (const std::string &x : from) to.push_back(x.c_str());
  }
  // Re-points the request at the owned strings. Fields the builder never
  // set keep what the caller put there.
  void sync() noexcept {
    Owned &o = owned_;
    if (o.has_source) source = o.source.c_str();
    if (o.has_program_name) program_name = o.program_name.c_str();
    if (o.has_cache_dir) cache_dir = o.cache_dir.c_str();
    if (o.has_toolkit_include) toolkit_include = o.toolkit_include.c_str();
    if (o.has_options) {
      point(o.options, o.option_ptrs);
      options = o.option_ptrs.data();
      option_count = static_cast<uint32_t>(o.option_ptrs.size());
    }
    if (o.has_headers) {
      point(o.header_names, o.header_name_ptrs);
      point(o.header_sources, o.header_source_ptrs);
      header_names = o.header_name_ptrs.data();
      header_sources = o.header_source_ptrs.data();
      header_count = static_cast<uint32_t>(o.header_name_ptrs.size());
    }
    if (o.has_names) {
      point(o.name_expressions, o.name_expression_ptrs);
      name_expressions = o.name_expression_ptrs.data();
      name_expression_count =
          static_cast<uint32_t>(o.name_expression_ptrs.size());
    }
  }
  // After a move: the strings went to the other builder, so the fields
  // they filled become null again.
  void forget() noexcept {
    Owned &o = owned_;
    if (o.has_source) source = nullptr;
    if (o.has_program_name) program_name = nullptr;
    if (o.has_cache_dir) cache_dir = nullptr;
    if (o.has_toolkit_include) toolkit_include = nullptr;
    if (o.has_options) {
      options = nullptr;
      option_count = 0;
    }
    if (o.has_headers) {
      header_names = nullptr;
      header_sources = nullptr;
      header_count = 0;
    }
    if (o.has_names) {
      name_expressions = nullptr;
      name_expression_count = 0;
    }
    o = Owned();
  }
  Owned owned_;
};

/**
 * @brief A compiled artifact (t4a_compile()); copying retains, the last
 *        release frees it (t4a_artifact_release()).
 */
class Artifact : public detail::Shared<t4a_artifact, t4a_artifact_retain,
                                       t4a_artifact_release> {
public:
  using Shared::Shared;
  /** Target, sizes and name count (t4a_artifact_info_get()); non-throwing;
   *  `out` is written only on success. */
  t4a_status info(t4a_artifact_info &out, std::nothrow_t) const noexcept {
    t4a_artifact_info tmp = T4A_ARTIFACT_INFO_INIT;
    t4a_status s = t4a_artifact_info_get(get(), &tmp);
    if (s == T4A_SUCCESS) out = tmp;
    return s;
  }
#if T4A_HPP_EXCEPTIONS
  /** Target, sizes and name count (t4a_artifact_info_get()).
   *  @throws Error */
  t4a_artifact_info info() const {
    return detail::checked<t4a_artifact_info>(
        [&](auto &o) { return info(o, std::nothrow); });
  }
  /** The image: CUBIN bytes or PTX text with its NUL
   *  (t4a_artifact_image()). @throws Error */
  std::string image() const {
    size_t needed = 0;
    check(t4a_artifact_image(get(), nullptr, 0, &needed));
    std::string out(needed, '\0');
    if (needed > 0)
      check(t4a_artifact_image(get(), &out[0], out.size(), nullptr));
    return out;
  }
  /** The full NVRTC log (t4a_artifact_log()). @throws Error */
  std::string log() const {
    t4a_artifact h = get();
    std::string out;
    check(detail::read_string(
        [h](char *b, size_t c, size_t *n) {
          return t4a_artifact_log(h, b, c, n);
        },
        out));
    return out;
  }
  /** The lowered name of name expression `index`
   *  (t4a_artifact_lowered_name()). @throws Error */
  std::string lowered_name(uint32_t index) const {
    t4a_artifact h = get();
    std::string out;
    check(detail::read_string(
        [h, index](char *b, size_t c, size_t *n) {
          return t4a_artifact_lowered_name(h, index, b, c, n);
        },
        out));
    return out;
  }
  /** The lowered name of the name expression `expression`, matched
   *  exactly, then with whitespace and a leading `&` ignored
   *  (t4a_artifact_lowered_name_of()). @throws Error
   *  (#T4A_ERROR_UNKNOWN_ENTRY_POINT for an expression the request lacked) */
  std::string lowered_name_of(const char *expression) const {
    t4a_artifact h = get();
    std::string out;
    check(detail::read_string(
        [h, expression](char *b, size_t c, size_t *n) {
          return t4a_artifact_lowered_name_of(h, expression, b, c, n);
        },
        out));
    return out;
  }
  /** The identity key, 64 hex digits (t4a_artifact_key()). @throws Error */
  std::string key() const {
    char buf[T4A_ARTIFACT_KEY_CAPACITY];
    check(t4a_artifact_key(get(), buf, sizeof buf, nullptr));
    return buf;
  }
#endif
};

/** @brief Compiles or finds the artifact (t4a_compile()); non-throwing.
 *  `out` is written only on success; on #T4A_ERROR_COMPILE see
 *  t4a::last_compile_log(). */
inline t4a_status compile(const t4a_compile_request &request, Artifact &out,
                          std::nothrow_t) noexcept {
  t4a_artifact h{T4A_NULL_ID};
  t4a_status s = t4a_compile(&request, &h);
  if (s == T4A_SUCCESS) out = Artifact(h);
  return s;
}

/** @brief The process-wide compile counters (t4a_compile_stats_get());
 *  non-throwing. */
inline t4a_status compile_stats(t4a_compile_stats &out,
                                std::nothrow_t) noexcept {
  t4a_compile_stats tmp = T4A_COMPILE_STATS_INIT;
  t4a_status s = t4a_compile_stats_get(&tmp);
  if (s == T4A_SUCCESS) out = tmp;
  return s;
}

#if T4A_HPP_EXCEPTIONS
/** @brief Compiles or finds the artifact (t4a_compile()).
 *  @throws Error (for #T4A_ERROR_COMPILE the message holds the first lines
 *  of the log; t4a::last_compile_log() the whole log) */
inline Artifact compile(const t4a_compile_request &request) {
  return detail::checked<Artifact>(
      [&](auto &o) { return compile(request, o, std::nothrow); });
}

/** @brief The process-wide compile counters (t4a_compile_stats_get()).
 *  @throws Error */
inline t4a_compile_stats compile_stats() {
  return detail::checked<t4a_compile_stats>(
      [](auto &o) { return compile_stats(o, std::nothrow); });
}
#endif

// ---------------------------------------------------------------------------
// Launch arguments and shapes
// ---------------------------------------------------------------------------

/** @brief A ::t4a_arg passing `buffer`'s device address plus `offset`
 *  (#T4A_ARG_BUFFER). The buffer is not retained: keep it alive until
 *  t4a::launch() returns. */
inline t4a_arg arg_buffer(const Buffer &buffer, uint64_t offset = 0) noexcept {
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_BUFFER;
  a.buffer = buffer.get();
  a.offset = offset;
  return a;
}

/** @brief A ::t4a_arg passing the `sizeof(T)` bytes of `value`
 *  (#T4A_ARG_SCALAR). The bytes are read during t4a::launch() only, so
 *  `value` must live until it returns (a temporary in the launch call's
 *  argument list does). Host pointers are not kernel arguments: pass device
 *  addresses with t4a::arg_device_pointer(). */
template <class T> inline t4a_arg arg_scalar(const T &value) noexcept {
  static_assert(std::is_trivially_copyable<T>::value,
                "a scalar kernel argument is copied bytewise");
  static_assert(!std::is_pointer<T>::value,
                "pass device addresses with t4a::arg_device_pointer()");
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_SCALAR;
  a.value = &value;
  a.size = sizeof(T);
  return a;
}

/** @brief A ::t4a_arg passing a raw device address, unchecked
 *  (#T4A_ARG_DEVICE_POINTER). */
inline t4a_arg arg_device_pointer(uint64_t device_pointer) noexcept {
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_DEVICE_POINTER;
  a.device_pointer = device_pointer;
  return a;
}

/** @brief Grid or block dimensions; unset dimensions are 1. */
struct Dim3 {
  uint32_t x; /**< extent in x. */
  uint32_t y; /**< extent in y. */
  uint32_t z; /**< extent in z. */
  /** `x` by `y` by `z`; implicit, so `256` or `{16, 16}` convert. */
  constexpr Dim3(uint32_t x_ = 1, uint32_t y_ = 1, uint32_t z_ = 1) noexcept
      : x(x_), y(y_), z(z_) {}
  /** The same from integers of any type (`(n + 255) / 256` of a size_t,
   *  `{w, h}` of ints): an extent that does not fit in 32 bits, or a
   *  negative one, becomes UINT32_MAX, which t4a_launch() rejects naming
   *  it, instead of wrapping to a smaller grid. */
  template <class X, class Y = uint32_t, class Z = uint32_t,
            std::enable_if_t<std::is_integral<X>::value &&
                                 std::is_integral<Y>::value &&
                                 std::is_integral<Z>::value,
                             int> = 0>
  constexpr Dim3(X x_, Y y_ = 1, Z z_ = 1) noexcept
      : x(extent(x_)), y(extent(y_)), z(extent(z_)) {}

private:
  template <class I> static constexpr uint32_t extent(I v) noexcept {
    if constexpr (std::is_signed<I>::value)
      if (v < 0) return UINT32_MAX;
    if constexpr (sizeof(I) > sizeof(uint32_t))
      if (static_cast<std::make_unsigned_t<I>>(v) > UINT32_MAX)
        return UINT32_MAX;
    return static_cast<uint32_t>(v);
  }
};

namespace detail {
/** The ::t4a_launch_desc of a t4a::launch() call. */
inline t4a_launch_desc launch_desc(t4a_kernel kernel, Dim3 grid, Dim3 block,
                                   uint32_t shared, const t4a_arg *args,
                                   uint32_t count) noexcept {
  // Every field set explicitly: nothing relies on the initializer's
  // grid and block values.
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.struct_size = sizeof(t4a_launch_desc);
  d.flags = 0;
  d.kernel = kernel;
  d.grid[0] = grid.x;
  d.grid[1] = grid.y;
  d.grid[2] = grid.z;
  d.block[0] = block.x;
  d.block[1] = block.y;
  d.block[2] = block.z;
  d.dynamic_shared_bytes = shared;
  d.arg_count = count;
  d.args = args;
  return d;
}
} // namespace detail

/** @brief A ::t4a_arg passing element `offset` (default 0) of a typed
 *  array (#T4A_ARG_BUFFER at byte `offset * sizeof(T)`). The array is not
 *  retained: keep it alive until the launch returns. */
template <class T>
t4a_arg arg_buffer(const DeviceArray<T> &array, size_t offset = 0) noexcept {
  return arg_buffer(array.buffer(),
                    detail::saturating_bytes(offset, sizeof(T)));
}

/**
 * @brief The shape of a launch: grid, block and dynamic shared memory,
 *        for Kernel::launch() when the kernel needs shared memory.
 *
 * `kernel.launch(rt, t4a::LaunchConfig(grid, block, 4096), args...)`. The
 * constructor is explicit so that a braced list is never taken for a
 * launch configuration by mistake.
 */
struct LaunchConfig {
  Dim3 grid;                 /**< blocks in x, y, z. */
  Dim3 block;                /**< threads per block in x, y, z. */
  uint32_t shared_bytes = 0; /**< dynamic shared memory per block. */
  /** ::t4a_launch_desc::flags (0; with `T4A_EXPERIMENTAL`, see
   *  cooperative()). */
  uint32_t flags = 0;
  /** ::t4a_launch_attrs::flags (0; with `T4A_EXPERIMENTAL`, see
   *  programmatic() and non_portable_cluster()). Present, as
   *  `cluster_dims`, with or without `T4A_EXPERIMENTAL`, so that the
   *  layout is the same in every translation unit. */
  uint32_t attr_flags = 0;
  /** ::t4a_launch_attrs::cluster: blocks per cluster in x, y, z (all 0:
   *  none; with `T4A_EXPERIMENTAL`, see cluster()). */
  uint32_t cluster_dims[3] = {0, 0, 0};
  /** `grid` blocks of `block` threads with `shared` dynamic shared bytes
   *  per block. */
  constexpr explicit LaunchConfig(Dim3 grid_, Dim3 block_,
                                  uint32_t shared = 0) noexcept
      : grid(grid_), block(block_), shared_bytes(shared) {}
  /** Whether any launch attribute is set (`attr_flags` or
   *  `cluster_dims`): such a launch goes through t4a_launch_ex(), which
   *  needs `T4A_EXPERIMENTAL`. */
  constexpr bool has_attributes() const noexcept {
    return attr_flags != 0 || cluster_dims[0] != 0 || cluster_dims[1] != 0 ||
           cluster_dims[2] != 0;
  }
#if defined(T4A_EXPERIMENTAL)
  /** A cooperative launch (#T4A_LAUNCH_COOPERATIVE): the grid must fit
   *  Kernel::max_cooperative_blocks(). Returns `*this`:
   *  `t4a::LaunchConfig(grid, block).cooperative()`. @experimental */
  LaunchConfig &cooperative(bool on = true) noexcept {
    flags = on ? (flags | T4A_LAUNCH_COOPERATIVE)
               : (flags & ~uint32_t{T4A_LAUNCH_COOPERATIVE});
    return *this;
  }
  /** A thread block cluster launch of `x` by `y` by `z` blocks per
   *  cluster (::t4a_launch_attrs::cluster; t4a_launch_ex()): each axis
   *  must divide the grid's, and the cluster hold at most 8 blocks unless
   *  non_portable_cluster(). `cluster(0, 0, 0)` clears it. Returns
   *  `*this`: `t4a::LaunchConfig(grid, block).cluster(2)`. @experimental */
  LaunchConfig &cluster(uint32_t x, uint32_t y = 1, uint32_t z = 1) noexcept {
    cluster_dims[0] = x;
    cluster_dims[1] = y;
    cluster_dims[2] = z;
    return *this;
  }
  /** A programmatic dependent launch (#T4A_LAUNCH_ATTR_PROGRAMMATIC;
   *  t4a_launch_ex()). Returns `*this`. @experimental */
  LaunchConfig &programmatic(bool on = true) noexcept {
    attr_flags = on ? (attr_flags | T4A_LAUNCH_ATTR_PROGRAMMATIC)
                    : (attr_flags & ~uint32_t{T4A_LAUNCH_ATTR_PROGRAMMATIC});
    return *this;
  }
  /** Allows a cluster of more than 8 blocks
   *  (#T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE; t4a_launch_ex()). Returns
   *  `*this`. @experimental */
  LaunchConfig &non_portable_cluster(bool on = true) noexcept {
    attr_flags =
        on ? (attr_flags | T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE)
           : (attr_flags & ~uint32_t{T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE});
    return *this;
  }
  /** The ::t4a_launch_attrs of `attr_flags` and `cluster_dims`.
   *  @experimental */
  t4a_launch_attrs attributes() const noexcept {
    t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
    a.flags = attr_flags;
    a.cluster[0] = cluster_dims[0];
    a.cluster[1] = cluster_dims[1];
    a.cluster[2] = cluster_dims[2];
    return a;
  }
#endif
};

namespace detail {
/** Always false, for static_assert in a discarded branch. */
template <class> struct always_false : std::false_type {};
/** Whether `T` is some `DeviceArray<U>`. */
template <class T> struct is_device_array : std::false_type {};
/** @copydoc is_device_array */
template <class U> struct is_device_array<DeviceArray<U>> : std::true_type {};

/**
 * The ::t4a_arg of one argument of Kernel::launch(): a ::t4a_arg as given;
 * a t4a::Buffer or t4a::DeviceArray as #T4A_ARG_BUFFER at offset 0; an
 * arithmetic or enum scalar as #T4A_ARG_SCALAR of `sizeof(T)` bytes,
 * pointing at `value` (which lives until the launch returns); the
 * `std::nothrow` tag as an unused entry past the count. Anything else does
 * not compile.
 */
template <class T> t4a_arg to_arg(const T &value) noexcept {
  if constexpr (std::is_same<T, t4a_arg>::value) {
    return value;
  } else if constexpr (std::is_same<T, Buffer>::value) {
    return arg_buffer(value);
  } else if constexpr (is_device_array<T>::value) {
    return arg_buffer(value.buffer());
  } else if constexpr (std::is_same<T, std::nothrow_t>::value) {
    return t4a_arg T4A_ARG_INIT;
  } else if constexpr (std::is_pointer<T>::value ||
                       std::is_null_pointer<T>::value ||
                       std::is_array<T>::value) {
    static_assert(always_false<T>::value,
                  "a host pointer is not a kernel argument: pass a "
                  "t4a::Buffer, a t4a::DeviceArray, or "
                  "t4a::arg_device_pointer(address)");
    return t4a_arg T4A_ARG_INIT;
  } else if constexpr (std::is_arithmetic<T>::value || std::is_enum<T>::value) {
    return arg_scalar(value);
  } else {
    static_assert(always_false<T>::value,
                  "Kernel::launch takes buffers, device arrays, arithmetic "
                  "or enum scalars and t4a_arg values: pass other "
                  "trivially copyable values with t4a::arg_scalar()");
    return t4a_arg T4A_ARG_INIT;
  }
}

/** Whether the last type of a pack is std::nothrow_t. */
template <class... Args> struct ends_with_nothrow : std::false_type {};
/** @copydoc ends_with_nothrow */
template <class Last> struct ends_with_nothrow<Last> {
  /** The answer. */
  static constexpr bool value = std::is_same<Last, std::nothrow_t>::value;
};
/** @copydoc ends_with_nothrow */
template <class First, class Second, class... Rest>
struct ends_with_nothrow<First, Second, Rest...>
    : ends_with_nothrow<Second, Rest...> {};

/** Whether a launch's arguments hold std::nothrow nowhere but last: a tag
 *  anywhere else would be packed as an argument, so such a call matches no
 *  Kernel::launch() overload. */
template <class... Args> struct nothrow_only_last {
  /** The answer. */
  static constexpr bool value =
      (0 + ... + (std::is_same<Args, std::nothrow_t>::value ? 1 : 0)) ==
      (ends_with_nothrow<Args...>::value ? 1 : 0);
};

/** How launch_pack() launches: `launch_call<T4A_HPP_LAUNCH_ATTRS>::run()`.
 *  Only this unit's specialization is defined, so translation units built
 *  with and without `T4A_EXPERIMENTAL` (whose Kernel::launch() carries
 *  #T4A_HPP_LAUNCH_ATTRS as a template argument) use distinct functions,
 *  each defined the same wherever it is. */
template <int Mode> struct launch_call;
#if T4A_HPP_LAUNCH_ATTRS
/** t4a_launch_ex() when the configuration has launch attributes, else
 *  t4a_launch(). */
template <> struct launch_call<1> {
  /** Launches `d` with `config`'s attributes. */
  static t4a_status run(t4a_runtime rt, const t4a_launch_desc &d,
                        const LaunchConfig &config) noexcept {
    if (!config.has_attributes()) return t4a_launch(rt, &d);
    const t4a_launch_attrs attrs = config.attributes();
    return t4a_launch_ex(rt, &d, &attrs);
  }
};
#else
/** t4a_launch(); a configuration with launch attributes (set outside this
 *  unit, which cannot name t4a_launch_ex()) is refused with
 *  #T4A_ERROR_UNSUPPORTED, never launched without them. */
template <> struct launch_call<0> {
  /** Launches `d`, which must have no attributes. */
  static t4a_status run(t4a_runtime rt, const t4a_launch_desc &d,
                        const LaunchConfig &config) noexcept {
    if (!config.has_attributes()) return t4a_launch(rt, &d);
    t4a_last_error_clear(); // no stale message for this status
    return T4A_ERROR_UNSUPPORTED;
  }
};
#endif

/** Packs `args` into stack storage and launches them (launch_call: with
 *  t4a_launch(), or t4a_launch_ex() when the configuration has launch
 *  attributes); the count leaves out a trailing std::nothrow tag.
 *  Allocates nothing. `Mode` is #T4A_HPP_LAUNCH_ATTRS. */
template <int Mode, class... Args>
t4a_status launch_pack(RuntimeView rt, t4a_kernel kernel,
                       const LaunchConfig &config,
                       const Args &...args) noexcept {
  static_assert(Mode == T4A_HPP_LAUNCH_ATTRS, "the unit's own launch path");
  constexpr size_t n = sizeof...(Args);
  constexpr size_t count = n - (ends_with_nothrow<Args...>::value ? 1 : 0);
  static_assert(count <= UINT32_MAX, "too many kernel arguments");
  const std::array<t4a_arg, n> packed{{to_arg(args)...}};
  t4a_launch_desc d = launch_desc(
      kernel, config.grid, config.block, config.shared_bytes,
      count != 0 ? packed.data() : nullptr, static_cast<uint32_t>(count));
  d.flags = config.flags;
  return launch_call<Mode>::run(rt.get(), d, config);
}
} // namespace detail

// ---------------------------------------------------------------------------
// Modules and kernels
// ---------------------------------------------------------------------------

/**
 * @brief A kernel (entry point) of a module (t4a_kernel_get()); copying
 *        retains, the last release drops it (t4a_kernel_release()).
 *
 * A kernel keeps its module loaded. Obtain one with Module::kernel().
 */
class Kernel
    : public detail::Shared<t4a_kernel, t4a_kernel_retain, t4a_kernel_release> {
public:
  using Shared::Shared;
  /** Attributes and parameter layout (t4a_kernel_info_get());
   *  non-throwing; `out` is written only on success. */
  t4a_status info(t4a_kernel_info &out, std::nothrow_t) const noexcept {
    t4a_kernel_info tmp = T4A_KERNEL_INFO_INIT;
    t4a_status s = t4a_kernel_info_get(get(), &tmp);
    if (s == T4A_SUCCESS) out = tmp;
    return s;
  }
  /** One parameter's offset and size (t4a_kernel_param()); non-throwing;
   *  `offset` and `size` are written only on success. */
  t4a_status param(uint32_t index, uint64_t &offset, uint64_t &size,
                   std::nothrow_t) const noexcept {
    uint64_t o = 0, z = 0;
    t4a_status s = t4a_kernel_param(get(), index, &o, &z);
    if (s == T4A_SUCCESS) {
      offset = o;
      size = z;
    }
    return s;
  }
  /** Active blocks of `block_size` threads per multiprocessor
   *  (t4a_kernel_occupancy()); non-throwing; `blocks_per_sm` is written
   *  only on success. */
  t4a_status occupancy(int32_t block_size, uint64_t dynamic_shared,
                       int32_t &blocks_per_sm, std::nothrow_t) const noexcept {
    int32_t n = 0;
    t4a_status s = t4a_kernel_occupancy(get(), block_size, dynamic_shared, &n);
    if (s == T4A_SUCCESS) blocks_per_sm = n;
    return s;
  }
  /** The block size with the highest occupancy and the blocks needed to
   *  fill the device (t4a_kernel_suggest_block_size()); non-throwing;
   *  `block_size` and `min_grid_size` are written only on success. */
  t4a_status suggest_block_size(uint64_t dynamic_shared, int32_t &block_size,
                                int32_t &min_grid_size,
                                std::nothrow_t) const noexcept {
    int32_t block = 0, grid = 0;
    t4a_status s =
        t4a_kernel_suggest_block_size(get(), dynamic_shared, &block, &grid);
    if (s == T4A_SUCCESS) {
      block_size = block;
      min_grid_size = grid;
    }
    return s;
  }
#if defined(T4A_EXPERIMENTAL)
  /** The cluster occupancy of launching this kernel with `config`'s grid,
   *  block, dynamic shared bytes and attributes
   *  (t4a_kernel_cluster_occupancy()); non-throwing; `out` is written only
   *  on success. @experimental */
  t4a_status cluster_occupancy(const LaunchConfig &config,
                               t4a_cluster_occupancy &out,
                               std::nothrow_t) const noexcept {
    t4a_launch_desc d = detail::launch_desc(get(), config.grid, config.block,
                                            config.shared_bytes, nullptr, 0);
    d.flags = config.flags;
    const t4a_launch_attrs attrs = config.attributes();
    t4a_cluster_occupancy tmp = T4A_CLUSTER_OCCUPANCY_INIT;
    t4a_status s = t4a_kernel_cluster_occupancy(&d, &attrs, &tmp);
    if (s == T4A_SUCCESS) out = tmp;
    return s;
  }
#endif

  /**
   * @brief Launches this kernel with `args` packed in place (t4a_launch());
   *        non-throwing form: the last argument is `std::nothrow`, and the
   *        status is returned.
   *
   * `kernel.launch(rt, grid, block, a, x, y, n, std::nothrow)`. The
   * arguments are packed as Kernel::launch() describes; no dynamic shared
   * memory (see the LaunchConfig overload).
   */
  template <class... Args,
            std::enable_if_t<detail::ends_with_nothrow<Args...>::value &&
                                 detail::nothrow_only_last<Args...>::value,
                             int>
                Mode = T4A_HPP_LAUNCH_ATTRS>
  t4a_status launch(RuntimeView rt, Dim3 grid, Dim3 block,
                    const Args &...args) const noexcept {
    return detail::launch_pack<Mode>(rt, get(), LaunchConfig(grid, block),
                                     args...);
  }
  /** @brief Launches with a grid, block and dynamic shared memory
   *  (t4a_launch(), or t4a_launch_ex() with launch attributes);
   *  non-throwing form (the last argument is `std::nothrow`). */
  template <class Config, class... Args,
            std::enable_if_t<std::is_same<Config, LaunchConfig>::value &&
                                 detail::ends_with_nothrow<Args...>::value &&
                                 detail::nothrow_only_last<Args...>::value,
                             int>
                Mode = T4A_HPP_LAUNCH_ATTRS>
  t4a_status launch(RuntimeView rt, const Config &config,
                    const Args &...args) const noexcept {
    return detail::launch_pack<Mode>(rt, get(), config, args...);
  }
#if T4A_HPP_EXCEPTIONS
  /**
   * @brief Launches this kernel on the runtime's stream with `args` as its
   *        parameters, in order (t4a_launch()).
   *
   * `kernel.launch(rt, (n + 255) / 256, 256, a, x, y, n)`. Each argument
   * becomes one ::t4a_arg, in stack storage sized by the pack (a warm launch
   * allocates nothing):
   *  - a t4a::Buffer or t4a::DeviceArray: #T4A_ARG_BUFFER, its device
   *    address (use t4a::arg_buffer() for an offset);
   *  - an arithmetic or enum value: #T4A_ARG_SCALAR of `sizeof(T)` bytes,
   *    so the launch's parameter-size check still tells an `int` from a
   *    `double` where the driver reports parameters;
   *  - a ::t4a_arg (t4a::arg_buffer(), t4a::arg_scalar() for other
   *    trivially copyable values, t4a::arg_device_pointer() for a raw
   *    device address) as given.
   *
   * A host pointer does not compile. Buffers and arrays are not retained:
   * they must live until the call returns (arguments of the call do).
   * `grid` and `block` are one number (`256`) or `{x, y, z}`; for dynamic
   * shared memory pass a t4a::LaunchConfig instead.
   * @throws Error
   */
  template <class... Args,
            std::enable_if_t<!detail::ends_with_nothrow<Args...>::value &&
                                 detail::nothrow_only_last<Args...>::value,
                             int>
                Mode = T4A_HPP_LAUNCH_ATTRS>
  void launch(RuntimeView rt, Dim3 grid, Dim3 block,
              const Args &...args) const {
    check(detail::launch_pack<Mode>(rt, get(), LaunchConfig(grid, block),
                                    args...));
  }
  /** @brief Launches with a grid, block and dynamic shared memory
   *  (`kernel.launch(rt, t4a::LaunchConfig(grid, block, bytes), args...)`;
   *  t4a_launch(), or t4a_launch_ex() when the configuration has launch
   *  attributes: LaunchConfig::cluster(), LaunchConfig::programmatic()).
   *  `Config` is t4a::LaunchConfig itself (deduced, so a braced `{x, y, z}`
   *  is always a grid). @throws Error (#T4A_ERROR_UNSUPPORTED for
   *  attributes in a translation unit without `T4A_EXPERIMENTAL`) */
  template <class Config, class... Args,
            std::enable_if_t<std::is_same<Config, LaunchConfig>::value &&
                                 !detail::ends_with_nothrow<Args...>::value &&
                                 detail::nothrow_only_last<Args...>::value,
                             int>
                Mode = T4A_HPP_LAUNCH_ATTRS>
  void launch(RuntimeView rt, const Config &config, const Args &...args) const {
    check(detail::launch_pack<Mode>(rt, get(), config, args...));
  }
  /** Attributes and parameter layout (t4a_kernel_info_get()).
   *  @throws Error */
  t4a_kernel_info info() const {
    return detail::checked<t4a_kernel_info>(
        [&](auto &o) { return info(o, std::nothrow); });
  }
  /** One parameter as {offset, size} (t4a_kernel_param()). @throws Error
   *  (#T4A_ERROR_UNSUPPORTED when the driver does not report parameters) */
  std::pair<uint64_t, uint64_t> param(uint32_t index) const {
    return detail::checked<std::pair<uint64_t, uint64_t>>(
        [&](auto &p) { return param(index, p.first, p.second, std::nothrow); });
  }
  /** Active blocks of `block_size` threads per multiprocessor
   *  (t4a_kernel_occupancy()). @throws Error */
  int32_t occupancy(int32_t block_size, uint64_t dynamic_shared = 0) const {
    return detail::checked<int32_t>([&](auto &n) {
      return occupancy(block_size, dynamic_shared, n, std::nothrow);
    });
  }
  /** The suggested block size as {block_size, min_grid_size}
   *  (t4a_kernel_suggest_block_size()). @throws Error */
  std::pair<int32_t, int32_t>
  suggest_block_size(uint64_t dynamic_shared = 0) const {
    return detail::checked<std::pair<int32_t, int32_t>>([&](auto &p) {
      return suggest_block_size(dynamic_shared, p.first, p.second,
                                std::nothrow);
    });
  }
#if defined(T4A_EXPERIMENTAL)
  /** The cluster occupancy of launching this kernel with `config`
   *  (t4a_kernel_cluster_occupancy()): clusters of its cluster shape
   *  resident at once and the largest cluster its block size and shared
   *  memory allow. @throws Error (#T4A_ERROR_UNSUPPORTED below compute
   *  capability 9.0) @experimental */
  t4a_cluster_occupancy cluster_occupancy(const LaunchConfig &config) const {
    return detail::checked<t4a_cluster_occupancy>(
        [&](auto &o) { return cluster_occupancy(config, o, std::nothrow); });
  }
  /** The most blocks a cooperative launch may have
   *  (t4a_kernel_max_cooperative_blocks()). @throws Error @experimental */
  int32_t max_cooperative_blocks(int32_t block_size,
                                 uint64_t dynamic_shared = 0) const {
    int32_t n = 0;
    check(t4a_kernel_max_cooperative_blocks(get(), block_size, dynamic_shared,
                                            &n));
    return n;
  }
  /** Declares a grid-barrier counter (t4a_kernel_declare_barrier());
   *  returns its index. @throws Error @experimental */
  uint32_t declare_barrier(const t4a_barrier_desc &desc) const {
    uint32_t index = 0;
    check(t4a_kernel_declare_barrier(get(), &desc, &index));
    return index;
  }
  /** Declares the 4-byte counter `global_name` (reset to 0 before each
   *  launch, expected back at 0 after it). @throws Error @experimental */
  uint32_t declare_barrier(const char *global_name) const {
    t4a_barrier_desc d = T4A_BARRIER_DESC_INIT;
    d.global_name = global_name;
    return declare_barrier(d);
  }
  /** What the audits of barrier `index` found
   *  (t4a_kernel_barrier_audit()). @throws Error @experimental */
  t4a_barrier_audit barrier_audit(uint32_t index) const {
    t4a_barrier_audit a = T4A_BARRIER_AUDIT_INIT;
    check(t4a_kernel_barrier_audit(get(), index, &a));
    return a;
  }
#endif
#endif
};

/**
 * @brief A loaded module (t4a_module_load(), t4a_module_load_data());
 *        copying retains, the last release drops it (t4a_module_release()).
 *
 * Loads go through the runtime's module cache; the module is unloaded once
 * no handle, kernel, cache entry or pending launch uses it.
 */
class Module
    : public detail::Shared<t4a_module, t4a_module_retain, t4a_module_release> {
public:
  using Shared::Shared;
  /** Loads an artifact's image without throwing (t4a_module_load());
   *  `out` is written only on success. */
  static t4a_status load(RuntimeView rt, const Artifact &artifact, Module &out,
                         std::nothrow_t) noexcept {
    t4a_module h{T4A_NULL_ID};
    t4a_status s = t4a_module_load(rt.get(), artifact.get(), &h);
    if (s == T4A_SUCCESS) out = Module(h);
    return s;
  }
  /** Loads raw CUBIN, PTX or fatbin bytes without throwing
   *  (t4a_module_load_data()); the bytes are copied; `out` is written only
   *  on success. */
  static t4a_status load(RuntimeView rt, const void *image, size_t bytes,
                         Module &out, std::nothrow_t) noexcept {
    t4a_module h{T4A_NULL_ID};
    t4a_status s = t4a_module_load_data(rt.get(), image, bytes, &h);
    if (s == T4A_SUCCESS) out = Module(h);
    return s;
  }
  /** Looks up a kernel by a name expression of the module's artifact
   *  (`"reduce<128, true>"`) or its (lowered or `extern "C"`) name
   *  (t4a_kernel_get()); non-throwing; `out` is written only on success. */
  t4a_status kernel(const char *name, Kernel &out,
                    std::nothrow_t) const noexcept {
    t4a_kernel h{T4A_NULL_ID};
    t4a_status s = t4a_kernel_get(get(), name, &h);
    if (s == T4A_SUCCESS) out = Kernel(h);
    return s;
  }
  /** A `__device__` or `__constant__` variable, by name expression
   *  (`"&counter"`) or name, as a buffer view that keeps this module loaded
   *  and never frees its memory (t4a_module_global()); non-throwing; `out`
   *  is written only on success. */
  t4a_status global(const char *name, Buffer &out,
                    std::nothrow_t) const noexcept {
    t4a_buffer h{T4A_NULL_ID};
    t4a_status s = t4a_module_global(get(), name, &h);
    if (s == T4A_SUCCESS) out = Buffer(h);
    return s;
  }
#if T4A_HPP_EXCEPTIONS
  /** Loads an artifact's image (t4a_module_load()). @throws Error */
  Module(RuntimeView rt, const Artifact &artifact) {
    check(load(rt, artifact, *this, std::nothrow));
  }
  /** Loads raw CUBIN, PTX or fatbin bytes (t4a_module_load_data()).
   *  @throws Error */
  Module(RuntimeView rt, const void *image, size_t bytes) {
    check(load(rt, image, bytes, *this, std::nothrow));
  }
  /** Looks up a kernel by name expression or name (t4a_kernel_get()).
   *  @throws Error (#T4A_ERROR_UNKNOWN_ENTRY_POINT for a name the module
   *  lacks) */
  Kernel kernel(const char *name) const {
    return detail::checked<Kernel>(
        [&](auto &k) { return kernel(name, k, std::nothrow); });
  }
  /** A `__device__` or `__constant__` variable as a buffer view
   *  (t4a_module_global()): upload, download, fill, copy and launch with
   *  it like any buffer. @throws Error (#T4A_ERROR_UNKNOWN_ENTRY_POINT for
   *  a name the module lacks) */
  Buffer global(const char *name) const {
    return detail::checked<Buffer>(
        [&](auto &b) { return global(name, b, std::nothrow); });
  }
#endif
};

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------

/** @brief Launches a described kernel on the runtime's stream
 *  (t4a_launch()); non-throwing. */
inline t4a_status launch(RuntimeView rt, const t4a_launch_desc &desc,
                         std::nothrow_t) noexcept {
  return t4a_launch(rt.get(), &desc);
}
/**
 * @brief Launches `kernel` on the runtime's stream (t4a_launch());
 *        non-throwing.
 * @param rt     the runtime.
 * @param kernel a kernel of that runtime.
 * @param grid   blocks in x, y, z.
 * @param block  threads per block in x, y, z.
 * @param shared dynamic shared memory bytes per block.
 * @param args   `count` arguments in parameter order (t4a::arg_buffer(),
 *               t4a::arg_scalar(), t4a::arg_device_pointer()).
 * @param count  the number of arguments.
 */
inline t4a_status launch(RuntimeView rt, const Kernel &kernel, Dim3 grid,
                         Dim3 block, uint32_t shared, const t4a_arg *args,
                         uint32_t count, std::nothrow_t) noexcept {
  t4a_launch_desc d =
      detail::launch_desc(kernel.get(), grid, block, shared, args, count);
  return t4a_launch(rt.get(), &d);
}
/** @brief Launches `kernel` with the arguments listed in place
 *  (t4a_launch()); non-throwing. */
inline t4a_status launch(RuntimeView rt, const Kernel &kernel, Dim3 grid,
                         Dim3 block, uint32_t shared,
                         std::initializer_list<t4a_arg> args,
                         std::nothrow_t) noexcept {
  return launch(rt, kernel, grid, block, shared, args.begin(),
                static_cast<uint32_t>(args.size()), std::nothrow);
}
#if T4A_HPP_EXCEPTIONS
/** @brief Launches a described kernel on the runtime's stream
 *  (t4a_launch()). @throws Error */
inline void launch(RuntimeView rt, const t4a_launch_desc &desc) {
  check(launch(rt, desc, std::nothrow));
}
/** @brief Launches `kernel` with `count` arguments (t4a_launch()).
 *  @throws Error */
inline void launch(RuntimeView rt, const Kernel &kernel, Dim3 grid, Dim3 block,
                   uint32_t shared, const t4a_arg *args, uint32_t count) {
  check(launch(rt, kernel, grid, block, shared, args, count, std::nothrow));
}
/** @brief Launches `kernel` with the arguments listed in place
 *  (t4a_launch()). @throws Error */
inline void launch(RuntimeView rt, const Kernel &kernel, Dim3 grid, Dim3 block,
                   uint32_t shared, std::initializer_list<t4a_arg> args) {
  check(launch(rt, kernel, grid, block, shared, args, std::nothrow));
}
#endif

// ---------------------------------------------------------------------------
// Completions
// ---------------------------------------------------------------------------

/**
 * @brief The point a runtime's stream had reached (t4a::record());
 *        copying retains, the last release drops it
 *        (t4a_completion_release()).
 */
class Completion : public detail::Shared<t4a_completion, t4a_completion_retain,
                                         t4a_completion_release> {
public:
  using Shared::Shared;
  /** Whether the work before it is done (t4a_completion_poll()):
   *  #T4A_SUCCESS or #T4A_NOT_READY; never waits. */
  t4a_status poll(std::nothrow_t) const noexcept {
    return t4a_completion_poll(get());
  }
  /** Host wait until the work before it is done (t4a_completion_wait());
   *  non-throwing. */
  t4a_status wait(std::nothrow_t) const noexcept {
    return t4a_completion_wait(get());
  }
#if T4A_HPP_EXCEPTIONS
  /** Whether the work before it is done (t4a_completion_poll()); never
   *  waits. @throws Error */
  bool poll() const { return detail::ready(poll(std::nothrow)); }
  /** Host wait until the work before it is done (t4a_completion_wait()).
   *  @throws Error */
  void wait() const { check(wait(std::nothrow)); }
#endif
};

/** @brief Records a completion after the work enqueued so far
 *  (t4a_runtime_record()); non-throwing; `out` is written only on
 *  success. */
inline t4a_status record(RuntimeView rt, Completion &out,
                         std::nothrow_t) noexcept {
  t4a_completion h{T4A_NULL_ID};
  t4a_status s = t4a_runtime_record(rt.get(), &h);
  if (s == T4A_SUCCESS) out = Completion(h);
  return s;
}
/** @brief Makes the runtime's later work wait for a completion of any
 *  runtime, without a host wait (t4a_runtime_wait()); non-throwing. */
inline t4a_status wait(RuntimeView rt, const Completion &completion,
                       std::nothrow_t) noexcept {
  return t4a_runtime_wait(rt.get(), completion.get());
}
#if T4A_HPP_EXCEPTIONS
/** @brief Records a completion after the work enqueued so far
 *  (t4a_runtime_record()). @throws Error */
inline Completion record(RuntimeView rt) {
  return detail::checked<Completion>(
      [&](auto &c) { return record(rt, c, std::nothrow); });
}
/** @brief Makes the runtime's later work wait for a completion
 *  (t4a_runtime_wait()). @throws Error */
inline void wait(RuntimeView rt, const Completion &completion) {
  check(wait(rt, completion, std::nothrow));
}
#endif

// ---------------------------------------------------------------------------
// Raw seam (vendor libraries)
// ---------------------------------------------------------------------------

/**
 * @brief An open raw scope (t4a_raw_begin() / t4a_raw_end()): the
 *        runtime's context (current on this thread) and stream for
 *        cuBLAS, cuFFT or NCCL calls.
 *
 * Begun by the constructor, ended by the destructor (or end()); move-only.
 * While it is open, calls on the same runtime from this thread that would
 * be admitted return #T4A_ERROR_REENTRANT; other runtimes work. Scopes of
 * different runtimes nest and must end in reverse order (destructors of
 * locals do that). Use it on the thread that made it.
 * @code
 * t4a::RawScope raw(rt);
 * cublasSetStream(handle, static_cast<cudaStream_t>(raw.stream()));
 * float *a = raw.pointer(a_array);   // kept alive until the work is done
 * ...                                // cuBLAS calls
 * @endcode
 */
class RawScope : private detail::Unique<t4a_raw_scope, t4a_raw_end> {
public:
  /** A scope that is not open. */
  RawScope() noexcept = default;
  /** Opens a scope without throwing (t4a_raw_begin()); `out` (which must
   *  not be open) receives it on success. */
  static t4a_status begin(RuntimeView rt, RawScope &out,
                          std::nothrow_t) noexcept {
    t4a_raw_scope h{T4A_NULL_ID};
    t4a_raw_info info = T4A_RAW_INFO_INIT;
    t4a_status s = t4a_raw_begin(rt.get(), &h, &info);
    if (s == T4A_SUCCESS) out = RawScope(h, info);
    return s;
  }
  // Moving hands the open scope over; assigning or destroying ends the
  // held one (detail::Unique), errors left in the thread's last error.

  /** The C handle. */
  t4a_raw_scope get() const noexcept { return Unique::get(); }
  /** True while open. */
  explicit operator bool() const noexcept { return Unique::operator bool(); }
  /** The runtime's `CUcontext`, current on this thread in the scope. */
  void *context() const noexcept { return info_.context; }
  /** The runtime's `CUstream`: enqueue the raw work here. */
  void *stream() const noexcept { return info_.stream; }
  /** The runtime's device ordinal. */
  int32_t device_ordinal() const noexcept { return info_.device_ordinal; }

  /** Registers a buffer and gives its device pointer (t4a_raw_buffer());
   *  non-throwing; `out` is written only on success. */
  t4a_status buffer(const Buffer &b, uint64_t &out,
                    std::nothrow_t) const noexcept {
    return t4a_raw_buffer(get(), b.get(), &out);
  }
  /** Registers a typed array and gives its device pointer as `T *`;
   *  non-throwing; `out` is written only on success. */
  template <class T>
  t4a_status pointer(const DeviceArray<T> &a, T *&out,
                     std::nothrow_t) const noexcept {
    uint64_t p = 0;
    t4a_status s = t4a_raw_buffer(get(), a.get(), &p);
    if (s == T4A_SUCCESS)
      out = reinterpret_cast<T *>(static_cast<uintptr_t>(p));
    return s;
  }
  /** Ends the scope now (t4a_raw_end()); non-throwing. A refused end
   *  (another thread, out of order) leaves it open; any other outcome
   *  closes it. Ending a scope that is not open does nothing. */
  t4a_status end(std::nothrow_t) noexcept {
    if (!*this) return T4A_SUCCESS;
    t4a_status s = t4a_raw_end(get());
    if (s != T4A_ERROR_INVALID_ARGUMENT) (void)release();
    return s;
  }
#if T4A_HPP_EXCEPTIONS
  /** Opens a scope on `rt` (t4a_raw_begin()). @throws Error */
  explicit RawScope(RuntimeView rt) { check(begin(rt, *this, std::nothrow)); }
  /** Registers a buffer (t4a_raw_buffer()). @throws Error */
  uint64_t buffer(const Buffer &b) const {
    return detail::checked<uint64_t>(
        [&](auto &p) { return buffer(b, p, std::nothrow); });
  }
  /** Registers a typed array, giving `T *` (t4a_raw_buffer()).
   *  @throws Error */
  template <class T> T *pointer(const DeviceArray<T> &a) const {
    return detail::checked<T *>(
        [&](auto &p) { return pointer(a, p, std::nothrow); });
  }
  /** Ends the scope now (t4a_raw_end()). @throws Error */
  void end() { check(end(std::nothrow)); }
#endif

private:
  RawScope(t4a_raw_scope h, const t4a_raw_info &info) noexcept
      : Unique(h), info_(info) {}
  t4a_raw_info info_ = T4A_RAW_INFO_INIT;
};

/** @brief Makes the runtime's later work wait for the work enqueued so far
 *  on `stream`, a stream of the runtime's context
 *  (t4a_runtime_wait_stream()); non-throwing. */
inline t4a_status wait_stream(RuntimeView rt, void *stream,
                              std::nothrow_t) noexcept {
  return t4a_runtime_wait_stream(rt.get(), stream);
}
/** @brief Makes `stream` (any context) wait for the runtime's work so far
 *  (t4a_runtime_signal_stream()); non-throwing. */
inline t4a_status signal_stream(RuntimeView rt, void *stream,
                                std::nothrow_t) noexcept {
  return t4a_runtime_signal_stream(rt.get(), stream);
}
#if T4A_HPP_EXCEPTIONS
/** @brief t4a_runtime_wait_stream(). @throws Error */
inline void wait_stream(RuntimeView rt, void *stream) {
  check(wait_stream(rt, stream, std::nothrow));
}
/** @brief t4a_runtime_signal_stream(). @throws Error */
inline void signal_stream(RuntimeView rt, void *stream) {
  check(signal_stream(rt, stream, std::nothrow));
}
#endif

} // namespace t4a

#endif /* T4ACUDA_HPP */

/*
 * The experimental part has its own guard, outside the main one, so that a
 * later inclusion with T4A_EXPERIMENTAL defined still adds it after an
 * earlier one without. It needs the C experimental section
 * (T4A_EXPERIMENTAL_REVISION), included again for that case. Experimental
 * members of classes above (LaunchConfig::cooperative(), cluster(),
 * programmatic(), non_portable_cluster(), attributes(); Kernel's
 * cooperative, barrier and cluster_occupancy methods) and the launch path's
 * use of t4a_launch_ex() (T4A_HPP_LAUNCH_ATTRS) follow the first inclusion.
 */
#if defined(T4A_EXPERIMENTAL) && !defined(T4ACUDA_HPP_EXPERIMENTAL)
#include "t4acuda.h"
#endif
#if defined(T4A_EXPERIMENTAL) && defined(T4A_EXPERIMENTAL_REVISION) &&         \
    !defined(T4ACUDA_HPP_EXPERIMENTAL)
/** Defined once the facade's experimental part is declared. */
#define T4ACUDA_HPP_EXPERIMENTAL

namespace t4a {

// ---------------------------------------------------------------------------
// Graphs (experimental: see t4acuda.h's experimental section)
// ---------------------------------------------------------------------------

/** @brief A captured graph (t4a_capture_end()); copying retains. It keeps
 *  what its work uses until released and its last replay completed.
 *  @experimental */
class Graph
    : public detail::Shared<t4a_graph, t4a_graph_retain, t4a_graph_release> {
public:
  using Shared::Shared;
  /** Replays it on `rt` (t4a_graph_launch()); non-throwing. */
  t4a_status launch(RuntimeView rt, std::nothrow_t) const noexcept {
    return t4a_graph_launch(rt.get(), get());
  }
#if T4A_HPP_EXCEPTIONS
  /** Replays it on `rt` (t4a_graph_launch()). @throws Error */
  void launch(RuntimeView rt) const { check(launch(rt, std::nothrow)); }
  /** Nodes, objects kept and replays (t4a_graph_info_get()).
   *  @throws Error */
  t4a_graph_info info() const {
    t4a_graph_info out = T4A_GRAPH_INFO_INIT;
    check(t4a_graph_info_get(get(), &out));
    return out;
  }
#endif
};

namespace detail {
/** Abandons the capture of `rt`: ends it (a failure leaves nothing to do)
 *  and drops a graph made from it unused. */
inline t4a_status abandon_capture(t4a_runtime rt) noexcept {
  t4a_graph h{T4A_NULL_ID};
  t4a_status s = t4a_capture_end(rt, &h);
  if (s == T4A_SUCCESS) (void)t4a_graph_release(h);
  return s;
}
} // namespace detail

/**
 * @brief A capture of a runtime's stream (t4a_capture_begin()): end() makes
 * the graph; a capture destroyed before end() is ended and its graph
 * dropped (the captured work never runs). Move-only; assigning abandons
 * the held capture first. @experimental
 */
class Capture : private detail::Unique<t4a_runtime, detail::abandon_capture> {
public:
  Capture() noexcept = default;
  /** Begins capturing `rt` (t4a_capture_begin()); non-throwing; `out`
   *  holds the capture only on success. */
  static t4a_status begin(RuntimeView rt, Capture &out, std::nothrow_t,
                          int32_t mode = T4A_CAPTURE_GLOBAL) noexcept {
    t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
    o.mode = mode;
    t4a_status s = t4a_capture_begin(rt.get(), &o);
    if (s == T4A_SUCCESS) out = Capture(rt.get());
    return s;
  }
  /** Ends the capture (t4a_capture_end()); non-throwing; `graph` is
   *  written only on success. The capture is over either way, unless the
   *  driver says it continues (ended from the wrong thread). */
  t4a_status end(Graph &graph, std::nothrow_t) noexcept {
    t4a_graph h{T4A_NULL_ID};
    t4a_status s = t4a_capture_end(release(), &h);
    if (s == T4A_SUCCESS) graph = Graph(h);
    return s;
  }
#if T4A_HPP_EXCEPTIONS
  /** Begins capturing `rt` (t4a_capture_begin()). @throws Error */
  static Capture begin(RuntimeView rt, int32_t mode = T4A_CAPTURE_GLOBAL) {
    return detail::checked<Capture>(
        [&](auto &c) { return begin(rt, c, std::nothrow, mode); });
  }
  /** Ends the capture and returns its graph. @throws Error */
  Graph end() {
    return detail::checked<Graph>(
        [&](auto &g) { return end(g, std::nothrow); });
  }
#endif
  /** True while this object holds an open capture. */
  explicit operator bool() const noexcept { return Unique::operator bool(); }

private:
  explicit Capture(t4a_runtime rt) noexcept : Unique(rt) {}
};

} // namespace t4a

#endif /* T4ACUDA_HPP_EXPERIMENTAL */
