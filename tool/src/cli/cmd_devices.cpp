// `kopt devices`: the CUDA devices' properties as JSON; with
// --ctest-resource-spec FILE also CTest's resource spec file for them
// (model/ctest_resources.h, docs/cmake.md "GPUs under ctest -j").
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/command.h"
#include "cli/common.h"
#include "cuda/device.h"
#include "model/ctest_resources.h"
#include "util/fs.h"
#include "util/error.h"
#include "util/json.h"
#include "util/text.h"

namespace kopt::cli {
namespace {

class DevicesCommand final : public Command {
 public:
  DevicesCommand()
      : Command("devices",
                "Print the CUDA devices' properties as JSON; --ctest-resource-spec FILE also writes CTest's resource "
                "spec file for them") {}
  void add_options(CLI::App& sub) override {
    sub.add_option("--ctest-resource-spec", spec_file_,
                   "Also write CTest's resource spec file (version 1.0, resource type \"gpus\", ids the device "
                   "ordinals) for ctest --resource-spec-file")
        ->check(check::not_empty());
    sub.add_option("--ctest-slots", slots_,
                   "Slots per GPU in that file: a benchmark test takes them all, a correctness test one (the "
                   "CMake module's KOPT_CTEST_GPU_SLOTS must be the same)")
        ->check(check::whole(1, 1000000))
        ->capture_default_str();
  }

  int run() override {
    if (!spec_file_.empty()) check_output_file("--ctest-resource-spec", spec_file_);
    nlohmann::json out = nlohmann::json::array();
    std::vector<int> ordinals;
    // NoDeviceError: 77, and no resource spec file is written (a file without
    // GPUs would make every GPU test "Not Run" instead of skipped).
    for (const auto& d : cuda::query_devices()) {
      out.push_back(d.to_json());
      ordinals.push_back(d.ordinal);
    }
    if (!spec_file_.empty() && ordinals.empty())
      throw NoDeviceError("kopt.ctest.005", "--ctest-resource-spec " + clip(spec_file_) +
                                                ": no CUDA device, so no resource spec file was written");
    if (!spec_file_.empty()) {
      fs::write_file_atomic(spec_file_, dump_json(model::ctest_resource_spec(ordinals, slots_), 2) + "\n");
      std::cerr << "kopt devices: wrote " << spec_file_ << ": " << ordinals.size() << " GPU"
                << (ordinals.size() == 1 ? "" : "s") << ", " << slots_ << " slots each; run ctest -j N "
                << "--resource-spec-file " << spec_file_ << "\n";
    }
    std::cout << dump_json(out, 2) << std::endl;
    return kOk;
  }

 private:
  std::string spec_file_;
  int slots_ = model::kCtestGpuSlots;
};

}  // namespace

std::unique_ptr<Command> make_devices_command() { return std::make_unique<DevicesCommand>(); }

}  // namespace kopt::cli
