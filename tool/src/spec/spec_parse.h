// Internal to spec/: the parsing context, JSON reading helpers and section parsers shared by spec*.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/expr.h"
#include "spec/spec.h"
#include "util/error.h"

namespace kopt::spec::detail {

using json = nlohmann::json;

/// Where we are: the file (for messages) and its folder (for relative paths).
class Ctx {
 public:
  Ctx(std::string file, std::filesystem::path dir, std::map<std::string, SectionOrigin> sections = {})
      : file_(std::move(file)), dir_(std::move(dir)), sections_(std::move(sections)) {}

  /// Throws SpecError(id, "<file>: <path>: <what>"); a path inside a section
  /// that came from another file (SectionOrigin) names that file instead.
  [[noreturn]] void fail(const char* id, const std::string& path, const std::string& what) const;
  /// Relative paths are relative to the spec's folder; the result is absolute.
  std::filesystem::path resolve(const std::string& p) const { return (dir_ / p).lexically_normal(); }

 private:
  std::string file_;
  std::filesystem::path dir_;
  std::map<std::string, SectionOrigin> sections_;
};

/// The names of kDTypes in order (spec.cpp).
std::vector<std::string> dtype_names();
const char* tolerance_kind_name(Tolerance::Kind k);
/// The largest finite value of a floating-point dtype (65504 for half);
/// for integer dtypes, the largest value as a double.
double dtype_max_finite(DType t);
inline bool is_output(const Param& p) {
  return p.is_buffer && (p.role == Role::output || p.role == Role::inout);
}
/// Buffers with contents made by a generator: inputs, inouts and constants.
inline bool is_input(const Param& p) { return p.is_buffer && p.role != Role::output; }

// JSON reading helpers (spec_read.cpp).
bool is_identifier(const std::string& s);
std::string child(const std::string& parent, const std::string& key);
std::string child(const std::string& parent, size_t index);
/// "a string \"abc\"", "a boolean", ... for "expected X, got Y" messages.
std::string describe(const json& j);
/// A name or text from the document, cut to 60 characters, for messages.
std::string shown(const std::string& s);
std::string join(const std::vector<std::string>& items, const char* sep = ", ");
template <typename Map>
std::string join_keys(const Map& m) {
  std::vector<std::string> keys;
  for (const auto& kv : m) keys.push_back(kv.first);
  return keys.empty() ? "none" : join(keys);
}
void expect_object(const Ctx& ctx, const json& j, const std::string& path);
void expect_array(const Ctx& ctx, const json& j, const std::string& path);
/// Rejects keys outside `allowed` (typos must not be silently ignored).
void check_keys(const Ctx& ctx, const json& obj, const std::string& path,
                const std::vector<std::string>& allowed);
const json& need(const Ctx& ctx, const json& obj, const std::string& key, const std::string& path);
const json* opt(const json& obj, const std::string& key);
std::string get_string(const Ctx& ctx, const json& j, const std::string& path);
std::string get_nonempty_string(const Ctx& ctx, const json& j, const std::string& path);
bool get_bool(const Ctx& ctx, const json& j, const std::string& path);
double get_number(const Ctx& ctx, const json& j, const std::string& path);
double get_finite(const Ctx& ctx, const json& j, const std::string& path);
int64_t get_int(const Ctx& ctx, const json& j, const std::string& path);
/// An integer in [lo, hi] (kopt.spec.119 outside).
int64_t get_int_in(const Ctx& ctx, const json& j, const std::string& path, int64_t lo, int64_t hi,
                   const std::string& expected);
std::vector<std::string> get_string_list(const Ctx& ctx, const json& j, const std::string& path);
/// An expression: a string in the grammar of expr.h, or an integer.
Expr get_expr(const Ctx& ctx, const json& j, const std::string& path);
void check_identifier(const Ctx& ctx, const std::string& name, const std::string& path,
                      const std::string& what);
/// Names that end up in file names (spec and case names): at most this long.
constexpr size_t kMaxFileNameLength = 128;
/// Names that end up in file names (spec and case names).
void check_file_safe(const Ctx& ctx, const std::string& name, const std::string& path,
                     const std::string& what);

template <typename E>
E parse_enum(const Ctx& ctx, const json& j, const std::string& path, const char* id,
             const std::string& what, const std::vector<std::pair<std::string, E>>& options) {
  const std::string s = get_string(ctx, j, path);
  std::vector<std::string> names;
  for (const auto& [name, value] : options) {
    if (s == name) return value;
    names.push_back(name);
  }
  ctx.fail(id, path, "unknown " + what + " '" + shown(s) + "'; expected one of: " + join(names));
}

// Sections, first pass: signature, generators and cases (spec_parse_signature.cpp).
Generator parse_generator(const Ctx& ctx, const json& j, const std::string& path);
std::vector<Param> parse_signature(const Ctx& ctx, const json& j, const std::string& path);
std::vector<Case> parse_cases(const Ctx& ctx, const json& j, const std::string& path);

// Sections, first pass: kernels, reference, tolerance, timing, checks, tuning
// (spec_parse_kernels.cpp).
Launch parse_launch(const Ctx& ctx, const json& j, const std::string& path);
/// `extra` names keys the caller handles (e.g. "kind").
KernelSource parse_kernel_source(const Ctx& ctx, const json& j, const std::string& path,
                                 std::vector<std::string> allowed);
Reference parse_reference(const Ctx& ctx, const json& j, const std::string& path);
/// "baseline": a library implementation timed beside the candidates.
Reference::Gemm parse_baseline(const Ctx& ctx, const json& j, const std::string& path);
std::map<std::string, Tolerance> parse_tolerance(const Ctx& ctx, const json& j, const std::string& path);
Timing parse_timing(const Ctx& ctx, const json& j, const std::string& path);
Checks parse_checks(const Ctx& ctx, const json& j, const std::string& path);
Tuning parse_tuning(const Ctx& ctx, const json& j, const std::string& path);
/// The top-level "defines": NAME -> integer or expression (checked by validate()).
std::map<std::string, Expr> parse_spec_defines(const Ctx& ctx, const json& j, const std::string& path);

// Cross-section validation, second pass (spec_validate.cpp).
void validate(const Ctx& ctx, Spec& s, bool launch_given);

}  // namespace kopt::spec::detail
