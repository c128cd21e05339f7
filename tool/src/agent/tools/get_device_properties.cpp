// get_device_properties: the GPU, or without one the target architecture.
#include "agent/session.h"
#include "agent/tools/registry.h"

namespace kopt::agent::tools::get_device_properties {

using nlohmann::json;

ToolDef define() {
  return {"", "The GPU's properties (or, without a GPU, the target architecture).", schema::no_arguments()};
}

json run(Session& s, const json&) {
  if (const auto& device = s.device()) {
    json d = device->to_json();
    d["peak_dram_gb_per_s"] = device->peak_dram_bytes_per_s() / 1e9;
    return d;
  }
  const std::string& arch = s.arch();
  return {{"gpu", nullptr},
          {"arch", arch},
          {"note", "no GPU on this machine: kernels are compiled for " + arch + " but not run; assume an H100/H200 "
                   "class device (132 SMs, 227 KB shared memory per block with opt-in, 65536 registers per SM, "
                   "2048 threads per SM)"}};
}

}  // namespace kopt::agent::tools::get_device_properties
