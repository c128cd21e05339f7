#include "model/device_info.h"

#include <utility>

#include "util/error.h"

namespace kopt::model {

std::string DeviceInfo::arch() const {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

DeviceInfo hopper_limits(std::string name) {
  DeviceInfo d;
  d.name = std::move(name);
  d.cc_major = 9;
  d.sm_count = 132;
  d.max_threads_per_block = 1024;
  d.warp_size = 32;
  d.shared_per_block_bytes = 49152;
  d.shared_per_block_optin_bytes = 232448;
  return d;
}

double DeviceInfo::peak_dram_bytes_per_s() const {
  return 2.0 * memory_clock_khz * 1e3 * memory_bus_width_bits / 8.0;
}

nlohmann::json DeviceInfo::to_json() const {
  nlohmann::json j = {{"ordinal", ordinal},
                      {"name", name},
                      {"uuid", uuid},
                      {"compute_capability", std::to_string(cc_major) + "." + std::to_string(cc_minor)},
                      {"arch", arch()},
                      {"sm_count", sm_count},
                      {"total_memory_bytes", total_memory_bytes},
                      {"l2_bytes", l2_bytes},
                      {"shared_per_block_bytes", shared_per_block_bytes},
                      {"shared_per_block_optin_bytes", shared_per_block_optin_bytes},
                      {"shared_per_sm_bytes", shared_per_sm_bytes},
                      {"regs_per_block", regs_per_block},
                      {"regs_per_sm", regs_per_sm},
                      {"max_threads_per_block", max_threads_per_block},
                      {"max_threads_per_sm", max_threads_per_sm},
                      {"warp_size", warp_size},
                      {"max_grid", {max_grid[0], max_grid[1], max_grid[2]}},
                      {"max_block", {max_block[0], max_block[1], max_block[2]}},
                      {"sm_clock_khz", sm_clock_khz},
                      {"memory_clock_khz", memory_clock_khz},
                      {"memory_bus_width_bits", memory_bus_width_bits},
                      {"peak_dram_bytes_per_s", peak_dram_bytes_per_s()},
                      {"driver_version", driver_version}};
  if (simulated) j["simulated"] = true;
  return j;
}

bool is_simulated(const nlohmann::json& device_json) {
  if (!device_json.is_object()) return false;
  const auto it = device_json.find("simulated");
  return it != device_json.end() && it->is_boolean() && it->get<bool>();
}

DeviceInfo DeviceInfo::from_json(const nlohmann::json& j) {
  // The description comes from the worker (any --worker-command): a wrong
  // type, a short array or a bad compute capability is a protocol error that
  // names the field, never a raw library exception or undefined behaviour.
  if (!j.is_object()) {
    throw EnvironmentError("kopt.worker.004", "protocol error: the worker's device description is not an object");
  }
  if (j.contains("simulated") && !j["simulated"].is_boolean())
    throw EnvironmentError("kopt.worker.004",
                           "protocol error: the worker's device description: $.simulated: expected true or false");
  for (const char* k : {"max_grid", "max_block"}) {
    if (j.contains(k) && !(j[k].is_array() && j[k].size() >= 3)) {
      throw EnvironmentError("kopt.worker.004", std::string("protocol error: the worker's device description: $.") +
                                                    k + ": expected an array of 3 integers");
    }
  }
  try {
    DeviceInfo d;
    d.ordinal = j.value("ordinal", 0);
    d.name = j.value("name", "");
    d.uuid = j.value("uuid", "");
    const std::string cc = j.value("compute_capability", "0.0");
    auto dot = cc.find('.');
    d.cc_major = std::stoi(cc.substr(0, dot));
    d.cc_minor = dot == std::string::npos ? 0 : std::stoi(cc.substr(dot + 1));
    d.sm_count = j.value("sm_count", 0);
    d.total_memory_bytes = j.value("total_memory_bytes", int64_t{0});
    d.l2_bytes = j.value("l2_bytes", int64_t{0});
    d.shared_per_block_bytes = j.value("shared_per_block_bytes", int64_t{0});
    d.shared_per_block_optin_bytes = j.value("shared_per_block_optin_bytes", int64_t{0});
    d.shared_per_sm_bytes = j.value("shared_per_sm_bytes", int64_t{0});
    d.regs_per_block = j.value("regs_per_block", 0);
    d.regs_per_sm = j.value("regs_per_sm", 0);
    d.max_threads_per_block = j.value("max_threads_per_block", 0);
    d.max_threads_per_sm = j.value("max_threads_per_sm", 0);
    d.warp_size = j.value("warp_size", 0);
    if (j.contains("max_grid"))
      for (int i = 0; i < 3; ++i) d.max_grid[i] = j["max_grid"][i].get<int64_t>();
    if (j.contains("max_block"))
      for (int i = 0; i < 3; ++i) d.max_block[i] = j["max_block"][i].get<int>();
    d.sm_clock_khz = j.value("sm_clock_khz", 0);
    d.memory_clock_khz = j.value("memory_clock_khz", 0);
    d.memory_bus_width_bits = j.value("memory_bus_width_bits", 0);
    d.driver_version = j.value("driver_version", 0);
    d.simulated = j.value("simulated", false);
    return d;
  } catch (const std::exception& e) {  // nlohmann type errors, std::stoi
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
    throw EnvironmentError("kopt.worker.004", "protocol error: the worker's device description: " + what);
  }
}

}  // namespace kopt::model
