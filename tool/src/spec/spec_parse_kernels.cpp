// Spec parser, first pass: launches, kernels, reference, baseline, tolerance, timing, checks and tuning.
#include "spec/spec_parse.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "spec/kernel_file.h"
#include "spec/local_include.h"
#include "util/fs.h"

namespace kopt::spec::detail {

namespace stdfs = std::filesystem;

Launch parse_launch(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  check_keys(ctx, j, path, {"grid", "block", "shared_bytes", "static_shared_bytes", "block_work", "traffic_bytes"});
  Launch l;
  auto dims = [&](const char* key, Expr (&out)[3]) {
    const std::string p = child(path, key);
    const json& v = need(ctx, j, key, path);
    for (Expr& e : out) e = Expr::constant(1);
    if (!v.is_array()) {  // a single value: the x dimension
      out[0] = get_expr(ctx, v, p);
      return;
    }
    if (v.empty() || v.size() > 3) {
      ctx.fail("kopt.spec.104", p, "expected 1 to 3 entries (x, y, z), got " + std::to_string(v.size()));
    }
    for (size_t i = 0; i < v.size(); ++i) out[i] = get_expr(ctx, v[i], child(p, i));
  };
  dims("grid", l.grid);
  dims("block", l.block);
  l.shared_bytes = Expr::constant(0);
  if (const json* v = opt(j, "shared_bytes")) l.shared_bytes = get_expr(ctx, *v, child(path, "shared_bytes"));
  if (const json* v = opt(j, "static_shared_bytes"))
    l.static_shared_bytes = get_expr(ctx, *v, child(path, "static_shared_bytes"));
  if (const json* v = opt(j, "block_work")) l.block_work = get_expr(ctx, *v, child(path, "block_work"));
  if (const json* v = opt(j, "traffic_bytes")) l.traffic_bytes = get_expr(ctx, *v, child(path, "traffic_bytes"));
  return l;
}

namespace {

/// A "defines" object: each key a C identifier, each value read by `get`.
template <typename Value, typename Get>
std::map<std::string, Value> parse_define_map(const Ctx& ctx, const json& j, const std::string& path, Get get) {
  expect_object(ctx, j, path);
  std::map<std::string, Value> out;
  for (const auto& [name, value] : j.items()) {
    check_identifier(ctx, name, child(path, name), "define name");
    out[name] = get(ctx, value, child(path, name));
  }
  return out;
}

}  // namespace

std::map<std::string, int64_t> parse_defines(const Ctx& ctx, const json& j, const std::string& path) {
  return parse_define_map<int64_t>(ctx, j, path, get_int);
}

std::map<std::string, Expr> parse_spec_defines(const Ctx& ctx, const json& j, const std::string& path) {
  return parse_define_map<Expr>(ctx, j, path, get_expr);
}

namespace {

stdfs::path existing_file(const Ctx& ctx, const json& j, const std::string& path) {
  const std::string rel = get_nonempty_string(ctx, j, path);
  const stdfs::path abs = ctx.resolve(rel);
  const std::string why = fs::unreadable_reason(abs);
  if (!why.empty()) {
    ctx.fail("kopt.spec.122", path, (why == "not found" ? "file not found" : why) + ": '" +
                                        fs::display(abs) + "'" +
                                        (rel != abs.string() ? " (from '" + shown(rel) + "')" : ""));
  }
  return abs;
}

}  // namespace

/// `extra` names keys the caller handles (e.g. "kind").
KernelSource parse_kernel_source(const Ctx& ctx, const json& j, const std::string& path,
                                 std::vector<std::string> allowed) {
  for (const char* k : {"source", "entry", "launch", "compile_options", "defines"}) allowed.push_back(k);
  check_keys(ctx, j, path, allowed);
  KernelSource k;
  k.source = existing_file(ctx, need(ctx, j, "source", path), child(path, "source"));
  k.entry = get_nonempty_string(ctx, need(ctx, j, "entry", path), child(path, "entry"));
  if (const json* v = opt(j, "launch")) k.launch = parse_launch(ctx, *v, child(path, "launch"));
  if (const json* v = opt(j, "compile_options")) {
    k.compile_options = get_string_list(ctx, *v, child(path, "compile_options"));
  }
  if (const json* v = opt(j, "defines")) k.defines = parse_defines(ctx, *v, child(path, "defines"));
  // The source's own kopt: lines (errors name the file and line: kopt.annot.4xx).
  const Annotations a = read_kernel_annotations(k.source);
  k.annotated_launch = annotated_launch(a);
  k.annotated_params = a.params;
  return k;
}
namespace {

/// {"kind": "cublas", "op": "sgemm", "a": "A", ... "k": "K"} (kind checked by the caller).
Reference::Gemm parse_cublas(const Ctx& ctx, const json& j, const std::string& path) {
  check_keys(ctx, j, path, {"kind", "op", "a", "b", "c", "m", "n", "k"});
  if (const json* v = opt(j, "op")) {
    parse_enum(ctx, *v, child(path, "op"), "kopt.spec.110", "cublas op",
               std::vector<std::pair<std::string, int>>{{"sgemm", 0}});
  }
  Reference::Gemm g;
  for (auto [key, field] : {std::pair{"a", &g.a}, {"b", &g.b}, {"c", &g.c},
                            {"m", &g.m}, {"n", &g.n}, {"k", &g.k}}) {
    if (const json* v = opt(j, key)) *field = get_nonempty_string(ctx, *v, child(path, key));
  }
  return g;
}

}  // namespace

Reference parse_reference(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  Reference r;
  r.kind = parse_enum(ctx, need(ctx, j, "kind", path), child(path, "kind"), "kopt.spec.110",
                      "reference kind",
                      std::vector<std::pair<std::string, Reference::Kind>>{
                          {"kernel", Reference::Kind::kernel},
                          {"npy", Reference::Kind::npy},
                          {"cublas", Reference::Kind::cublas}});
  switch (r.kind) {
    case Reference::Kind::kernel: r.kernel = parse_kernel_source(ctx, j, path, {"kind"}); break;
    case Reference::Kind::npy: {
      check_keys(ctx, j, path, {"kind", "outputs"});
      const std::string p = child(path, "outputs");
      const json& outs = need(ctx, j, "outputs", path);
      expect_object(ctx, outs, p);
      for (const auto& [name, file] : outs.items()) {
        r.npy[name] = ctx.resolve(get_nonempty_string(ctx, file, child(p, name)));
      }
      break;
    }
    case Reference::Kind::cublas: r.gemm = parse_cublas(ctx, j, path); break;
  }
  return r;
}

/// "baseline": a library implementation timed beside the candidates.
Reference::Gemm parse_baseline(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  parse_enum(ctx, need(ctx, j, "kind", path), child(path, "kind"), "kopt.spec.110", "baseline kind",
             std::vector<std::pair<std::string, int>>{{"cublas", 0}});
  return parse_cublas(ctx, j, path);
}

namespace {

Tolerance parse_one_tolerance(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  Tolerance t;
  if (const json* v = opt(j, "kind")) {
    t.kind = parse_enum(ctx, *v, child(path, "kind"), "kopt.spec.110", "tolerance kind",
                        std::vector<std::pair<std::string, Tolerance::Kind>>{
                            {"allclose", Tolerance::Kind::allclose}, {"gemm", Tolerance::Kind::gemm},
                            {"sum", Tolerance::Kind::sum}});
  }
  auto non_negative = [&](const char* key, double& field) {
    if (const json* v = opt(j, key)) {
      field = get_finite(ctx, *v, child(path, key));
      if (field < 0) ctx.fail("kopt.spec.119", child(path, key), std::string("expected ") + key + " >= 0");
    }
  };
  if (t.kind == Tolerance::Kind::allclose) {
    check_keys(ctx, j, path, {"kind", "rtol", "atol", "rel_l2"});
    non_negative("rtol", t.rtol);
    non_negative("atol", t.atol);
    if (opt(j, "rel_l2")) {
      double v = 0;
      non_negative("rel_l2", v);
      t.rel_l2 = v;
    }
    return t;
  }
  if (t.kind == Tolerance::Kind::sum) {
    // Names and per-case values are checked with the signature (spec_validate.cpp).
    check_keys(ctx, j, path, {"kind", "terms", "partials", "totals", "factor", "rtol", "atol"});
    t.terms = get_expr(ctx, need(ctx, j, "terms", path), child(path, "terms"));
    const json* p = opt(j, "partials");
    const json* g = opt(j, "totals");
    if (p && g) ctx.fail("kopt.spec.119", path, "give 'partials' (per total) or 'totals', not both");
    if (p) t.partials = get_expr(ctx, *p, child(path, "partials"));
    if (g) t.totals = get_expr(ctx, *g, child(path, "totals"));
    t.rtol = t.atol = 0;
    non_negative("rtol", t.rtol);
    non_negative("atol", t.atol);
    non_negative("factor", t.factor);
    if (!(t.factor > 0)) ctx.fail("kopt.spec.119", child(path, "factor"), "expected factor > 0");
    return t;
  }
  check_keys(ctx, j, path, {"kind", "factor", "a", "b", "m", "n", "k"});
  non_negative("factor", t.factor);
  if (!(t.factor > 0)) ctx.fail("kopt.spec.119", child(path, "factor"), "expected factor > 0");
  for (auto [key, field] : {std::pair{"a", &t.a}, {"b", &t.b}, {"m", &t.m}, {"n", &t.n}, {"k", &t.k}}) {
    if (const json* v = opt(j, key)) *field = get_nonempty_string(ctx, *v, child(path, key));
  }
  return t;
}

}  // namespace

std::map<std::string, Tolerance> parse_tolerance(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  std::map<std::string, Tolerance> out;
  for (const auto& [name, value] : j.items()) out[name] = parse_one_tolerance(ctx, value, child(path, name));
  return out;
}

/// One day: the watchdogs multiply the launch timeout, and must not overflow.
constexpr double kMaxLaunchTimeoutMs = 86400000.0;

Timing parse_timing(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  check_keys(ctx, j, path, {"warmup", "iterations", "flush_l2", "launch_timeout_ms"});
  Timing t;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (const json* v = opt(j, "warmup")) {
    t.warmup = static_cast<int>(get_int_in(ctx, *v, child(path, "warmup"), 0, kIntMax, "warmup >= 0"));
  }
  if (const json* v = opt(j, "iterations")) {
    t.iterations = static_cast<int>(
        get_int_in(ctx, *v, child(path, "iterations"), 1, kIntMax, "iterations >= 1"));
  }
  if (const json* v = opt(j, "flush_l2")) t.flush_l2 = get_bool(ctx, *v, child(path, "flush_l2"));
  if (const json* v = opt(j, "launch_timeout_ms")) {
    t.launch_timeout_ms = get_finite(ctx, *v, child(path, "launch_timeout_ms"));
    if (!(t.launch_timeout_ms > 0) || t.launch_timeout_ms > kMaxLaunchTimeoutMs) {
      ctx.fail("kopt.spec.119", child(path, "launch_timeout_ms"),
               "expected launch_timeout_ms > 0 and at most " + json(kMaxLaunchTimeoutMs).dump() +
                   " (a day), got " + json(t.launch_timeout_ms).dump());
    }
  }
  return t;
}

Checks parse_checks(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  check_keys(ctx, j, path, {"trials", "repeats"});
  Checks c;
  if (const json* v = opt(j, "trials")) {
    c.trials = static_cast<int>(get_int_in(ctx, *v, child(path, "trials"), 1, 3, "trials in 1..3"));
  }
  if (const json* v = opt(j, "repeats")) {
    c.repeats = static_cast<int>(get_int_in(ctx, *v, child(path, "repeats"), 1,
                                            std::numeric_limits<int>::max(), "repeats >= 1"));
  }
  return c;
}

Tuning parse_tuning(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  check_keys(ctx, j, path, {"params", "constraints", "compile_options", "seeds"});
  Tuning t;
  if (const json* params = opt(j, "params")) {
    const std::string pp = child(path, "params");
    expect_object(ctx, *params, pp);
    for (const auto& [name, values] : params->items()) {
      const std::string p = child(pp, name);
      check_identifier(ctx, name, p, "tuning parameter name");
      expect_array(ctx, values, p);
      if (values.empty()) ctx.fail("kopt.spec.120", p, "tuning parameter '" + name + "' has no values");
      TuningParam tp{name, {}};
      for (size_t i = 0; i < values.size(); ++i) {
        const int64_t v = get_int(ctx, values[i], child(p, i));
        if (std::find(tp.values.begin(), tp.values.end(), v) != tp.values.end()) {
          ctx.fail("kopt.spec.121", child(p, i), "duplicate value " + std::to_string(v));
        }
        tp.values.push_back(v);
      }
      t.params.push_back(std::move(tp));
    }
  }
  if (const json* c = opt(j, "constraints")) {
    const std::string cp = child(path, "constraints");
    expect_array(ctx, *c, cp);
    for (size_t i = 0; i < c->size(); ++i) t.constraints.push_back(get_expr(ctx, (*c)[i], child(cp, i)));
  }
  if (const json* v = opt(j, "compile_options")) {
    t.compile_options = get_string_list(ctx, *v, child(path, "compile_options"));
  }
  if (const json* seeds = opt(j, "seeds")) {
    const std::string sp = child(path, "seeds");
    expect_array(ctx, *seeds, sp);
    for (size_t i = 0; i < seeds->size(); ++i) {
      const std::string p = child(sp, i);
      const json& seed = (*seeds)[i];
      expect_object(ctx, seed, p);
      std::map<std::string, int64_t> config;
      for (const auto& [name, value] : seed.items()) {
        const auto tp = std::find_if(t.params.begin(), t.params.end(),
                                     [&](const TuningParam& q) { return q.name == name; });
        if (tp == t.params.end())
          ctx.fail("kopt.spec.135", child(p, name), "'" + name + "' is not a tuning parameter of $.tuning.params");
        const int64_t v = get_int(ctx, value, child(p, name));
        if (std::find(tp->values.begin(), tp->values.end(), v) == tp->values.end())
          ctx.fail("kopt.spec.135", child(p, name),
                   std::to_string(v) + " is not one of the values of tuning parameter '" + name + "'");
        config[name] = v;
      }
      for (const TuningParam& tp : t.params)
        if (!config.count(tp.name))
          ctx.fail("kopt.spec.135", p, "the seed gives no value of tuning parameter '" + tp.name +
                                           "' (a seed is a whole configuration)");
      if (std::find(t.seeds.begin(), t.seeds.end(), config) != t.seeds.end())
        ctx.fail("kopt.spec.135", p, "the same configuration as an earlier seed");
      t.seeds.push_back(std::move(config));
    }
  }
  return t;
}

}  // namespace kopt::spec::detail
