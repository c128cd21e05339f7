// `kopt evaluate`: compiles, checks and times candidate kernels; prints a JSON
// array of results, one per kernel (a generated file: one per variant). With
// no GPU the candidates are still compiled when --arch is given (exit 77).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/common.h"
#include "cuda/nvrtc.h"
#include "eval/evaluator.h"
#include "eval/evaluator_pool.h"
#include "search/space.h"
#include "spec/spec.h"
#include "driver/driver.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/text.h"

namespace kopt::cli {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

/// Parses "A=1,B=2" into a map: NAME a C identifier, VALUE a whole number,
/// each name once. Throws UsageError naming --params and the bad item.
std::map<std::string, int64_t> parse_params(const std::string& text) {
  std::map<std::string, int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw UsageError("kopt.cli.001", "--params: expected NAME=VALUE,..., got " + quote(item.empty() ? text : item));
    const std::string name = item.substr(0, eq);
    if (!is_identifier(name))
      throw UsageError("kopt.cli.001", "--params: " + quote(name) + " in " + quote(item) +
                                           " is not a parameter name (a C identifier: letters, digits, '_')");
    const std::optional<int64_t> v = parse_whole(item.substr(eq + 1));
    if (!v) throw UsageError("kopt.cli.002", "--params: " + quote(item) + " needs a whole-number value (NAME=128)");
    if (!out.emplace(name, *v).second) throw UsageError("kopt.cli.001", "--params: " + name + " is given twice");
  }
  return out;
}

/// --params against the spec's parameter space: an unknown name is an error
/// (kopt.cli.009); a value outside the parameter's list is a warning (it may
/// be on purpose), as is a configuration that breaks a constraint.
void check_params_against_spec(const std::map<std::string, int64_t>& params, const spec::Spec& s) {
  std::vector<std::string> names;
  for (const auto& p : s.tuning.params) names.push_back(p.name);
  for (const auto& [name, value] : params) {
    const auto it = std::find_if(s.tuning.params.begin(), s.tuning.params.end(),
                                 [&](const spec::TuningParam& p) { return p.name == name; });
    if (it == s.tuning.params.end())
      throw UsageError("kopt.cli.009", "--params: " + quote(name) + " is not a tuning parameter of " +
                                           s.path.filename().string() +
                                           (names.empty() ? " (it has none: $.tuning.params)"
                                                          : " (its parameters: " + clip(join(names), 300) + ")"));
    if (std::find(it->values.begin(), it->values.end(), value) == it->values.end()) {
      std::vector<std::string> vs;
      for (int64_t v : it->values) vs.push_back(std::to_string(v));
      std::cerr << "kopt: warning: --params " << name << "=" << value << " is not one of the spec's values for " << name
                << " (" << clip(join(vs), 300) << "); evaluating it anyway\n";
    }
  }
}

/// Warns when a candidate's parameters break one of the spec's constraints
/// (on some case, for a constraint that names sizes); constraints naming a
/// parameter the candidate does not set are skipped.
void warn_broken_constraints(const spec::Candidate& c, const spec::Spec& s) {
  for (const spec::Expr& e : s.tuning.constraints) {
    std::vector<std::string> broken_on;
    bool any = false;
    for (const spec::Case& cs : s.cases) {
      try {
        any = true;
        if (e.eval(spec::bindings_for(cs, c.params)) == 0) broken_on.push_back(cs.name);
      } catch (const Error&) {
        any = false;  // names something this candidate does not set
        break;
      }
    }
    if (any && !broken_on.empty())
      std::cerr << "kopt: warning: --params: " << c.label << " breaks the spec's constraint " << quote(e.text())
                << (broken_on.size() == s.cases.size() ? "" : " on case " + clip(join(broken_on), 200))
                << "; evaluating it anyway\n";
  }
}

/// The candidates to evaluate and, per candidate, the file it came from.
struct Candidates {
  std::vector<spec::Candidate> list;
  std::vector<std::string> files;
};

/// How the evaluation went, over all candidates.
struct Outcome {
  bool all_ok = true;
  bool no_device = false;
  std::string no_device_reason;
};

class EvaluateCommand final : public Command {
 public:
  EvaluateCommand()
      : Command("evaluate",
                "Compile, check against the reference on every case, and time candidate kernels; "
                "prints a JSON array of results (one per --kernel)") {}
  void add_options(CLI::App& sub) override;
  int run() override;

 private:
  Candidates collect(const spec::Spec& spec) const;
  void override_params(spec::Candidate& c, const spec::Spec& spec) const;
  void check_arguments(const spec::Spec& spec) const;
  spec::Candidate template_with_params(const spec::Spec& spec) const;
  eval::EvaluatorOptions evaluator_options() const;
  std::optional<nlohmann::json> evaluate_one(eval::Evaluator& ev, const spec::Candidate& c, const std::string& tag,
                                             Outcome& out) const;
  nlohmann::json compile_only(const cuda::CompileResult& cr, const std::string& tag, Outcome& out) const;

  std::string spec_;                  // --spec (required)
  std::string input_cases_;           // --input-cases: cases or a shape capture replacing the spec's
  std::vector<std::string> kernels_;  // --kernel (default: the spec's initial kernel)
  std::string entry_;                 // --entry
  std::string params_;                // --params NAME=VALUE,...
  std::string json_out_;              // --json FILE
  std::vector<std::string> cases_;    // --cases (default: all)
  bool no_time_ = false;              // --no-time
  bool no_reference_timing_ = false;  // --no-reference-timing
  Environment env_;                   // --arch, --cache-dir, --device, --quiet
  bool tty_ = false;                  // stderr is a terminal: progress redrawn in place
};

void EvaluateCommand::add_options(CLI::App& sub) {
  sub.add_option("--spec", spec_, "Workload spec (JSON)")->required()->check(check::existing_file());
  sub.add_option("--kernel", kernels_, "Candidate .cu file(s); default: the spec's initial kernel")
      ->expected(1, CLI::detail::expected_max_vector_size)
      ->allow_extra_args(true)
      ->check(check::existing_file());
  sub.add_option("--entry", entry_, "Entry point (overrides annotations and the spec)")->check(check::entry_name());
  sub.add_option("--params", params_,
                 "Tuning parameters NAME=VALUE,... of the spec's space (-D defines, launch names); without --kernel: "
                 "evaluate the spec's template with them")
      ->check(check::not_empty());
  env_.add_arch(sub, "Compile for this architecture (e.g. sm_90) instead of the device's");
  sub.add_option("--json", json_out_, "Also write the results to this file")->check(check::not_empty());
  env_.add_cache_dir(sub);
  env_.add_compile_timeout(sub);
  sub.add_option("--input-cases", input_cases_,
                 "JSON file of cases replacing the spec's, or a shape capture (docs/capture.md)")
      ->check(check::existing_file());
  sub.add_option("--cases", cases_, "Only these cases (names)")->delimiter(',')->check(check::not_empty());
  env_.add_device(sub)->capture_default_str();
  env_.add_device_from_ctest(sub);
  sub.add_flag("--no-time", no_time_, "Check only; do not time");
  sub.add_flag("--no-reference-timing", no_reference_timing_, "Do not time the reference");
  env_.add_quiet(sub);
}

void EvaluateCommand::override_params(spec::Candidate& c, const spec::Spec& spec) const {
  if (params_.empty()) return;
  for (const auto& [k, v] : parse_params(params_)) c.params[k] = v;  // --params overrides kopt:param lines
  warn_broken_constraints(c, spec);
}

/// What can be checked before any compile: the output file, the cache
/// folder, --params against the spec's space, --cases against its cases.
void EvaluateCommand::check_arguments(const spec::Spec& spec) const {
  if (!params_.empty()) check_params_against_spec(parse_params(params_), spec);
  std::vector<std::string> names;
  for (const auto& c : spec.cases) names.push_back(c.name);
  for (const auto& want : cases_)
    if (std::find(names.begin(), names.end(), want) == names.end())
      throw UsageError("kopt.cli.016", "--cases: no case named " + quote(want) + " in " + spec.path.filename().string() +
                                           " (its cases: " + clip(join(names), 300) + ")");
}

/// The spec's template as one configuration: --params gives every tuning
/// parameter (a template compiled without them fails on its first unknown
/// name, so their absence is a usage error that lists them).
spec::Candidate EvaluateCommand::template_with_params(const spec::Spec& spec) const {
  const std::string file = spec.template_kernel->source.string();
  std::string names, wanted;  // "BM, BN" and "BM=V,BN=V"
  for (const spec::TuningParam& p : spec.tuning.params) {
    names += (names.empty() ? "" : ", ") + p.name;
    wanted += (wanted.empty() ? "" : ",") + p.name + "=V";
  }
  if (params_.empty())
    throw UsageError("kopt.cli.030", file + " is the spec's template: give --params " + wanted +
                                         " (the template's parameters; `kopt optimize` searches them)");
  spec::Candidate c = driver::template_candidate(spec);
  override_params(c, spec);
  for (const auto& [name, value] : c.params)
    if (std::none_of(spec.tuning.params.begin(), spec.tuning.params.end(),
                     [&](const spec::TuningParam& p) { return p.name == name; }))
      throw UsageError("kopt.cli.030", "--params: '" + name + "' is not a parameter of the template " + file +
                                           " (its parameters: " + names + ")");
  std::string missing;
  for (const spec::TuningParam& p : spec.tuning.params)
    if (!c.params.count(p.name)) missing += (missing.empty() ? "" : ",") + p.name + "=V";
  if (!missing.empty())
    throw UsageError("kopt.cli.030", "--params: the template " + file + " also needs " + missing +
                                         " (its parameters: " + names + ")");
  c.label = spec.template_kernel->source.filename().string() + " [" + search::config_key(c.params) + "]";
  return c;
}

Candidates EvaluateCommand::collect(const spec::Spec& spec) const {
  Candidates out;
  auto is_template = [&](const std::string& file) {
    std::error_code a, b;
    return spec.template_kernel && std::filesystem::weakly_canonical(file, a) ==
                                       std::filesystem::weakly_canonical(spec.template_kernel->source, b);
  };
  for (const auto& file : kernels_) {
    if (is_template(file)) {  // the template: its launch and options from the spec, --params required
      out.list.push_back(template_with_params(spec));
      out.files.push_back(file);
      continue;
    }
    for (spec::Candidate c : eval::candidates_from_file(file)) {  // a generated file may hold several variants
      if (c.label.find("(variant ") != std::string::npos && (!params_.empty() || !entry_.empty()))
        throw UsageError("kopt.cli.007", "--kernel " + clip(file) +
                                             ": holds shape-specialised variants with their parameters baked in: "
                                             "--params and --entry do not apply to it");
      if (!entry_.empty()) c.entry = entry_;
      if (c.entry.empty())
        throw UsageError("kopt.cli.015", "--kernel " + clip(file) +
                                             ": the file has no '// kopt:entry NAME' line; add one or give --entry NAME");
      override_params(c, spec);
      out.list.push_back(std::move(c));
      out.files.push_back(file);
    }
  }
  // No --kernel: --params means one configuration of the template (the
  // initial kernel takes no tuning parameters); without --params, the
  // initial kernel, or the template's hint when there is none.
  if (out.list.empty() && spec.template_kernel && (!params_.empty() || !spec.initial)) {
    out.list.push_back(template_with_params(spec));
    out.files.push_back(spec.template_kernel->source.string());
  }
  if (out.list.empty() && spec.initial) {
    spec::Candidate c = eval::candidate_from_file(spec.initial->source);
    if (!entry_.empty()) c.entry = entry_;  // --entry applies to the initial kernel too
    if (c.entry.empty()) c.entry = spec.initial->entry;
    for (const auto& [k, v] : spec.initial->defines) c.params.emplace(k, v);  // its configuration, if any
    override_params(c, spec);
    out.list.push_back(std::move(c));
  }
  if (out.list.empty()) throw UsageError("kopt.cli.003", "give --kernel FILE (the spec has no initial kernel)");
  return out;
}

eval::EvaluatorOptions EvaluateCommand::evaluator_options() const {
  eval::EvaluatorOptions eo;
  eo.worker_argv = eval::plan_workers(env_.worker_plan()).front().argv;
  eo.cache_dir = env_.cache_path();
  eo.arch = env_.arch;
  eo.compile_argv = env_.compile_argv();
  eo.compile_timeout_s = env_.compile_timeout_s;
  eo.time = !no_time_;
  eo.time_reference = !no_reference_timing_;
  eo.only_cases = cases_;
  if (!env_.quiet && tty_)
    eo.on_progress = [](const nlohmann::json& p) {
      std::cerr << "\r\033[K  " << p.value("phase", "") << " " << p.value("case", "") << std::flush;
    };
  return eo;
}

/// Compiles first (no GPU needed), then checks and times on the GPU if there
/// is one. Without a device: the compilation's JSON, or nothing once there is
/// nothing left to do (no --arch).
std::optional<nlohmann::json> EvaluateCommand::evaluate_one(eval::Evaluator& ev, const spec::Candidate& c,
                                                            const std::string& tag, Outcome& out) const {
  std::optional<cuda::CompileResult> compiled;
  if (!out.no_device || !env_.arch.empty()) {
    try {
      compiled = ev.compile(c);
    } catch (const NoDeviceError& e) {
      out.no_device = true;
      out.no_device_reason = e.what();
    }
  }
  if (compiled && !out.no_device) {
    try {
      model::Result res = ev.run(c, *compiled);
      // A result the worker measured: its device is known (a compile error
      // never started one, and asking would start it).
      const bool simulated = !ev.device_lock_key().empty() && ev.device().simulated;
      out.all_ok = out.all_ok && res.verdict == model::Verdict::ok;
      if (!env_.quiet) {
        if (tty_) std::cerr << "\r\033[K";
        std::cerr << tag << ": " << model::verdict_name(res.verdict);
        if (res.geomean_ms) std::cerr << ", geomean " << *res.geomean_ms << " ms";
        if (res.speedup) std::cerr << ", " << *res.speedup << "x the reference";
        if (res.geomean_ms && simulated) std::cerr << " (" << model::kSimulatedNote << ")";
        if (res.verdict != model::Verdict::ok) std::cerr << " - " << res.detail;
        std::cerr << "\n";
      }
      nlohmann::json j = res.to_json();
      if (simulated) j["simulated"] = true;  // the timings are made up (tests/fake_worker)
      return j;
    } catch (const NoDeviceError& e) {
      out.no_device = true;
      out.no_device_reason = e.what();
    }
  }
  if (!compiled) return std::nullopt;  // no device and nothing compiled: stop
  return compile_only(*compiled, tag, out);
}

/// What needs no GPU: the compilation for the given architecture.
nlohmann::json EvaluateCommand::compile_only(const cuda::CompileResult& cr, const std::string& tag,
                                             Outcome& out) const {
  nlohmann::json r = {{"verdict", cr.ok ? nlohmann::json(nullptr) : nlohmann::json("compile_error")},
                      {"compiled", cr.ok},
                      {"arch", env_.arch},
                      {"compile_ms", cr.compile_ms},
                      {"compile_cache_hit", cr.cache_hit},
                      {"error_name", cr.error_name},
                      {"compile_log", cr.log},
                      {"detail", cr.ok                ? "compiled; checking and timing need a GPU"
                                 : !cr.detail.empty() ? cr.detail
                                                      : "compilation failed: " + cuda::first_error_line(cr.log)}};
  if (!env_.quiet)
    std::cerr << tag << ": " << (cr.ok ? "compiled for " + env_.arch : "compile_error")
              << (cr.ok ? "" : " - " + r["detail"].get<std::string>()) << "\n";
  if (!cr.ok) out.all_ok = false;
  return r;
}

int EvaluateCommand::run() {
  tty_ = ::isatty(2);
  if (!json_out_.empty()) check_output_file("--json", json_out_);
  if (!env_.cache_dir.empty()) check_output_dir("--cache-dir", env_.cache_dir);
  driver::OptimizeOptions so;
  so.spec = spec_;
  so.input_cases = input_cases_;
  so.quiet = env_.quiet;
  const spec::Spec spec = driver::load_spec_with_overrides(so);
  check_arguments(spec);
  const Candidates candidates = collect(spec);
  env_.resolve_device("evaluate");
  eval::Evaluator ev(spec, evaluator_options());

  nlohmann::json results = nlohmann::json::array();
  Outcome out;
  for (size_t i = 0; i < candidates.list.size(); ++i) {
    const auto& c = candidates.list[i];
    const std::string tag =
        "[" + std::to_string(i + 1) + "/" + std::to_string(candidates.list.size()) + "] " + c.label;
    std::optional<nlohmann::json> r = evaluate_one(ev, c, tag, out);
    if (!r) break;
    (*r)["kernel"] = candidates.files.empty() ? spec.initial->source.string() : candidates.files[i];
    results.push_back(*r);
  }
  const std::string text = dump_json(results, 2);
  std::cout << text << std::endl;  // first: a --json file that cannot be written must not lose the results
  if (!json_out_.empty()) fs::write_output_file(json_out_, text + "\n");
  if (out.no_device) {
    std::cerr << "kopt: " << out.no_device_reason << "\n"
              << "kopt: checking and timing need a GPU"
              << (env_.arch.empty() ? "; give --arch sm_XY to compile the candidates anyway" : "") << "\n";
    return kNoDevice;
  }
  return out.all_ok ? kOk : kRejected;
}

}  // namespace

std::unique_ptr<Command> make_evaluate_command() { return std::make_unique<EvaluateCommand>(); }

}  // namespace kopt::cli
