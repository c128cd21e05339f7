// Transitional: the agent's entry points until it is a proposer of the run
// driver (tune/driver.h).
#pragma once

#include <filesystem>

#include "cuda/device.h"
#include "eval/evaluator.h"
#include "spec/spec.h"
#include "tune/driver.h"

namespace kopt::opt {

using OptimizeOptions = tune::OptimizeOptions;

int optimize(const OptimizeOptions& options, std::filesystem::path* run_dir = nullptr);
eval::EvaluatorOptions evaluator_options(const OptimizeOptions& o);
spec::Bindings device_constants(const model::DeviceInfo* d);
spec::Spec load_spec_with_overrides(const OptimizeOptions& options);

}  // namespace kopt::opt
