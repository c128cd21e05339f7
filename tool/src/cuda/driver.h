// The CUDA driver API, loaded at run time from libcuda.so.1.
//
// The tool links no CUDA driver library: it starts, parses specs and compiles
// with NVRTC on machines without a GPU or a driver, and only a worker process
// (eval/worker.h) ever loads the driver. Entry points are resolved with
// cuGetProcAddress for the CUDA_VERSION of the cuda.h we were built against,
// so each pointer has exactly the ABI its declaration in cuda.h says.
#pragma once

#include <cuda.h>

#include <string>

namespace kopt::cuda {

// X-macro of every driver entry point the tool uses.
#define KOPT_CUDA_DRIVER_FUNCTIONS(X)                                  \
  X(cuInit)                                                            \
  X(cuDriverGetVersion)                                                \
  X(cuGetErrorName)                                                    \
  X(cuGetErrorString)                                                  \
  X(cuDeviceGetCount)                                                  \
  X(cuDeviceGet)                                                       \
  X(cuDeviceGetName)                                                   \
  X(cuDeviceGetUuid)                                                   \
  X(cuDeviceGetAttribute)                                              \
  X(cuDeviceTotalMem)                                                  \
  X(cuDevicePrimaryCtxRetain)                                          \
  X(cuDevicePrimaryCtxRelease)                                         \
  X(cuCtxSetCurrent)                                                   \
  X(cuCtxSynchronize)                                                  \
  X(cuStreamCreate)                                                    \
  X(cuStreamDestroy)                                                   \
  X(cuStreamQuery)                                                     \
  X(cuStreamSynchronize)                                               \
  X(cuEventCreate)                                                     \
  X(cuEventDestroy)                                                    \
  X(cuEventRecord)                                                     \
  X(cuEventQuery)                                                      \
  X(cuEventElapsedTime)                                                \
  X(cuModuleLoadData)                                                  \
  X(cuModuleUnload)                                                    \
  X(cuModuleGetFunction)                                               \
  X(cuModuleGetGlobal)                                                 \
  X(cuFuncGetAttribute)                                                \
  X(cuFuncSetAttribute)                                                \
  X(cuLaunchKernel)                                                    \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                       \
  X(cuMemAlloc)                                                        \
  X(cuMemFree)                                                         \
  X(cuMemcpyHtoD)                                                      \
  X(cuMemcpyDtoH)                                                      \
  X(cuMemcpyDtoHAsync)                                                 \
  X(cuMemAllocHost)                                                    \
  X(cuMemFreeHost)                                                     \
  X(cuMemcpyDtoDAsync)                                                 \
  X(cuMemcpyHtoDAsync)                                                 \
  X(cuMemsetD8Async)                                                   \
  X(cuMemsetD32Async)                                                  \
  X(cuMemGetInfo)                                                      \
  X(cuMemAddressReserve)                                               \
  X(cuMemAddressFree)                                                  \
  X(cuMemCreate)                                                       \
  X(cuMemRelease)                                                      \
  X(cuMemMap)                                                          \
  X(cuMemUnmap)                                                        \
  X(cuMemSetAccess)                                                    \
  X(cuMemGetAllocationGranularity)

/// Function table. Member names are the cuda.h names (which cuda.h may map to
/// versioned symbols such as cuMemAlloc_v2; the macro does the same here).
struct Driver {
#define KOPT_DECLARE_FN(name) decltype(&::name) name = nullptr;
  KOPT_CUDA_DRIVER_FUNCTIONS(KOPT_DECLARE_FN)
#undef KOPT_DECLARE_FN
  /// Optional (drivers of CUDA 12.4 and later): null when the driver lacks
  /// it, and then the worker does not check a kernel's parameters itself
  /// (the PTX check at compile time still applies).
  decltype(&::cuFuncGetParamInfo) cuFuncGetParamInfo = nullptr;
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

/// Loads libcuda.so.1 (once per process), resolves every entry point and calls
/// cuInit(0). Throws NoDeviceError("kopt.cuda.077") with the reason ("no CUDA
/// driver (libcuda.so.1: ...)", "no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE)")
/// and EnvironmentError("kopt.cuda.001") when a symbol is missing.
const Driver& driver();

/// "CUDA_ERROR_ILLEGAL_ADDRESS"-style name of a result (works before loading
/// succeeded: falls back to the number).
std::string error_name(CUresult r);

/// Errors that leave the context unusable ("sticky"): after one of these the
/// worker must exit and a fresh process take over.
bool is_sticky(CUresult r);

/// Throws EnvironmentError("kopt.cuda.002") "<call> failed: <NAME>: <string> (<what>)".
[[noreturn]] void throw_error(CUresult r, const char* call, const std::string& what);

}  // namespace kopt::cuda

/// Checks a driver call; throws kopt::EnvironmentError naming the call.
#define KOPT_CU_CHECK(call, what)                                            \
  do {                                                                       \
    CUresult kopt_cu_result_ = (call);                                       \
    if (kopt_cu_result_ != CUDA_SUCCESS)                                     \
      ::kopt::cuda::throw_error(kopt_cu_result_, #call, (what));             \
  } while (0)

/// For destructors: never throws, ignores the result.
#define KOPT_CU_CHECK_NOTHROW(call) \
  do {                              \
    (void)(call);                   \
  } while (0)
