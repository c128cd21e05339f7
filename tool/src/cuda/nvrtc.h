// Run-time compilation of candidate kernels with NVRTC, to cubin, with a
// content-addressed on-disk cache.
//
// NVRTC needs no GPU and no driver, so everything here runs (and is tested) on
// CPU-only machines; the architecture comes from the device (sm_XY) or --arch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kopt::cuda {

struct CompileRequest {
  std::string source;                 // full CUDA C++ source
  std::string source_name = "kernel.cu";  // shown in compiler messages
  std::string entry;                  // __global__ function to expose (name expression)
  std::string arch = "sm_90";         // real architecture, cubin is produced for it
  std::vector<std::string> options;   // extra NVRTC options (e.g. "-O3", "-maxrregcount=128")
  std::map<std::string, int64_t> defines;  // added as -DNAME=VALUE
};

struct CompileResult {
  bool ok = false;
  std::string error_name;    // e.g. "NVRTC_ERROR_COMPILATION" when !ok
  std::string log;           // NVRTC's log (warnings too), never truncated
  std::vector<char> cubin;   // when ok
  std::string lowered_entry; // the symbol to pass to cuModuleGetFunction
  std::string key;           // 32 hex digits: XXH3-128 of everything that affects the output
  bool cache_hit = false;
  double compile_ms = 0;     // wall time of nvrtcCompileProgram (0 on a cache hit)
  /// When ok: the byte size of each parameter of the entry point, read from
  /// the PTX NVRTC produced beside the cubin (cuda/ptx.h); nullopt when it
  /// could not be read.
  std::optional<std::vector<size_t>> param_sizes;
  /// One line saying why, when the tool refused a kernel that NVRTC compiled
  /// (e.g. its parameters do not match the spec's signature); empty otherwise.
  std::string detail;
};

/// "major.minor" of the NVRTC library in use (part of every cache key).
std::string nvrtc_version();

/// The architectures this NVRTC can compile for, as numbers (75 for sm_75),
/// ascending (nvrtcGetSupportedArchs). Needs no GPU.
std::vector<int> supported_archs();

/// The full option list NVRTC receives for a request (documented defaults:
/// --std=c++17, -arch=<arch>, -I<CUDA include dir>, -default-device is NOT set,
/// relocatable device code is never enabled).
std::vector<std::string> effective_options(const CompileRequest& request);

/// Compiles requests, remembering results by content in `cache_dir` (created
/// if missing; empty path: no disk cache, memory only). Thread-safe: several
/// threads may compile at once (NVRTC programs are independent).
class Compiler {
 public:
  explicit Compiler(std::filesystem::path cache_dir = {});

  /// Never throws for a bad candidate: a compile failure is CompileResult{ok=false}
  /// with NVRTC's log. Options that would enable device-side launches (-rdc,
  /// --relocatable-device-code=true, -dc) are refused with ok=false.
  /// Throws EnvironmentError("kopt.nvrtc.001") only if NVRTC itself is broken
  /// (e.g. out of memory), and kopt.nvrtc.002 if the cache cannot be written.
  CompileResult compile(const CompileRequest& request);

  /// The cache key of a request without compiling.
  static std::string cache_key(const CompileRequest& request);

  int hits() const;
  int misses() const;

 private:
  std::filesystem::path dir_;
  mutable std::mutex mu_;
  int hits_ = 0, misses_ = 0;
};

/// Writes `result.cubin` to `<dir>/<key>.cubin` (atomically; no-op if present)
/// and returns the path: what a worker loads.
std::filesystem::path store_cubin(const std::filesystem::path& dir, const CompileResult& result);

}  // namespace kopt::cuda
