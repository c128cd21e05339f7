// The parent side of evaluation: resolves a spec and a candidate into an
// EvalRequest, compiles with NVRTC (cached), and runs it through a Supervisor.
// This process never initialises CUDA itself.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/device.h"
#include "cuda/nvrtc.h"
#include "eval/protocol.h"
#include "eval/supervisor.h"
#include "spec/candidate.h"
#include "spec/kernel_file.h"
#include "spec/spec.h"
#include "util/lock.h"

namespace kopt::eval {

using spec::Candidate;


/// Reading a .cu file into a Candidate (one per variant of a generated file)
/// is the kernel-file format's: see spec/kernel_file.h.
using spec::candidate_from_file;
using spec::candidates_from_file;

struct EvaluatorOptions {
  std::vector<std::string> worker_argv;  // e.g. {"/path/kopt", "worker", "--device", "0"}
  std::vector<std::string> worker_env;   // "NAME=VALUE" added to the worker's environment
  /// The CUDA ordinal the worker is started with, recorded in each result the
  /// worker produces (Result::device; -1: not recorded).
  int device = -1;
  std::filesystem::path cache_dir;       // NVRTC cache and cubins
  std::string arch;                      // empty: the device's
  /// How compiles run (cuda::CompilerOptions): `compile_argv` starts a
  /// compiler process (`kopt compile-worker`) per compile, which is stopped
  /// after `compile_timeout_s` (0: no limit); empty: NVRTC in this process.
  std::vector<std::string> compile_argv;
  double compile_timeout_s = 0;
  bool time = true;
  bool time_reference = true;
  std::vector<std::string> only_cases;   // empty: all cases
  std::string worker_log;                // workers' stderr (empty: inherit)
  std::function<void(const nlohmann::json&)> on_progress;
  /// Where a wait for the device lock is announced (default: stderr).
  std::function<void(const std::string&)> on_lock_wait;
  /// A whole evaluation's time limit (SupervisorOptions::total_timeout; 0: none).
  std::chrono::milliseconds total_timeout{0};
  /// SupervisorOptions::shutdown_grace.
  std::chrono::milliseconds shutdown_grace{1000};
};

/// Measuring takes the device's timing lock (util::DeviceLock, keyed by the
/// UUID the worker reports, else the ordinal): the first start() or cuBLAS
/// baseline that goes to the GPU waits until no other kopt process measures
/// on it, and the lock is then held until the Evaluator is destroyed.
/// Compiling, and a worker's hello, take no lock (compile-only runs never do).
class Evaluator {
 public:
  Evaluator(const spec::Spec& spec, EvaluatorOptions options);

  /// Starts a worker and returns the device; throws NoDeviceError (exit 77).
  /// Also checks that the device lock folder can be used (kopt.lock.002).
  const model::DeviceInfo& device();
  /// The device's lock key (util::device_lock_key); empty before device().
  const std::string& device_lock_key() const { return device_key_; }
  /// The UUID the worker reported for its device; empty when none (or before device()).
  const std::string& device_uuid() const { return device_uuid_; }
  /// options.device: the ordinal recorded in results (-1: none).
  int device_ordinal() const { return opt_.device; }
  /// How many CUDA devices the worker's machine has, as its hello said
  /// (nullopt before device(), or when the worker did not say).
  std::optional<int> device_count() const { return device_count_; }
  /// The architecture candidates are compiled for (options.arch or the device's).
  std::string arch();

  /// Compiles only (works with no GPU when options.arch is set). Thread-safe
  /// once arch() has been called (the optimizer compiles on a thread pool).
  /// Every kernel gets the spec's defines (-D NAME=VALUE) besides its tuning
  /// parameters; when the defines differ per case (spec::Spec::has_case_defines)
  /// the candidate is compiled once for each distinct set of values among the
  /// cases it runs on, and the result is the first that failed (its log
  /// headed by the case it was compiled for) or else the first case's, with
  /// compile_ms summed. The __constant__ symbols of the signature's constants
  /// must exist and be large enough for every case (else ok=false,
  /// error_name KOPT_CONSTANT_MISMATCH).
  cuda::CompileResult compile(const Candidate& c);

  /// compile(c) in independent parts, for a caller that runs them on several
  /// threads: one part per distinct set of case defines (1 when the defines
  /// do not differ per case), compile_part(c, i) compiles part i (any thread,
  /// any order), and join_parts(c, parts) gives what compile(c) gives. The
  /// difference: compile(c) stops at the first part that fails, the parts
  /// are all compiled. Thread-safe like compile().
  size_t compile_parts(const Candidate& c) const;
  cuda::CompileResult compile_part(const Candidate& c, size_t i);
  cuda::CompileResult join_parts(const Candidate& c, std::vector<cuda::CompileResult> parts) const;

  /// Checks and times an already compiled candidate on the GPU.
  /// `time_reference` overrides the option for this call.
  /// Same as start() then finish().
  Result run(const Candidate& c, const cuda::CompileResult& compiled,
             std::optional<bool> time_reference = std::nullopt);

  /// The first half of run(): sends the candidate to the worker and returns
  /// while the GPU checks and times it, so that the caller can do host work
  /// meanwhile (Supervisor::begin_evaluate; the watchdog clocks start here).
  /// A candidate that failed to compile needs no worker: its compile_error
  /// Result is kept for finish(). finish() must come next: a second start()
  /// first throws std::logic_error. Otherwise throws as run() does (spec
  /// errors, NoDeviceError, a worker that cannot be started), and nothing is
  /// then started.
  void start(const Candidate& c, const cuda::CompileResult& compiled,
             std::optional<bool> time_reference = std::nullopt);

  /// The second half of run(): waits for the result of the candidate start()
  /// sent and returns it as run() does (every failure of the candidate is a
  /// verdict; compile_log, compile_ms and compile_cache_hit filled in).
  /// Afterwards nothing is started, however it ended. Throws std::logic_error
  /// without a start() before it.
  Result finish();

  /// True between start() and finish().
  bool started() const { return started_.has_value(); }

  /// Compiles, checks and times one candidate. Bad candidates are verdicts;
  /// throws only for spec errors (kopt.spec.*), a missing device (NoDeviceError)
  /// or a broken environment.
  Result evaluate(const Candidate& c, std::optional<bool> time_reference = std::nullopt);

  /// Checks and times cuBLAS (FP32, no TF32) as if it were a candidate, for a
  /// spec with a cuBLAS baseline or reference. Throws SpecError(kopt.eval.604)
  /// when the spec is not GEMM-shaped.
  Result evaluate_cublas_baseline();

  /// The request that evaluate() sends for a compiled candidate (for tests).
  EvalRequest build_request(const Candidate& c, const cuda::CompileResult& compiled,
                            const std::string& candidate_cubin);

  cuda::Compiler& compiler() { return *compiler_; }
  Supervisor& supervisor() { return *supervisor_; }

 private:
  Candidate reference_candidate() const;
  /// Result::device and device_uuid of a result this evaluator's worker produced.
  void mark_device(Result& r) const;
  /// Waits for and takes the device lock (once; see the class comment).
  void lock_device();
  spec::Launch launch_for(const Candidate& c) const;
  /// The cases a request for `c` holds (options.only_cases, c.performance_cases).
  std::vector<const spec::Case*> cases_for(const Candidate& c) const;
  /// The compile request of `c` for a case with defines `case_defines`.
  cuda::CompileRequest request_for(const Candidate& c, const std::map<std::string, int64_t>& case_defines);
  /// Compiles `c` for one set of case defines and checks its parameters and
  /// constants against the signature for `cases`.
  cuda::CompileResult compile_for(const Candidate& c, const std::vector<const spec::Case*>& cases);
  /// The cases of `c` grouped by their defines, in case order (one group
  /// holding every case when the defines do not differ per case).
  using CaseGroup = std::pair<std::map<std::string, int64_t>, std::vector<const spec::Case*>>;
  std::vector<CaseGroup> case_groups(const Candidate& c) const;
  /// A compiled kernel as the worker loads it.
  KernelRef kernel_ref(const cuda::CompileResult& r, const std::string& cubin, const std::string& entry,
                       const std::string& label) const;
  /// The reference kernel compiled for case `c` (cached per set of defines).
  const KernelRef& reference_for(const spec::Case& c);

  spec::Spec spec_;
  EvaluatorOptions opt_;
  std::unique_ptr<cuda::Compiler> compiler_;
  std::unique_ptr<Supervisor> supervisor_;
  std::optional<model::DeviceInfo> device_;
  std::string device_key_, device_uuid_;
  std::optional<int> device_count_;
  util::DeviceLock device_lock_;
  std::string arch_;  // resolved once by arch(); read by compile() on any thread
  std::map<std::map<std::string, int64_t>, KernelRef> reference_kernels_;  // by the case's defines
  int64_t next_id_ = 1;
  /// What start() leaves for finish(): the compile outcome to report, and the
  /// Result itself when no worker was needed (a compile error).
  struct Started {
    std::string compile_log;
    double compile_ms = 0;
    bool compile_cache_hit = false;
    std::optional<Result> done;
  };
  std::optional<Started> started_;
};

using spec::resolve_launch;

}  // namespace kopt::eval
