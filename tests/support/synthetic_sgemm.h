// The synthetic SGEMM space: a seeded performance model of the tiled SGEMM
// template of templates/sgemm on an H200, for developing and testing the
// search where a recorded space is too small or too few. Test support (built
// into kopt_test_support), not part of the tool; no substitute for a record.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/recorded.h"
#include "search/space.h"
#include "spec/spec.h"

namespace kopt::test {

/// The device limits `kopt optimize` assumes without a GPU (an H100/H200).
spec::Bindings h200_constants();

/// The SGEMM template's space as `kopt optimize` builds it on an H200 (the
/// spec's parameters and constraints with h200_constants()), but only its part
/// for the tiled kernel without split-K (KIND=0, SPLITK=1 where the spec has
/// those parameters), each parameter's values narrowed to those that part
/// uses: what the synthetic model describes and what the recorded H200 sweep
/// (tests/data/spaces/sgemm_h200_sweep.t4.json) measured.
search::Space sgemm_part_space(const spec::Spec& s);
/// The spec's performance cases as name -> {M, N, K}.
std::vector<std::pair<std::string, std::array<int64_t, 3>>> performance_cases(const spec::Spec& s);

/// Every valid configuration of `space` with a latency from the model (per
/// case from arithmetic intensity, occupancy, wave quantisation, pipelining
/// and bank conflicts, with deterministic noise; the objective is their
/// geometric mean over `cases`, name -> {M, N, K}), and a few percent of
/// failed verdicts (register overflow at launch, a systematic wrong-result
/// corner, random timeouts). Label "sgemm-synthetic"; untimed.
store::RecordedSpace synthetic_sgemm_space(const search::Space& space,
                                           const std::vector<std::pair<std::string, std::array<int64_t, 3>>>& cases,
                                           uint64_t seed);

}  // namespace kopt::test
