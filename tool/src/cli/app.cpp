#include "cli/app.h"
#include "cli/bench.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cuda/device.h"
#include "cuda/nvrtc.h"
#include "eval/evaluator.h"
#include "eval/worker.h"
#include "gen/generate.h"
#include "opt/optimizer.h"
#include "spec/spec.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace kopt::cli {
namespace {

std::filesystem::path self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

std::filesystem::path default_cache_dir() {
  if (const char* x = std::getenv("KOPT_CACHE_DIR")) return x;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "kopt";
  if (const char* h = std::getenv("HOME")) return std::filesystem::path(h) / ".cache" / "kopt";
  return std::filesystem::temp_directory_path() / "kopt-cache";
}

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

struct EvaluateOptions {
  std::string spec;
  std::vector<std::string> kernels;
  std::string entry;
  std::string params;
  std::string arch;
  std::string json_out;
  std::string cache_dir;
  std::vector<std::string> cases;
  int device = 0;
  bool no_time = false;
  bool no_reference_timing = false;
  bool quiet = false;
};

int cmd_evaluate(const EvaluateOptions& o) {
  const spec::Spec spec = spec::load_spec(o.spec);
  std::vector<spec::Candidate> candidates;
  std::vector<std::string> kernel_files;  // per candidate, for the JSON output
  for (const auto& k : o.kernels)
    for (spec::Candidate c : eval::candidates_from_file(k)) {  // a generated file may hold several variants
      if (c.label.find("(variant ") != std::string::npos && (!o.params.empty() || !o.entry.empty()))
        throw UsageError("kopt.cli.007", k + " holds shape-specialised variants with their parameters baked in: "
                                             "--params and --entry do not apply to it");
      if (!o.entry.empty()) c.entry = o.entry;
      for (const auto& [k, v] : parse_params(o.params)) c.params[k] = v;  // --params overrides kopt:param lines
      candidates.push_back(std::move(c));
      kernel_files.push_back(k);
    }
  if (candidates.empty() && spec.initial) {
    spec::Candidate c = eval::candidate_from_file(spec.initial->source);
    if (c.entry.empty()) c.entry = spec.initial->entry;
    for (const auto& [k, v] : parse_params(o.params)) c.params[k] = v;  // --params overrides kopt:param lines
    candidates.push_back(std::move(c));
  }
  if (candidates.empty()) throw UsageError("kopt.cli.003", "give --kernel FILE (the spec has no initial kernel)");

  const bool tty = ::isatty(2);
  eval::EvaluatorOptions eo;
  eo.worker_argv = {self_exe().string(), "worker", "--device", std::to_string(o.device)};
  eo.cache_dir = o.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(o.cache_dir);
  eo.arch = o.arch;
  eo.time = !o.no_time;
  eo.time_reference = !o.no_reference_timing;
  eo.only_cases = o.cases;
  if (!o.quiet && tty)
    eo.on_progress = [](const nlohmann::json& p) {
      std::cerr << "\r\033[K  " << p.value("phase", "") << " " << p.value("case", "") << std::flush;
    };
  eval::Evaluator ev(spec, eo);

  nlohmann::json results = nlohmann::json::array();
  bool all_ok = true;
  bool no_device = false;
  std::string no_device_reason;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    const std::string tag = "[" + std::to_string(i + 1) + "/" + std::to_string(candidates.size()) + "] " + c.label;
    nlohmann::json r;
    // Compile first (no GPU needed), then check and time on the GPU if there is one.
    std::optional<cuda::CompileResult> compiled;
    if (!no_device || !o.arch.empty()) {
      try {
        compiled = ev.compile(c);
      } catch (const NoDeviceError& e) {
        no_device = true;
        no_device_reason = e.what();
      }
    }
    if (compiled && !no_device) {
      try {
        model::Result res = ev.run(c, *compiled);
        r = res.to_json();
        all_ok = all_ok && res.verdict == model::Verdict::ok;
        if (!o.quiet) {
          if (tty) std::cerr << "\r\033[K";
          std::cerr << tag << ": " << model::verdict_name(res.verdict);
          if (res.geomean_ms) std::cerr << ", geomean " << *res.geomean_ms << " ms";
          if (res.speedup) std::cerr << ", " << *res.speedup << "x the reference";
          if (res.verdict != model::Verdict::ok) std::cerr << " - " << res.detail;
          std::cerr << "\n";
        }
      } catch (const NoDeviceError& e) {
        no_device = true;
        no_device_reason = e.what();
      }
    }
    if (no_device) {
      // Report what needs no GPU: the compilation for the given architecture.
      if (!compiled) break;
      const cuda::CompileResult& cr = *compiled;
      r = {{"verdict", cr.ok ? nlohmann::json(nullptr) : nlohmann::json("compile_error")},
           {"compiled", cr.ok},
           {"arch", o.arch},
           {"compile_ms", cr.compile_ms},
           {"compile_cache_hit", cr.cache_hit},
           {"error_name", cr.error_name},
           {"compile_log", cr.log},
           {"detail", cr.ok ? "compiled; checking and timing need a GPU" : "compilation failed"}};
      if (!o.quiet) std::cerr << tag << ": " << (cr.ok ? "compiled for " + o.arch : "compile_error") << "\n";
      if (!cr.ok) all_ok = false;
    }
    r["kernel"] = kernel_files.empty() ? spec.initial->source.string() : kernel_files[i];
    results.push_back(r);
  }
  const std::string text = dump_json(results, 2);
  if (!o.json_out.empty()) fs::write_file_atomic(o.json_out, text + "\n");
  std::cout << text << std::endl;
  if (no_device) {
    std::cerr << "kopt: " << no_device_reason << "\n"
              << "kopt: checking and timing need a GPU"
              << (o.arch.empty() ? "; give --arch sm_XY to compile the candidates anyway" : "") << "\n";
    return kNoDevice;
  }
  return all_ok ? kOk : kRejected;
}

/// Parses --budget: "evals=200,minutes=10", "200" (evaluations) or "10m" (minutes).
void parse_budget(const std::string& text, opt::OptimizeOptions& o) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    std::string key = eq == std::string::npos ? "" : item.substr(0, eq);
    std::string value = eq == std::string::npos ? item : item.substr(eq + 1);
    if (key.empty() && !value.empty() && (value.back() == 'm')) {
      key = "minutes";
      value.pop_back();
    } else if (key.empty()) {
      key = "evals";
    }
    try {
      size_t used = 0;
      if (key == "evals" || key == "evaluations") {
        o.max_evaluations = std::stoll(value, &used);
      } else if (key == "minutes" || key == "min") {
        o.max_minutes = std::stod(value, &used);
      } else if (key == "patience") {
        o.patience = std::stoll(value, &used);
      } else {
        throw UsageError("kopt.cli.004", "--budget: unknown key '" + key + "' (known: evals, minutes, patience)");
      }
      if (used != value.size()) throw std::invalid_argument("trailing");
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception&) {
      throw UsageError("kopt.cli.005", "--budget: '" + item + "' needs a number (e.g. evals=200,minutes=10)");
    }
  }
}

int cmd_devices() {
  auto devices = cuda::query_devices();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : devices) out.push_back(d.to_json());
  std::cout << dump_json(out, 2) << std::endl;
  return kOk;
}

}  // namespace

int App::run(int argc, char** argv) {
  CLI::App app{"kopt - KernelOptimizer: compile, check, time and tune single CUDA kernels.\n"
               "Exit codes: 0 ok, 1 candidate rejected, 2 usage or spec error, 3 environment error, "
               "77 no CUDA device."};
  app.set_version_flag("--version", std::string("kopt ") + KOPT_VERSION);
  app.require_subcommand(1);

  auto* devices = app.add_subcommand("devices", "Print the CUDA devices' properties as JSON");

  EvaluateOptions eo;
  auto* evaluate = app.add_subcommand(
      "evaluate", "Compile, check against the reference on every case, and time candidate kernels; "
                  "prints a JSON array of results (one per --kernel)");
  evaluate->add_option("--spec", eo.spec, "Workload spec (JSON)")->required()->check(CLI::ExistingFile);
  evaluate->add_option("--kernel", eo.kernels, "Candidate .cu file(s); default: the spec's initial kernel")
      ->expected(1, CLI::detail::expected_max_vector_size)
      ->allow_extra_args(true)
      ->check(CLI::ExistingFile);
  evaluate->add_option("--entry", eo.entry, "Entry point (overrides annotations and the spec)");
  evaluate->add_option("--params", eo.params, "Tuning parameters NAME=VALUE,... (-D defines, launch names)");
  evaluate->add_option("--arch", eo.arch, "Compile for this architecture (e.g. sm_90) instead of the device's");
  evaluate->add_option("--json", eo.json_out, "Also write the results to this file");
  evaluate->add_option("--cache-dir", eo.cache_dir, "NVRTC compile cache (default: $KOPT_CACHE_DIR or ~/.cache/kopt)");
  evaluate->add_option("--cases", eo.cases, "Only these cases (names)")->delimiter(',');
  evaluate->add_option("--device", eo.device, "CUDA device ordinal")->capture_default_str();
  evaluate->add_flag("--no-time", eo.no_time, "Check only; do not time");
  evaluate->add_flag("--no-reference-timing", eo.no_reference_timing, "Do not time the reference");
  evaluate->add_flag("-q,--quiet", eo.quiet, "No progress on stderr");

  opt::OptimizeOptions oo;
  std::string budget, results_dir = "results", resume, cache_dir;
  int64_t max_iterations = 0;
  auto* optimize = app.add_subcommand(
      "optimize", "Search a tunable template for the fastest kernel that passes every case; "
                  "writes a run folder (results/run-NNN) and prints its summary.json");
  optimize->add_option("--spec", oo.spec, "Workload spec (JSON); without it, --description TEXT has the agent draft one")
      ->check(CLI::ExistingFile);
  optimize->add_option("--template", oo.template_source, "Tunable template .cu (default: the spec's template)")
      ->check(CLI::ExistingFile);
  optimize->add_option("--initial-kernel", oo.initial_kernel,
                       "Starting kernel, e.g. a previous run's best.cu (default: the spec's initial)")
      ->check(CLI::ExistingFile);
  optimize->add_option("--reference", oo.reference, "Reference kernel .cu with a kopt:entry line (default: the spec's)")
      ->check(CLI::ExistingFile);
  optimize->add_option("--input-cases", oo.input_cases, "JSON file of cases replacing the spec's")
      ->check(CLI::ExistingFile);
  optimize->add_option("--description", oo.description, "What the kernel does (recorded; used by the agent proposer)");
  optimize->add_option("--strategy", oo.strategy,
                       "exhaustive, random, anneal, genetic, surrogate (default: by space size); agent, hybrid (the LLM "
                       "agent proposer; see README \"The agent proposer\")");
  optimize->add_option("--budget", budget, "evals=N,minutes=M,patience=P (any subset; default evals=100)");
  optimize->add_option("--max-iterations", max_iterations, "Same as --budget evals=N");
  optimize->add_option("--results-dir", results_dir, "Where run folders are created")->capture_default_str();
  optimize->add_option("--resume", resume, "Continue this run folder (same spec); recorded attempts are not re-run")
      ->check(CLI::ExistingDirectory);
  optimize->add_option("--seed", oo.seed, "Search seed")->capture_default_str();
  optimize->add_option("--device", oo.device, "CUDA device ordinal")->capture_default_str();
  optimize->add_option("--arch", oo.arch, "Compile for this architecture; with no GPU, compile the candidates only");
  optimize->add_option("--top", oo.top, "Candidates re-timed interleaved at the end")->capture_default_str();
  optimize->add_option("--retime-rounds", oo.retime_rounds, "Rounds of that re-timing")->capture_default_str();
  bool no_specialize = false;
  optimize->add_flag("--no-specialize", no_specialize,
                     "One configuration for every shape (default: a performance case that another configuration "
                     "runs faster gets it as a shape-specialised variant)");
  optimize->add_option("--specialize-threshold", oo.specialize_threshold,
                       "Fraction a variant must beat the single best by on its case")
      ->capture_default_str();
  optimize->add_option("--compile-threads", oo.compile_threads, "NVRTC threads (default: cores - 1)");
  optimize->add_option("--cache-dir", cache_dir, "NVRTC compile cache (default: $KOPT_CACHE_DIR or ~/.cache/kopt)");
  optimize->add_flag("-q,--quiet", oo.quiet, "No progress on stderr");
  // The agent proposer (--strategy agent|hybrid); --max-iterations N is N model turns and N evaluations there.
  optimize->add_option("--max-repairs", oo.agent.max_repairs,
                       "Agent: failed candidates in a row the model may repair before the run stops")
      ->capture_default_str()->group("Agent");
  optimize->add_option("--token-budget", oo.agent.token_budget, "Agent: total tokens (0: no limit)")->group("Agent");
  optimize->add_option("--llm-model", oo.agent.llm_model, "Agent: model name (default: $OPENAI_MODEL, else gpt-5-mini)")
      ->group("Agent");
  optimize->add_option("--llm-base-url", oo.agent.llm_base_url,
                       "Agent: OpenAI-compatible API base URL (default: $OPENAI_BASE_URL, else https://api.openai.com/v1)")
      ->group("Agent");
  optimize->add_option("--llm-api", oo.agent.llm_api, "Agent: auto, chat or responses (default: auto)")
      ->check(CLI::IsMember({"auto", "chat", "responses"}))->group("Agent");
  optimize->add_option("--llm-tool-choice", oo.agent.tool_choice,
                       "Agent: auto, required, or a tool name to force it on every turn (e.g. evaluate_candidate)")
      ->capture_default_str()->group("Agent");
  optimize->add_option("--llm-max-output-tokens", oo.agent.max_output_tokens,
                       "Agent: cap on each reply's tokens (a cut reply's tool calls are never run)")
      ->group("Agent");
  optimize->add_option("--llm-timeout", oo.agent.llm_timeout_s, "Agent: seconds per HTTP attempt (default 300)")
      ->group("Agent");
  optimize->add_flag("--allow-doc-fetch", oo.agent.allow_doc_fetch,
                     "Agent: let the model fetch documentation pages from URLs (off by default)")
      ->group("Agent");
  std::string worker_command;
  optimize->add_option("--worker-command", worker_command,
                       "Testing: start this program (space-separated argv) instead of `kopt worker`")
      ->group("Testing");

  gen::GenerateOptions go;
  std::string gen_budget, gen_cache_dir;
  auto* generate = app.add_subcommand(
      "generate", "For the CMake module: write <out-dir>/<name>.cu and <name>_launch.h from a tuning run on "
                  "this GPU, else the tuning cache, else the initial kernel");
  generate->add_option("--spec", go.optimize.spec, "Workload spec (JSON)")->required()->check(CLI::ExistingFile);
  generate->add_option("--name", go.name, "Kernel name (file names, header namespace)")->required();
  generate->add_option("--out-dir", go.out_dir, "Output folder")->required();
  generate->add_option("--cache-file", go.cache_file, "Tuning cache JSON (read; updated after tuning)");
  generate->add_option("--template", go.optimize.template_source, "Tunable template .cu")->check(CLI::ExistingFile);
  generate->add_option("--initial-kernel", go.optimize.initial_kernel, "Initial kernel .cu")->check(CLI::ExistingFile);
  generate->add_option("--reference", go.optimize.reference, "Reference kernel .cu")->check(CLI::ExistingFile);
  generate->add_option("--strategy", go.optimize.strategy, "Search strategy");
  generate->add_option("--budget", gen_budget, "evals=N,minutes=M,patience=P (default evals=100)");
  generate->add_option("--seed", go.optimize.seed, "Search seed");
  generate->add_option("--device", go.optimize.device, "CUDA device ordinal");
  generate->add_option("--cache-dir", gen_cache_dir, "NVRTC compile cache");
  generate->add_option("--target-gpu", go.target_gpu, "GPU name to take from the cache without a GPU (env KOPT_TARGET_GPU)")
      ->envname("KOPT_TARGET_GPU");
  generate->add_flag("--require-gpu", go.require_gpu, "Fail instead of falling back when there is no GPU (env KOPT_REQUIRE_GPU)")
      ->envname("KOPT_REQUIRE_GPU");
  generate->add_option("--from-run", go.from_run,
                       "Take the kernel (and its shape-specialised variants) from this finished run folder")
      ->check(CLI::ExistingDirectory);
  generate->add_flag("--no-specialize{false}", go.optimize.specialize,
                     "One kernel configuration for every shape (no shape-specialised variants)");
  generate->add_flag("--no-tune{false}", go.tune, "Do not tune even with a GPU; use the cache or the initial kernel");
  generate->add_flag("-q,--quiet", go.optimize.quiet, "Less progress on stderr");

  BenchOptions bo;
  auto* bench = app.add_subcommand(
      "bench", "Time a kernel and the reference on the performance cases (Google Benchmark output; "
               "--benchmark_* flags are passed through) and fail when slower than the recorded best");
  bench->add_option("--spec", bo.spec, "Workload spec (JSON)")->required()->check(CLI::ExistingFile);
  bench->add_option("--kernel", bo.kernel, "Kernel .cu (with kopt: annotations)")->required()->check(CLI::ExistingFile);
  bench->add_option("--cache-file", bo.cache_file, "Tuning cache holding the recorded best");
  bench->add_option("--recorded-ms", bo.recorded_ms, "Recorded best geomean in ms (instead of the cache)");
  bench->add_option("--tolerance", bo.tolerance_percent, "Allowed slowdown in percent")->capture_default_str();
  bench->add_option("--cache-dir", bo.cache_dir, "NVRTC compile cache");
  bench->add_option("--device", bo.device, "CUDA device ordinal");
  bench->allow_extras();

  eval::WorkerOptions wo;
  auto* worker = app.add_subcommand("worker", "Internal: the GPU worker process (JSON lines on stdin/stdout)");
  worker->add_option("--device", wo.device, "CUDA device ordinal");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kOk : kUsage;
  }
  try {
    if (*worker) return eval::run_worker(wo);
    if (*devices) return cmd_devices();
    if (*evaluate) return cmd_evaluate(eo);
    if (*bench) {
      bo.benchmark_args = bench->remaining();
      if (bo.cache_dir.empty()) bo.cache_dir = default_cache_dir().string();
      bo.worker_argv = {self_exe().string(), "worker", "--device", std::to_string(bo.device)};
      return run_bench(bo);
    }
    if (*generate) {
      parse_budget(gen_budget, go.optimize);
      if (gen_budget.empty()) go.optimize.max_evaluations = 100;
      go.optimize.cache_dir = gen_cache_dir.empty() ? default_cache_dir() : std::filesystem::path(gen_cache_dir);
      go.optimize.worker_argv = {self_exe().string(), "worker", "--device", std::to_string(go.optimize.device)};
      return gen::generate(go);
    }
    if (*optimize) {
      parse_budget(budget, oo);
      if (max_iterations > 0) oo.max_evaluations = max_iterations;
      if (budget.empty() && max_iterations == 0) oo.max_evaluations = 100;  // documented default
      oo.results_dir = results_dir;
      oo.resume = resume;
      if (no_specialize) oo.specialize = false;
      oo.cache_dir = cache_dir.empty() ? default_cache_dir() : std::filesystem::path(cache_dir);
      oo.worker_argv = {self_exe().string(), "worker", "--device", std::to_string(oo.device)};
      oo.agent.kopt_exe = self_exe();
      if (oo.spec.empty() && oo.description.empty())
        throw UsageError("kopt.cli.006", "optimize: give --spec FILE (or --description TEXT for the agent proposer)");
      if (oo.spec.empty() && !oo.strategy.empty() && oo.strategy != "agent" && oo.strategy != "hybrid")
        throw UsageError("kopt.cli.006", "optimize: --strategy " + oo.strategy + " needs --spec FILE");
      if (!worker_command.empty()) {
        oo.worker_argv.clear();
        std::istringstream words(worker_command);
        for (std::string w; words >> w;) oo.worker_argv.push_back(w);
      }
      return opt::optimize(oo);
    }
  } catch (const NoDeviceError& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kNoDevice;
  } catch (const SpecError& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kUsage;
  } catch (const UsageError& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kUsage;
  } catch (const std::exception& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kEnvironment;
  }
  return kUsage;
}

}  // namespace kopt::cli
