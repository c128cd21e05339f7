// Candidates from the model's tool arguments: the source, entry, launch
// (with per-case overrides folded in), compile options, and the recorded
// source that reproduces the attempt (internal to the agent).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/annotations.h"
#include "spec/candidate.h"
#include "spec/spec.h"

namespace kopt::agent {

/// "grid (a, b, c), block (x, y, z), shared_bytes s" (for prompts).
std::string launch_text(const spec::Launch& l);


/// An integer expression: a string or an integer. Throws ToolFailure naming `where`.
spec::Expr parse_expr(const nlohmann::json& v, const std::string& where);

/// {"grid": [..1-3..], "block": [..], "shared_bytes": e} -> Launch. Throws ToolFailure.
spec::Launch parse_launch(const nlohmann::json& j, const std::string& where);


/// The base launch with per-case overrides folded into its expressions: each
/// dimension becomes "(C1) * (O1) + (!(C1)) * (...)" where Ci tests the sizes
/// of the overridden case.
spec::Launch fold_case_launches(const spec::Launch& base,
                                const std::vector<std::pair<const spec::Case*, spec::Launch>>& ov);


/// Resolves the launch for every case of `s`: each dimension >= 1, shared
/// bytes >= 0. Throws ToolFailure.
void validate_launch(const spec::Spec& s, const spec::Launch& l, const std::map<std::string, int64_t>& params);

/// The candidate that tool arguments {source, entry?, launch?, case_launch?,
/// compile_options?} describe, labelled `label`; `extra_params` are added to
/// the source's own; the launch is checked when `validate`. Its source carries
/// the entry and launch it is evaluated with (appended). Throws ToolFailure.
spec::Candidate candidate_from_args(const spec::Spec& s, const nlohmann::json& a, const std::string& label,
                                    bool validate, const std::map<std::string, int64_t>& extra_params = {});

}  // namespace kopt::agent
