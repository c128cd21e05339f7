// JSON codec of the worker protocol's evaluate request.
//
// The decoder is strict: every field that to_json writes must be present with
// the right type (the two ends are the same binary, so a difference is a bug
// worth reporting), unknown members (such as "op") are ignored. Any problem
// throws kopt::Error("kopt.protocol.001", "$.path.to.field: what is wrong"),
// never a bare nlohmann exception and never undefined behaviour: the worker
// answers such a request with an error instead of crashing.
#include "eval/protocol.h"

#include <cmath>
#include <exception>

#include "util/error.h"

namespace kopt::eval {

using nlohmann::json;
using namespace json_io;

namespace {

// ---- small enums -------------------------------------------------------

const char* kernel_kind_name(KernelRef::Kind k) {
  switch (k) {
    case KernelRef::Kind::cubin: return "cubin";
    case KernelRef::Kind::cublas_sgemm: return "cublas_sgemm";
  }
  return "cubin";
}

const char* tolerance_kind_name(spec::Tolerance::Kind k) {
  switch (k) {
    case spec::Tolerance::Kind::allclose: return "allclose";
    case spec::Tolerance::Kind::gemm: return "gemm";
    case spec::Tolerance::Kind::sum: return "sum";
  }
  return "allclose";
}

// Parses enums through the spec's own name functions, so the spellings cannot
// drift apart.
spec::Role parse_role(const json& j, const std::string& path) {
  std::string s = get_string(j, path);
  for (spec::Role r : {spec::Role::input, spec::Role::output, spec::Role::inout, spec::Role::constant})
    if (s == spec::role_name(r)) return r;
  fail(path, "unknown role '" + s.substr(0, 60) + "'");
}

spec::CaseRole parse_case_role(const json& j, const std::string& path) {
  std::string s = get_string(j, path);
  for (spec::CaseRole r : {spec::CaseRole::correctness, spec::CaseRole::performance})
    if (s == spec::case_role_name(r)) return r;
  fail(path, "unknown case role '" + s.substr(0, 60) + "'");
}

spec::DType parse_dtype_field(const json& j, const std::string& path) {
  std::string s = get_string(j, path);
  auto t = spec::parse_dtype(s);
  if (!t) fail(path, "unknown dtype '" + s.substr(0, 60) + "'");
  return *t;
}

const json& array_member(const json& obj, const char* key, const std::string& path) {
  const json& a = member(obj, key, path);
  if (!a.is_array())
    fail(path + "." + key, std::string("expected an array, got ") + a.type_name());
  return a;
}

const json& object_member(const json& obj, const char* key, const std::string& path) {
  const json& o = member(obj, key, path);
  require_object(o, path + "." + key);
  return o;
}

std::string str(const json& obj, const char* key, const std::string& path) {
  return get_string(member(obj, key, path), path + "." + key);
}
int64_t i64(const json& obj, const char* key, const std::string& path) {
  return get_int(member(obj, key, path), path + "." + key);
}
int i32(const json& obj, const char* key, const std::string& path) {
  return get_int32(member(obj, key, path), path + "." + key);
}
double dbl(const json& obj, const char* key, const std::string& path) {
  return get_double(member(obj, key, path), path + "." + key);
}
bool boolean(const json& obj, const char* key, const std::string& path) {
  return get_bool(member(obj, key, path), path + "." + key);
}

// ---- nested types ---------------------------------------------------------

json dims_to_json(const LaunchDims& d) {
  return json{{"grid", d.grid}, {"block", d.block}, {"shared_bytes", d.shared_bytes}};
}

std::array<int64_t, 3> dim3_from_json(const json& obj, const char* key, const std::string& path) {
  const json& a = array_member(obj, key, path);
  const std::string p = path + "." + key;
  if (a.size() != 3) fail(p, "expected 3 integers, got " + std::to_string(a.size()));
  std::array<int64_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) out[i] = get_int(a[i], p + "[" + std::to_string(i) + "]");
  return out;
}

LaunchDims dims_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  LaunchDims d;
  d.grid = dim3_from_json(j, "grid", path);
  d.block = dim3_from_json(j, "block", path);
  d.shared_bytes = i64(j, "shared_bytes", path);
  return d;
}

json kernel_to_json(const KernelRef& k) {
  json j{{"kind", kernel_kind_name(k.kind)}, {"cubin_path", k.cubin_path}, {"entry", k.entry}, {"label", k.label}};
  if (!k.symbols.empty()) j["symbols"] = k.symbols;
  return j;
}

KernelRef kernel_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  KernelRef k;
  std::string kind = str(j, "kind", path);
  if (kind == "cubin")
    k.kind = KernelRef::Kind::cubin;
  else if (kind == "cublas_sgemm")
    k.kind = KernelRef::Kind::cublas_sgemm;
  else
    fail(path + ".kind", "unknown kernel kind '" + kind.substr(0, 60) + "'");
  k.cubin_path = str(j, "cubin_path", path);
  k.entry = str(j, "entry", path);
  k.label = str(j, "label", path);
  if (auto it = j.find("symbols"); it != j.end())
    for (const auto& [name, v] : object_member(j, "symbols", path).items())
      k.symbols[name] = get_string(v, path + ".symbols." + name);
  return k;
}

json tolerance_to_json(const spec::Tolerance& t) {
  json j{{"kind", tolerance_kind_name(t.kind)},
         {"rtol", from_double(t.rtol)},
         {"atol", from_double(t.atol)},
         {"factor", from_double(t.factor)},
         {"a", t.a},
         {"b", t.b},
         {"m", t.m},
         {"n", t.n},
         {"k", t.k},
         {"terms", t.terms_value},
         {"partials", t.partials_value}};
  if (t.rel_l2) j["rel_l2"] = from_double(*t.rel_l2);
  return j;
}

spec::Tolerance tolerance_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  spec::Tolerance t;
  std::string kind = str(j, "kind", path);
  if (kind == "allclose")
    t.kind = spec::Tolerance::Kind::allclose;
  else if (kind == "gemm")
    t.kind = spec::Tolerance::Kind::gemm;
  else if (kind == "sum")
    t.kind = spec::Tolerance::Kind::sum;
  else
    fail(path + ".kind", "unknown tolerance kind '" + kind.substr(0, 60) + "'");
  t.rtol = dbl(j, "rtol", path);
  t.atol = dbl(j, "atol", path);
  if (auto it = j.find("rel_l2"); it != j.end() && !it->is_null())
    t.rel_l2 = get_double(*it, path + ".rel_l2");
  t.factor = dbl(j, "factor", path);
  t.a = str(j, "a", path);
  t.b = str(j, "b", path);
  t.m = str(j, "m", path);
  t.n = str(j, "n", path);
  t.k = str(j, "k", path);
  t.terms_value = i64(j, "terms", path);
  t.partials_value = i64(j, "partials", path);
  if (t.terms_value < 1 || t.partials_value < 1) fail(path, "a sum tolerance needs terms and partials >= 1");
  return t;
}

spec::Generator generator_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  // spec::Generator::from_json expects validated input; whatever it throws on
  // a malformed object (nlohmann type/out_of_range errors, SpecError) becomes
  // a protocol error naming this field.
  try {
    return spec::Generator::from_json(j);
  } catch (const kopt::Error& e) {
    fail(path, e.what());
  } catch (const std::exception& e) {
    fail(path, std::string("bad generator: ") + e.what());
  }
}

json arg_to_json(const ArgSpec& a) {
  return json{{"name", a.name},
              {"is_buffer", a.is_buffer},
              {"dtype", spec::dtype_name(a.dtype)},
              {"role", spec::role_name(a.role)},
              {"count", a.count},
              {"generator", a.generator.to_json()},
              {"int_value", a.int_value},
              {"float_value", from_double(a.float_value)}};
}

ArgSpec arg_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  ArgSpec a;
  a.name = str(j, "name", path);
  a.is_buffer = boolean(j, "is_buffer", path);
  a.dtype = parse_dtype_field(member(j, "dtype", path), path + ".dtype");
  a.role = parse_role(member(j, "role", path), path + ".role");
  a.count = i64(j, "count", path);
  a.generator = generator_from_json(member(j, "generator", path), path + ".generator");
  a.int_value = i64(j, "int_value", path);
  a.float_value = dbl(j, "float_value", path);
  return a;
}

json case_to_json(const CaseSpec& c) {
  json args = json::array();
  for (const ArgSpec& a : c.args) args.push_back(arg_to_json(a));
  json tol = json::object();
  for (const auto& [name, t] : c.tolerance) tol[name] = tolerance_to_json(t);
  json j{{"name", c.name},
         {"role", spec::case_role_name(c.role)},
         {"sizes", c.sizes.empty() ? json::object() : json(c.sizes)},
         {"args", std::move(args)},
         {"launch", dims_to_json(c.launch)},
         {"tolerance", std::move(tol)},
         {"golden_npy", c.golden_npy.empty() ? json::object() : json(c.golden_npy)}};
  if (c.reference_launch) j["reference_launch"] = dims_to_json(*c.reference_launch);
  if (!c.constants.empty()) {
    j["constants"] = json::array();
    for (const ArgSpec& a : c.constants) j["constants"].push_back(arg_to_json(a));
  }
  if (c.kernel) j["kernel"] = kernel_to_json(*c.kernel);
  if (c.reference_kernel) j["reference_kernel"] = kernel_to_json(*c.reference_kernel);
  if (c.screen_ms) j["screen_ms"] = *c.screen_ms;
  if (c.screen_median_ms) j["screen_median_ms"] = *c.screen_median_ms;
  if (c.weight != 1) j["weight"] = c.weight;
  return j;
}

CaseSpec case_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  CaseSpec c;
  c.name = str(j, "name", path);
  c.role = parse_case_role(member(j, "role", path), path + ".role");
  for (const auto& [k, v] : object_member(j, "sizes", path).items())
    c.sizes[k] = get_int(v, path + ".sizes." + k);
  const json& args = array_member(j, "args", path);
  for (size_t i = 0; i < args.size(); ++i)
    c.args.push_back(arg_from_json(args[i], path + ".args[" + std::to_string(i) + "]"));
  c.launch = dims_from_json(member(j, "launch", path), path + ".launch");
  if (auto it = j.find("reference_launch"); it != j.end() && !it->is_null())
    c.reference_launch = dims_from_json(*it, path + ".reference_launch");
  if (j.contains("constants")) {
    const json& cs = array_member(j, "constants", path);
    for (size_t i = 0; i < cs.size(); ++i)
      c.constants.push_back(arg_from_json(cs[i], path + ".constants[" + std::to_string(i) + "]"));
  }
  if (auto it = j.find("kernel"); it != j.end()) c.kernel = kernel_from_json(*it, path + ".kernel");
  if (auto it = j.find("reference_kernel"); it != j.end())
    c.reference_kernel = kernel_from_json(*it, path + ".reference_kernel");
  for (const auto& [k, v] : object_member(j, "tolerance", path).items())
    c.tolerance[k] = tolerance_from_json(v, path + ".tolerance." + k);
  for (const auto& [k, v] : object_member(j, "golden_npy", path).items())
    c.golden_npy[k] = get_string(v, path + ".golden_npy." + k);
  if (auto it = j.find("screen_ms"); it != j.end() && !it->is_null()) {
    c.screen_ms = get_double(*it, path + ".screen_ms");
    if (!(*c.screen_ms > 0) || !std::isfinite(*c.screen_ms))
      fail(path + ".screen_ms", "expected a positive number of milliseconds");
  }
  if (auto it = j.find("screen_median_ms"); it != j.end() && !it->is_null()) {
    c.screen_median_ms = get_double(*it, path + ".screen_median_ms");
    if (!(*c.screen_median_ms > 0) || !std::isfinite(*c.screen_median_ms))
      fail(path + ".screen_median_ms", "expected a positive number of milliseconds");
  }
  if (auto it = j.find("weight"); it != j.end()) {
    c.weight = dbl(j, "weight", path);
    if (!std::isfinite(c.weight) || c.weight <= 0) json_io::fail(path + ".weight", "expected a positive finite number");
  }
  return c;
}

}  // namespace

json EvalRequest::to_json() const {
  json cs = json::array();
  for (const CaseSpec& c : cases) cs.push_back(case_to_json(c));
  return json{
      {"id", id},
      {"candidate", kernel_to_json(candidate)},
      {"reference", kernel_to_json(reference)},
      {"reference_is_golden", reference_is_golden},
      {"gemm",
       {{"a", gemm.a}, {"b", gemm.b}, {"c", gemm.c}, {"m", gemm.m}, {"n", gemm.n}, {"k", gemm.k}}},
      {"cases", std::move(cs)},
      {"timing",
       {{"warmup", timing.warmup},
        {"iterations", timing.iterations},
        {"flush_l2", timing.flush_l2},
        {"launch_timeout_ms", from_double(timing.launch_timeout_ms)}}},
      {"checks", {{"trials", checks.trials}, {"repeats", checks.repeats}}},
      {"seed", seed},
      {"time", time},
      {"time_reference", time_reference},
  };
}

EvalRequest EvalRequest::from_json(const json& j) {
  const std::string root = "$";
  require_object(j, root);
  EvalRequest r;
  r.id = i64(j, "id", root);
  r.candidate = kernel_from_json(member(j, "candidate", root), "$.candidate");
  r.reference = kernel_from_json(member(j, "reference", root), "$.reference");
  r.reference_is_golden = boolean(j, "reference_is_golden", root);
  const json& g = object_member(j, "gemm", root);
  r.gemm.a = str(g, "a", "$.gemm");
  r.gemm.b = str(g, "b", "$.gemm");
  r.gemm.c = str(g, "c", "$.gemm");
  r.gemm.m = str(g, "m", "$.gemm");
  r.gemm.n = str(g, "n", "$.gemm");
  r.gemm.k = str(g, "k", "$.gemm");
  const json& cs = array_member(j, "cases", root);
  for (size_t i = 0; i < cs.size(); ++i)
    r.cases.push_back(case_from_json(cs[i], "$.cases[" + std::to_string(i) + "]"));
  const json& t = object_member(j, "timing", root);
  r.timing.warmup = i32(t, "warmup", "$.timing");
  r.timing.iterations = i32(t, "iterations", "$.timing");
  r.timing.flush_l2 = boolean(t, "flush_l2", "$.timing");
  r.timing.launch_timeout_ms = dbl(t, "launch_timeout_ms", "$.timing");
  const json& ch = object_member(j, "checks", root);
  r.checks.trials = i32(ch, "trials", "$.checks");
  r.checks.repeats = i32(ch, "repeats", "$.checks");
  r.seed = get_uint(member(j, "seed", root), "$.seed");
  r.time = boolean(j, "time", root);
  r.time_reference = boolean(j, "time_reference", root);
  return r;
}

}  // namespace kopt::eval
