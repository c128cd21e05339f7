#include "cuda/device.h"

#include "cuda/driver.h"
#include "util/error.h"

namespace kopt::cuda {

DeviceInfo query_device(int ordinal) {
  const Driver& drv = driver();
  CUdevice dev;
  KOPT_CU_CHECK(drv.cuDeviceGet(&dev, ordinal), "device " + std::to_string(ordinal));
  DeviceInfo d;
  d.ordinal = ordinal;
  char name[256] = {0};
  KOPT_CU_CHECK(drv.cuDeviceGetName(name, sizeof(name) - 1, dev), "device name");
  d.name = name;
  // The 16 bytes of the UUID in nvidia-smi's spelling (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx),
  // which CUDA_VISIBLE_DEVICES also accepts.
  CUuuid id{};
  KOPT_CU_CHECK(drv.cuDeviceGetUuid(&id, dev), "device UUID");
  static const char* hex = "0123456789abcdef";
  d.uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) d.uuid += '-';
    const auto b = static_cast<unsigned char>(id.bytes[i]);
    d.uuid += hex[b >> 4];
    d.uuid += hex[b & 15];
  }
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    KOPT_CU_CHECK(drv.cuDeviceGetAttribute(&v, a, dev), "device attribute " + std::to_string(a));
    return v;
  };
  d.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  size_t total = 0;
  KOPT_CU_CHECK(drv.cuDeviceTotalMem(&total, dev), "device memory");
  d.total_memory_bytes = static_cast<int64_t>(total);
  d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.shared_per_block_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  d.shared_per_block_optin_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.shared_per_sm_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  d.regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  d.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.max_grid[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  d.max_grid[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  d.max_grid[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  d.max_block[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  d.max_block[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  d.max_block[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  d.sm_clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  d.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.memory_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  d.driver_version = drv.version;
  return d;
}

std::vector<DeviceInfo> query_devices() {
  const Driver& drv = driver();
  int count = 0;
  KOPT_CU_CHECK(drv.cuDeviceGetCount(&count), "device count");
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) out.push_back(query_device(i));
  return out;
}

}  // namespace kopt::cuda
