// The worker protocol: JSON lines over the worker's stdin (requests) and stdout
// (replies). One JSON object per line, UTF-8, '\n'-terminated.
//
// Requests (supervisor -> worker):
//   {"op":"hello"}
//       -> {"reply":"hello","ok":true,"device":{...device.json...}}
//       -> {"reply":"hello","ok":false,"error":"no CUDA device found: ..."}
//   {"op":"evaluate","id":N, ...EvalRequest...}
//       -> zero or more {"reply":"progress","id":N,"case":"...","phase":"check|time"}
//       -> exactly one {"reply":"result","id":N,"healthy":bool,"result":{...Result...}}
//   {"op":"shutdown"}  -> the worker exits 0 without replying (EOF on stdin too).
//   A request the worker cannot parse (not JSON as util/json_read.h reads it,
//   so also a duplicate key or 1e999; not an object; "op" missing, not a
//   string or unknown; a field missing or of the wrong type:
//   EvalRequest::from_json throws kopt.protocol.001)
//       -> {"reply":"error","id":N,"error":"[kopt.protocol.001] $.cases[0].name: missing"}
//          ("id" copied from the request when it has an integer one; may be
//          absent). An evaluate request is decoded before the GPU is touched.
//   A request line longer than 64 MiB (fs::kJsonMaxBytes) is answered with an
//   error and the worker exits 3: the rest of the line cannot be skipped safely. Instead a
//          worker may answer a result with verdict worker_crash and healthy:false.
//          The supervisor records
//          the request as worker_crash with that message and replaces the worker.
//
// "healthy": false means the worker's CUDA context is broken (a sticky error
// such as CUDA_ERROR_ILLEGAL_ADDRESS); the worker exits right after replying,
// and the supervisor starts a new one for the next request.
//
// Progress replies double as heartbeats: the supervisor kills a worker that
// stays silent for longer than its watchdog.
//
// Anything else on stdout is a protocol error that kills the worker. A worker
// should therefore keep the protocol on a private duplicate of fd 1 and point
// fd 1 at stderr before running candidates (device-side printf writes to
// stdout). Replies are written with kopt::dump_json (invalid UTF-8 replaced),
// since the supervisor rejects lines that are not valid JSON.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "spec/launch.h"
#include "spec/spec.h"

namespace kopt::eval {

/// Screening's second stage (CaseSpec::screen_median_ms): the timed launches
/// whose median is compared with the limit before the rest are timed.
constexpr int kScreenLaunches = 10;

// The result types are plain data (model/result.h); eval's code names them unqualified.
using model::CaseResult;
using model::geomean;
using model::latency_stats;
using model::LatencyStats;
using model::parse_verdict;
using model::Result;
using model::Verdict;
using model::verdict_name;
namespace json_io = model::json_io;


/// Launch configuration resolved for one case.
using spec::LaunchDims;

/// One kernel argument resolved for one case.
struct ArgSpec {
  std::string name;
  bool is_buffer = true;
  spec::DType dtype = spec::DType::f32;
  spec::Role role = spec::Role::input;
  int64_t count = 0;              // buffers: elements
  spec::Generator generator;      // inputs/inouts
  // scalars: exactly one of these is meaningful according to dtype
  int64_t int_value = 0;
  double float_value = 0;
};

/// A compiled kernel as the worker sees it.
struct KernelRef {
  enum class Kind { cubin, cublas_sgemm };
  Kind kind = Kind::cubin;
  std::string cubin_path;  // Kind::cubin: file written by the compiler
  std::string entry;       // lowered (mangled) name to look up in the module
  std::string label;       // for messages, e.g. "candidate 0007" or "reference"
  /// The module's __constant__ symbols: constant name (CaseSpec::constants)
  /// -> lowered name to look up with cuModuleGetGlobal.
  std::map<std::string, std::string> symbols;
};

struct CaseSpec {
  std::string name;
  spec::CaseRole role = spec::CaseRole::correctness;
  std::map<std::string, int64_t> sizes;
  std::vector<ArgSpec> args;
  /// The signature's constants (spec::Role::constant): generated like inputs
  /// (count, generator) and copied into the kernel's __constant__ symbol of
  /// that name before it runs; never kernel arguments.
  std::vector<ArgSpec> constants;
  /// The candidate (reference) compiled for this case when it differs from
  /// EvalRequest::candidate (reference): a spec whose defines depend on the
  /// case's sizes compiles kernels per case.
  std::optional<KernelRef> kernel, reference_kernel;
  LaunchDims launch;                 // candidate's launch
  std::optional<LaunchDims> reference_launch;  // reference kernel's launch
  std::map<std::string, spec::Tolerance> tolerance;  // output name -> tolerance
  std::map<std::string, std::string> golden_npy;     // output name -> file (reference kind npy)
  /// Performance cases: when set, a probe launch (after the L2 flush, timed
  /// with events) comes first, and when it takes longer than this (ms) the
  /// case is not timed further (CaseResult::screened).
  std::optional<double> screen_ms;
  /// Performance cases: when set, the median of the first kScreenLaunches
  /// timed launches (after the warm-up) taking longer than this (ms) ends the
  /// case's timing there (CaseResult::screened, with those launches as its
  /// latency).
  std::optional<double> screen_median_ms;
  double weight = 1;  // spec::Case::weight: its share of the result's geomean (performance cases)
};

struct EvalRequest {
  int64_t id = 0;
  KernelRef candidate;
  KernelRef reference;           // kind cubin/cublas_sgemm; ignored when golden_npy is used
  bool reference_is_golden = false;
  spec::Reference::Gemm gemm;    // buffer/size names for cublas_sgemm
  std::vector<CaseSpec> cases;
  spec::Timing timing;
  spec::Checks checks;
  uint64_t seed = 0;
  bool time = true;              // false: check only (no timing)
  bool time_reference = false;   // also time the reference on the performance cases
  nlohmann::json to_json() const;
  static EvalRequest from_json(const nlohmann::json& j);
};

}  // namespace kopt::eval
