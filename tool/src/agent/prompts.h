// The agent's prompts: the system messages of the drafting and optimizing
// phases and the texts they are built from (internal to the agent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/attempt.h"
#include "model/budget.h"
#include "model/device_info.h"
#include "spec/spec.h"

namespace kopt::agent {

/// The signature, cases and tolerances of the workload.
std::string describe_workload(const spec::Spec& s);

/// What the reference is; a reference kernel's source is quoted.
std::string describe_reference(const spec::Spec& s);

/// How candidates are judged, the launch syntax, the mode and the budget
/// (its model turns, evaluations and patience; the repairs allowed).
std::string rules_text(const std::string& arch, bool compile_only, bool hybrid, const model::Budget& budget,
                       int max_repairs, int template_evals);

/// The device's properties, or what to assume without a GPU.
std::string device_text(const std::optional<model::DeviceInfo>& device, const std::string& arch);

/// The system message of the drafting phase (description-only mode).
std::string draft_prompt(const std::string& device_text);

/// The user message that starts the drafting phase.
std::string draft_task(const std::string& description);

/// The kernel the optimizing prompt shows: the best so far, else the initial one.
struct ShownKernel {
  const model::Attempt* attempt = nullptr;
  bool is_best = false;
  std::string entry;
  spec::Launch launch;
};

/// The system message of the optimizing phase: the workload, the reference,
/// the kernel to improve (when there is one), the device, `rules` and the
/// notes' topics.
std::string optimize_prompt(const spec::Spec& s, const ShownKernel* shown, std::optional<double> reference_geomean_ms,
                            const std::string& device_text, const std::string& rules);

/// The user message that starts the optimizing phase.
extern const char* const kOptimizeTask;
/// The user message that starts it after drafting (same conversation).
extern const char* const kOptimizeAfterDraftTask;

}  // namespace kopt::agent
