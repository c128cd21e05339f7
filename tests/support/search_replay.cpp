// Replaying a recorded sweep (see search_replay.h): record I/O, the simulated
// evaluator, the per-strategy statistics, and the synthetic SGEMM record.
#include "support/search_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include "search/strategy.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#include "support/noise.h"

namespace kopt::search::replay {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& origin, const std::string& path, const std::string& what) {
  throw SpecError("kopt.replay.101", origin + ": " + path + ": " + what);
}

const json& member(const json& j, const char* key, const std::string& origin, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end()) bad(origin, path, std::string("missing \"") + key + "\"");
  return *it;
}

std::string get_string(const json& j, const std::string& origin, const std::string& path) {
  if (!j.is_string()) bad(origin, path, std::string("expected a string, got ") + j.type_name());
  return j.get<std::string>();
}

double get_number(const json& j, const std::string& origin, const std::string& path) {
  if (!j.is_number()) bad(origin, path, std::string("expected a number, got ") + j.type_name());
  return j.get<double>();
}

int64_t get_integer(const json& j, const std::string& origin, const std::string& path) {
  if (!j.is_number_integer()) bad(origin, path, std::string("expected an integer, got ") + j.type_name());
  return j.get<int64_t>();
}

/// Rounds to `digits` significant digits (the synthetic record stays compact).
double round_sig(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::stod(buf);
}

/// One entry on one line, keys in reading order: params, verdict, geomean_ms, cases_ms.
std::string entry_line(const Entry& e) {
  json params = json::object();
  for (const auto& [k, v] : e.params) params[k] = v;
  std::string line = "{\"params\":" + dump_json(params) + ",\"verdict\":" + dump_json(json(e.verdict));
  if (e.verdict == "ok") {
    if (e.geomean_ms) line += ",\"geomean_ms\":" + dump_json(json(*e.geomean_ms));
    json cases = json::object();
    for (const auto& [k, v] : e.cases_ms) cases[k] = v;
    line += ",\"cases_ms\":" + dump_json(cases);
  }
  return line + "}";
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// --- the synthetic model -----------------------------------------------------

using noise::hash_of;
using noise::normal;
using noise::unit;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

spec::Bindings h200_constants() {
  return {{"MAX_SHARED_PER_BLOCK", 232448}, {"MAX_THREADS_PER_BLOCK", 1024}, {"REGS_PER_SM", 65536},
          {"SM_COUNT", 132}, {"WARP_SIZE", 32}};
}

// --- record I/O ----------------------------------------------------------------

Record parse_record(const json& doc, const std::string& origin) {
  if (!doc.is_object()) bad(origin, "$", "expected an object");
  Record r;
  r.format_version = static_cast<int>(get_integer(member(doc, "format_version", origin, "$"), origin, "$.format_version"));
  if (r.format_version != 1)
    bad(origin, "$.format_version", "unsupported version " + std::to_string(r.format_version) + " (expected 1)");
  if (auto it = doc.find("source"); it != doc.end()) r.source = get_string(*it, origin, "$.source");
  if (auto it = doc.find("device"); it != doc.end()) {
    if (!it->is_object()) bad(origin, "$.device", "expected an object");
    if (auto n = it->find("name"); n != it->end()) r.device_name = get_string(*n, origin, "$.device.name");
    if (auto c = it->find("cc"); c != it->end()) r.device_cc = get_string(*c, origin, "$.device.cc");
  }
  if (auto it = doc.find("constants"); it != doc.end()) {
    if (!it->is_object()) bad(origin, "$.constants", "expected an object");
    for (const auto& [k, v] : it->items()) r.constants[k] = get_integer(v, origin, "$.constants." + k);
  }
  r.spec = get_string(member(doc, "spec", origin, "$"), origin, "$.spec");
  const json& params = member(doc, "params", origin, "$");
  if (!params.is_array() || params.empty()) bad(origin, "$.params", "expected a non-empty array of names");
  for (size_t i = 0; i < params.size(); ++i)
    r.params.push_back(get_string(params[i], origin, "$.params[" + std::to_string(i) + "]"));
  std::vector<std::string> sorted_names = r.params;
  std::sort(sorted_names.begin(), sorted_names.end());
  if (std::adjacent_find(sorted_names.begin(), sorted_names.end()) != sorted_names.end())
    bad(origin, "$.params", "a name is listed twice");

  const json& entries = member(doc, "entries", origin, "$");
  if (!entries.is_array()) bad(origin, "$.entries", "expected an array");
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string p = "$.entries[" + std::to_string(i) + "]";
    const json& je = entries[i];
    if (!je.is_object()) bad(origin, p, "expected an object");
    Entry e;
    const json& jp = member(je, "params", origin, p);
    if (!jp.is_object()) bad(origin, p + ".params", "expected an object");
    for (const auto& [k, v] : jp.items()) e.params[k] = get_integer(v, origin, p + ".params." + k);
    std::vector<std::string> names;
    for (const auto& [k, v] : e.params) names.push_back(k);
    if (names != sorted_names) bad(origin, p + ".params", "its names differ from $.params");
    e.verdict = get_string(member(je, "verdict", origin, p), origin, p + ".verdict");
    if (e.verdict == "ok") {
      e.geomean_ms = get_number(member(je, "geomean_ms", origin, p), origin, p + ".geomean_ms");
      if (!(std::isfinite(*e.geomean_ms) && *e.geomean_ms > 0))
        bad(origin, p + ".geomean_ms", "must be a positive number");
      if (auto c = je.find("cases_ms"); c != je.end()) {
        if (!c->is_object()) bad(origin, p + ".cases_ms", "expected an object");
        for (const auto& [k, v] : c->items()) e.cases_ms[k] = get_number(v, origin, p + ".cases_ms." + k);
      }
    }
    const std::string key = config_key(e.params);
    if (!seen.emplace(key, i).second)
      bad(origin, p, "configuration " + key + " is also $.entries[" + std::to_string(seen[key]) + "]");
    r.entries.push_back(std::move(e));
  }
  return r;
}

Record load_record(const std::filesystem::path& file) {
  json doc;
  try {
    doc = json::parse(fs::read_file(file));
  } catch (const json::parse_error& e) {
    throw SpecError("kopt.replay.100", file.string() + ": not valid JSON: " + e.what());
  } catch (const Error& e) {
    throw SpecError("kopt.replay.100", file.string() + ": cannot be read: " + e.what());
  }
  return parse_record(doc, file.string());
}

std::string dump_record(const Record& r) {
  json head;
  head["format_version"] = r.format_version;
  head["source"] = r.source;
  head["device"] = {{"name", r.device_name}, {"cc", r.device_cc}};
  if (!r.constants.empty()) {
    head["constants"] = json::object();
    for (const auto& [k, v] : r.constants) head["constants"][k] = v;
  }
  head["spec"] = r.spec;
  head["params"] = r.params;
  std::string out = "{";
  for (const char* k : {"format_version", "source", "device", "constants", "spec", "params"}) {
    if (!head.contains(k)) continue;
    out += std::string(out.size() > 1 ? ",\n " : "") + json(k).dump() + ": " + dump_json(head[k]);
  }
  out += ",\n \"entries\": [\n";
  for (size_t i = 0; i < r.entries.size(); ++i)
    out += "  " + entry_line(r.entries[i]) + (i + 1 < r.entries.size() ? ",\n" : "\n");
  out += " ]\n}\n";
  return out;
}

// --- the replay ------------------------------------------------------------------

Space replay_space(const Space& full, const Record& r) {
  // Valid in `full` and recorded. The constraints are checked here, once per
  // entry: the replayed space is the unconstrained one restricted to these
  // keys, which has the same valid configurations as `full` restricted to the
  // record but enumerates them without evaluating every constraint for every
  // point of the cartesian product (each strategy's initialize() enumerates).
  auto keys = std::make_shared<std::unordered_map<std::string, bool>>();
  for (const Entry& e : r.entries)
    if (full.valid(e.params)) (*keys)[config_key(e.params)] = true;
  return Space(full.params(), {}, full.constants())
      .restricted_to([keys](const Config& c) { return keys->count(config_key(c)) != 0; },
                     "not a valid recorded configuration");
}

const StrategyResult* ReplayReport::find(const std::string& strategy) const {
  for (const StrategyResult& s : results)
    if (s.strategy == strategy) return &s;
  return nullptr;
}

ReplayReport run_replay(const Space& full, const Record& r, const std::vector<std::string>& strategies, int seeds,
                        double tolerance, const std::string& label) {
  ReplayReport rep;
  rep.record = label;
  rep.tolerance = tolerance;
  rep.seeds = seeds;
  rep.recorded = r.entries.size();

  // The simulated evaluator: config key -> recorded entry (valid ones only).
  std::unordered_map<std::string, const Entry*> table;
  for (const Entry& e : r.entries) {
    if (!full.valid(e.params)) {
      ++rep.outside_space;
      continue;
    }
    table[config_key(e.params)] = &e;
  }
  full.for_each_valid([&](const std::vector<size_t>&) { ++rep.space_valid; });
  rep.size = table.size();
  rep.unrecorded = rep.space_valid - rep.size;

  double best = std::numeric_limits<double>::infinity();
  for (const auto& [key, e] : table) {
    if (!e->ok()) {
      ++rep.failed;
    } else if (*e->geomean_ms < best || (*e->geomean_ms == best && key < rep.best_config)) {
      best = *e->geomean_ms;
      rep.best_config = key;
    }
  }
  if (!std::isfinite(best))
    throw SpecError("kopt.replay.102", label + ": no recorded configuration of the space passed (verdict ok)");
  rep.best_ms = best;
  const double target = best * (1 + tolerance);
  for (const auto& [key, e] : table)
    if (e->ok() && *e->geomean_ms <= target) ++rep.within;
  rep.default_strategy = default_strategy(rep.size);

  const Space space = replay_space(full, r);
  for (const std::string& name : strategies) {
    StrategyResult sr;
    sr.strategy = name;
    auto strategy = make_strategy(name);
    for (int seed = 1; seed <= seeds; ++seed) {
      strategy->initialize(space, static_cast<uint64_t>(seed));
      size_t n = 0;
      bool reached = false;
      while (!reached) {
        std::optional<Config> c = strategy->next();
        if (!c) break;  // cannot happen: the best is in the space and nothing repeats
        ++n;
        const Entry* e = table.at(config_key(*c));
        strategy->observe({*c, e->ok(), e->ok() ? *e->geomean_ms : 0.0});
        reached = e->ok() && *e->geomean_ms <= target;
      }
      if (!reached)
        throw Error("kopt.replay.103", label + ": " + name + " seed " + std::to_string(seed) +
                                           " ran out of proposals before reaching the target");
      sr.evaluations.push_back(n);
    }
    std::vector<size_t> sorted = sr.evaluations;
    std::sort(sorted.begin(), sorted.end());
    sr.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / std::max<size_t>(1, sorted.size());
    sr.median = sorted.empty() ? 0 : sorted[(sorted.size() - 1) / 2];
    sr.worst = sorted.empty() ? 0 : sorted.back();
    rep.results.push_back(std::move(sr));
  }
  return rep;
}

json ReplayReport::to_json() const {
  json j{{"record", record},         {"space_valid", space_valid}, {"recorded", recorded},
         {"outside_space", outside_space}, {"unrecorded", unrecorded}, {"size", size},
         {"failed", failed},         {"best_ms", best_ms},         {"best_config", best_config},
         {"tolerance", tolerance},   {"within", within},           {"default_strategy", default_strategy},
         {"seeds", seeds}};
  json rs = json::array();
  for (const StrategyResult& s : results)
    rs.push_back({{"strategy", s.strategy}, {"mean", s.mean}, {"median", s.median}, {"worst", s.worst},
                  {"mean_fraction", size ? s.mean / size : 0.0}, {"evaluations", s.evaluations}});
  j["results"] = std::move(rs);
  return j;
}

std::string ReplayReport::table() const {
  std::ostringstream out;
  out << "Replay of " << record << ": " << size << " configurations (" << space_valid
      << " valid in the spec's space, " << unrecorded << " of them unrecorded";
  if (outside_space) out << "; " << outside_space << " recorded ones outside the space dropped";
  out << "), " << failed << " failed; best " << fmt("%.4g", best_ms) << " ms (" << best_config << "), " << within
      << " within " << fmt("%g", tolerance * 100) << "% of it. Evaluations until the first result within "
      << fmt("%g", tolerance * 100) << "%, seeds 1-" << seeds << " (default strategy for this size: "
      << default_strategy << "):\n\n";
  const StrategyResult* random = find("random");
  out << "| strategy | mean | median | worst | mean / space | mean vs random |\n";
  out << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const StrategyResult& s : results) {
    out << "| " << s.strategy << (s.strategy == default_strategy ? " (default)" : "") << " | "
        << fmt("%.1f", s.mean) << " | " << s.median << " | " << s.worst << " | "
        << fmt("%.1f%%", size ? 100.0 * s.mean / size : 0.0) << " | "
        << (random && random->mean > 0 ? fmt("%.2fx", s.mean / random->mean) : std::string("-")) << " |\n";
  }
  return out.str();
}

Space sgemm_part_space(const spec::Spec& s, const Record& r) {
  const spec::Bindings constants = r.constants.empty() ? h200_constants() : r.constants;
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


// --- the synthetic SGEMM record ------------------------------------------------------

Record synthetic_sgemm_record(const Space& space,
                              const std::vector<std::pair<std::string, std::array<int64_t, 3>>>& cases,
                              uint64_t seed) {
  Record r;
  r.source = "synthetic: search::replay::synthetic_sgemm_record(seed " + std::to_string(seed) +
             "), a performance model of templates/sgemm on an H200; not a measurement";
  r.device_name = "NVIDIA H200 (synthetic)";
  r.device_cc = "9.0";
  r.constants = space.constants();
  r.spec = "templates/sgemm/sgemm.json";
  for (const auto& p : space.params()) r.params.push_back(p.name);

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
    Entry e;
    e.params = c;
    if (BM <= 0 || BN <= 0 || BK <= 0 || WM <= 0 || WN <= 0 || TM <= 0 || TN <= 0) {
      e.verdict = "compile_error";  // not the SGEMM template's parameters
      r.entries.push_back(std::move(e));
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
      r.entries.push_back(std::move(e));
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
    std::map<std::string, double> cases_ms;
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
      cases_ms[name] = ms;
      log_sum += std::log(ms);
    }
    e.cases_ms = std::move(cases_ms);
    e.geomean_ms = round_sig(std::exp(log_sum / std::max<size_t>(1, cases.size())), 5);
    r.entries.push_back(std::move(e));
  }
  return r;
}

}  // namespace kopt::search::replay
