// `kopt evaluate`: compiles, checks and times candidate kernels; prints a JSON
// array of results, one per kernel (a generated file: one per variant). With
// no GPU the candidates are still compiled when --arch is given (exit 77).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/common.h"
#include "cuda/nvrtc.h"
#include "eval/evaluator.h"
#include "search/space.h"
#include "spec/spec.h"
#include "tune/driver.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace kopt::cli {
namespace {

/// Parses "A=1,B=2" into a map. Throws UsageError naming the bad item.
std::map<std::string, int64_t> parse_params(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("kopt.cli.001", "--params: expected NAME=VALUE, got '" + item + "'");
    try {
      size_t used = 0;
      int64_t v = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("trailing");
      out[item.substr(0, eq)] = v;
    } catch (const std::exception&) {
      throw UsageError("kopt.cli.002", "--params: '" + item + "' needs an integer value");
    }
  }
  return out;
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
  const char* name() const override { return "evaluate"; }
  const char* description() const override {
    return "Compile, check against the reference on every case, and time candidate kernels; "
           "prints a JSON array of results (one per --kernel)";
  }
  void add_options(CLI::App& sub) override;
  int run() override;

 private:
  Candidates collect(const spec::Spec& spec) const;
  spec::Candidate template_with_params(const spec::Spec& spec) const;
  void override_params(spec::Candidate& c) const;
  eval::EvaluatorOptions evaluator_options() const;
  std::optional<nlohmann::json> evaluate_one(eval::Evaluator& ev, const spec::Candidate& c, const std::string& tag,
                                             Outcome& out) const;
  nlohmann::json compile_only(const cuda::CompileResult& cr, const std::string& tag, Outcome& out) const;

  std::string spec_;                  // --spec (required)
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
  sub.add_option("--spec", spec_, "Workload spec (JSON)")->required()->check(CLI::ExistingFile);
  sub.add_option("--kernel", kernels_, "Candidate .cu file(s); default: the spec's initial kernel")
      ->expected(1, CLI::detail::expected_max_vector_size)
      ->allow_extra_args(true)
      ->check(CLI::ExistingFile);
  sub.add_option("--entry", entry_, "Entry point (overrides annotations and the spec)");
  sub.add_option("--params", params_,
                 "Tuning parameters NAME=VALUE,... (-D defines, launch names); without --kernel: evaluate the "
                 "spec's template with them");
  env_.add_arch(sub, "Compile for this architecture (e.g. sm_90) instead of the device's");
  sub.add_option("--json", json_out_, "Also write the results to this file");
  env_.add_cache_dir(sub);
  sub.add_option("--cases", cases_, "Only these cases (names)")->delimiter(',');
  env_.add_device(sub)->capture_default_str();
  sub.add_flag("--no-time", no_time_, "Check only; do not time");
  sub.add_flag("--no-reference-timing", no_reference_timing_, "Do not time the reference");
  env_.add_quiet(sub);
}

void EvaluateCommand::override_params(spec::Candidate& c) const {
  for (const auto& [k, v] : parse_params(params_)) c.params[k] = v;  // --params overrides kopt:param lines
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
  spec::Candidate c = tune::template_candidate(spec);
  override_params(c);
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
        throw UsageError("kopt.cli.007", file + " holds shape-specialised variants with their parameters baked in: "
                                                "--params and --entry do not apply to it");
      if (!entry_.empty()) c.entry = entry_;
      override_params(c);
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
    if (c.entry.empty()) c.entry = spec.initial->entry;
    override_params(c);
    out.list.push_back(std::move(c));
  }
  if (out.list.empty()) throw UsageError("kopt.cli.003", "give --kernel FILE (the spec has no initial kernel)");
  return out;
}

eval::EvaluatorOptions EvaluateCommand::evaluator_options() const {
  eval::EvaluatorOptions eo;
  eo.worker_argv = env_.worker_argv();
  eo.cache_dir = env_.cache_path();
  eo.arch = env_.arch;
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
      out.all_ok = out.all_ok && res.verdict == model::Verdict::ok;
      if (!env_.quiet) {
        if (tty_) std::cerr << "\r\033[K";
        std::cerr << tag << ": " << model::verdict_name(res.verdict);
        if (res.geomean_ms) std::cerr << ", geomean " << *res.geomean_ms << " ms";
        if (res.speedup) std::cerr << ", " << *res.speedup << "x the reference";
        if (res.verdict != model::Verdict::ok) std::cerr << " - " << res.detail;
        std::cerr << "\n";
      }
      return res.to_json();
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
                                                      : "compilation failed"}};
  if (!env_.quiet)
    std::cerr << tag << ": " << (cr.ok ? "compiled for " + env_.arch : "compile_error")
              << (cr.detail.empty() ? "" : " - " + cr.detail) << "\n";
  if (!cr.ok) out.all_ok = false;
  return r;
}

int EvaluateCommand::run() {
  tty_ = ::isatty(2);
  const spec::Spec spec = spec::load_spec(spec_);
  const Candidates candidates = collect(spec);
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
  if (!json_out_.empty()) fs::write_file_atomic(json_out_, text + "\n");
  std::cout << text << std::endl;
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
