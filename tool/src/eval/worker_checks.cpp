// The checks of a candidate's launch: one checked launch (checked_launch),
// the check slots, the buffer comparisons and the on-GPU output screen queued
// on the stream behind the launch, the one wait that covers them, and collect,
// which turns their results (and the host comparator's, where the screen does
// not decide) into the candidate's failure or its error statistics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "eval/worker_impl.h"

namespace kopt::eval::detail {

/// One checked launch: every check passes, or CandidateFailure is thrown.
/// `run1`: per argument index, the device copy of run 1's output to compare
/// with bit for bit (the determinism check of repeated runs); may be empty.
/// `error_stats`: also measure the accuracy of outputs with a GEMM tolerance
/// (CaseResult::rel_error_max / rel_error_rms).
void Worker::checked_launch(const EvalRequest& rq, Kernel& k, const CaseSpec& c, BufferSet& s,
                            const HostInputs& in, const ReferenceData& ref, const std::string& when,
                            const std::map<size_t, CUdeviceptr>& run1, bool error_stats) {
  prepare(c, s);
  fill_constants(k, c, in, true);
  poison_shared();
  CUresult r = launch(k, c, c.launch, pointers(s), rq.gemm);
  if (r != CUDA_SUCCESS) throw failure_from(r, "case " + c.name + " (" + when + ")");
  collect(rq, c, s, in, ref, when, run1, error_stats);
}

// ---- checks, batched: one wait per checked launch (the slot layout: see
// kSlotWords in worker_impl.h) ----

/// Makes room for `slots` check slots. Call only with nothing of a
/// candidate's in flight (it may synchronise).
void Worker::reserve_check_slots(size_t slots) {
  const size_t words = slots * kSlotWords;
  if (check_dev_ && check_words_ >= words) return;
  sync_harness("growing the check slots");
  if (check_host_) KOPT_CU_CHECK_NOTHROW(driver_->cuMemFreeHost(check_host_));
  check_host_ = check_init_ = nullptr;
  check_words_ = 0;
  check_dev_ = std::make_unique<DeviceMemory>(words * sizeof(unsigned long long));
  // One pinned block: the results read back, then the initial values
  // (pinned too, so that uploading them never waits for the stream).
  void* host = nullptr;
  KOPT_CU_CHECK(driver_->cuMemAllocHost(&host, 2 * words * sizeof(unsigned long long)),
                "pinned host memory for check results");
  check_host_ = static_cast<unsigned long long*>(host);
  check_init_ = check_host_ + words;
  for (size_t i = 0; i < words; ++i) check_init_[i] = i % kSlotWords == kSlotWords - 1 ? ~0ull : 0;
  check_words_ = words;
}

size_t Worker::next_slot(size_t* used) {
  if (*used * kSlotWords >= check_words_)
    throw std::logic_error("worker: more checks than reserved slots");  // check_slots_for is wrong
  return (*used)++;
}
CUdeviceptr Worker::slot_ptr(size_t slot) const {
  return check_dev_->get() + slot * kSlotWords * sizeof(unsigned long long);
}

/// Queues the comparison of two device buffers of `bytes` bytes each
/// (elements of `elem` bytes); difference_at() reads it after the wait.
Worker::PendingDiff Worker::enqueue_difference(CUdeviceptr a, CUdeviceptr b, size_t bytes, size_t elem,
                                                size_t* used) {
  PendingDiff p;
  p.slot = next_slot(used);
  p.elem = elem;
  // Words of 4 bytes for 4- and 8-byte elements (the reported element is
  // then exact); bytes otherwise.
  p.words = elem % 4 == 0 && bytes % 4 == 0 && a % 4 == 0 && b % 4 == 0;
  if (bytes == 0) return p;  // the slot keeps "no difference"
  long long n = static_cast<long long>(p.words ? bytes / 4 : bytes);
  CUdeviceptr first = slot_ptr(p.slot) + (kSlotWords - 1) * sizeof(unsigned long long);
  void* args[] = {&a, &b, &n, &first};
  const auto blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, info_.sm_count * 8LL));
  KOPT_CU_CHECK(driver_->cuLaunchKernel(p.words ? diff32_fn_ : diff8_fn_, blocks, 1, 1, 256, 1, 1, 0, stream_, args,
                                        nullptr),
                "buffer comparison");
  return p;
}
/// Index of the first differing element, or -1 when the buffers were equal.
int64_t Worker::difference_at(const PendingDiff& p) const {
  const unsigned long long got = check_host_[p.slot * kSlotWords + kSlotWords - 1];
  if (got == ~0ull) return -1;
  return static_cast<int64_t>((p.words ? got * 4 : got) / p.elem);
}

/// Queues the on-GPU screen of an output (kopt_screen_<dtype>); nullopt when
/// the screen does not apply (the half types, partial sums, a rel_l2 bound
/// over 10^9 elements or more, or KOPT_HOST_COMPARE=1 in the environment): the
/// host comparator then decides.
std::optional<Worker::PendingScreen> Worker::enqueue_screen(CUdeviceptr out, const ReferenceData& ref,
                                                            const ArgSpec& a, const spec::Tolerance& tol,
                                                            size_t* used) {
  const auto fn = screen_fns_.find(a.dtype);
  if (host_compare_only_ || fn == screen_fns_.end()) return std::nullopt;
  CUdeviceptr allowed = 0;
  double atol = tol.atol, rtol = tol.rtol;
  if (tol.kind == spec::Tolerance::Kind::gemm) {
    allowed = ref.device_allowed.at(a.name).get();
  } else if (tol.kind == spec::Tolerance::Kind::sum) {
    if (tol.partials_value != 1) return std::nullopt;  // partial sums: the host adds them up
    // sum_allowed_error is (atol + C |ref|) + the smallest normal: the screen
    // computes the first sum with the same operations and leaves out the last
    // term, a bound never above the host's (a rounded addition of a
    // nonnegative term cannot decrease), so it accepts nothing the host rejects.
    rtol = sum_relative_bound(tol, a.dtype);
  }
  // Sizes as the host path would check them; any mismatch goes to the host,
  // which reports it.
  const size_t want_bytes = static_cast<size_t>(a.count) * spec::dtype_size(a.dtype);
  if (ref.device_outputs.at(a.name).bytes() != want_bytes) return std::nullopt;
  if (allowed && ref.device_allowed.at(a.name).bytes() != static_cast<size_t>(a.count) * sizeof(double))
    return std::nullopt;
  // compare_allclose's second test; past 10^9 elements the margin of screen_outcome may not cover
  // the sums' rounding: the host then decides.
  const bool l2_test = tol.rel_l2 && tol.kind == spec::Tolerance::Kind::allclose;
  if (l2_test && a.count >= 1'000'000'000) return std::nullopt;
  PendingScreen p;
  p.slot = next_slot(used);
  CUdeviceptr l2 = 0;
  if (l2_test) {
    p.l2_slot = next_slot(used);
    p.rel_l2 = *tol.rel_l2;
    l2 = slot_ptr(*p.l2_slot);
  }
  CUdeviceptr want = ref.device_outputs.at(a.name).get();
  CUdeviceptr stats = slot_ptr(p.slot);
  long long n = a.count;
  void* args[] = {&out, &want, &allowed, &atol, &rtol, &n, &stats, &l2};
  const auto blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, info_.sm_count * 8LL));
  KOPT_CU_CHECK(driver_->cuLaunchKernel(fn->second, blocks, 1, 1, 256, 1, 1, 0, stream_, args, nullptr),
                "output screen");
  return p;
}
/// The screen's outcome when every element passed (and, with rel_l2, the
/// relative L2 error is below the bound by a margin of 1e-6 of it, more than
/// the rounding of either side's sums of nonnegative terms can move it for
/// fewer than 10^9 elements); nullopt otherwise: the host comparator then
/// decides, and words a failure.
std::optional<CompareOutcome> Worker::screen_outcome(const PendingScreen& p) const {
  const unsigned long long* got = check_host_ + p.slot * kSlotWords;
  if (got[0] != 0) return std::nullopt;
  if (p.l2_slot) {
    double num = 0, den = 0;
    std::memcpy(&num, &check_host_[*p.l2_slot * kSlotWords], sizeof(double));
    std::memcpy(&den, &check_host_[*p.l2_slot * kSlotWords + 1], sizeof(double));
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (!(rel <= p.rel_l2 * (1 - 1e-6))) return std::nullopt;
  }
  CompareOutcome o;
  std::memcpy(&o.max_abs_error, &got[1], sizeof(double));
  std::memcpy(&o.max_ratio, &got[2], sizeof(double));
  return o;
}

/// Queues kopt_gemm_error_stats on a float32 output with a GEMM tolerance,
/// where the reference kept the products' scale (trial 1); nullopt otherwise.
std::optional<size_t> Worker::enqueue_error_stats(CUdeviceptr out, const ReferenceData& ref, const ArgSpec& a,
                                                  size_t* used) {
  const auto sumsq = ref.device_sumsq.find(a.name);
  if (a.dtype != spec::DType::f32 || sumsq == ref.device_sumsq.end()) return std::nullopt;
  if (ref.device_outputs.at(a.name).bytes() != static_cast<size_t>(a.count) * sizeof(float) ||
      sumsq->second.bytes() != static_cast<size_t>(a.count) * sizeof(double))
    return std::nullopt;
  const size_t slot = next_slot(used);
  CUdeviceptr want = ref.device_outputs.at(a.name).get(), scale = sumsq->second.get(), stats = slot_ptr(slot);
  long long n = a.count;
  void* args[] = {&out, &want, &scale, &n, &stats};
  const auto blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, info_.sm_count * 8LL));
  KOPT_CU_CHECK(driver_->cuLaunchKernel(error_stats_fn_, blocks, 1, 1, 256, 1, 1, 0, stream_, args, nullptr),
                "GEMM error statistics");
  return slot;
}
/// The statistics of an error-stats slot into `cr` (the larger max and RMS where a case has
/// several outputs with a GEMM tolerance).
void Worker::read_error_stats(size_t slot, CaseResult& cr) const {
  const unsigned long long* got = check_host_ + slot * kSlotWords;
  if (got[0] == 0) return;
  double max_e = 0, sum_e2 = 0;
  std::memcpy(&max_e, &got[1], sizeof(double));
  std::memcpy(&sum_e2, &got[2], sizeof(double));
  const double rms = std::sqrt(sum_e2 / static_cast<double>(got[0]));
  cr.rel_error_max = std::max(cr.rel_error_max.value_or(0.0), max_e);
  cr.rel_error_rms = std::max(cr.rel_error_rms.value_or(0.0), rms);
}

/// Waits for the stream behind a candidate's launch; its hang or its
/// asynchronous error is the candidate's failure.
void Worker::await_candidate(double timeout_ms, const std::string& where) {
  auto w = wait(timeout_ms);
  if (!w)
    throw CandidateFailure{Verdict::timeout,
                           where + ": the launch and its checks did not finish within " +
                               std::to_string(static_cast<int64_t>(timeout_ms)) + " ms",
                           "", true};
  if (*w != CUDA_SUCCESS) throw failure_from(*w, where);
}

/// Checks the outputs of the launch last queued on the stream: canaries,
/// inputs unchanged (bitwise), outputs within tolerance (the on-GPU screen,
/// else the host comparator), and outputs equal to run 1's where `run1`
/// names them. Queues every check, then waits once (the launch timeout);
/// failures are reported in that order, buffer by buffer.
void Worker::collect(const EvalRequest& rq, const CaseSpec& c, BufferSet& s, const HostInputs& in,
                     const ReferenceData& ref, const std::string& when, const std::map<size_t, CUdeviceptr>& run1,
                     bool error_stats) {
  const std::string where = "case " + c.name + " (" + when + ")";
  struct BufferChecks {
    std::vector<PendingDiff> canaries;
    std::optional<PendingDiff> input;        // inputs: unchanged?
    std::optional<PendingScreen> screen;     // outputs and inouts: the on-GPU screen
    std::optional<PendingDiff> determinism;  // equal to run 1's output?
    std::optional<size_t> error_stats;       // GEMM tolerance: accuracy statistics slot
  };
  std::vector<BufferChecks> checks(c.args.size());
  behind_candidate(rq.timing.launch_timeout_ms, where, [&] {
    size_t used = 0;
    KOPT_CU_CHECK(driver_->cuMemcpyHtoDAsync(check_dev_->get(), check_init_,
                                             check_words_ * sizeof(unsigned long long), stream_),
                  "check slots");
    // The poison the canaries are compared with, renewed in case a wild
    // write of the candidate landed there.
    KOPT_CU_CHECK(driver_->cuMemsetD8Async(poison_ref_->get(), kPoisonByte, poison_ref_->bytes(), stream_), "poison");
    for (size_t i = 0; i < c.args.size(); ++i) {
      const ArgSpec& a = c.args[i];
      if (!a.is_buffer) continue;
      GuardedBuffer& b = *s.buffers[i];
      for (const auto& [ptr, bytes] : b.canaries())
        checks[i].canaries.push_back(enqueue_difference(ptr, poison_ref_->get(), bytes, 1, &used));
      if (a.role == spec::Role::input) {
        checks[i].input =
            enqueue_difference(b.ptr(), in.device.at(a.name).get(), b.bytes(), spec::dtype_size(a.dtype), &used);
        continue;
      }
      checks[i].screen = enqueue_screen(b.ptr(), ref, a, tolerance_of(c, a), &used);
      if (error_stats && tolerance_of(c, a).kind == spec::Tolerance::Kind::gemm)
        checks[i].error_stats = enqueue_error_stats(b.ptr(), ref, a, &used);
      auto r1 = run1.find(i);
      if (r1 != run1.end())
        checks[i].determinism =
            enqueue_difference(r1->second, b.ptr(), b.bytes(), spec::dtype_size(a.dtype), &used);
    }
    if (used)
      KOPT_CU_CHECK(driver_->cuMemcpyDtoHAsync(check_host_, check_dev_->get(),
                                               used * kSlotWords * sizeof(unsigned long long), stream_),
                    "reading check results");
  });
  await_candidate(rq.timing.launch_timeout_ms, where);

  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    if (!a.is_buffer) continue;
    for (const PendingDiff& p : checks[i].canaries)
      if (difference_at(p) >= 0)
        throw CandidateFailure{Verdict::out_of_bounds,
                               where + ": the kernel wrote outside buffer " + a.name + " (canary bytes changed)",
                               "", false};
    if (checks[i].input) {
      const int64_t d = difference_at(*checks[i].input);
      if (d >= 0)
        throw CandidateFailure{Verdict::wrong_result,
                               where + ": the kernel modified its input " + a.name + " (first at element " +
                                   std::to_string(d) + ")",
                               "", false};
    }
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    if (!a.is_buffer || a.role == spec::Role::input) continue;
    GuardedBuffer& b = *s.buffers[i];
    const spec::Tolerance tol = tolerance_of(c, a);
    std::optional<CompareOutcome> o;
    if (checks[i].screen) o = screen_outcome(*checks[i].screen);
    if (!o) {
      const Bytes& want = ref.outputs.at(a.name);
      Bytes got(b.bytes());
      KOPT_CU_CHECK(driver_->cuMemcpyDtoH(got.data(), b.ptr(), got.size()), "reading " + a.name);
      if (got.size() != want.size())
        throw CandidateFailure{Verdict::wrong_result, where + ": reference output " + a.name + " has " +
                                                          std::to_string(want.size()) + " bytes, expected " +
                                                          std::to_string(got.size()), "", false};
      if (tol.kind == spec::Tolerance::Kind::gemm)
        o = compare_bounded(a.name, got.data(), want.data(), a.dtype, a.count, ref.allowed.at(a.name));
      else if (tol.kind == spec::Tolerance::Kind::sum)
        o = compare_sum(a.name, got.data(), want.data(), a.dtype, a.count, tol);
      else
        o = compare_allclose(a.name, got.data(), want.data(), a.dtype, a.count, tol);
    }
    CaseResult& cr = current_case_result(c);
    if (checks[i].error_stats) read_error_stats(*checks[i].error_stats, cr);
    cr.max_abs_error = std::max(cr.max_abs_error, o->max_abs_error);
    if (o->max_ratio >= cr.max_error_ratio) {
      cr.max_error_ratio = o->max_ratio;
      cr.worst_output = a.name;
    }
    if (!o->passed) throw CandidateFailure{Verdict::wrong_result, where + ": " + o->reason, "", false};
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!checks[i].determinism) continue;
    const int64_t d = difference_at(*checks[i].determinism);
    if (d >= 0)
      throw CandidateFailure{Verdict::nondeterministic,
                             where + ": differs from run 1 at " + c.args[i].name + "[" + std::to_string(d) +
                                 "] on the same inputs (a race?)",
                             "", false};
  }
}

spec::Tolerance Worker::tolerance_of(const CaseSpec& c, const ArgSpec& a) {
  auto it = c.tolerance.find(a.name);
  return it != c.tolerance.end() ? it->second : spec::Tolerance{};
}

}  // namespace kopt::eval::detail
