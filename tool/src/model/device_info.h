// Properties of a CUDA device as plain data, with their JSON form
// (`kopt devices`, device.json in a run folder, the worker's hello reply).
// cuda/device.h reads them from the driver.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kopt::model {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;                 // e.g. "NVIDIA H200"
  std::string uuid;                 // "GPU-" + 8-4-4-4-12 hex digits, as nvidia-smi -L prints it; empty if unknown
  int cc_major = 0, cc_minor = 0;   // compute capability
  int sm_count = 0;                 // multiprocessors
  int64_t total_memory_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_block_bytes = 0;        // default limit (48 KB)
  int64_t shared_per_block_optin_bytes = 0;  // with the opt-in attribute
  int64_t shared_per_sm_bytes = 0;
  int regs_per_block = 0, regs_per_sm = 0;
  int max_threads_per_block = 0, max_threads_per_sm = 0, warp_size = 0;
  int64_t max_grid[3] = {0, 0, 0};
  int max_block[3] = {0, 0, 0};
  int sm_clock_khz = 0, memory_clock_khz = 0, memory_bus_width_bits = 0;
  int driver_version = 0;           // e.g. 13000
  /// A stand-in for a GPU (tests/fake_worker): its timings are made up. The
  /// JSON form has "simulated": true only then (a real device's has no key).
  bool simulated = false;

  /// "sm_90" (what NVRTC's -arch takes to produce a cubin for this device).
  std::string arch() const;
  /// Peak DRAM bandwidth in bytes/s from the memory clock and bus width
  /// (2 transfers per clock, DDR): 2 * clock * width / 8.
  double peak_dram_bytes_per_s() const;
  nlohmann::json to_json() const;
  static DeviceInfo from_json(const nlohmann::json& j);
};

/// A device with the limits of an H100/H200 (sm_90; 132 SMs, 1024 threads a
/// block, warps of 32, 48 KiB of shared memory a block, 227 KiB with the
/// opt-in), named `name`, every other field 0: what a runner without a GPU
/// reports (a replay of a recorded space, a test's runner), so that
/// constraints on device limits see a real device's values. The limits are
/// the CUDA C++ Programming Guide's for compute capability 9.0.
DeviceInfo hopper_limits(std::string name);

/// What kopt says beside every latency or ratio measured on a simulated
/// device (DeviceInfo::simulated): progress lines, the run's closing lines,
/// `kopt evaluate`, the report's header.
constexpr const char* kSimulatedNote = "simulated (fake worker): the timings are made up";

/// Whether a device.json document (DeviceInfo::to_json, or {"arch": ...}
/// without a GPU) describes a simulated device: "simulated" is true.
bool is_simulated(const nlohmann::json& device_json);

}  // namespace kopt::model
