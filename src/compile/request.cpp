#include "compile/request.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/struct_io.hpp"

namespace t4a::compile {

namespace {

using core::fail;

constexpr uint32_t k_known_flags =
    T4A_COMPILE_NO_MEMORY_CACHE | T4A_COMPILE_NO_DISK_CACHE |
    T4A_COMPILE_NO_TOOLKIT_HEADERS | T4A_COMPILE_NO_PCH;

// Copies `count` strings of `array` ("request->field") into *out; rejects
// a NULL array with a count, a NULL or (when `check_text`) empty entry,
// and (when `line_safe`) an entry with a newline or carriage return.
t4a_status read_strings(const char *const *array, uint32_t count,
                        const char *field, const char *count_field,
                        bool line_safe, bool non_empty,
                        std::vector<std::string> *out) {
  out->clear();
  if (count == 0) return T4A_SUCCESS;
  if (array == nullptr)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "request->%s is NULL but request->%s is %u", field, count_field,
                count);
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char *s = array[i];
    if (s == nullptr)
      return fail(T4A_ERROR_INVALID_ARGUMENT, "request->%s[%u] is NULL", field,
                  i);
    size_t n = std::strlen(s);
    if (non_empty && n == 0)
      return fail(T4A_ERROR_INVALID_ARGUMENT, "request->%s[%u] is empty", field,
                  i);
    if (line_safe)
      for (size_t k = 0; k < n; ++k)
        if (s[k] == '\n' || s[k] == '\r')
          return fail(T4A_ERROR_INVALID_ARGUMENT,
                      "request->%s[%u] (\"%.64s\") contains a %s at byte "
                      "%zu; names and options must be one line",
                      field, i, s, s[k] == '\n' ? "newline" : "carriage return",
                      k);
    out->emplace_back(s, n);
  }
  return T4A_SUCCESS;
}

void put_u64(core::Sha256 &h, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  h.update(b, sizeof b);
}

void put_field(core::Sha256 &h, const std::string &s) {
  put_u64(h, s.size());
  h.update(s.data(), s.size());
}

void put_list(core::Sha256 &h, const std::vector<std::string> &v) {
  put_u64(h, v.size());
  for (const std::string &s : v) put_field(h, s);
}

// "sm_90", "sm_90a", "compute_100f" -> 90, 90, 100; 0 if not of that form.
int parse_arch(const std::string &v) {
  size_t p = 0;
  if (v.compare(0, 3, "sm_") == 0)
    p = 3;
  else if (v.compare(0, 8, "compute_") == 0)
    p = 8;
  else
    return 0;
  int n = 0;
  size_t digits = 0;
  for (; p < v.size() && v[p] >= '0' && v[p] <= '9' && digits < 4;
       ++p, ++digits)
    n = n * 10 + (v[p] - '0');
  return digits >= 2 ? n : 0;
}

// read_request: the four string lists of the request.
t4a_status read_lists(const t4a_compile_request &r, Request *q) {
  if (t4a_status s =
          read_strings(r.header_names, r.header_count, "header_names",
                       "header_count", true, true, &q->header_names);
      s != T4A_SUCCESS)
    return s;
  if (t4a_status s =
          read_strings(r.header_sources, r.header_count, "header_sources",
                       "header_count", false, false, &q->header_sources);
      s != T4A_SUCCESS)
    return s;
  if (t4a_status s = read_strings(r.options, r.option_count, "options",
                                  "option_count", true, true, &q->options);
      s != T4A_SUCCESS)
    return s;
  if (t4a_status s = read_strings(r.name_expressions, r.name_expression_count,
                                  "name_expressions", "name_expression_count",
                                  true, true, &q->name_expressions);
      s != T4A_SUCCESS)
    return s;
  if (q->options.empty()) return T4A_SUCCESS;
  // A value-less last option would take the toolkit's include option,
  // which the library appends, as its value.
  static const char *const k_needs_value[] = {"-I",       "--include-path",
                                              "-include", "--pre-include",
                                              "-isystem", "--system-include"};
  const std::string &last = q->options.back();
  for (const char *o : k_needs_value)
    if (last == o)
      return fail(T4A_ERROR_INVALID_ARGUMENT,
                  "request->options[%u] (\"%s\") is the last option and "
                  "has no value (give \"%sDIR\" or the value as the next "
                  "option)",
                  r.option_count - 1, o, o);
  return T4A_SUCCESS;
}

// read_request: without a runtime or an -arch option, cc_major and
// cc_minor name the target.
t4a_status check_target(const t4a_compile_request &r, const Request &q) {
  Target from_options;
  if (q.runtime_id != T4A_NULL_ID ||
      arch_from_options(q.options, r.output, &from_options))
    return T4A_SUCCESS;
  if (r.cc_major == 0)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "no target: request->runtime is the null handle and "
                "request->cc_major is 0 (set cc_major and cc_minor, or "
                "runtime)");
  if (r.cc_major < 1 || r.cc_major > 99)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "request->cc_major is %d; it must be 1..99", r.cc_major);
  if (r.cc_minor < 0 || r.cc_minor > 9)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "request->cc_minor is %d; it must be 0..9", r.cc_minor);
  return T4A_SUCCESS;
}

// read_request: an empty toolkit_include is none; else one checked string.
t4a_status read_toolkit_include(const char *dir, Request *q) {
  if (dir == nullptr || dir[0] == '\0') return T4A_SUCCESS;
  std::vector<std::string> one;
  const char *const dirs[] = {dir};
  if (t4a_status s =
          read_strings(dirs, 1, "toolkit_include", "(one)", true, true, &one);
      s != T4A_SUCCESS)
    return s;
  q->toolkit_include = one[0];
  return T4A_SUCCESS;
}

} // namespace

t4a_status read_request(const t4a_compile_request *in, Request *out) {
  if (in == nullptr) return fail(T4A_ERROR_INVALID_ARGUMENT, "request is NULL");
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  if (t4a_status s = core::read_struct(in, &r, "request"); s != T4A_SUCCESS)
    return s;
  if (r.output != T4A_COMPILE_CUBIN && r.output != T4A_COMPILE_PTX)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "request->output is %u; it must be T4A_COMPILE_CUBIN (0) or "
                "T4A_COMPILE_PTX (1)",
                r.output);
  if ((r.flags & ~k_known_flags) != 0)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "request->flags is 0x%x; unknown bits 0x%x", r.flags,
                r.flags & ~k_known_flags);
  if (r.source == nullptr)
    return fail(T4A_ERROR_INVALID_ARGUMENT, "request->source is NULL");
  Request q;
  if (t4a_status s = read_lists(r, &q); s != T4A_SUCCESS) return s;
  q.runtime_id = r.runtime.id;
  if (t4a_status s = check_target(r, q); s != T4A_SUCCESS) return s;
  q.source = r.source;
  q.program_name = r.program_name != nullptr ? r.program_name : "t4a.cu";
  q.output = r.output;
  q.cc_major = r.cc_major;
  q.cc_minor = r.cc_minor;
  q.flags = r.flags;
  q.disk_cache_max_bytes = r.disk_cache_max_bytes;
  if (r.cache_dir != nullptr) {
    q.has_cache_dir = true;
    q.cache_dir = r.cache_dir;
  }
  if (t4a_status s = read_toolkit_include(r.toolkit_include, &q);
      s != T4A_SUCCESS)
    return s;
  *out = std::move(q);
  return T4A_SUCCESS;
}

bool arch_from_options(const std::vector<std::string> &options, uint32_t output,
                       Target *target) {
  static const char *const k_prefixes[] = {
      "-arch=", "--gpu-architecture=", "-arch", "--gpu-architecture"};
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string &o = options[i];
    std::string value;
    bool found = false;
    for (int k = 0; k < 2 && !found; ++k) {
      size_t n = std::strlen(k_prefixes[k]);
      if (o.compare(0, n, k_prefixes[k]) == 0) {
        value = o.substr(n);
        found = true;
      }
    }
    for (int k = 2; k < 4 && !found; ++k)
      if (o == k_prefixes[k]) {
        if (i + 1 < options.size()) value = options[i + 1];
        found = true;
      }
    if (found) {
      target->output = output;
      target->arch = parse_arch(value);
      return true;
    }
  }
  return false;
}

core::Digest identity_key(const Request &r,
                          const std::vector<std::string> &options,
                          const Target &target, int nvrtc_major,
                          int nvrtc_minor) {
  static const char k_tag[] = "t4acuda compile key v2";
  core::Sha256 h;
  put_field(h, k_tag);
  put_u64(h, static_cast<uint64_t>(nvrtc_major));
  put_u64(h, static_cast<uint64_t>(nvrtc_minor));
  put_u64(h, r.output);
  put_u64(h, target.output);
  put_u64(h, static_cast<uint64_t>(target.arch));
  put_field(h, r.source);
  put_field(h, r.program_name);
  put_list(h, r.header_names);
  put_list(h, r.header_sources);
  put_list(h, options);
  put_list(h, r.name_expressions);
  return h.finish();
}

} // namespace t4a::compile
