#include "tune/driver.h"

#include "tune/driver_impl.h"
#include "tune/proposers.h"

namespace kopt::tune {

int optimize_from_description(const OptimizeOptions& o, std::filesystem::path* run_dir);  // draft.cpp

int optimize(const OptimizeOptions& o, std::filesystem::path* run_dir) {
  if (o.spec.empty() && is_agent(o)) return optimize_from_description(o, run_dir);
  spec::Spec s = load_spec_with_overrides(o);
  propose::ProposerPtr proposer = make_proposer(o, &s);
  Driver driver(o, std::move(s), *proposer);
  driver.open_device();
  proposer->prepare(driver.device_constants());
  return driver.run(run_dir);
}

}  // namespace kopt::tune
