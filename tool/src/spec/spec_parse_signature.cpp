// Spec parser, first pass: the signature (scalars, buffers, input generators) and the cases.
#include "spec/spec_parse.h"

#include <cmath>
#include <set>
#include <utility>

#include "util/json_read.h"

namespace kopt::spec::detail {

namespace stdfs = std::filesystem;

namespace {

const std::vector<std::pair<std::string, Generator::Kind>> kGeneratorKinds = {
    {"uniform", Generator::Kind::uniform},     {"normal", Generator::Kind::normal},
    {"int_range", Generator::Kind::int_range}, {"constant", Generator::Kind::constant},
    {"iota", Generator::Kind::iota},           {"npy", Generator::Kind::npy},
    {"view", Generator::Kind::view}};

}  // namespace

Generator parse_generator(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  Generator g;
  g.kind = parse_enum(ctx, need(ctx, j, "kind", path), child(path, "kind"), "kopt.spec.110",
                      "generator kind", kGeneratorKinds);
  auto num = [&](const char* key, double& field) {
    if (const json* v = opt(j, key)) field = get_finite(ctx, *v, child(path, key));
  };
  switch (g.kind) {
    case Generator::Kind::uniform:
      check_keys(ctx, j, path, {"kind", "low", "high", "fixed"});
      num("low", g.low);
      num("high", g.high);
      if (!(g.low < g.high)) {
        ctx.fail("kopt.spec.119", path, "uniform needs low < high, got [" + json(g.low).dump() +
                                            ", " + json(g.high).dump() + ")");
      }
      break;
    case Generator::Kind::normal:
      check_keys(ctx, j, path, {"kind", "mean", "stddev", "fixed"});
      num("mean", g.mean);
      num("stddev", g.stddev);
      if (g.stddev < 0) ctx.fail("kopt.spec.119", child(path, "stddev"), "expected stddev >= 0");
      break;
    case Generator::Kind::int_range:
      check_keys(ctx, j, path, {"kind", "low", "high", "fixed"});
      if (const json* v = opt(j, "low")) g.int_low = get_int(ctx, *v, child(path, "low"));
      if (const json* v = opt(j, "high")) g.int_high = get_int(ctx, *v, child(path, "high"));
      if (g.int_low > g.int_high) {
        ctx.fail("kopt.spec.119", path, "int_range needs low <= high, got [" +
                                            std::to_string(g.int_low) + ", " +
                                            std::to_string(g.int_high) + "]");
      }
      break;
    case Generator::Kind::constant:
      check_keys(ctx, j, path, {"kind", "value", "fixed"});
      g.value = get_finite(ctx, need(ctx, j, "value", path), child(path, "value"));
      break;
    case Generator::Kind::iota:
      check_keys(ctx, j, path, {"kind", "start", "step", "fixed"});
      num("start", g.start);
      num("step", g.step);
      break;
    case Generator::Kind::npy:
      check_keys(ctx, j, path, {"kind", "path", "fixed"});
      g.npy = ctx.resolve(get_nonempty_string(ctx, need(ctx, j, "path", path), child(path, "path")));
      break;
    case Generator::Kind::view:
      // Which buffer, and whether the elements are there, is checked with the signature.
      check_keys(ctx, j, path, {"kind", "of", "start", "stride"});
      g.view_of = get_nonempty_string(ctx, need(ctx, j, "of", path), child(path, "of"));
      if (const json* v = opt(j, "start")) {
        g.view_start = get_int_in(ctx, *v, child(path, "start"), 0, INT64_MAX, "start >= 0");
      }
      if (const json* v = opt(j, "stride")) {
        g.view_stride = get_int_in(ctx, *v, child(path, "stride"), 1, INT64_MAX, "stride >= 1");
      }
      break;
  }
  if (const json* v = opt(j, "fixed")) g.fixed = get_bool(ctx, *v, child(path, "fixed"));
  return g;
}

namespace {

Generator default_generator(DType t) {
  Generator g;  // uniform [-1, 1)
  if (!dtype_is_float(t)) {
    g.kind = Generator::Kind::int_range;  // [0, 9]: representable in every integer type
  }
  return g;
}
DType parse_type(const Ctx& ctx, const json& j, const std::string& path) {
  const std::string s = get_string(ctx, j, path);
  if (auto t = parse_dtype(s)) return *t;
  std::vector<std::string> names;
  for (const std::string& n : dtype_names()) names.push_back(n);
  ctx.fail("kopt.spec.108", path, "unknown type '" + s + "'; expected one of: " + join(names) +
                                      " (aliases: float32, float64, float16, fp32, fp64, fp16, "
                                      "bf16, int, uint)");
}

void parse_scalar(const Ctx& ctx, const json& j, const std::string& path, Param& p) {
  for (const char* k : {"role", "count", "init"}) {
    if (j.contains(k)) {
      ctx.fail("kopt.spec.128", child(path, k),
               std::string("a scalar parameter (it has 'value') cannot have '") + k +
                   "'; a buffer has 'role' and 'count' and no 'value'");
    }
  }
  check_keys(ctx, j, path, {"name", "type", "value"});
  p.is_buffer = false;
  const std::string vp = child(path, "value");
  const json& v = j["value"];
  if (v.is_number_float()) {
    if (!dtype_is_float(p.dtype)) {
      ctx.fail("kopt.spec.127", vp, std::string("a ") + dtype_name(p.dtype) +
                                        " scalar needs an integer or an expression, got " + describe(v));
    }
    p.float_value = get_finite(ctx, v, vp);
    const double max = dtype_max_finite(p.dtype);
    if (std::fabs(*p.float_value) > max) {
      ctx.fail("kopt.spec.127", vp, "value " + json(*p.float_value).dump() + " of scalar '" + p.name +
                                        "' is beyond the range of " + dtype_name(p.dtype) +
                                        " (largest finite value " + json(max).dump() + ")");
    }
  } else {
    p.value = get_expr(ctx, v, vp);
  }
}

void parse_buffer(const Ctx& ctx, const json& j, const std::string& path, Param& p) {
  check_keys(ctx, j, path, {"name", "type", "role", "count", "init"});
  p.is_buffer = true;
  p.role = parse_enum(ctx, need(ctx, j, "role", path), child(path, "role"), "kopt.spec.109",
                      "buffer role",
                      std::vector<std::pair<std::string, Role>>{
                          {"input", Role::input}, {"output", Role::output}, {"inout", Role::inout},
                          {"constant", Role::constant}});
  p.count = get_expr(ctx, need(ctx, j, "count", path), child(path, "count"));
  p.generator = default_generator(p.dtype);
  if (const json* init = opt(j, "init")) {
    if (p.role == Role::output) {
      ctx.fail("kopt.spec.128", child(path, "init"),
               "an output buffer has no initial contents; use role 'inout' to initialize it");
    }
    p.generator = parse_generator(ctx, *init, child(path, "init"));
  }
}

/// "a::b::c" (an optional leading "::"): identifiers joined by "::".
bool is_qualified_name(const std::string& name) {
  size_t at = name.rfind("::", 0) == 0 ? 2 : 0;
  while (true) {
    const size_t next = name.find("::", at);
    if (!is_identifier(name.substr(at, next == std::string::npos ? std::string::npos : next - at))) return false;
    if (next == std::string::npos) return true;
    at = next + 2;
  }
}

std::map<std::string, int64_t> parse_sizes(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  std::map<std::string, int64_t> out;
  for (const auto& [name, value] : j.items()) {
    const std::string p = child(path, name);
    check_identifier(ctx, name, p, "size name");
    const bool ok = value.is_number_integer() &&
                    !(value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX)) &&
                    value.get<int64_t>() > 0;
    if (!ok) {
      ctx.fail("kopt.spec.115", p, "expected a positive integer, got " + describe(value) +
                                       json_quoted_number_hint(value));
    }
    out[name] = value.get<int64_t>();
  }
  return out;
}
}  // namespace

std::vector<Param> parse_signature(const Ctx& ctx, const json& j, const std::string& path) {
  expect_array(ctx, j, path);
  std::vector<Param> out;
  std::set<std::string> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = child(path, i);
    const json& e = j[i];
    expect_object(ctx, e, p);
    Param param;
    param.name = get_string(ctx, need(ctx, e, "name", p), child(p, "name"));
    // A constant names a C++ variable, which may be qualified ("ns::table").
    const bool qualified_constant = param.name.find("::") != std::string::npos && e.contains("role") &&
                                    e["role"] == "constant" && is_qualified_name(param.name);
    if (!qualified_constant) check_identifier(ctx, param.name, child(p, "name"), "parameter name");
    if (!seen.insert(param.name).second) {
      ctx.fail("kopt.spec.107", child(p, "name"), "duplicate parameter name '" + param.name + "'");
    }
    param.dtype = parse_type(ctx, need(ctx, e, "type", p), child(p, "type"));
    if (e.contains("value")) {
      parse_scalar(ctx, e, p, param);
    } else {
      parse_buffer(ctx, e, p, param);
    }
    out.push_back(std::move(param));
  }
  return out;
}

std::vector<Case> parse_cases(const Ctx& ctx, const json& j, const std::string& path) {
  expect_array(ctx, j, path);
  if (j.empty()) ctx.fail("kopt.spec.117", path, "expected at least one case");
  std::vector<Case> out;
  std::set<std::string> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = child(path, i);
    const json& e = j[i];
    expect_object(ctx, e, p);
    check_keys(ctx, e, p, {"name", "role", "sizes", "inputs", "weight"});
    Case c;
    c.name = get_string(ctx, need(ctx, e, "name", p), child(p, "name"));
    check_file_safe(ctx, c.name, child(p, "name"), "case name");
    if (!seen.insert(c.name).second) {
      ctx.fail("kopt.spec.107", child(p, "name"), "duplicate case name '" + c.name + "'");
    }
    if (const json* v = opt(e, "role")) {
      c.role = parse_enum(ctx, *v, child(p, "role"), "kopt.spec.109", "case role",
                          std::vector<std::pair<std::string, CaseRole>>{
                              {"correctness", CaseRole::correctness},
                              {"performance", CaseRole::performance}});
    }
    if (const json* v = opt(e, "sizes")) c.sizes = parse_sizes(ctx, *v, child(p, "sizes"));
    if (const json* v = opt(e, "weight")) {
      c.weight = get_finite(ctx, *v, child(p, "weight"));
      if (!(c.weight > 0) || c.weight > 1e30)
        ctx.fail("kopt.spec.119", child(p, "weight"),
                 "expected a number greater than 0 and at most 1e30, got " + shown(v->dump()));
    }
    if (const json* v = opt(e, "inputs")) {
      const std::string ip = child(p, "inputs");
      expect_object(ctx, *v, ip);
      for (const auto& [name, gen] : v->items()) {
        c.input_overrides[name] = parse_generator(ctx, gen, child(ip, name));
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace kopt::spec::detail
