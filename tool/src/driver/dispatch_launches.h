// The launches the dispatch's cost model (model/dispatch.h) reads: per tuned
// shape and variant, the blocks of the template's launch with the variant's
// parameters, one block's work and the launch's traffic. Filled where the
// model is fitted after a run (driver/finalists.cpp) and where kopt generate
// fits it again from a record (gen/generate.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/dispatch.h"
#include "spec/spec.h"

namespace kopt::driver {

/// Fills samples[i].blocks, .block_work, .traffic and .data_bytes (one entry
/// per variant, in the order of `params`) from `launch` (a template launch
/// with block_work; traffic only when it has traffic_bytes) and `data_bytes`
/// (spec::data_bytes_expr; data only when not empty) evaluated at the case
/// `case_of(sample.name)` with each variant's parameters. Returns an empty
/// string when every sample was filled; otherwise clears every sample's
/// launches and returns why (a case not found, or the message of the
/// kopt.launch.501 or kopt.expr error of an expression that does not resolve).
std::string fill_dispatch_launches(std::vector<model::DispatchSample>& samples, const spec::Launch& launch,
                                   const spec::Expr& data_bytes,
                                   const std::vector<std::map<std::string, int64_t>>& params,
                                   const std::function<const spec::Case*(const std::string&)>& case_of);

}  // namespace kopt::driver
