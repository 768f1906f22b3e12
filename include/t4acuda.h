/*
 * t4acuda — a standalone CUDA runtime library with a versioned C ABI.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
/**
 * @file t4acuda.h
 * @brief The t4acuda C API (C11). The conventions every function follows
 *        (threads, ownership, errors, extensible structs, environment) are
 *        on the @ref index "main page".
 */
/**
 * @mainpage t4acuda: a standalone CUDA runtime library with a versioned C ABI
 *
 * The reference of the C API, t4acuda.h (C11), and of its header-only C++17
 * facade, t4acuda.hpp (namespace `t4a`). What follows holds for every
 * function; each function's own documentation adds its specifics.
 *
 * @section intro Introduction
 * t4acuda owns the CUDA lifetimes a numerical library would otherwise get
 * wrong: contexts, streams, memory pools, device buffers, staging, compiled
 * artifacts, modules and launches. It loads the CUDA driver (`libcuda`) and
 * NVRTC with `dlopen` on first need and never links them, so the library
 * loads on machines without a GPU; context-free functions (versions, status
 * names, last error, NVRTC version) always work.
 *
 * @section threads Threading
 * Every function may be called from any thread at any time. A runtime admits
 * its operations one at a time, in one order, on its one stream. Handles may
 * be released from any thread. No callback runs with an internal lock held.
 *
 * fork(): a child may be forked while other threads are inside the library;
 * none of its calls hangs. A fork waits for NVRTC compiles in progress on
 * other threads to finish (NVRTC's own locks would stay held in the child
 * otherwise); new NVRTC calls wait for the fork. If the parent had begun
 * loading the CUDA driver (any call that needs it), the child cannot use CUDA:
 * every call that needs the driver, and every call on a runtime or on an object
 * of one made by the parent, returns #T4A_ERROR_NO_DRIVER ("CUDA cannot be used
 * in a child process forked after the parent initialized the driver; ..."), and
 * those objects are left alone (never freed) in the child. Context-free
 * functions keep working there: versions, status names, last error,
 * logging, t4a_compile() and artifacts (a compile that names a runtime
 * needs the driver). To use CUDA in a new process, exec after fork (or use
 * posix_spawn).
 *
 * Process exit with threads still inside the library: the CUDA driver's own
 * exit handler may shut the driver down under them. Their driver calls then
 * fail (the call returns #T4A_ERROR_NO_DRIVER). Nothing is logged for it:
 * restoring the caller's context and teardown (runtime destroy, frees,
 * module unloads) treat a shut-down driver as done, and nothing is leaked
 * that the driver does not reclaim. Let the threads return (join them)
 * before the process exits to have their calls complete.
 *
 * @section ownership Ownership
 * Objects are named by handles: 8-byte structs passed by value holding a
 * generation-tagged id. The id 0 is the null handle (#T4A_NULL_ID). A handle
 * that is null, released, stale or forged is rejected with
 * #T4A_ERROR_INVALID_HANDLE; it never crashes and never touches freed
 * memory. Strings returned by the library are either static or copied into
 * caller-provided buffers (query-then-copy); the caller never frees library
 * memory. Objects made through a runtime outlive its handle: what they can
 * still do after t4a_runtime_destroy() is listed there.
 *
 * @section errors Errors
 * Every fallible function returns a ::t4a_status. Out-parameters are written
 * only on success. A failing call records, for the calling thread, the
 * status, the CUDA driver result (if any), the entry point's name and a
 * message naming the offending argument and the values involved; see
 * t4a_last_error() and t4a_last_error_message(). A successful call does not
 * clear the last error; t4a_last_error_clear() does.
 *
 * When several things are wrong, one status is returned: that of the first
 * check that fails, and the message names what it checked. The order:
 *  1. The runtime handle, when the function takes one, is resolved before
 *     anything else: a released, stale or forged runtime
 *     (#T4A_ERROR_INVALID_HANDLE) wins over every other error.
 *  2. The other arguments, mostly in parameter order, each argument's
 *     handle before its other checks: other handles
 *     (#T4A_ERROR_INVALID_HANDLE), NULL pointers, struct sizes and unknown
 *     tails, flags, values, ranges, and which runtime an object belongs to
 *     (#T4A_ERROR_INVALID_ARGUMENT, #T4A_ERROR_VERSION_MISMATCH,
 *     #T4A_ERROR_WRONG_RUNTIME). The order among these is not part of the
 *     contract and may change; for instance t4a_buffer_upload_host()
 *     checks `dst` and its range before it resolves `src`, t4a_launch()
 *     resolves the descriptor's kernel and buffers right after reading the
 *     descriptor and before checking its fields, and t4a_compile()
 *     resolves `request->runtime` only after the whole request is
 *     validated.
 *  3. Only then the state: a broken runtime (#T4A_ERROR_DEVICE_FAULT), a
 *     runtime whose destroy has begun (#T4A_ERROR_INVALID_HANDLE), a missing
 *     driver or NVRTC (#T4A_ERROR_NO_DRIVER, #T4A_ERROR_NO_COMPILER), and
 *     then the driver calls themselves; a value only the driver can check
 *     (a device ordinal against the device count: #T4A_ERROR_NO_DEVICE)
 *     is checked here too. So an argument error is reported even on a
 *     machine without a driver or with a broken runtime.
 *     (t4a_kernel_param() is the exception: its #T4A_ERROR_UNSUPPORTED
 *     comes before the index check.)
 *
 * @section structs Extensible structs
 * Every struct passed in or out begins with `uint32_t struct_size`, set by
 * the struct's `T4A_<NAME>_INIT` macro together with the defaults. A smaller
 * (older) size is accepted and the missing fields take their defaults; it
 * must end where a field begins (the size of an older version of the
 * struct), or #T4A_ERROR_INVALID_ARGUMENT: a size ending inside a field
 * (half of a pointer) is never read. A
 * larger (newer) size is accepted only when the unknown tail is all zero
 * bytes, otherwise #T4A_ERROR_VERSION_MISMATCH. Output structs are filled up
 * to the smaller of the caller's and the library's size.
 *
 * Zero bytes mean the default in every field of every input struct, and
 * every `T4A_<NAME>_INIT` macro is `struct_size` followed by zero bytes: a
 * binding that cannot use the macros (Python, Rust, Julia) zero-fills the
 * struct and sets `struct_size`, and gets exactly what the macro gives.
 * The one field without a default is the launch's extent in x
 * (::t4a_launch_desc::grid and ::t4a_launch_desc::block, index 0), where 0
 * is rejected. `abi/layouts.json` in the source tree lists every struct's
 * size, alignment, fields, offsets and `_INIT` values, every constant and
 * every function's signature, generated from this header by the compiler.
 *
 * @section experimental_api Experimental API
 * Declarations inside `#if defined(T4A_EXPERIMENTAL)` at the end of this
 * header are compiled only when the including program defines
 * `T4A_EXPERIMENTAL` before including it. They are not part of the stable
 * ABI: they may change or disappear in any release, the ABI gate does not
 * compare them, and `abi/layouts.json` flags them `"experimental": true`.
 * The @ref experimental "Experimental API" page lists them. New
 * capabilities may enter there first.
 *
 * @section current Current context
 * No function leaves a different CUDA context current on the calling thread
 * than it found, whether it succeeds or fails.
 *
 * @section env Environment
 * Options structs come first; environment variables override some of them
 * (the libcuda and libnvrtc to load, the log level, the compile cache's
 * directory and bound, the toolkit headers). Every variable the library
 * reads, its accepted values, default and parsing rules are in one table:
 * docs/environment.md. All are read with `secure_getenv`: a set-user-ID or
 * set-group-ID program ignores them.
 */
#ifndef T4ACUDA_H
#define T4ACUDA_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/** @name Export macros                                                      */
/* ------------------------------------------------------------------------ */
/** @{ */
#if defined(_WIN32)
#if defined(T4A_BUILDING_LIBRARY)
#define T4A_API __declspec(dllexport)
#else
#define T4A_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
/** Marks a function exported from libt4acuda. */
#define T4A_API __attribute__((visibility("default")))
#else
#define T4A_API
#endif
/** @} */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/** @name Versions                                                           */
/* ------------------------------------------------------------------------ */
/** @{ */
/** Major version; also the ABI major (the soname is `libt4acuda.so.0`). */
#define T4A_VERSION_MAJOR 0
/** Minor version: grows with compatible additions. */
#define T4A_VERSION_MINOR 1
/** Patch version: grows with fixes. */
#define T4A_VERSION_PATCH 0
/** The version as one number: major * 10000 + minor * 100 + patch. */
#define T4A_VERSION_NUMBER                                                     \
  (T4A_VERSION_MAJOR * 10000 + T4A_VERSION_MINOR * 100 + T4A_VERSION_PATCH)
/** Turns a macro argument into a string literal (helper). */
#define T4A_STRINGIFY_(x) #x
/** Expands a macro and turns it into a string literal (helper). */
#define T4A_STRINGIFY(x) T4A_STRINGIFY_(x)
/** The version as a string, "major.minor.patch". */
#define T4A_VERSION_STRING                                                     \
  T4A_STRINGIFY(T4A_VERSION_MAJOR)                                             \
  "." T4A_STRINGIFY(T4A_VERSION_MINOR) "." T4A_STRINGIFY(T4A_VERSION_PATCH)

/**
 * @brief The library's version as #T4A_VERSION_NUMBER of the built library.
 *
 * Compare with #T4A_VERSION_NUMBER to detect a header/library mismatch.
 * Never fails, never blocks, thread-safe, needs no driver.
 * @return major * 10000 + minor * 100 + patch of the loaded library.
 * @since 0.1.0
 */
T4A_API uint32_t t4a_version(void);

/**
 * @brief The library's version as a static string ("0.1.0").
 *
 * Never fails, never blocks, thread-safe, needs no driver.
 * @return a static string (#T4A_VERSION_STRING of the loaded library); it
 *         must not be freed.
 * @since 0.1.0
 */
T4A_API const char *t4a_version_string(void);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Status codes                                                       */
/* ------------------------------------------------------------------------ */
/** @{ */
/**
 * @brief Every status with its explicit, never-reused value and description.
 *
 * `X(NAME, VALUE, DESCRIPTION)`; the enum ::t4a_status_code and
 * t4a_status_name() are both generated from this one list.
 */
#define T4A_STATUS_MAP(X)                                                      \
  X(T4A_SUCCESS, 0, "success")                                                 \
  X(T4A_NOT_READY, 1, "not an error: work is still in flight")                 \
  X(T4A_ERROR_INVALID_ARGUMENT, 2, "an argument is invalid")                   \
  X(T4A_ERROR_INVALID_HANDLE, 3,                                               \
    "a handle is null, released, stale or forged")                             \
  X(T4A_ERROR_WRONG_RUNTIME, 4, "an object belongs to another runtime")        \
  X(T4A_ERROR_NO_DRIVER, 5, "no usable CUDA driver was found")                 \
  X(T4A_ERROR_NO_DEVICE, 6, "no such CUDA device")                             \
  X(T4A_ERROR_NO_COMPILER, 7, "no usable NVRTC was found")                     \
  X(T4A_ERROR_OUT_OF_MEMORY, 8, "out of device memory")                        \
  X(T4A_ERROR_OUT_OF_HOST_MEMORY, 9, "out of host memory")                     \
  X(T4A_ERROR_DRIVER, 10, "the CUDA driver reported an error")                 \
  X(T4A_ERROR_COMPILE, 11, "compilation failed")                               \
  X(T4A_ERROR_UNKNOWN_ENTRY_POINT, 12, "no kernel of that name")               \
  X(T4A_ERROR_DEVICE_FAULT, 13, "sticky device fault: the runtime is broken")  \
  X(T4A_ERROR_REENTRANT, 14, "the call would deadlock on its own thread")      \
  X(T4A_ERROR_UNSUPPORTED, 15, "not supported by this driver or device")       \
  X(T4A_ERROR_VERSION_MISMATCH, 16, "struct or version not understood")        \
  X(T4A_ERROR_ABANDONED, 17, "outcome unknown; resources quarantined")         \
  X(T4A_ERROR_INTERNAL, 18, "internal error in t4acuda")                       \
  X(T4A_ERROR_CAPTURING, 19, "the runtime is capturing a graph")

/** Turns one #T4A_STATUS_MAP row into an enumerator (helper). */
#define T4A_STATUS_ENUM_ENTRY_(name, value, text) name = value,

/** @brief The status codes; see #T4A_STATUS_MAP for each one's meaning. */
enum t4a_status_code { T4A_STATUS_MAP(T4A_STATUS_ENUM_ENTRY_) };
/** @var T4A_SUCCESS
 * The call succeeded; its out-parameters are written. */
/** @var T4A_NOT_READY
 * Not an error: work is still in flight; poll again or wait. */
/** @var T4A_ERROR_INVALID_ARGUMENT
 * An argument is invalid (a NULL pointer, a `struct_size`
 * below 4, a value out of range); the message names it and its value. */
/** @var T4A_ERROR_INVALID_HANDLE
 * A handle is null where one is required, released, stale
 * (its slot was reused) or forged; the message names the argument and id. */
/** @var T4A_ERROR_WRONG_RUNTIME
 * An object belongs to another runtime or allocation
 * domain than the operation's. */
/** @var T4A_ERROR_NO_DRIVER
 * No usable CUDA driver: libcuda could not be loaded,
 * lacks a required entry point or failed `cuInit`, or has been shut down
 * (process exit). The message names every library tried and why it failed. */
/** @var T4A_ERROR_NO_DEVICE
 * No such device: the ordinal is outside
 * 0..t4a_device_count()-1 (the message gives both). */
/** @var T4A_ERROR_NO_COMPILER
 * No usable NVRTC could be loaded (the message names every
 * library tried). */
/** @var T4A_ERROR_OUT_OF_MEMORY
 * Device memory is exhausted; the runtime stays usable. */
/** @var T4A_ERROR_OUT_OF_HOST_MEMORY
 * A host allocation inside the library failed. */
/** @var T4A_ERROR_DRIVER
 * The driver returned another error; ::t4a_error_info::driver_result
 * holds the `CUresult` and the message its name and description. */
/** @var T4A_ERROR_COMPILE
 * Compilation failed; the full log is kept with the compile
 * result. */
/** @var T4A_ERROR_UNKNOWN_ENTRY_POINT
 * The module has no kernel of that name. */
/** @var T4A_ERROR_DEVICE_FAULT
 * A sticky device fault (illegal address, launch
 * failure, ...) broke the runtime: its operations keep returning this status
 * with the original fault in the message. On current drivers every other
 * runtime of the process, on every device, and every new runtime fail the
 * same way. Recovery needs a new process; t4a_process_fault_get() names
 * the first fault of the process. */
/** @var T4A_ERROR_REENTRANT
 * The call would wait on a lock its own thread holds, so it
 * returns instead of deadlocking. */
/** @var T4A_ERROR_UNSUPPORTED
 * The driver or device lacks what the operation needs (for
 * example an optional driver entry point, or memory-pool support). */
/** @var T4A_ERROR_VERSION_MISMATCH
 * A struct's `struct_size` is larger than this
 * library's and its unknown tail is not all zero bytes. */
/** @var T4A_ERROR_ABANDONED
 * The outcome is unknown after work may have been enqueued;
 * the resources involved are quarantined (leaked and counted), never freed. */
/** @var T4A_ERROR_INTERNAL
 * An internal error in t4acuda (a bug); nothing crossed the
 * C boundary. */
/** @var T4A_ERROR_CAPTURING
 * The runtime is capturing a graph and the operation cannot be captured
 * (allocation, pageable transfers, synchronize, waits, module loads, ...):
 * nothing was enqueued and the runtime stays usable; or the driver refused
 * or invalidated a capture (`CUDA_ERROR_STREAM_CAPTURE_*`, 900-908). */

/** @brief A status: one of ::t4a_status_code, always 32 bits. */
typedef int32_t t4a_status;

/**
 * @brief The name of a status ("T4A_ERROR_INVALID_HANDLE").
 *
 * @param[in] status any value.
 * @return a static string; "T4A_STATUS_UNKNOWN" for a value that is not a
 *         status. Never fails, thread-safe, needs no driver.
 * @since 0.1.0
 */
T4A_API const char *t4a_status_name(t4a_status status);

/**
 * @brief A one-line description of a status ("a handle is null, ...").
 *
 * @param[in] status any value.
 * @return a static string; "unknown status" for a value that is not a
 *         status. Never fails, thread-safe, needs no driver.
 * @since 0.1.0
 */
T4A_API const char *t4a_status_description(t4a_status status);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Last error                                                         */
/* ------------------------------------------------------------------------ */
/** @{ */
/** @brief Facts about the calling thread's last failing call. */
typedef struct t4a_error_info {
  uint32_t struct_size; /**< in: sizeof(t4a_error_info) of the caller. */
  t4a_status status;    /**< out: its status (#T4A_SUCCESS if none). */
  /** out: the CUresult the CUDA driver returned, or 0 if none. */
  int32_t driver_result;
  /** out: the NVRTC result (nvrtcResult), or 0 if none. */
  int32_t compiler_result;
  /** out: the failing entry point's name ("t4a_runtime_create"); static
   *  string, "" if none. */
  const char *entry_point;
} t4a_error_info;

/** Initializer for ::t4a_error_info. */
#define T4A_ERROR_INFO_INIT                                                    \
  { sizeof(t4a_error_info), 0, 0, 0, NULL }

/**
 * @brief Reads the calling thread's last error (without its message).
 *
 * @param[in,out] info set `info->struct_size` first (#T4A_ERROR_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT if `info` is NULL or its
 *         struct_size is smaller than 4; #T4A_ERROR_VERSION_MISMATCH never
 *         (output structs are filled up to the smaller size).
 * Does not change the last error. Never blocks, needs no driver.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_last_error(t4a_error_info *info);

/**
 * @brief Copies the calling thread's last error message (query-then-copy).
 *
 * Writes at most `capacity` bytes including the terminating NUL; a message
 * longer than that is truncated (still NUL-terminated). `*needed` (if not
 * NULL) receives the full length including the NUL, so a caller can query
 * with `buf = NULL, capacity = 0` and then copy. The message is "" when no
 * call has failed on this thread.
 *
 * @param[out] buf      destination, may be NULL when `capacity` is 0.
 * @param[in]  capacity bytes available at `buf`.
 * @param[out] needed   optional: bytes the whole message needs.
 * @return #T4A_SUCCESS (also when truncated: compare `*needed` with
 *         `capacity`); #T4A_ERROR_INVALID_ARGUMENT if `buf` is NULL and
 *         `capacity` is not 0. Does not change the last error.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_last_error_message(char *buf, size_t capacity,
                                          size_t *needed);

/**
 * @brief Clears the calling thread's last error (status becomes SUCCESS).
 * @since 0.1.0
 */
T4A_API void t4a_last_error_clear(void);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Logging                                                            */
/* ------------------------------------------------------------------------ */
/** @{ */
/** @brief Log levels, most severe first. */
typedef enum t4a_log_level {
  T4A_LOG_OFF = 0,   /**< logs nothing (as a threshold). */
  T4A_LOG_ERROR = 1, /**< failures the library could not report otherwise. */
  T4A_LOG_WARN = 2,  /**< leaks, quarantines, unusual conditions. */
  T4A_LOG_INFO = 3,  /**< library and driver loading. */
  T4A_LOG_DEBUG = 4  /**< everything else. */
} t4a_log_level;

/**
 * @brief A log sink.
 * @param user    the pointer given to t4a_set_log_callback().
 * @param level   the message's level (never #T4A_LOG_OFF).
 * @param message NUL-terminated, valid only during the call.
 * Called from whichever thread logs, never with an internal lock, a
 * `call_once` or a compile in progress held (messages logged meanwhile are
 * delivered afterwards, in order), so it may call any t4acuda function,
 * t4a_compile() included.
 */
typedef void (*t4a_log_fn)(void *user, int32_t level, const char *message);

/**
 * @brief Installs a log callback, or restores the default (NULL).
 *
 * The default writes messages at or above `max_level` to stderr; its
 * initial level is #T4A_LOG_WARN, or the value of `T4A_LOG`, which
 * overrides `max_level` for the default sink too.
 *
 * A callback already running on another thread when this returns may
 * still finish with the old `fn` and `user`: keep `user` valid until such
 * calls are over (for example until the threads that log have finished).
 *
 * @param[in] fn        the sink; NULL restores the default stderr sink.
 * @param[in] user      passed to `fn` unchanged.
 * @param[in] max_level the least severe level delivered (0..4).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT for a level outside
 *         0..4. Thread-safe; never blocks on the driver.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_set_log_callback(t4a_log_fn fn, void *user,
                                        int32_t max_level);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Handles                                                            */
/* ------------------------------------------------------------------------ */
/** @{ */
/** The id of the null handle of every type. */
#define T4A_NULL_ID UINT64_C(0)

/** @brief A runtime: one device, one stream, one memory pool. */
typedef struct t4a_runtime {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_runtime;

/** @brief A device buffer, owned by one runtime; reference counted. */
typedef struct t4a_buffer {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_buffer;

/** @brief Library-owned portable pinned host memory; reference counted. */
typedef struct t4a_host_buffer {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_host_buffer;

/** @brief A download in flight, delivered exactly once. */
typedef struct t4a_download {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_download;

/** @brief A compiled artifact (image, log, lowered names, key, target);
 *  immutable, reference counted, needs no runtime. */
typedef struct t4a_artifact {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_artifact;

/** @brief A loaded module (CUBIN, PTX or fatbin) of one runtime; reference
 *  counted. Unloaded only after every launch that used it has completed. */
typedef struct t4a_module {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_module;

/** @brief A kernel (entry point) of a module; keeps its module alive. */
typedef struct t4a_kernel {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_kernel;

/** @brief A point in a runtime's stream (a recorded event); reference
 *  counted. Once observed complete it stays complete. */
typedef struct t4a_completion {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_completion;

/** @brief An open raw scope (t4a_raw_begin()): one thread's hold on a
 *  runtime's context and stream for vendor-library calls; not reference
 *  counted, gone at t4a_raw_end(). */
typedef struct t4a_raw_scope {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_raw_scope;
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Driver, compiler and devices                                       */
/* ------------------------------------------------------------------------ */
/** @{ */
/**
 * @brief The CUDA driver's version (e.g. 13000 for CUDA 13.0).
 *
 * Loads the driver on first use (`T4A_CUDA_DRIVER_PATH`, else
 * `libcuda.so.1`).
 * @param[out] version the driver's `cuDriverGetVersion` value.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT if `version` is NULL;
 *         #T4A_ERROR_NO_DRIVER when no driver can be loaded or initialized
 *         (the message names every library tried and the loader's reason).
 * Thread-safe; may block while the driver loads.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_driver_version(int32_t *version);

/**
 * @brief Lists what the loaded CUDA driver lacks (query-then-copy, as
 *        t4a_artifact_log()).
 *
 * One line per optional driver entry point that the driver does not
 * provide, "<entry point> (CUDA <major.minor>): <what is unavailable>",
 * the version being the one the entry point needs. Empty text (one NUL):
 * the driver has everything t4acuda uses. Drivers of CUDA 12.0 and newer
 * are supported; features that need a newer driver return
 * #T4A_ERROR_UNSUPPORTED naming the entry point and both versions.
 * `t4acuda-info` prints it.
 * @param[out] buf      NULL with `capacity` 0 to query the size.
 * @param[in]  capacity bytes at `buf`.
 * @param[out] needed   if not NULL: bytes needed, NUL included.
 * @return #T4A_SUCCESS; #T4A_ERROR_NO_DRIVER; #T4A_ERROR_INVALID_ARGUMENT
 *         (NULL `buf` with a capacity).
 * Thread-safe; may block while the driver loads.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_driver_lacks(char *buf, size_t capacity, size_t *needed);

/**
 * @brief The CUDA version this library was built against (CUDA_VERSION).
 *
 * Entry points are requested from the driver at this version.
 * Never fails, needs no driver.
 * @return `CUDA_VERSION` of the toolkit headers used to build the library
 *         (e.g. 13000 for CUDA 13.0).
 * @since 0.1.0
 */
T4A_API int32_t t4a_built_cuda_version(void);

/**
 * @brief The NVRTC version found (`T4A_NVRTC_PATH`, else libnvrtc 13, 12).
 *
 * Needs no driver and no device.
 * @param[out] major NVRTC major version.
 * @param[out] minor NVRTC minor version.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT if an out-pointer is
 *         NULL; #T4A_ERROR_NO_COMPILER when no NVRTC can be loaded (the
 *         message names every library tried).
 * Thread-safe; may block while NVRTC loads.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_nvrtc_version(int32_t *major, int32_t *minor);

/**
 * @brief The number of CUDA devices visible to the driver.
 * @param[out] count device count (0 when the driver sees none).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT if `count` is NULL;
 *         #T4A_ERROR_NO_DRIVER without a usable driver;
 *         #T4A_ERROR_DRIVER for another driver failure.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_device_count(int32_t *count);

/** Bytes of ::t4a_device_info::name, including the NUL. */
#define T4A_DEVICE_NAME_CAPACITY 256

/** @brief What t4acuda knows about one device, including launch limits. */
typedef struct t4a_device_info {
  uint32_t struct_size; /**< in: sizeof(t4a_device_info) of the caller. */
  int32_t ordinal;      /**< device ordinal. */
  char name[T4A_DEVICE_NAME_CAPACITY]; /**< product name, NUL-terminated. */
  uint8_t uuid[16];                    /**< device UUID bytes. */
  int32_t cc_major;                    /**< compute capability, major. */
  int32_t cc_minor;                    /**< compute capability, minor. */
  int32_t multiprocessor_count;        /**< streaming multiprocessors. */
  int32_t clock_rate_khz;              /**< peak SM clock in kHz. */
  uint64_t total_memory_bytes;         /**< global memory in bytes. */
  int32_t warp_size;                   /**< threads per warp. */
  int32_t max_threads_per_block;       /**< launch limit. */
  int32_t max_block_dim[3];            /**< launch limit per dimension. */
  int32_t max_grid_dim[3];             /**< launch limit per dimension. */
  /** default shared memory per block in bytes (48 KiB). */
  int32_t max_shared_per_block;
  /** opt-in maximum of shared memory per block in bytes. */
  int32_t max_shared_per_block_optin;
  int32_t max_registers_per_block;        /**< 32-bit registers per block. */
  int32_t max_threads_per_multiprocessor; /**< resident threads per SM. */
  int32_t pci_domain_id;                  /**< PCI domain. */
  int32_t pci_bus_id;                     /**< PCI bus. */
  int32_t pci_device_id;                  /**< PCI device. */
  int32_t memory_pools_supported; /**< 1 if stream-ordered pools work. */
  int32_t cooperative_launch;     /**< 1 if cooperative launch works. */
  int32_t unified_addressing;     /**< 1 if UVA is on. */
} t4a_device_info;

/** Initializer for ::t4a_device_info. */
#define T4A_DEVICE_INFO_INIT                                                   \
  {                                                                            \
    sizeof(t4a_device_info), 0, {0}, {0}, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0},      \
        {0, 0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0                                \
  }

/**
 * @brief Fills `info` for device `ordinal`.
 * @param[in]     ordinal 0 .. count-1.
 * @param[in,out] info    set `info->struct_size` (#T4A_DEVICE_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT for a NULL `info` or a
 *         struct_size below 4; #T4A_ERROR_NO_DEVICE for an ordinal outside
 *         0..count-1; #T4A_ERROR_NO_DRIVER; #T4A_ERROR_DRIVER.
 * Creates no context. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_device_info_get(int32_t ordinal, t4a_device_info *info);

/**
 * @brief Whether device `ordinal` can access memory of device `peer`.
 *
 * One entry of the peer-access matrix (`cuDeviceCanAccessPeer`). A device
 * and itself give 0, as the driver reports.
 * @param[in]  ordinal the accessing device.
 * @param[in]  peer    the device whose memory is accessed.
 * @param[out] can_access 1 or 0.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT for a NULL out-pointer;
 *         #T4A_ERROR_NO_DEVICE for an ordinal out of range;
 *         #T4A_ERROR_NO_DRIVER; #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_device_can_access_peer(int32_t ordinal, int32_t peer,
                                              int32_t *can_access);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Runtime                                                            */
/* ------------------------------------------------------------------------ */
/** @{ */
/** Pool release threshold meaning "keep all freed memory until trimmed":
 *  the default, also given by 0 (see
 *  ::t4a_runtime_options::pool_release_threshold).
 *
 * Per runtime: every runtime has its own memory pool, also two runtimes of
 * one device. Memory a runtime freed stays reserved in its pool, for its
 * own later allocations only, until t4a_runtime_trim() or its destroy; it
 * is not available to another runtime, to other CUDA users of the process
 * or to other processes. So with this default, the device memory held is
 * the sum of every runtime's peak, and an allocation of one runtime can
 * fail with #T4A_ERROR_OUT_OF_MEMORY while another runtime's pool holds
 * free memory: the library does not trim on its own, on that failure or
 * otherwise; call t4a_runtime_trim() on the other runtime, or give the
 * runtimes a finite ::t4a_runtime_options::pool_release_threshold. */
#define T4A_POOL_KEEP_ALL UINT64_MAX
/** Pool release threshold meaning "release all freed memory at each
 *  synchronization": the driver's `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` is
 *  set to exactly 0. (0 itself in
 *  ::t4a_runtime_options::pool_release_threshold means the default,
 *  #T4A_POOL_KEEP_ALL, so that a zero-filled struct gets the defaults.) */
#define T4A_POOL_RELEASE_ALL (UINT64_MAX - 1)

/** Default staging budget: pinned bytes a runtime may hold for transfers. */
#define T4A_DEFAULT_STAGING_BYTES (UINT64_C(64) << 20)
/** Default staging chunk size. */
#define T4A_DEFAULT_STAGING_CHUNK_BYTES (UINT64_C(8) << 20)
/** Staging copy threads: choose from the host's cores (at most 16). */
#define T4A_STAGING_THREADS_AUTO 0
/** Default bound on the modules a runtime's module cache keeps loaded. */
#define T4A_DEFAULT_MODULE_CACHE_ENTRIES 64u
/** Default bound on the image bytes a runtime's module cache keeps. */
#define T4A_DEFAULT_MODULE_CACHE_BYTES (UINT64_C(256) << 20)

/** ::t4a_runtime_options::peer_access: peer access between devices is
 *  enabled only by t4a_runtime_enable_peer() (the default, 0). Granting a
 *  peer device access to a runtime's memory pool maps every allocation of
 *  that pool into the peer as well (a cost to every later allocation), so
 *  the library does not do it behind the caller's back. */
#define T4A_PEER_ACCESS_EXPLICIT 0u
/** ::t4a_runtime_options::peer_access: a copy between two runtimes of peer
 *  devices that both have this mode enables peer access for the pair first
 *  (as t4a_runtime_enable_peer()). */
#define T4A_PEER_ACCESS_AUTO 1u

/** @brief Options for t4a_runtime_create(). */
typedef struct t4a_runtime_options {
  uint32_t struct_size;   /**< sizeof(t4a_runtime_options) of the caller. */
  int32_t device_ordinal; /**< the device; default 0. */
  /** Bytes of freed memory the pool keeps across synchronizations
   *  (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`). 0 (the default) and
   *  #T4A_POOL_KEEP_ALL keep all of it (the driver gets `UINT64_MAX`);
   *  #T4A_POOL_RELEASE_ALL releases all of it (the driver gets 0); any
   *  other value is passed to the driver as is.
   *  ::t4a_runtime_info::pool_release_threshold reports the driver's value.
   *  @since 0.1.0 (0 meant "release all" before the FFI-safe defaults) */
  uint64_t pool_release_threshold;
  /** Total pinned staging memory for pageable transfers (the budget);
   *  0 (the default) means #T4A_DEFAULT_STAGING_BYTES. At least one chunk. */
  uint64_t staging_bytes;
  /** Size of one staging chunk, the unit of pipelining; 0 (the default)
   *  means #T4A_DEFAULT_STAGING_CHUNK_BYTES, or the budget when that is
   *  smaller; else 4 KiB .. staging_bytes. */
  uint64_t staging_chunk_bytes;
  /** Host threads copying between pageable memory and staging, 1..64, or
   *  #T4A_STAGING_THREADS_AUTO (0, the default: the host's cores, at most
   *  16; the calling thread is one of them). */
  int32_t staging_threads;
  uint32_t reserved0; /**< zero. */
  /** Modules the runtime's module cache keeps loaded (least recently used
   *  evicted first); 0 means #T4A_DEFAULT_MODULE_CACHE_ENTRIES.
   *  @since 0.1.0 */
  uint32_t module_cache_entries;
  uint32_t reserved1; /**< zero. @since 0.1.0 */
  /** Image bytes the module cache keeps loaded; 0 means
   *  #T4A_DEFAULT_MODULE_CACHE_BYTES. A module counts the size of the image
   *  it was loaded from (CUBIN or PTX bytes), not device memory. The module
   *  just loaded is never evicted: one larger than this bound is loaded
   *  and cached alone (every other cached module is evicted), so the cache
   *  then holds more than the bound, until a load of another module
   *  evicts it. Any value from 1 is valid (as `module_cache_entries` 1, which
   *  keeps just the module loaded last).
   *  @since 0.1.0 */
  uint64_t module_cache_bytes;
  /** How peer access for copies between runtimes of different devices is
   *  enabled: #T4A_PEER_ACCESS_EXPLICIT (0, the default: only by
   *  t4a_runtime_enable_peer()) or #T4A_PEER_ACCESS_AUTO (the first copy
   *  between this runtime and a runtime of a peer device that also has
   *  #T4A_PEER_ACCESS_AUTO enables it, as t4a_runtime_enable_peer() does).
   *  Without enabled peer access such copies are staged through pinned
   *  host memory, counted in ::t4a_runtime_stats::staged_copies (and
   *  logged once per runtime at #T4A_LOG_WARN when the devices are peers).
   *  Other values are rejected with #T4A_ERROR_INVALID_ARGUMENT.
   *  @since 0.1.0 */
  uint32_t peer_access;
  uint32_t reserved2; /**< zero. @since 0.1.0 */
  /** The priority of the runtime's stream (`cuStreamCreateWithPriority`):
   *  0 (the default) is the device's default priority; lower numbers run
   *  first. It must lie in the device's range
   *  (`cuCtxGetStreamPriorityRange`: on Hopper 0 down to -5), else
   *  #T4A_ERROR_INVALID_ARGUMENT naming the range (the driver would clamp
   *  it silently). ::t4a_runtime_info::stream_priority reports it.
   *  @since 0.1.0 (appended) */
  int32_t stream_priority;
  uint32_t reserved3; /**< zero. @since 0.1.0 */
} t4a_runtime_options;

/** Initializer for ::t4a_runtime_options with the defaults: `struct_size`
 *  and zero bytes, as every `_INIT` macro (zero means the default in every
 *  field, so a binding that cannot use the macro zero-fills the struct and
 *  sets `struct_size`). */
#define T4A_RUNTIME_OPTIONS_INIT                                               \
  { sizeof(t4a_runtime_options), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * @brief Creates a runtime on one device.
 *
 * Retains the device's primary context, creates one non-blocking stream and
 * one explicit memory pool (`cuMemPoolCreate`, release threshold from
 * `options`) and takes a fresh allocation-domain id. Two runtimes of one
 * ordinal are independent (distinct stream, pool, domain id) and share the
 * primary context. A failed create creates nothing.
 *
 * @param[in]  options NULL for the defaults, else struct_size-versioned.
 * @param[out] runtime the new runtime; release with t4a_runtime_destroy().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT (NULL `runtime`, bad
 *         struct_size); #T4A_ERROR_VERSION_MISMATCH (non-zero unknown tail);
 *         #T4A_ERROR_NO_DEVICE (ordinal out of range);
 *         #T4A_ERROR_UNSUPPORTED (the device has no memory-pool support);
 *         #T4A_ERROR_NO_DRIVER; #T4A_ERROR_OUT_OF_MEMORY;
 *         #T4A_ERROR_DRIVER; #T4A_ERROR_DEVICE_FAULT (the process's CUDA
 *         state is poisoned by an earlier fault: recovery needs a new
 *         process; t4a_process_fault_get() names the first fault, and a
 *         create failing this way records itself there if none was yet).
 * Thread-safe; blocks while the context is created.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_create(const t4a_runtime_options *options,
                                      t4a_runtime *runtime);

/**
 * @brief Destroys a runtime: drains its stream, then frees what it owns.
 *
 * The handle becomes invalid at once. From the start of the call, the
 * runtime admits no operation: one that another thread started meanwhile
 * (or starts later on an object of this runtime, such as delivering a
 * download) fails with #T4A_ERROR_INVALID_HANDLE and enqueues nothing;
 * operations admitted before are drained. Its buffers, host buffers,
 * downloads, modules, kernels and completions stay valid handles until
 * released: releasing them, waiting for or polling a completion and the
 * non-enqueuing queries work, and the runtime's resources are freed when
 * the last of them is released. If completion of its work can be
 * proven, the stream, pool and context reference are released; otherwise
 * they are leaked (counted in ::t4a_process_stats::runtimes_leaked), never
 * freed while the device might still use them. The
 * caller's current context is left as it was, even when it is the primary
 * context this runtime shared with another runtime.
 *
 * From the moment destroy begins, the runtime admits no new operation: a
 * call naming the runtime fails with #T4A_ERROR_INVALID_HANDLE, and so does
 * an operation another thread had already resolved the runtime for but that
 * was not yet admitted; such a call enqueues nothing and keeps nothing
 * alive. Operations admitted before are drained by destroy.
 *
 * **Objects of a destroyed runtime.** Buffers, host buffers, pending
 * downloads, modules, kernels and completions made through the runtime stay
 * valid handles until released:
 *  - they can be released (and retained) from any thread, as always. Their
 *    frees stay stream-ordered: a buffer's or snapshot's memory is freed
 *    with `cuMemFreeAsync` on the destroyed runtime's stream, a module is
 *    unloaded; the runtime's stream, pool, staging and context reference
 *    are released when the last such object goes (after one more drain),
 *    or leaked if completion was not proven (counted, as above);
 *  - what needs no admission still works: t4a_buffer_info_get(),
 *    t4a_host_buffer_pointer() (host buffers are also still usable in
 *    transfers of other runtimes), t4a_download_size(), t4a_kernel_get(),
 *    t4a_kernel_info_get(), t4a_kernel_param(), t4a_kernel_occupancy(),
 *    t4a_kernel_suggest_block_size(), t4a_completion_poll(),
 *    t4a_completion_wait() and t4a_runtime_wait() by another runtime;
 *  - what would enqueue work on the destroyed runtime cannot: every
 *    transfer, fill, copy, allocation, module load, launch and record
 *    naming the runtime after destroy began gets
 *    #T4A_ERROR_INVALID_HANDLE, and so does t4a_download_wait() /
 *    t4a_download_poll() of a non-empty pending download (its data is not
 *    delivered: release it). One exception: an allocation
 *    (t4a_buffer_alloc(), t4a_host_buffer_alloc()) is not admitted, so a
 *    call that another thread had already resolved the runtime for before
 *    destroy began may still succeed and return a valid buffer of the
 *    destroyed runtime (a t4a_buffer_alloc() with #T4A_BUFFER_ZERO also
 *    enqueues its fill). Nothing leaks: such a buffer is like any other
 *    object of a destroyed runtime here (freed as above when released,
 *    after the runtime's final drain; enqueuing work with it is refused).
 * Holding such objects keeps the runtime's device resources (stream, pool,
 * pinned staging) alive; release them to give those back.
 *
 * @param[in] runtime the runtime; the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE for a released, stale or
 *         forged handle; #T4A_ERROR_DEVICE_FAULT / #T4A_ERROR_DRIVER when
 *         the drain failed (the handle is released anyway and the
 *         resources are leaked); #T4A_ERROR_REENTRANT when the calling
 *         thread holds a raw scope of this runtime (t4a_raw_begin()):
 *         nothing changes, the handle stays valid; end the scope first.
 * Blocks until the stream drains; on another thread than one holding a
 * raw scope of the runtime, it waits for that scope's t4a_raw_end() first.
 * Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_destroy(t4a_runtime runtime);

/**
 * @brief Waits on the host until all work of the runtime is done.
 *
 * Counted in ::t4a_runtime_stats::host_waits. A sticky fault reported by
 * the wait breaks the runtime (see #T4A_ERROR_DEVICE_FAULT).
 * @param[in] runtime the runtime.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER. Blocks. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_synchronize(t4a_runtime runtime);

/**
 * @brief Gives the pool's unused memory back to the device.
 *
 * `cuMemPoolTrimTo(pool, 0)`: memory of live allocations is kept.
 * Counted in ::t4a_runtime_stats::trims.
 * @param[in] runtime the runtime.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER. Does not block on the stream.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_trim(t4a_runtime runtime);

/** @brief Facts about a runtime (diagnostics and interop). */
typedef struct t4a_runtime_info {
  uint32_t struct_size;   /**< in: sizeof(t4a_runtime_info) of the caller. */
  int32_t device_ordinal; /**< the device. */
  /** the allocation-domain id: unique per runtime in the process. */
  uint64_t domain_id;
  /** the `CUcontext` (the device's primary context). Borrowed: do not
   *  destroy it or keep it beyond t4a_runtime_destroy(). */
  void *context;
  /** the runtime's `CUstream`. Borrowed, as `context`. */
  void *stream;
  /** the runtime's `CUmemoryPool`. Borrowed, as `context`. */
  void *memory_pool;
  /** the pool release threshold in force, as the driver has it:
   *  #T4A_POOL_KEEP_ALL (`UINT64_MAX`) for the default, 0 for
   *  #T4A_POOL_RELEASE_ALL, else the value asked for. */
  uint64_t pool_release_threshold;
  /** the priority of the runtime's stream, as the driver reports it
   *  (`cuStreamGetPriority`; ::t4a_runtime_options::stream_priority).
   *  @since 0.1.0 (appended) */
  int32_t stream_priority;
  uint32_t reserved0; /**< zero. */
} t4a_runtime_info;

/** Initializer for ::t4a_runtime_info. */
#define T4A_RUNTIME_INFO_INIT                                                  \
  { sizeof(t4a_runtime_info), 0, 0, NULL, NULL, NULL, 0, 0, 0 }

/**
 * @brief Describes a runtime.
 * @param[in]     runtime the runtime.
 * @param[in,out] info    set `info->struct_size` (#T4A_RUNTIME_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `info`, struct_size below 4).
 * Never blocks; makes no driver call.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_info_get(t4a_runtime runtime,
                                        t4a_runtime_info *info);

/** @brief Counters of one runtime; each is incremented where it happens.
 *
 * Later versions append counters; a caller's older, smaller struct receives
 * the counters it knows.
 *
 * **Staging.** `staging_bytes_in_use` counts the pinned staging chunks that
 * are taken now: the ring's current (partly filled) chunk, chunks kept by
 * transfers not yet proven complete or by download stages, and quarantined
 * chunks. Idle chunks (back on the ring's free list, still allocated and
 * reused by later transfers until the runtime is torn down) are not
 * counted, so after every transfer has completed it can still show one
 * chunk, the current one. Only pageable transfers (t4a_buffer_upload(),
 * t4a_buffer_download_sync(), the delivery of a pending download) use
 * staging; host-buffer transfers do not.
 *
 * **Pending downloads.** t4a_buffer_download() counts one `downloads` when
 * it is enqueued, even if it is never delivered. A non-empty one also
 * counts its device snapshot as an allocation (`allocations`,
 * `bytes_allocated` until the snapshot is freed, `bytes_allocated_peak`,
 * and `frees` when it is freed: after delivery or at release), one
 * `events_recorded` for its ready event, but no `device_copies`. Its bytes
 * count in `bytes_downloaded` only when it is delivered; a blocking
 * t4a_download_wait() on a snapshot not yet seen complete counts one
 * `host_waits`, and the delivery itself counts staging use, host waits
 * and events as a synchronous download does.
 *
 * **Zero-byte operations** are admitted and counted like any other:
 * `uploads`, `downloads`, `fills` or `device_copies` is incremented (and
 * the byte counters by 0), with nothing enqueued, no staging and no event.
 * A zero-byte t4a_buffer_download() counts one `downloads` and nothing
 * else. A zero-byte buffer counts no allocation (nor `zero_fills`). */
typedef struct t4a_runtime_stats {
  uint32_t struct_size; /**< in: sizeof(t4a_runtime_stats) of the caller. */
  uint32_t reserved0;   /**< zero; keeps the counters 8-byte aligned. */
  /** host waits on the runtime's stream or events (synchronize, drains,
   *  staging waits, download waits). */
  uint64_t host_waits;
  /** pool trims done (t4a_runtime_trim()). */
  uint64_t trims;
  uint64_t allocations;          /**< device buffers allocated (non-empty). */
  uint64_t frees;                /**< device buffers freed (cuMemFreeAsync). */
  uint64_t zero_fills;           /**< allocations zeroed by #T4A_BUFFER_ZERO. */
  uint64_t fills;                /**< t4a_buffer_fill() operations. */
  uint64_t device_copies;        /**< t4a_buffer_copy() operations. */
  uint64_t bytes_allocated;      /**< device bytes live now. */
  uint64_t bytes_allocated_peak; /**< the most device bytes ever live. */
  uint64_t uploads;              /**< host-to-device transfers. */
  uint64_t downloads;            /**< device-to-host transfers. */
  uint64_t bytes_uploaded;       /**< bytes moved host to device. */
  uint64_t bytes_downloaded;     /**< bytes moved device to host. */
  uint64_t staging_bytes_in_use; /**< pinned staging bytes held now. */
  uint64_t staging_bytes_peak;   /**< the most staging bytes ever held. */
  /** host waits because the staging budget was exhausted. */
  uint64_t staging_waits;
  uint64_t events_recorded; /**< CUDA events recorded on the stream. */
  /** allocations and staging chunks quarantined after a failure that
   *  happened once work may have been enqueued (leaked, never freed). */
  uint64_t quarantined;
  /** device allocations leaked because completion was not proven. */
  uint64_t leaked_allocations;
  /** kernels launched (t4a_launch() calls that enqueued). @since 0.1.0 */
  uint64_t launches;
  /** modules loaded with `cuModuleLoadData` (cache misses). @since 0.1.0 */
  uint64_t module_loads;
  /** modules unloaded with `cuModuleUnload`. @since 0.1.0 */
  uint64_t module_unloads;
  /** t4a_module_load() / t4a_module_load_data() calls served by the
   *  runtime's module cache. @since 0.1.0 */
  uint64_t module_cache_hits;
  /** modules evicted from the module cache by its bounds. @since 0.1.0 */
  uint64_t module_evictions;
  /** modules never unloaded because completion was not proven.
   *  @since 0.1.0 */
  uint64_t leaked_modules;
  /** completions recorded (t4a_runtime_record()). @since 0.1.0 */
  uint64_t completions_recorded;
  /** keepalives in the runtime's open completion epoch now (bounded: the
   *  epoch is sealed when it reaches its limit). @since 0.1.0 */
  uint64_t open_epoch_items;
  /** sealed completion epochs not yet retired now. @since 0.1.0 */
  uint64_t sealed_epochs;
  /** copies between two runtimes of one device (t4a_buffer_copy() with
   *  buffers of different runtimes: the event bracket) in which this
   *  runtime's buffer was the source or the destination; both runtimes
   *  count each copy. Zero-byte copies count in no path.
   *  @since 0.1.0 */
  uint64_t same_device_copies;
  /** bytes of those copies. @since 0.1.0 */
  uint64_t same_device_bytes;
  /** copies with a runtime of another device through peer access
   *  (`cuMemcpyPeerAsync`), counted by both runtimes. @since 0.1.0 */
  uint64_t peer_copies;
  /** bytes of those copies. @since 0.1.0 */
  uint64_t peer_bytes;
  /** copies with a runtime of another device staged through pinned host
   *  memory (the devices are not peers, or peer access is not enabled),
   *  counted by both runtimes: a non-zero value where peer copies were
   *  expected shows the fallback. @since 0.1.0 */
  uint64_t staged_copies;
  /** bytes of those copies. @since 0.1.0 */
  uint64_t staged_bytes;
  /** cooperative launches enqueued (launches with the experimental flag
   *  `T4A_LAUNCH_COOPERATIVE`). @since 0.1.0 */
  uint64_t cooperative_launches;
  /** grid-barrier audits that found a declared barrier counter not at its
   *  expected value after a completed launch (see the experimental
   *  `t4a_kernel_declare_barrier`); each is also logged as an error.
   *  @since 0.1.0 */
  uint64_t barrier_audit_failures;
} t4a_runtime_stats;

/** Initializer for ::t4a_runtime_stats. */
#define T4A_RUNTIME_STATS_INIT                                                 \
  {                                                                            \
    sizeof(t4a_runtime_stats), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0          \
  }

/**
 * @brief Reads a runtime's counters.
 * @param[in]     runtime the runtime.
 * @param[in,out] stats   set `stats->struct_size` (#T4A_RUNTIME_STATS_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `stats`, struct_size below 4).
 * Never blocks; makes no driver call.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_stats_get(t4a_runtime runtime,
                                         t4a_runtime_stats *stats);
/**
 * @brief Enables peer access between the devices of two runtimes, both
 * ways, for copies between their buffers (t4a_buffer_copy()).
 *
 * For runtimes of two devices that are peers (`cuDeviceCanAccessPeer`
 * both ways): enables context peer access both ways
 * (`cuCtxEnablePeerAccess` between the two primary contexts; already
 * enabled is fine) and grants each device read-write access to the other
 * runtime's memory pool (`cuMemPoolSetAccess`: pool memory is not covered
 * by context peer access). From then on t4a_buffer_copy() between buffers
 * of the two runtimes runs `cuMemcpyPeerAsync` (counted in
 * ::t4a_runtime_stats::peer_copies). Every later allocation of either
 * pool is mapped into the other device too. Idempotent: a second call for
 * the pair (either order) makes no driver call. Two runtimes of one
 * device (or one runtime twice) need nothing: a device always reaches its
 * own pools, and such runtimes share the primary context; the call
 * succeeds without a driver call. Both runtimes are admitted, in
 * allocation-domain order.
 * @param[in] runtime one runtime.
 * @param[in] peer    the other runtime.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (either handle, named);
 *         #T4A_ERROR_UNSUPPORTED (the devices are not peers: the message
 *         names both ordinals and which direction the driver refuses);
 *         #T4A_ERROR_DEVICE_FAULT (either runtime broken, named);
 *         #T4A_ERROR_REENTRANT (the thread is inside an operation of
 *         either runtime); #T4A_ERROR_NO_DRIVER; #T4A_ERROR_DRIVER.
 * Never waits on the host. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_enable_peer(t4a_runtime runtime,
                                           t4a_runtime peer);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Device buffers                                                     */
/* ------------------------------------------------------------------------ */
/** @{ */
/** t4a_buffer_alloc() flag: zero the memory (a memset on the stream). */
#define T4A_BUFFER_ZERO 0x1u

/**
 * @brief Allocates a device buffer from the runtime's pool, stream-ordered.
 *
 * `cuMemAllocFromPoolAsync` on the runtime's stream: the memory is ready for
 * every operation enqueued on the runtime after this call; at least 256-byte
 * aligned. Zero bytes gives a valid empty buffer (device pointer 0) whose
 * use as a launch argument is rejected.
 *
 * @param[in]  runtime the owning runtime.
 * @param[in]  bytes   size in bytes.
 * @param[in]  flags   0 or #T4A_BUFFER_ZERO.
 * @param[out] buffer  the new buffer (one reference); release it with
 *                     t4a_buffer_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_INVALID_ARGUMENT
 *         (NULL `buffer`, unknown flags); #T4A_ERROR_OUT_OF_MEMORY naming the
 *         bytes requested (the runtime stays usable); #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER; #T4A_ERROR_REENTRANT.
 * Never waits on the host for this runtime's work. (It may retire host
 * buffers whose transfers completed; if one held the last reference to an
 * already destroyed runtime, that runtime's teardown runs here.)
 * Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_alloc(t4a_runtime runtime, uint64_t bytes,
                                    uint32_t flags, t4a_buffer *buffer);

/**
 * @brief Adds a reference to a buffer.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_retain(t4a_buffer buffer);

/**
 * @brief Drops a reference; the last one frees the memory, stream-ordered.
 *
 * The free is `cuMemFreeAsync` on the owning runtime's stream once no
 * operation still holds the buffer: work enqueued earlier on that stream
 * finishes first by stream order. No event, no host wait. If the runtime's
 * completion can no longer be proven (device fault, failed drain) the memory
 * is leaked and counted instead.
 * @param[in] buffer the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (also for one release too
 *         many). Thread-safe, from any thread.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_release(t4a_buffer buffer);

/** @brief Facts about a buffer. */
typedef struct t4a_buffer_info {
  uint32_t struct_size; /**< in: sizeof(t4a_buffer_info) of the caller. */
  uint32_t reserved0;   /**< zero. */
  uint64_t bytes;       /**< size in bytes. */
  /** the `CUdeviceptr` (0 for an empty buffer), for interop: valid until
   *  the buffer's last release; use it only in stream order with the
   *  owning runtime's work. */
  uint64_t device_pointer;
  t4a_runtime runtime;    /**< the owning runtime (not retained). */
  int32_t device_ordinal; /**< the owning runtime's device. */
  uint32_t reserved1;     /**< zero. */
  /** #T4A_BUFFER_INFO_READ_ONLY, #T4A_BUFFER_INFO_IMPORTED,
   *  #T4A_BUFFER_INFO_VIEW bits.
   *  @since 0.1.0 */
  uint32_t flags;
  uint32_t reserved2; /**< zero. */
} t4a_buffer_info;

/** ::t4a_buffer_info flag: the buffer refuses writes (a read-only DLPack
 *  import, t4acuda_dlpack.h). */
#define T4A_BUFFER_INFO_READ_ONLY 0x1u
/** ::t4a_buffer_info flag: the buffer wraps memory imported through
 *  DLPack (t4acuda_dlpack.h), freed by its producer's deleter. */
#define T4A_BUFFER_INFO_IMPORTED 0x2u
/** ::t4a_buffer_info flag: the buffer is a view of a module global
 *  (t4a_module_global()): it holds its module, and the library never frees
 *  its memory.
 *  @since 0.1.0 */
#define T4A_BUFFER_INFO_VIEW 0x4u

/** Initializer for ::t4a_buffer_info. */
#define T4A_BUFFER_INFO_INIT                                                   \
  { sizeof(t4a_buffer_info), 0, 0, 0, {0}, 0, 0, 0, 0 }

/**
 * @brief Size, device pointer and owning runtime of a buffer.
 * @param[in]     buffer the buffer.
 * @param[in,out] info   set `info->struct_size` (#T4A_BUFFER_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT. No driver call.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_info_get(t4a_buffer buffer,
                                       t4a_buffer_info *info);

/**
 * @brief Sets `bytes` bytes at `offset` to `value`, on the stream.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME (buffer of another runtime);
 *         #T4A_ERROR_INVALID_ARGUMENT (range past the end, overflow);
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER; #T4A_ERROR_REENTRANT.
 * Never waits on the host.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_fill(t4a_runtime runtime, t4a_buffer buffer,
                                   uint64_t offset, uint64_t bytes,
                                   uint8_t value);

/**
 * @brief Copies between two device buffers, of one runtime or of two.
 *
 * `runtime` must be the runtime of `dst` (else #T4A_ERROR_WRONG_RUNTIME
 * naming the three runtimes): the copy is ordered on the destination
 * runtime's stream, so work enqueued on `runtime` afterwards (a kernel
 * reading `dst`) sees the bytes without further synchronization.
 * Overlapping ranges of one buffer are rejected.
 *
 * `src` may belong to another runtime (of the same device or another):
 *  - **same runtime:** `cuMemcpyDtoDAsync` on the stream;
 *  - **same device:** an event recorded on the source runtime's stream,
 *    the destination stream waits for it, the copy runs on the
 *    destination stream, an event recorded after it, and the source
 *    stream waits for that (::t4a_runtime_stats::same_device_copies);
 *  - **peer devices with peer access enabled** (t4a_runtime_enable_peer()
 *    or #T4A_PEER_ACCESS_AUTO in both runtimes' options): the same event
 *    bracket around `cuMemcpyPeerAsync` on the destination stream
 *    (::t4a_runtime_stats::peer_copies);
 *  - **otherwise** staged through the destination runtime's pinned
 *    staging chunks: each chunk is copied device-to-host on the source
 *    stream, an event is recorded after it, the destination stream waits
 *    for it and copies the chunk host-to-device
 *    (::t4a_runtime_stats::staged_copies). Bounded by the destination's
 *    staging budget; waits on the host only when that is exhausted.
 * In every case the source runtime's stream is ordered after the reads
 * of `src`: the source may be released, or overwritten by work enqueued
 * on its runtime, right after the call. Both runtimes are admitted, in
 * allocation-domain order (two threads copying A to B and B to A cannot
 * deadlock); `src` is kept alive by the destination runtime's completion
 * epoch until the copy is proven complete.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME (`dst` not of `runtime`);
 *         #T4A_ERROR_INVALID_ARGUMENT (range past either end, overflow,
 *         overlap); #T4A_ERROR_DEVICE_FAULT (either runtime broken: the
 *         message says whether the source or the destination runtime);
 *         #T4A_ERROR_ABANDONED (a failure after part of a cross-runtime
 *         copy was enqueued); #T4A_ERROR_OUT_OF_HOST_MEMORY (staging);
 *         #T4A_ERROR_DRIVER; #T4A_ERROR_REENTRANT (the thread is inside an
 *         operation of either runtime). Never waits on the host, except
 *         for staging as above.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_copy(t4a_runtime runtime, t4a_buffer dst,
                                   uint64_t dst_offset, t4a_buffer src,
                                   uint64_t src_offset, uint64_t bytes);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Host transfers                                                     */
/* ------------------------------------------------------------------------ */
/** @{ */
/**
 * @brief Copies `bytes` from host memory `src` into `dst` at `offset`.
 *
 * Ordered on the runtime's stream. Returns once the source bytes are
 * captured (copied into pinned staging): the caller may overwrite `src` at
 * once. Large transfers are chunked and pipelined through the staging
 * budget, with parallel host copies. Waits on the host only when the
 * staging budget is exhausted, and then only for the oldest chunk (counted
 * in ::t4a_runtime_stats::staging_waits).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME; #T4A_ERROR_INVALID_ARGUMENT (NULL `src`
 *         with bytes > 0, range past the end, overflow);
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY (no pinned staging);
 *         #T4A_ERROR_ABANDONED (failed after part was enqueued: the staging
 *         touched is quarantined); #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER; #T4A_ERROR_REENTRANT.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_upload(t4a_runtime runtime, t4a_buffer dst,
                                     uint64_t offset, const void *src,
                                     uint64_t bytes);

/**
 * @brief Enqueues a copy of `bytes` of `src` at `offset` to the host.
 *
 * The bytes are those the buffer holds at this point of the stream order:
 * they are copied on the stream into a snapshot followed by one event, so
 * the buffer may be changed or released afterwards. A download of at most
 * 256 KiB takes one of the runtime's 16 pinned host snapshot slots when
 * one is free (one portable pinned block of 4 MiB, made on first use,
 * outside the staging budget; delivery then only copies out); otherwise the
 * snapshot is device memory from the runtime's pool. Deliver them once with
 * t4a_download_poll() or t4a_download_wait(); release the handle with
 * t4a_download_release() (also undelivered: safe). Never waits on the host;
 * staging is used only at delivery.
 * @param[in]  runtime  the runtime that owns `src`.
 * @param[in]  src      the buffer to read.
 * @param[in]  offset   first byte of `src` to read.
 * @param[in]  bytes    number of bytes; 0 gives an empty download.
 * @param[out] download the pending download; release it with
 *                      t4a_download_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME; #T4A_ERROR_INVALID_ARGUMENT;
 *         #T4A_ERROR_OUT_OF_MEMORY (no device memory for a snapshot);
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY; #T4A_ERROR_ABANDONED;
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER; #T4A_ERROR_REENTRANT.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_download(t4a_runtime runtime, t4a_buffer src,
                                       uint64_t offset, uint64_t bytes,
                                       t4a_download *download);

/**
 * @brief Delivers a download into `dst` if its copy has completed.
 *
 * Once the snapshot is complete, delivery copies a host snapshot to `dst`,
 * or moves a device snapshot to `dst` through pinned staging and waits for
 * those copies (counted host waits). The copies run
 * on an internal delivery stream, not behind later work of the runtime;
 * when the staging budget is exhausted, delivery may wait for the oldest
 * staging chunk of the runtime's own transfers. A delivery that fails
 * part-way leaks (and counts) the snapshot, and the download stays
 * undelivered.
 * @param[in]  download the pending download.
 * @param[out] dst at least the download's size in bytes (may be NULL for a
 *                 zero-byte download).
 * @return #T4A_SUCCESS (delivered now); #T4A_NOT_READY (still in flight;
 *         nothing written); #T4A_ERROR_INVALID_ARGUMENT (already delivered,
 *         NULL `dst`); #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY (no pinned staging);
 *         #T4A_ERROR_ABANDONED (a staged copy failed after others were
 *         enqueued; `dst` partly written); #T4A_ERROR_REENTRANT;
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_download_poll(t4a_download download, void *dst);

/**
 * @brief Waits for a download's copy, then delivers it into `dst`.
 *
 * A counted host wait. The second delivery of a download is
 * #T4A_ERROR_INVALID_ARGUMENT, never empty data. Delivery as for
 * t4a_download_poll().
 * @return as t4a_download_poll(), except #T4A_NOT_READY.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_download_wait(t4a_download download, void *dst);

/**
 * @brief The size in bytes of a download.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `bytes`).
 * @since 0.1.0
 */
T4A_API t4a_status t4a_download_size(t4a_download download, uint64_t *bytes);

/**
 * @brief Releases a download, delivered or not; its staging and snapshot
 *        are freed once the copy has completed.
 * @param[in] download the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_download_release(t4a_download download);

/**
 * @brief Copies `bytes` of `src` at `offset` to host memory `dst`, waiting.
 *
 * The synchronous convenience: ordered after earlier work on the stream,
 * chunked and pipelined through staging with parallel host copies; returns
 * when every byte is in `dst`.
 * @return as t4a_buffer_download(), plus #T4A_ERROR_INVALID_ARGUMENT for a
 *         NULL `dst` with bytes > 0.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_download_sync(t4a_runtime runtime, t4a_buffer src,
                                            uint64_t offset, void *dst,
                                            uint64_t bytes);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Host buffers                                                       */
/* ------------------------------------------------------------------------ */
/** @{ */
/**
 * @brief Allocates library-owned portable pinned host memory.
 *
 * `cuMemHostAlloc(CU_MEMHOSTALLOC_PORTABLE)`, made in `runtime`'s context
 * and usable by every runtime. Transfers to or from it DMA directly,
 * without staging.
 * @param[in]  runtime supplies the context for the allocation.
 * @param[in]  bytes   size; 0 gives an empty host buffer (NULL pointer).
 * @param[out] host_buffer one reference; release with
 *                         t4a_host_buffer_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_OUT_OF_HOST_MEMORY;
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_host_buffer_alloc(t4a_runtime runtime, uint64_t bytes,
                                         t4a_host_buffer *host_buffer);

/**
 * @brief Adds a reference to a host buffer.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_host_buffer_retain(t4a_host_buffer host_buffer);

/**
 * @brief Drops a reference. The memory is freed when the last reference is
 *        gone and every transfer that uses it has completed.
 * @param[in] host_buffer the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_host_buffer_release(t4a_host_buffer host_buffer);

/**
 * @brief The host pointer and size of a host buffer.
 *
 * The memory stays valid while the caller holds a reference.
 * @param[in]  host_buffer the host buffer.
 * @param[out] pointer the host address (NULL for an empty host buffer).
 * @param[out] bytes   the size; may be NULL.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `pointer`).
 * @since 0.1.0
 */
T4A_API t4a_status t4a_host_buffer_pointer(t4a_host_buffer host_buffer,
                                           void **pointer, uint64_t *bytes);

/**
 * @brief Enqueues a DMA from a host buffer into a device buffer.
 *
 * Asynchronous: the host buffer's bytes are read when the stream reaches the
 * copy, so the caller must not change them until the runtime has
 * synchronized. The host buffer is kept alive until the copy completes.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME; #T4A_ERROR_INVALID_ARGUMENT (ranges);
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER; #T4A_ERROR_REENTRANT.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_upload_host(t4a_runtime runtime, t4a_buffer dst,
                                          uint64_t dst_offset,
                                          t4a_host_buffer src,
                                          uint64_t src_offset, uint64_t bytes);

/**
 * @brief Enqueues a DMA from a device buffer into a host buffer.
 *
 * Asynchronous: read the host buffer only after the runtime has
 * synchronized. The host buffer is kept alive until the copy completes.
 * @return as t4a_buffer_upload_host().
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_download_host(t4a_runtime runtime, t4a_buffer src,
                                            uint64_t src_offset,
                                            t4a_host_buffer dst,
                                            uint64_t dst_offset,
                                            uint64_t bytes);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Compilation and artifacts                                          */
/* ------------------------------------------------------------------------ */
/** @{ */
/** Output kind: a CUBIN (ELF) for one exact SM (the default). */
#define T4A_COMPILE_CUBIN 0u
/** Output kind: PTX text, JIT-compiled by the driver when loaded. */
#define T4A_COMPILE_PTX 1u

/** t4a_compile_request::flags: do not look up or fill the in-memory
 *  cache. */
#define T4A_COMPILE_NO_MEMORY_CACHE 0x1u
/** t4a_compile_request::flags: do not read or write the disk cache. */
#define T4A_COMPILE_NO_DISK_CACHE 0x2u
/** t4a_compile_request::flags: do not add the CUDA toolkit's include
 *  directories (see t4a_compile_request::toolkit_include). */
#define T4A_COMPILE_NO_TOOLKIT_HEADERS 0x4u
/** t4a_compile_request::flags: no automatic precompiled header. By
 *  default, with NVRTC 12.8 or newer, a compile that includes toolkit
 *  headers runs with NVRTC's `-pch`: the first such compile in a process
 *  pays to create the header state (about 1.7x a plain compile), later
 *  ones that start with the same includes reuse it from NVRTC's PCH heap
 *  (measured 0.07-0.16x). The generated code is the same either way. */
#define T4A_COMPILE_NO_PCH 0x8u

/** ::t4a_artifact_info::origin: NVRTC compiled it in this call. */
#define T4A_ARTIFACT_FROM_NVRTC 1u
/** ::t4a_artifact_info::origin: found in the process's in-memory cache. */
#define T4A_ARTIFACT_FROM_MEMORY 2u
/** ::t4a_artifact_info::origin: read from the disk cache. */
#define T4A_ARTIFACT_FROM_DISK 3u

/** Default bound of the disk cache in bytes (1 GiB). */
#define T4A_DEFAULT_DISK_CACHE_BYTES (UINT64_C(1) << 30)
/** Entries the process-wide in-memory cache keeps at most. */
#define T4A_MEMORY_CACHE_ENTRIES 256
/** Image and log bytes the process-wide in-memory cache keeps at most. */
#define T4A_MEMORY_CACHE_BYTES (UINT64_C(256) << 20)
/** Bytes of an identity key in hex, including the NUL (64 digits + 1). */
#define T4A_ARTIFACT_KEY_CAPACITY 65

/**
 * @brief What to compile, for what target, and how to cache it.
 *
 * Every pointer is read only during t4a_compile(); nothing is kept.
 * Strings are NUL-terminated. An array whose count is 0 may be NULL.
 */
typedef struct t4a_compile_request {
  uint32_t struct_size; /**< sizeof(t4a_compile_request) of the caller. */
  /** #T4A_COMPILE_CUBIN (default) or #T4A_COMPILE_PTX: the output wanted.
   *  Target selection may turn a CUBIN request into PTX (see
   *  t4a_compile()); ::t4a_artifact_info::output says what was made. */
  uint32_t output;
  const char *source; /**< CUDA C++ source; required. */
  /** name in diagnostics; NULL: "t4a.cu". NVRTC also resolves a quoted
   *  include that no given header satisfies in this name's directory (see
   *  the disk cache in t4a_compile()). */
  const char *program_name;
  /** `header_count` include names, as `#include "name"` spells them. */
  const char *const *header_names;
  /** `header_count` header contents, matching `header_names`. */
  const char *const *header_sources;
  uint32_t header_count; /**< entries of the two header arrays. */
  uint32_t option_count; /**< entries of `options`. */
  /** NVRTC options ("-std=c++17", "-DN=4"), one per string. An option
   *  "-arch=..." / "--gpu-architecture=..." overrides target selection. */
  const char *const *options;
  /** Name expressions ("&kernel<float>") whose lowered (mangled) names are
   *  wanted; see t4a_artifact_lowered_name(). */
  const char *const *name_expressions;
  uint32_t name_expression_count; /**< entries of `name_expressions`. */
  /** Target compute capability, major (9 for sm_90): 1..99. Used, and
   *  validated, only when `runtime` is the null handle and no "-arch="
   *  option is given; then it is checked with the rest of the request
   *  (step 1 of t4a_compile(): before NVRTC is loaded, so a bad value is
   *  #T4A_ERROR_INVALID_ARGUMENT even without NVRTC), against these ranges
   *  only, not against any device. With a runtime or an "-arch=" option
   *  both fields are ignored, whatever they hold. */
  int32_t cc_major;
  /** Target compute capability, minor: 0..9; used and validated as
   *  `cc_major`. */
  int32_t cc_minor;
  /** #T4A_COMPILE_NO_MEMORY_CACHE, #T4A_COMPILE_NO_DISK_CACHE; 0. */
  uint32_t flags;
  /** When not null: compile for this runtime's device (its compute
   *  capability; the driver's version limits PTX). Not retained. */
  t4a_runtime runtime;
  /** Disk cache bound in bytes; 0: #T4A_DEFAULT_DISK_CACHE_BYTES.
   *  `T4A_CACHE_MAX_BYTES` overrides it. */
  uint64_t disk_cache_max_bytes;
  /** Disk cache directory; NULL: `$XDG_CACHE_HOME/t4acuda`, else
   *  `$HOME/.cache/t4acuda`; "": no disk cache. `T4A_CACHE_DIR`, when
   *  set, overrides it. */
  const char *cache_dir;
  /** The CUDA toolkit include directory (holding cuda.h, cuda_fp16.h and
   *  cccl/) added after `options`, so that `cuda_fp16.h`,
   *  `cooperative_groups.h` and `cuda/std/...` need no option. NULL or "":
   *  found automatically, first match of `T4A_CUDA_INCLUDE` (an include
   *  directory), `CUDA_HOME`/include, `CUDA_PATH`/include, the toolkit of
   *  the NVRTC in use, `/usr/local/cuda/include`; a found directory whose
   *  cuda.h is not NVRTC's major.minor is passed over. A directory named
   *  here or in `T4A_CUDA_INCLUDE` must match: otherwise
   *  #T4A_ERROR_VERSION_MISMATCH naming both versions (no cuda.h:
   *  #T4A_ERROR_INVALID_ARGUMENT). Its `cccl` subdirectory is added too.
   *  #T4A_COMPILE_NO_TOOLKIT_HEADERS in `flags` adds nothing.
   *  @since 0.1.0 (added after `cache_dir`) */
  const char *toolkit_include;
} t4a_compile_request;

/** Initializer for ::t4a_compile_request: CUBIN, no target yet, caches
 *  on. */
#define T4A_COMPILE_REQUEST_INIT                                               \
  {                                                                            \
    sizeof(t4a_compile_request), T4A_COMPILE_CUBIN, NULL, NULL, NULL, NULL, 0, \
        0, NULL, NULL, 0, 0, 0, 0, {0}, 0, NULL, NULL                          \
  }

/**
 * @brief Compiles CUDA C++ with NVRTC, or finds the result in a cache.
 *
 * Needs no device and no context: only NVRTC (and the driver when
 * `request->runtime` is set). In order:
 *  1. **Validation.** Every field is checked before anything else; each
 *     rejection names the field and index: NULL `source`, a count with a
 *     NULL array, a NULL entry, a header name or option containing a
 *     newline or carriage return, an unknown `output` or `flags` bit, a
 *     compute capability outside 1..99 / 0..9, no target (null runtime and
 *     `cc_major` 0). Then `artifact` is checked for NULL, and only then is
 *     `request->runtime` resolved (#T4A_ERROR_INVALID_HANDLE) and its
 *     device read.
 *  2. **Target selection.** CUBIN for the exact `sm_XY` when CUBIN was
 *     requested and NVRTC supports it (and, with a runtime, the driver's
 *     CUDA major is at least NVRTC's); otherwise PTX for the highest
 *     NVRTC-supported `compute_AB` not above the device's, only when the
 *     driver's CUDA version is at least NVRTC's (it must JIT that PTX);
 *     otherwise #T4A_ERROR_UNSUPPORTED naming the NVRTC, driver and device
 *     versions. With an explicit compute capability (null runtime) the
 *     driver's version is unknown and not checked. An "-arch=" option
 *     skips selection: the option is used as given.
 *  3. **Identity key.** SHA-256 over every input (source, program name,
 *     headers, options, name expressions, each length-prefixed), the
 *     requested output, the selected target and the NVRTC version.
 *  4. **Memory cache.** Process-wide, LRU, at most
 *     #T4A_MEMORY_CACHE_ENTRIES entries and #T4A_MEMORY_CACHE_BYTES
 *     bytes. The cache holds the artifact with a reference of its own,
 *     not a handle reference: a hit returns the caller's live handle (same
 *     id), retained, or, once every handle reference was released, a new
 *     handle to the cached artifact. Within a process, a request is
 *     answered from memory even when files it read (below) changed.
 *  5. **Disk cache.** One file per key under the cache directory
 *     (`T4A_CACHE_DIR`, else `request->cache_dir` ("" disables it), else
 *     `$XDG_CACHE_HOME/t4acuda`, else `$HOME/.cache/t4acuda`; a set but
 *     empty `T4A_CACHE_DIR` disables it). The directory must be owned by
 *     the calling user and not writable by group or others, else the disk
 *     cache is off for it (warned once); an entry must be a regular file
 *     (a link, FIFO or device is never opened for reading) owned by the
 *     user, not writable by group or others and not larger than the bound,
 *     else it is corrupt (below). A compile whose options make NVRTC read
 *     files (`-I`, `--include-path`, `-isystem`, `--system-include`,
 *     `-include`, `--pre-include`), or whose source or given headers have
 *     an include directive that no given header satisfies (NVRTC resolves
 *     a quoted `#include "x.h"` in the directory of `program_name`, the
 *     current directory for a relative name, or at the path written; an
 *     include named by a macro, or `__has_include`), is never cached on
 *     disk: those files are not part of the identity key. Angle-bracket
 *     includes of NVRTC's built-in headers are covered by its version.
 *     Every read verifies the header,
 *     sizes, key and a SHA-256 of the payload; a corrupt or truncated
 *     entry is compiled again, replaced and counted
 *     (::t4a_compile_stats::disk_corrupt_entries). Writes go to a
 *     temporary file in the same directory, renamed into place, so
 *     concurrent processes never read a partial entry. After a write, the
 *     least recently used entries (by modification time, refreshed on
 *     every hit) are removed until the directory holds at most the bound
 *     (`T4A_CACHE_MAX_BYTES`, else `request->disk_cache_max_bytes`, else
 *     #T4A_DEFAULT_DISK_CACHE_BYTES). A disk cache that cannot be used
 *     (unwritable directory) is skipped with a warning; it never fails a
 *     compile.
 *  6. **NVRTC.** On a miss. A failed compile creates no artifact and
 *     returns #T4A_ERROR_COMPILE: ::t4a_error_info::compiler_result holds
 *     the `nvrtcResult`, the message the first lines of the log, and
 *     t4a_last_compile_log() the complete log. An empty image (for example
 *     a CUBIN for a virtual architecture, "-arch=compute_90") is also
 *     #T4A_ERROR_COMPILE. Failures are never cached.
 *
 * @param[in]  request  what to compile (see #T4A_COMPILE_REQUEST_INIT).
 * @param[out] artifact one reference; release with t4a_artifact_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT (as in 1, NULL
 *         `request` or `artifact`, a bad struct_size);
 *         #T4A_ERROR_VERSION_MISMATCH (non-zero unknown tail);
 *         #T4A_ERROR_INVALID_HANDLE (a released or forged `runtime`);
 *         #T4A_ERROR_NO_COMPILER (no NVRTC: the message names every
 *         library tried); #T4A_ERROR_UNSUPPORTED (no loadable target);
 *         #T4A_ERROR_COMPILE; #T4A_ERROR_NO_DRIVER / #T4A_ERROR_DRIVER
 *         (reading the runtime's device); #T4A_ERROR_OUT_OF_HOST_MEMORY.
 * Blocks while NVRTC runs (tens of milliseconds or more). Thread-safe: two
 * threads compiling the same request at once may both run NVRTC; both get
 * a valid artifact.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_compile(const t4a_compile_request *request,
                               t4a_artifact *artifact);

/**
 * @brief Copies the full NVRTC log of the calling thread's last compile
 *        that returned #T4A_ERROR_COMPILE (query-then-copy).
 *
 * Never truncated by the library: `*needed` (if not NULL) receives the
 * full length including the NUL; at most `capacity` bytes are written,
 * NUL-terminated. "" when no compile of this thread has failed. Kept until
 * the thread's next failing compile or t4a_last_error_clear(); a
 * successful compile does not change it.
 * @param[out] buf      destination, may be NULL when `capacity` is 0.
 * @param[in]  capacity bytes available at `buf`.
 * @param[out] needed   optional: bytes the whole log needs.
 * @return #T4A_SUCCESS (also when truncated: compare `*needed` with
 *         `capacity`); #T4A_ERROR_INVALID_ARGUMENT if `buf` is NULL and
 *         `capacity` is not 0. Does not change the last error.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_last_compile_log(char *buf, size_t capacity,
                                        size_t *needed);

/**
 * @brief Describes the CUDA toolkit headers a compile gets without any
 *        option (query-then-copy, as t4a_artifact_log()).
 *
 * The text has one fact per line, "key value": `nvrtc <major.minor>
 * <file>`, then `include <dir>` for each directory added after a
 * request's options (the toolkit's include directory, then its `cccl`),
 * `version <major.minor>` of its cuda.h, `from <step>` (which step of the
 * search of t4a_compile_request::toolkit_include found it) and
 * `passed-over <dir (step): why; ...>` for directories not taken. No
 * `include` line: none was found (compiles get no toolkit headers). Loads
 * NVRTC: the toolkit must match its version. `t4acuda-info` prints it.
 * @param[out] buf      NULL with `capacity` 0 to query the size.
 * @param[in]  capacity bytes at `buf`.
 * @param[out] needed   if not NULL: bytes needed, NUL included.
 * @return #T4A_SUCCESS; #T4A_ERROR_NO_COMPILER;
 *         #T4A_ERROR_VERSION_MISMATCH or #T4A_ERROR_INVALID_ARGUMENT when
 *         `T4A_CUDA_INCLUDE` names a directory that is not a toolkit of
 *         NVRTC's version; #T4A_ERROR_INVALID_ARGUMENT (NULL `buf` with a
 *         capacity).
 * Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_toolkit_headers(char *buf, size_t capacity,
                                       size_t *needed);

/**
 * @brief Adds a reference to an artifact.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (the reference count is saturated).
 * Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_retain(t4a_artifact artifact);

/**
 * @brief Drops a reference; the last one frees the artifact.
 *
 * The in-memory cache holds the artifact with a reference of its own,
 * not a handle reference: after the caller's last release the handle is
 * invalid (one release too many is #T4A_ERROR_INVALID_HANDLE), while a
 * later t4a_compile() of the same request still hits the cache.
 * @param[in] artifact the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (also for one release
 *         too many). Thread-safe, from any thread.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_release(t4a_artifact artifact);

/** @brief Facts about an artifact. */
typedef struct t4a_artifact_info {
  uint32_t struct_size; /**< in: sizeof(t4a_artifact_info) of the caller. */
  /** what was made: #T4A_COMPILE_CUBIN or #T4A_COMPILE_PTX. */
  uint32_t output;
  /** the target architecture's major (9 for sm_90 / compute_90). */
  int32_t cc_major;
  int32_t cc_minor;     /**< the target architecture's minor. */
  uint64_t image_bytes; /**< bytes of the image (t4a_artifact_image()). */
  uint64_t log_bytes;   /**< bytes of the log, without the NUL. */
  /** lowered names available (the request's name expressions). */
  uint32_t name_expression_count;
  /** where the last t4a_compile() that returned this artifact got it:
   *  #T4A_ARTIFACT_FROM_NVRTC, #T4A_ARTIFACT_FROM_MEMORY or
   *  #T4A_ARTIFACT_FROM_DISK (a memory hit returns the same artifact, so
   *  this changes with the calls that return it). */
  uint32_t origin;
  /** nanoseconds that t4a_compile() call took, from its start to the
   *  artifact (NVRTC included when `origin` is NVRTC). */
  uint64_t compile_ns;
  /** nanoseconds NVRTC took when this process compiled it; 0 when it came
   *  from the disk cache. */
  uint64_t nvrtc_ns;
} t4a_artifact_info;

/** Initializer for ::t4a_artifact_info. */
#define T4A_ARTIFACT_INFO_INIT                                                 \
  { sizeof(t4a_artifact_info), 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * @brief Target, sizes and name count of an artifact.
 * @param[in]     artifact the artifact.
 * @param[in,out] info     set `info->struct_size` (#T4A_ARTIFACT_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `info`, struct_size below 4).
 * Never blocks. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_info_get(t4a_artifact artifact,
                                         t4a_artifact_info *info);

/**
 * @brief Copies an artifact's image (CUBIN bytes, or PTX text with its
 *        NUL) (query-then-copy).
 *
 * `*needed` (if not NULL) receives the image's size; at most `capacity`
 * bytes are copied.
 * @param[in]  artifact the artifact.
 * @param[out] buf      destination, may be NULL when `capacity` is 0.
 * @param[in]  capacity bytes available at `buf`.
 * @param[out] needed   optional: the image's size in bytes.
 * @return #T4A_SUCCESS (also when `capacity` is short);
 *         #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_INVALID_ARGUMENT (`buf`
 *         NULL with `capacity` not 0). Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_image(t4a_artifact artifact, void *buf,
                                      size_t capacity, size_t *needed);

/**
 * @brief Copies an artifact's full NVRTC log (query-then-copy).
 *
 * The log of a successful compile (warnings), never truncated by the
 * library; "" when NVRTC printed nothing. As t4a_last_error_message():
 * `*needed` is the full length including the NUL, at most `capacity`
 * bytes are written, NUL-terminated.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (`buf` NULL with `capacity` not 0).
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_log(t4a_artifact artifact, char *buf,
                                    size_t capacity, size_t *needed);

/**
 * @brief Copies the lowered (mangled) name of the request's `index`-th
 *        name expression (query-then-copy, as t4a_artifact_log()).
 * @param[in] artifact the artifact.
 * @param[in] index    0 .. ::t4a_artifact_info::name_expression_count - 1.
 * @param[out] buf      destination, may be NULL when `capacity` is 0.
 * @param[in]  capacity bytes available at `buf`.
 * @param[out] needed   optional: bytes the name needs, with its NUL.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (index out of range, naming it and
 *         the count; `buf` NULL with `capacity` not 0).
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_lowered_name(t4a_artifact artifact,
                                             uint32_t index, char *buf,
                                             size_t capacity, size_t *needed);

/**
 * @brief Copies the lowered (mangled) name of one of the request's name
 *        expressions, given the expression itself (query-then-copy, as
 *        t4a_artifact_lowered_name()).
 *
 * `expression` is compared with the request's name expressions in three
 * stages, each over all of them before the next: the exact string; then
 * the same tokens with whitespace ignored (`"reduce<128,true>"` finds
 * `"reduce<128, true>"`; a space still separates two words, as in
 * `unsigned int`); then the same with one leading `&` ignored on either
 * side (`"counter"` finds `"&counter"`, `"&k<float>"` finds `"k<float>"`).
 * The expressions are remembered by the process for the artifacts its
 *  t4a_compile() calls returned (by identity key: see docs/launch.md);
 * t4a_kernel_get() and t4a_module_global() on a module loaded from the
 * artifact match the same way.
 * @param[in]  artifact   the artifact.
 * @param[in]  expression a name expression of the request, not empty.
 * @param[out] buf        destination, may be NULL when `capacity` is 0.
 * @param[in]  capacity   bytes available at `buf`.
 * @param[out] needed     optional: bytes the name needs, with its NUL.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL or empty `expression`; `buf`
 *         NULL with `capacity` not 0; an expression that two name
 *         expressions with different lowered names match at one stage,
 *         both named); #T4A_ERROR_UNKNOWN_ENTRY_POINT (the status of an
 *         absent kernel name: no name expression matches, or the artifact
 *         has none; the message names `expression`). No driver or NVRTC
 *         call. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_lowered_name_of(t4a_artifact artifact,
                                                const char *expression,
                                                char *buf, size_t capacity,
                                                size_t *needed);

/**
 * @brief Copies an artifact's identity key as 64 lower-case hex digits
 *        (query-then-copy; #T4A_ARTIFACT_KEY_CAPACITY bytes suffice).
 *
 * Truncates like t4a_artifact_log(): `*needed` is always 65, and a
 * `capacity` below that still returns #T4A_SUCCESS with the first
 * `capacity - 1` hex digits and a NUL (nothing at all for `capacity` 0).
 * Such a prefix is not the key and need not be unique: compare keys only
 * when `capacity` was at least `*needed` (a buffer of
 * #T4A_ARTIFACT_KEY_CAPACITY bytes).
 * @param[in]  artifact the artifact.
 * @param[out] buf      destination, may be NULL when `capacity` is 0.
 * @param[in]  capacity bytes available at `buf`.
 * @param[out] needed   optional: 65, the bytes the key needs with its NUL.
 * @return #T4A_SUCCESS (also when `capacity` is short);
 *         #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (`buf` NULL with `capacity` not 0).
 * @since 0.1.0
 */
T4A_API t4a_status t4a_artifact_key(t4a_artifact artifact, char *buf,
                                    size_t capacity, size_t *needed);

/** @brief Process-wide compile counters; each is incremented
 *  where the thing happens. */
typedef struct t4a_compile_stats {
  uint32_t struct_size; /**< in: sizeof(t4a_compile_stats) of the caller. */
  uint32_t reserved0;   /**< zero. */
  /** t4a_compile() calls that passed validation and target selection. */
  uint64_t requests;
  uint64_t memory_hits; /**< requests answered by the in-memory cache. */
  uint64_t disk_hits;   /**< requests answered by a verified disk entry. */
  uint64_t nvrtc_invocations; /**< nvrtcCompileProgram calls. */
  uint64_t nvrtc_successes;   /**< of those, the ones that succeeded. */
  /** disk entries found corrupt or truncated (then compiled again). */
  uint64_t disk_corrupt_entries;
  uint64_t disk_writes;      /**< entries written to the disk cache. */
  uint64_t disk_evictions;   /**< entries removed to respect the bound. */
  uint64_t memory_evictions; /**< in-memory entries dropped (LRU). */
} t4a_compile_stats;

/** Initializer for ::t4a_compile_stats. */
#define T4A_COMPILE_STATS_INIT                                                 \
  { sizeof(t4a_compile_stats), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * @brief Reads the process-wide compile counters. Needs no driver.
 * @param[in,out] stats set `stats->struct_size` (#T4A_COMPILE_STATS_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT (NULL `stats`,
 *         struct_size below 4). Never blocks. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_compile_stats_get(t4a_compile_stats *stats);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Modules and kernels                                                */
/* ------------------------------------------------------------------------ */
/** @{ */
/**
 * @brief Loads an artifact's image as a module of `runtime`.
 *
 * Goes through the runtime's module cache, keyed by the artifact's identity
 * key (not by entry name): loading the same artifact again, or another
 * artifact with the same key, returns the cached module (counted in
 * ::t4a_runtime_stats::module_cache_hits) without a driver call. The cache
 * holds strong references, is bounded by
 * ::t4a_runtime_options::module_cache_entries and
 * ::t4a_runtime_options::module_cache_bytes and evicts the least recently
 * used module. A module released or evicted is unloaded only after every
 * launch that used it has completed.
 *
 * @param[in]  runtime  the runtime whose context loads the module.
 * @param[in]  artifact a compiled artifact (CUBIN or PTX).
 * @param[out] module   a new reference; release with t4a_module_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_INVALID_ARGUMENT
 *         (NULL `module`); #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER (the
 *         driver rejected the image, e.g. `CUDA_ERROR_INVALID_IMAGE` or
 *         `CUDA_ERROR_NO_BINARY_FOR_GPU`); #T4A_ERROR_OUT_OF_MEMORY.
 * Thread-safe; admitted like every runtime operation.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_module_load(t4a_runtime runtime, t4a_artifact artifact,
                                   t4a_module *module);

/**
 * @brief Loads raw CUBIN, PTX (NUL-terminated or not) or fatbin bytes.
 *
 * Cached like t4a_module_load(), keyed by the SHA-256 of the bytes.
 * @param[in]  runtime the runtime.
 * @param[in]  image   the image bytes (copied; may be freed on return).
 * @param[in]  bytes   their count, at least 1.
 * @param[out] module  a new reference; release with t4a_module_release().
 * @return as t4a_module_load(); #T4A_ERROR_INVALID_ARGUMENT for a NULL or
 *         empty image.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_module_load_data(t4a_runtime runtime, const void *image,
                                        size_t bytes, t4a_module *module);

/**
 * @brief Adds a reference to a module.
 * @param[in] module the module.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_module_retain(t4a_module module);

/**
 * @brief Drops a reference to a module.
 *
 * The module is unloaded when no handle, kernel, cache entry or pending
 * launch uses it any more (a launch keeps it until its work is complete).
 * @param[in] module the module; the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_module_release(t4a_module module);

/**
 * @brief Looks up a kernel (entry point) of a module by name.
 *
 * For a module loaded from an artifact compiled with name expressions, the
 * name is first matched against those expressions, as
 * t4a_artifact_lowered_name_of() matches (exactly, then with whitespace
 * ignored, then with a leading `&` ignored: `"reduce<128, true>"`,
 * `"reduce<128,true>"` and `"&reduce<128, true>"` all find the expression
 * `"&reduce<128, true>"`), and the kernel is the expression's lowered name.
 * Otherwise (and for a module of raw bytes, which has no expressions) the
 * name is the mangled (lowered) name, or the plain name of an `extern "C"`
 * kernel. The kernel's attributes, parameter layout (where the driver
 * reports it) and its device's launch limits are read once here.
 * @param[in]  module the module.
 * @param[in]  name   a name expression, or the entry point's name.
 * @param[out] kernel a new reference; keeps the module alive.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL or empty `name`, NULL `kernel`;
 *         a name that two expressions with different lowered names match,
 *         both named); #T4A_ERROR_UNKNOWN_ENTRY_POINT (no such name, which
 *         the message names, with the expression it matched if any);
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_get(t4a_module module, const char *name,
                                  t4a_kernel *kernel);

/**
 * @brief A `__device__` or `__constant__` variable of a module, as a
 *        buffer view (`cuModuleGetGlobal`).
 *
 * `name` is matched like t4a_kernel_get()'s: a name expression of the
 * module's artifact (`"&counter"`, or `"counter"`, `"&ns::table"`), else
 * the variable's lowered name (a variable at namespace scope outside any
 * namespace is not mangled: `"counter"`).
 *
 * The view is a ::t4a_buffer over the variable's device memory (its
 * address and size in bytes; ::t4a_buffer_info::flags has
 * #T4A_BUFFER_INFO_VIEW) and is used wherever a buffer is: upload,
 * download, fill, copy (either side, with offsets, range-checked against
 * the variable's size), as a launch argument (buffer and offset), in
 * DLPack export. It belongs to the module's runtime. It does not own the
 * memory: its release never frees it. The view holds its module (and so
 * the runtime) loaded: releasing the module, its kernels and the cache
 * entry while the view lives unloads nothing. After the view's last
 * release the module is kept until the runtime's work enqueued before
 * that release has completed (an event recorded on the runtime's stream),
 * then dropped at the next t4a_runtime_synchronize(), t4a_module_global()
 * or DLPack call of the runtime whose event is complete, or by
 * t4a_runtime_destroy() after its drain. A `__constant__` variable is
 * writable this way (from the host); kernels only read it.
 * @param[in]  module the module.
 * @param[in]  name   a name expression or the variable's name, not empty.
 * @param[out] view   a new buffer reference; release with
 *                    t4a_buffer_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (also a runtime whose
 *         destroy has begun); #T4A_ERROR_INVALID_ARGUMENT (NULL or empty
 *         `name`, NULL `view`, an ambiguous name: both expressions named);
 *         #T4A_ERROR_UNKNOWN_ENTRY_POINT (the status of an absent kernel
 *         name: the module has no such variable; the message names `name`
 *         and the expression it matched, if any);
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_REENTRANT;
 *         #T4A_ERROR_DRIVER. Never waits on the host. Thread-safe.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_module_global(t4a_module module, const char *name,
                                     t4a_buffer *view);

/**
 * @brief Adds a reference to a kernel.
 * @param[in] kernel the kernel.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_retain(t4a_kernel kernel);

/**
 * @brief Drops a reference to a kernel (and, with the last, its module's).
 * @param[in] kernel the kernel; the null handle is a successful no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_release(t4a_kernel kernel);

/** ::t4a_kernel_info::param_count when the driver does not report the
 *  kernel's parameters (no `cuFuncGetParamInfo`). */
#define T4A_PARAMS_UNKNOWN (-1)

/** @brief What the driver reports about a kernel. */
typedef struct t4a_kernel_info {
  uint32_t struct_size; /**< in: sizeof(t4a_kernel_info) of the caller. */
  /** parameters, or #T4A_PARAMS_UNKNOWN; sizes via t4a_kernel_param(). */
  int32_t param_count;
  /** bytes of the parameter block (last offset + size); 0 when unknown. */
  uint64_t param_bytes;
  int32_t registers;             /**< registers per thread. */
  int32_t max_threads_per_block; /**< the kernel's launch limit. */
  int32_t static_shared_bytes;   /**< statically allocated shared memory. */
  int32_t local_bytes;           /**< local memory per thread. */
  int32_t const_bytes;           /**< constant memory. */
  int32_t ptx_version;           /**< PTX virtual architecture * 10 + minor. */
  int32_t binary_version;        /**< binary architecture * 10 + minor. */
  /** the dynamic shared memory a launch may use now
   *  (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`; raised by
   *  t4a_launch() when needed). */
  int32_t max_dynamic_shared_bytes;
  uint32_t reserved0; /**< zero; keeps the size a multiple of 8. */
} t4a_kernel_info;

/** Initializer for ::t4a_kernel_info. */
#define T4A_KERNEL_INFO_INIT                                                   \
  { sizeof(t4a_kernel_info), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * @brief Describes a kernel.
 * @param[in]     kernel the kernel.
 * @param[in,out] info   set `info->struct_size` (#T4A_KERNEL_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `info`, struct_size below 4);
 *         #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_info_get(t4a_kernel kernel,
                                       t4a_kernel_info *info);

/**
 * @brief One parameter's offset and size in the kernel's parameter block.
 * @param[in]  kernel the kernel.
 * @param[in]  index  0 .. param_count-1.
 * @param[out] offset byte offset (may be NULL).
 * @param[out] size   byte size (may be NULL).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (index out of range);
 *         #T4A_ERROR_UNSUPPORTED (the driver does not report parameters;
 *         checked before `index`, so it wins over an index out of range).
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_param(t4a_kernel kernel, uint32_t index,
                                    uint64_t *offset, uint64_t *size);

/**
 * @brief Blocks of `block_size` threads that fit on one multiprocessor.
 * @param[in]  kernel         the kernel.
 * @param[in]  block_size     threads per block, at least 1.
 * @param[in]  dynamic_shared dynamic shared bytes per block.
 * @param[out] blocks_per_sm  active blocks per multiprocessor.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_occupancy(t4a_kernel kernel, int32_t block_size,
                                        uint64_t dynamic_shared,
                                        int32_t *blocks_per_sm);

/**
 * @brief The block size with the highest occupancy.
 * @param[in]  kernel         the kernel.
 * @param[in]  dynamic_shared dynamic shared bytes per block.
 * @param[out] block_size     the suggested threads per block.
 * @param[out] min_grid_size  blocks needed to fill the device (may be NULL).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_kernel_suggest_block_size(t4a_kernel kernel,
                                                 uint64_t dynamic_shared,
                                                 int32_t *block_size,
                                                 int32_t *min_grid_size);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Launch                                                             */
/* ------------------------------------------------------------------------ */
/** @{ */
/** ::t4a_arg::kind: a buffer plus byte offset, passed as a device pointer. */
#define T4A_ARG_BUFFER 1u
/** ::t4a_arg::kind: scalar bytes (`value`, `size`), copied at launch. */
#define T4A_ARG_SCALAR 2u
/** ::t4a_arg::kind: a raw device pointer, passed unchecked. */
#define T4A_ARG_DEVICE_POINTER 3u

/** The most parameter bytes a kernel launch may pass (CUDA 12.1 and newer
 *  on Volta and newer devices). */
#define T4A_MAX_PARAM_BYTES 32764u

/** @brief One kernel argument. Its layout is frozen: new kinds of argument
 *  get new `kind` values, never new fields. */
typedef struct t4a_arg {
  uint32_t kind;      /**< #T4A_ARG_BUFFER, #T4A_ARG_SCALAR or
                           #T4A_ARG_DEVICE_POINTER. */
  uint32_t reserved0; /**< zero. */
  t4a_buffer buffer;  /**< #T4A_ARG_BUFFER: a buffer of the runtime. */
  /** #T4A_ARG_BUFFER: byte offset into the buffer (below its size). */
  uint64_t offset;
  /** #T4A_ARG_SCALAR: the bytes; read during t4a_launch() only. */
  const void *value;
  /** #T4A_ARG_SCALAR: their count, which must equal the parameter's size
   *  where the driver reports it. Only the size is compared: the driver
   *  reports no types, so a `float` for an `int` parameter, or an 8-byte
   *  scalar for a pointer, passes unnoticed (see t4a_launch()). */
  uint64_t size;
  /** #T4A_ARG_DEVICE_POINTER: the pointer, passed as is. */
  uint64_t device_pointer;
} t4a_arg;

/** Initializer for ::t4a_arg (kind 0: not an argument yet). */
#define T4A_ARG_INIT                                                           \
  { 0, 0, {0}, 0, NULL, 0, 0 }

/** @brief What t4a_launch() launches. */
typedef struct t4a_launch_desc {
  uint32_t struct_size; /**< in: sizeof(t4a_launch_desc) of the caller. */
  /** zero, or (experimental section) `T4A_LAUNCH_COOPERATIVE`. */
  uint32_t flags;
  t4a_kernel kernel; /**< the kernel, of the launching runtime. */
  /** blocks in x, y, z. `grid[0]` has no default: 0 is rejected
   *  (#T4A_ERROR_INVALID_ARGUMENT naming `grid[0]`), as a grid computed as
   *  `n / block` for a small `n` is a bug. `grid[1]` and `grid[2]`: 0 (the
   *  default) means 1. */
  uint32_t grid[3];
  /** threads per block in x, y, z; as `grid`: `block[0]` must be at least
   *  1, and 0 in `block[1]` or `block[2]` (the default) means 1. */
  uint32_t block[3];
  /** dynamic shared memory per block; above 48 KiB the kernel's limit is
   *  raised automatically up to the device's opt-in maximum. */
  uint32_t dynamic_shared_bytes;
  uint32_t arg_count;  /**< entries of `args`. */
  const t4a_arg *args; /**< the arguments, in parameter order. */
} t4a_launch_desc;

/** Initializer for ::t4a_launch_desc: `struct_size` and zero bytes; set
 *  `kernel`, `grid[0]`, `block[0]` (and the arguments) before launching. */
#define T4A_LAUNCH_DESC_INIT                                                   \
  { sizeof(t4a_launch_desc), 0, {0}, {0, 0, 0}, {0, 0, 0}, 0, 0, NULL }

/**
 * @brief Launches a kernel on the runtime's stream.
 *
 * Everything is validated before anything is enqueued, and each rejection
 * names the field or argument index and the values: handles; a kernel or
 * buffer of another runtime (#T4A_ERROR_WRONG_RUNTIME); a zero `grid[0]`
 * or `block[0]` (a zero `y` or `z` means 1);
 * a block above the kernel's or the device's limits; a grid above the
 * device's; shared memory above the device's opt-in maximum; argument count
 * and scalar sizes differing from the kernel's parameters where the driver
 * reports them (a scalar of the wrong size is never passed); buffer offsets
 * at or past the buffer's end; empty buffers; parameter bytes above
 * #T4A_MAX_PARAM_BYTES. A rejected launch enqueues nothing and counts
 * nothing.
 *
 * The argument check compares sizes only. The driver reports each
 * parameter's offset and size (`cuFuncGetParamInfo`), not its type, so an
 * argument of the right size and the wrong type is passed as given: a
 * `float` for an `int`, a scalar of 8 bytes or a device pointer for a
 * pointer parameter, a buffer for an 8-byte scalar such as a `double`.
 * Where the driver reports no parameters (::t4a_kernel_info::param_count
 * is #T4A_PARAMS_UNKNOWN) not even count and sizes are checked: the
 * arguments are laid out in order, each at its natural alignment (the
 * largest power of two dividing its size, at most 8; 8 for buffers and
 * device pointers), which matches the kernel only if the caller's list
 * does.
 *
 * The launch keeps the kernel's module loaded until its work is complete
 * (through the runtime's open completion epoch, which holds at most 256
 * modules and is sealed by one event when full: at most one event per 256
 * launches, none while launches alternate among up to 8 modules) and,
 * once warm and up to 32 arguments, allocates no heap memory. No context
 * need be current on the calling thread.
 *
 * A launch waits on the host only as back-pressure: when it seals a full
 * open epoch while 64 sealed epochs are still unfinished on the device
 * (the host is that far ahead of the device), it first waits with
 * `cuEventSynchronize` for the oldest of them to complete, counted in
 * ::t4a_runtime_stats::host_waits. Otherwise it adds no host wait: a seal
 * with more than 4 unfinished sealed epochs only queries them
 * (`cuEventQuery`) and retires those that completed.
 *
 * @param[in] runtime the runtime whose stream runs the kernel.
 * @param[in] desc    the launch (#T4A_LAUNCH_DESC_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_WRONG_RUNTIME;
 *         #T4A_ERROR_VERSION_MISMATCH; #T4A_ERROR_DRIVER (the driver
 *         rejected the launch, or sealing the full completion epoch failed
 *         and nothing was enqueued; the CUresult is in the last error);
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY (nothing was enqueued);
 *         #T4A_ERROR_DEVICE_FAULT (sticky; the runtime is broken).
 * Thread-safe; admitted.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_launch(t4a_runtime runtime, const t4a_launch_desc *desc);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Completions                                                        */
/* ------------------------------------------------------------------------ */
/** @{ */
/**
 * @brief Records a completion: the point the runtime's stream has reached.
 *
 * Records an event after all work enqueued so far; the runtime's open
 * completion epoch is sealed first, so that what it keeps alive can retire
 * once that work is done. Counted in ::t4a_runtime_stats::events_recorded
 * and ::t4a_runtime_stats::completions_recorded.
 * @param[in]  runtime    the runtime.
 * @param[out] completion a new completion; release with
 *                        t4a_completion_release().
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER. Never blocks.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_record(t4a_runtime runtime,
                                      t4a_completion *completion);

/**
 * @brief Whether the work before a completion is done, without waiting.
 *
 * A completion once observed complete stays complete, even if its context
 * later faults.
 * @param[in] completion the completion.
 * @return #T4A_SUCCESS (done); #T4A_NOT_READY; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_completion_poll(t4a_completion completion);

/**
 * @brief Waits on the host until the work before a completion is done.
 *
 * Counted in ::t4a_runtime_stats::host_waits of the recording runtime
 * unless the completion was already observed complete.
 * @param[in] completion the completion.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER. Blocks.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_completion_wait(t4a_completion completion);

/**
 * @brief Makes a runtime's later work wait for a completion.
 *
 * `cuStreamWaitEvent` on the runtime's stream: no host wait. The completion
 * may come from any runtime, on any device.
 * @param[in] runtime    the runtime whose stream waits.
 * @param[in] completion the completion to wait for.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_wait(t4a_runtime runtime,
                                    t4a_completion completion);

/**
 * @brief Adds a reference to a completion.
 * @param[in] completion the completion.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_completion_retain(t4a_completion completion);

/**
 * @brief Drops a reference to a completion.
 * @param[in] completion the completion; the null handle is a successful
 *                       no-op.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_completion_release(t4a_completion completion);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Raw seam (vendor libraries)                                        */
/* ------------------------------------------------------------------------ */
/** @{ */
/** @brief What a raw scope hands out (t4a_raw_begin()).
 *
 * Borrowed for the scope: the context and stream are the runtime's own; do
 * not destroy them, and do not use them after t4a_raw_end() except through
 * the runtime. */
typedef struct t4a_raw_info {
  uint32_t struct_size;   /**< in: sizeof(t4a_raw_info) of the caller. */
  int32_t device_ordinal; /**< out: the runtime's device (its `CUdevice`). */
  /** out: the `CUcontext` (the device's primary context), current on the
   *  calling thread for the whole scope. */
  void *context;
  /** out: the runtime's `CUstream`: enqueue the raw work here. */
  void *stream;
} t4a_raw_info;

/** Initializer for ::t4a_raw_info. */
#define T4A_RAW_INFO_INIT                                                      \
  { sizeof(t4a_raw_info), 0, NULL, NULL }

/**
 * @brief Opens a raw scope: the runtime's context and stream for direct
 *        driver or vendor-library calls (cuBLAS, cuFFT, NCCL).
 *
 * Takes the runtime's admission and holds it until t4a_raw_end(), so the
 * raw work is ordered with the runtime's own work: the runtime's other
 * operations wait (on other threads) meanwhile. Makes the runtime's context
 * current on the calling thread; t4a_raw_end() makes the context current
 * at this call current again.
 *
 * Inside the scope, calls on the same runtime from the same thread that
 * would be admitted (transfers, fills, copies, launches, records, waits,
 * synchronize, t4a_runtime_wait_stream(), t4a_runtime_signal_stream(), a
 * second t4a_raw_begin(), t4a_runtime_destroy()) return
 * #T4A_ERROR_REENTRANT and do nothing; allocation, release, retain, info
 * and stats getters are not admitted and work. Other runtimes work: scopes
 * of different runtimes nest on one thread (NCCL over several runtimes)
 * and end in the reverse order of their begin.
 *
 * A scope belongs to the thread that began it: only that thread registers
 * buffers and ends it. A scope that is never ended keeps the runtime's
 * admission: its other operations, t4a_runtime_destroy() on other threads
 * included, wait for the end. A thread that exits (other than by the
 * process's exit) with scopes open has them ended at its exit, last first,
 * as t4a_raw_end() would, with a #T4A_LOG_WARN message.
 *
 * @param[in]     runtime the runtime.
 * @param[out]    scope   the open scope; end it with t4a_raw_end().
 * @param[in,out] info    set `info->struct_size` (#T4A_RAW_INFO_INIT);
 *                        filled up to that size.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (also once
 *         t4a_runtime_destroy() began); #T4A_ERROR_INVALID_ARGUMENT (NULL
 *         `scope` or `info`, `info->struct_size` below 4);
 *         #T4A_ERROR_REENTRANT (this thread already holds a scope of this
 *         runtime, or is inside one of its operations);
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER (the context could
 *         not be made current: nothing held, nothing changed). Blocks
 *         while another thread's operation or scope holds the runtime.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_raw_begin(t4a_runtime runtime, t4a_raw_scope *scope,
                                 t4a_raw_info *info);

/**
 * @brief Registers a buffer of the scope's runtime for raw work and gives
 *        its device pointer.
 *
 * The buffer is kept alive until the raw work enqueued on the scope's
 * stream before t4a_raw_end() has completed (by the runtime's completion
 * epoch), so releasing it right after t4a_raw_end() is safe. The pointer
 * must not be used after t4a_raw_end(): later work goes through the
 * runtime or a new scope. Registering a buffer twice is allowed.
 * Only on the thread that began the scope.
 *
 * @param[in]  scope          the open scope.
 * @param[in]  buffer         a buffer of the scope's runtime, not empty.
 * @param[out] device_pointer its `CUdeviceptr`.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (`scope` ended or not a
 *         scope, `buffer`); #T4A_ERROR_INVALID_ARGUMENT (NULL
 *         `device_pointer`, an empty buffer, another thread than the one
 *         that began the scope: the message names both);
 *         #T4A_ERROR_WRONG_RUNTIME (a buffer of another runtime);
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY. Never blocks.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_raw_buffer(t4a_raw_scope scope, t4a_buffer buffer,
                                  uint64_t *device_pointer);

/**
 * @brief Ends a raw scope: restores the caller's context and releases the
 *        runtime's admission.
 *
 * The registered buffers are kept by the runtime's open completion epoch
 * (sealed later by an event recorded after the raw work), the context that
 * was current at t4a_raw_begin() is made current again, admission is
 * released and the handle becomes stale. All of that happens also when a
 * step fails; the first failure is returned. Work for other streams must
 * be joined into the scope's stream before this call (registered buffers
 * are kept for the scope's stream's work).
 *
 * Refused, with nothing changed (the scope stays open): on another thread
 * than the one that began it (#T4A_ERROR_INVALID_ARGUMENT naming both), or
 * while a scope begun later on this thread is still open (scopes end in
 * LIFO order; #T4A_ERROR_INVALID_ARGUMENT naming it).
 *
 * @param[in] scope the open scope.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE (ended already, forged);
 *         #T4A_ERROR_INVALID_ARGUMENT (see above); #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER (the caller's context could not be restored,
 *         or the keep failed and the stream was waited for instead; the
 *         scope is ended nevertheless); #T4A_ERROR_OUT_OF_HOST_MEMORY
 *         (likewise). Blocks only when the keep fails.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_raw_end(t4a_raw_scope scope);

/**
 * @brief Makes the runtime's later work wait for the work enqueued so far
 *        on a stream it does not own.
 *
 * Records an event of the runtime's pool on `stream`, and
 * `cuStreamWaitEvent` on the runtime's stream: no host wait. `stream` must
 * belong to the runtime's context (the device's primary context, which the
 * CUDA runtime API's streams of that device use); NULL is that context's
 * legacy default stream. Counted in ::t4a_runtime_stats::events_recorded.
 *
 * @param[in] runtime the runtime whose stream waits.
 * @param[in] stream  a `CUstream` of the runtime's context, alive for the
 *                    call.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (a stream of another context: the
 *         message names both contexts); #T4A_ERROR_REENTRANT (inside a raw
 *         scope of this runtime on this thread); #T4A_ERROR_DEVICE_FAULT;
 *         #T4A_ERROR_DRIVER. Never blocks on the device.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_wait_stream(t4a_runtime runtime, void *stream);

/**
 * @brief Makes a stream the runtime does not own wait for the runtime's
 *        work enqueued so far.
 *
 * Records an event on the runtime's stream, and `cuStreamWaitEvent` on
 * `stream`: no host wait. `stream` may belong to any context, on any
 * device (cuStreamWaitEvent accepts an event of another context). Counted
 * in ::t4a_runtime_stats::events_recorded.
 *
 * @param[in] runtime the runtime whose work is waited for.
 * @param[in] stream  a `CUstream`, alive for the call (NULL: the legacy
 *                    default stream of the runtime's context).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_REENTRANT
 *         (inside a raw scope of this runtime on this thread);
 *         #T4A_ERROR_DEVICE_FAULT; #T4A_ERROR_DRIVER. Never blocks on the
 *         device.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_runtime_signal_stream(t4a_runtime runtime, void *stream);
/** @} */

/* ------------------------------------------------------------------------ */
/** @name Process-wide counters                                              */
/* ------------------------------------------------------------------------ */
/** @{ */
/** @brief What the process has leaked on purpose (completion unproven). */
typedef struct t4a_process_stats {
  uint32_t struct_size;     /**< in: sizeof(t4a_process_stats) of the caller. */
  uint32_t reserved0;       /**< zero. */
  uint64_t runtimes_live;   /**< runtimes not yet torn down. */
  uint64_t runtimes_leaked; /**< stream, pool, context leaked. */
  uint64_t leaked_device_allocations; /**< device buffers never freed. */
  uint64_t leaked_device_bytes;       /**< their bytes. */
  uint64_t leaked_staging_bytes;      /**< pinned staging never freed. */
  uint64_t leaked_host_buffers;       /**< host buffers never freed. */
} t4a_process_stats;

/** Initializer for ::t4a_process_stats. */
#define T4A_PROCESS_STATS_INIT                                                 \
  { sizeof(t4a_process_stats), 0, 0, 0, 0, 0, 0, 0 }

/**
 * @brief Reads the process-wide counters. Needs no driver.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_process_stats_get(t4a_process_stats *stats);

/** Bytes of ::t4a_process_fault::operation, including the terminating NUL. */
#define T4A_PROCESS_FAULT_OPERATION_BYTES 256

/**
 * @brief The first device fault of the process.
 *
 * A sticky driver error (an illegal address, a launch failure, ...) breaks
 * the runtime that met it; on current drivers it also poisons every
 * context of the process, on every device and thread, and even a new
 * runtime cannot be created. The first such fault is kept here: the first
 * one wins, later faults (the echoes of the first on other runtimes) do not
 * replace it. Recovery needs a new process.
 */
typedef struct t4a_process_fault {
  uint32_t struct_size;   /**< in: sizeof(t4a_process_fault) of the caller. */
  int32_t has_fault;      /**< out: 1 once a fault was recorded, else 0. */
  int32_t device_ordinal; /**< out: the device of the fault (0 if none). */
  int32_t driver_result;  /**< out: its CUresult (700: illegal address). */
  /** out: the allocation domain (#t4a_runtime_info::domain_id) of the broken
   *  runtime; 0 when the fault was met creating a runtime, or none. */
  uint64_t domain_id;
  /** out: what was being done, with the driver entry point and its result
   *  ("waiting for the stream: cuStreamSynchronize returned
   *  CUDA_ERROR_ILLEGAL_ADDRESS (...)"); NUL-terminated, truncated to fit;
   *  "" if none. */
  char operation[T4A_PROCESS_FAULT_OPERATION_BYTES];
} t4a_process_fault;

/** Initializer for ::t4a_process_fault. */
#define T4A_PROCESS_FAULT_INIT                                                 \
  {                                                                            \
    sizeof(t4a_process_fault), 0, 0, 0, 0, { 0 }                               \
  }

/**
 * @brief Reads the first device fault of the process, if any.
 *
 * Recorded when a runtime is first broken by a sticky driver error, or when
 * t4a_runtime_create fails with one (#T4A_ERROR_DEVICE_FAULT). Once set it
 * never changes: recovery from a device fault needs a new process.
 * Thread-safe, never blocks on the device, needs no driver.
 *
 * @param[in,out] fault set `fault->struct_size` (#T4A_PROCESS_FAULT_INIT).
 * @return #T4A_SUCCESS (also when there is no fault: `has_fault` is 0);
 *         #T4A_ERROR_INVALID_ARGUMENT if `fault` is NULL or its
 *         struct_size is smaller than 4.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_process_fault_get(t4a_process_fault *fault);
/** @} */

/* ------------------------------------------------------------------------ */
/*  Experimental API: only with T4A_EXPERIMENTAL defined before inclusion.   */
/*  Everything between the #if and its #endif is left out of the ABI gate    */
/*  (abi/gen-layouts lists it for abi/check) and flagged experimental in     */
/*  abi/layouts.json; each declaration is tagged @experimental.              */
/*  It has its own include guard, after the main one: a translation unit    */
/*  that includes this header without T4A_EXPERIMENTAL and then with it     */
/*  gets the experimental declarations the second time.                     */
/* ------------------------------------------------------------------------ */
#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* T4ACUDA_H */

#if defined(T4A_EXPERIMENTAL)
#ifndef T4ACUDA_H_EXPERIMENTAL
/** The experimental section's include guard (its own, after T4ACUDA_H). */
#define T4ACUDA_H_EXPERIMENTAL
#ifdef __cplusplus
extern "C" {
#endif
/** @name Experimental API                                                   */
/** @{ */
/**
 * @brief The revision of the experimental section.
 *
 * Grows whenever a declaration of the experimental section is added,
 * changed or removed, so a program built with `T4A_EXPERIMENTAL` can tell
 * which experimental declarations its header had.
 * @experimental
 */
#define T4A_EXPERIMENTAL_REVISION 4

/**
 * @brief ::t4a_launch_desc::flags: a cooperative launch
 *        (`cuLaunchCooperativeKernel`), whose blocks are all resident at
 *        once so that they may wait for each other (grid barriers,
 *        `cooperative_groups::this_grid().sync()`).
 *
 * Before anything is enqueued the grid's block count is checked against
 * t4a_kernel_max_cooperative_blocks() for the launch's block size and
 * dynamic shared bytes: more blocks is #T4A_ERROR_INVALID_ARGUMENT naming
 * both numbers. A device without cooperative launch support
 * (`CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH` 0), or a driver without
 * `cuLaunchCooperativeKernel`, is #T4A_ERROR_UNSUPPORTED. Counted in
 * ::t4a_runtime_stats::cooperative_launches (and `launches`).
 * @experimental
 */
#define T4A_LAUNCH_COOPERATIVE 0x1u

/** ::t4a_launch_attrs::flags: programmatic dependent launch
 *  (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`): the kernel may
 *  start before the previous kernel on the runtime's stream has finished,
 *  once every block of that kernel called
 *  `cudaTriggerProgrammaticLaunchCompletion()` (or exited); the kernel must
 *  call `cudaGridDependencySynchronize()` before it touches any memory the
 *  previous kernel may use (what it wrote or reads, and buffers released
 *  and allocated again in between). The caller's choice, never a default:
 *  it can shorten chains of small kernels and lengthen a large kernel's
 *  (bench/cluster_rows.cpp measures a chain; docs/performance.md, "Launch
 *  attribute rows"). Needs compute capability 9.0.
 *  @experimental */
#define T4A_LAUNCH_ATTR_PROGRAMMATIC 0x1u
/** ::t4a_launch_attrs::flags: allow a cluster of more than 8 blocks (the
 *  portable maximum): the kernel's
 *  `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED` is set before the
 *  launch, and the cluster must not exceed what
 *  `cuOccupancyMaxPotentialClusterSize` reports for the launch's shape
 *  (16 on an H100 or H200 for blocks that fit). Without it a cluster
 *  above 8 blocks is #T4A_ERROR_INVALID_ARGUMENT. @experimental */
#define T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE 0x2u

/**
 * @brief Launch attributes of t4a_launch_ex() (Hopper and later).
 *
 * Zero bytes are "no attribute". Validated with the rest of the descriptor
 * before anything is enqueued, each rejection naming the field and the
 * values: a cluster extent that does not divide the grid's; a cluster of
 * more blocks than allowed (8, or with
 * #T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE what the device reports for the
 * shape); cluster dimensions that differ from the kernel's compiled
 * `__cluster_dims__`; a kernel that must be launched with a cluster
 * launched without one; either attribute with #T4A_LAUNCH_COOPERATIVE
 * (not combined by this version: a cooperative grid's co-residency is
 * checked per block); unknown flags; a non-zero reserved field. A device
 * below compute capability 9.0, a device without cluster launch
 * (`CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH`), or a driver without
 * `cuLaunchKernelEx` is #T4A_ERROR_UNSUPPORTED naming what it has and what
 * is needed. A launch with attributes goes through `cuLaunchKernelEx`;
 * graph capture keeps the attributes in the captured kernel node. Zero
 * bytes (or NULL) launch exactly as t4a_launch().
 *
 * A kernel compiled with `__cluster_dims__` needs no attribute: t4a_launch()
 * checks that its grid is a multiple of the compiled dimensions and launches
 * it as it is.
 * @experimental
 */
typedef struct t4a_launch_attrs {
  uint32_t struct_size; /**< in: sizeof(t4a_launch_attrs) of the caller. */
  /** 0, #T4A_LAUNCH_ATTR_PROGRAMMATIC or
   *  #T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE (bits). */
  uint32_t flags;
  /** blocks per cluster in x, y, z (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`);
   *  all 0 (the default): no cluster, or the kernel's compiled
   *  `__cluster_dims__`. When `cluster[0]` is set, 0 in `cluster[1]` or
   *  `cluster[2]` means 1; `cluster[0]` 0 with another axis set is refused.
   *  Each axis must divide the grid's. */
  uint32_t cluster[3];
  uint32_t reserved0; /**< zero. */
} t4a_launch_attrs;

/** Initializer for ::t4a_launch_attrs (no attribute). @experimental */
#define T4A_LAUNCH_ATTRS_INIT                                                  \
  { sizeof(t4a_launch_attrs), 0, {0, 0, 0}, 0 }

/** @brief Cluster occupancy of a launch shape
 *  (t4a_kernel_cluster_occupancy()). @experimental */
typedef struct t4a_cluster_occupancy {
  uint32_t struct_size; /**< in: sizeof(t4a_cluster_occupancy) of the caller. */
  /** out: clusters of the descriptor's cluster shape that can be resident
   *  on the device at once (`cuOccupancyMaxActiveClusters`; 0 when not even
   *  one fits). */
  int32_t max_active_clusters;
  /** out: the largest cluster (in blocks) of the descriptor's block size
   *  and shared memory that can be launched
   *  (`cuOccupancyMaxPotentialClusterSize`): at most 8 unless the
   *  `attrs` have #T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE. */
  int32_t max_cluster_size;
  uint32_t reserved0; /**< out: zero. */
} t4a_cluster_occupancy;

/** Initializer for ::t4a_cluster_occupancy. @experimental */
#define T4A_CLUSTER_OCCUPANCY_INIT                                             \
  { sizeof(t4a_cluster_occupancy), 0, 0, 0 }

/**
 * @brief The cluster occupancy of a launch: how many clusters of its
 *        cluster shape fit on the device at once, and the largest cluster
 *        its block size and shared memory allow.
 *
 * `desc` and `attrs` are read as t4a_launch_ex() reads them (the kernel,
 * grid, block, dynamic shared bytes and attributes; the arguments are not
 * read) and checked as it checks the shape and attributes, so a shape this
 * accepts launches. The cluster is the attrs' or, when they name none, the
 * kernel's compiled `__cluster_dims__`; with neither,
 * `max_active_clusters` is that of single-block clusters. Above 48 KiB of
 * dynamic shared memory the kernel's limit is raised first, as
 * t4a_launch() does; with #T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE the
 * kernel's non-portable attribute is set first.
 * @param[in]     desc  the launch shape (#T4A_LAUNCH_DESC_INIT).
 * @param[in]     attrs its attributes (#T4A_LAUNCH_ATTRS_INIT), or NULL.
 * @param[in,out] out   set `out->struct_size` (#T4A_CLUSTER_OCCUPANCY_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_VERSION_MISMATCH;
 *         #T4A_ERROR_UNSUPPORTED (device below 9.0, no cluster launch, or
 *         a driver without the occupancy entry points); #T4A_ERROR_DRIVER;
 *         #T4A_ERROR_DEVICE_FAULT.
 * Thread-safe; admitted.
 * @experimental
 */
T4A_API t4a_status t4a_kernel_cluster_occupancy(const t4a_launch_desc *desc,
                                                const t4a_launch_attrs *attrs,
                                                t4a_cluster_occupancy *out);

/**
 * @brief t4a_launch() with launch attributes: thread block clusters,
 *        programmatic dependent launch (::t4a_launch_attrs).
 *
 * Everything t4a_launch() checks is checked, then the attributes (see
 * ::t4a_launch_attrs), all before anything is enqueued; a rejected launch
 * enqueues nothing and counts nothing. With attributes the kernel is
 * launched by `cuLaunchKernelEx`; NULL or zero attributes launch exactly as
 * t4a_launch() (which is this with NULL). The launch keeps its module and
 * buffers alive as t4a_launch() does; graph capture records the attributes
 * in the kernel node (a captured programmatic chain keeps its programmatic
 * edges on replay).
 * @param[in] runtime the runtime whose stream runs the kernel.
 * @param[in] desc    the launch (#T4A_LAUNCH_DESC_INIT).
 * @param[in] attrs   its attributes (#T4A_LAUNCH_ATTRS_INIT), or NULL.
 * @return as t4a_launch(); #T4A_ERROR_UNSUPPORTED (an attribute the device
 *         or driver lacks, naming what it has and what is needed).
 * Thread-safe; admitted.
 * @experimental
 */
T4A_API t4a_status t4a_launch_ex(t4a_runtime runtime,
                                 const t4a_launch_desc *desc,
                                 const t4a_launch_attrs *attrs);

/**
 * @brief The most blocks a cooperative launch of `kernel` may have: blocks
 *        per multiprocessor at `block_size` threads and `dynamic_shared`
 *        bytes (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) times the
 *        device's multiprocessors.
 *
 * The occupancy answer is cached per kernel for the last (block size,
 * shared bytes) pair, which cooperative launches share. Above 48 KiB (and
 * within the device's opt-in maximum) the kernel's dynamic-shared limit is
 * raised first, as t4a_launch() does.
 * @param[in]  kernel         the kernel.
 * @param[in]  block_size     threads per block (at least 1).
 * @param[in]  dynamic_shared dynamic shared memory per block.
 * @param[out] max_blocks     the maximum (0 when not even one block fits).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT; #T4A_ERROR_UNSUPPORTED (no
 *         cooperative launch on the device); #T4A_ERROR_DRIVER;
 *         #T4A_ERROR_DEVICE_FAULT.
 * @experimental
 */
T4A_API t4a_status t4a_kernel_max_cooperative_blocks(t4a_kernel kernel,
                                                     int32_t block_size,
                                                     uint64_t dynamic_shared,
                                                     int32_t *max_blocks);

/** ::t4a_barrier_desc::flags: the expected value is `expected_value`
 *  times the launch's block count (an arrival counter that every block
 *  increments `expected_value` times). @experimental */
#define T4A_BARRIER_EXPECT_PER_BLOCK 0x1u
/** ::t4a_barrier_desc::flags: a counter at or below the expected value
 *  passes the audit (a grid-uniform early exit skips later barriers);
 *  only a counter above it fails. @experimental */
#define T4A_BARRIER_EXPECT_AT_MOST 0x2u

/** @brief A grid-barrier counter: a `__device__` global of the kernel's
 *  module that the kernel's blocks use to wait for each other.
 *  @experimental */
typedef struct t4a_barrier_desc {
  uint32_t struct_size; /**< in: sizeof(t4a_barrier_desc) of the caller. */
  /** the counter's bytes: 4 or 8 (0, the default, means 4); the global's
   *  size must equal it. */
  uint32_t width;
  /** the global's name in the module (`extern "C"` or its lowered name). */
  const char *global_name;
  /** written to the counter on the stream before every launch (default
   *  0); must fit in `width`. */
  uint64_t reset_value;
  /** the counter's value after a completed launch (default 0, a counter
   *  that every barrier returns to 0); must fit in `width`. */
  uint64_t expected_value;
  /** 0, #T4A_BARRIER_EXPECT_PER_BLOCK, #T4A_BARRIER_EXPECT_AT_MOST. */
  uint32_t flags;
  uint32_t reserved0; /**< zero. */
} t4a_barrier_desc;

/** Initializer for ::t4a_barrier_desc (set `global_name`). @experimental */
#define T4A_BARRIER_DESC_INIT                                                  \
  { sizeof(t4a_barrier_desc), 0, NULL, 0, 0, 0, 0 }

/**
 * @brief Declares a grid-barrier counter of `kernel`.
 *
 * From then on every launch of this kernel object (cooperative or not)
 * resets the counter on the runtime's stream before the kernel
 * (`cuMemsetD32Async`) and copies it after the kernel into a pinned audit
 * slot (`cuMemcpyDtoHAsync`). Once the launch's completion is proven (the
 * runtime synchronized, or the open completion epoch that kept the launch
 * retired) the next launch of the kernel or t4a_kernel_barrier_audit()
 * compares the slot with the expected value; a counter not at it is
 * logged as an error, counted in
 * ::t4a_runtime_stats::barrier_audit_failures and reported by
 * t4a_kernel_barrier_audit(). The next launch starts from the reset value
 * regardless. A module belongs to one runtime, whose one stream orders
 * every launch, so launches sharing a counter never overlap. A launch
 * captured into a graph (t4a_capture_begin()) captures the resets before
 * the kernel, so every replay starts clean; captured launches are not
 * audited.
 * @param[in]  kernel the kernel.
 * @param[in]  desc   the counter (#T4A_BARRIER_DESC_INIT).
 * @param[out] index  the barrier's index for t4a_kernel_barrier_audit()
 *                    (0 for the first declared); may be NULL.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL or empty name, no global of
 *         that name, a size other than `width`, a misaligned global, a bad
 *         width, unknown flags, a value too wide, the same global twice,
 *         more than 8 barriers); #T4A_ERROR_VERSION_MISMATCH;
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY; #T4A_ERROR_DRIVER;
 *         #T4A_ERROR_DEVICE_FAULT. Thread-safe; admitted.
 * @experimental
 */
T4A_API t4a_status t4a_kernel_declare_barrier(t4a_kernel kernel,
                                              const t4a_barrier_desc *desc,
                                              uint32_t *index);

/** @brief What the audits of one barrier found. @experimental */
typedef struct t4a_barrier_audit {
  uint32_t struct_size; /**< in: sizeof(t4a_barrier_audit) of the caller. */
  uint32_t reserved0;   /**< zero. */
  uint64_t launches;    /**< launches that reset and audited the counter. */
  uint64_t audited;     /**< audits compared (completion proven). */
  uint64_t pending;     /**< audits still waiting for completion proof. */
  uint64_t failures;    /**< audits that found a wrong value. */
  /** the last wrong value found, the value expected then, and the launch
   *  (1 = the first launch that used the barrier); 0 without failures. */
  uint64_t last_bad_value;
  uint64_t last_bad_expected; /**< see `last_bad_value`. */
  uint64_t last_bad_launch;   /**< see `last_bad_value`. */
} t4a_barrier_audit;

/** Initializer for ::t4a_barrier_audit. @experimental */
#define T4A_BARRIER_AUDIT_INIT                                                 \
  { sizeof(t4a_barrier_audit), 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * @brief Compares every audit of barrier `index` whose launch is proven
 *        complete, and reports the totals.
 *
 * Never waits: synchronize the runtime first to have every launch before
 * it audited (`pending` is then 0).
 * @param[in]     kernel the kernel.
 * @param[in]     index  the barrier (t4a_kernel_declare_barrier()).
 * @param[in,out] audit  set `audit->struct_size` (#T4A_BARRIER_AUDIT_INIT).
 * @return #T4A_SUCCESS (also when audits failed: see `failures`);
 *         #T4A_ERROR_INVALID_HANDLE; #T4A_ERROR_INVALID_ARGUMENT (no
 *         barrier `index`); #T4A_ERROR_DEVICE_FAULT. Thread-safe; admitted.
 * @experimental
 */
T4A_API t4a_status t4a_kernel_barrier_audit(t4a_kernel kernel, uint32_t index,
                                            t4a_barrier_audit *audit);
/** @brief A captured, instantiated CUDA graph of one runtime; reference
 *  counted. It keeps every buffer, module and host buffer its work uses
 *  alive until it is released and its last replay has completed.
 *  @experimental */
typedef struct t4a_graph {
  uint64_t id; /**< generation-tagged id; #T4A_NULL_ID is the null handle. */
} t4a_graph;

/** @brief How a capture restricts other threads (CUDA's capture modes).
 *  @experimental */
typedef enum t4a_capture_mode {
  /** the default: while the capture lasts, no thread of the process may
   *  make a potentially unsafe CUDA call outside the library (the library
   *  relaxes its own internal calls). */
  T4A_CAPTURE_GLOBAL = 0,
  /** only the capturing thread is restricted. */
  T4A_CAPTURE_THREAD_LOCAL = 1,
  /** nothing is restricted (the caller's own CUDA calls included). */
  T4A_CAPTURE_RELAXED = 2
} t4a_capture_mode;

/** @brief Options of t4a_capture_begin(); zero bytes are the defaults.
 *  @experimental */
typedef struct t4a_capture_options {
  uint32_t struct_size; /**< in: sizeof(t4a_capture_options) of the caller. */
  int32_t mode;         /**< in: a ::t4a_capture_mode; 0: global. */
} t4a_capture_options;

/** Initializer for ::t4a_capture_options (the defaults). @experimental */
#define T4A_CAPTURE_OPTIONS_INIT                                               \
  { sizeof(t4a_capture_options), 0 }

/** @brief What a graph holds (t4a_graph_info_get()). @experimental */
typedef struct t4a_graph_info {
  uint32_t struct_size;  /**< in: sizeof(t4a_graph_info) of the caller. */
  uint32_t reserved0;    /**< zero. */
  uint64_t node_count;   /**< out: nodes of the captured graph. */
  uint64_t kept_objects; /**< out: objects the graph keeps alive. */
  uint64_t launches;     /**< out: t4a_graph_launch() calls that enqueued. */
} t4a_graph_info;

/** Initializer for ::t4a_graph_info. @experimental */
#define T4A_GRAPH_INFO_INIT                                                    \
  { sizeof(t4a_graph_info), 0, 0, 0, 0 }

/**
 * @brief Starts capturing the runtime's stream into a graph.
 *
 * The open completion epoch is sealed first (outside the capture), then
 * `cuStreamBeginCapture` puts the stream in capture mode. Until
 * t4a_capture_end(), launches, t4a_buffer_fill(), t4a_buffer_copy() between
 * buffers of this runtime and host-buffer transfers
 * (t4a_buffer_upload_host(), t4a_buffer_download_host()) are captured, not
 * run; every other operation on the runtime that would enqueue or wait
 * (allocations, pageable transfers, pending downloads, synchronize, trim,
 * completions, module loads, raw scopes, peer access, copies with other
 * runtimes, graph launches, destroy) returns #T4A_ERROR_CAPTURING and
 * enqueues nothing. Releasing a buffer during the capture defers its free
 * to the capture's end.
 *
 * @param[in] runtime the runtime.
 * @param[in] options NULL or zero bytes for the defaults.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (an unknown mode);
 *         #T4A_ERROR_CAPTURING (already capturing, or the driver refused:
 *         the message says why); #T4A_ERROR_UNSUPPORTED (a driver without
 *         stream capture); a driver error.
 * @experimental
 */
T4A_API t4a_status t4a_capture_begin(t4a_runtime runtime,
                                     const t4a_capture_options *options);

/**
 * @brief Ends the runtime's capture and instantiates the graph.
 *
 * On success `*graph` is a new handle (release it with
 * t4a_graph_release()). On any failure the capture is over unless the
 * message says it is not (ended from a thread other than the one that
 * began a global or thread-local capture): the captured work never runs,
 * buffer frees deferred by the capture run, and the runtime stays usable.
 * A capture the driver invalidated (an unsafe call elsewhere in the
 * process, a rule of stream capture broken) ends with #T4A_ERROR_CAPTURING.
 *
 * @param[in]  runtime the capturing runtime.
 * @param[out] graph   the new graph (written only on success).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `graph`);
 *         #T4A_ERROR_CAPTURING (not capturing; invalidated);
 *         a driver error (instantiation).
 * @experimental
 */
T4A_API t4a_status t4a_capture_end(t4a_runtime runtime, t4a_graph *graph);

/**
 * @brief Replays a graph on its runtime's stream (`cuGraphLaunch`).
 *
 * The graph is kept alive by the runtime's open completion epoch (a replay
 * right after another adds nothing and records no event), so it and
 * everything it keeps outlive the replay even if released at once.
 *
 * @param[in] runtime the runtime the graph was captured on.
 * @param[in] graph   the graph.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME (the graph was captured on another
 *         runtime); #T4A_ERROR_CAPTURING (the runtime is capturing);
 *         #T4A_ERROR_DEVICE_FAULT; a driver error.
 * @experimental
 */
T4A_API t4a_status t4a_graph_launch(t4a_runtime runtime, t4a_graph graph);

/** @brief Adds a handle reference to a graph.
 *  @param[in] graph the graph.
 *  @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE. @experimental */
T4A_API t4a_status t4a_graph_retain(t4a_graph graph);

/** @brief Drops a handle reference; the graph (its executable graph and what
 *  it keeps) is destroyed once no handle holds it and its last replay has
 *  completed. The null handle is a no-op.
 *  @param[in] graph the graph.
 *  @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE. @experimental */
T4A_API t4a_status t4a_graph_release(t4a_graph graph);

/**
 * @brief Reads what a graph holds.
 * @param[in]     graph the graph.
 * @param[in,out] info set `info->struct_size` (#T4A_GRAPH_INFO_INIT).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_INVALID_ARGUMENT (NULL `info`, struct_size below 4).
 * @experimental
 */
T4A_API t4a_status t4a_graph_info_get(t4a_graph graph, t4a_graph_info *info);
/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* T4ACUDA_H_EXPERIMENTAL */
#endif /* T4A_EXPERIMENTAL */
