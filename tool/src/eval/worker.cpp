#include "eval/worker.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device.h"
#include "cuda/driver.h"
#include "cuda/nvrtc.h"
#include "eval/protocol.h"
#include "eval/validate.h"
#include "spec/inputs.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace kopt::eval {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

// ---------------------------------------------------------------------------
// Built-in kernels, compiled with NVRTC for the device at start-up.
// ---------------------------------------------------------------------------
constexpr const char* kBuiltinSource = R"(
// Fills this block's dynamic shared memory with 0xFF bytes (NaN as float), so a
// candidate that reads shared memory it never wrote sees NaN, not a lucky value
// left behind by an earlier kernel.
extern "C" __global__ void kopt_poison_shared(unsigned int words) {
  extern __shared__ unsigned int kopt_smem[];
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) kopt_smem[i] = 0xFFFFFFFFu;
  __syncthreads();
  // Read back so the stores cannot be elided.
  if (threadIdx.x == 0 && kopt_smem[words - 1] != 0xFFFFFFFFu) __trap();
}

// S[i*N + j] = sum_k (A[i*K + k] * B[k*N + j])^2 in double (row-major),
// the scale of the K-aware GEMM error bound. 16x16 shared-memory tiles.
extern "C" __global__ void kopt_gemm_sumsq(const float* A, const float* B, double* S,
                                           int M, int N, int K) {
  __shared__ double sa[16][16];
  __shared__ double sb[16][16];
  const int row = blockIdx.y * 16 + threadIdx.y;
  const int col = blockIdx.x * 16 + threadIdx.x;
  double acc = 0.0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    double a = (row < M && ka < K) ? (double)A[(long long)row * K + ka] : 0.0;
    double b = (kb < K && col < N) ? (double)B[(long long)kb * N + col] : 0.0;
    sa[threadIdx.y][threadIdx.x] = a * a;
    sb[threadIdx.y][threadIdx.x] = b * b;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += sa[threadIdx.y][k] * sb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) S[(long long)row * N + col] = acc;
}

// Screens a float32 output against the reference on the GPU with the rules of
// the host comparator (validate.cpp, compare_impl), in double precision with
// explicitly rounded operations (no FMA contraction), so that it accepts
// exactly what the host accepts. The host comparator still runs whenever this
// reports a failure (for the message) or cannot apply (other dtypes, rel_l2).
// stats: [0] failing elements, [1] max |out - ref| over finite pairs and
// [2] max |out - ref| / allowed (double bits; both are >= 0, so unsigned
// integer order is double order), [3] first failing index (~0 when none).
// allowed == nullptr: the allclose bound atol + rtol * |ref|.
__device__ __forceinline__ double kopt_inf() { return __longlong_as_double(0x7ff0000000000000ll); }
extern "C" __global__ void kopt_screen_f32(const float* out, const float* ref, const double* allowed,
                                           double atol, double rtol, long long n,
                                           unsigned long long* stats) {
  double max_err = 0.0, max_ratio = 0.0;
  unsigned long long fails = 0, first = ~0ull;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double x = (double)out[i], r = (double)ref[i];
    bool bad;
    if (isnan(r)) {
      bad = !isnan(x);
    } else if (isinf(r)) {
      bad = x != r;
    } else if (!isfinite(x)) {
      bad = true;
    } else {
      const double err = fabs(__dadd_rn(x, -r));
      const double lim = allowed ? allowed[i] : __dadd_rn(atol, __dmul_rn(rtol, fabs(r)));
      const double ratio = lim > 0.0 ? __ddiv_rn(err, lim) : (err > 0.0 ? kopt_inf() : 0.0);
      max_err = fmax(max_err, err);
      max_ratio = fmax(max_ratio, ratio);
      bad = err > lim;
    }
    if (bad) {
      ++fails;
      if ((unsigned long long)i < first) first = (unsigned long long)i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    max_err = fmax(max_err, __shfl_xor_sync(0xffffffffu, max_err, o));
    max_ratio = fmax(max_ratio, __shfl_xor_sync(0xffffffffu, max_ratio, o));
    fails += __shfl_xor_sync(0xffffffffu, fails, o);
    const unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o);
    first = f < first ? f : first;
  }
  if ((threadIdx.x & 31) == 0) {
    if (fails) {
      atomicAdd(&stats[0], fails);
      atomicMin(&stats[3], first);
    }
    atomicMax(&stats[1], (unsigned long long)__double_as_longlong(max_err));
    atomicMax(&stats[2], (unsigned long long)__double_as_longlong(max_ratio));
  }
}

// First index at which two buffers differ (words of 4 bytes, or bytes), by
// atomicMin into *first (initialised to ~0 by the caller).
template <typename T>
__device__ __forceinline__ void kopt_first_diff(const T* a, const T* b, long long n, unsigned long long* first) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    if (a[i] != b[i]) {
      atomicMin(first, (unsigned long long)i);
      return;
    }
}
extern "C" __global__ void kopt_first_diff_u32(const unsigned int* a, const unsigned int* b, long long n,
                                               unsigned long long* first) {
  kopt_first_diff(a, b, n, first);
}
extern "C" __global__ void kopt_first_diff_u8(const unsigned char* a, const unsigned char* b, long long n,
                                              unsigned long long* first) {
  kopt_first_diff(a, b, n, first);
}
)";

}  // namespace

const char* builtin_kernels_source() { return kBuiltinSource; }

namespace {

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

  GuardedBuffer(size_t bytes, int device, size_t granularity) : bytes_(bytes) {
    const cuda::Driver& drv = cuda::driver();
    const size_t body = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    mapped_ = (body + granularity - 1) / granularity * granularity;
    reserved_ = mapped_ + 2 * granularity;
    KOPT_CU_CHECK(drv.cuMemAddressReserve(&va_, reserved_, granularity, 0, 0),
                  "reserving " + std::to_string(reserved_) + " bytes of address space");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    CUresult r = drv.cuMemCreate(&handle_, mapped_, &prop, 0);
    if (r != CUDA_SUCCESS) {
      drv.cuMemAddressFree(va_, reserved_);
      cuda::throw_error(r, "cuMemCreate", std::to_string(mapped_) + " bytes");
    }
    map_start_ = va_ + granularity;
    r = drv.cuMemMap(map_start_, mapped_, 0, handle_, 0);
    if (r == CUDA_SUCCESS) {
      CUmemAccessDesc access{};
      access.location = prop.location;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      r = drv.cuMemSetAccess(map_start_, mapped_, &access, 1);
      if (r != CUDA_SUCCESS) drv.cuMemUnmap(map_start_, mapped_);
    }
    if (r != CUDA_SUCCESS) {
      drv.cuMemRelease(handle_);
      drv.cuMemAddressFree(va_, reserved_);
      cuda::throw_error(r, "cuMemMap/cuMemSetAccess", std::to_string(mapped_) + " bytes");
    }
    ptr_ = map_start_ + mapped_ - body;
    tail_ = body - bytes_;
    head_ = ptr_ - map_start_;
  }
  ~GuardedBuffer() {
    const cuda::Driver& drv = cuda::driver();
    KOPT_CU_CHECK_NOTHROW(drv.cuMemUnmap(map_start_, mapped_));
    KOPT_CU_CHECK_NOTHROW(drv.cuMemRelease(handle_));
    KOPT_CU_CHECK_NOTHROW(drv.cuMemAddressFree(va_, reserved_));
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  /// Writes poison over both canaries (before each launch).
  void reset_canaries(CUstream s) const {
    const cuda::Driver& drv = cuda::driver();
    if (tail_) KOPT_CU_CHECK(drv.cuMemsetD8Async(ptr_ + bytes_, kPoisonByte, tail_, s), "canary");
    const size_t h = std::min(head_, kHeadCheck);
    if (h) KOPT_CU_CHECK(drv.cuMemsetD8Async(ptr_ - h, kPoisonByte, h, s), "canary");
  }
  /// The canary regions, tail first: {address, bytes}; empty ones omitted.
  /// Checked on the GPU against poison (Worker::collect).
  std::vector<std::pair<CUdeviceptr, size_t>> canaries() const {
    std::vector<std::pair<CUdeviceptr, size_t>> r;
    if (tail_) r.emplace_back(ptr_ + bytes_, tail_);
    const size_t h = std::min(head_, kHeadCheck);
    if (h) r.emplace_back(ptr_ - h, h);
    return r;
  }

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
  Cublas() {
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
  ~Cublas() {
    if (handle_) destroy_(handle_);
  }
  /// Row-major C[M,N] = A[M,K] * B[K,N]: computed as column-major C^T = B^T A^T.
  CUresult sgemm(CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m, int n, int k) {
    set_stream_(handle_, reinterpret_cast<cudaStream_t>(s));
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t st = sgemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                               reinterpret_cast<const float*>(b), n,
                               reinterpret_cast<const float*>(a), k, &beta,
                               reinterpret_cast<float*>(c), n);
    return st == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
  }

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

struct HostInputs {
  std::map<std::string, Bytes> data;  // inputs and inouts, by name
  /// Device copies of `data`, made once per worker: every trial's upload is a
  /// device-to-device copy from here, and "the kernel modified its input" is
  /// a device-side comparison against it.
  std::map<std::string, DeviceMemory> device;
};

struct ReferenceData {
  std::map<std::string, Bytes> outputs;                // outputs and inouts, by name
  std::map<std::string, std::vector<double>> allowed;  // gemm tolerance: per-element bound
  // Device copies of the two above, for the on-GPU screen.
  std::map<std::string, DeviceMemory> device_outputs;
  std::map<std::string, DeviceMemory> device_allowed;
};

/// A loaded kernel (candidate or reference).
struct Kernel {
  KernelRef ref;
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
  size_t bytes = 0;                                     // device memory held
};

class Worker {
 public:
  explicit Worker(int device, int out_fd) : device_ordinal_(device), out_fd_(out_fd) {}
  ~Worker() {
    const cuda::Driver* drv = driver_;
    if (!drv) return;
    for (auto& e : events_) KOPT_CU_CHECK_NOTHROW(drv->cuEventDestroy(e));
    if (check_host_) KOPT_CU_CHECK_NOTHROW(drv->cuMemFreeHost(check_host_));
    for (auto& [path, mod] : modules_loaded_) KOPT_CU_CHECK_NOTHROW(drv->cuModuleUnload(mod));
    if (builtin_module_) KOPT_CU_CHECK_NOTHROW(drv->cuModuleUnload(builtin_module_));
    if (stream_) KOPT_CU_CHECK_NOTHROW(drv->cuStreamDestroy(stream_));
    if (ctx_) KOPT_CU_CHECK_NOTHROW(drv->cuDevicePrimaryCtxRelease(device_));
  }

  int loop() {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      nlohmann::json req;
      try {
        req = nlohmann::json::parse(line);
      } catch (const std::exception& e) {
        send({{"reply", "error"}, {"error", std::string("bad request: ") + e.what()}});
        continue;
      }
      const std::string op = req.value("op", "");
      if (op == "shutdown") return 0;
      if (op == "hello") {
        handle_hello();
      } else if (op == "evaluate") {
        if (!handle_evaluate(req)) return 0;  // context unusable: exit, a fresh worker follows
      } else {
        send({{"reply", "error"}, {"error", "unknown op '" + op + "'"}});
      }
    }
    return 0;
  }

 private:
  // ---- protocol ----
  void send(const nlohmann::json& j) {
    std::string s = dump_json(j) + "\n";
    const char* p = s.data();
    size_t left = s.size();
    while (left) {
      ssize_t n = ::write(out_fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        ::_exit(3);  // the supervisor is gone
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  void progress(int64_t id, const std::string& c, const std::string& phase) {
    send({{"reply", "progress"}, {"id", id}, {"case", c}, {"phase", phase}});
  }

  // ---- set-up ----
  void ensure_context() {
    if (ctx_) return;
    driver_ = &cuda::driver();
    const cuda::Driver& drv = *driver_;
    info_ = cuda::query_device(device_ordinal_);
    KOPT_CU_CHECK(drv.cuDeviceGet(&device_, device_ordinal_), "device");
    KOPT_CU_CHECK(drv.cuDevicePrimaryCtxRetain(&ctx_, device_), "retaining the primary context");
    KOPT_CU_CHECK(drv.cuCtxSetCurrent(ctx_), "making the primary context current");
    KOPT_CU_CHECK(drv.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "creating a stream");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_ordinal_;
    KOPT_CU_CHECK(drv.cuMemGetAllocationGranularity(&granularity_, &prop,
                                                     CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                  "allocation granularity");
    // Built-in kernels.
    cuda::Compiler compiler;
    cuda::CompileRequest creq;
    creq.source = kBuiltinSource;
    creq.source_name = "kopt_builtin.cu";
    creq.arch = info_.arch();
    auto res = compiler.compile(creq);
    if (!res.ok)
      throw EnvironmentError("kopt.worker.010", "built-in kernels failed to compile for " +
                                                    creq.arch + ": " + res.log);
    KOPT_CU_CHECK(drv.cuModuleLoadData(&builtin_module_, res.cubin.data()), "built-in module");
    KOPT_CU_CHECK(drv.cuModuleGetFunction(&poison_fn_, builtin_module_, "kopt_poison_shared"),
                  "kopt_poison_shared");
    KOPT_CU_CHECK(drv.cuModuleGetFunction(&sumsq_fn_, builtin_module_, "kopt_gemm_sumsq"),
                  "kopt_gemm_sumsq");
    KOPT_CU_CHECK(drv.cuModuleGetFunction(&screen_fn_, builtin_module_, "kopt_screen_f32"), "kopt_screen_f32");
    KOPT_CU_CHECK(drv.cuModuleGetFunction(&diff32_fn_, builtin_module_, "kopt_first_diff_u32"),
                  "kopt_first_diff_u32");
    KOPT_CU_CHECK(drv.cuModuleGetFunction(&diff8_fn_, builtin_module_, "kopt_first_diff_u8"),
                  "kopt_first_diff_u8");
    // Poison to compare canaries with (enqueue_difference).
    poison_ref_ = std::make_unique<DeviceMemory>(GuardedBuffer::kHeadCheck);
    KOPT_CU_CHECK(drv.cuMemsetD8Async(poison_ref_->get(), kPoisonByte, poison_ref_->bytes(), stream_), "poison");
    size_t free_bytes = 0, total_bytes = 0;
    KOPT_CU_CHECK(drv.cuMemGetInfo(&free_bytes, &total_bytes), "device memory");
    pool_limit_bytes_ = total_bytes / 8;
    poison_smem_bytes_ = static_cast<int>(info_.shared_per_block_optin_bytes);
    KOPT_CU_CHECK(drv.cuFuncSetAttribute(poison_fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         poison_smem_bytes_),
                  "shared memory opt-in of kopt_poison_shared");
  }

  void handle_hello() {
    try {
      ensure_context();
      nlohmann::json dev = info_.to_json();
      send({{"reply", "hello"}, {"ok", true}, {"device", dev}, {"pid", ::getpid()}});
    } catch (const std::exception& e) {
      send({{"reply", "hello"}, {"ok", false}, {"error", e.what()}, {"pid", ::getpid()}});
    }
  }

  // ---- helpers ----
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
  /// Waits for the worker's stream.
  std::optional<CUresult> wait(double timeout_ms) {
    return poll([&] { return driver_->cuStreamQuery(stream_); }, timeout_ms);
  }
  /// Waits for an event.
  std::optional<CUresult> wait_event(CUevent e, double timeout_ms) {
    return poll([&] { return driver_->cuEventQuery(e); }, timeout_ms);
  }

  void sync_harness(const std::string& what) {
    auto r = wait(600000);
    if (!r) throw EnvironmentError("kopt.worker.011", "harness operation hung: " + what);
    if (*r != CUDA_SUCCESS) cuda::throw_error(*r, "cuStreamQuery", what);
  }

  Kernel load_kernel(const KernelRef& ref) {
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
        image = fs::read_file(ref.cubin_path);
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

  /// Throws CandidateFailure{infeasible} when the launch cannot run here, and
  /// sets the dynamic shared memory opt-in when it needs one.
  void check_feasible(Kernel& k, const LaunchDims& d, const std::string& case_name) {
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

  static std::string key(const CaseSpec& c, int trial) { return c.name + "#" + std::to_string(trial); }

  const HostInputs& inputs_for(const EvalRequest& rq, const CaseSpec& c, int trial) {
    auto k = key(c, trial);
    auto it = inputs_.find(k);
    if (it != inputs_.end()) return it->second;
    HostInputs in;
    for (const auto& a : c.args) {
      if (!a.is_buffer || a.role == spec::Role::output) continue;
      spec::Generator g = a.generator;
      if (g.kind == spec::Generator::Kind::npy && trial > 1) {
        // A file gives one set of inputs; fresh trials use the uniform
        // generator over the file's range instead.
        g = spec::Generator{};
      }
      in.data[a.name] = spec::generate(g, a.dtype, a.count, spec::derive_seed(rq.seed, c.name, a.name, trial), c.name);
    }
    HostInputs& stored = inputs_.emplace(k, std::move(in)).first->second;
    for (const auto& [name, bytes] : stored.data) {
      DeviceMemory d(bytes.size());
      KOPT_CU_CHECK(driver_->cuMemcpyHtoDAsync(d.get(), bytes.data(), bytes.size(), stream_), "uploading " + name);
      stored.device.emplace(name, std::move(d));
    }
    sync_harness("uploading the inputs of case " + c.name);
    return stored;
  }

  /// Packs kernel arguments for the given buffer pointers.
  struct ArgPack {
    std::vector<uint64_t> storage;  // 8 bytes per argument, aligned
    std::vector<void*> ptrs;
  };
  static ArgPack pack(const CaseSpec& c, const std::vector<CUdeviceptr>& ptrs) {
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

  int64_t size_of(const CaseSpec& c, const std::string& name, const char* what) {
    auto it = c.sizes.find(name);
    if (it == c.sizes.end())
      throw EnvironmentError("kopt.worker.012", std::string(what) + " names size '" + name +
                                                    "' that case " + c.name + " does not have");
    return it->second;
  }
  int arg_index(const CaseSpec& c, const std::string& name) {
    for (size_t i = 0; i < c.args.size(); ++i)
      if (c.args[i].name == name) return static_cast<int>(i);
    throw EnvironmentError("kopt.worker.013", "no buffer named '" + name + "' in case " + c.name);
  }

  /// Enqueues one launch of `k` on `ptrs` (no synchronisation).
  CUresult launch(Kernel& k, const CaseSpec& c, const LaunchDims& d, const std::vector<CUdeviceptr>& ptrs,
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

  void poison_shared() {
    unsigned words = static_cast<unsigned>(poison_smem_bytes_ / 4);
    void* args[] = {&words};
    KOPT_CU_CHECK(driver_->cuLaunchKernel(poison_fn_, static_cast<unsigned>(info_.sm_count * 2), 1, 1, 1024, 1, 1,
                                          static_cast<unsigned>(poison_smem_bytes_), stream_, args, nullptr),
                  "poisoning shared memory");
  }

  /// Computes (or recalls) the reference's outputs for a case and trial.
  const ReferenceData& reference_for(const EvalRequest& rq, Kernel* ref_kernel, const CaseSpec& c,
                                     int trial, const HostInputs& in) {
    auto k = key(c, trial) + "@" + rq.reference.cubin_path + "|" + rq.reference.entry +
             (rq.reference_is_golden ? "|golden" : "");
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
        KOPT_CU_CHECK(drv.cuMemcpyHtoDAsync(ptrs[i], in.data.at(a.name).data(), bytes, stream_), "reference input");
      }
    }
    if (rq.reference_is_golden) {
      for (const auto& [name, path] : c.golden_npy) {
        auto arr = spec::read_npy(path);
        out.outputs[name] = std::move(arr.data);
      }
    } else {
      LaunchDims d = c.reference_launch.value_or(c.launch);
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

  /// The candidate's guarded buffers for a case: slot 0 serves trials 1-2,
  /// slot 1 trial 3 and the timing, so trial 3 runs at other addresses. Sets
  /// are kept for the next candidates while they fit in an eighth of the
  /// device's memory (fresh mappings otherwise); either way every byte,
  /// canaries included, is poisoned again before use, as a fresh set is.
  BufferSet* acquire(const CaseSpec& c, int slot, std::unique_ptr<BufferSet>& owner) {
    const std::string k = c.name + "#slot" + std::to_string(slot);
    auto it = pool_.find(k);
    if (it != pool_.end() && it->second->args_signature == signature_of(c)) {
      BufferSet& set = *it->second;
      for (const auto& b : set.buffers)
        if (b) {
          KOPT_CU_CHECK(driver_->cuMemsetD8Async(b->ptr(), kPoisonByte, b->bytes(), stream_), "poison");
          b->reset_canaries(stream_);
        }
      return &set;
    }
    if (it != pool_.end()) {
      sync_harness("releasing buffers");
      pool_bytes_ -= it->second->bytes;
      pool_.erase(it);
    }
    auto set = allocate(c);
    if (pool_bytes_ + set->bytes <= pool_limit_bytes_) {
      pool_bytes_ += set->bytes;
      BufferSet* p = set.get();
      pool_[k] = std::move(set);
      return p;
    }
    owner = std::move(set);
    return owner.get();
  }
  static std::string signature_of(const CaseSpec& c) {
    std::string sig;
    for (const auto& a : c.args)
      if (a.is_buffer)
        sig += a.name + ":" + spec::role_name(a.role) + ":" +
               std::to_string(a.count * static_cast<int64_t>(spec::dtype_size(a.dtype))) + ";";
    return sig;
  }

  /// Allocates the candidate's guarded buffers for a case.
  std::unique_ptr<BufferSet> allocate(const CaseSpec& c) {
    auto set = std::make_unique<BufferSet>();
    set->args_signature = signature_of(c);
    for (const auto& a : c.args) {
      if (!a.is_buffer) {
        set->buffers.emplace_back();
        continue;
      }
      const size_t bytes = static_cast<size_t>(a.count) * spec::dtype_size(a.dtype);
      set->buffers.push_back(std::make_unique<GuardedBuffer>(bytes, device_ordinal_, granularity_));
      set->bytes += bytes;
      if (a.role == spec::Role::inout) {
        set->pristine.emplace_back(bytes);
        set->bytes += bytes;
      }
    }
    // Fresh mappings: fill everything (canaries included) with poison once.
    for (const auto& b : set->buffers)
      if (b) {
        KOPT_CU_CHECK(driver_->cuMemsetD8Async(b->ptr(), kPoisonByte, b->bytes(), stream_), "poison");
        b->reset_canaries(stream_);
      }
    return set;
  }

  std::vector<CUdeviceptr> pointers(const BufferSet& s) {
    std::vector<CUdeviceptr> p;
    for (const auto& b : s.buffers) p.push_back(b ? b->ptr() : 0);
    return p;
  }

  /// Writes a trial's inputs into the buffers (and the inout pristine copies):
  /// device-to-device copies from the trial's device-resident inputs, ordered
  /// on the worker's stream.
  void upload(const CaseSpec& c, BufferSet& s, const HostInputs& in) {
    size_t pristine = 0;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const ArgSpec& a = c.args[i];
      if (!a.is_buffer || a.role == spec::Role::output) continue;
      const DeviceMemory& data = in.device.at(a.name);
      KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(s.buffers[i]->ptr(), data.get(), data.bytes(), stream_),
                    "uploading " + a.name);
      if (a.role == spec::Role::inout)
        KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(s.pristine[pristine++].get(), data.get(), data.bytes(), stream_),
                      "uploading " + a.name);
    }
  }

  /// Before each candidate launch: poison outputs, restore inouts, reset canaries.
  /// `reset_canaries` false: leave the canaries as they are, so that an
  /// overrun in any of a series of launches (the timed ones) still shows at
  /// the end.
  void prepare(const CaseSpec& c, BufferSet& s, bool reset_canaries = true) {
    size_t pristine = 0;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const ArgSpec& a = c.args[i];
      if (!a.is_buffer) continue;
      GuardedBuffer& b = *s.buffers[i];
      if (a.role == spec::Role::output)
        KOPT_CU_CHECK(driver_->cuMemsetD8Async(b.ptr(), kPoisonByte, b.bytes(), stream_), "poisoning " + a.name);
      else if (a.role == spec::Role::inout)
        KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(b.ptr(), s.pristine[pristine++].get(), b.bytes(), stream_),
                      "restoring " + a.name);
      if (reset_canaries) b.reset_canaries(stream_);
    }
  }

  /// One checked launch: every check passes, or CandidateFailure is thrown.
  /// `run1`: per argument index, the device copy of run 1's output to compare
  /// with bit for bit (the determinism check of repeated runs); may be empty.
  void checked_launch(const EvalRequest& rq, Kernel& k, const CaseSpec& c, BufferSet& s, const HostInputs& in,
                      const ReferenceData& ref, const std::string& when,
                      const std::map<size_t, CUdeviceptr>& run1 = {}) {
    prepare(c, s);
    poison_shared();
    CUresult r = launch(k, c, c.launch, pointers(s), rq.gemm);
    if (r != CUDA_SUCCESS) throw failure_from(r, "case " + c.name + " (" + when + ")");
    collect(rq, c, s, in, ref, when, run1);
  }

  // ---- checks, batched: one wait per checked launch ----
  //
  // Every check of a launch is queued on the stream behind it as a small
  // kernel writing into its own slot of check_dev_ (4 x u64, initialised to
  // {0, 0, 0, ~0}: kopt_screen_f32's layout; a buffer comparison's first
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

  /// Makes room for `slots` check slots. Call only with nothing of a
  /// candidate's in flight (it may synchronise).
  void reserve_check_slots(size_t slots) {
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
  /// Slots a collect() of case `c` may use: canaries (2), an input comparison
  /// or an output screen, and a determinism comparison per buffer.
  static size_t check_slots_for(const CaseSpec& c) { return c.args.size() * 4 + 1; }

  size_t next_slot(size_t* used) {
    if (*used * kSlotWords >= check_words_)
      throw std::logic_error("worker: more checks than reserved slots");  // check_slots_for is wrong
    return (*used)++;
  }
  CUdeviceptr slot_ptr(size_t slot) const {
    return check_dev_->get() + slot * kSlotWords * sizeof(unsigned long long);
  }

  /// Queues the comparison of two device buffers of `bytes` bytes each
  /// (elements of `elem` bytes); difference_at() reads it after the wait.
  PendingDiff enqueue_difference(CUdeviceptr a, CUdeviceptr b, size_t bytes, size_t elem, size_t* used) {
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
  int64_t difference_at(const PendingDiff& p) const {
    const unsigned long long got = check_host_[p.slot * kSlotWords + kSlotWords - 1];
    if (got == ~0ull) return -1;
    return static_cast<int64_t>((p.words ? got * 4 : got) / p.elem);
  }

  /// Queues the on-GPU screen of a float32 output (kopt_screen_f32) and
  /// returns its slot; nullopt when the screen does not apply (other dtypes,
  /// a rel_l2 tolerance, or KOPT_HOST_COMPARE=1 in the environment): the host
  /// comparator then decides.
  std::optional<size_t> enqueue_screen(CUdeviceptr out, const ReferenceData& ref, const ArgSpec& a,
                                       const spec::Tolerance& tol, size_t* used) {
    if (host_compare_only_ || a.dtype != spec::DType::f32) return std::nullopt;
    CUdeviceptr allowed = 0;
    if (tol.kind == spec::Tolerance::Kind::gemm) {
      allowed = ref.device_allowed.at(a.name).get();
    } else if (tol.rel_l2) {
      return std::nullopt;
    }
    // Sizes as the host path would check them; any mismatch goes to the host,
    // which reports it.
    const size_t want_bytes = static_cast<size_t>(a.count) * spec::dtype_size(a.dtype);
    if (ref.device_outputs.at(a.name).bytes() != want_bytes) return std::nullopt;
    if (allowed && ref.device_allowed.at(a.name).bytes() != static_cast<size_t>(a.count) * sizeof(double))
      return std::nullopt;
    const size_t slot = next_slot(used);
    CUdeviceptr want = ref.device_outputs.at(a.name).get();
    CUdeviceptr stats = slot_ptr(slot);
    double atol = tol.atol, rtol = tol.rtol;
    long long n = a.count;
    void* args[] = {&out, &want, &allowed, &atol, &rtol, &n, &stats};
    const auto blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, info_.sm_count * 8LL));
    KOPT_CU_CHECK(driver_->cuLaunchKernel(screen_fn_, blocks, 1, 1, 256, 1, 1, 0, stream_, args, nullptr),
                  "output screen");
    return slot;
  }
  /// The screen's outcome when every element passed; nullopt when one failed
  /// (the host comparator then finds and words the failure).
  std::optional<CompareOutcome> screen_outcome(size_t slot) const {
    const unsigned long long* got = check_host_ + slot * kSlotWords;
    if (got[0] != 0) return std::nullopt;
    CompareOutcome o;
    std::memcpy(&o.max_abs_error, &got[1], sizeof(double));
    std::memcpy(&o.max_ratio, &got[2], sizeof(double));
    return o;
  }

  /// Waits for the stream behind a candidate's launch; its hang or its
  /// asynchronous error is the candidate's failure.
  void await_candidate(double timeout_ms, const std::string& where) {
    auto w = wait(timeout_ms);
    if (!w)
      throw CandidateFailure{Verdict::timeout,
                             where + ": the launch and its checks did not finish within " +
                                 std::to_string(static_cast<int64_t>(timeout_ms)) + " ms",
                             "", true};
    if (*w != CUDA_SUCCESS) throw failure_from(*w, where);
  }
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

  /// Checks the outputs of the launch last queued on the stream: canaries,
  /// inputs unchanged (bitwise), outputs within tolerance (the on-GPU screen,
  /// else the host comparator), and outputs equal to run 1's where `run1`
  /// names them. Queues every check, then waits once (the launch timeout);
  /// failures are reported in that order, buffer by buffer.
  void collect(const EvalRequest& rq, const CaseSpec& c, BufferSet& s, const HostInputs& in,
               const ReferenceData& ref, const std::string& when, const std::map<size_t, CUdeviceptr>& run1 = {}) {
    const std::string where = "case " + c.name + " (" + when + ")";
    struct BufferChecks {
      std::vector<PendingDiff> canaries;
      std::optional<PendingDiff> input;        // inputs: unchanged?
      std::optional<size_t> screen;            // outputs and inouts: on-GPU screen slot
      std::optional<PendingDiff> determinism;  // equal to run 1's output?
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
        o = tol.kind == spec::Tolerance::Kind::gemm
                ? compare_bounded(a.name, got.data(), want.data(), a.dtype, a.count, ref.allowed.at(a.name))
                : compare_allclose(a.name, got.data(), want.data(), a.dtype, a.count, tol);
      }
      CaseResult& cr = current_case_result(c);
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

  static spec::Tolerance tolerance_of(const CaseSpec& c, const ArgSpec& a) {
    auto it = c.tolerance.find(a.name);
    return it != c.tolerance.end() ? it->second : spec::Tolerance{};
  }

  /// A device scratch buffer of at least `bytes`, kept between candidates.
  DeviceMemory& scratch(const std::string& key, size_t bytes) {
    auto it = scratch_.find(key);
    if (it != scratch_.end() && it->second.bytes() >= bytes) return it->second;
    if (it != scratch_.end()) {
      sync_harness("releasing scratch memory");
      scratch_.erase(it);
    }
    return scratch_.emplace(key, DeviceMemory(bytes)).first->second;
  }

  static double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  }

  CaseResult& current_case_result(const CaseSpec& c) {
    for (auto& cr : result_.cases)
      if (cr.name == c.name) return cr;
    CaseResult cr;
    cr.name = c.name;
    cr.role = spec::case_role_name(c.role);
    result_.cases.push_back(cr);
    return result_.cases.back();
  }

  void ensure_events(size_t n) {
    while (events_.size() < n) {
      CUevent e;
      KOPT_CU_CHECK(driver_->cuEventCreate(&e, CU_EVENT_DEFAULT), "creating an event");
      events_.push_back(e);
    }
  }

  /// Times `warmup` + `iterations` launches; each measured launch has its own
  /// event pair placed around the launch alone (poisoning, L2 flush and
  /// restoring inouts happen before the start event). Returns milliseconds.
  std::vector<double> time_launches(const EvalRequest& rq, Kernel& k, const CaseSpec& c, const LaunchDims& d,
                                    const std::vector<CUdeviceptr>& ptrs, BufferSet* guarded) {
    const int total = rq.timing.warmup + rq.timing.iterations;
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
    if (guarded)
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
    for (int i = rq.timing.warmup; i < total; ++i) {
      float t = 0;
      KOPT_CU_CHECK(driver_->cuEventElapsedTime(&t, events_[2 * i], events_[2 * i + 1]), "event time");
      ms.push_back(t);
    }
    return ms;
  }

  /// Runs the whole evaluation. Returns false when the worker must exit.
  bool handle_evaluate(const nlohmann::json& j) {
    int64_t id = j.value("id", int64_t{0});
    bool healthy = true;
    result_ = Result{};
    try {
      ensure_context();
      EvalRequest rq = EvalRequest::from_json(j);
      id = rq.id;
      evaluate(rq);
    } catch (const CandidateFailure& f) {
      result_.verdict = f.verdict;
      result_.detail = f.detail;
      result_.error_name = f.error_name;
      healthy = !f.sticky;
    } catch (const std::exception& e) {
      // A harness failure (out of memory, a broken reference...) is not the
      // candidate's verdict; report it and start afresh.
      result_.verdict = Verdict::worker_crash;
      result_.detail = std::string("harness error: ") + e.what();
      healthy = false;
    }
    if (result_.verdict != Verdict::ok) result_.geomean_ms.reset();
    send({{"reply", "result"}, {"id", id}, {"healthy", healthy}, {"result", result_.to_json()}});
    if (!healthy) {
      // Drop everything tied to the broken context without touching it.
      std::fflush(nullptr);
      ::_exit(0);
    }
    return true;
  }

  void evaluate(const EvalRequest& rq) {
    const spec::Checks checks = rq.checks;
    Kernel cand = load_kernel(rq.candidate);
    std::optional<Kernel> ref;
    if (!rq.reference_is_golden) ref = load_kernel(rq.reference);
    for (const auto& c : rq.cases) {
      check_feasible(cand, c.launch, c.name);
      if (ref) check_feasible(*ref, c.reference_launch.value_or(c.launch), c.name);
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
        const ReferenceData& rd = reference_for(rq, ref ? &*ref : nullptr, c, trial, in);
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
          checked_launch(rq, cand, c, *set, in, rd, when, run1);
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

    std::vector<double> medians, ref_medians;
    for (const auto& c : rq.cases) {
      if (c.role != spec::CaseRole::performance) continue;
      progress(rq.id, c.name, "time");
      BufferSet& set = *timing_sets.at(c.name);
      const HostInputs& in = inputs_for(rq, c, trials);
      const ReferenceData& rd = reference_for(rq, ref ? &*ref : nullptr, c, trials, in);
      auto samples = time_launches(rq, cand, c, c.launch, pointers(set), &set);
      // The timed launches' output (the last one) must still be right.
      collect(rq, c, set, in, rd, "after timing");
      CaseResult& cr = current_case_result(c);
      cr.latency = latency_stats(samples);
      cr.latency->raw_ms = samples;
      medians.push_back(cr.latency->median_ms);
      if (rq.time_reference && ref) {
        // The reference on plain buffers of its own, same inputs.
        std::vector<DeviceMemory> mem;
        std::vector<CUdeviceptr> ptrs(c.args.size(), 0);
        for (size_t i = 0; i < c.args.size(); ++i) {
          const ArgSpec& a = c.args[i];
          if (!a.is_buffer) continue;
          mem.emplace_back(static_cast<size_t>(a.count) * spec::dtype_size(a.dtype));
          ptrs[i] = mem.back().get();
          if (a.role != spec::Role::output)
            KOPT_CU_CHECK(driver_->cuMemcpyHtoDAsync(ptrs[i], in.data.at(a.name).data(), mem.back().bytes(), stream_),
                          "upload");
        }
        auto rs = time_launches(rq, *ref, c, c.reference_launch.value_or(c.launch), ptrs, nullptr);
        cr.reference_latency = latency_stats(rs);
        cr.reference_latency->raw_ms = rs;
        ref_medians.push_back(cr.reference_latency->median_ms);
      }
    }
    result_.timing_ms = ms_since(t_timing);
    if (!medians.empty()) result_.geomean_ms = geomean(medians);
    if (!ref_medians.empty() && ref_medians.size() == medians.size()) {
      result_.reference_geomean_ms = geomean(ref_medians);
      result_.speedup = *result_.reference_geomean_ms / *result_.geomean_ms;
    }
  }

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
  CUfunction screen_fn_ = nullptr, diff32_fn_ = nullptr, diff8_fn_ = nullptr;
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

}  // namespace

int run_worker(const WorkerOptions& options) {
  // The protocol owns the original stdout; anything else written to fd 1
  // (device printf, library chatter) goes to stderr instead.
  int protocol_fd = ::dup(1);
  if (protocol_fd < 0) return 3;
  ::dup2(2, 1);
  // Sleeps of the stream polls (Worker::poll) end within a microsecond of
  // their time rather than the default 50 us timer slack later.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  try {
    Worker w(options.device, protocol_fd);
    return w.loop();
  } catch (const std::exception& e) {
    std::cerr << "kopt worker: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace kopt::eval
