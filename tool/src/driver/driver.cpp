#include "driver/driver.h"

#include <iostream>

#include "driver/driver_impl.h"
#include "driver/proposers.h"
#include "util/interrupt.h"

namespace kopt::driver {

int optimize_from_description(const OptimizeOptions& o, std::filesystem::path* run_dir);  // draft.cpp

int optimize(const OptimizeOptions& options, std::filesystem::path* run_dir) {
  // The first SIGINT/SIGTERM winds the run down (see driver.h); a second one exits at once.
  util::InterruptScope interrupts(
      "stopping after the candidate in flight; summary.json and the report will be written for what is recorded");
  OptimizeOptions o = options;
  if (o.spec.empty() && !o.resume.empty()) {
    store::RunStore::read_info(o.resume);  // not a run folder: say so, rather than that spec.json is missing
    o.spec = o.resume / "spec.json";
  }
  if (o.spec.empty() && is_agent(o)) return optimize_from_description(o, run_dir);
  spec::Spec s = load_spec_with_overrides(o);
  std::string plan;  // the shape classes' search order: said once there is a GPU to search on
  propose::ProposerPtr proposer = make_proposer(o, &s, &plan);
  Driver driver(o, std::move(s), *proposer);
  driver.open_device();
  if (driver.device()) std::cerr << plan;
  proposer->prepare(driver.device_constants());
  return driver.run(run_dir);
}

}  // namespace kopt::driver
