// Spec output: to_json of the spec and its generators, and equality of the spec structs.
#include "spec/spec.h"

#include "spec/spec_parse.h"

namespace kopt::spec {

using json = nlohmann::json;
namespace stdfs = std::filesystem;
using namespace detail;

// ---------------------------------------------------------------------------
// JSON output
// ---------------------------------------------------------------------------

namespace {

/// Plain integer literals are written as JSON integers, the rest as strings.
json expr_json(const Expr& e) {
  if (auto v = e.as_constant(); v && e.text() == std::to_string(*v)) return *v;
  return e.text();
}

json launch_json(const Launch& l) {
  json j;
  j["grid"] = json::array({expr_json(l.grid[0]), expr_json(l.grid[1]), expr_json(l.grid[2])});
  j["block"] = json::array({expr_json(l.block[0]), expr_json(l.block[1]), expr_json(l.block[2])});
  j["shared_bytes"] = expr_json(l.shared_bytes);
  if (!l.static_shared_bytes.empty()) j["static_shared_bytes"] = expr_json(l.static_shared_bytes);
  if (!l.block_work.empty()) j["block_work"] = expr_json(l.block_work);
  if (!l.traffic_bytes.empty()) j["traffic_bytes"] = expr_json(l.traffic_bytes);
  return j;
}

json kernel_json(const KernelSource& k, json j = json::object()) {
  j["source"] = k.source.string();
  j["entry"] = k.entry;
  if (k.launch) j["launch"] = launch_json(*k.launch);
  j["compile_options"] = k.compile_options;
  j["defines"] = json::object();
  for (const auto& [n, v] : k.defines) j["defines"][n] = v;
  return j;
}

json cublas_json(const Reference::Gemm& g, json j) {
  j.update({{"op", "sgemm"}, {"a", g.a}, {"b", g.b}, {"c", g.c}, {"m", g.m}, {"n", g.n}, {"k", g.k}});
  return j;
}

json reference_json(const Reference& r) {
  json j = {{"kind", reference_kind_name(r.kind)}};
  switch (r.kind) {
    case Reference::Kind::kernel: return kernel_json(r.kernel, j);
    case Reference::Kind::npy:
      j["outputs"] = json::object();
      for (const auto& [n, p] : r.npy) j["outputs"][n] = p.string();
      return j;
    case Reference::Kind::cublas: return cublas_json(r.gemm, j);
  }
  return j;
}

json param_json(const Param& p) {
  json j = {{"name", p.name}, {"type", dtype_name(p.dtype)}};
  if (!p.is_buffer) {
    j["value"] = p.float_value ? json(*p.float_value) : expr_json(p.value);
    return j;
  }
  j["role"] = role_name(p.role);
  j["count"] = expr_json(p.count);
  if (is_input(p)) j["init"] = p.generator.to_json();
  return j;
}

json case_json(const Case& c) {
  json j = {{"name", c.name}, {"role", case_role_name(c.role)}, {"sizes", json::object()}};
  for (const auto& [n, v] : c.sizes) j["sizes"][n] = v;
  // Written only when it is not the default, so that the fingerprint of a
  // spec without weights (and the tuning caches keyed on it) stays the same.
  if (c.weight != 1) j["weight"] = c.weight;
  if (!c.input_overrides.empty()) {
    j["inputs"] = json::object();
    for (const auto& [n, g] : c.input_overrides) j["inputs"][n] = g.to_json();
  }
  return j;
}

json tolerance_json(const Tolerance& t) {
  json j = {{"kind", tolerance_kind_name(t.kind)}};
  if (t.kind == Tolerance::Kind::allclose) {
    j.update({{"rtol", t.rtol}, {"atol", t.atol}});
    if (t.rel_l2) j["rel_l2"] = *t.rel_l2;
  } else if (t.kind == Tolerance::Kind::sum) {
    j.update({{"terms", expr_json(t.terms)}, {"factor", t.factor}, {"rtol", t.rtol}, {"atol", t.atol}});
    if (!t.partials.empty()) j["partials"] = expr_json(t.partials);
    if (!t.totals.empty()) j["totals"] = expr_json(t.totals);
  } else {
    j.update({{"factor", t.factor}, {"a", t.a}, {"b", t.b}, {"m", t.m}, {"n", t.n}, {"k", t.k}});
  }
  return j;
}

json tuning_json(const Tuning& t) {
  json params = json::object();
  for (const TuningParam& p : t.params) params[p.name] = p.values;
  json constraints = json::array();
  for (const Expr& e : t.constraints) constraints.push_back(expr_json(e));
  json j = {{"params", params}, {"constraints", constraints}, {"compile_options", t.compile_options}};
  if (!t.seeds.empty()) j["seeds"] = t.seeds;
  return j;
}

}  // namespace

json Generator::to_json() const {
  json j = {{"kind", generator_kind_name(kind)}};
  switch (kind) {
    case Kind::uniform: j.update({{"low", low}, {"high", high}}); break;
    case Kind::normal: j.update({{"mean", mean}, {"stddev", stddev}}); break;
    case Kind::int_range: j.update({{"low", int_low}, {"high", int_high}}); break;
    case Kind::constant: j["value"] = value; break;
    case Kind::iota: j.update({{"start", start}, {"step", step}}); break;
    case Kind::npy: j["path"] = npy.string(); break;
    case Kind::view: j.update({{"of", view_of}, {"start", view_start}, {"stride", view_stride}}); break;
  }
  if (fixed) j["fixed"] = true;  // written only when set: the fingerprint of other specs stays the same
  return j;
}

Generator Generator::from_json(const json& j) {
  // Validated anyway: relative npy paths resolve against the current folder.
  const Ctx ctx("<generator>", stdfs::current_path());
  return parse_generator(ctx, j, "$");
}

json to_json(const Spec& s) {
  json j;
  j["format_version"] = 1;
  j["name"] = s.name;
  j["description"] = s.description;
  j["seed"] = s.seed;
  j["signature"] = json::array();
  for (const Param& p : s.signature) j["signature"].push_back(param_json(p));
  j["launch"] = launch_json(s.launch);
  j["reference"] = reference_json(s.reference);
  if (s.initial) j["initial"] = kernel_json(*s.initial);
  if (s.template_kernel) j["template"] = kernel_json(*s.template_kernel);
  if (s.cublas_baseline) j["baseline"] = cublas_json(*s.cublas_baseline, json{{"kind", "cublas"}});
  j["cases"] = json::array();
  for (const Case& c : s.cases) j["cases"].push_back(case_json(c));
  j["tolerance"] = json::object();
  for (const auto& [n, t] : s.tolerance) j["tolerance"][n] = tolerance_json(t);
  j["timing"] = {{"warmup", s.timing.warmup},
                 {"iterations", s.timing.iterations},
                 {"flush_l2", s.timing.flush_l2},
                 {"launch_timeout_ms", s.timing.launch_timeout_ms}};
  j["checks"] = {{"trials", s.checks.trials}, {"repeats", s.checks.repeats}};
  j["tuning"] = tuning_json(s.tuning);
  // Written only when given, so that the fingerprint of a spec without them stays the same.
  if (!s.defines.empty()) {
    j["defines"] = json::object();
    for (const auto& [n, e] : s.defines) j["defines"][n] = expr_json(e);
  }
  return j;
}

// ---------------------------------------------------------------------------
// Equality
// ---------------------------------------------------------------------------

bool operator==(const Generator& a, const Generator& b) {
  if (a.kind != b.kind || a.fixed != b.fixed) return false;
  switch (a.kind) {
    case Generator::Kind::uniform: return a.low == b.low && a.high == b.high;
    case Generator::Kind::normal: return a.mean == b.mean && a.stddev == b.stddev;
    case Generator::Kind::int_range: return a.int_low == b.int_low && a.int_high == b.int_high;
    case Generator::Kind::constant: return a.value == b.value;
    case Generator::Kind::iota: return a.start == b.start && a.step == b.step;
    case Generator::Kind::npy: return a.npy == b.npy;
    case Generator::Kind::view:
      return a.view_of == b.view_of && a.view_start == b.view_start && a.view_stride == b.view_stride;
  }
  return false;
}

bool operator==(const Param& a, const Param& b) {
  if (a.name != b.name || a.is_buffer != b.is_buffer || a.dtype != b.dtype) return false;
  if (!a.is_buffer) return a.value == b.value && a.float_value == b.float_value;
  return a.role == b.role && a.count == b.count && (!is_input(a) || a.generator == b.generator);
}

bool operator==(const Case& a, const Case& b) {
  return a.name == b.name && a.sizes == b.sizes && a.role == b.role &&
         a.input_overrides == b.input_overrides && a.weight == b.weight && a.defines == b.defines;
}

bool operator==(const Launch& a, const Launch& b) {
  for (int i = 0; i < 3; ++i) {
    if (a.grid[i] != b.grid[i] || a.block[i] != b.block[i]) return false;
  }
  return a.shared_bytes == b.shared_bytes && a.static_shared_bytes == b.static_shared_bytes &&
         a.block_work == b.block_work && a.traffic_bytes == b.traffic_bytes;
}

bool operator==(const KernelSource& a, const KernelSource& b) {
  return a.source == b.source && a.entry == b.entry && a.launch == b.launch &&
         a.compile_options == b.compile_options && a.defines == b.defines;
}

bool operator==(const Reference::Gemm& a, const Reference::Gemm& b) {
  return a.a == b.a && a.b == b.b && a.c == b.c && a.m == b.m && a.n == b.n && a.k == b.k;
}

bool operator==(const Reference& a, const Reference& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Reference::Kind::kernel: return a.kernel == b.kernel;
    case Reference::Kind::npy: return a.npy == b.npy;
    case Reference::Kind::cublas: return a.gemm == b.gemm;
  }
  return false;
}

bool operator==(const Tolerance& a, const Tolerance& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == Tolerance::Kind::allclose) {
    return a.rtol == b.rtol && a.atol == b.atol && a.rel_l2 == b.rel_l2;
  }
  if (a.kind == Tolerance::Kind::sum) {
    return a.terms == b.terms && a.partials == b.partials && a.totals == b.totals && a.factor == b.factor &&
           a.rtol == b.rtol && a.atol == b.atol;
  }
  return a.factor == b.factor && a.a == b.a && a.b == b.b && a.m == b.m && a.n == b.n && a.k == b.k;
}

bool operator==(const Timing& a, const Timing& b) {
  return a.warmup == b.warmup && a.iterations == b.iterations && a.flush_l2 == b.flush_l2 &&
         a.launch_timeout_ms == b.launch_timeout_ms;
}

bool operator==(const Checks& a, const Checks& b) {
  return a.trials == b.trials && a.repeats == b.repeats;
}

bool operator==(const TuningParam& a, const TuningParam& b) {
  return a.name == b.name && a.values == b.values;
}

bool operator==(const Tuning& a, const Tuning& b) {
  return a.params == b.params && a.constraints == b.constraints &&
         a.compile_options == b.compile_options && a.seeds == b.seeds;
}

bool operator==(const Spec& a, const Spec& b) {
  return a.path == b.path && a.name == b.name && a.description == b.description &&
         a.seed == b.seed && a.signature == b.signature && a.cases == b.cases &&
         a.reference == b.reference && a.initial == b.initial &&
         a.template_kernel == b.template_kernel && a.cublas_baseline == b.cublas_baseline &&
         a.launch == b.launch &&
         a.tolerance == b.tolerance && a.timing == b.timing && a.checks == b.checks &&
         a.tuning == b.tuning && a.defines == b.defines;
}

}  // namespace kopt::spec
