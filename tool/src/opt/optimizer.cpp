#include "opt/optimizer.h"

#include "agent/agent.h"
#include "search/device_constants.h"

namespace kopt::opt {

eval::EvaluatorOptions evaluator_options(const OptimizeOptions& o) {
  eval::EvaluatorOptions eo;
  eo.worker_argv = o.worker_argv;
  eo.cache_dir = o.cache_dir;
  eo.arch = o.arch;
  eo.time = true;
  eo.time_reference = false;
  return eo;
}

spec::Bindings device_constants(const model::DeviceInfo* d) { return search::device_constants(d); }

spec::Spec load_spec_with_overrides(const OptimizeOptions& o) { return tune::load_spec_with_overrides(o); }

int optimize(const OptimizeOptions& o, std::filesystem::path* run_dir) {
  if (o.strategy == "agent" || o.strategy == "hybrid" || (o.spec.empty() && !o.description.empty()))
    return agent::optimize(o, run_dir);
  return tune::optimize(o, run_dir);
}

}  // namespace kopt::opt
