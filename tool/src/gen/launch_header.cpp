// The launch header of `kopt generate` (gen/generate.h, launch_header()).
// What it writes is data and glue: the variants' tuning parameters and launch
// expressions, the measured tree, the fitted model's numbers, the kernel
// declarations. Its fixed C++ (the expression functions, LaunchConfig, the
// dispatch rule, the shape capture) is the text of shipped headers
// (gen/shipped.h), which kopt and its tests compile.
#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "gen/capture_code.h"
#include "gen/dispatch_code.h"
#include "gen/generate.h"
#include "gen/shipped.h"
#include "model/dispatch.h"
#include "spec/annotations.h"
#include "spec/kernel_file.h"
#include "util/error.h"

namespace kopt::gen {
namespace {

using spec::variant_entry;

/// Size names in the order a user writes them: scalars of the signature whose
/// value is a bare size name first (M, N, K for SGEMM), then the rest sorted.
std::vector<std::string> size_order(const spec::Spec& s) {
  std::set<std::string> all;
  for (const auto& c : s.cases)
    for (const auto& [k, v] : c.sizes) all.insert(k);
  std::vector<std::string> order;
  for (const auto& p : s.signature) {
    if (p.is_buffer || p.float_value || p.value.empty()) continue;
    const std::string& t = p.value.text();
    if (all.count(t) && std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
  }
  for (const auto& n : all)
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  return order;
}

/// Names the header declares itself (and C++'s keywords): a size or tuning
/// parameter with one of these names would not compile.
const std::set<std::string>& reserved_names() {
  static const std::set<std::string> names = {
      // the header's own names
      "ceil_div", "min", "max", "abs", "align_up", "pow2", "log2", "is_pow2", "floor_div", "ipow", "tuned_for",
      "kEntry", "kVariants",
      "kVariantLabels", "LaunchConfig", "launch_config",
      "launch_config_variant", "select_variant", "kernels", "kernel", "kernel_for", "std", "capture",
      // the cost model's and its rule's (docs/dispatch.md, model/dispatch_rule.h), and a macro they use
      "HUGE_VAL", "measured_variant", "dispatch_model", "block_work", "traffic_bytes", "data_bytes", "kSmCount",
      "kBlocksPerSm", "kMsPerWork", "kMsPerByte", "kMsFixed", "kMsPerWorkSpread", "kMsPerDataByte", "kMargin",
      "kSupport", "kSupportFactor", "supported", "kTuned", "tuned", "predicted_ms", "fastest_predicted",
      "dispatch_rule", "kModel", "variant_launch", "is_tuned", "choose_off_tuned", "nearest_tuned",
      // C++20 keywords and alternative tokens
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default",
      "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float",
      "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not",
      "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static", "static_assert",
      "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef",
      "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while",
      "xor", "xor_eq", "NULL"};
  return names;
}

/// A size or tuning parameter name the header can declare: not reserved, not
/// in the header's own kopt_ prefix, not a variantN namespace.
void check_header_name(const std::string& name, const std::string& what, const std::string& where) {
  static const std::regex variant_ns("^variant[0-9]+$");
  static const std::regex ident("^[A-Za-z_][A-Za-z0-9_]*$");
  if (!std::regex_match(name, ident))
    throw SpecError("kopt.gen.108", where + ": the " + what + " '" + name.substr(0, 100) +
                                        "' is not a C identifier, so the generated launch header cannot declare it");
  if (reserved_names().count(name) || name.rfind("kopt_", 0) == 0 || name.rfind("__", 0) == 0 ||
      std::regex_match(name, variant_ns))
    throw SpecError("kopt.gen.108", where + ": the " + what + " '" + name +
                                        "' cannot be a name in the generated launch header (a C++ keyword or one "
                                        "of the header's own names); rename it");
}

/// Every name a variant's launch expressions use must be a size (an argument
/// of launch_config()), one of the spec's defines (in `sizes` too: locals of
/// launch_config()) or one of the variant's kopt:param constants, or the
/// header would not compile.
void check_launch_names(const spec::Annotations& a, const KernelVariant& v, const std::vector<std::string>& sizes) {
  const std::string where = v.origin.empty() ? std::string("the kernel") : v.origin;
  for (const auto& [k, value] : a.params) {
    (void)value;
    check_header_name(k, "kopt:param", where);
  }
  std::string size_list;
  for (const auto& s : sizes) size_list += (size_list.empty() ? "" : ", ") + s;
  const auto check = [&](const char* line, const spec::Expr& e) {
    for (const std::string& n : e.names()) {
      if (std::find(sizes.begin(), sizes.end(), n) != sizes.end() || a.params.count(n)) continue;
      throw SpecError("kopt.gen.107",
                      where + ": kopt:" + line + " '" + e.text() + "' uses '" + n +
                          "', which is neither a size of the workload (" + (size_list.empty() ? "none" : size_list) +
                          ") nor a '// kopt:param " + n +
                          "=VALUE' line of the kernel, so the launch header would not compile; write the launch "
                          "in terms of the sizes, or give the kernel its tuning parameters' values (a tuned "
                          "best.cu has them)");
    }
  };
  for (const auto& e : *a.grid) check("grid", e);
  for (const auto& e : *a.block) check("block", e);
  if (a.shared_bytes) check("shared", *a.shared_bytes);
}

std::string c_string(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += (ch == '\n' ? ' ' : ch);
  }
  return out + "\"";
}

/// What a launch header is written from, checked.
struct HeaderPlan {
  std::string name;
  const std::vector<KernelVariant>& variants;
  const spec::Spec& spec;
  std::vector<std::string> sizes;      // launch_config()'s arguments, in order
  std::vector<spec::Annotations> ann;  // per variant
  size_t n = 0;                        // variants
  const model::DispatchTree* dispatch = nullptr;  // the measured dispatch (null: none, or one variant)
  /// The cost model's expressions (with a model): one block's work, the
  /// launch's traffic and the case's data, in terms of the sizes and each
  /// variant's parameters.
  std::optional<spec::Expr> block_work, traffic, data;
  std::string size_params;  // "long long M, long long N, long long K"
  std::string size_args;    // "M, N, K"
  /// The spec's defines as locals ("  const long long halo = ...;"), in the
  /// functions that evaluate launch expressions: a define may depend on the sizes.
  std::string define_locals;
};

/// A dispatch model's expression, checked against every variant's names
/// (kopt.gen.109 when it does not parse or uses a name no variant has).
spec::Expr model_expression(const HeaderPlan& p, const std::string& text, const char* what) {
  spec::Expr e;
  try {
    e = spec::Expr::parse(text);
  } catch (const Error&) {
    throw SpecError("kopt.gen.109", std::string("the measured dispatch's model has a ") + what +
                                        " that does not parse ('" + text.substr(0, 100) + "'); re-tune to record a new one");
  }
  for (const auto& a : p.ann)
    for (const std::string& nm : e.names())
      if (std::find(p.sizes.begin(), p.sizes.end(), nm) == p.sizes.end() && !a.params.count(nm))
        throw SpecError("kopt.gen.109", "the measured dispatch's model uses '" + nm.substr(0, 100) + "' in its " + what +
                                            ", which is neither a size nor a parameter of every variant; "
                                            "re-tune to record a new one");
  return e;
}

/// The measured dispatch, checked against the sizes and the variants
/// (kopt.gen.109); null for one variant. With a model, its expressions: the
/// model's own (the ones its coefficients were fitted with), whatever the spec
/// given to generate says now.
void plan_dispatch(HeaderPlan& p, const model::DispatchTree* dispatch) {
  if (!dispatch || p.n < 2) return;
  for (const auto& d : dispatch->sizes)
    if (std::find(p.sizes.begin(), p.sizes.end(), d) == p.sizes.end())
      throw SpecError("kopt.gen.109", "the measured dispatch asks about '" + d.substr(0, 100) +
                                          "', which is not a size of the workload; re-tune to record a new one");
  for (const auto& node : dispatch->nodes)
    if (node.dim < 0 && (node.variant < 0 || static_cast<size_t>(node.variant) >= p.n))
      throw SpecError("kopt.gen.109", "the measured dispatch picks variant " + std::to_string(node.variant) +
                                          ", but there are " + std::to_string(p.n) + "; re-tune to record a new one");
  p.dispatch = dispatch;
  if (!dispatch->model) return;
  p.block_work = model_expression(p, dispatch->model->block_work, "block_work");
  if (!dispatch->model->traffic.empty()) p.traffic = model_expression(p, dispatch->model->traffic, "traffic_bytes");
  if (!dispatch->model->data_bytes.empty()) p.data = model_expression(p, dispatch->model->data_bytes, "data_bytes");
}

HeaderPlan plan_header(const std::string& name, const std::vector<KernelVariant>& variants, const spec::Spec& spec,
                       const model::DispatchTree* dispatch) {
  if (variants.empty()) throw UsageError("kopt.gen.105", "no kernel to generate a launch header for");
  static const std::regex ident("^[A-Za-z_][A-Za-z0-9_]*$");
  if (!std::regex_match(name, ident))
    throw UsageError("kopt.gen.102", "kernel name '" + name + "' is not a C identifier");
  HeaderPlan p{name, variants, spec, size_order(spec), {}, variants.size(), nullptr, {}, {}, {}, "", "", ""};
  const std::string where = spec.path.empty() ? "the spec" : spec.path.string();
  for (const auto& sz : p.sizes) check_header_name(sz, "size", where);
  std::vector<std::string> names = p.sizes;
  for (const std::string& d : spec::define_order(spec)) {
    if (std::find(p.sizes.begin(), p.sizes.end(), d) != p.sizes.end()) continue;  // "N": "N" is the argument N
    check_header_name(d, "define", where);
    p.define_locals += "  const long long " + d + " = " + spec.defines.at(d).cpp() + ";\n  (void)" + d + ";\n";
    names.push_back(d);
  }
  for (const auto& v : variants) {
    p.ann.push_back(spec::parse_variant_annotations(v.source, v.origin));
    check_launch_names(p.ann.back(), v, names);
  }
  plan_dispatch(p, dispatch);
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    p.size_params += (i ? ", " : "") + std::string("long long ") + p.sizes[i];
    p.size_args += (i ? ", " : "") + p.sizes[i];
  }
  return p;
}

/// True when an expression the header writes uses floor_div or ipow
/// (Python's '//' or '**', spec::Expr::cpp).
bool uses_python_operators(const HeaderPlan& p) {
  std::string all = p.define_locals;
  for (const spec::Annotations& a : p.ann) {
    for (const auto& e : *a.grid) all += e.cpp();
    for (const auto& e : *a.block) all += e.cpp();
    if (a.shared_bytes) all += a.shared_bytes->cpp();
  }
  for (const auto* e : {&p.block_work, &p.traffic, &p.data})
    if (*e) all += (*e)->cpp();
  return all.find("floor_div(") != std::string::npos || all.find("ipow(") != std::string::npos;
}

/// The header's comment, includes, the expression functions, the variants'
/// entry points and labels, variant 0's parameters and LaunchConfig.
void write_preamble(std::ostringstream& h, const HeaderPlan& p) {
  h << "// Generated by kopt generate: the launch configuration of " << p.name << ".cu. Do not edit.\n"
    << "// grid, block and shared memory follow the kernel's kopt: annotations, evaluated with\n"
    << "// 64-bit integer arithmetic as kopt does.\n//\n";
  if (p.sizes.empty()) {
    h << "// The workload has no size names: launch_config() takes no arguments.";
  } else {
    h << "// Arguments: launch_config(" << p.size_args << "). The sizes come in the order of the\n"
      << "// kernel signature's scalar parameters that are sizes, then any other size names sorted.\n"
      << "// They are all long long, so swapped sizes compile: pass them in this order.";
  }
  if (p.n > 1 && p.dispatch)
    h << "\n// " << p.n << " shape-specialised variants: launch_config() picks one for the given sizes by\n"
      << "// select_variant(): a decision tree grown on the variants' measured latencies on the tuned\n"
      << "// shapes and, with a cost model, that model off them (docs/dispatch.md); variant 0 is the best\n"
      << "// single configuration for every case.";
  else if (p.n > 1)
    h << "\n// " << p.n << " shape-specialised variants: launch_config() picks, for the given sizes, the\n"
      << "// variant tuned on the nearest performance case (distance: sum of squared log size ratios);\n"
      << "// variant 0 is the best single configuration for every case.";
  h << "\n#pragma once\n\n#include <cmath>\n#include <cstddef>\n";
  if (!p.sizes.empty()) h << "\n" << capture_includes();
  h << "\nnamespace kopt_" << p.name << " {\n\n"
    << shipped::expression_functions << (uses_python_operators(p) ? shipped::python_operators : "") << "\n"
    << "/// The __global__ function of variant 0 (the best single configuration).\n"
    << "constexpr const char* kEntry = \"" << variant_entry(*p.ann[0].entry, 0, p.n) << "\";\n"
    << "/// Number of tuned variants (kernels[] below).\n"
    << "constexpr int kVariants = " << p.n << ";\n"
    << "/// Each variant's tuning parameters, as text.\n"
    << "constexpr const char* kVariantLabels[] = {";
  for (size_t i = 0; i < p.n; ++i) {
    std::string label = p.variants[i].label;
    if (label.empty())
      for (const auto& [k, v] : p.ann[i].params) label += (label.empty() ? "" : ",") + k + "=" + std::to_string(v);
    h << (i ? ", " : "") << c_string(label);
  }
  h << "};\n\n";
  if (!p.ann[0].params.empty()) {
    h << "/// Tuning parameters of variant 0 (baked into " << p.name << ".cu).\n";
    for (const auto& [k, v] : p.ann[0].params) h << "constexpr long long " << k << " = " << v << ";\n";
    h << "\n";
  }
  h << shipped::launch_config << "\n";
}

/// A function of the sizes returning `expr` as a double, in a variant's namespace.
void write_size_function(std::ostringstream& h, const HeaderPlan& p, const char* comment, const char* fn,
                         const spec::Expr& expr) {
  h << comment << "inline double " << fn << "(" << p.size_params << ") {\n";
  for (const auto& s : p.sizes) h << "  (void)" << s << ";\n";
  h << p.define_locals << "  return static_cast<double>(" << expr.cpp() << ");\n}\n";
}

/// namespace variantN for each variant (its parameters, launch_config() and
/// the cost model's expressions), then launch_config_variant().
void write_variants(std::ostringstream& h, const HeaderPlan& p) {
  for (size_t i = 0; i < p.n; ++i) {
    const spec::Annotations& a = p.ann[i];
    h << "namespace variant" << i << " {\n";
    for (const auto& [k, v] : a.params) h << "constexpr long long " << k << " = " << v << ";\n";
    h << "inline LaunchConfig launch_config(" << p.size_params << ") {\n";
    for (const auto& s : p.sizes) h << "  (void)" << s << ";\n";
    h << p.define_locals << "  LaunchConfig kopt_c;\n";
    for (int d = 0; d < 3; ++d) h << "  kopt_c.grid[" << d << "] = static_cast<unsigned>(" << (*a.grid)[d].cpp() << ");\n";
    for (int d = 0; d < 3; ++d) h << "  kopt_c.block[" << d << "] = static_cast<unsigned>(" << (*a.block)[d].cpp() << ");\n";
    h << "  kopt_c.shared_bytes = static_cast<std::size_t>(" << (a.shared_bytes ? a.shared_bytes->cpp() : "0") << ");\n"
      << "  kopt_c.variant = " << i << ";\n  return kopt_c;\n}\n";
    if (p.block_work)
      write_size_function(h, p, "/// One block's work (the template's block_work when it was tuned), for the dispatch model.\n",
                          "block_work", *p.block_work);
    if (p.traffic)
      write_size_function(h, p,
                          "/// The bytes the launch moves (the template's traffic_bytes when it was tuned), for the "
                          "dispatch model.\n",
                          "traffic_bytes", *p.traffic);
    if (p.data)
      write_size_function(h, p,
                          "/// The bytes of every buffer of the case (what the launch reads and writes at the least), "
                          "for the\n/// dispatch model.\n",
                          "data_bytes", *p.data);
    h << "}  // namespace variant" << i << "\n\n";
  }
  h << "/// Grid, block and dynamic shared memory of variant `v` for the given sizes.\n"
    << "inline LaunchConfig launch_config_variant(int kopt_v" << (p.sizes.empty() ? "" : ", ") << p.size_params
    << ") {\n  switch (kopt_v) {\n";
  for (size_t i = 1; i < p.n; ++i)
    h << "    case " << i << ": return variant" << i << "::launch_config(" << p.size_args << ");\n";
  h << "    default: return variant0::launch_config(" << p.size_args << ");\n  }\n}\n\n";
}

/// select_variant() without a measured dispatch: the variant tuned on the
/// nearest tuned shape (dispatch_rule::nearest_tuned), or 0.
void write_nearest_selection(std::ostringstream& h, const HeaderPlan& p) {
  std::vector<std::pair<std::vector<int64_t>, size_t>> shapes;
  for (size_t i = 0; i < p.n; ++i)
    for (const auto& sh : p.variants[i].shapes) {
      std::vector<int64_t> vals;
      for (const auto& sz : p.sizes) vals.push_back(sh.count(sz) ? sh.at(sz) : 1);
      shapes.emplace_back(vals, i);
    }
  const bool nearest = p.n > 1 && !shapes.empty() && !p.sizes.empty();
  if (nearest) h << "namespace dispatch_rule {\n\n" << shipped::nearest_tuned << "\n}  // namespace dispatch_rule\n\n";
  h << "/// The variant for the given sizes: the one tuned on the nearest tuned shape.\n"
    << "inline int select_variant(" << p.size_params << ") {\n";
  if (!nearest) {
    for (const auto& s : p.sizes) h << "  (void)" << s << ";\n";
    h << "  return 0;\n}\n\n";
    return;
  }
  h << "  static const double kopt_shapes[][" << p.sizes.size() << "] = {";
  for (size_t j = 0; j < shapes.size(); ++j) {
    h << (j ? ", " : "") << "{";
    for (size_t d = 0; d < shapes[j].first.size(); ++d) h << (d ? ", " : "") << shapes[j].first[d] << ".0";
    h << "}";
  }
  h << "};\n  static const int kopt_variants[] = {";
  for (size_t j = 0; j < shapes.size(); ++j) h << (j ? ", " : "") << shapes[j].second;
  h << "};\n  const double kopt_want[] = {";
  for (size_t d = 0; d < p.sizes.size(); ++d) h << (d ? ", " : "") << "static_cast<double>(" << p.sizes[d] << ")";
  h << "};\n  return dispatch_rule::nearest_tuned(&kopt_shapes[0][0], kopt_variants, " << shapes.size() << ", "
    << p.sizes.size() << ", kopt_want);\n}\n\n";
}

/// select_variant(): the measured dispatch (the tree, and off the tuned
/// shapes its cost model), else the nearest tuned shape.
void write_selection(std::ostringstream& h, const HeaderPlan& p) {
  if (!p.dispatch) {
    write_nearest_selection(h, p);
    return;
  }
  h << "/// The variant for the given sizes: the measured dispatch. Grown on every variant's median\n"
    << "/// latency on every tuned shape: each tuned shape gets a variant within " << p.dispatch->noise * 100
    << "% of its fastest\n"
    << "/// where a few questions can say so, and a leaf never takes a variant that was measured\n"
    << "/// slower than variant 0 on one of its shapes (docs/dispatch.md).\n"
    << "inline int " << (p.block_work ? "measured_variant(" : "select_variant(") << p.size_params << ") {\n";
  for (const auto& sz : p.sizes) h << "  (void)" << sz << ";\n";
  h << p.dispatch->to_cpp(2) << "}\n\n";
  if (p.block_work) h << cost_model_cpp(*p.dispatch->model, p.dispatch->sizes, p.n, p.size_params, p.size_args);
}

/// tuned_for(sizes...): whether the spec's defines that depend on the size
/// (compiled into the kernel with -D by the application) take, for these
/// sizes, values the tuning ran with.
void write_tuned_for(std::ostringstream& h, const HeaderPlan& p) {
  const std::map<std::string, int64_t> constant = p.spec.constant_defines();
  std::set<std::map<std::string, int64_t>> tuned;
  for (const spec::Case& c : p.spec.cases) {
    std::map<std::string, int64_t> v;
    for (const auto& [k, x] : c.defines)
      if (!constant.count(k)) v[k] = x;
    tuned.insert(v);
  }
  h << "/// True when the defines that depend on the problem size (compiled into the kernel with -D by\n"
    << "/// the application) take, for these sizes, values the tuning ran with; elsewhere the tuned\n"
    << "/// configuration was not measured.\n"
    << "inline bool tuned_for(" << p.size_params << ") {\n" << p.define_locals << "  return ";
  bool first = true;
  for (const auto& v : tuned) {
    h << (first ? "" : " ||\n         ") << "(";
    first = false;
    bool first_term = true;
    for (const auto& [k, x] : v) {
      h << (first_term ? "" : " && ") << k << " == " << x << "LL";
      first_term = false;
    }
    h << ")";
  }
  h << ";\n}\n\n";
}

/// The shape capture, launch_config(), and under nvcc the kernels'
/// declarations and kernels[].
void write_launch_and_kernels(std::ostringstream& h, const HeaderPlan& p) {
  if (!p.sizes.empty()) h << capture_code(p.name, p.sizes);
  h << "/// Grid, block, dynamic shared memory and variant for the given problem sizes.\n"
    << "inline LaunchConfig launch_config(" << p.size_params << ") {\n";
  if (!p.sizes.empty())
    h << kCaptureIf << "\n  capture::record({{" << p.size_args << "}});  // KOPT_CAPTURE: counts these sizes\n#endif\n";
  h << "  return launch_config_variant(select_variant(" << p.size_args << ")" << (p.sizes.empty() ? "" : ", ")
    << p.size_args << ");\n}\n\n";
  if (p.spec.has_case_defines()) write_tuned_for(h, p);
  h << "}  // namespace kopt_" << p.name << "\n";

  // Declarations live outside the namespace: the definitions are extern "C".
  h << "\n#ifdef __CUDACC__\n";
  bool half = false;
  for (const auto& q : p.spec.signature) half = half || q.dtype == spec::DType::f16 || q.dtype == spec::DType::bf16;
  if (half) h << "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n";
  h << "/// The tuned kernel" << (p.n > 1 ? "s" : "") << " (defined in " << p.name << ".cu).\n";
  for (size_t i = 0; i < p.n; ++i) {
    h << "extern \"C\" __global__ void " << variant_entry(*p.ann[i].entry, i, p.n) << "(";
    bool first = true;
    for (const spec::Param& q : p.spec.signature) {
      if (q.is_buffer && q.role == spec::Role::constant) continue;  // a __constant__ symbol the application fills
      h << (first ? "" : ", ") << (q.is_buffer && q.role == spec::Role::input ? "const " : "") << spec::dtype_c_type(q.dtype)
        << (q.is_buffer ? "* " : " ") << q.name;
      first = false;
    }
    h << ");\n";
  }
  h << "namespace kopt_" << p.name << " {\n"
    << "/// Every variant's kernel, by LaunchConfig::variant.\n"
    << "inline constexpr decltype(&::" << variant_entry(*p.ann[0].entry, 0, p.n) << ") kernels[] = {";
  for (size_t i = 0; i < p.n; ++i) h << (i ? ", " : "") << "&::" << variant_entry(*p.ann[i].entry, i, p.n);
  h << "};\n"
    << "/// The best single configuration's kernel (variant 0), whatever its entry point is called.\n"
    << "inline constexpr auto kernel = kernels[0];\n"
    << "/// The kernel to launch with `c` (from launch_config()).\n"
    << "inline auto kernel_for(const LaunchConfig& c) { return kernels[c.variant]; }\n"
    << "}  // namespace kopt_" << p.name << "\n#endif\n";
}

}  // namespace

std::string launch_header(const std::string& name, const std::string& source, const spec::Spec& spec,
                          const std::string& origin) {
  return launch_header(name, std::vector<KernelVariant>{{source, origin, "", {}}}, spec);
}

std::string launch_header(const std::string& name, const std::vector<KernelVariant>& variants, const spec::Spec& spec,
                          const model::DispatchTree* dispatch) {
  const HeaderPlan p = plan_header(name, variants, spec, dispatch);
  std::ostringstream h;
  write_preamble(h, p);
  write_variants(h, p);
  write_selection(h, p);
  write_launch_and_kernels(h, p);
  return h.str();
}

}  // namespace kopt::gen
