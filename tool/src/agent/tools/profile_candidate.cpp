// profile_candidate: Nsight Compute counters of one launch of a candidate,
// through the run's evaluation service (propose::EvaluationService::profile:
// the driver runs the candidate on a worker of its worker plan under ncu).
#include <iostream>

#include "agent/candidate.h"
#include "agent/common.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
#include "util/fs.h"

namespace kopt::agent::tools::profile_candidate {

namespace stdfs = std::filesystem;
using nlohmann::json;

ToolDef define() {
  json props = schema::candidate_properties();
  props["case"] = {{"type", "string"}, {"description", "the case to profile (default: the first performance case)"}};
  return {"",
          "Profile one launch of a candidate with Nsight Compute (SpeedOfLight, Occupancy, LaunchStats counters). "
          "Says 'profiling unavailable' when ncu or the GPU is missing or counters are not permitted.",
          {{"type", "object"}, {"properties", props}, {"required", {"source", "launch"}}}};
}

json run(Session& s, const json& a) {
  if (!s.device()) return {{"available", false}, {"reason", "profiling unavailable: no GPU on this machine"}};
  const spec::Spec& sp = s.spec();
  spec::Candidate c = candidate_from_args(sp, a, "profile", true);
  std::string case_name;
  if (auto cj = a.find("case"); cj != a.end() && cj->is_string()) case_name = cj->get<std::string>();
  if (case_name.empty()) {
    const auto perf = sp.performance_cases();
    case_name = perf.empty() ? sp.cases.front().name : perf.front()->name;
  }
  bool known = false;
  for (const auto& cs : sp.cases) known |= cs.name == case_name;
  if (!known) throw ToolFailure("no case named '" + case_name + "'");
  const stdfs::path dir = s.agent_dir() / numbered("profile-", s.next_profile(), "");
  fs::write_file_atomic(dir / "kernel.cu", c.source);
  if (!s.options().quiet) std::cerr << "kopt: profiling with ncu (case " << case_name << ")\n";
  json parsed = s.service()->profile(c, case_name, dir);
  if (parsed.value("available", false)) parsed["case"] = case_name;
  return parsed;
}

}  // namespace kopt::agent::tools::profile_candidate
