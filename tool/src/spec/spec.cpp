// Workload spec: names, JSON parsing and validation, JSON output.
//
// Parsing runs in two passes: the first turns each JSON section into the
// structs of spec.h, checking types, keys and local constraints; the second
// (class Validator) checks what spans sections: names used by expressions, values
// of expressions for every case, references to buffers, files on disk.
// Every error names the file, the JSON path and what was expected.
#include "spec/spec.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "spec/inputs.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::spec {

using json = nlohmann::json;
namespace stdfs = std::filesystem;

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
  bool is_float;
};
const DTypeInfo kDTypes[] = {
    {DType::f16, "half", 2, true},    {DType::bf16, "bfloat16", 2, true},
    {DType::f32, "float", 4, true},   {DType::f64, "double", 8, true},
    {DType::i8, "int8", 1, false},    {DType::u8, "uint8", 1, false},
    {DType::i32, "int32", 4, false},  {DType::u32, "uint32", 4, false},
    {DType::i64, "int64", 8, false},  {DType::u64, "uint64", 8, false},
};
const DTypeInfo& info(DType t) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == t) return d;
  }
  return kDTypes[2];  // unreachable: every enumerator is listed
}
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
const char* dtype_name(DType t) { return info(t).name; }
const char* dtype_c_type(DType t) {
  switch (t) {
    case DType::f16: return "__half";
    case DType::bf16: return "__nv_bfloat16";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "signed char";
    case DType::u8: return "unsigned char";
    case DType::i32: return "int";
    case DType::u32: return "unsigned int";
    case DType::i64: return "long long";
    case DType::u64: return "unsigned long long";
  }
  return "void";  // unreachable: every enumerator is listed
}
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> parse_dtype(const std::string& name) {
  for (const DTypeInfo& d : kDTypes) {
    if (name == d.name) return d.dtype;
  }
  static const std::pair<const char*, DType> kAliases[] = {
      {"float32", DType::f32}, {"float64", DType::f64}, {"float16", DType::f16},
      {"fp32", DType::f32},    {"fp64", DType::f64},    {"fp16", DType::f16},
      {"bf16", DType::bf16},   {"int", DType::i32},     {"uint", DType::u32}};
  for (const auto& [alias, t] : kAliases) {
    if (name == alias) return t;
  }
  return std::nullopt;
}

const char* role_name(Role r) {
  switch (r) {
    case Role::input: return "input";
    case Role::output: return "output";
    case Role::inout: return "inout";
  }
  return "?";
}

const char* generator_kind_name(Generator::Kind k) {
  switch (k) {
    case Generator::Kind::uniform: return "uniform";
    case Generator::Kind::normal: return "normal";
    case Generator::Kind::int_range: return "int_range";
    case Generator::Kind::constant: return "constant";
    case Generator::Kind::iota: return "iota";
    case Generator::Kind::npy: return "npy";
  }
  return "?";
}

const char* case_role_name(CaseRole r) {
  return r == CaseRole::performance ? "performance" : "correctness";
}

const char* reference_kind_name(Reference::Kind k) {
  switch (k) {
    case Reference::Kind::kernel: return "kernel";
    case Reference::Kind::npy: return "npy";
    case Reference::Kind::cublas: return "cublas";
  }
  return "?";
}

namespace {
const char* tolerance_kind_name(Tolerance::Kind k) {
  return k == Tolerance::Kind::gemm ? "gemm" : "allclose";
}
bool is_output(const Param& p) { return p.is_buffer && p.role != Role::input; }
bool is_input(const Param& p) { return p.is_buffer && p.role != Role::output; }
}  // namespace

// ---------------------------------------------------------------------------
// Spec helpers
// ---------------------------------------------------------------------------

const Param* Spec::find_param(const std::string& param_name) const {
  for (const Param& p : signature) {
    if (p.name == param_name) return &p;
  }
  return nullptr;
}

std::vector<const Case*> Spec::performance_cases() const {
  std::vector<const Case*> out;
  for (const Case& c : cases) {
    if (c.role == CaseRole::performance) out.push_back(&c);
  }
  return out;
}

Bindings bindings_for(const Case& c, const std::map<std::string, int64_t>& params) {
  Bindings b(c.sizes.begin(), c.sizes.end());
  for (const auto& [name, value] : params) {
    if (!b.emplace(name, value).second) {
      throw SpecError("kopt.spec.130", "parameter '" + name + "' shadows a size of case '" +
                                           c.name + "'");
    }
  }
  return b;
}

const std::vector<std::string>& constraint_constant_names() {
  static const std::vector<std::string> kNames = {"MAX_SHARED_PER_BLOCK", "MAX_THREADS_PER_BLOCK",
                                                  "REGS_PER_SM", "SM_COUNT", "WARP_SIZE"};
  return kNames;
}

stdfs::path expand_case(const stdfs::path& path, const std::string& case_name) {
  std::string s = path.string();
  for (size_t at = s.find("{case}"); at != std::string::npos; at = s.find("{case}", at)) {
    s.replace(at, 6, case_name);
    at += case_name.size();
  }
  return s;
}

// ---------------------------------------------------------------------------
// JSON reading helpers
// ---------------------------------------------------------------------------

namespace {

/// Where we are: the file (for messages) and its folder (for relative paths).
class Ctx {
 public:
  Ctx(std::string file, stdfs::path dir) : file_(std::move(file)), dir_(std::move(dir)) {}

  [[noreturn]] void fail(const char* id, const std::string& path, const std::string& what) const {
    throw SpecError(id, file_ + ": " + path + ": " + what);
  }
  /// Relative paths are relative to the spec's folder; the result is absolute.
  stdfs::path resolve(const std::string& p) const { return (dir_ / p).lexically_normal(); }

 private:
  std::string file_;
  stdfs::path dir_;
};

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string child(const std::string& parent, const std::string& key) {
  if (is_identifier(key)) return parent + "." + key;
  return parent + "[" + json(key).dump() + "]";
}
std::string child(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

/// "a string \"abc\"", "a boolean", ... for "expected X, got Y" messages.
std::string describe(const json& j) {
  std::string shown = j.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean (" + shown + ")";
    case json::value_t::string: return "a string " + shown;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer (" + shown + ")";
    case json::value_t::number_float: return "a floating-point number (" + shown + ")";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unsupported JSON value";
  }
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}
template <typename Map>
std::string join_keys(const Map& m) {
  std::vector<std::string> keys;
  for (const auto& kv : m) keys.push_back(kv.first);
  return keys.empty() ? "none" : join(keys);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

void expect_object(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_object()) ctx.fail("kopt.spec.104", path, "expected an object, got " + describe(j));
}
void expect_array(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_array()) ctx.fail("kopt.spec.104", path, "expected an array, got " + describe(j));
}

/// Rejects keys outside `allowed` (typos must not be silently ignored).
void check_keys(const Ctx& ctx, const json& obj, const std::string& path,
                const std::vector<std::string>& allowed) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string hint;
    for (const std::string& a : allowed) {
      const bool prefix = key.size() >= 3 && (a.rfind(key, 0) == 0 || key.rfind(a, 0) == 0);
      if (edit_distance(key, a) <= 2 || prefix) {
        hint = " (did you mean '" + a + "'?)";
        break;
      }
    }
    ctx.fail("kopt.spec.105", child(path, key),
             "unknown key '" + key + "'" + hint + "; allowed keys: " + join(allowed));
  }
}

const json& need(const Ctx& ctx, const json& obj, const std::string& key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) ctx.fail("kopt.spec.103", path, "missing required key '" + key + "'");
  return *it;
}
const json* opt(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string get_string(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_string()) ctx.fail("kopt.spec.104", path, "expected a string, got " + describe(j));
  return j.get<std::string>();
}
std::string get_nonempty_string(const Ctx& ctx, const json& j, const std::string& path) {
  std::string s = get_string(ctx, j, path);
  if (s.empty()) ctx.fail("kopt.spec.104", path, "expected a non-empty string");
  return s;
}
bool get_bool(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_boolean()) ctx.fail("kopt.spec.104", path, "expected a boolean, got " + describe(j));
  return j.get<bool>();
}
double get_number(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_number()) ctx.fail("kopt.spec.104", path, "expected a number, got " + describe(j));
  return j.get<double>();
}
int64_t get_int(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_number_integer()) ctx.fail("kopt.spec.104", path, "expected an integer, got " + describe(j));
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    ctx.fail("kopt.spec.119", path, "integer " + j.dump() + " does not fit in 64 bits (signed)");
  }
  return j.get<int64_t>();
}
/// An integer in [lo, hi] (kopt.spec.119 outside).
int64_t get_int_in(const Ctx& ctx, const json& j, const std::string& path, int64_t lo, int64_t hi,
                   const std::string& expected) {
  const int64_t v = get_int(ctx, j, path);
  if (v < lo || v > hi) {
    ctx.fail("kopt.spec.119", path, "expected " + expected + ", got " + std::to_string(v));
  }
  return v;
}
std::vector<std::string> get_string_list(const Ctx& ctx, const json& j, const std::string& path) {
  expect_array(ctx, j, path);
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(get_string(ctx, j[i], child(path, i)));
  return out;
}

/// An expression: a string in the grammar of expr.h, or an integer.
Expr get_expr(const Ctx& ctx, const json& j, const std::string& path) {
  if (j.is_number_integer()) return Expr::constant(get_int(ctx, j, path));
  if (!j.is_string()) {
    ctx.fail("kopt.spec.104", path, "expected an expression string or an integer, got " + describe(j));
  }
  try {
    return Expr::parse(j.get<std::string>());
  } catch (const SpecError& e) {
    ctx.fail("kopt.spec.111", path, std::string("cannot parse expression: ") + e.what());
  }
}

void check_identifier(const Ctx& ctx, const std::string& name, const std::string& path,
                      const std::string& what) {
  if (!is_identifier(name)) {
    ctx.fail("kopt.spec.106", path,
             "invalid " + what + " '" + name + "': expected an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  }
}

/// Names that end up in file names (spec and case names).
void check_file_safe(const Ctx& ctx, const std::string& name, const std::string& path,
                     const std::string& what) {
  const bool bad_char = std::any_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (name.empty() || name == "." || name == ".." || bad_char) {
    ctx.fail("kopt.spec.106", path,
             "invalid " + what + " '" + name +
                 "': expected a non-empty name usable as a file name (no '/', '\\', control "
                 "characters, '.' or '..')");
  }
}

template <typename E>
E parse_enum(const Ctx& ctx, const json& j, const std::string& path, const char* id,
             const std::string& what, const std::vector<std::pair<std::string, E>>& options) {
  const std::string s = get_string(ctx, j, path);
  std::vector<std::string> names;
  for (const auto& [name, value] : options) {
    if (s == name) return value;
    names.push_back(name);
  }
  ctx.fail(id, path, "unknown " + what + " '" + s + "'; expected one of: " + join(names));
}

// ---------------------------------------------------------------------------
// Sections (first pass)
// ---------------------------------------------------------------------------

const std::vector<std::pair<std::string, Generator::Kind>> kGeneratorKinds = {
    {"uniform", Generator::Kind::uniform},     {"normal", Generator::Kind::normal},
    {"int_range", Generator::Kind::int_range}, {"constant", Generator::Kind::constant},
    {"iota", Generator::Kind::iota},           {"npy", Generator::Kind::npy}};

double get_finite(const Ctx& ctx, const json& j, const std::string& path) {
  const double v = get_number(ctx, j, path);
  if (!std::isfinite(v)) ctx.fail("kopt.spec.119", path, "expected a finite number");
  return v;
}

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
      check_keys(ctx, j, path, {"kind", "low", "high"});
      num("low", g.low);
      num("high", g.high);
      if (!(g.low < g.high)) {
        ctx.fail("kopt.spec.119", path, "uniform needs low < high, got [" + json(g.low).dump() +
                                            ", " + json(g.high).dump() + ")");
      }
      break;
    case Generator::Kind::normal:
      check_keys(ctx, j, path, {"kind", "mean", "stddev"});
      num("mean", g.mean);
      num("stddev", g.stddev);
      if (g.stddev < 0) ctx.fail("kopt.spec.119", child(path, "stddev"), "expected stddev >= 0");
      break;
    case Generator::Kind::int_range:
      check_keys(ctx, j, path, {"kind", "low", "high"});
      if (const json* v = opt(j, "low")) g.int_low = get_int(ctx, *v, child(path, "low"));
      if (const json* v = opt(j, "high")) g.int_high = get_int(ctx, *v, child(path, "high"));
      if (g.int_low > g.int_high) {
        ctx.fail("kopt.spec.119", path, "int_range needs low <= high, got [" +
                                            std::to_string(g.int_low) + ", " +
                                            std::to_string(g.int_high) + "]");
      }
      break;
    case Generator::Kind::constant:
      check_keys(ctx, j, path, {"kind", "value"});
      g.value = get_finite(ctx, need(ctx, j, "value", path), child(path, "value"));
      break;
    case Generator::Kind::iota:
      check_keys(ctx, j, path, {"kind", "start", "step"});
      num("start", g.start);
      num("step", g.step);
      break;
    case Generator::Kind::npy:
      check_keys(ctx, j, path, {"kind", "path"});
      g.npy = ctx.resolve(get_nonempty_string(ctx, need(ctx, j, "path", path), child(path, "path")));
      break;
  }
  return g;
}

Launch parse_launch(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  check_keys(ctx, j, path, {"grid", "block", "shared_bytes"});
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
  return l;
}

std::map<std::string, int64_t> parse_defines(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  std::map<std::string, int64_t> out;
  for (const auto& [name, value] : j.items()) {
    check_identifier(ctx, name, child(path, name), "define name");
    out[name] = get_int(ctx, value, child(path, name));
  }
  return out;
}

stdfs::path existing_file(const Ctx& ctx, const json& j, const std::string& path) {
  const std::string rel = get_nonempty_string(ctx, j, path);
  const stdfs::path abs = ctx.resolve(rel);
  std::error_code ec;
  if (!stdfs::is_regular_file(abs, ec)) {
    ctx.fail("kopt.spec.122", path, "file not found: '" + abs.string() + "'" +
                                        (rel != abs.string() ? " (from '" + rel + "')" : ""));
  }
  return abs;
}

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
  return k;
}

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
  for (const DTypeInfo& d : kDTypes) names.push_back(d.name);
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
                          {"input", Role::input}, {"output", Role::output}, {"inout", Role::inout}});
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
    check_identifier(ctx, param.name, child(p, "name"), "parameter name");
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

std::map<std::string, int64_t> parse_sizes(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  std::map<std::string, int64_t> out;
  for (const auto& [name, value] : j.items()) {
    const std::string p = child(path, name);
    check_identifier(ctx, name, p, "size name");
    const bool ok = value.is_number_integer() &&
                    !(value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX)) &&
                    value.get<int64_t>() > 0;
    if (!ok) ctx.fail("kopt.spec.115", p, "expected a positive integer, got " + describe(value));
    out[name] = value.get<int64_t>();
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
    check_keys(ctx, e, p, {"name", "role", "sizes", "inputs"});
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

Tolerance parse_one_tolerance(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  Tolerance t;
  if (const json* v = opt(j, "kind")) {
    t.kind = parse_enum(ctx, *v, child(path, "kind"), "kopt.spec.110", "tolerance kind",
                        std::vector<std::pair<std::string, Tolerance::Kind>>{
                            {"allclose", Tolerance::Kind::allclose}, {"gemm", Tolerance::Kind::gemm}});
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
  check_keys(ctx, j, path, {"kind", "factor", "a", "b", "m", "n", "k"});
  non_negative("factor", t.factor);
  if (!(t.factor > 0)) ctx.fail("kopt.spec.119", child(path, "factor"), "expected factor > 0");
  for (auto [key, field] : {std::pair{"a", &t.a}, {"b", &t.b}, {"m", &t.m}, {"n", &t.n}, {"k", &t.k}}) {
    if (const json* v = opt(j, key)) *field = get_nonempty_string(ctx, *v, child(path, key));
  }
  return t;
}

std::map<std::string, Tolerance> parse_tolerance(const Ctx& ctx, const json& j, const std::string& path) {
  expect_object(ctx, j, path);
  std::map<std::string, Tolerance> out;
  for (const auto& [name, value] : j.items()) out[name] = parse_one_tolerance(ctx, value, child(path, name));
  return out;
}

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
    if (!(t.launch_timeout_ms > 0)) {
      ctx.fail("kopt.spec.119", child(path, "launch_timeout_ms"), "expected launch_timeout_ms > 0");
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
  check_keys(ctx, j, path, {"params", "constraints", "compile_options"});
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
  return t;
}

// ---------------------------------------------------------------------------
// Cross-section validation (second pass)
// ---------------------------------------------------------------------------

/// Per-case evaluation context: names every expression may use.
class Validator {
 public:
  Validator(const Ctx& ctx, Spec& s) : ctx_(ctx), s_(s) {
    for (const TuningParam& tp : s.tuning.params) first_values_[tp.name] = tp.values.front();
    for (const auto& [name, v] : s.cases.front().sizes) common_sizes_.insert(name);
    for (const Case& c : s.cases) {
      std::set<std::string> keep;
      for (const std::string& n : common_sizes_) {
        if (c.sizes.count(n)) keep.insert(n);
      }
      common_sizes_ = std::move(keep);
    }
  }

  void run(bool launch_given) {
    check_tuning_names();
    check_signature();
    check_launches(launch_given);
    check_constraints();
    check_overrides();
    check_inputs_npy();
    check_tolerances();
    check_reference();
    check_defines(s_.reference.kind == Reference::Kind::kernel ? &s_.reference.kernel : nullptr,
                  "$.reference");
    if (s_.initial) check_defines(&*s_.initial, "$.initial");
    if (s_.template_kernel) check_defines(&*s_.template_kernel, "$.template");
  }

 private:
  bool is_common_size(const std::string& n) const { return common_sizes_.count(n) > 0; }

  void check_tuning_names() {
    for (const TuningParam& tp : s_.tuning.params) {
      for (const Case& c : s_.cases) {
        if (c.sizes.count(tp.name)) {
          ctx_.fail("kopt.spec.130", child("$.tuning.params", tp.name),
                    "tuning parameter '" + tp.name + "' has the name of a size of case '" +
                        c.name + "'; rename one of them");
        }
      }
    }
  }

  /// Names an expression may use must be sizes of every case or tuning
  /// parameters (constraints may also use constraint_constant_names()).
  void check_names(const Expr& e, const std::string& path, bool constraint = false) const {
    const auto& constants = constraint_constant_names();
    for (const std::string& n : e.names()) {
      if (is_common_size(n) || first_values_.count(n)) continue;
      if (constraint && std::find(constants.begin(), constants.end(), n) != constants.end()) continue;
      std::vector<std::string> missing;
      for (const Case& c : s_.cases) {
        if (!c.sizes.count(n)) missing.push_back("'" + c.name + "'");
      }
      std::string why = missing.size() == s_.cases.size()
                            ? "no case has this size"
                            : "missing from the sizes of case(s) " + join(missing);
      ctx_.fail("kopt.spec.112", path,
                "'" + n + "' in '" + e.text() +
                    "' is neither a size of every case nor a tuning parameter (" + why +
                    "; sizes of every case: " + join_set(common_sizes_) +
                    "; tuning parameters: " + join_keys(first_values_) +
                    (constraint ? "; device constants: " + join(constants) : std::string()) + ")");
    }
  }

  static std::string join_set(const std::set<std::string>& s) {
    return s.empty() ? "none" : join(std::vector<std::string>(s.begin(), s.end()));
  }

  /// Evaluates for case `c` with tuning parameters at their first value.
  int64_t eval(const Expr& e, const Case& c, const std::string& path) const {
    try {
      return e.eval(bindings_for(c, first_values_));
    } catch (const SpecError& err) {
      ctx_.fail("kopt.spec.113", path, "cannot evaluate for case '" + c.name + "'" +
                                           tuning_note() + ": " + err.what());
    }
  }
  std::string tuning_note() const {
    if (first_values_.empty()) return "";
    std::string out;
    for (const auto& [n, v] : first_values_) out += (out.empty() ? "" : ", ") + n + "=" + std::to_string(v);
    return " (tuning parameters at their first value: " + out + ")";
  }

  void check_signature() {
    bool has_output = false;
    for (size_t i = 0; i < s_.signature.size(); ++i) {
      const Param& p = s_.signature[i];
      const std::string path = child("$.signature", i);
      if (p.is_buffer) {
        has_output = has_output || is_output(p);
        check_count(p, child(path, "count"));
        if (is_input(p)) check_generator_fits(p.generator, p.dtype, child(path, "init"));
      } else if (!p.value.empty()) {
        check_scalar(p, child(path, "value"));
      }
    }
    if (!has_output) {
      ctx_.fail("kopt.spec.116", "$.signature",
                "expected at least one buffer with role 'output' or 'inout'");
    }
  }

  void check_count(const Param& p, const std::string& path) {
    check_names(p.count, path);
    for (const Case& c : s_.cases) {
      const int64_t n = eval(p.count, c, path);
      int64_t bytes = 0;
      if (n <= 0) {
        ctx_.fail("kopt.spec.114", path,
                  "count '" + p.count.text() + "' of buffer '" + p.name + "' is " +
                      std::to_string(n) + " for case '" + c.name +
                      "' (a buffer needs at least one element)");
      }
      if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(p.dtype)), &bytes)) {
        ctx_.fail("kopt.spec.114", path, "count of buffer '" + p.name + "' is too large for case '" +
                                             c.name + "'");
      }
      counts_[p.name].push_back(n);
    }
  }

  void check_scalar(const Param& p, const std::string& path) const {
    check_names(p.value, path);
    for (const Case& c : s_.cases) {
      const int64_t v = eval(p.value, c, path);
      if (!fits(v, p.dtype)) {
        ctx_.fail("kopt.spec.127", path, "value " + std::to_string(v) + " of scalar '" + p.name +
                                             "' does not fit in " + dtype_name(p.dtype) +
                                             " for case '" + c.name + "'");
      }
    }
  }

  static bool fits(int64_t v, DType t) {
    switch (t) {
      case DType::i8: return v >= INT8_MIN && v <= INT8_MAX;
      case DType::u8: return v >= 0 && v <= UINT8_MAX;
      case DType::i32: return v >= INT32_MIN && v <= INT32_MAX;
      case DType::u32: return v >= 0 && v <= int64_t{UINT32_MAX};
      case DType::u64: return v >= 0;
      default: return true;  // int64 and floating types
    }
  }
  static std::pair<int64_t, int64_t> int_range_of(DType t) {
    switch (t) {
      case DType::i8: return {INT8_MIN, INT8_MAX};
      case DType::u8: return {0, UINT8_MAX};
      case DType::i32: return {INT32_MIN, INT32_MAX};
      case DType::u32: return {0, UINT32_MAX};
      case DType::u64: return {0, INT64_MAX};
      default: return {INT64_MIN, INT64_MAX};
    }
  }

  /// Integer buffers: int_range and constant values must be representable;
  /// bfloat16 buffers cannot come from .npy (no such dtype).
  void check_generator_fits(const Generator& g, DType t, const std::string& path) const {
    if (g.kind == Generator::Kind::npy && t == DType::bf16) {
      ctx_.fail("kopt.spec.132", path, "a bfloat16 buffer cannot be read from .npy (numpy has no "
                                       "bfloat16 dtype); use another generator");
    }
    if (dtype_is_float(t)) return;
    const auto [lo, hi] = int_range_of(t);
    if (g.kind == Generator::Kind::int_range && (g.int_low < lo || g.int_high > hi)) {
      ctx_.fail("kopt.spec.119", path, "int_range [" + std::to_string(g.int_low) + ", " +
                                           std::to_string(g.int_high) + "] does not fit in " +
                                           dtype_name(t));
    }
    if (g.kind == Generator::Kind::constant &&
        (g.value != std::floor(g.value) || g.value < static_cast<double>(lo) ||
         g.value > static_cast<double>(hi))) {
      ctx_.fail("kopt.spec.119", path, "constant " + json(g.value).dump() + " is not a value of " +
                                           dtype_name(t));
    }
  }

  void check_launch(const Launch& l, const std::string& path) const {
    static const char* const kAxes[] = {"x", "y", "z"};
    for (int part = 0; part < 2; ++part) {
      const Expr* dims = part == 0 ? l.grid : l.block;
      const std::string p = child(path, part == 0 ? "grid" : "block");
      for (size_t d = 0; d < 3; ++d) {
        check_names(dims[d], child(p, d));
        for (const Case& c : s_.cases) {
          const int64_t v = eval(dims[d], c, child(p, d));
          if (v < 1) {
            ctx_.fail("kopt.spec.126", child(p, d),
                      std::string(part == 0 ? "grid" : "block") + "." + kAxes[d] + " '" +
                          dims[d].text() + "' is " + std::to_string(v) + " for case '" + c.name +
                          "'" + tuning_note() + "; expected >= 1");
          }
        }
      }
    }
    const std::string sp = child(path, "shared_bytes");
    check_names(l.shared_bytes, sp);
    for (const Case& c : s_.cases) {
      const int64_t v = eval(l.shared_bytes, c, sp);
      if (v < 0) {
        ctx_.fail("kopt.spec.126", sp, "shared_bytes '" + l.shared_bytes.text() + "' is " +
                                           std::to_string(v) + " for case '" + c.name +
                                           "'; expected >= 0");
      }
    }
  }

  void check_launches(bool launch_given) {
    if (launch_given) check_launch(s_.launch, "$.launch");
    if (s_.reference.kind == Reference::Kind::kernel && s_.reference.kernel.launch) {
      check_launch(*s_.reference.kernel.launch, "$.reference.launch");
    }
    if (s_.initial && s_.initial->launch) check_launch(*s_.initial->launch, "$.initial.launch");
    if (s_.template_kernel && s_.template_kernel->launch) {
      check_launch(*s_.template_kernel->launch, "$.template.launch");
    }
  }

  void check_constraints() const {
    for (size_t i = 0; i < s_.tuning.constraints.size(); ++i) {
      check_names(s_.tuning.constraints[i], child("$.tuning.constraints", i), true);
    }
  }

  void check_overrides() const {
    for (size_t i = 0; i < s_.cases.size(); ++i) {
      const Case& c = s_.cases[i];
      for (const auto& [name, g] : c.input_overrides) {
        const std::string path = child(child(child("$.cases", i), "inputs"), name);
        const Param* p = s_.find_param(name);
        if (!p || !is_input(*p)) {
          ctx_.fail("kopt.spec.129", path,
                    "'" + name + "' is not an input or inout buffer of the signature (inputs: " +
                        join(input_names()) + ")");
        }
        check_generator_fits(g, p->dtype, path);
      }
    }
  }

  std::vector<std::string> input_names() const {
    std::vector<std::string> out;
    for (const Param& p : s_.signature) {
      if (is_input(p)) out.push_back(p.name);
    }
    return out.empty() ? std::vector<std::string>{"none"} : out;
  }
  std::vector<std::string> output_names() const {
    std::vector<std::string> out;
    for (const Param& p : s_.signature) {
      if (is_output(p)) out.push_back(p.name);
    }
    return out;
  }
  size_t param_index(const std::string& name) const {
    for (size_t i = 0; i < s_.signature.size(); ++i) {
      if (s_.signature[i].name == name) return i;
    }
    return 0;
  }

  /// A .npy file (input or golden) must exist for each case and hold `count`
  /// elements of the buffer's dtype.
  void check_npy_file(const stdfs::path& pattern, const Param& p, size_t case_index,
                      const std::string& path) const {
    const Case& c = s_.cases[case_index];
    const stdfs::path file = expand_case(pattern, c.name);
    std::error_code ec;
    if (!stdfs::is_regular_file(file, ec)) {
      ctx_.fail("kopt.spec.122", path, "file not found: '" + file.string() + "' (case '" + c.name + "')");
    }
    NpyArray header;
    try {
      header = read_npy_header(file);
    } catch (const SpecError& e) {
      ctx_.fail(e.id().c_str(), path, std::string("case '") + c.name + "': " + e.what());
    }
    const int64_t want = counts_.at(p.name)[case_index];
    if (header.dtype != p.dtype || header.count() != want) {
      ctx_.fail("kopt.spec.132", path,
                "'" + file.string() + "' for buffer '" + p.name + "' in case '" + c.name +
                    "': expected " + std::to_string(want) + " elements of " + dtype_name(p.dtype) +
                    ", found " + std::to_string(header.count()) + " elements of " +
                    dtype_name(header.dtype));
    }
  }

  void check_inputs_npy() const {
    for (size_t ci = 0; ci < s_.cases.size(); ++ci) {
      const Case& c = s_.cases[ci];
      for (size_t pi = 0; pi < s_.signature.size(); ++pi) {
        const Param& p = s_.signature[pi];
        if (!is_input(p)) continue;
        auto ov = c.input_overrides.find(p.name);
        const bool overridden = ov != c.input_overrides.end();
        const Generator& g = overridden ? ov->second : p.generator;
        if (g.kind != Generator::Kind::npy) continue;
        const std::string path =
            overridden ? child(child(child(child("$.cases", ci), "inputs"), p.name), "path")
                       : child(child(child("$.signature", pi), "init"), "path");
        check_npy_file(g.npy, p, ci, path);
      }
    }
  }

  void check_tolerances() {
    for (const auto& [name, t] : s_.tolerance) {
      const std::string path = child("$.tolerance", name);
      const Param* p = s_.find_param(name);
      if (!p || !is_output(*p)) {
        ctx_.fail("kopt.spec.118", path, "'" + name + "' is not an output buffer (outputs: " +
                                             join(output_names()) + ")");
      }
      if (t.kind == Tolerance::Kind::gemm) {
        check_gemm_names(path, {{"a", t.a}, {"b", t.b}}, {{"m", t.m}, {"n", t.n}, {"k", t.k}});
      }
    }
    for (const Param& p : s_.signature) {
      if (is_output(p)) s_.tolerance.emplace(p.name, Tolerance{});  // default allclose
    }
  }

  /// Buffers must be in the signature, sizes must be sizes of every case.
  void check_gemm_names(const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& buffers,
                        const std::vector<std::pair<std::string, std::string>>& sizes) const {
    for (const auto& [key, name] : buffers) {
      const Param* p = s_.find_param(name);
      if (!p || !p->is_buffer) {
        ctx_.fail("kopt.spec.123", child(path, key),
                  "'" + name + "' is not a buffer of the signature");
      }
    }
    for (const auto& [key, name] : sizes) {
      if (!is_common_size(name)) {
        ctx_.fail("kopt.spec.123", child(path, key),
                  "'" + name + "' is not a size of every case (sizes of every case: " +
                      join_set(common_sizes_) + ")");
      }
    }
  }

  void check_reference() const {
    const Reference& r = s_.reference;
    if (r.kind == Reference::Kind::npy) check_npy_reference(r);
    if (r.kind == Reference::Kind::cublas) check_cublas(r.gemm, "$.reference");
    if (s_.cublas_baseline) check_cublas(*s_.cublas_baseline, "$.baseline");
  }

  void check_npy_reference(const Reference& r) const {
    for (const auto& [name, file] : r.npy) {
      const Param* p = s_.find_param(name);
      if (!p || !is_output(*p)) {
        ctx_.fail("kopt.spec.131", child("$.reference.outputs", name),
                  "'" + name + "' is not an output buffer (outputs: " + join(output_names()) + ")");
      }
    }
    for (const std::string& out : output_names()) {
      if (!r.npy.count(out)) {
        ctx_.fail("kopt.spec.131", "$.reference.outputs",
                  "output buffer '" + out + "' has no golden .npy file");
      }
    }
    for (const auto& [name, file] : r.npy) {
      const Param& p = s_.signature[param_index(name)];
      if (p.dtype == DType::bf16) {
        ctx_.fail("kopt.spec.132", child("$.reference.outputs", name),
                  "a bfloat16 output cannot have a golden .npy file (numpy has no bfloat16 dtype)");
      }
      for (size_t ci = 0; ci < s_.cases.size(); ++ci) {
        check_npy_file(file, p, ci, child("$.reference.outputs", name));
      }
    }
  }

  /// A cuBLAS sgemm (reference or baseline) at `path`: names, types, roles, counts.
  void check_cublas(const Reference::Gemm& g, const std::string& path) const {
    check_gemm_names(path, {{"a", g.a}, {"b", g.b}, {"c", g.c}}, {{"m", g.m}, {"n", g.n}, {"k", g.k}});
    struct Operand {
      const char* key;
      const std::string& name;
      bool output;
      const std::string& rows;
      const std::string& cols;
    };
    const Operand ops[] = {{"a", g.a, false, g.m, g.k}, {"b", g.b, false, g.k, g.n},
                           {"c", g.c, true, g.m, g.n}};
    for (const Operand& op : ops) {
      const Param& p = *s_.find_param(op.name);
      const std::string kp = child(path, op.key);
      if (p.dtype != DType::f32) {
        ctx_.fail("kopt.spec.124", kp, "cublas sgemm needs float buffers; '" + op.name + "' is " +
                                           dtype_name(p.dtype));
      }
      if (op.output ? !is_output(p) : !is_input(p)) {
        ctx_.fail("kopt.spec.124", kp, "'" + op.name + "' must be an " +
                                           (op.output ? "output" : "input") + " buffer, it is " +
                                           role_name(p.role));
      }
      for (size_t ci = 0; ci < s_.cases.size(); ++ci) {
        const Case& c = s_.cases[ci];
        int64_t want = 0;
        if (__builtin_mul_overflow(c.sizes.at(op.rows), c.sizes.at(op.cols), &want)) want = -1;
        const int64_t have = counts_.at(op.name)[ci];
        if (have != want) {
          ctx_.fail("kopt.spec.124", kp,
                    "'" + op.name + "' holds " + std::to_string(have) + " elements in case '" +
                        c.name + "', cublas sgemm needs " + op.rows + "*" + op.cols + " = " +
                        std::to_string(want));
        }
      }
    }
  }

  void check_defines(const KernelSource* k, const std::string& path) const {
    if (!k) return;
    for (const auto& [name, v] : k->defines) {
      if (first_values_.count(name)) {
        ctx_.fail("kopt.spec.107", child(child(path, "defines"), name),
                  "define '" + name + "' is also a tuning parameter");
      }
    }
  }

  const Ctx& ctx_;
  Spec& s_;
  std::map<std::string, int64_t> first_values_;
  std::set<std::string> common_sizes_;
  std::map<std::string, std::vector<int64_t>> counts_;  // buffer -> count per case
};

/// The top-level launch may be omitted when the initial and reference kernels
/// have their own and at least one kernel (initial, reference or template) has
/// one; it then defaults to the initial kernel's launch, else the reference
/// kernel's, else the template's. A template without a launch does not need
/// one (it may come from the kopt: annotations of its source).
void resolve_launch(const Ctx& ctx, Spec& s, bool given) {
  if (given) return;
  const bool ref_is_kernel = s.reference.kind == Reference::Kind::kernel;
  const Launch* fallback = nullptr;
  if (s.template_kernel && s.template_kernel->launch) fallback = &*s.template_kernel->launch;
  if (ref_is_kernel && s.reference.kernel.launch) fallback = &*s.reference.kernel.launch;
  if (s.initial && s.initial->launch) fallback = &*s.initial->launch;
  std::string why;
  if (!fallback) why = "no kernel has a launch of its own";
  if (ref_is_kernel && !s.reference.kernel.launch) why = "the reference kernel has no launch of its own";
  if (s.initial && !s.initial->launch) why = "the initial kernel has no launch of its own";
  if (!why.empty()) ctx.fail("kopt.spec.125", "$", "missing required key 'launch' (" + why + ")");
  s.launch = *fallback;
}

const std::vector<std::string> kTopKeys = {
    "format_version", "name",  "description", "seed",      "signature", "launch",
    "reference",      "initial", "template",  "baseline",  "cases",     "tolerance",
    "timing",         "checks",  "tuning"};

void parse_header(const Ctx& ctx, const json& doc, Spec& s) {
  if (const json* v = opt(doc, "format_version")) {
    if (!v->is_number_integer() || v->get<int64_t>() != 1) {
      ctx.fail("kopt.spec.102", "$.format_version",
               "unsupported format_version " + v->dump() + " (this kopt reads version 1)");
    }
  }
  s.name = get_string(ctx, need(ctx, doc, "name", "$"), "$.name");
  check_file_safe(ctx, s.name, "$.name", "spec name");
  if (const json* v = opt(doc, "description")) s.description = get_string(ctx, *v, "$.description");
  if (const json* v = opt(doc, "seed")) {
    if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0)) {
      ctx.fail("kopt.spec.104", "$.seed", "expected a non-negative integer, got " + describe(*v));
    }
    s.seed = v->get<uint64_t>();
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

Spec parse_spec(const json& doc, const stdfs::path& origin) {
  Spec s;
  s.path = stdfs::absolute(origin).lexically_normal();
  const Ctx ctx(origin.string(), s.path.parent_path());
  expect_object(ctx, doc, "$");
  check_keys(ctx, doc, "$", kTopKeys);
  parse_header(ctx, doc, s);
  if (const json* v = opt(doc, "tuning")) s.tuning = parse_tuning(ctx, *v, "$.tuning");
  s.cases = parse_cases(ctx, need(ctx, doc, "cases", "$"), "$.cases");
  s.signature = parse_signature(ctx, need(ctx, doc, "signature", "$"), "$.signature");
  const json* launch = opt(doc, "launch");
  if (launch) s.launch = parse_launch(ctx, *launch, "$.launch");
  s.reference = parse_reference(ctx, need(ctx, doc, "reference", "$"), "$.reference");
  if (const json* v = opt(doc, "initial")) {
    expect_object(ctx, *v, "$.initial");
    s.initial = parse_kernel_source(ctx, *v, "$.initial", {});
  }
  if (const json* v = opt(doc, "template")) {
    expect_object(ctx, *v, "$.template");
    s.template_kernel = parse_kernel_source(ctx, *v, "$.template", {});
  }
  if (const json* v = opt(doc, "baseline")) s.cublas_baseline = parse_baseline(ctx, *v, "$.baseline");
  if (const json* v = opt(doc, "tolerance")) s.tolerance = parse_tolerance(ctx, *v, "$.tolerance");
  if (const json* v = opt(doc, "timing")) s.timing = parse_timing(ctx, *v, "$.timing");
  if (const json* v = opt(doc, "checks")) s.checks = parse_checks(ctx, *v, "$.checks");
  resolve_launch(ctx, s, launch != nullptr);
  Validator(ctx, s).run(launch != nullptr);
  return s;
}

Spec load_spec(const stdfs::path& file) {
  std::string text;
  try {
    text = fs::read_file(file);
  } catch (const Error& e) {
    throw SpecError("kopt.spec.100", file.string() + ": cannot read the spec file: " + e.what());
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw SpecError("kopt.spec.101", file.string() + ": not valid JSON: " + e.what());
  }
  return parse_spec(doc, file);
}

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
  return {{"params", params}, {"constraints", constraints}, {"compile_options", t.compile_options}};
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
  }
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
  return j;
}

// ---------------------------------------------------------------------------
// Equality
// ---------------------------------------------------------------------------

bool operator==(const Generator& a, const Generator& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Generator::Kind::uniform: return a.low == b.low && a.high == b.high;
    case Generator::Kind::normal: return a.mean == b.mean && a.stddev == b.stddev;
    case Generator::Kind::int_range: return a.int_low == b.int_low && a.int_high == b.int_high;
    case Generator::Kind::constant: return a.value == b.value;
    case Generator::Kind::iota: return a.start == b.start && a.step == b.step;
    case Generator::Kind::npy: return a.npy == b.npy;
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
         a.input_overrides == b.input_overrides;
}

bool operator==(const Launch& a, const Launch& b) {
  for (int i = 0; i < 3; ++i) {
    if (a.grid[i] != b.grid[i] || a.block[i] != b.block[i]) return false;
  }
  return a.shared_bytes == b.shared_bytes;
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
         a.compile_options == b.compile_options;
}

bool operator==(const Spec& a, const Spec& b) {
  return a.path == b.path && a.name == b.name && a.description == b.description &&
         a.seed == b.seed && a.signature == b.signature && a.cases == b.cases &&
         a.reference == b.reference && a.initial == b.initial &&
         a.template_kernel == b.template_kernel && a.cublas_baseline == b.cublas_baseline &&
         a.launch == b.launch &&
         a.tolerance == b.tolerance && a.timing == b.timing && a.checks == b.checks &&
         a.tuning == b.tuning;
}

}  // namespace kopt::spec
