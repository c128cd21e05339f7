// Synthetic recorded spaces (see synthetic_spaces.h). Each model computes a
// latency in ms, or a failure, for every configuration; the constants are
// rough figures of a current data-centre GPU, varied by the seed.
#include "support/synthetic_spaces.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "search/space.h"
#include "util/error.h"

#include "support/noise.h"

namespace kopt::test {
namespace {

using search::Config;
using search::config_key;
using Outcome = store::RecordedOutcome;
using RecordedSpace = store::RecordedSpace;

using noise::hash_of;
using noise::normal;
using noise::unit;

/// The seed's random choices (std::mt19937_64 is the same everywhere; the
/// draws use only its raw output).
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(noise::mix(seed)) {}
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(rng_()); }
  int64_t pick(std::initializer_list<int64_t> v) { return v.begin()[rng_() % v.size()]; }
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return unit(rng_()) < p; }
  uint64_t raw() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

std::vector<int64_t> range(int64_t first, int64_t last, int64_t step = 1) {
  std::vector<int64_t> v;
  for (int64_t x = first; x <= last; x += step) v.push_back(x);
  return v;
}

std::vector<int64_t> powers_of_two(int count) {
  std::vector<int64_t> v;
  for (int i = 0; i < count; ++i) v.push_back(int64_t{1} << i);
  return v;
}

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// Calls `visit` with every configuration of `params` (the cartesian product,
/// first parameter slowest).
void for_each_config(const std::vector<spec::TuningParam>& params, const std::function<void(const Config&)>& visit) {
  std::vector<size_t> idx(params.size(), 0);
  while (true) {
    Config c;
    for (size_t d = 0; d < params.size(); ++d) c[params[d].name] = params[d].values[idx[d]];
    visit(c);
    size_t d = params.size();
    while (d > 0) {
      --d;
      if (++idx[d] < params[d].values.size()) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (params.empty()) return;
  }
}

/// A GPU: streaming multiprocessors and their limits.
struct Gpu {
  double sms, flops_per_sm, bytes_per_s;
  int64_t smem_per_block, smem_per_sm, regs_per_sm = 65536, threads_per_sm = 2048, blocks_per_sm = 32;
};

Gpu draw_gpu(Draw& d) {
  Gpu g;
  g.sms = static_cast<double>(d.pick({60, 80, 108, 132}));
  g.flops_per_sm = d.uniform(1.5e11, 3.0e11);
  g.bytes_per_s = d.uniform(0.9e12, 3.3e12);
  g.smem_per_block = d.pick({48 * 1024, 64 * 1024, 99 * 1024});
  g.smem_per_sm = std::max<int64_t>(g.smem_per_block, d.pick({64 * 1024, 100 * 1024, 164 * 1024}));
  return g;
}

/// Blocks resident on one SM (at least 0).
int64_t resident_blocks(const Gpu& g, int64_t threads, int64_t regs, int64_t smem) {
  const int64_t regs_rounded = (regs + 7) / 8 * 8;
  int64_t b = std::min(g.blocks_per_sm, g.threads_per_sm / threads);
  if (smem > 0) b = std::min(b, g.smem_per_sm / smem);
  return std::min(b, g.regs_per_sm / (regs_rounded * threads));
}

/// Latency hidden by resident warps: 1 at full occupancy, falling below a third.
double occupancy_efficiency(double occupancy, double knee) { return 1.0 - std::exp(-occupancy / knee); }

/// The cost of evaluating one configuration: a compile time growing with the
/// unrolled work, plus 32 timed runs when it ran.
Outcome with_cost(Outcome o, double compile_ms, const std::string& key, uint64_t salt) {
  compile_ms *= std::exp(0.08 * normal(hash_of(key, salt + 77)));
  const double run_ms = o.ok() ? 32 * o.ms + 2.0 : (o.verdict == "RuntimeFailedConfig" ? 5.0 : 0.0);
  o.seconds = (compile_ms + run_ms) / 1000.0;
  return o;
}

Outcome ok(double ms) { return {"ok", ms, 0}; }
Outcome failed(const char* verdict) { return {verdict, 0, 0}; }

// --- conv ---------------------------------------------------------------------------

RecordedSpace conv_space(uint64_t seed) {
  Draw d(seed * 7919 + 1);
  const Gpu g = draw_gpu(d);
  const int64_t filter = d.pick({7, 11, 15, 17}), image = 4096;
  const int64_t nbx = d.pick({8, 9, 12, 16}), nby = d.pick({5, 6}), ntx = d.pick({4, 6, 8}), nty = d.pick({4, 6, 8});
  const double regs_per_output = d.uniform(1.2, 3.0);
  // Non-power-of-two tiles: unaligned vector loads and conflicts, from
  // harmless to ten times slower, per dimension.
  const double jag_x = d.pick({1, 1, 2, 4}) * d.uniform(1.0, 1.3);
  const double jag_y = d.pick({1, 2, 4, 10}) * d.uniform(1.0, 1.3);
  const double read_only_gain = d.uniform(-0.03, 0.08), knee = d.uniform(0.15, 0.4);
  RecordedSpace s;
  s.params = {{"block_size_x", range(16, 16 * nbx, 16)}, {"block_size_y", powers_of_two(int(nby))},
              {"tile_size_x", range(1, ntx)},           {"tile_size_y", range(1, nty)},
              {"read_only", {0, 1}},                    {"use_padding", {0, 1}}};
  for_each_config(s.params, [&](const Config& c) {
    const int64_t bx = c.at("block_size_x"), by = c.at("block_size_y"), tx = c.at("tile_size_x"),
                  ty = c.at("tile_size_y"), ro = c.at("read_only"), pad = c.at("use_padding");
    const int64_t threads = bx * by;
    if (threads < 32 || threads > 1024) return;  // a restriction: not in the space
    const std::string key = config_key(c);
    const int64_t smem = (bx * tx + filter - 1 + pad) * (by * ty + filter - 1) * 4;
    const int64_t regs = static_cast<int64_t>(28 + regs_per_output * double(tx * ty) + 2 * ro);
    const double compile_ms = 600 + 25 * double(tx * ty) * double(filter) / 8;
    Outcome o;
    if (smem > g.smem_per_block) o = failed("CompilationFailedConfig");  // static shared memory over the limit
    else if (resident_blocks(g, threads, std::min<int64_t>(regs, 255), smem) == 0)
      o = failed("RuntimeFailedConfig");  // too many resources requested for launch
    else {
      const int64_t bps = resident_blocks(g, threads, std::min<int64_t>(regs, 255), smem);
      const double occupancy = double(bps * threads) / double(g.threads_per_sm);
      // Shared-memory loads per FMA: a row of the filter window reused along x.
      const double loads = double(tx + filter - 1) / double(tx * filter);
      const double conflicts = pad ? 1.0 : std::min<double>(4, double(std::gcd<int64_t>(tx, 32)));
      const double e_mem = 1.0 / (1.0 + 2.0 * loads * (0.6 + 0.4 * conflicts));
      const double spill = regs > 255 ? 1.0 + double(regs - 255) / 40.0 : 1.0;
      const double coalesce = bx % 32 ? 1.25 : 1.0;
      const double jag = (power_of_two(tx) ? 1.0 : jag_x) * (power_of_two(ty) ? 1.0 : jag_y);
      const double e = e_mem * occupancy_efficiency(occupancy, knee) * (1 + (ro ? read_only_gain : 0.0));
      const double fmas = double(image) * double(image) * double(filter * filter);
      const double blocks = std::ceil(double(image) / double(bx * tx)) * std::ceil(double(image) / double(by * ty));
      const double waves = std::ceil(blocks / (g.sms * double(std::max<int64_t>(bps, 1))));
      const double full = blocks / (g.sms * double(std::max<int64_t>(bps, 1)));
      const double t_compute = fmas / (g.sms * g.flops_per_sm * e) * (waves / full) * spill * coalesce * jag;
      const double t_memory = double(image * image) * 8.0 / g.bytes_per_s;
      o = ok(1e3 * std::max(t_compute, t_memory) * std::exp(0.007 * normal(hash_of(key, seed))) + 0.005);
    }
    s.entries.push_back({c, with_cost(o, compile_ms, key, seed)});
  });
  return s;
}

// --- pnpoly ---------------------------------------------------------------------------

RecordedSpace pnpoly_space(uint64_t seed) {
  Draw d(seed * 104729 + 2);
  const Gpu g = draw_gpu(d);
  const double points = 2e7, vertices = double(d.pick({600, 2000, 6000}));
  const int64_t nb = d.pick({16, 24, 32});
  // The cost of one edge test per algorithm combination: between_method x
  // use_method, the precomputed slopes helping some and not others.
  double cost[4][3][2];
  for (auto& bm : cost) {
    const double b = d.uniform(1.0, 1.6);
    for (auto& um : bm) {
      const double u = d.uniform(0.85, 1.3), slopes = d.uniform(0.75, 1.15);
      um[0] = b * u * d.uniform(0.95, 1.05);
      um[1] = b * u * slopes * d.uniform(0.95, 1.05);
    }
  }
  const double regs_per_tile = d.uniform(3.0, 6.0), knee = d.uniform(0.1, 0.3);
  RecordedSpace s;
  std::vector<int64_t> tiles{1};
  for (int64_t t = 2; t <= 20; t += 2) tiles.push_back(t);
  s.params = {{"block_size_x", range(32, 32 * nb, 32)},
              {"tile_size", tiles},
              {"between_method", {0, 1, 2, 3}},
              {"use_precomputed_slopes", {0, 1}},
              {"use_method", {0, 1, 2}}};
  for_each_config(s.params, [&](const Config& c) {
    const int64_t bx = c.at("block_size_x"), tile = c.at("tile_size");
    const std::string key = config_key(c);
    const int64_t regs = static_cast<int64_t>(24 + regs_per_tile * double(tile) + 6 * c.at("use_precomputed_slopes"));
    const double compile_ms = 450 + 20 * double(tile);
    Outcome o;
    if (regs > 255 || resident_blocks(g, bx, regs, 0) == 0) {
      o = failed("RuntimeFailedConfig");
    } else {
      const int64_t bps = resident_blocks(g, bx, regs, 0);
      const double occupancy = double(bps * bx) / double(g.threads_per_sm);
      const double ilp = 1.0 - 0.45 / double(tile) - 0.015 * double(tile);  // independent points per thread
      const double c_test = cost[c.at("between_method")][c.at("use_method")][c.at("use_precomputed_slopes")];
      const double blocks = std::ceil(points / double(bx * tile));
      const double per_wave = g.sms * double(bps);
      const double waves = std::ceil(blocks / per_wave), full = blocks / per_wave;
      const double t = points * vertices * c_test * 8 / (g.sms * g.flops_per_sm * ilp * occupancy_efficiency(occupancy, knee));
      o = ok(1e3 * t * (waves / full) * std::exp(0.005 * normal(hash_of(key, seed))) + 0.01);
    }
    s.entries.push_back({c, with_cost(o, compile_ms, key, seed)});
  });
  return s;
}

// --- dedisp ---------------------------------------------------------------------------

RecordedSpace dedisp_space(uint64_t seed) {
  Draw d(seed * 15485863 + 3);
  const Gpu g = draw_gpu(d);
  const double samples = 25000, channels = 1536, dms = 2048;
  const double reuse_gain = d.uniform(0.3, 0.7), stride_gain = d.uniform(0.05, 0.2), knee = d.uniform(0.2, 0.5);
  RecordedSpace s;
  s.params = {{"block_size_x", {1, 2, 4, 8, 16, 32, 48, 64, 96, 128}},
              {"block_size_y", powers_of_two(6)},
              {"tile_size_x", range(1, 4)},
              {"tile_size_y", range(1, 4)},
              {"tile_stride_x", {0, 1}},
              {"tile_stride_y", {0, 1}},
              {"loop_unroll_factor_channel", {0, 1, 2, 4}},
              {"blocks_per_sm", {0, 1, 2}}};
  for_each_config(s.params, [&](const Config& c) {
    const int64_t bx = c.at("block_size_x"), by = c.at("block_size_y"), tx = c.at("tile_size_x"),
                  ty = c.at("tile_size_y"), unroll = c.at("loop_unroll_factor_channel"), min_blocks = c.at("blocks_per_sm");
    const int64_t threads = bx * by;
    if (threads < 32 || threads > 1024) return;
    const std::string key = config_key(c);
    int64_t regs = 20 + 3 * tx * ty + 2 * std::max<int64_t>(unroll, 1);
    double spill = 1.0;
    if (min_blocks > 0) {  // __launch_bounds__: registers capped for the resident blocks asked for
      const int64_t cap = std::min<int64_t>(255, g.regs_per_sm / (threads * min_blocks) / 8 * 8);
      if (cap < 16) {
        s.entries.push_back({c, with_cost(failed("CompilationFailedConfig"), 700, key, seed)});
        return;
      }
      if (regs > cap) spill = 1.0 + 1.5 * double(regs - cap) / double(cap);
      regs = std::min(regs, cap);
    }
    const double compile_ms = 700 + 30 * double(tx * ty) + 40 * double(unroll);
    Outcome o;
    if (resident_blocks(g, threads, regs, 0) == 0) o = failed("RuntimeFailedConfig");
    else {
      const int64_t bps = resident_blocks(g, threads, regs, 0);
      const double occupancy = double(bps * threads) / double(g.threads_per_sm);
      // Memory: the input read once per DM tile (tile_size_y DMs share it),
      // coalesced when a warp reads consecutive samples.
      const double coalesce = (bx >= 32 ? 1.0 : 32.0 / double(bx) * 0.35 + 0.65) *
                              (tx > 1 && !c.at("tile_stride_x") ? 1.0 + 0.15 * double(tx - 1) : 1.0);
      const double reuse = 1.0 / (1.0 + reuse_gain * (double(ty) - 1)) * (c.at("tile_stride_y") ? 1 - stride_gain : 1.0);
      const double bytes = samples * channels * 4.0 * dms / 64.0 * reuse * coalesce;
      const double t_memory = bytes / (g.bytes_per_s * occupancy_efficiency(occupancy, knee));
      const double ops = samples * channels * dms * 2.0 * (unroll == 1 ? 1.1 : 1.0) / (1.0 + 0.04 * double(unroll));
      const double t_compute = ops / (g.sms * g.flops_per_sm * occupancy_efficiency(occupancy, 0.5 * knee)) * spill;
      o = ok(1e3 * std::max(t_memory, t_compute) * std::exp(0.006 * normal(hash_of(key, seed))) + 0.01);
    }
    s.entries.push_back({c, with_cost(o, compile_ms, key, seed)});
  });
  return s;
}

// --- random ---------------------------------------------------------------------------

/// The generic landscape's model, drawn from the seed.
struct RandomModel {
  struct Param {
    bool ordinal;
    double weight, centre;           // ordinal: weight x (x - centre)^2 on x in [0, 1]
    std::vector<double> categorical;  // otherwise: per value
    std::vector<double> jag;          // a penalty per value (log units, mostly 0)
    double resource;                  // its share of the resource (0: none)
  };
  std::vector<Param> params;
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<std::vector<double>> interaction;  // per pair: a value per value pair
  double resource_cap, resource_gain, floor_quantile, fail_rate;
};

RecordedSpace random_space(uint64_t seed) {
  Draw d(seed * 2654435761u + 4);
  RecordedSpace s;
  RandomModel m;
  const int dims = static_cast<int>(d.between(4, 7));
  uint64_t cartesian = 1;
  for (int i = 0; i < dims; ++i) {
    int64_t k = d.pick({2, 2, 3, 4, 5, 6, 8, 8, 10, 12, 16});
    if (cartesian * uint64_t(k) > 30000) k = 2;
    cartesian *= uint64_t(k);
    spec::TuningParam p{"p" + std::to_string(i), {}};
    const bool pow2 = d.chance(0.5);
    for (int64_t v = 0; v < k; ++v) p.values.push_back(pow2 && k <= 10 ? int64_t{1} << v : v + 1);
    s.params.push_back(p);
    RandomModel::Param mp;
    mp.ordinal = k > 3 && d.chance(0.75);
    mp.weight = d.uniform(0.1, 1.2);
    mp.centre = d.chance(0.4) ? double(d.pick({0, 1})) : d.uniform(0, 1);
    for (int64_t v = 0; v < k; ++v) {
      mp.categorical.push_back(d.uniform(0, mp.weight));
      mp.jag.push_back(d.chance(0.12) ? d.uniform(0.3, 1.8) : 0.0);
    }
    mp.resource = k > 2 && d.chance(0.45) ? d.uniform(0.5, 1.5) : 0.0;
    m.params.push_back(mp);
  }
  const int npairs = static_cast<int>(d.between(1, 3));
  for (int i = 0; i < npairs; ++i) {
    const size_t a = d.raw() % size_t(dims), b = (a + 1 + d.raw() % size_t(dims - 1)) % size_t(dims);
    m.pairs.push_back({a, b});
    std::vector<double> t;
    for (size_t v = 0; v < s.params[a].values.size() * s.params[b].values.size(); ++v) t.push_back(d.uniform(0, 0.5));
    m.interaction.push_back(t);
  }
  m.resource_cap = d.uniform(0.45, 0.8);
  m.resource_gain = d.uniform(0.3, 1.2);
  m.floor_quantile = d.chance(0.35) ? d.uniform(0.005, 0.03) : 0.0;
  m.fail_rate = d.uniform(0.0, 0.04);

  std::vector<std::pair<Config, double>> logs;  // ok configurations and their log latency
  double resource_total = 0;
  for (const auto& p : m.params) resource_total += p.resource;
  for_each_config(s.params, [&](const Config& c) {
    const std::string key = config_key(c);
    double log_t = 0, resource = 0;
    std::vector<size_t> idx;
    for (size_t i = 0; i < s.params.size(); ++i) {
      const auto& vals = s.params[i].values;
      const size_t v = static_cast<size_t>(std::find(vals.begin(), vals.end(), c.at(s.params[i].name)) - vals.begin());
      idx.push_back(v);
      const RandomModel::Param& p = m.params[i];
      const double x = vals.size() > 1 ? double(v) / double(vals.size() - 1) : 0.0;
      log_t += (p.ordinal ? p.weight * (x - p.centre) * (x - p.centre) : p.categorical[v]) + p.jag[v];
      resource += p.resource * x;
    }
    for (size_t k = 0; k < m.pairs.size(); ++k)
      log_t += m.interaction[k][idx[m.pairs[k].first] * s.params[m.pairs[k].second].values.size() + idx[m.pairs[k].second]];
    const double r = resource_total > 0 ? resource / resource_total : 0.0;
    const double compile_ms = 500 + 400 * r;
    if (r > m.resource_cap) {
      s.entries.push_back({c, with_cost(failed("CompilationFailedConfig"), compile_ms, key, seed)});
      return;
    }
    if (unit(hash_of(key, seed + 5)) < m.fail_rate) {
      s.entries.push_back({c, with_cost(failed("RuntimeFailedConfig"), compile_ms, key, seed)});
      return;
    }
    log_t -= m.resource_gain * r;  // more work per thread, up to the limit
    logs.push_back({c, log_t + 0.006 * normal(hash_of(key, seed))});
  });
  // The plateau: nothing is faster than a floor (memory-bound), above which
  // a few configurations still differ by their noise.
  double floor = -1e300;
  if (m.floor_quantile > 0 && !logs.empty()) {
    std::vector<double> v;
    for (const auto& [c, l] : logs) v.push_back(l);
    std::nth_element(v.begin(), v.begin() + static_cast<long>(m.floor_quantile * double(v.size())), v.end());
    floor = v[static_cast<size_t>(m.floor_quantile * double(v.size()))];
  }
  for (const auto& [c, l] : logs) {
    const std::string key = config_key(c);
    const double ms = std::exp(std::max(l, floor + 0.004 * normal(hash_of(key, seed + 9))));
    s.entries.push_back({c, with_cost(ok(ms), 500, key, seed)});
  }
  return s;
}

// --- gemm ---------------------------------------------------------------------------

RecordedSpace gemm_space(uint64_t seed) {
  Draw d(seed * 6700417 + 5);
  const Gpu g = draw_gpu(d);
  const double m = double(d.pick({1024, 2048, 4096, 8192})), n = double(d.pick({1024, 3072, 4096, 8192})),
               k = double(d.pick({512, 2048, 4096}));
  const double knee = d.uniform(0.15, 0.35), latency = d.uniform(0.3, 0.6), swizzle_gain = d.uniform(0.0, 0.15);
  const double vec_gain = d.uniform(0.05, 0.3), regs_per_acc = d.uniform(0.9, 1.3);
  RecordedSpace s;
  s.params = {{"block_m", {16, 32, 64, 128, 256}}, {"block_n", {16, 32, 64, 128, 256}},
              {"block_k", {8, 16, 32, 64}},         {"warp_m", {16, 32, 64}},
              {"warp_n", {16, 32, 64}},             {"stages", {1, 2, 3, 4}},
              {"vector", {1, 2, 4}},                {"swizzle", {0, 1}}};
  for_each_config(s.params, [&](const Config& c) {
    const int64_t bm = c.at("block_m"), bn = c.at("block_n"), bk = c.at("block_k"), wm = c.at("warp_m"),
                  wn = c.at("warp_n"), stages = c.at("stages"), vec = c.at("vector"), swz = c.at("swizzle");
    if (wm > bm || wn > bn) return;  // a restriction: a warp's tile within the block's
    const int64_t threads = bm / wm * (bn / wn) * 32;
    if (threads > 1024) return;
    const std::string key = config_key(c);
    const int64_t smem = stages * (bm + bn) * bk * 4;
    const int64_t regs = static_cast<int64_t>(40 + regs_per_acc * double(wm * wn) / 32.0 + 4 * double(vec) + 8 * swz);
    const double compile_ms = 800 + 0.4 * double(wm * wn) + 60 * double(stages);
    Outcome o;
    if (smem > g.smem_per_block) o = failed("CompilationFailedConfig");
    else if (regs > 255 || resident_blocks(g, threads, regs, smem) == 0) o = failed("RuntimeFailedConfig");
    else {
      const int64_t bps = resident_blocks(g, threads, regs, smem);
      const double occupancy = double(bps * threads) / double(g.threads_per_sm);
      // Operand reuse: a block loads (bm + bn) x bk for bm x bn x bk FMAs; a
      // warp's registers reuse (wm + wn) loads for wm x wn FMAs.
      const double e_block = 1.0 / (1.0 + 24.0 * double(bm + bn) / double(bm * bn));
      const double e_warp = 1.0 / (1.0 + 6.0 * double(wm + wn) / double(wm * wn));
      const double e_k = bk >= 16 ? 1.0 : 0.85;
      const double e_pipe = 1.0 - latency / double(stages + (stages > 1 ? 1 : 0)) * (bk >= 32 ? 0.8 : 1.0);
      const double e_vec = 1.0 + vec_gain * std::log2(double(vec)) * (bk % (4 * vec) ? 0.2 : 1.0);
      const double e_swz = 1.0 + (swz ? (bm * bn >= 128 * 64 ? swizzle_gain : -swizzle_gain) : 0.0);
      const double e = e_block * e_warp * e_k * e_pipe * e_vec * e_swz * occupancy_efficiency(occupancy, knee);
      const double blocks = std::ceil(m / double(bm)) * std::ceil(n / double(bn));
      const double per_wave = g.sms * double(bps);
      const double waves = std::ceil(blocks / per_wave), full = blocks / per_wave;
      const double t = 2.0 * m * n * k / (g.sms * g.flops_per_sm * 4.0 * e) * (waves / full);
      const double t_memory = (m * k + k * n + m * n) * 4.0 / g.bytes_per_s;
      o = ok(1e3 * std::max(t, t_memory) * std::exp(0.006 * normal(hash_of(key, seed))) + 0.005);
    }
    s.entries.push_back({c, with_cost(o, compile_ms, key, seed)});
  });
  return s;
}

}  // namespace

std::vector<std::string> synthetic_families() { return {"conv", "pnpoly", "dedisp", "random", "gemm"}; }

RecordedSpace synthetic_space(const std::string& family, uint64_t seed) {
  RecordedSpace s;
  if (family == "conv") s = conv_space(seed);
  else if (family == "pnpoly") s = pnpoly_space(seed);
  else if (family == "dedisp") s = dedisp_space(seed);
  else if (family == "random") s = random_space(seed);
  else if (family == "gemm") s = gemm_space(seed);
  else throw UsageError("kopt.replay.120", "unknown synthetic family '" + family + "' (conv, pnpoly, dedisp, random, gemm)");
  s.label = family + "-" + std::to_string(seed);
  s.source = "synthetic: a model of a " + family + " landscape (tests/support/synthetic_spaces.cpp), seed " +
             std::to_string(seed) + "; not a measurement";
  s.device = "synthetic";
  s.kernel = family;
  return s;
}

std::vector<std::pair<std::string, uint64_t>> development_spaces() {
  return {{"conv", 1},   {"conv", 2},   {"conv", 3},   {"conv", 4},   {"pnpoly", 1}, {"pnpoly", 2},
          {"pnpoly", 3}, {"dedisp", 1}, {"random", 1}, {"random", 2}, {"random", 3}, {"random", 4},
          {"random", 5}, {"random", 6}, {"gemm", 1},   {"gemm", 2},   {"gemm", 3}};
}

std::vector<std::pair<std::string, uint64_t>> holdout_spaces() {
  return {{"conv", 11},   {"conv", 12},   {"conv", 13},   {"pnpoly", 11}, {"pnpoly", 12},
          {"dedisp", 11}, {"random", 11}, {"random", 12}, {"random", 13}, {"random", 14},
          {"gemm", 11},   {"gemm", 12},   {"gemm", 13}};
}

RecordedSpace sparse_space(const std::string& family, uint64_t seed) {
  RecordedSpace full = synthetic_space(family, seed);
  const size_t n = full.entries.size();
  if (n < 4 * kSparseKeep)
    throw UsageError("kopt.replay.122", full.label + " has " + std::to_string(n) + " configurations, fewer than " +
                                            std::to_string(4 * kSparseKeep) + ": no sparse sample of it");
  // A partial Fisher-Yates shuffle of the positions picks kSparseKeep of them.
  std::vector<size_t> pos(n);
  std::iota(pos.begin(), pos.end(), size_t{0});
  Draw d(noise::mix(seed * 1000003 + 17) ^ hash_of(family, 11));
  for (size_t i = 0; i < kSparseKeep; ++i) std::swap(pos[i], pos[i + static_cast<size_t>(d.raw() % (n - i))]);
  pos.resize(kSparseKeep);
  std::sort(pos.begin(), pos.end());
  RecordedSpace s = full;
  s.entries.clear();
  for (size_t i : pos) s.entries.push_back(full.entries[i]);
  s.label = "sparse-" + full.label;
  s.source = "synthetic: " + std::to_string(kSparseKeep) + " of the " + std::to_string(n) + " configurations of " +
             full.label + " drawn uniformly (tests/support/synthetic_spaces.cpp); not a measurement";
  return s;
}

namespace {

std::vector<std::pair<std::string, uint64_t>> large_ones(const std::vector<std::pair<std::string, uint64_t>>& set) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [family, seed] : set)
    if (synthetic_space(family, seed).entries.size() >= 4 * kSparseKeep) out.push_back({family, seed});
  return out;
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> sparse_development_spaces() { return large_ones(development_spaces()); }

std::vector<std::pair<std::string, uint64_t>> sparse_holdout_spaces() { return large_ones(holdout_spaces()); }

}  // namespace kopt::test
