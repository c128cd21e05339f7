// profile_candidate: Nsight Compute counters of one launch of a candidate,
// through `kopt evaluate` under ncu (agent/ncu.h).
#include <iostream>

#include "agent/candidate.h"
#include "agent/common.h"
#include "agent/ncu.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
#include "util/fs.h"

namespace kopt::agent::tools::profile_candidate {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

/// The kopt executable to run under ncu: --kopt-exe, else the worker's (when
/// the worker is `kopt worker`), else this process when it is kopt; empty
/// when unknown.
stdfs::path kopt_executable(const Session& s) {
  stdfs::path kopt = s.agent_options().kopt_exe;
  const auto& worker = s.options().worker_argv;
  if (kopt.empty() && worker.size() >= 2 && worker[1] == "worker") kopt = worker[0];
  if (kopt.empty()) {
    std::error_code ec;
    const stdfs::path self = stdfs::read_symlink("/proc/self/exe", ec);
    if (!ec && self.filename() == "kopt") kopt = self;
  }
  return kopt;
}

}  // namespace

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
  const std::string ncu = find_ncu();
  if (ncu.empty())
    return {{"available", false},
            {"reason", "profiling unavailable: Nsight Compute (ncu) is not installed (not in PATH nor /usr/local/cuda/bin)"}};
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
  const stdfs::path kopt = kopt_executable(s);
  if (kopt.empty()) return {{"available", false}, {"reason", "profiling unavailable: the kopt executable is unknown"}};
  const RunOptions& o = s.options();
  std::vector<std::string> target = {kopt.string(), "evaluate", "--spec", (s.service()->run_dir() / "spec.json").string(),
                                     "--kernel", (dir / "kernel.cu").string(), "--entry", c.entry, "--cases", case_name, "--no-time",
                                     "--no-reference-timing", "--quiet", "--device", std::to_string(o.device)};
  if (!o.cache_dir.empty()) {
    target.push_back("--cache-dir");
    target.push_back(o.cache_dir.string());
  }
  if (!o.quiet) std::cerr << "kopt: profiling with ncu (case " << case_name << ")\n";
  json parsed = run_ncu(ncu, c.entry, target, dir / "ncu.txt");
  if (parsed.value("available", false)) parsed["case"] = case_name;
  return parsed;
}

}  // namespace kopt::agent::tools::profile_candidate
