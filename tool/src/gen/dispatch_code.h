// The measured dispatch in kopt generate (docs/dispatch.md): reading it from
// what a run or a tuning cache entry records, with its cost model fitted
// again from the recorded measurements, and the C++ of that cost model in the
// launch header.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dispatch.h"
#include "store/summary.h"
#include "spec/spec.h"

namespace kopt::gen {

/// The measured dispatch of a specialisation (`sp`: summary.json's or a cache
/// entry's; its "dispatch", written since the launch header chooses by
/// measurement), or nullopt for one variant or an older run or cache entry
/// (whose header then picks the nearest tuned shape). The record was checked
/// when its file was read (`where` names it in messages). Its
/// cost model is fitted again from the recorded latencies, the variants'
/// parameters and their occupancy with the launch expressions of `spec`'s
/// template; a model of an older rule that cannot be fitted again becomes
/// "variant 0 off the tuned shapes", said on stderr.
std::optional<model::DispatchTree> recorded_dispatch(const store::Specialization& sp, size_t variants,
                                                     const std::string& where, const spec::Spec& spec);

/// The cost model of the measured dispatch (model::DispatchModel) as C++ for
/// the launch header: its constants, the predicted latency, and
/// select_variant(), which asks measured_variant() (the tree) on the tuned
/// shapes. `order` is the model's size order, `n` the variant count,
/// `size_params` / `size_args` the header's size parameter and argument lists.
std::string cost_model_cpp(const model::DispatchModel& m, const std::vector<std::string>& order, size_t n,
                           const std::string& size_params, const std::string& size_args);

}  // namespace kopt::gen
