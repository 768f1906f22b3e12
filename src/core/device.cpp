#include "core/device.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/struct_io.hpp"

namespace t4a::core {

using namespace t4a::driver;

t4a_status device_count(int32_t *count) {
  if (t4a_status s = require_driver(); s != T4A_SUCCESS) return s;
  if (driver::load().init_result == CUDA_ERROR_NO_DEVICE) {
    *count = 0; // cuInit reported no device: the driver works, sees none
    return T4A_SUCCESS;
  }
  int n = 0;
  if (auto r = cu::device_get_count(&n); !r)
    return fail_driver(r, "counting devices");
  *count = n;
  return T4A_SUCCESS;
}

t4a_status device_get(int32_t ordinal, const char *arg, CUdevice *out) {
  int32_t n = 0;
  if (t4a_status s = device_count(&n); s != T4A_SUCCESS) return s;
  if (ordinal < 0 || ordinal >= n)
    return fail(T4A_ERROR_NO_DEVICE,
                "%s is %d; this process sees %d CUDA device(s)%s", arg, ordinal,
                n, n > 0 ? format(" (ordinals 0..%d)", n - 1).c_str() : "");
  CUdevice d = 0;
  if (auto r = cu::device_get(&d, ordinal); !r)
    return fail_driver(r, "getting device %d", ordinal);
  *out = d;
  return T4A_SUCCESS;
}

t4a_status device_compute_capability(int32_t ordinal, int32_t *major,
                                     int32_t *minor) {
  CUdevice d = 0;
  if (t4a_status s = device_get(ordinal, "ordinal", &d); s != T4A_SUCCESS)
    return s;
  int maj = 0, min = 0;
  if (auto r = cu::device_get_attribute(
          &maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
      !r)
    return fail_driver(r, "reading the compute capability of device %d",
                       ordinal);
  if (auto r = cu::device_get_attribute(
          &min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
      !r)
    return fail_driver(r, "reading the compute capability of device %d",
                       ordinal);
  *major = maj;
  *minor = min;
  return T4A_SUCCESS;
}

t4a_status device_info(int32_t ordinal, t4a_device_info *out) {
  CUdevice d = 0;
  if (t4a_status s = device_get(ordinal, "ordinal", &d); s != T4A_SUCCESS)
    return s;
  t4a_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.ordinal = ordinal;
  if (auto r = cu::device_get_name(info.name, sizeof info.name - 1, d); !r)
    return fail_driver(r, "reading the name of device %d", ordinal);
  CUuuid uuid{};
  if (auto r = cu::device_get_uuid(&uuid, d); !r)
    return fail_driver(r, "reading the UUID of device %d", ordinal);
  std::memcpy(info.uuid, uuid.bytes, sizeof info.uuid);
  size_t total = 0;
  if (auto r = cu::device_total_mem(&total, d); !r)
    return fail_driver(r, "reading the memory size of device %d", ordinal);
  info.total_memory_bytes = total;
  struct {
    CUdevice_attribute attr;
    int32_t *field;
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessor_count},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info.clock_rate_khz},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &info.warp_size},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &info.max_block_dim[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &info.max_block_dim[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &info.max_block_dim[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &info.max_grid_dim[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &info.max_grid_dim[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &info.max_grid_dim[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
       &info.max_shared_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.max_shared_per_block_optin},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
       &info.max_registers_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
       &info.max_threads_per_multiprocessor},
      {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &info.pci_domain_id},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &info.pci_bus_id},
      {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &info.pci_device_id},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
       &info.memory_pools_supported},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, &info.cooperative_launch},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, &info.unified_addressing},
  };
  for (auto &a : attrs) {
    int v = 0;
    if (auto r = cu::device_get_attribute(&v, a.attr, d); !r)
      return fail_driver(r, "reading attribute %d of device %d",
                         static_cast<int>(a.attr), ordinal);
    *a.field = v;
  }
  write_struct(out, info);
  return T4A_SUCCESS;
}

t4a_status device_can_access_peer(int32_t ordinal, int32_t peer, int32_t *can) {
  CUdevice d = 0, p = 0;
  if (t4a_status s = device_get(ordinal, "ordinal", &d); s != T4A_SUCCESS)
    return s;
  if (t4a_status s = device_get(peer, "peer", &p); s != T4A_SUCCESS) return s;
  if (ordinal == peer) {
    *can = 0;
    return T4A_SUCCESS;
  }
  int v = 0;
  if (auto r = cu::device_can_access_peer(&v, d, p); !r)
    return fail_driver(r, "asking whether device %d can access device %d",
                       ordinal, peer);
  *can = v;
  return T4A_SUCCESS;
}

} // namespace t4a::core
