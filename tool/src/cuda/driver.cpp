#include "cuda/driver.h"

#include <dlfcn.h>

#include <mutex>

#include "util/error.h"

namespace kopt::cuda {
namespace {

Driver g_driver;
std::once_flag g_once;
std::string g_load_error;      // non-empty: loading failed with this message
bool g_no_device = false;      // the failure means "no device/driver" (exit 77)

void load() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    g_load_error = std::string("no CUDA device found: the CUDA driver (libcuda.so.1) is not installed (") +
                   (e ? e : "dlopen failed") + ")";
    g_no_device = true;
    return;
  }
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress)>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    g_load_error = "the CUDA driver is too old: cuGetProcAddress_v2 is missing (need a CUDA 12+ driver)";
    return;
  }
#define KOPT_LOAD_FN(name)                                                                    \
  {                                                                                           \
    void* fn = nullptr;                                                                       \
    CUdriverProcAddressQueryResult status{};                                                  \
    CUresult r = get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);   \
    if (r != CUDA_SUCCESS || !fn) {                                                           \
      g_load_error = "the CUDA driver lacks " #name " (for CUDA " + std::to_string(CUDA_VERSION) + \
                     "); update the driver";                                                  \
      return;                                                                                 \
    }                                                                                         \
    g_driver.name = reinterpret_cast<decltype(g_driver.name)>(fn);                            \
  }
  KOPT_CUDA_DRIVER_FUNCTIONS(KOPT_LOAD_FN)
#undef KOPT_LOAD_FN
  {  // optional: a missing symbol leaves the pointer null
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    if (get_proc("cuFuncGetParamInfo", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&
        status == CU_GET_PROC_ADDRESS_SUCCESS && fn)
      g_driver.cuFuncGetParamInfo = reinterpret_cast<decltype(g_driver.cuFuncGetParamInfo)>(fn);
  }
  CUresult r = g_driver.cuInit(0);
  if (r != CUDA_SUCCESS) {
    g_load_error = "no CUDA device found (cuInit: " + error_name(r) + ")";
    g_no_device = true;
    return;
  }
  int count = 0;
  r = g_driver.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    g_load_error = "no CUDA device found (cuDeviceGetCount: " +
                   (r == CUDA_SUCCESS ? std::string("0 devices") : error_name(r)) + ")";
    g_no_device = true;
    return;
  }
  g_driver.cuDriverGetVersion(&g_driver.version);
}

}  // namespace

const Driver& driver() {
  std::call_once(g_once, load);
  if (!g_load_error.empty()) {
    if (g_no_device) throw NoDeviceError("kopt.cuda.077", g_load_error);
    throw EnvironmentError("kopt.cuda.001", g_load_error);
  }
  return g_driver;
}

std::string error_name(CUresult r) {
  const char* name = nullptr;
  if (g_driver.cuGetErrorName && g_driver.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
    return name;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

void throw_error(CUresult r, const char* call, const std::string& what) {
  const char* desc = nullptr;
  if (g_driver.cuGetErrorString) g_driver.cuGetErrorString(r, &desc);
  throw EnvironmentError("kopt.cuda.002", std::string(call) + " failed: " + error_name(r) +
                                              (desc ? std::string(": ") + desc : "") + " (" +
                                              what + ")");
}

}  // namespace kopt::cuda
