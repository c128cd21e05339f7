// The synthetic SGEMM space (see synthetic_sgemm.h).
#include "support/synthetic_sgemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "support/noise.h"

namespace kopt::test {
namespace {

using noise::hash_of;
using noise::normal;
using noise::unit;
using search::Config;
using search::config_key;
using search::Space;

double round_sig(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::stod(buf);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

spec::Bindings h200_constants() {
  return {{"MAX_SHARED_PER_BLOCK", 232448}, {"MAX_THREADS_PER_BLOCK", 1024}, {"REGS_PER_SM", 65536},
          {"SM_COUNT", 132}, {"WARP_SIZE", 32}};
}

Space sgemm_part_space(const spec::Spec& s) {
  const spec::Bindings constants = h200_constants();
  std::vector<spec::TuningParam> params = s.tuning.params;
  for (spec::TuningParam& p : params) {
    if (p.name == "KIND") p.values = {0};
    if (p.name == "SPLITK") p.values = {1};
  }
  std::vector<std::set<int64_t>> used(params.size());
  const Space part(params, s.tuning.constraints, constants);
  part.for_each_valid([&](const std::vector<size_t>& idx) {
    for (size_t d = 0; d < idx.size(); ++d) used[d].insert(params[d].values[idx[d]]);
  });
  for (size_t d = 0; d < params.size(); ++d) {
    std::vector<int64_t> kept;
    for (int64_t v : params[d].values)
      if (used[d].count(v)) kept.push_back(v);  // the spec's order
    params[d].values = kept;
  }
  return Space(params, s.tuning.constraints, constants);
}

std::vector<std::pair<std::string, std::array<int64_t, 3>>> performance_cases(const spec::Spec& s) {
  std::vector<std::pair<std::string, std::array<int64_t, 3>>> out;
  for (const spec::Case& c : s.cases)
    if (c.role == spec::CaseRole::performance)
      out.push_back({c.name, {c.sizes.at("M"), c.sizes.at("N"), c.sizes.at("K")}});
  return out;
}


store::RecordedSpace synthetic_sgemm_space(const Space& space,
                                           const std::vector<std::pair<std::string, std::array<int64_t, 3>>>& cases,
                                           uint64_t seed) {
  store::RecordedSpace r;
  r.label = "sgemm-synthetic";
  r.source = "synthetic: a performance model of templates/sgemm on an H200 (seed " + std::to_string(seed) +
             "); not a measurement";
  r.format = "synthetic";
  r.device = "NVIDIA H200 (synthetic)";
  r.kernel = "sgemm";
  r.params = space.params();

  // H200: 132 SMs, 128 FP32 lanes each at ~1.98 GHz; 228 KB shared memory
  // and 64K registers per SM; an effective L2 bandwidth for tile loads.
  constexpr double kSms = 132, kSmFlops = 128 * 2 * 1.98e9, kL2BytesPerS = 7e12, kLaunchMs = 0.004;
  constexpr int64_t kSmemPerSm = 233472, kRegsPerSm = 65536, kThreadsPerSm = 2048;

  for (const Config& c : space.enumerate_valid()) {
    auto v = [&](const char* n) -> int64_t {
      auto it = c.find(n);
      return it == c.end() ? 0 : it->second;
    };
    const int64_t BM = v("BM"), BN = v("BN"), BK = v("BK"), WM = v("WM"), WN = v("WN"), TM = v("TM"),
                  TN = v("TN"), STAGES = v("STAGES"), ASYNC = v("ASYNC_A"), PAD = v("PAD"), MINB = v("MINB");
    const std::string key = config_key(c);
    store::RecordedOutcome e;
    if (BM <= 0 || BN <= 0 || BK <= 0 || WM <= 0 || WN <= 0 || TM <= 0 || TN <= 0) {
      e.verdict = "compile_error";  // not the SGEMM template's parameters
      r.entries.emplace_back(c, e);
      continue;
    }
    const int64_t warps = (BM / WM) * (BN / WN), threads = warps * 32;
    const int64_t smem = std::max<int64_t>(STAGES, 2) * BK * (BM + BN + 2 * PAD) * 4;
    const int64_t staging = STAGES == 1 ? (BM * BK + BK * BN) / threads
                            : ASYNC == 0 ? BM * BK / threads
                                         : BM * BK / (2 * threads);
    const double regs_estimate = double(TM * TN + 2 * (TM + TN) + 24 + staging);
    // What ptxas really allocates: 0-30% above the estimate, in steps of 8.
    const int64_t regs_wanted = std::min<int64_t>(
        255, 8 * ceil_div(static_cast<int64_t>(regs_estimate * (1.0 + 0.3 * unit(hash_of(key, seed + 1)))), 8));
    const int64_t regs_cap = std::min<int64_t>(255, kRegsPerSm / (MINB * threads) / 8 * 8);
    const int64_t regs = std::min(regs_wanted, regs_cap);
    // Spilling to local memory when the cap (MINB) binds.
    const double spill = regs_wanted > regs_cap ? 1.0 + 1.5 * double(regs_wanted - regs_cap) / regs_cap : 1.0;

    // Failures: cp.async of A into padded rows misaligns 16-byte copies for
    // BK = 8 (a systematic wrong result), plus rare random ones.
    const double u_fail = unit(hash_of(key, seed + 2));
    if (ASYNC == 1 && PAD == 4 && BK == 8) e.verdict = "wrong_result";
    else if (u_fail < 0.008) e.verdict = "timeout";
    else if (u_fail < 0.016) e.verdict = "launch_error";
    if (!e.verdict.empty()) {
      r.entries.emplace_back(c, e);
      continue;
    }
    e.verdict = "ok";

    // Blocks resident per SM.
    const int64_t bps = std::max<int64_t>(
        1, std::min({int64_t{32}, kThreadsPerSm / threads, kSmemPerSm / (smem + 1024), kRegsPerSm / (regs * threads)}));
    // Per-thread efficiency: FMAs against shared-memory loads per k step.
    const double e_thread = double(TM * TN) / (TM * TN + 1.5 * (TM + TN));
    const double e_warp = 1.0 - 0.04 * std::abs(std::log2(double(WM) / WN));
    const double e_bk = 1.0 / (1.0 + 1.6 / BK + (STAGES == 1 ? 2.0 / BK : 0.0));
    const double e_pad = PAD ? 1.0 : (BM >= 128 ? 0.88 : 0.93);  // bank conflicts storing A transposed
    const double ilp = 1.0 + 0.5 * (std::min<int64_t>(STAGES, 3) - 1) + (ASYNC ? 0.35 : 0.0);
    const double config_noise = std::exp(0.025 * normal(hash_of(key, seed + 3)));

    double log_sum = 0;
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const auto& [name, mnk] = cases[ci];
      const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
      const int64_t blocks = ceil_div(M, BM) * ceil_div(N, BN);
      const int64_t per_sm = ceil_div(blocks, static_cast<int64_t>(kSms));  // blocks on the busiest SM
      const double active_warps = double(std::min(bps, per_sm) * warps);
      const double e_hide = 1.0 - 0.55 * std::exp(-active_warps * ilp / 5.0);
      const double e = e_thread * e_warp * e_bk * e_pad * e_hide / spill;
      const double t_compute = per_sm * 2.0 * BM * BN * K / (kSmFlops * e);
      const double bytes = blocks * 4.0 * K * (BM + BN) + 4.0 * M * N;
      const double t_memory = bytes / kL2BytesPerS;
      const double overlap = STAGES > 1 ? 0.1 : 0.3;  // of the shorter one, not hidden
      const double seconds = std::max(t_compute, t_memory) + overlap * std::min(t_compute, t_memory);
      const double case_noise = std::exp(0.01 * normal(hash_of(key, seed + 10 + ci)));
      const double ms = round_sig((kLaunchMs + seconds * 1e3) * config_noise * case_noise, 5);
      (void)name;
      log_sum += std::log(ms);
    }
    e.ms = round_sig(std::exp(log_sum / std::max<size_t>(1, cases.size())), 5);
    r.entries.emplace_back(c, e);
  }
  return r;
}

}  // namespace kopt::test
