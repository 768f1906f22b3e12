// Compile and artifact entry points: t4a_compile, the per-thread
// log of the last failed compile, artifact retain/release/getters and the
// process-wide compile counters.
#include <cstring>

#include "capi/copy_out.hpp"
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "capi/name_expressions.hpp"
#include "compile/artifact.hpp"
#include "compile/compile_stats.hpp"
#include "compile/compiler.hpp"
#include "compile/request.hpp"
#include "core/device.hpp"
#include "core/struct_io.hpp"

using namespace t4a;
using capi::copy_out;
using capi::in;
using core::Kind;
using core::Ref;

namespace {

// The device a request targets: its own compute capability, or its
// runtime's device with the driver's version.
t4a_status device_target(const compile::Request &r,
                         compile::DeviceTarget *out) {
  compile::DeviceTarget d;
  d.cc_major = r.cc_major;
  d.cc_minor = r.cc_minor;
  if (r.runtime_id != T4A_NULL_ID) {
    Ref<core::Runtime> rt;
    if (t4a_status s =
            capi::resolve(r.runtime_id, Kind::Runtime, "request->runtime", &rt);
        s != T4A_SUCCESS)
      return s;
    int32_t major = 0, minor = 0;
    if (t4a_status s =
            core::device_compute_capability(rt->ordinal(), &major, &minor);
        s != T4A_SUCCESS)
      return s;
    int v = 0;
    if (auto res = driver::cu::driver_get_version(&v); !res)
      return core::fail_driver(res, "reading the driver version");
    d.cc_major = major;
    d.cc_minor = minor;
    d.driver_version = v;
  }
  *out = d;
  return T4A_SUCCESS;
}

} // namespace

extern "C" {

// Not through capi::call: the request is read (and checked) into a value
// before the out-pointer is checked.
T4A_API t4a_status t4a_compile(const t4a_compile_request *request,
                               t4a_artifact *artifact) {
  return T4A_ENTRY({
    compile::Request r;
    if (t4a_status s = compile::read_request(request, &r); s != T4A_SUCCESS)
      return s;
    if (artifact == nullptr) return capi::null_arg("artifact");
    compile::DeviceTarget d;
    if (t4a_status s = device_target(r, &d); s != T4A_SUCCESS) return s;
    uint64_t id = 0;
    if (t4a_status s = compile::compile(r, d, &id); s != T4A_SUCCESS) return s;
    // The request's name expressions, for lookups by expression (the
    // artifact keeps only their lowered names; capi/name_expressions.hpp).
    if (!r.name_expressions.empty()) {
      Ref<compile::Artifact> made;
      if (capi::resolve(id, Kind::Artifact, "artifact", &made) == T4A_SUCCESS)
        capi::remember_name_expressions(*made, r.name_expressions);
    }
    artifact->id = id;
    return T4A_SUCCESS;
  });
}

// Not through the entry guard (T4A_ENTRY): it must not change the last
// error.
T4A_API t4a_status t4a_last_compile_log(char *buf, size_t capacity,
                                        size_t *needed) {
  if (buf == nullptr && capacity != 0) return T4A_ERROR_INVALID_ARGUMENT;
  const std::string &log = compile::last_compile_log();
  if (needed != nullptr) *needed = log.size() + 1;
  if (capacity > 0) {
    size_t n = log.size() < capacity - 1 ? log.size() : capacity - 1;
    std::memcpy(buf, log.data(), n);
    buf[n] = '\0';
  }
  return T4A_SUCCESS;
}

T4A_API t4a_status t4a_toolkit_headers(char *buf, size_t capacity,
                                       size_t *needed) {
  return T4A_ENTRY({
    if (buf == nullptr && capacity != 0)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "buf is NULL but capacity is %zu", capacity);
    std::string text;
    if (t4a_status s = compile::describe_toolkit(&text); s != T4A_SUCCESS)
      return s;
    return copy_out(text, buf, capacity, needed, true);
  });
}

T4A_API t4a_status t4a_artifact_retain(t4a_artifact artifact) {
  return T4A_ENTRY({ return capi::retain(artifact, "artifact"); });
}

T4A_API t4a_status t4a_artifact_release(t4a_artifact artifact) {
  return T4A_ENTRY({ return capi::release(artifact, "artifact"); });
}

T4A_API t4a_status t4a_artifact_info_get(t4a_artifact artifact,
                                         t4a_artifact_info *info) {
  return T4A_ENTRY({
    return capi::call(in(artifact, "artifact"), capi::out_struct(info, "info"),
                      [&](Ref<compile::Artifact> &a) -> t4a_status {
                        t4a_artifact_info full;
                        std::memset(&full, 0, sizeof full);
                        full.struct_size = sizeof full;
                        full.output = a->target().output;
                        full.cc_major = a->target().arch / 10;
                        full.cc_minor = a->target().arch % 10;
                        full.image_bytes = a->image().size();
                        full.log_bytes = a->log().size();
                        full.name_expression_count =
                            static_cast<uint32_t>(a->lowered_names().size());
                        full.origin = a->origin();
                        full.compile_ns = a->call_ns();
                        full.nvrtc_ns = a->nvrtc_ns;
                        core::write_struct(info, full);
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_artifact_image(t4a_artifact artifact, void *buf,
                                      size_t capacity, size_t *needed) {
  return T4A_ENTRY({
    return capi::call(
        in(artifact, "artifact"), [&](Ref<compile::Artifact> &a) -> t4a_status {
          return copy_out(a->image(), buf, capacity, needed, false);
        });
  });
}

T4A_API t4a_status t4a_artifact_log(t4a_artifact artifact, char *buf,
                                    size_t capacity, size_t *needed) {
  return T4A_ENTRY({
    return capi::call(in(artifact, "artifact"),
                      [&](Ref<compile::Artifact> &a) -> t4a_status {
                        return copy_out(a->log(), buf, capacity, needed, true);
                      });
  });
}

T4A_API t4a_status t4a_artifact_lowered_name(t4a_artifact artifact,
                                             uint32_t index, char *buf,
                                             size_t capacity, size_t *needed) {
  return T4A_ENTRY({
    return capi::call(
        in(artifact, "artifact"), [&](Ref<compile::Artifact> &a) -> t4a_status {
          const auto &names = a->lowered_names();
          if (index >= names.size())
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "index is %u; the artifact has %zu lowered names",
                              index, names.size());
          return copy_out(names[index], buf, capacity, needed, true);
        });
  });
}

T4A_API t4a_status t4a_artifact_lowered_name_of(t4a_artifact artifact,
                                                const char *expression,
                                                char *buf, size_t capacity,
                                                size_t *needed) {
  return T4A_ENTRY({
    return capi::call(
        in(artifact, "artifact"), capi::not_null(expression, "expression"),
        [&](Ref<compile::Artifact> &a) -> t4a_status {
          if (expression[0] == '\0')
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "expression is empty");
          if (buf == nullptr && capacity != 0)
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "buf is NULL but capacity is %zu", capacity);
          bool forgotten = false;
          auto table = capi::name_table_of(*a, &forgotten);
          if (forgotten)
            return core::fail(
                T4A_ERROR_UNKNOWN_ENTRY_POINT,
                "expression '%s': the name expressions of this artifact (%zu) "
                "are no longer known to the process (more than %llu MiB of "
                "other artifacts' expressions were compiled since); compile "
                "its request again (a cache hit) or use "
                "t4a_artifact_lowered_name by index",
                expression, a->lowered_names().size(),
                static_cast<unsigned long long>(capi::k_table_bytes >> 20));
          if (!table)
            return core::fail(T4A_ERROR_UNKNOWN_ENTRY_POINT,
                              "expression '%s': the artifact was compiled "
                              "without name expressions",
                              expression);
          const launch::NameExpression *e = nullptr;
          if (t4a_status s =
                  launch::find_expression(*table, expression, "expression", &e);
              s != T4A_SUCCESS)
            return s;
          if (e == nullptr)
            return core::fail(T4A_ERROR_UNKNOWN_ENTRY_POINT,
                              "expression '%s' is none of the artifact's %zu "
                              "name expressions (compared exactly, then with "
                              "whitespace and a leading '&' ignored)",
                              expression, table->size());
          return copy_out(e->lowered, buf, capacity, needed, true);
        });
  });
}

T4A_API t4a_status t4a_artifact_key(t4a_artifact artifact, char *buf,
                                    size_t capacity, size_t *needed) {
  return T4A_ENTRY({
    return capi::call(
        in(artifact, "artifact"), [&](Ref<compile::Artifact> &a) -> t4a_status {
          return copy_out(core::to_hex(a->key()), buf, capacity, needed, true);
        });
  });
}

T4A_API t4a_status t4a_compile_stats_get(t4a_compile_stats *stats) {
  return T4A_ENTRY({
    return capi::call(capi::out_struct(stats, "stats"), [&]() -> t4a_status {
      t4a_compile_stats full;
      std::memset(&full, 0, sizeof full);
      full.struct_size = sizeof full;
      compile::compile_stats().fill(&full);
      core::write_struct(stats, full);
      return T4A_SUCCESS;
    });
  });
}

} // extern "C"
