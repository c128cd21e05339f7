// The evaluation of one request: the trials of every case (inputs, the
// reference's outputs, checked launches, the determinism repeats), then the
// timed loops of the performance cases (the candidate's and the reference's)
// and the results they add up to.
#include <algorithm>
#include <memory>

#include "eval/worker_impl.h"

namespace kopt::eval::detail {

std::string Worker::inputs_key(const CaseSpec& c, int trial) {
  std::string k = c.name + "#" + std::to_string(trial);
  for (const auto* list : {&c.args, &c.constants})
    for (const ArgSpec& a : *list)
      if (a.is_buffer && a.role != spec::Role::output) k += "|" + a.name + "=" + std::to_string(a.count);
  return k;
}

std::string Worker::reference_key(const CaseSpec& c, int trial) {
  std::string k = inputs_key(c, trial) + "|out";
  for (const ArgSpec& a : c.args)
    if (a.is_buffer && a.role != spec::Role::input) k += "|" + a.name + "=" + std::to_string(a.count);
  return k;
}

const HostInputs& Worker::inputs_for(const EvalRequest& rq, const CaseSpec& c, int trial) {
  auto k = inputs_key(c, trial);
  auto it = inputs_.find(k);
  if (it != inputs_.end()) return it->second;
  struct HostBuffer {
    std::unique_ptr<uint8_t[]> bytes;  // uninitialised until generated
    size_t size = 0;
  };
  std::map<std::string, HostBuffer> host;
  auto allocate = [&host](const std::string& name, size_t size) -> uint8_t* {
    HostBuffer& b = host[name];
    b.size = size;
    b.bytes.reset(new uint8_t[std::max<size_t>(size, 1)]);
    return b.bytes.get();
  };
  std::vector<ArgSpec> made = c.args;  // inputs, inouts and constants are generated alike
  made.insert(made.end(), c.constants.begin(), c.constants.end());
  for (const auto& a : made) {
    if (!a.is_buffer || a.role == spec::Role::output || a.generator.kind == spec::Generator::Kind::view) continue;
    spec::Generator g = a.generator;
    const int t = g.fixed ? 1 : trial;  // fixed: the first trial's contents in every trial
    if (g.kind == spec::Generator::Kind::npy && t > 1) {
      // A file gives one set of inputs; fresh trials draw over the file's
      // range instead (integers as integers: indices stay indices).
      g = spec::npy_fresh_generator(g, a.dtype, a.count, c.name);
    }
    uint8_t* out = allocate(a.name, static_cast<size_t>(a.count) * spec::dtype_size(a.dtype));
    spec::generate_into(g, a.dtype, a.count, spec::derive_seed(rq.seed, c.name, a.name, t), out, c.name);
  }
  // Views last: the elements of a buffer made above, in this trial's contents.
  for (const auto& a : made) {
    if (!a.is_buffer || a.role == spec::Role::output || a.generator.kind != spec::Generator::Kind::view) continue;
    const ArgSpec* of = nullptr;
    for (const auto& b : made)
      if (b.name == a.generator.view_of && b.generator.kind != spec::Generator::Kind::view) of = &b;
    if (!of)
      throw EnvironmentError("kopt.worker.018", "case " + c.name + ": '" + a.name + "' is a view of '" +
                                                    a.generator.view_of + "', which no generator made");
    const Bytes v = spec::view_elements(a.generator, a.dtype, a.count, host.at(of->name).bytes.get(), of->dtype,
                                        of->count, a.name, c.name);
    std::copy(v.begin(), v.end(), allocate(a.name, v.size()));
  }
  HostInputs in;
  for (const auto& [name, b] : host) {
    DeviceMemory d(b.size);
    KOPT_CU_CHECK(driver_->cuMemcpyHtoDAsync(d.get(), b.bytes.get(), b.size, stream_), "uploading " + name);
    in.device.emplace(name, std::move(d));
  }
  // The host copies are freed when `host` goes: wait for the copies from them.
  sync_harness("uploading the inputs of case " + c.name);
  return inputs_.emplace(k, std::move(in)).first->second;
}

/// Computes (or recalls) the reference's outputs for a case and trial.
const ReferenceData& Worker::reference_for(const EvalRequest& rq, Kernel* ref_kernel, const CaseSpec& c,
                                           int trial, const HostInputs& in) {
  const KernelRef& ref_ref = ref_kernel ? ref_kernel->ref : rq.reference;
  auto k = reference_key(c, trial) + "@" + ref_ref.cubin_path + "|" + ref_ref.entry + (rq.reference_is_golden ? "|golden" : "");
  auto it = references_.find(k);
  if (it != references_.end()) return it->second;
  ReferenceData out;
  const cuda::Driver& drv = *driver_;
  std::vector<DeviceMemory> mem;
  std::vector<CUdeviceptr> ptrs(c.args.size(), 0);
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    if (!a.is_buffer) continue;
    const size_t bytes = static_cast<size_t>(a.count) * spec::dtype_size(a.dtype);
    mem.emplace_back(bytes);
    ptrs[i] = mem.back().get();
    if (a.role == spec::Role::output) {
      KOPT_CU_CHECK(drv.cuMemsetD8Async(ptrs[i], kPoisonByte, bytes, stream_), "reference output");
    } else {
      // From the trial's device-resident copy (inputs_for): a case whose
      // output count depends on a tuning parameter runs the reference again
      // for each new count, which copied a large input (the reduction's
      // 3.2 GB) from pageable host memory each time.
      KOPT_CU_CHECK(drv.cuMemcpyDtoDAsync(ptrs[i], in.device.at(a.name).get(), bytes, stream_), "reference input");
    }
  }
  if (rq.reference_is_golden) {
    for (const auto& [name, path] : c.golden_npy) {
      auto arr = spec::read_npy(path);
      // The file may have changed since the spec was loaded: it must still
      // hold the output's dtype and element count (validation reads it as such).
      for (const ArgSpec& a : c.args) {
        if (a.name != name) continue;
        if (arr.dtype != a.dtype || arr.count() != a.count) {
          throw SpecError("kopt.inputs.202", path + ": the golden output '" + name + "' of case " + c.name +
                                                 " holds " + std::to_string(arr.count()) + " elements of " +
                                                 spec::dtype_name(arr.dtype) + ", expected " +
                                                 std::to_string(a.count) + " of " + spec::dtype_name(a.dtype));
        }
      }
      out.outputs[name] = std::move(arr.data);
    }
  } else {
    LaunchDims d = c.reference_launch.value_or(c.launch);
    fill_constants(*ref_kernel, c, in, false);
    CUresult r = launch(*ref_kernel, c, d, ptrs, rq.gemm);
    if (r == CUDA_SUCCESS) {
      auto w = wait(std::max(rq.timing.launch_timeout_ms * 10, 60000.0));
      if (!w) throw EnvironmentError("kopt.worker.014", "the reference hung on case " + c.name);
      r = *w;
    }
    if (r != CUDA_SUCCESS)
      throw EnvironmentError("kopt.worker.015", "the reference failed on case " + c.name + ": " +
                                                    cuda::error_name(r));
    for (size_t i = 0; i < c.args.size(); ++i) {
      const ArgSpec& a = c.args[i];
      if (!a.is_buffer || a.role == spec::Role::input) continue;
      Bytes host(static_cast<size_t>(a.count) * spec::dtype_size(a.dtype));
      KOPT_CU_CHECK(drv.cuMemcpyDtoH(host.data(), ptrs[i], host.size()), "reference output");
      out.outputs[a.name] = std::move(host);
    }
  }
  // Per-element bounds for GEMM tolerances.
  for (const auto& [name, tol] : c.tolerance) {
    if (tol.kind != spec::Tolerance::Kind::gemm) continue;
    const int ia = arg_index(c, tol.a), ib = arg_index(c, tol.b);
    if (c.args[ia].dtype != spec::DType::f32 || c.args[ib].dtype != spec::DType::f32)
      throw EnvironmentError("kopt.worker.016", "the gemm tolerance needs float buffers " + tol.a + " and " + tol.b);
    int M = static_cast<int>(size_of(c, tol.m, "tolerance")), N = static_cast<int>(size_of(c, tol.n, "tolerance")),
        K = static_cast<int>(size_of(c, tol.k, "tolerance"));
    DeviceMemory s(static_cast<size_t>(M) * N * sizeof(double));
    CUdeviceptr pa = ptrs[ia], pb = ptrs[ib], ps = s.get();
    void* args[] = {&pa, &pb, &ps, &M, &N, &K};
    KOPT_CU_CHECK(drv.cuLaunchKernel(sumsq_fn_, static_cast<unsigned>((N + 15) / 16),
                                     static_cast<unsigned>((M + 15) / 16), 1, 16, 16, 1, 0, stream_, args, nullptr),
                  "kopt_gemm_sumsq");
    sync_harness("computing the GEMM error bound");
    std::vector<double> sumsq(static_cast<size_t>(M) * N);
    KOPT_CU_CHECK(drv.cuMemcpyDtoH(sumsq.data(), ps, sumsq.size() * sizeof(double)), "GEMM bound");
    const Bytes& ref = out.outputs.at(name);
    const spec::DType dt = c.args[arg_index(c, name)].dtype;
    for (size_t i = 0; i < sumsq.size(); ++i)
      sumsq[i] = gemm_allowed_error(tol.factor, K, sumsq[i], spec::element_as_double(ref.data(), dt, static_cast<int64_t>(i)));
    out.allowed[name] = std::move(sumsq);
    if (trial == 1) out.device_sumsq.emplace(name, std::move(s));  // the error statistics' scale
  }
  for (const auto& [name, bytes] : out.outputs) {
    DeviceMemory d(bytes.size());
    KOPT_CU_CHECK(drv.cuMemcpyHtoDAsync(d.get(), bytes.data(), bytes.size(), stream_), "reference output copy");
    out.device_outputs.emplace(name, std::move(d));
  }
  for (const auto& [name, bound] : out.allowed) {
    DeviceMemory d(bound.size() * sizeof(double));
    KOPT_CU_CHECK(drv.cuMemcpyHtoDAsync(d.get(), bound.data(), d.bytes(), stream_), "error bound copy");
    out.device_allowed.emplace(name, std::move(d));
  }
  // Nothing in flight on the reference's buffers when they are freed, and
  // the host copies above have been read before `out` moves.
  sync_harness("the reference's buffers");
  return references_.emplace(k, std::move(out)).first->second;
}

double Worker::ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

CaseResult& Worker::current_case_result(const CaseSpec& c) {
  for (auto& cr : result_.cases)
    if (cr.name == c.name) return cr;
  CaseResult cr;
  cr.name = c.name;
  cr.role = spec::case_role_name(c.role);
  result_.cases.push_back(cr);
  return result_.cases.back();
}

void Worker::ensure_events(size_t n) {
  while (events_.size() < n) {
    CUevent e;
    KOPT_CU_CHECK(driver_->cuEventCreate(&e, CU_EVENT_DEFAULT), "creating an event");
    events_.push_back(e);
  }
}

/// Times `warmup` + `iterations` launches; each measured launch has its own
/// event pair placed around the launch alone (poisoning, L2 flush and
/// restoring inouts happen before the start event). Returns milliseconds.
std::vector<double> Worker::time_launches(const EvalRequest& rq, Kernel& k, const CaseSpec& c, const LaunchDims& d,
                                          const std::vector<CUdeviceptr>& ptrs, BufferSet* guarded, int warmup,
                                          int iterations, bool reset_canaries) {
  const int total = warmup + iterations;
  ensure_events(2 * static_cast<size_t>(total));
  if (rq.timing.flush_l2 && !flush_) flush_ = std::make_unique<DeviceMemory>(static_cast<size_t>(info_.l2_bytes) * 2);
  // The watchdog checks every `batch` launches. Two batches are kept in
  // flight: batch b is enqueued before the end of batch b-1 is awaited, so
  // the GPU never idles while the host enqueues.
  const int batch = 10;
  auto await = [&](int last_launch, int launches) {
    auto w = wait_event(events_[2 * static_cast<size_t>(last_launch) + 1], rq.timing.launch_timeout_ms * launches);
    if (!w)
      throw CandidateFailure{Verdict::timeout, "case " + c.name + " (timing): launches did not finish in time",
                             "", true};
    if (*w != CUDA_SUCCESS) throw failure_from(*w, "case " + c.name + " (timing)");
    progress(rq.id, c.name, "time");
  };
  if (guarded && reset_canaries)
    for (const auto& b : guarded->buffers)
      if (b) b->reset_canaries(stream_);
  int awaited = -1;  // index of the last launch known to have finished
  // Up to two batches of launches are in flight while the host enqueues.
  behind_candidate(rq.timing.launch_timeout_ms * 2 * batch, "case " + c.name + " (timing)", [&] {
    for (int i = 0; i < total; ++i) {
      if (rq.timing.flush_l2)
        KOPT_CU_CHECK(
            driver_->cuMemsetD8Async(flush_->get(), static_cast<unsigned char>(i), flush_->bytes(), stream_),
            "flushing L2");
      if (guarded) {
        // Canaries are reset once before the loop and checked after it.
        prepare(c, *guarded, /*reset_canaries=*/false);
        poison_shared();
      }
      KOPT_CU_CHECK(driver_->cuEventRecord(events_[2 * i], stream_), "event");
      CUresult r = launch(k, c, d, ptrs, rq.gemm);
      if (r != CUDA_SUCCESS) throw failure_from(r, "case " + c.name + " (timing)");
      KOPT_CU_CHECK(driver_->cuEventRecord(events_[2 * i + 1], stream_), "event");
      if ((i + 1) % batch == 0 && i + 1 > batch) {
        // Batch [i+1-batch, i] is enqueued: wait for the one before it.
        await(i - batch, batch);
        awaited = i - batch;
      }
    }
  });
  await(total - 1, std::max(total - 1 - awaited, 1));
  std::vector<double> ms;
  for (int i = warmup; i < total; ++i) {
    float t = 0;
    KOPT_CU_CHECK(driver_->cuEventElapsedTime(&t, events_[2 * i], events_[2 * i + 1]), "event time");
    ms.push_back(t);
  }
  return ms;
}

void Worker::evaluate(const EvalRequest& rq) {
  const spec::Checks checks = rq.checks;
  Kernel main_cand = load_kernel(rq.candidate);
  std::optional<Kernel> main_ref;
  if (!rq.reference_is_golden) main_ref = load_kernel(rq.reference);
  // Kernels compiled for one case (CaseSpec::kernel, reference_kernel), by module.
  std::map<std::string, Kernel> own;
  auto kernel_of = [&](const std::optional<KernelRef>& per_case, Kernel& main) -> Kernel& {
    if (!per_case) return main;
    auto it = own.find(per_case->cubin_path);
    if (it == own.end()) it = own.emplace(per_case->cubin_path, load_kernel(*per_case)).first;
    return it->second;
  };
  auto cand_for = [&](const CaseSpec& c) -> Kernel& { return kernel_of(c.kernel, main_cand); };
  auto ref_for = [&](const CaseSpec& c) -> Kernel* {
    return main_ref ? &kernel_of(c.reference_kernel, *main_ref) : nullptr;
  };
  for (const auto& c : rq.cases) {
    check_params(cand_for(c), c);
    check_feasible(cand_for(c), c.launch, c.name);
    if (Kernel* ref = ref_for(c)) check_feasible(*ref, c.reference_launch.value_or(c.launch), c.name);
    current_case_result(c);
  }
  const int trials = rq.reference_is_golden ? 1 : checks.trials;
  size_t slots = 0;
  for (const auto& c : rq.cases) slots = std::max(slots, check_slots_for(c));
  reserve_check_slots(slots);
  // Buffers of the last trial of each performance case are kept for timing.
  const auto t_check = Clock::now();
  std::map<std::string, BufferSet*> timing_sets;
  std::vector<std::unique_ptr<BufferSet>> unpooled;  // sets that did not fit the pool
  for (const auto& c : rq.cases) {
    progress(rq.id, c.name, "check");
    BufferSet* set = nullptr;
    for (int trial = 1; trial <= trials; ++trial) {
      const HostInputs& in = inputs_for(rq, c, trial);
      const ReferenceData& rd = reference_for(rq, ref_for(c), c, trial, in);
      if (trial == 1 || trial == 3) {  // trial 2 reuses trial 1's buffers
        unpooled.emplace_back();
        set = acquire(c, trial == 1 ? 0 : 1, unpooled.back());
      }
      upload(c, *set, in);
      const int repeats = trial == 1 ? checks.repeats : 1;
      for (int rep = 0; rep < repeats; ++rep) {
        const std::string when = "trial " + std::to_string(trial) + (repeats > 1 ? ", run " + std::to_string(rep + 1) : "");
        // Repeats: run 1's outputs are kept on the device, and every later
        // run must match them bit for bit. (Scratch is sized before the
        // launch: growing it synchronises.)
        std::map<size_t, CUdeviceptr> keep, run1;
        if (repeats > 1)
          for (size_t i = 0; i < c.args.size(); ++i) {
            const ArgSpec& a = c.args[i];
            if (!a.is_buffer || a.role == spec::Role::input) continue;
            DeviceMemory& first = scratch(c.name + "#" + a.name, set->buffers[i]->bytes());
            (rep == 0 ? keep : run1)[i] = first.get();
          }
        // The accuracy statistics come from the first launch on the seeded inputs.
        checked_launch(rq, cand_for(c), c, *set, in, rd, when, run1, trial == 1 && rep == 0);
        for (const auto& [i, dst] : keep)
          KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(dst, set->buffers[i]->ptr(), set->buffers[i]->bytes(), stream_),
                        "keeping run 1");
      }
    }
    current_case_result(c).passed = true;
    if (rq.time && c.role == spec::CaseRole::performance) timing_sets[c.name] = set;
  }
  result_.check_ms = ms_since(t_check);
  if (!rq.time) return;
  const auto t_timing = Clock::now();

  std::vector<double> medians, ref_medians, weights;  // weights: each case's (spec::Case::weight)
  for (const auto& c : rq.cases) {
    if (c.role != spec::CaseRole::performance) continue;
    progress(rq.id, c.name, "time");
    BufferSet& set = *timing_sets.at(c.name);
    const HostInputs& in = inputs_for(rq, c, trials);
    const ReferenceData& rd = reference_for(rq, ref_for(c), c, trials, in);
    Kernel& cand = cand_for(c);
    fill_constants(cand, c, in, true);  // read-only to the kernel: once for every timed launch
    // Screening: one probe launch first; slower than the limit, and the
    // case is not timed further (its probe is its latency, marked screened).
    // Second stage: the warm-up and the first kScreenLaunches timed launches;
    // their median over its limit, and those launches are its latency.
    // The canaries are reset before the case's first series only, so that they
    // show an overrun of any of its launches, the probe's included.
    std::vector<double> samples;
    bool screened = false;
    const bool fresh = !c.screen_ms;
    if (c.screen_ms) {
      samples = time_launches(rq, cand, c, c.launch, pointers(set), &set, 0, 1);
      screened = samples.front() > *c.screen_ms;
    }
    if (!screened && c.screen_median_ms && rq.timing.iterations > kScreenLaunches) {
      samples = time_launches(rq, cand, c, c.launch, pointers(set), &set, rq.timing.warmup, kScreenLaunches, fresh);
      screened = latency_stats(samples).median_ms > *c.screen_median_ms;
      if (!screened) {
        const std::vector<double> rest = time_launches(rq, cand, c, c.launch, pointers(set), &set, 0,
                                                       rq.timing.iterations - kScreenLaunches, false);
        samples.insert(samples.end(), rest.begin(), rest.end());
      }
    } else if (!screened) {
      samples = time_launches(rq, cand, c, c.launch, pointers(set), &set, rq.timing.warmup, rq.timing.iterations,
                              fresh);
    }
    // The timed launches' output (the last one) must still be right.
    collect(rq, c, set, in, rd, "after timing");
    CaseResult& cr = current_case_result(c);
    cr.screened = screened;
    cr.screen_ms = c.screen_ms;
    cr.screen_median_ms = c.screen_median_ms;
    cr.latency = latency_stats(samples);
    cr.latency->raw_ms = samples;
    {
      int blocks = 0;
      const int64_t threads = c.launch.block[0] * c.launch.block[1] * c.launch.block[2];
      if (driver_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, cand.fn, static_cast<int>(threads),
                                                               static_cast<size_t>(c.launch.shared_bytes)) ==
          CUDA_SUCCESS)
        cr.blocks_per_sm = blocks;
    }
    medians.push_back(cr.latency->median_ms);
    weights.push_back(c.weight);
    if (Kernel* ref = ref_for(c); rq.time_reference && ref) {
      // The reference on plain buffers of its own, same inputs.
      std::vector<DeviceMemory> mem;
      std::vector<CUdeviceptr> ptrs(c.args.size(), 0);
      for (size_t i = 0; i < c.args.size(); ++i) {
        const ArgSpec& a = c.args[i];
        if (!a.is_buffer) continue;
        mem.emplace_back(static_cast<size_t>(a.count) * spec::dtype_size(a.dtype));
        ptrs[i] = mem.back().get();
        if (a.role != spec::Role::output)
          KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(ptrs[i], in.device.at(a.name).get(), mem.back().bytes(), stream_),
                        "upload");
      }
      fill_constants(*ref, c, in, false);
      auto rs = time_launches(rq, *ref, c, c.reference_launch.value_or(c.launch), ptrs, nullptr, rq.timing.warmup,
                              rq.timing.iterations);
      cr.reference_latency = latency_stats(rs);
      cr.reference_latency->raw_ms = rs;
      ref_medians.push_back(cr.reference_latency->median_ms);
    }
  }
  result_.timing_ms = ms_since(t_timing);
  if (!medians.empty()) result_.geomean_ms = geomean(medians, weights);
  if (!ref_medians.empty() && ref_medians.size() == medians.size()) {
    result_.reference_geomean_ms = geomean(ref_medians, weights);
    result_.speedup = *result_.reference_geomean_ms / *result_.geomean_ms;
  }
}

}  // namespace kopt::eval::detail
