// `kopt optimize`: searches a tunable template (or lets the LLM agent
// propose kernels) and writes a run folder; prints its summary.json.
#include <CLI/CLI.hpp>
#include <iostream>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/common.h"
#include "store/store.h"
#include "store/summary.h"
#include "driver/driver.h"
#include "driver/proposers.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::cli {
namespace {

class OptimizeCommand final : public Command {
 public:
  OptimizeCommand()
      : Command("optimize",
                "Search a tunable template for the fastest kernel that passes every case; "
                "writes a run folder (results/run-NNN) and prints its summary.json") {}
  void add_options(CLI::App& sub) override {
    add_inputs(sub);
    add_search(sub);
    add_agent(sub, o_.agent);
    budget_.add_token_budget(sub)->group("Agent");
    sub.add_option("--worker-command", worker_command_,
                   "Testing: start this program (space-separated argv) instead of `kopt worker`; with --devices "
                   "or --worker-launcher, {device} in it is the device number")
        ->check(check::not_empty())
        ->group("Testing");
  }
  int run() override;

 private:
  void add_inputs(CLI::App& sub);
  void add_search(CLI::App& sub);
  static void add_agent(CLI::App& sub, agent::AgentOptions& a);
  void apply_resume_defaults();

  driver::OptimizeOptions o_;  // the options that map one to one; defaults in driver/driver.h
  Environment env_;         // --device, --arch, --cache-dir, --quiet
  Budget budget_;           // --budget, --max-iterations, --token-budget
  std::string results_dir_ = driver::OptimizeOptions().results_dir.string();  // --results-dir
  std::string resume_;                                                     // --resume RUN_DIR
  bool no_specialize_ = false;                                             // --no-specialize
  std::string shape_classes_ = "auto";                                     // --shape-classes
  std::string worker_command_;  // --worker-command (testing; default: `kopt worker`)
  std::string devices_;         // --devices 0,1,...
  std::string launcher_;        // --worker-launcher "CMD ..."
  CLI::Option* device_opt_ = nullptr;
  // Given on the command line or not (--resume takes the run's own otherwise).
  CLI::Option *strategy_opt_ = nullptr, *seed_opt_ = nullptr, *budget_opt_ = nullptr, *max_iter_opt_ = nullptr;
  CLI::Option *shape_classes_opt_ = nullptr, *screen_factor_opt_ = nullptr;
};

/// What is tuned: the spec, the files overriding its own, the description.
void OptimizeCommand::add_inputs(CLI::App& sub) {
  sub.add_option("--spec", o_.spec,
                 "Workload spec (JSON); without it, --resume RUN takes the run's spec.json, and --description TEXT "
                 "has the agent draft one")
      ->check(check::existing_file());
  sub.add_option("--template", o_.template_source, "Tunable template .cu (default: the spec's template)")
      ->check(check::existing_file());
  sub.add_option("--initial-kernel", o_.initial_kernel,
                 "Starting kernel, e.g. a previous run's best.cu (default: the spec's initial)")
      ->check(check::existing_file());
  sub.add_option("--reference", o_.reference, "Reference kernel .cu with a kopt:entry line (default: the spec's)")
      ->check(check::existing_file());
  sub.add_option("--input-cases", o_.input_cases, "JSON file of cases replacing the spec's")
      ->check(check::existing_file());
  sub.add_option("--description", o_.description, "What the kernel does (recorded; used by the agent proposer)")
      ->check(check::not_empty());
}

/// How the search runs: strategy, budget, run folder, device, final re-timing.
void OptimizeCommand::add_search(CLI::App& sub) {
  strategy_opt_ = sub.add_option("--strategy", o_.strategy,
                 "exhaustive, random, anneal, genetic, surrogate, forest, local, walk, portfolio (default: by space size); "
                 "agent, hybrid (the LLM "
                 "agent proposer; see docs/agent.md)")
      ->check(check::one_of(driver::proposer_names()));
  sub.add_option("--warm-start", o_.warm_start,
                 "T4 results or a Kernel Tuner cache file: its configurations that fit the space are evaluated "
                 "first, best recorded first (docs/interop.md)")
      ->check(check::existing_file());
  budget_opt_ = budget_.add_budget(
      sub, "evals=N,minutes=M,patience=P (any subset; " + Budget::bare_text() + "; " + Budget::default_text() +
               "; with --resume, the run's)");
  max_iter_opt_ = budget_.add_max_iterations(sub);
  sub.add_option("--results-dir", results_dir_, "Where run folders are created")
      ->check(check::not_empty())
      ->capture_default_str();
  sub.add_option("--resume", resume_,
                 "Continue this run folder; recorded attempts are not re-run. Its spec, strategy, seed and budget "
                 "are the run's unless given (a --spec given must be the one it was made from)")
      ->check(check::existing_dir());
  seed_opt_ = sub.add_option("--seed", o_.seed, "Search seed")->check(check::unsigned_whole())->capture_default_str();
  device_opt_ = env_.add_device(sub)->capture_default_str();
  sub.add_option("--devices", devices_,
                 "Several GPUs: one worker per device number (0,1,...), candidates spread over them; the initial "
                 "kernel, the baseline and the final re-timing on the first (docs/multi-gpu.md)")
      ->check(check::not_empty());
  sub.add_option("--worker-launcher", launcher_,
                 "Start each worker through this command (\"ssh gpu-node-3\", \"srun --gpus=1 -N1\", \"bash -c\"): "
                 "its words, then the worker command line; {device} and {index} are replaced "
                 "(docs/multi-gpu.md)")
      ->check(check::not_empty());
  env_.add_arch(sub, "Compile for this architecture; with no GPU, compile the candidates only");
  sub.add_option("--top", o_.top, "Candidates re-timed interleaved at the end")
      ->check(check::whole(1, 100))
      ->capture_default_str();
  sub.add_option("--retime-rounds", o_.retime_rounds,
                 "Rounds of that re-timing (0: none); rounds after the first stop when the minutes budget is "
                 "spent")
      ->check(check::whole(0, 100))
      ->capture_default_str();
  sub.add_flag("--no-specialize", no_specialize_,
               "One configuration for every shape (default: a performance case that another configuration "
               "runs faster gets it as a shape-specialised variant)");
  sub.add_option("--specialize-threshold", o_.specialize_threshold,
                 "Fraction a variant must beat the single best by on its case")
      ->check(check::finite(0, true, 1, false))
      ->capture_default_str();
  shape_classes_opt_ = sub.add_option("--shape-classes", shape_classes_,
                 "Group the performance cases by size into this many shape classes and search each in turn "
                 "with its share of the budget: auto (one class per two cases from 6 cases on, at most 8), off, "
                 "or 1-64 (docs/search.md)")
      ->check(check::shape_classes())
      ->capture_default_str();
  screen_factor_opt_ = sub.add_option("--screen-factor", o_.screen_factor,
                 "A case whose probe launch is slower than this times the best known there (a candidate's "
                 "median; with shape classes also 4x the cuBLAS baseline's when lower) is not timed further (0: off)")
      ->check(check::screen_factor())
      ->capture_default_str();
  sub.add_option("--compile-threads", o_.compile_threads,
                 "NVRTC threads (default: hardware threads - 1); more than 4x the hardware threads is lowered to "
                 "that, with a warning")
      ->check(check::whole(1, 1000000));
  sub.add_option("--compile-ahead", o_.compile_ahead,
                 "Candidates proposed and compiled ahead of the GPU (default: auto, as many as keep the GPU busy "
                 "by the recent compile and evaluation times, at most twice --compile-threads)")
      ->check(check::whole(1, 100000));
  env_.add_compile_timeout(sub);
  env_.add_cache_dir(sub);
  env_.add_quiet(sub);
}

/// The agent proposer (--strategy agent|hybrid); --max-iterations N is N model
/// turns and N evaluations there (model/budget.h). Defaults in agent/agent.h.
void OptimizeCommand::add_agent(CLI::App& sub, agent::AgentOptions& a) {
  sub.add_option("--max-repairs", a.max_repairs,
                 "Agent: failed candidates in a row the model may repair before the run stops")
      ->check(check::whole(0, 1000))->capture_default_str()->group("Agent");
  sub.add_option("--llm-model", a.llm_model, "Agent: model name (default: $OPENAI_MODEL, else gpt-5-mini)")
      ->check(check::not_empty())->group("Agent");
  sub.add_option("--llm-base-url", a.llm_base_url,
                 "Agent: OpenAI-compatible API base URL (default: $OPENAI_BASE_URL, else https://api.openai.com/v1)")
      ->check(check::not_empty())->group("Agent");
  sub.add_option("--llm-api", a.llm_api, "Agent: auto, chat or responses (default: auto)")
      ->check(check::one_of({"auto", "chat", "responses"}))->group("Agent");
  sub.add_option("--llm-tool-choice", a.tool_choice,
                 "Agent: auto, required, or a tool name to force it on every turn (e.g. evaluate_candidate)")
      ->check(check::not_empty())->capture_default_str()->group("Agent");
  sub.add_option("--llm-max-output-tokens", a.max_output_tokens,
                 "Agent: cap on each reply's tokens (a cut reply's tool calls are never run)")
      ->check(check::whole(1, 10000000))->group("Agent");
  sub.add_option("--llm-timeout", a.llm_timeout_s, "Agent: seconds per HTTP attempt (default 300)")
      ->check(check::finite(0, false, 86400))->group("Agent");
  sub.add_flag("--allow-doc-fetch", a.allow_doc_fetch,
               "Agent: let the model fetch documentation pages from URLs (off by default)")
      ->group("Agent");
  sub.add_option("--doc-fetch-allow", a.doc_fetch_allow,
                 "Agent: also allow fetch_url this host: [http://|https://]HOST[:PORT] or *.DOMAIN (repeatable; "
                 "also $KOPT_DOC_FETCH_ALLOW); loopback and private addresses stay refused")
      ->allow_extra_args(false)->take_all()->group("Agent");
}

/// --resume RUN: what the command line does not say comes from the run: its
/// strategy and seed (run.json), its budget (the last session's, in
/// summary.json, else run.json's); the spec is its spec.json (driver::optimize).
void OptimizeCommand::apply_resume_defaults() {
  const store::RunInfo info = store::RunStore::read_info(resume_);
  std::vector<std::string> taken;
  if (strategy_opt_->count() == 0 && o_.strategy.empty() && !info.strategy.empty()) {
    o_.strategy = info.strategy;
    taken.push_back("strategy " + info.strategy);
  }
  if (seed_opt_->count() == 0) {
    o_.seed = info.seed;
    taken.push_back("seed " + std::to_string(info.seed));
  }
  // The last session's summary.json: its budget, and its shape classes. What
  // reads of a damaged one is taken; this run rewrites it.
  std::optional<store::Summary> last;
  {
    const std::filesystem::path summary = std::filesystem::path(resume_) / "summary.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(summary, ec)) {
      try {
        last = store::read_summary(summary, store::ReadMode::tolerant);
      } catch (const std::exception&) {
        // not JSON: run.json's budget serves
      }
    }
  }
  // A summary written by a session (it names the strategy) says whether the
  // run has shape classes (no "shape_classes": a run without them).
  const bool last_session = last && !last->strategy.empty();
  // (A pointer to the value taken, not a copy of it: GCC's -Wmaybe-uninitialized
  // misreads a local std::optional<double> here.)
  const double* screen_factor = last && last->screen_factor ? &*last->screen_factor : nullptr;
  // Shape classes: the same grouping as the last session, so each class goes
  // on where it stopped; a session killed before its first summary: run.json's options.
  if (!last_session) {
    if (shape_classes_opt_->count() == 0 && info.shape_classes) {
      const int64_t n = *info.shape_classes;
      shape_classes_ = n < 0 ? "auto" : n == 0 ? "off" : std::to_string(n);
      taken.push_back("shape classes " + shape_classes_);
    }
    if (screen_factor_opt_->count() == 0 && info.screen_factor)
      screen_factor = &*info.screen_factor;  // checked below as the summary's would be
  }
  if (shape_classes_opt_->count() == 0 && last_session) {
    if (last->shape_classes && !last->shape_classes->empty() && last->shape_classes->size() <= 64) {
      shape_classes_ = std::to_string(last->shape_classes->size());
      taken.push_back("shape classes " + shape_classes_);
    } else if (!last->shape_classes) {
      shape_classes_ = "off";
    }
  }
  if (screen_factor_opt_->count() == 0 && screen_factor) {
    const double f = *screen_factor;
    if (f == 0 || (f >= 1 && f <= 1000)) {
      o_.screen_factor = f;
      std::ostringstream text;
      text << "screen factor " << f;
      taken.push_back(text.str());
    }
  }
  if (budget_opt_->count() == 0 && max_iter_opt_->count() == 0) {
    const model::Budget b =
        model::Budget::from_json(last && last->budget.is_object() ? last->budget : info.budget);
    if (!b.unlimited()) {  // else the default budget stands
      o_.budget = budget_.value(b);  // --token-budget still on top
      taken.push_back("budget " + b.text());
    }
  }
  if (o_.spec.empty()) taken.push_back("spec " + (std::filesystem::path(resume_) / "spec.json").string());
  std::string line;
  for (const auto& t : taken) line += (line.empty() ? "" : ", ") + t;
  if (!line.empty()) o_.resume_note = "resuming with the run's " + line;
}

int OptimizeCommand::run() {
  o_.budget = budget_.value();  // first: a bad --budget is the first error (--resume may take the run's below)
  if (o_.compile_threads > 0 && static_cast<unsigned>(o_.compile_threads) > max_compile_threads()) {
    std::cerr << "kopt: warning: --compile-threads " << o_.compile_threads << " is more than 4x the hardware threads; using "
              << max_compile_threads() << "\n";
    o_.compile_threads = static_cast<int>(max_compile_threads());
  }
  if (resume_.empty()) check_output_dir("--results-dir", results_dir_);
  if (!env_.cache_dir.empty()) check_output_dir("--cache-dir", env_.cache_dir);
  if (!resume_.empty()) apply_resume_defaults();
  o_.results_dir = results_dir_;
  o_.resume = resume_;
  if (no_specialize_) o_.specialize = false;
  o_.shape_classes = shape_classes_value(shape_classes_);
  o_.arch = env_.arch;
  o_.quiet = env_.quiet;
  o_.cache_dir = env_.cache_path();
  o_.compile_timeout_s = env_.compile_timeout_s;
  o_.compile_argv = env_.compile_argv();
  o_.workers = env_.worker_plan(worker_command_, devices_, launcher_, device_opt_->count() > 0);
  if (o_.spec.empty() && o_.description.empty() && o_.resume.empty())
    throw UsageError("kopt.cli.006",
                     "optimize: give --spec FILE (or --resume RUN, or --description TEXT for the agent proposer)");
  if (o_.spec.empty() && o_.resume.empty() && !o_.strategy.empty() && o_.strategy != "agent" &&
      o_.strategy != "hybrid")
    throw UsageError("kopt.cli.006", "optimize: --strategy " + o_.strategy + " needs --spec FILE");
  try {
    return driver::optimize(o_);
  } catch (const NoDeviceError& e) {
    if (!o_.arch.empty()) throw;
    // The driver's message says why there is no GPU; the CLI says how to go on.
    throw NoDeviceError(e.id(), std::string(e.what()).substr(e.id().size() + 3) +
                                    "; checking and timing need a GPU: give --arch sm_XY to compile the candidates anyway");
  }
}

}  // namespace

std::unique_ptr<Command> make_optimize_command() { return std::make_unique<OptimizeCommand>(); }

}  // namespace kopt::cli
