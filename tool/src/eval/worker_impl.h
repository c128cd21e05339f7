// Internal to the GPU worker (`kopt worker`; eval/worker.h is the public
// header): the types its files share and the Worker class, whose members are
// defined across them:
//   worker.cpp           the request loop, set-up (context, built-in kernels),
//                        handle_hello / handle_evaluate, run_worker
//   worker_kernels.cpp   the built-in kernels' CUDA source
//   worker_launch.cpp    driver errors to verdicts, cuBLAS, waits with a
//                        deadline, loading kernels, feasibility, launches
//   worker_buffers.cpp   guarded buffers and canaries, the buffer pool,
//                        uploading inputs, poisoning, scratch
//   worker_checks.cpp    the checks queued behind a launch and their verdicts
//   worker_evaluate.cpp  inputs and reference outputs per trial, the check
//                        trials, the timed loops, the results
// Nothing here is used outside these files.
#pragma once

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device.h"
#include "cuda/driver.h"
#include "eval/protocol.h"
#include "eval/validate.h"
#include "spec/inputs.h"
#include "util/error.h"
#include "util/json.h"

namespace kopt::eval::detail {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

/// The CUDA C++ source of the built-in kernels (worker_kernels.cpp).
extern const char* const kBuiltinSource;

// ---------------------------------------------------------------------------
// Failure of the candidate: carries the verdict out of deep call chains.
// ---------------------------------------------------------------------------
struct CandidateFailure {
  Verdict verdict;
  std::string detail;
  std::string error_name;
  bool sticky = false;  // the context is unusable afterwards
};

/// Maps a driver error from a candidate's launch or execution to a verdict.
CandidateFailure failure_from(CUresult r, const std::string& where);

// ---------------------------------------------------------------------------
// RAII owners.
// ---------------------------------------------------------------------------

/// Device memory from cuMemAlloc (the reference's buffers, scratch).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes) : bytes_(bytes) {
    KOPT_CU_CHECK(cuda::driver().cuMemAlloc(&ptr_, std::max<size_t>(bytes, 1)),
                  "allocating " + std::to_string(bytes) + " bytes");
  }
  ~DeviceMemory() {
    if (ptr_) KOPT_CU_CHECK_NOTHROW(cuda::driver().cuMemFree(ptr_));
  }
  DeviceMemory(DeviceMemory&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// A buffer placed so that it ends against an unmapped page.
///
///   [unmapped granule][head canary ... | buffer (256-B aligned) | tail canary][unmapped granule]
///
/// The tail canary is the 0..255 bytes between the buffer's end and the end of
/// the mapping; any access further on faults (CUDA_ERROR_ILLEGAL_ADDRESS).
/// Plain cuMemAlloc would silently absorb small overruns.
class GuardedBuffer {
 public:
  static constexpr size_t kAlign = 256;       // what cuMemAlloc guarantees
  static constexpr size_t kHeadCheck = 4096;  // head canary bytes checked

  GuardedBuffer(size_t bytes, int device, size_t granularity);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  /// Writes poison over both canaries (before each launch).
  void reset_canaries(CUstream s) const;
  /// The canary regions, tail first: {address, bytes}; empty ones omitted.
  std::vector<std::pair<CUdeviceptr, size_t>> canaries() const;

 private:
  size_t bytes_ = 0, mapped_ = 0, reserved_ = 0, tail_ = 0, head_ = 0;
  CUdeviceptr va_ = 0, map_start_ = 0, ptr_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
};

// ---------------------------------------------------------------------------
// cuBLAS, loaded at run time (oracle and baseline for GEMM-shaped workloads).
// ---------------------------------------------------------------------------
class Cublas {
 public:
  Cublas();
  ~Cublas();
  /// Row-major C[M,N] = A[M,K] * B[K,N]: computed as column-major C^T = B^T A^T.
  CUresult sgemm(CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m, int n, int k);

 private:
  void* lib_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  decltype(&::cublasCreate_v2) create_ = nullptr;
  decltype(&::cublasDestroy_v2) destroy_ = nullptr;
  decltype(&::cublasSetStream_v2) set_stream_ = nullptr;
  decltype(&::cublasSetMathMode) set_math_ = nullptr;
  decltype(&::cublasSgemm_v2) sgemm_ = nullptr;
};

// ---------------------------------------------------------------------------
// The worker.
// ---------------------------------------------------------------------------

/// The inputs of one case and trial. They are generated on the host into
/// memory nobody has touched (no zero fill first: a one-thread pass over the
/// buffer, about half of generating a float buffer on two threads as
/// measured in docs/spec-format.md#reproducibility), copied to
/// the device once, and then freed: every later use reads the device copy.
struct HostInputs {
  /// Device copies of the inputs and inouts, by name, made once per worker:
  /// every trial's upload is a device-to-device copy from here, and "the
  /// kernel modified its input" is a device-side comparison against it.
  std::map<std::string, DeviceMemory> device;
};

struct ReferenceData {
  std::map<std::string, Bytes> outputs;                // outputs and inouts, by name
  std::map<std::string, std::vector<double>> allowed;  // gemm tolerance: per-element bound
  // Device copies of the two above, for the on-GPU screen.
  std::map<std::string, DeviceMemory> device_outputs;
  std::map<std::string, DeviceMemory> device_allowed;
  // gemm tolerance, trial 1 only: sum_k (a_ik * b_kj)^2 per element, on the device (the scale of
  // the error statistics, CaseResult::rel_error_max / rel_error_rms).
  std::map<std::string, DeviceMemory> device_sumsq;
};

/// A loaded kernel (candidate or reference).
struct Kernel {
  KernelRef ref;
  CUmodule module = nullptr;  // its __constant__ symbols live there
  CUfunction fn = nullptr;
  int max_threads = 0;  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (registers limit it)
  int static_smem = 0;
  int configured_dynamic_smem = 0;
};

/// One set of device buffers for one case (the candidate's), by argument index.
struct BufferSet {
  std::vector<std::unique_ptr<GuardedBuffer>> buffers;  // null for scalars
  std::vector<DeviceMemory> pristine;                   // inout: copy of the input contents
  std::string args_signature;                           // buffer names and sizes it was made for
  std::vector<std::string> arg_names;                   // by argument index, scalars included
  size_t bytes = 0;                                     // device memory held
};

class Worker {
 public:
  explicit Worker(int device, int out_fd) : device_ordinal_(device), out_fd_(out_fd) {}
  ~Worker();

  int loop();

 private:
  // ---- protocol (worker.cpp) ----
  void send(const nlohmann::json& j);
  void progress(int64_t id, const std::string& c, const std::string& phase);

  // ---- set-up (worker.cpp) ----
  void ensure_context();
  void handle_hello();

  // ---- waiting (wait, wait_event, sync_harness: worker_launch.cpp) ----
  /// Polls `query` (cuStreamQuery or cuEventQuery) until it stops answering
  /// CUDA_ERROR_NOT_READY or `timeout_ms` passes. Returns CUDA_SUCCESS, the
  /// kernel's error, or nullopt on timeout. Spins (yielding the core) for the
  /// first 2 ms, then sleeps 10 to 100 us between queries: most waits are for
  /// a launch of a millisecond or two, and every microsecond slept past its
  /// end is GPU time lost between a candidate's launches.
  template <typename Query>
  static std::optional<CUresult> poll(Query query, double timeout_ms) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::microseconds(static_cast<int64_t>(timeout_ms * 1000));
    const auto spin_until = start + std::chrono::milliseconds(2);
    auto sleep = std::chrono::microseconds(10);
    while (true) {
      CUresult r = query();
      if (r != CUDA_ERROR_NOT_READY) return r;
      const auto now = Clock::now();
      if (now > deadline) return std::nullopt;
      if (now < spin_until) {
        std::this_thread::yield();
        continue;
      }
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(100));
    }
  }
  std::optional<CUresult> wait(double timeout_ms);
  std::optional<CUresult> wait_event(CUevent e, double timeout_ms);
  void sync_harness(const std::string& what);

  // ---- kernels and launches (worker_launch.cpp) ----
  Kernel load_kernel(const KernelRef& ref);
  /// Throws CandidateFailure{compile_error} when cuFuncGetParamInfo (if the
  /// driver has it) gives parameters that do not match the case's arguments.
  void check_params(const Kernel& k, const CaseSpec& c);
  void check_feasible(Kernel& k, const LaunchDims& d, const std::string& case_name);

  /// Packs kernel arguments for the given buffer pointers.
  struct ArgPack {
    std::vector<uint64_t> storage;  // 8 bytes per argument, aligned
    std::vector<void*> ptrs;
  };
  static ArgPack pack(const CaseSpec& c, const std::vector<CUdeviceptr>& ptrs);
  int64_t size_of(const CaseSpec& c, const std::string& name, const char* what);
  /// Copies the case's constants (this trial's contents, `in`) into `k`'s
  /// __constant__ symbols, ordered on the stream before what is enqueued
  /// next; bytes of a symbol past the constant's are poisoned. A symbol
  /// missing or too small is the candidate's failure (compile_error), or an
  /// EnvironmentError for the reference (`candidate` false).
  void fill_constants(const Kernel& k, const CaseSpec& c, const HostInputs& in, bool candidate);
  int arg_index(const CaseSpec& c, const std::string& name);
  CUresult launch(Kernel& k, const CaseSpec& c, const LaunchDims& d, const std::vector<CUdeviceptr>& ptrs,
                  const spec::Reference::Gemm& gemm);

  // ---- buffers (worker_buffers.cpp) ----
  void poison_shared();
  BufferSet* acquire(const CaseSpec& c, int slot, std::unique_ptr<BufferSet>& owner);
  static std::string signature_of(const CaseSpec& c);
  /// `reuse`: buffers by argument index, taken from the set the case had
  /// before (same name and byte size), used instead of new mappings.
  std::unique_ptr<BufferSet> allocate(const CaseSpec& c,
                                      std::map<size_t, std::unique_ptr<GuardedBuffer>> reuse = {});
  std::vector<CUdeviceptr> pointers(const BufferSet& s);
  void upload(const CaseSpec& c, BufferSet& s, const HostInputs& in);
  void prepare(const CaseSpec& c, BufferSet& s, bool reset_canaries = true);
  DeviceMemory& scratch(const std::string& key, size_t bytes);

  // ---- checks (worker_checks.cpp) ----
  void checked_launch(const EvalRequest& rq, Kernel& k, const CaseSpec& c, BufferSet& s, const HostInputs& in,
                      const ReferenceData& ref, const std::string& when,
                      const std::map<size_t, CUdeviceptr>& run1 = {}, bool error_stats = false);

  // ---- checks, batched: one wait per checked launch (worker_checks.cpp) ----
  //
  // Every check of a launch is queued on the stream behind it as a small
  // kernel writing into its own slot of check_dev_ (4 x u64, initialised to
  // {0, 0, 0, ~0}: the output screen's layout (kopt_screen_<dtype>; its rel_l2
  // sums take a second slot); a buffer comparison's first
  // differing index lands in word 3). One asynchronous copy brings all slots
  // to pinned host memory, and one wait covers the launch and its checks.
  // (A synchronous round trip per check, a dozen per launch, cost an SGEMM
  // candidate 56 ms of checking on an H200; batched, 28 ms.)
  static constexpr size_t kSlotWords = 4;

  struct PendingDiff {
    size_t slot = 0;
    bool words = false;  // compared as 4-byte words (else bytes)
    size_t elem = 1;     // element size, for the reported index
  };

  void reserve_check_slots(size_t slots);

  /// Slots a collect() of case `c` may use: canaries (2), an input comparison
  /// or an output screen, a determinism comparison and error statistics per
  /// buffer.
  /// Per argument at most: two canaries, an input comparison or a screen
  /// with its rel_l2 sums, error statistics and a determinism comparison.
  static size_t check_slots_for(const CaseSpec& c) { return c.args.size() * 6 + 1; }
  size_t next_slot(size_t* used);
  CUdeviceptr slot_ptr(size_t slot) const;
  PendingDiff enqueue_difference(CUdeviceptr a, CUdeviceptr b, size_t bytes, size_t elem, size_t* used);
  int64_t difference_at(const PendingDiff& p) const;
  /// An on-GPU screen in flight: its stats slot and, with a rel_l2
  /// tolerance, the slot of the two sums and the bound.
  struct PendingScreen {
    size_t slot = 0;
    std::optional<size_t> l2_slot;
    double rel_l2 = 0;
  };
  std::optional<PendingScreen> enqueue_screen(CUdeviceptr out, const ReferenceData& ref, const ArgSpec& a,
                                              const spec::Tolerance& tol, size_t* used);
  std::optional<CompareOutcome> screen_outcome(const PendingScreen& p) const;
  std::optional<size_t> enqueue_error_stats(CUdeviceptr out, const ReferenceData& ref, const ArgSpec& a,
                                            size_t* used);
  void read_error_stats(size_t slot, CaseResult& cr) const;
  void await_candidate(double timeout_ms, const std::string& where);

  /// Runs `enqueue`, driver calls queued behind a candidate's launch. Any of
  /// them can return the candidate's own asynchronous error (a trap, an
  /// illegal address) before the wait sees it; the stream then reports it
  /// too, and the failure is the candidate's. A failure the stream does not
  /// explain is the harness's and propagates.
  template <typename Enqueue>
  void behind_candidate(double timeout_ms, const std::string& where, Enqueue&& enqueue) {
    try {
      enqueue();
    } catch (const EnvironmentError&) {
      await_candidate(timeout_ms, where);
      throw;
    }
  }
  void collect(const EvalRequest& rq, const CaseSpec& c, BufferSet& s, const HostInputs& in,
               const ReferenceData& ref, const std::string& when, const std::map<size_t, CUdeviceptr>& run1 = {},
               bool error_stats = false);
  static spec::Tolerance tolerance_of(const CaseSpec& c, const ArgSpec& a);

  // ---- an evaluation (worker_evaluate.cpp; handle_evaluate: worker.cpp) ----
  /// The inputs of a case and trial: its name, the trial, and the counts of
  /// the buffers made (a count may depend on the candidate's tuning
  /// parameters, so candidates of one worker can need other inputs).
  static std::string inputs_key(const CaseSpec& c, int trial);
  /// The reference's outputs: the inputs' key and every output's count.
  static std::string reference_key(const CaseSpec& c, int trial);
  const HostInputs& inputs_for(const EvalRequest& rq, const CaseSpec& c, int trial);
  const ReferenceData& reference_for(const EvalRequest& rq, Kernel* ref_kernel, const CaseSpec& c,
                                     int trial, const HostInputs& in);
  static double ms_since(Clock::time_point t);
  CaseResult& current_case_result(const CaseSpec& c);
  void ensure_events(size_t n);
  /// `warmup` unmeasured then `iterations` measured launches (ms each).
  /// `reset_canaries` false: a continuation of a series timed just before
  /// (screening's second stage), whose canaries must still show an overrun
  /// of any launch of the series.
  std::vector<double> time_launches(const EvalRequest& rq, Kernel& k, const CaseSpec& c, const LaunchDims& d,
                                    const std::vector<CUdeviceptr>& ptrs, BufferSet* guarded, int warmup,
                                    int iterations, bool reset_canaries = true);
  bool handle_evaluate(const nlohmann::json& j);
  void evaluate(const EvalRequest& rq);

  int device_ordinal_;
  int out_fd_;
  const cuda::Driver* driver_ = nullptr;
  model::DeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  size_t granularity_ = 2 << 20;
  CUmodule builtin_module_ = nullptr;
  CUfunction poison_fn_ = nullptr, sumsq_fn_ = nullptr;
  int poison_smem_bytes_ = 0;
  std::map<std::string, CUmodule> modules_loaded_;
  std::vector<CUevent> events_;
  std::unique_ptr<DeviceMemory> flush_;
  std::unique_ptr<Cublas> cublas_;
  std::map<std::string, HostInputs> inputs_;
  std::map<std::string, ReferenceData> references_;
  CUfunction diff32_fn_ = nullptr, diff8_fn_ = nullptr;
  std::map<spec::DType, CUfunction> screen_fns_;  // kopt_screen_<dtype>; none for the half types
  CUfunction error_stats_fn_ = nullptr;
  std::unique_ptr<DeviceMemory> check_dev_;    // check slots (reserve_check_slots)
  unsigned long long* check_host_ = nullptr;   // their pinned host mirror
  unsigned long long* check_init_ = nullptr;   // their initial values (same pinned block)
  size_t check_words_ = 0;                     // u64 words of check_dev_
  std::unique_ptr<DeviceMemory> poison_ref_;   // kHeadCheck bytes of poison
  std::map<std::string, std::unique_ptr<BufferSet>> pool_;  // case#slot -> buffers kept between candidates
  size_t pool_bytes_ = 0, pool_limit_bytes_ = 0;
  std::map<std::string, DeviceMemory> scratch_;  // case#output -> run 1's outputs (determinism check)
  const bool host_compare_only_ = [] {
    const char* v = std::getenv("KOPT_HOST_COMPARE");
    return v && std::string(v) == "1";
  }();
  Result result_;
};

}  // namespace kopt::eval::detail
