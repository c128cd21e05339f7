// Reads the properties of CUDA devices through the driver API
// (model::DeviceInfo holds them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/device_info.h"

namespace kopt::cuda {

using model::DeviceInfo;

/// Reads every device (requires the driver: throws NoDeviceError without one).
std::vector<DeviceInfo> query_devices();
DeviceInfo query_device(int ordinal);

}  // namespace kopt::cuda
