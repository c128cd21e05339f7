#include "gen/dispatch_code.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "gen/shipped.h"
#include "driver/dispatch_launches.h"
#include "util/json_read.h"

namespace kopt::gen {
namespace {

/// The cost model of `tree` fitted again from the measurements a
/// specialisation records (model/dispatch.h): every variant's median on every
/// tuned case ("latency_ms"), the cases' sizes, the variants' parameters and
/// their measured occupancy (the recorded model's "blocks_per_sm" and
/// "sm_count"), with the launch expressions of the spec's template. So a run
/// or cache entry from an older kopt gets this kopt's dispatch rule, and the
/// header and `kopt` agree on it. Returns false, leaving the tree as it is,
/// when the record lacks any of these or a launch does not resolve.
bool refit_model(model::DispatchTree& tree, const store::Specialization& sp, size_t variants, const spec::Spec& spec) {
  const spec::Launch* launch = spec.template_kernel && spec.template_kernel->launch ? &*spec.template_kernel->launch : nullptr;
  if (!launch || launch->block_work.empty()) return false;
  // The recorded model's occupancy: its own document (model/dispatch.h), read
  // as written since models of older kopt versions have no typed reader.
  const nlohmann::json* m =
      sp.dispatch.is_object() && sp.dispatch.contains("model") ? &sp.dispatch["model"] : nullptr;
  if (!m || !m->is_object() || sp.latency_ms.empty() || sp.cases.empty() || sp.variants.size() != variants)
    return false;
  const nlohmann::json bps = m->value("blocks_per_sm", nlohmann::json());
  const nlohmann::json sm = m->value("sm_count", nlohmann::json());
  if (!bps.is_array() || bps.size() != variants || !sm.is_number_integer() || sm.get<int64_t>() < 1 ||
      sm.get<int64_t>() > (1 << 20))
    return false;
  std::vector<int> blocks_per_sm;
  for (const auto& b : bps) {
    if (!b.is_number_integer() || b.get<int64_t>() <= 0 || b.get<int64_t>() > (1 << 20)) return false;
    blocks_per_sm.push_back(b.get<int>());
  }
  std::vector<std::map<std::string, int64_t>> params;
  for (const store::SpecializationVariant& v : sp.variants) params.push_back(v.params);
  std::vector<model::DispatchSample> samples;
  std::map<std::string, spec::Case> cases;
  for (const auto& [name, row] : sp.latency_ms) {
    const auto c = sp.cases.find(name);
    if (row.size() != variants || c == sp.cases.end() || !c->second.sizes) return false;
    spec::Case& sc = cases[name];
    sc.name = name;
    sc.sizes = *c->second.sizes;
    model::DispatchSample d{name, {}, {}, {}, {}, {}, {}};
    for (const auto& sz : tree.sizes) {
      if (!sc.sizes.count(sz)) return false;
      d.sizes.push_back(sc.sizes.at(sz));
    }
    for (const auto& x : row) d.ms.push_back(x ? *x : NAN);
    samples.push_back(std::move(d));
  }
  // A launch that does not resolve for these parameters: keep what was recorded.
  const spec::Expr data_bytes = spec::data_bytes_expr(spec);
  if (!driver::fill_dispatch_launches(samples, *launch, data_bytes, params,
                                      [&](const std::string& name) { return &cases.at(name); })
           .empty())
    return false;
  auto fitted = model::derive_dispatch_model(tree, samples, blocks_per_sm, sm.get<int>(), launch->block_work.text(),
                                            launch->traffic_bytes.text(), data_bytes.text());
  if (!fitted) return false;
  tree.model = std::move(fitted);
  return true;
}

/// A double as C++ that reads back as the same double.
std::string fmt_exact(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::optional<model::DispatchTree> recorded_dispatch(const store::Specialization& sp, size_t variants, const std::string& where,
                                                     const spec::Spec& spec) {
  if (variants < 2 || sp.dispatch.is_null()) return std::nullopt;
  model::DispatchTree tree = model::DispatchTree::from_json(sp.dispatch, where, static_cast<int>(variants));
  if (refit_model(tree, sp, variants, spec) || tree.model || !sp.dispatch.contains("model")) return tree;
  // A model of an older rule that cannot be fitted again from this record:
  // off the tuned shapes, variant 0 (a model with no margin), never the tree
  // alone there (docs/dispatch.md: that is what the model exists for).
  model::DispatchModel m;
  m.sm_count = 1;
  m.blocks_per_sm.assign(variants, 1);
  m.ms_per_work.assign(variants, INFINITY);
  m.ms_per_byte.assign(variants, 0.0);
  m.ms_fixed.assign(variants, 0.0);
  m.ms_per_work_spread.assign(variants, 0.0);
  m.ms_per_data_byte.assign(variants, 0.0);
  m.block_work = "1";
  for (const auto& [name, c] : sp.cases) {
    (void)name;
    std::vector<int64_t> row;
    for (const auto& d : tree.sizes)
      if (c.sizes && c.sizes->count(d)) row.push_back(c.sizes->at(d));
    if (row.size() == tree.sizes.size() && !row.empty()) m.tuned.push_back(std::move(row));
  }
  if (m.tuned.empty()) {
    std::cerr << "kopt generate: " << where << ": the dispatch's cost model is from an older kopt and cannot be "
              << "fitted again from this record: the tree alone decides; re-tune\n";
    return tree;
  }
  std::cerr << "kopt generate: " << where << ": the dispatch's cost model is from an older kopt and cannot be fitted "
            << "again from this record (latencies, parameters or occupancy missing): off the tuned shapes variant 0 "
            << "runs; re-tune\n";
  tree.model = std::move(m);
  return tree;
}

namespace {

/// The model's arrays and the tuned shapes, as constexpr data.
void model_constants(std::ostringstream& h, const model::DispatchModel& m, const std::vector<std::string>& order,
                     size_t n) {
  auto doubles = [&](const char* name, const std::vector<double>& xs, const char* comment) {
    h << "constexpr double " << name << "[" << n << "] = {";
    for (size_t v = 0; v < n; ++v) {
      const double x = v < xs.size() ? xs[v] : 0.0;
      h << (v ? ", " : "") << (std::isfinite(x) ? fmt_exact(x) : std::string("HUGE_VAL"));
    }
    h << "};" << comment << "\n";
  };
  std::string names;
  for (size_t d = 0; d < order.size(); ++d) names += (d ? ", " : "") + order[d];
  h << "constexpr int kSmCount = " << m.sm_count << ";  // SMs of the GPU the variants were timed on\n"
    << "constexpr int kBlocksPerSm[" << n << "] = {";
  for (size_t v = 0; v < n; ++v) h << (v ? ", " : "") << m.blocks_per_sm[v];
  h << "};\n";
  doubles("kMsPerWork", m.ms_per_work, "  // HUGE_VAL: never timed on a tuned shape");
  doubles("kMsFixed", m.ms_fixed, "");
  doubles("kMsPerWorkSpread", m.ms_per_work_spread, "");
  if (!m.data_bytes.empty()) doubles("kMsPerDataByte", m.ms_per_data_byte, "");
  if (!m.traffic.empty()) doubles("kMsPerByte", m.ms_per_byte, "");
  if (m.margin)
    h << "constexpr double kMargin = " << fmt_exact(*m.margin) << ";\n";
  else
    h << "// No margin passed the leave-one-out check: off the tuned shapes, variant 0 runs.\n";
  const size_t width = std::max<size_t>(order.size(), 1);
  h << "constexpr long long kTuned[][" << width << "] = {";
  for (size_t t = 0; t < m.tuned.size(); ++t) {
    h << (t ? ", " : "") << "{";
    for (size_t d = 0; d < m.tuned[t].size(); ++d) h << (d ? ", " : "") << m.tuned[t][d];
    h << "}";
  }
  h << "};  // the tuned shapes (" << names << ")\n";
  if (m.support.empty() || !m.margin) return;
  h << "/// Per variant and size (" << names << "): the least and greatest value over the tuned shapes where it\n"
    << "/// ran within 2x of the fastest variant; {0, -1}: none. Off the tuned shapes a variant other than 0\n"
    << "/// runs only where every size is within dispatch_rule::kSupportFactor of its range (docs/dispatch.md).\n"
    << "constexpr long long kSupport[" << n << "][" << width << "][2] = {";
  for (size_t v = 0; v < n; ++v) {
    h << (v ? ", " : "") << "{";
    for (size_t d = 0; d < width; ++d) {
      const bool has = v < m.support.size() && m.support[v].size() == order.size() && d < order.size();
      h << (d ? ", " : "") << "{" << (has ? m.support[v][d][0] : 0) << ", " << (has ? m.support[v][d][1] : -1) << "}";
    }
    h << "}";
  }
  h << "};\n";
}

}  // namespace

std::string cost_model_cpp(const model::DispatchModel& m, const std::vector<std::string>& order, size_t n,
                           const std::string& size_params, const std::string& size_args) {
  std::ostringstream h;
  const bool traffic = !m.traffic.empty();
  const bool data = !m.data_bytes.empty();
  const bool support = !m.support.empty() && m.margin;
  h << "/// The cost model (docs/dispatch.md, \"Off the tuned shapes\"): kopt's own rule, below as\n"
    << "/// dispatch_rule (model/dispatch_rule.h in kopt), and this kernel's fitted model as its data. Off\n"
    << "/// the tuned shapes, the variant it predicts fastest runs where it is predicted faster than\n"
    << "/// variant 0 by kMargin, else variant 0:\n"
    << "/// predicted ms = kMsFixed[v] + kMsPerWork[v] * waves * block_work\n"
    << "///   + kMsPerWorkSpread[v] * spread_waves * block_work" << (traffic ? " + kMsPerByte[v] * traffic_bytes" : "")
    << (data ? " + kMsPerDataByte[v] * data_bytes" : "")
    << ",\n/// waves = ceil(spread_waves), spread_waves = blocks / (kBlocksPerSm[v] * kSmCount). The kMs\n"
    << "/// coefficients are a non-negative weighted least-squares fit of the tuned shapes' measured\n"
    << "/// medians, kBlocksPerSm is the measured occupancy, and kMargin the smallest (0.05 at least)\n"
    << "/// with which leave-one-out over the tuned shapes never ran a variant slower than variant 0.\n"
    << "namespace dispatch_rule {\n\n"
    << shipped::dispatch_rule << "\n}  // namespace dispatch_rule\n\n"
    << "namespace dispatch_model {\n";
  model_constants(h, m, order, n);
  h << "\n/// The fitted model, as dispatch_rule reads it.\n"
    << "constexpr dispatch_rule::Model kModel = {\n"
    << "    " << n << ", " << order.size() << ", kSmCount, kBlocksPerSm, kMsPerWork, kMsFixed, kMsPerWorkSpread,\n"
    << "    " << (traffic ? "kMsPerByte" : "nullptr") << ", " << (data ? "kMsPerDataByte" : "nullptr") << ", "
    << (m.margin ? "true, kMargin" : "false, 0.0") << ", &kTuned[0][0], " << m.tuned.size() << ", "
    << (support ? "&kSupport[0][0][0]" : "nullptr") << "};\n\n"
    << "/// Variant kopt_v's launch at the given sizes, as the model reads it: its blocks, and one block's\n"
    << "/// work" << (traffic ? ", the bytes it moves" : "") << (data ? ", the bytes of the case's buffers" : "")
    << " (variantN::block_work" << (traffic ? ", traffic_bytes" : "") << (data ? ", data_bytes" : "") << ").\n"
    << "inline dispatch_rule::Launch variant_launch(int kopt_v, " << size_params << ") {\n"
    << "  const LaunchConfig kopt_c = launch_config_variant(kopt_v, " << size_args << ");\n"
    << "  dispatch_rule::Launch kopt_l;\n"
    << "  kopt_l.blocks = static_cast<double>(kopt_c.grid[0]) * kopt_c.grid[1] * kopt_c.grid[2];\n"
    << "  switch (kopt_v) {\n";
  for (size_t v = 0; v < n; ++v) {
    h << "    case " << v << ": kopt_l.block_work = variant" << v << "::block_work(" << size_args << ");";
    if (traffic) h << " kopt_l.traffic = variant" << v << "::traffic_bytes(" << size_args << ");";
    if (data) h << " kopt_l.data = variant" << v << "::data_bytes(" << size_args << ");";
    h << " break;\n";
  }
  std::string x;
  for (size_t d = 0; d < order.size(); ++d) x += (d ? ", " : "") + order[d];
  h << "    default: break;\n  }\n  return kopt_l;\n}\n"
    << "}  // namespace dispatch_model\n\n"
    << "/// The variant for the given sizes: measured_variant() on the tuned shapes; elsewhere the\n"
    << "/// cost model's fastest where it passes the margin, else variant 0.\n"
    << "inline int select_variant(" << size_params << ") {\n"
    << "  const long long kopt_x[] = {" << x << "};  // the sizes in the model's order\n"
    << "  if (dispatch_rule::is_tuned(dispatch_model::kModel, kopt_x)) return measured_variant(" << size_args << ");\n"
    << "  return dispatch_rule::choose_off_tuned(dispatch_model::kModel, kopt_x, [&](int kopt_v) {\n"
    << "    return dispatch_model::variant_launch(kopt_v, " << size_args << ");\n"
    << "  });\n}\n\n";
  return h.str();
}

}  // namespace kopt::gen
