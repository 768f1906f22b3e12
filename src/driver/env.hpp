// Environment variables: the one place the library reads them. Every
// variable is in T4A_ENV_VARIABLES below, and every one is documented in
// the table of docs/environment.md (what it chooses, its accepted values,
// its default); a variable outside the list cannot be read.
//
// Here in src/driver/, the lowest layer, because the driver layer reads
// some (the libcuda and libnvrtc to load) and every layer may use it.
//
// Reading: secure_getenv for every variable, so a set-user-ID or
// set-group-ID process ignores them all (several choose code to load).
// Parsing: strict and pure (no logging here: the driver layer has no
// logger). A set value that is not accepted yields a message that names
// the variable, shows the value (quoted, at most 64 bytes, other than
// printable ASCII as \xNN) and says what is used instead; the caller logs
// it.
//   byte counts (T4A_CACHE_MAX_BYTES): one or more decimal digits and
//     nothing else, at most 2^64 - 1; no sign, blank, suffix or base
//     prefix. Empty, negative, trailing garbage and overflow are refused.
//   choices (T4A_LOG): exactly one of the accepted names, case-sensitive;
//     empty or anything else is refused.
//   lists (T4A_TRANSFER_FORCE): parsed by their owner
//     (memory/transfer_plan.hpp), reported through rejection() here.
// Paths and directories are taken as given (raw(), text()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace t4a::env {

// Every variable the library reads: X(enumerator, name).
#define T4A_ENV_VARIABLES(X)                                                   \
  X(cuda_driver_path, "T4A_CUDA_DRIVER_PATH")                                  \
  X(nvrtc_path, "T4A_NVRTC_PATH")                                              \
  X(cuda_home, "CUDA_HOME")                                                    \
  X(cuda_path, "CUDA_PATH")                                                    \
  X(cuda_include, "T4A_CUDA_INCLUDE")                                          \
  X(log, "T4A_LOG")                                                            \
  X(cache_dir, "T4A_CACHE_DIR")                                                \
  X(xdg_cache_home, "XDG_CACHE_HOME")                                          \
  X(home, "HOME")                                                              \
  X(cache_max_bytes, "T4A_CACHE_MAX_BYTES")                                    \
  X(transfer_force, "T4A_TRANSFER_FORCE")

enum class Var : uint8_t {
#define T4A_ENV_ENUM(e, n) e,
  T4A_ENV_VARIABLES(T4A_ENV_ENUM)
#undef T4A_ENV_ENUM
};
inline constexpr size_t k_var_count = 0
#define T4A_ENV_COUNT(e, n) +1
    T4A_ENV_VARIABLES(T4A_ENV_COUNT)
#undef T4A_ENV_COUNT
    ;

// The variable's name ("T4A_LOG").
const char *name(Var v);
// The variable called `name`; false when the library reads none of that
// name.
bool find(std::string_view name, Var *out);

// The value (secure_getenv): nullptr when unset, or in a set-user-ID or
// set-group-ID process. Valid until the environment changes.
const char *raw(Var v);
// The value as a string; "" when unset (or empty).
std::string text(Var v);

// Pure parsers. On success *out is the value; on failure *out is left as
// it was and *why says what is wrong ("is empty", "is negative", ...).
bool parse_byte_count(std::string_view text, uint64_t *out, std::string *why);
// `names[0..count)` are the accepted values; *out is the index of the one
// `text` is. `what` names the kind of value ("a log level") for *why,
// which also lists the accepted names.
bool parse_choice(std::string_view text, const char *const *names, size_t count,
                  std::string_view what, size_t *out, std::string *why);

// `value` as a message shows it: in single quotes, at most 64 bytes of it
// (then "..." and its length), bytes other than printable ASCII as \xNN.
std::string quote(std::string_view value);
// The message for a refused value:
// "NAME='value' <why>; ignored, <instead>".
std::string rejection(Var v, std::string_view value, std::string_view why,
                      std::string_view instead);

// A variable's setting: the value parsed, or the fallback when the
// variable is unset or its value is refused (then `error` is the message
// to log, naming the variable, the value and the fallback used).
template <class T> struct Setting {
  T value{};
  bool set = false;  // the variable is set (to anything)
  std::string error; // non-empty: set, refused, `value` is the fallback
};

// A byte count (see above). `instead` says what the fallback is, for the
// message ("the disk cache's bound stays 1073741824 bytes").
Setting<uint64_t> byte_count(Var v, uint64_t fallback,
                             std::string_view instead);
// One of `names` (its index); `what` as for parse_choice.
Setting<size_t> choice(Var v, const char *const *names, size_t count,
                       size_t fallback, std::string_view what,
                       std::string_view instead);

} // namespace t4a::env
