// Spec parser, second pass: checks that span sections (names, per-case values, buffers, files).
#include "spec/spec_parse.h"

#include <algorithm>
#include <set>
#include <utility>

#include "spec/inputs.h"
#include "util/fs.h"

namespace kopt::spec::detail {

namespace stdfs = std::filesystem;

namespace {

/// __constant__ memory of one module (every compute capability: CUDA C++
/// Programming Guide, "Technical Specifications per Compute Capability").
constexpr int64_t kConstantBankBytes = 65536;

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
    resolve_defines();
    check_tuning_names();
    check_defines(s_.reference.kind == Reference::Kind::kernel ? &s_.reference.kernel : nullptr,
                  "$.reference");
    if (s_.initial) check_defines(&*s_.initial, "$.initial");
    if (s_.template_kernel) check_defines(&*s_.template_kernel, "$.template");
    check_signature();
    check_launches(launch_given);
    check_constraints();
    check_overrides();
    check_views();
    check_inputs_npy();
    check_tolerances();
    check_reference();
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

  /// Names an expression may use must be sizes of every case, defines or
  /// tuning parameters (constraints may also use constraint_constant_names(),
  /// and no size nor case define: check_constraints()); `extra` names more
  /// (a kernel's own defines, in its launch). `where` is put in front of the
  /// message (a kernel file's line, for a launch from its kopt: lines).
  void check_names(const Expr& e, const std::string& path, bool constraint = false,
                   const std::map<std::string, int64_t>& extra = {}, const std::string& where = "") const {
    const auto& constants = constraint_constant_names();
    for (const std::string& n : e.names()) {
      if (is_common_size(n) || first_values_.count(n) || s_.defines.count(n) || extra.count(n)) continue;
      if (constraint && std::find(constants.begin(), constants.end(), n) != constants.end()) continue;
      std::vector<std::string> missing;
      for (const Case& c : s_.cases) {
        if (!c.sizes.count(n)) missing.push_back("'" + c.name + "'");
      }
      std::string why = missing.size() == s_.cases.size()
                            ? "no case has this size"
                            : "missing from the sizes of case(s) " + join(missing);
      ctx_.fail("kopt.spec.112", path,
                prefix(where) + "'" + n + "' in '" + e.text() +
                    "' is neither a size of every case nor a tuning parameter, nor a define (" + why +
                    "; sizes of every case: " + join_set(common_sizes_) +
                    "; defines: " + join_keys(s_.defines) + "; tuning parameters: " + join_keys(first_values_) +
                    (extra.empty() ? std::string() : "; this kernel's defines: " + join_keys(extra)) +
                    (constraint ? "; device constants: " + join(constants) : std::string()) + ")");
    }
  }
  static std::string prefix(const std::string& where) { return where.empty() ? "" : where + ": "; }

  /// The spec's "defines": names, dependencies (no cycle) and each case's
  /// values (Case::defines), before anything that evaluates an expression.
  void resolve_defines() {
    const auto& constants = constraint_constant_names();
    for (const auto& [name, e] : s_.defines) {
      const std::string path = child("$.defines", name);
      if (first_values_.count(name))
        ctx_.fail("kopt.spec.107", path, "define '" + name + "' is also a tuning parameter: a define has one value, "
                                         "a tuning parameter is searched; remove one of them");
      if (std::find(constants.begin(), constants.end(), name) != constants.end())
        ctx_.fail("kopt.spec.107", path, "define '" + name + "' has the name of a device limit that constraints use");
      for (const Case& c : s_.cases)
        if (c.sizes.count(name) && e.text() != name)
          ctx_.fail("kopt.spec.107", path,
                    "define '" + name + "' has the name of a size of case '" + c.name +
                        "': a define named like a size passes that size to the kernels, so its value must be \"" +
                        name + "\"");
      for (const std::string& n : e.names()) {
        if (s_.defines.count(n) && n != name) continue;
        if (is_common_size(n)) continue;
        ctx_.fail("kopt.spec.112", path,
                  "'" + n + "' in '" + e.text() + "' is neither a size of every case nor another define (sizes of "
                  "every case: " + join_set(common_sizes_) + "; defines: " + join_keys(s_.defines) + ")");
      }
    }
    // Dependency order: a define after those it uses; what is left is a cycle.
    const std::vector<std::string> order = define_order(s_);
    if (order.size() < s_.defines.size()) {
      std::vector<std::string> left;
      for (const auto& [name, e] : s_.defines)
        if (std::find(order.begin(), order.end(), name) == order.end()) left.push_back(name);
      ctx_.fail("kopt.spec.136", child("$.defines", left.front()),
                "the defines " + join(left) + " use each other in a cycle: each needs a value that does not "
                "depend on itself");
    }
    for (Case& c : s_.cases) {
      c.defines.clear();
      for (const std::string& name : order) {
        const Expr& e = s_.defines.at(name);
        Bindings b(c.sizes.begin(), c.sizes.end());
        for (const auto& [k, v] : c.defines) b.emplace(k, v);
        try {
          c.defines[name] = e.eval(b);
        } catch (const SpecError& err) {
          ctx_.fail("kopt.spec.113", child("$.defines", name),
                    "cannot evaluate for case '" + c.name + "': " + err.what());
        }
      }
    }
    constant_defines_ = s_.constant_defines();
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
        if (is_input(p)) check_generator_fits(p.generator, p, child(path, "init"));
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
      if (p.role == Role::constant && bytes > kConstantBankBytes) {
        ctx_.fail("kopt.spec.114", path,
                  "constant '" + p.name + "' takes " + std::to_string(bytes) + " bytes for case '" + c.name +
                      "'; __constant__ memory holds at most 65536 bytes per module");
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
      case DType::f16: return v >= -65504 && v <= 65504;
      default: return true;  // int64 and the wider floating types
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

  /// Generated values must be representable in the buffer's type: int_range
  /// and constant values of integer buffers; for floating-point buffers, what
  /// uniform, normal (its mean), constant and iota (first and last element,
  /// for the largest count of any case) produce must be finite in the type
  /// (integer types saturate, as documented). bfloat16 buffers cannot come
  /// from .npy (no such dtype).
  void check_generator_fits(const Generator& g, const Param& p, const std::string& path) const {
    const DType t = p.dtype;
    if (g.kind == Generator::Kind::npy && t == DType::bf16) {
      ctx_.fail("kopt.spec.132", path, "a bfloat16 buffer cannot be read from .npy (numpy has no "
                                       "bfloat16 dtype); use another generator");
    }
    check_generated_range(g, p, path);
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

  /// The range check of check_generator_fits for floating-point buffers.
  void check_generated_range(const Generator& g, const Param& p, const std::string& path) const {
    const DType t = p.dtype;
    if (!dtype_is_float(t)) return;
    const double hi = dtype_max_finite(t);
    const double lo = -hi;
    auto check = [&](double v, const std::string& key, const std::string& what) {
      if (v >= lo && v <= hi) return;
      ctx_.fail("kopt.spec.119", key.empty() ? path : child(path, key),
                what + " " + json(v).dump() + " is beyond the range of " + dtype_name(t) + " (" +
                    json(lo).dump() + " to " + json(hi).dump() + ")");
    };
    switch (g.kind) {
      case Generator::Kind::uniform:
        check(g.low, "low", "uniform low");
        check(g.high, "high", "uniform high");
        break;
      case Generator::Kind::normal: check(g.mean, "mean", "normal mean"); break;
      case Generator::Kind::constant: check(g.value, "value", "constant"); break;
      case Generator::Kind::iota: {
        check(g.start, "start", "iota start");
        int64_t n = 1;
        for (int64_t c : counts_.at(p.name)) n = std::max(n, c);
        check(g.start + static_cast<double>(n - 1) * g.step, "step",
              "the last iota element (start + (count - 1) * step, count " + std::to_string(n) + ")");
        break;
      }
      default: break;
    }
  }

  /// A launch at JSON path `path` (or from the kopt: lines of a kernel file:
  /// Launch::origin, named in the messages). `kernel_defines`: that kernel's
  /// own values (kopt:param lines, defines), which its launch may use (they
  /// override a tuning parameter's first value).
  void check_launch(const Launch& l, const std::string& path,
                    const std::map<std::string, int64_t>& kernel_defines = {}) const {
    static const char* const kAxes[] = {"x", "y", "z"};
    // A launch from a kernel file's lines: its errors name that file and line,
    // and the kernel's JSON path alone.
    const bool from_file = !l.origin.file.empty();
    const auto child = [from_file](const std::string& parent, const auto& key) {
      return from_file ? parent : detail::child(parent, key);
    };
    std::map<std::string, int64_t> values = first_values_;
    for (const auto& [n, v] : kernel_defines) values[n] = v;
    std::map<std::string, int64_t> extra;
    for (const auto& [n, v] : kernel_defines)
      if (!first_values_.count(n)) extra[n] = v;
    auto eval_at = [&](const Expr& e, const Case& c, const std::string& p, const std::string& where) {
      try {
        return e.eval(bindings_for(c, values));
      } catch (const SpecError& err) {
        ctx_.fail("kopt.spec.113", p, prefix(where) + "cannot evaluate for case '" + c.name + "'" + tuning_note() +
                                          ": " + err.what());
      }
    };
    for (int part = 0; part < 2; ++part) {
      const Expr* dims = part == 0 ? l.grid : l.block;
      const char* what = part == 0 ? "grid" : "block";
      const std::string p = child(path, what);
      const std::string where = launch_origin(l, what);
      for (size_t d = 0; d < 3; ++d) {
        check_names(dims[d], child(p, d), false, extra, where);
        for (const Case& c : s_.cases) {
          const int64_t v = eval_at(dims[d], c, child(p, d), where);
          if (v < 1) {
            ctx_.fail("kopt.spec.126", child(p, d),
                      prefix(where) + what + "." + kAxes[d] + " '" + dims[d].text() + "' is " + std::to_string(v) +
                          " for case '" + c.name + "'" + tuning_note() + "; expected >= 1");
          }
        }
      }
    }
    const std::string sp = child(path, "shared_bytes");
    const std::string swhere = launch_origin(l, "shared");
    check_names(l.shared_bytes, sp, false, extra, swhere);
    for (const Case& c : s_.cases) {
      const int64_t v = eval_at(l.shared_bytes, c, sp, swhere);
      if (v < 0) {
        ctx_.fail("kopt.spec.126", sp, prefix(swhere) + "shared_bytes '" + l.shared_bytes.text() + "' is " +
                                           std::to_string(v) + " for case '" + c.name + "'; expected >= 0");
      }
    }
    if (!l.static_shared_bytes.empty()) {
      const std::string p = child(path, "static_shared_bytes");
      const std::string where = launch_origin(l, "static_shared");
      check_names(l.static_shared_bytes, p, false, extra, where);
      for (const Case& c : s_.cases)
        if (eval_at(l.static_shared_bytes, c, p, where) < 0)
          ctx_.fail("kopt.spec.126", p, prefix(where) + "static_shared_bytes '" + l.static_shared_bytes.text() +
                                            "' is negative for case '" + c.name + "'");
    }
    if (!l.block_work.empty()) check_names(l.block_work, child(path, "block_work"));
    if (!l.traffic_bytes.empty()) {
      check_names(l.traffic_bytes, child(path, "traffic_bytes"));
      if (l.block_work.empty())
        ctx_.fail("kopt.spec.134", child(path, "traffic_bytes"),
                  "traffic_bytes is the dispatch model's second term: it needs block_work beside it");
    }
  }

  /// A kernel's own launch: "launch" in the spec, else its source's kopt:
  /// lines (errors name the file and line, and the kernel's JSON path).
  void check_kernel_launch(const KernelSource& k, const std::string& path) const {
    // The kernel's own values: its source's kopt:param lines, then its defines (as it runs).
    std::map<std::string, int64_t> own = k.annotated_params;
    for (const auto& [n, v] : k.defines) own[n] = v;
    if (k.launch) check_launch(*k.launch, child(path, "launch"), own);
    else if (k.annotated_launch) check_launch(*k.annotated_launch, path, own);
  }

  void check_launches(bool launch_given) {
    if (launch_given) check_launch(s_.launch, "$.launch");
    if (s_.reference.kind == Reference::Kind::kernel) check_kernel_launch(s_.reference.kernel, "$.reference");
    if (s_.initial) check_kernel_launch(*s_.initial, "$.initial");
    if (s_.template_kernel) check_kernel_launch(*s_.template_kernel, "$.template");
  }

  /// A constraint decides which configurations exist before any case is
  /// chosen (one configuration runs on every case), so it may not name a
  /// case size: kopt.spec.133 says so and how to express it instead.
  void check_constraints() const {
    for (size_t i = 0; i < s_.tuning.constraints.size(); ++i) {
      const Expr& e = s_.tuning.constraints[i];
      for (const std::string& n : e.names()) {
        if (first_values_.count(n) || constant_defines_.count(n)) continue;
        if (s_.defines.count(n))
          ctx_.fail("kopt.spec.133", child("$.tuning.constraints", i),
                    "'" + e.text() + "' names the define '" + n + "', whose value depends on the case's sizes: a "
                    "constraint decides which configurations are searched, and each one runs on every case, so it "
                    "may use only tuning parameters, defines that name no size, and device constants");
        const auto named = std::find_if(s_.cases.begin(), s_.cases.end(),
                                        [&](const Case& c) { return c.sizes.count(n) > 0; });
        if (named == s_.cases.end()) continue;
        ctx_.fail("kopt.spec.133", child("$.tuning.constraints", i),
                  "'" + e.text() + "' names the size '" + n + "' (of case '" + named->name +
                      "'): a constraint decides which configurations are searched, and each one runs on "
                      "every case, so it may use only tuning parameters and device constants (" +
                      join(constraint_constant_names()) + "), and defines that name no size; handle sizes the configuration does not divide "
                      "in the kernel (a guarded remainder), or give only cases every configuration supports");
      }
      check_names(e, child("$.tuning.constraints", i), true);
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
        check_generator_fits(g, *p, path);
      }
    }
  }

  /// The generator of buffer `p` in case `ci` (a case's `inputs` override, else its `init`).
  const Generator& generator_in(const Param& p, size_t ci) const {
    const auto it = s_.cases[ci].input_overrides.find(p.name);
    return it != s_.cases[ci].input_overrides.end() ? it->second : p.generator;
  }

  /// A view's buffer is an input, inout or constant of the signature made by
  /// another kind, other than the view's own, and holds every element the view
  /// takes, in every case (tuning parameters at their first value; a
  /// candidate's sizes are checked again when its inputs are made).
  void check_views() const {
    for (size_t pi = 0; pi < s_.signature.size(); ++pi) {
      const Param& p = s_.signature[pi];
      if (!is_input(p)) continue;
      for (size_t ci = 0; ci < s_.cases.size(); ++ci) {
        const Generator& g = generator_in(p, ci);
        if (g.kind != Generator::Kind::view) continue;
        const bool own = s_.cases[ci].input_overrides.count(p.name) > 0;
        const std::string path = own ? child(child(child("$.cases", ci), "inputs"), p.name)
                                     : child(child("$.signature", pi), "init");
        const Param* of = s_.find_param(g.view_of);
        if (!of || !is_input(*of) || of == &p) {
          ctx_.fail("kopt.spec.119", child(path, "of"),
                    "'" + g.view_of + "' is not another input, inout or constant buffer of the signature (" +
                        join(input_names()) + ")");
        }
        if (generator_in(*of, ci).kind == Generator::Kind::view) {
          ctx_.fail("kopt.spec.119", child(path, "of"),
                    "'" + g.view_of + "' is a view itself in case '" + s_.cases[ci].name +
                        "'; a view takes the elements of a buffer made by another kind");
        }
        const int64_t n = counts_.at(p.name).at(ci), have = counts_.at(of->name).at(ci);
        int64_t last = 0;
        if (__builtin_mul_overflow(n - 1, g.view_stride, &last) ||
            __builtin_add_overflow(last, g.view_start, &last) || last >= have) {
          ctx_.fail("kopt.spec.119", path,
                    "the view takes element " + std::to_string(g.view_start) + " + (" + std::to_string(n) +
                        " - 1) * " + std::to_string(g.view_stride) + " of '" + of->name + "', which has " +
                        std::to_string(have) + " elements in case '" + s_.cases[ci].name + "'" + tuning_note());
        }
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
    const std::string why = fs::unreadable_reason(file);
    if (!why.empty()) {
      ctx_.fail("kopt.spec.122", path, (why == "not found" ? "file not found" : why) + ": '" +
                                           fs::display(file) + "' (case '" + c.name + "')");
    }
    NpyArray header;
    try {
      header = read_npy_header(file);
    } catch (const SpecError& e) {
      std::string msg = e.what();
      const std::string prefix = "[" + e.id() + "] ";
      if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
      ctx_.fail(e.id().c_str(), path, std::string("case '") + c.name + "': " + msg);
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
      if (t.kind == Tolerance::Kind::sum) check_sum(name, t, path);
    }
    for (const Param& p : s_.signature) {
      if (is_output(p)) s_.tolerance.emplace(p.name, Tolerance{});  // default allclose
    }
  }

  /// A sum tolerance: `terms` and `partials` (or `totals`) name sizes,
  /// defines and tuning parameters, `terms` is >= 1 in every case, and the
  /// output's count is a whole number of totals of partials elements each.
  void check_sum(const std::string& name, const Tolerance& t, const std::string& path) {
    const char* layout = t.totals.empty() ? "partials" : "totals";
    check_names(t.terms, child(path, "terms"));
    check_names(t.totals.empty() ? t.partials : t.totals, child(path, layout));
    for (size_t ci = 0; ci < s_.cases.size(); ++ci) {
      const Case& c = s_.cases[ci];
      const int64_t terms = eval(t.terms, c, child(path, "terms"));
      if (terms < 1) {
        ctx_.fail("kopt.spec.119", child(path, "terms"),
                  "expected at least 1, got " + std::to_string(terms) + " for case '" + c.name + "'" + tuning_note());
      }
      const bool per_total = t.totals.empty();
      const Expr& e = per_total ? t.partials : t.totals;
      if (e.empty()) continue;  // one total of every element
      const int64_t value = eval(e, c, child(path, layout));  // errors named here, before sum_partials
      const int64_t count = counts_.at(name).at(ci);
      if (sum_partials(t, count, bindings_for(c, first_values_)) != 0) continue;
      ctx_.fail("kopt.spec.119", child(path, layout),
                "output '" + name + "' has " + std::to_string(count) + " elements for case '" + c.name +
                    "', no whole number of " +
                    (per_total ? "totals of " + std::to_string(value) + " partial sums" : std::to_string(value) + " totals") +
                    tuning_note());
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
      if (op.output ? !is_output(p) : (!is_input(p) || p.role == Role::constant)) {
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

  /// A kernel's own defines: not one of the spec's defines (those are every
  /// kernel's already), and for the template not a tuning parameter (the
  /// search sets those). The initial and reference kernels may set one: the
  /// configuration they run with.
  void check_defines(const KernelSource* k, const std::string& path) const {
    if (!k) return;
    const bool is_template = path == "$.template";
    for (const auto& [name, v] : k->defines) {
      const std::string p = child(child(path, "defines"), name);
      if (is_template && first_values_.count(name)) {
        ctx_.fail("kopt.spec.107", p, "define '" + name + "' of the template is also a tuning parameter (the "
                                      "search sets it; remove the define)");
      }
      if (s_.defines.count(name)) {
        ctx_.fail("kopt.spec.107", p, "define '" + name + "' is also one of the spec's defines ($.defines), "
                                      "which every kernel gets; give it once");
      }
    }
  }

  const Ctx& ctx_;
  Spec& s_;
  std::map<std::string, int64_t> first_values_;
  std::set<std::string> common_sizes_;
  std::map<std::string, std::vector<int64_t>> counts_;  // buffer -> count per case
  std::map<std::string, int64_t> constant_defines_;     // Spec::constant_defines()
};

}  // namespace

void validate(const Ctx& ctx, Spec& s, bool launch_given) { Validator(ctx, s).run(launch_given); }

}  // namespace kopt::spec::detail
