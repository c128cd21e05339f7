// `kopt devices`: the CUDA devices' properties as JSON.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/command.h"
#include "cuda/device.h"
#include "util/json.h"

namespace kopt::cli {
namespace {

class DevicesCommand final : public Command {
 public:
  const char* name() const override { return "devices"; }
  const char* description() const override { return "Print the CUDA devices' properties as JSON"; }
  void add_options(CLI::App&) override {}

  int run() override {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : cuda::query_devices()) out.push_back(d.to_json());  // NoDeviceError: 77
    std::cout << dump_json(out, 2) << std::endl;
    return kOk;
  }
};

}  // namespace

std::unique_ptr<Command> make_devices_command() { return std::make_unique<DevicesCommand>(); }

}  // namespace kopt::cli
