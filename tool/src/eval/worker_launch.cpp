// Running a kernel: verdicts from driver errors (failure_from), cuBLAS loaded
// at run time, waiting on the stream with a deadline, loading a candidate's
// or the reference's module, the feasibility checks before a launch, packing
// arguments and the launch itself.
#include <dlfcn.h>

#include "eval/kernel_params.h"
#include "eval/worker_impl.h"
#include "util/fs.h"

namespace kopt::eval::detail {

/// Maps a driver error from a candidate's launch or execution to a verdict.
CandidateFailure failure_from(CUresult r, const std::string& where) {
  CandidateFailure f;
  f.error_name = cuda::error_name(r);
  f.sticky = cuda::is_sticky(r);
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      f.verdict = Verdict::out_of_bounds;
      f.detail = where + ": the kernel touched unmapped memory (" + f.error_name +
                 "): an access past a buffer hit the guard page, or a wild pointer";
      break;
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      f.verdict = Verdict::timeout;
      f.detail = where + ": " + f.error_name;
      break;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
      f.verdict = Verdict::launch_error;
      f.detail = where + ": the launch was refused (" + f.error_name + ")";
      break;
    default:
      f.verdict = Verdict::runtime_error;
      f.detail = where + ": the kernel failed (" + f.error_name + ")";
  }
  return f;
}

// ---------------------------------------------------------------------------
// cuBLAS, loaded at run time (the class is in worker_impl.h).
// ---------------------------------------------------------------------------
Cublas::Cublas() {
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
    lib_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib_) break;
  }
  if (!lib_) throw EnvironmentError("kopt.cublas.001", "cuBLAS (libcublas.so) is not installed");
  create_ = reinterpret_cast<decltype(create_)>(::dlsym(lib_, "cublasCreate_v2"));
  destroy_ = reinterpret_cast<decltype(destroy_)>(::dlsym(lib_, "cublasDestroy_v2"));
  set_stream_ = reinterpret_cast<decltype(set_stream_)>(::dlsym(lib_, "cublasSetStream_v2"));
  set_math_ = reinterpret_cast<decltype(set_math_)>(::dlsym(lib_, "cublasSetMathMode"));
  sgemm_ = reinterpret_cast<decltype(sgemm_)>(::dlsym(lib_, "cublasSgemm_v2"));
  if (!create_ || !destroy_ || !set_stream_ || !set_math_ || !sgemm_)
    throw EnvironmentError("kopt.cublas.002", "cuBLAS lacks an entry point the tool needs");
  if (create_(&handle_) != CUBLAS_STATUS_SUCCESS)
    throw EnvironmentError("kopt.cublas.003", "cublasCreate failed");
  // FP32 with no TF32 or other reduced-precision shortcuts.
  set_math_(handle_, CUBLAS_PEDANTIC_MATH);
}
Cublas::~Cublas() {
  if (handle_) destroy_(handle_);
}
/// Row-major C[M,N] = A[M,K] * B[K,N]: computed as column-major C^T = B^T A^T.
CUresult Cublas::sgemm(CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m, int n, int k) {
  set_stream_(handle_, reinterpret_cast<cudaStream_t>(s));
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t st = sgemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                             reinterpret_cast<const float*>(b), n,
                             reinterpret_cast<const float*>(a), k, &beta,
                             reinterpret_cast<float*>(c), n);
  return st == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

// ---- helpers ----
/// Waits for the worker's stream.
std::optional<CUresult> Worker::wait(double timeout_ms) {
  return poll([&] { return driver_->cuStreamQuery(stream_); }, timeout_ms);
}
/// Waits for an event.
std::optional<CUresult> Worker::wait_event(CUevent e, double timeout_ms) {
  return poll([&] { return driver_->cuEventQuery(e); }, timeout_ms);
}

void Worker::sync_harness(const std::string& what) {
  auto r = wait(600000);
  if (!r) throw EnvironmentError("kopt.worker.011", "harness operation hung: " + what);
  if (*r != CUDA_SUCCESS) cuda::throw_error(*r, "cuStreamQuery", what);
}

Kernel Worker::load_kernel(const KernelRef& ref) {
  Kernel k;
  k.ref = ref;
  if (ref.kind == KernelRef::Kind::cublas_sgemm) {
    if (!cublas_) cublas_ = std::make_unique<Cublas>();
    return k;
  }
  CUmodule mod = nullptr;
  auto it = modules_loaded_.find(ref.cubin_path);
  if (it != modules_loaded_.end()) {
    mod = it->second;
  } else {
    std::string image;
    try {
      image = fs::read_file(ref.cubin_path, "compiled kernel", fs::kBlobMaxBytes);
    } catch (const std::exception& e) {
      throw CandidateFailure{Verdict::launch_error, e.what(), "", false};
    }
    CUresult r = driver_->cuModuleLoadData(&mod, image.data());
    if (r != CUDA_SUCCESS) {
      auto f = failure_from(r, "loading the module of " + ref.label);
      f.verdict = Verdict::launch_error;
      throw f;
    }
    modules_loaded_[ref.cubin_path] = mod;
  }
  k.module = mod;
  CUresult r = driver_->cuModuleGetFunction(&k.fn, mod, ref.entry.c_str());
  if (r != CUDA_SUCCESS)
    throw CandidateFailure{Verdict::compile_error,
                           "entry point '" + ref.entry + "' not found in the compiled " + ref.label,
                           cuda::error_name(r), false};
  KOPT_CU_CHECK(driver_->cuFuncGetAttribute(&k.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k.fn),
                "max threads of " + ref.label);
  KOPT_CU_CHECK(driver_->cuFuncGetAttribute(&k.static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.fn),
                "static shared memory of " + ref.label);
  return k;
}

void Worker::check_params(const Kernel& k, const CaseSpec& c) {
  if (k.ref.kind != KernelRef::Kind::cubin || !driver_->cuFuncGetParamInfo) return;
  std::vector<size_t> sizes;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    const CUresult r = driver_->cuFuncGetParamInfo(k.fn, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r != CUDA_SUCCESS) return;             // not answered: nothing to check
    sizes.push_back(size);
    if (i > 4096) return;  // not a plausible parameter list
  }
  std::vector<ExpectedParam> expected;
  for (const ArgSpec& a : c.args)
    expected.push_back({a.name, a.is_buffer ? std::string("pointer to ") + spec::dtype_name(a.dtype)
                                            : std::string(spec::dtype_name(a.dtype)),
                        a.is_buffer ? size_t{8} : spec::dtype_size(a.dtype)});
  if (std::optional<std::string> why = param_mismatch(expected, sizes))
    throw CandidateFailure{Verdict::compile_error, k.ref.label + ": " + *why + " (cuFuncGetParamInfo)",
                           kParamMismatch, false};
}

/// Throws CandidateFailure{infeasible} when the launch cannot run here, and
/// sets the dynamic shared memory opt-in when it needs one.
void Worker::check_feasible(Kernel& k, const LaunchDims& d, const std::string& case_name) {
  if (k.ref.kind != KernelRef::Kind::cubin) return;
  auto fail = [&](const std::string& why) {
    throw CandidateFailure{Verdict::infeasible, "case " + case_name + ": " + why, "", false};
  };
  static const char* axis[] = {"x", "y", "z"};
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (d.block[i] < 1 || d.block[i] > info_.max_block[i])
      fail("block." + std::string(axis[i]) + " = " + std::to_string(d.block[i]) +
           " is outside 1.." + std::to_string(info_.max_block[i]));
    if (d.grid[i] < 1 || d.grid[i] > info_.max_grid[i])
      fail("grid." + std::string(axis[i]) + " = " + std::to_string(d.grid[i]) + " is outside 1.." +
           std::to_string(info_.max_grid[i]));
    threads *= d.block[i];
  }
  if (threads > k.max_threads)
    fail(std::to_string(threads) + " threads per block, but the compiled kernel allows at most " +
         std::to_string(k.max_threads) + " (its register use limits it)");
  if (d.shared_bytes < 0) fail("negative dynamic shared memory");
  const int64_t total = d.shared_bytes + k.static_smem;
  if (total > info_.shared_per_block_optin_bytes)
    fail(std::to_string(d.shared_bytes) + " bytes of dynamic + " + std::to_string(k.static_smem) +
         " bytes of static shared memory exceed the device's " +
         std::to_string(info_.shared_per_block_optin_bytes) + " bytes per block");
  if (d.shared_bytes > k.configured_dynamic_smem && total > info_.shared_per_block_bytes) {
    KOPT_CU_CHECK(driver_->cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              static_cast<int>(d.shared_bytes)),
                  "shared memory opt-in of " + k.ref.label);
    k.configured_dynamic_smem = static_cast<int>(d.shared_bytes);
  }
}

Worker::ArgPack Worker::pack(const CaseSpec& c, const std::vector<CUdeviceptr>& ptrs) {
  ArgPack p;
  p.storage.resize(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    void* slot = &p.storage[i];
    if (a.is_buffer) {
      std::memcpy(slot, &ptrs[i], sizeof(CUdeviceptr));
    } else {
      switch (a.dtype) {
        case spec::DType::f32: { float v = static_cast<float>(a.float_value); std::memcpy(slot, &v, 4); break; }
        case spec::DType::f64: { double v = a.float_value; std::memcpy(slot, &v, 8); break; }
        case spec::DType::i8: case spec::DType::u8: { uint8_t v = static_cast<uint8_t>(a.int_value); std::memcpy(slot, &v, 1); break; }
        case spec::DType::i32: case spec::DType::u32: { int32_t v = static_cast<int32_t>(a.int_value); std::memcpy(slot, &v, 4); break; }
        case spec::DType::i64: case spec::DType::u64: { int64_t v = a.int_value; std::memcpy(slot, &v, 8); break; }
        case spec::DType::f16: case spec::DType::bf16: {
          spec::Generator g;
          g.kind = spec::Generator::Kind::constant;
          g.value = a.float_value;
          auto bytes = spec::generate(g, a.dtype, 1, 0);
          std::memcpy(slot, bytes.data(), 2);
          break;
        }
      }
    }
    p.ptrs.push_back(slot);
  }
  return p;
}

int64_t Worker::size_of(const CaseSpec& c, const std::string& name, const char* what) {
  auto it = c.sizes.find(name);
  if (it == c.sizes.end())
    throw EnvironmentError("kopt.worker.012", std::string(what) + " names size '" + name +
                                                  "' that case " + c.name + " does not have");
  return it->second;
}
int Worker::arg_index(const CaseSpec& c, const std::string& name) {
  for (size_t i = 0; i < c.args.size(); ++i)
    if (c.args[i].name == name) return static_cast<int>(i);
  throw EnvironmentError("kopt.worker.013", "no buffer named '" + name + "' in case " + c.name);
}

void Worker::fill_constants(const Kernel& k, const CaseSpec& c, const HostInputs& in, bool candidate) {
  if (k.ref.kind != KernelRef::Kind::cubin || c.constants.empty()) return;
  for (const ArgSpec& a : c.constants) {
    const auto lowered = k.ref.symbols.find(a.name);
    // A reference kernel compiled without a constant it does not declare
    // (eval::Evaluator::reference_for) does not read it.
    if (!candidate && lowered == k.ref.symbols.end()) continue;
    const std::string symbol = lowered != k.ref.symbols.end() ? lowered->second : a.name;
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
    const CUresult r = driver_->cuModuleGetGlobal(&ptr, &bytes, k.module, symbol.c_str());
    const size_t need = static_cast<size_t>(a.count) * spec::dtype_size(a.dtype);
    std::string why;
    if (r != CUDA_SUCCESS)
      why = "the compiled " + k.ref.label + " has no __constant__ symbol '" + a.name + "' (" + cuda::error_name(r) + ")";
    else if (bytes < need)
      why = "the constant '" + a.name + "' needs " + std::to_string(need) + " bytes for case " + c.name +
            ", but the __constant__ symbol of " + k.ref.label + " holds " + std::to_string(bytes);
    if (!why.empty()) {
      if (!candidate) throw EnvironmentError("kopt.worker.017", why);
      throw CandidateFailure{Verdict::compile_error, why, "KOPT_CONSTANT_MISMATCH", false};
    }
    const DeviceMemory& data = in.device.at(a.name);
    KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(ptr, data.get(), need, stream_), "filling __constant__ " + a.name);
    if (bytes > need)
      KOPT_CU_CHECK(driver_->cuMemsetD8Async(ptr + need, kPoisonByte, bytes - need, stream_),
                    "poisoning the rest of __constant__ " + a.name);
  }
}

/// Enqueues one launch of `k` on `ptrs` (no synchronisation).
CUresult Worker::launch(Kernel& k, const CaseSpec& c, const LaunchDims& d, const std::vector<CUdeviceptr>& ptrs,
                        const spec::Reference::Gemm& gemm) {
  if (k.ref.kind == KernelRef::Kind::cublas_sgemm) {
    return cublas_->sgemm(stream_, ptrs[arg_index(c, gemm.a)], ptrs[arg_index(c, gemm.b)],
                          ptrs[arg_index(c, gemm.c)], static_cast<int>(size_of(c, gemm.m, "gemm")),
                          static_cast<int>(size_of(c, gemm.n, "gemm")),
                          static_cast<int>(size_of(c, gemm.k, "gemm")));
  }
  ArgPack p = pack(c, ptrs);
  return driver_->cuLaunchKernel(k.fn, static_cast<unsigned>(d.grid[0]), static_cast<unsigned>(d.grid[1]),
                                 static_cast<unsigned>(d.grid[2]), static_cast<unsigned>(d.block[0]),
                                 static_cast<unsigned>(d.block[1]), static_cast<unsigned>(d.block[2]),
                                 static_cast<unsigned>(d.shared_bytes), stream_, p.ptrs.data(), nullptr);
}

}  // namespace kopt::eval::detail
