// Run-time compilation of candidate kernels with NVRTC, to cubin, with a
// content-addressed on-disk cache.
//
// NVRTC needs no GPU and no driver, so everything here runs (and is tested) on
// CPU-only machines; the architecture comes from the device (sm_XY) or --arch.
#pragma once

#include <atomic>
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
  /// __constant__ (or __device__) variables to resolve, by their C++ names
  /// ("d_filter", "ns::table"): each is added as the name expression
  /// "&NAME", so a missing one is a compile error, and the result gives its
  /// symbol and size (CompileResult::symbols).
  std::vector<std::string> symbols;
};

/// A variable of the compiled module (CompileRequest::symbols).
struct CompiledSymbol {
  std::string lowered;  // the name to pass to cuModuleGetGlobal
  /// Its size in bytes, read from the PTX (cuda/ptx.h); nullopt when it could not be read.
  std::optional<size_t> bytes;
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
  /// When ok: CompileRequest::symbols, by the name given there.
  std::map<std::string, CompiledSymbol> symbols;
  /// One line saying why, when the tool refused a kernel that NVRTC compiled
  /// (e.g. its parameters do not match the spec's signature); empty otherwise.
  std::string detail;
};

/// The line of a compile log that says why it failed, for one-line messages
/// (progress lines, compile-only listings, exceptions): the first line with
/// "error" in it (NVRTC's "kernel.cu(12): error: identifier ... is
/// undefined", ptxas's "ptxas error   : Entry function ... uses too much
/// shared data"), else the first non-blank line, else "no log"; trimmed and
/// cut to `max_chars`.
std::string first_error_line(const std::string& log, size_t max_chars = 300);

/// "major.minor" of the NVRTC library in use (part of every cache key).
std::string nvrtc_version();

/// The architectures this NVRTC can compile for, as numbers (75 for sm_75),
/// ascending (nvrtcGetSupportedArchs). Needs no GPU.
std::vector<int> supported_archs();

/// The full option list NVRTC receives for a request (documented defaults:
/// --std=c++17, -arch=<arch>, -I<CUDA include dir>, and -I<CUDA include
/// dir>/cccl where the toolkit has that folder (CUDA 13 keeps CUB, Thrust and
/// libcu++ there); -default-device is NOT set, relocatable device code is
/// never enabled).
std::vector<std::string> effective_options(const CompileRequest& request);

/// How compiles that miss the cache run.
struct CompilerOptions {
  /// The command of a compiler process (`kopt compile-worker`); empty: NVRTC
  /// runs in this process. With one (and a cache folder), each compile runs
  /// in a child process started as `helper_argv --request FILE --cache-dir
  /// DIR` (run_compile_worker), which writes the cache entry this process
  /// then reads: a compile that hangs, takes too long, exhausts memory or
  /// crashes inside NVRTC ends that process alone, and its result is a
  /// compile error, never a stalled or dead run. NVRTC cannot be stopped
  /// from another thread of the same process, so only a process boundary
  /// makes a limit enforceable. Costs one process start per compile (tens of
  /// ms; compiles take 0.3 s and up).
  std::vector<std::string> helper_argv;
  /// Wall-clock limit of one compile in seconds (with helper_argv; 0: none).
  /// Past it the compiler process is killed and the result is
  /// error_name "KOPT_COMPILE_TIMEOUT" (not cached).
  double timeout_s = 0;
  /// Remove the cache folder's stale temporary files when the Compiler is
  /// made (remove_stale_cache_files). The compiler process, which makes a
  /// Compiler per compile, leaves that to its parent.
  bool remove_stale = true;
};

/// A temporary file of a compile cache folder whose writer is gone for at
/// least this long (its process no longer runs on this host) is stale: a
/// write takes milliseconds, and a compiler process reads its request as it
/// starts.
inline constexpr int kStaleGraceSeconds = 60;
/// One older than this is stale whoever wrote it (a writer on another host
/// that shares the folder, whose process this host cannot see, or a process
/// id used again).
inline constexpr int kStaleAgeSeconds = 3600;

/// Removes the files that killed writers leave in a compile cache folder:
/// write_file_atomic's temporaries ("<key>.cubin.tmp.<pid>.<n>",
/// "<key>.json.tmp.<pid>.<n>": a compiler process killed at the end of a
/// search, by --compile-timeout, or a run killed while writing) and the
/// request files of compiler processes ("<key>.request.<pid>.<n>.json": a
/// run killed while a compile ran), once stale (kStaleGraceSeconds,
/// kStaleAgeSeconds). Nothing reads those files: a cache entry is
/// "<key>.json", written last, and "<key>.cubin". Returns how many files
/// were removed; never throws (what cannot be listed or removed stays).
int remove_stale_cache_files(const std::filesystem::path& dir);

/// Compiles requests, remembering results by content in `cache_dir` (created
/// if missing, its stale temporary files removed: remove_stale_cache_files;
/// empty path: no disk cache). Thread-safe: several threads may compile at
/// once (NVRTC programs are independent).
class Compiler {
 public:
  explicit Compiler(std::filesystem::path cache_dir = {}, CompilerOptions options = {});

  /// Never throws for a bad candidate: a compile failure is CompileResult{ok=false}
  /// with NVRTC's log. Options that would enable device-side launches (-rdc,
  /// --relocatable-device-code=true, -dc) are refused with ok=false.
  /// Throws EnvironmentError("kopt.nvrtc.001") only if NVRTC itself is broken
  /// (e.g. out of memory), kopt.nvrtc.002 if the cache cannot be written and
  /// kopt.nvrtc.003 if the compiler process cannot be started. In a compiler
  /// process (CompilerOptions::helper_argv) a compile past the time limit is
  /// ok=false with error_name KOPT_COMPILE_TIMEOUT, one that crashed
  /// KOPT_COMPILER_CRASHED (the process's last output in the log).
  CompileResult compile(const CompileRequest& request);

  /// The cache key of a request without compiling.
  static std::string cache_key(const CompileRequest& request);

  /// While `stopped` is true: compiles running in a compiler process
  /// (CompilerOptions::helper_argv) are killed within 100 ms, and compiles
  /// that miss the cache return at once; both give ok=false with error_name
  /// KOPT_COMPILE_STOPPED and are not cached. For a caller that no longer
  /// wants the results (the search has ended); such a result is no verdict
  /// and must not be recorded as one. A compile running in this process
  /// (no helper) cannot be stopped and runs to its end. Thread-safe.
  void stop(bool stopped) { stopped_.store(stopped); }

  int hits() const;
  int misses() const;

 private:
  std::optional<CompileResult> cached(const CompileRequest& request, const std::string& key) const;
  CompileResult compile_here(const CompileRequest& request, const std::string& key);
  CompileResult compile_in_child(const CompileRequest& request, const std::string& key);

  std::filesystem::path dir_;
  CompilerOptions opt_;
  mutable std::mutex mu_;
  int hits_ = 0, misses_ = 0;
  std::atomic<bool> stopped_{false};
};

/// CompileResult::error_name of a compile stopped by Compiler::stop.
inline constexpr const char* kCompileStopped = "KOPT_COMPILE_STOPPED";

/// `kopt compile-worker --request FILE --cache-dir DIR`: compiles the
/// request in FILE (the JSON Compiler writes for its compiler process) with
/// a Compiler on DIR, whose cache entry is the result. Returns the exit code:
/// 0 compiled (or failed to: the entry says so), 2 a bad request, 3 NVRTC
/// itself failed (kopt.nvrtc.001, on stderr).
int run_compile_worker(const std::filesystem::path& request, const std::filesystem::path& cache_dir);

/// Writes `result.cubin` to `<dir>/<key>.cubin` (atomically; no-op if present)
/// and returns the path: what a worker loads.
std::filesystem::path store_cubin(const std::filesystem::path& dir, const CompileResult& result);

}  // namespace kopt::cuda
