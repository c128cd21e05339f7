// Workload spec: names of dtypes/roles/kinds, Spec helpers, and the entry points parse_spec/load_spec.
//
// Parsing runs in two passes: the first turns each JSON section into the
// structs of spec.h, checking types, keys and local constraints; the second
// (class Validator) checks what spans sections: names used by expressions, values
// of expressions for every case, references to buffers, files on disk.
// Every error names the file, the JSON path and what was expected.
//
// The pieces live beside it: spec_read.cpp (JSON reading helpers),
// spec_parse_signature.cpp and spec_parse_kernels.cpp (first pass),
// spec_validate.cpp (second pass), spec_json.cpp (output and equality).
#include "spec/spec.h"

#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "spec/spec_parse.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"

namespace kopt::spec {

using json = nlohmann::json;
namespace stdfs = std::filesystem;
using namespace detail;

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
    case Role::constant: return "constant";
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
    case Generator::Kind::view: return "view";
  }
  return "?";
}

int64_t sum_partials(const Tolerance& t, int64_t count, const Bindings& b) {
  int64_t p = 0;
  if (!t.partials.empty()) {
    p = t.partials.eval(b);
  } else {
    const int64_t totals = t.totals.empty() ? 1 : t.totals.eval(b);
    if (totals < 1 || count % totals != 0) return 0;
    p = count / totals;
  }
  return p >= 1 && count % p == 0 ? p : 0;
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

namespace detail {
std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const DTypeInfo& d : kDTypes) names.push_back(d.name);
  return names;
}
const char* tolerance_kind_name(Tolerance::Kind k) {
  switch (k) {
    case Tolerance::Kind::gemm: return "gemm";
    case Tolerance::Kind::sum: return "sum";
    case Tolerance::Kind::allclose: break;
  }
  return "allclose";
}
double dtype_max_finite(DType t) {
  switch (t) {
    case DType::f16: return 65504.0;
    case DType::bf16: return 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
    case DType::f32: return static_cast<double>(std::numeric_limits<float>::max());
    case DType::f64: return std::numeric_limits<double>::max();
    case DType::i8: return INT8_MAX;
    case DType::u8: return UINT8_MAX;
    case DType::i32: return INT32_MAX;
    case DType::u32: return UINT32_MAX;
    case DType::i64: return static_cast<double>(INT64_MAX);
    case DType::u64: return static_cast<double>(UINT64_MAX);
  }
  return 0;  // unreachable: every enumerator is listed
}
}  // namespace detail

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

namespace {

/// True when define `name` of `s`, or a define it uses, names a size of some
/// case (its value may then differ per case). Cycles are refused on load.
bool define_names_size(const Spec& s, const std::string& name, int depth = 0) {
  const auto it = s.defines.find(name);
  if (it == s.defines.end() || depth > 64) return false;
  for (const std::string& n : it->second.names()) {
    if (s.defines.count(n) && n != name) {  // "N": "N" names the size N, not itself
      if (define_names_size(s, n, depth + 1)) return true;
      continue;
    }
    for (const Case& c : s.cases)
      if (c.sizes.count(n)) return true;
  }
  return false;
}

}  // namespace

bool Spec::has_case_defines() const {
  for (const auto& [name, e] : defines)
    if (define_names_size(*this, name)) return true;
  return false;
}

std::map<std::string, int64_t> Spec::constant_defines() const {
  std::map<std::string, int64_t> out;
  if (cases.empty()) return out;
  for (const auto& [name, e] : defines)
    if (!define_names_size(*this, name))
      if (auto v = cases.front().defines.find(name); v != cases.front().defines.end()) out[name] = v->second;
  return out;
}

Bindings bindings_for(const Case& c, const std::map<std::string, int64_t>& params) {
  Bindings b(c.sizes.begin(), c.sizes.end());
  for (const auto& [name, value] : c.defines) b.emplace(name, value);  // a define named like a size is that size
  for (const auto& [name, value] : params) {
    if (!b.emplace(name, value).second) {
      throw SpecError("kopt.spec.130", "parameter '" + name + "' shadows " +
                                           (c.sizes.count(name) ? "a size" : "a define") + " of case '" + c.name + "'");
    }
  }
  return b;
}

std::vector<std::string> define_order(const Spec& s) {
  std::vector<std::string> order;
  std::set<std::string> done;
  for (bool progress = true; progress && order.size() < s.defines.size();) {
    progress = false;
    for (const auto& [name, e] : s.defines) {
      if (done.count(name)) continue;
      bool ready = true;
      for (const std::string& n : e.names()) ready = ready && (n == name || !s.defines.count(n) || done.count(n));
      if (!ready) continue;
      order.push_back(name);
      done.insert(name);
      progress = true;
    }
  }
  return order;  // short of s.defines only for a cycle
}

std::string launch_origin(const Launch& l, const std::string& what) {
  if (l.origin.file.empty()) return "";
  const int line = what == "grid" ? l.origin.grid_line
                   : what == "block" ? l.origin.block_line
                   : what == "shared" ? l.origin.shared_line
                                      : l.origin.static_shared_line;
  return l.origin.file + (line > 0 ? ":" + std::to_string(line) : "") + ": kopt:" + what;
}

const Launch& kernel_launch(const Spec& s, const KernelSource& k) {
  if (k.launch) return *k.launch;
  if (k.annotated_launch) return *k.annotated_launch;
  return s.launch;
}

Expr data_bytes_expr(const Spec& spec) {
  std::string text;
  for (const Param& p : spec.signature)
    if (p.is_buffer && p.role != Role::constant && !p.count.empty())
      text += (text.empty() ? "" : " + ") + ("(" + p.count.text() + ")*" + std::to_string(dtype_size(p.dtype)));
  return text.empty() ? Expr() : Expr::parse(text);
}

const std::vector<std::string>& constraint_constant_names() {
  static const std::vector<std::string> kNames = {
      "MAX_SHARED_PER_BLOCK", "MAX_THREADS_PER_BLOCK", "REGS_PER_SM", "SM_COUNT", "WARP_SIZE",
      "MAX_STATIC_SHARED_PER_BLOCK", "MAX_SHARED_PER_SM", "MAX_THREADS_PER_SM", "MAX_REGS_PER_BLOCK",
      "MAX_REGS_PER_THREAD"};
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

namespace {

/// The top-level launch may be omitted when the initial and reference kernels
/// (those present) have their own, in the spec ("launch") or in their source's
/// `// kopt:` lines, and at least one kernel has one; it then defaults to the
/// initial kernel's launch, else the reference kernel's, else the template's.
/// A template without a launch does not need one (it may come from the kopt:
/// annotations of its source).
void resolve_launch(const Ctx& ctx, Spec& s, bool given) {
  if (given) return;
  const bool ref_is_kernel = s.reference.kind == Reference::Kind::kernel;
  auto own = [](const KernelSource& k) -> const Launch* {
    return k.launch ? &*k.launch : k.annotated_launch ? &*k.annotated_launch : nullptr;
  };
  const Launch* fallback = nullptr;
  if (s.template_kernel && own(*s.template_kernel)) fallback = own(*s.template_kernel);
  if (ref_is_kernel && own(s.reference.kernel)) fallback = own(s.reference.kernel);
  if (s.initial && own(*s.initial)) fallback = own(*s.initial);
  std::string why;
  if (!fallback) why = "no kernel has a launch of its own";
  if (ref_is_kernel && !own(s.reference.kernel))
    why = "the reference kernel has no launch of its own: give it \"launch\" or '// kopt:grid' and "
          "'// kopt:block' lines in its source";
  if (s.initial && !own(*s.initial))
    why = "the initial kernel has no launch of its own: give it \"launch\" or '// kopt:grid' and "
          "'// kopt:block' lines in its source";
  if (!why.empty()) ctx.fail("kopt.spec.125", "$", "missing required key 'launch' (" + why + ")");
  s.launch = *fallback;
}

const std::vector<std::string> kTopKeys = {
    "format_version", "name",  "description", "seed",      "signature", "launch",
    "reference",      "initial", "template",  "baseline",  "cases",     "tolerance",
    "timing",         "checks",  "tuning",    "defines"};

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

Spec parse_spec(const json& doc, const stdfs::path& origin,
                const std::map<std::string, SectionOrigin>& sections) {
  Spec s;
  s.path = stdfs::absolute(origin).lexically_normal();
  const Ctx ctx(fs::display(origin), s.path.parent_path(), sections);
  expect_object(ctx, doc, "$");
  check_keys(ctx, doc, "$", kTopKeys);
  parse_header(ctx, doc, s);
  if (const json* v = opt(doc, "tuning")) s.tuning = parse_tuning(ctx, *v, "$.tuning");
  if (const json* v = opt(doc, "defines")) s.defines = parse_spec_defines(ctx, *v, "$.defines");
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
  validate(ctx, s, launch != nullptr);
  return s;
}

Spec load_spec(const stdfs::path& file) {
  return parse_spec(parse_json_file(file, "spec"), file);
}

}  // namespace kopt::spec
