// Driver, compiler and device discovery entry points.
#include "capi/copy_out.hpp"
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "core/device.hpp"
#include "core/struct_io.hpp"
#include "driver/cuda_api.hpp"
#include "driver/nvrtc_api.hpp"

using namespace t4a;
using capi::not_null;

extern "C" {

T4A_API t4a_status t4a_driver_version(int32_t *version) {
  return T4A_ENTRY({
    return capi::call(not_null(version, "version"), [&]() -> t4a_status {
      if (t4a_status s = core::require_driver(); s != T4A_SUCCESS) return s;
      int v = 0;
      if (auto r = driver::cu::driver_get_version(&v); !r)
        return core::fail_driver(r, "reading the driver version");
      *version = v;
      return T4A_SUCCESS;
    });
  });
}

T4A_API t4a_status t4a_driver_lacks(char *buf, size_t capacity,
                                    size_t *needed) {
  return T4A_ENTRY({
    if (buf == nullptr && capacity != 0)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "buf is NULL but capacity is %zu", capacity);
    if (t4a_status s = core::require_driver(); s != T4A_SUCCESS) return s;
    return capi::copy_out(driver::lacking_entry_points(), buf, capacity, needed,
                          true);
  });
}

T4A_API t4a_status t4a_nvrtc_version(int32_t *major, int32_t *minor) {
  return T4A_ENTRY({
    return capi::call(not_null(major, "major"), not_null(minor, "minor"),
                      [&]() -> t4a_status {
                        const driver::NvrtcState &n = driver::nvrtc_load();
                        if (!n.ready)
                          return core::fail_message(T4A_ERROR_NO_COMPILER,
                                                    n.reason);
                        *major = n.major;
                        *minor = n.minor;
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_device_count(int32_t *count) {
  return T4A_ENTRY({
    return capi::call(not_null(count, "count"), [&]() -> t4a_status {
      int32_t n = 0;
      if (t4a_status s = core::device_count(&n); s != T4A_SUCCESS) return s;
      *count = n;
      return T4A_SUCCESS;
    });
  });
}

T4A_API t4a_status t4a_device_info_get(int32_t ordinal, t4a_device_info *info) {
  return T4A_ENTRY({
    return capi::call(capi::out_struct(info, "info"), [&]() -> t4a_status {
      return core::device_info(ordinal, info);
    });
  });
}

T4A_API t4a_status t4a_device_can_access_peer(int32_t ordinal, int32_t peer,
                                              int32_t *can_access) {
  return T4A_ENTRY({
    return capi::call(not_null(can_access, "can_access"), [&]() -> t4a_status {
      int32_t v = 0;
      if (t4a_status s = core::device_can_access_peer(ordinal, peer, &v);
          s != T4A_SUCCESS)
        return s;
      *can_access = v;
      return T4A_SUCCESS;
    });
  });
}

} // extern "C"
