// The workload spec: what kernel is optimized, on which inputs, checked
// against what, timed how. Loaded from JSON (format documented in
// docs/spec-format.md, linked from README.md "Workload spec"), validated on load.
//
// Every load error is a kopt::SpecError whose message names the file, the JSON
// path (e.g. "$.cases[3].sizes.M") and what was expected, e.g.
//   [kopt.spec.104] sgemm.json: $.signature[2].count: expected an expression
//   string or an integer, got a boolean
//
// Error ids (stable; docs/spec-format.md lists them with examples):
//   (reading the file: kopt.io.* of util/fs.h; its JSON: kopt.json.* of
//   util/json_read.h; 100 and 101 are no longer used)
//   102 unsupported format_version    103 missing required key
//   104 wrong JSON type or length     105 unknown key (lists the allowed ones)
//   106 invalid name                  107 duplicate name
//   108 unknown type (dtype)          109 unknown role
//   110 unknown kind or op            111 expression does not parse
//   112 expression uses a name that is neither a size of every case nor a
//       tuning parameter nor a define              113 expression cannot be evaluated for a case
//   114 buffer count <= 0 for a case  115 size not a positive integer
//   116 no output buffer              117 no cases
//   118 tolerance for a name that is not an output buffer
//   119 number out of range           120 tuning parameter without values
//   121 duplicate tuning value        122 file not found
//   123 cublas/gemm name not in the signature or sizes
//   124 cublas buffer of the wrong type, role or count
//   125 launch missing                126 launch dimension < 1 (or shared < 0) for a case
//   127 scalar value invalid for its type
//   128 parameter both buffer and scalar, or "init" on an output
//   129 input override for something that is not an input buffer
//   130 tuning parameter (or bindings_for parameter) shadows a size
//   131 npy reference outputs do not match the output buffers
//   132 .npy file (input or golden) of the wrong dtype or element count
//   133 tuning constraint names a size     134 traffic_bytes without block_work
//   135 tuning seed that is no whole configuration
//   136 defines that use each other in a cycle
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/expr.h"

namespace kopt::spec {

/// Element types of kernel buffers and scalars.
enum class DType { f16, bf16, f32, f64, i8, u8, i32, u32, i64, u64 };

/// Size of one element in bytes.
size_t dtype_size(DType t);
/// Spec spelling: "half", "bfloat16", "float", "double", "int8", "uint8",
/// "int32", "uint32", "int64", "uint64".
const char* dtype_name(DType t);
/// The CUDA C++ type of an element: "__half", "__nv_bfloat16", "float",
/// "double", "signed char", "unsigned char", "int", "unsigned int",
/// "long long", "unsigned long long".
const char* dtype_c_type(DType t);
/// Parses the spec spelling (also accepts "float32", "float64", "float16",
/// "fp32", "fp16", "bf16", "int", "uint"). Returns nullopt if unknown.
std::optional<DType> parse_dtype(const std::string& name);
bool dtype_is_float(DType t);

/// A buffer's role. `constant`: an input that lives in a `__constant__`
/// symbol of the kernel's module, named like the entry, instead of being a
/// kernel parameter: filled before the kernel runs, never an argument.
enum class Role { input, output, inout, constant };
const char* role_name(Role r);

/// How the initial contents of an input (or inout) buffer are made.
/// No script is ever executed to make inputs: these are the only kinds.
struct Generator {
  enum class Kind { uniform, normal, int_range, constant, iota, npy, view };
  Kind kind = Kind::uniform;
  double low = -1.0, high = 1.0;   // uniform: [low, high)
  double mean = 0.0, stddev = 1.0; // normal
  int64_t int_low = 0, int_high = 9;  // int_range: [int_low, int_high] inclusive
  double value = 0.0;              // constant
  double start = 0.0, step = 1.0;  // iota: start + i*step
  std::filesystem::path npy;       // npy: absolute path; may contain "{case}"
  /// view: element i is element view_start + i * view_stride of buffer
  /// `view_of` (an input, inout or constant of the signature made by another
  /// kind), of the same case and trial; made by spec::view_elements.
  std::string view_of;
  int64_t view_start = 0, view_stride = 1;
  /// The trial-1 contents in every trial (no fresh contents in trials 2 and
  /// 3; an npy file's own contents): for data whose parts must agree, such as
  /// a polygon and its edges' slopes in two files. Default: fresh.
  bool fixed = false;
  nlohmann::json to_json() const;
  static Generator from_json(const nlohmann::json& j);  // trusted (already validated) input
};
const char* generator_kind_name(Generator::Kind k);

/// One kernel parameter, in signature order.
struct Param {
  std::string name;
  bool is_buffer = true;
  DType dtype = DType::f32;
  Role role = Role::input;     // buffers only (Role::constant: a __constant__ symbol, not a parameter)
  Expr count;                  // buffers: element count as an expression of sizes
  // Scalars: an integer expression, or a floating literal (float/double scalars).
  Expr value;
  std::optional<double> float_value;
  Generator generator;         // inputs and inouts (default: uniform [-1, 1))
};

enum class CaseRole { correctness, performance };
const char* case_role_name(CaseRole r);

struct Case {
  std::string name;
  std::map<std::string, int64_t> sizes;  // e.g. {"M":4096,"N":2048,"K":1024}
  CaseRole role = CaseRole::correctness;
  std::map<std::string, Generator> input_overrides;  // buffer name -> generator
  /// How much this case counts in the geometric mean of the performance
  /// cases (exp(sum w log t / sum w)); > 0, default 1. A shape captured from
  /// the application (spec/capture.h) weighs as often as it ran.
  double weight = 1;
  /// The value of each of the spec's `defines` (Spec::defines) for this case,
  /// filled in by the loader: what bindings_for() binds beside the sizes and
  /// what every kernel is compiled with (-D NAME=VALUE) for this case. Not
  /// written by to_json (the spec's "defines" are).
  std::map<std::string, int64_t> defines;
};

/// Grid, block and dynamic shared memory, as expressions of the case's sizes
/// and the tuning parameters.
struct Launch {
  Expr grid[3];
  Expr block[3];
  Expr shared_bytes;  // dynamic shared memory in bytes
  /// Optional ("static_shared_bytes"; empty when absent): the static
  /// __shared__ memory the kernel declares, in bytes, as the kernel's author
  /// states it (e.g. "(TILE + 2) * (TILE + 2) * 4"). Not needed to launch; a
  /// template's configurations whose value is over the device's limits are
  /// left out before compiling (search/limits.h).
  Expr static_shared_bytes;
  /// Optional ("block_work"; empty when absent): the work one thread block does, in any unit
  /// proportional to its run time when the GPU is busy (SGEMM: the multiply-adds of its tile,
  /// BM * BN * K / SPLITK). It lets the dispatch model count waves (docs/dispatch.md).
  Expr block_work;
  /// Optional ("traffic_bytes"; empty when absent): the bytes the whole launch moves to and from
  /// its blocks (SGEMM: every block's A and B tiles, plus split-K's partial sums exchanged in the
  /// cluster's distributed shared memory). The dispatch model's second term (docs/dispatch.md).
  Expr traffic_bytes;
  /// Where a launch read from a kernel's `// kopt:` lines came from: the file
  /// and the line of each of its lines (0: not given there), so that an error
  /// in one names the file and line. Empty `file` for a launch from the
  /// spec's JSON. Neither compared (==) nor written (to_json).
  struct Origin {
    std::string file;
    int grid_line = 0, block_line = 0, shared_line = 0, static_shared_line = 0;
  } origin;
};

/// "k.cu:3: kopt:grid" for a launch from annotations (`what`: "grid", "block",
/// "shared" or "static_shared"), "" for one from the spec's JSON.
std::string launch_origin(const Launch& l, const std::string& what);

/// A kernel given as CUDA C++ source: file, entry point, launch, options.
struct KernelSource {
  std::filesystem::path source;       // absolute path of the .cu file
  std::string entry;                  // __global__ function name (extern "C" or C++)
  std::optional<Launch> launch;       // defaults to Spec::launch when absent
  std::vector<std::string> compile_options;  // extra NVRTC options
  /// -D NAME=VALUE for this kernel alone. For the initial and reference
  /// kernels a define may name a tuning parameter: it is then the value that
  /// kernel runs with (its launch expressions see it too).
  std::map<std::string, int64_t> defines;
  /// The launch the source's own `// kopt:grid/block/shared` lines give
  /// (nullopt when it has none), read when the spec is loaded. The kernel
  /// runs with `launch` when given, else with this, else with the spec's
  /// top-level launch (kernel_launch()). Neither compared nor written: it is
  /// the file's, and the file is fingerprinted.
  std::optional<Launch> annotated_launch;
  /// The source's `// kopt:param NAME=VALUE` lines (a previous run's best.cu
  /// carries its configuration so): values its launch may use. Neither
  /// compared nor written, like annotated_launch.
  std::map<std::string, int64_t> annotated_params;
};

/// The oracle outputs are checked against. Also the speed baseline.
struct Reference {
  enum class Kind { kernel, npy, cublas };
  Kind kind = Kind::kernel;
  KernelSource kernel;                                // Kind::kernel
  std::map<std::string, std::filesystem::path> npy;   // Kind::npy: output -> path ("{case}" expands)
  // Kind::cublas: a GEMM-shaped workload, row-major C[M,N] = A[M,K] * B[K,N].
  // Names of the buffers and sizes in the signature / cases.
  struct Gemm {
    std::string a = "A", b = "B", c = "C";
    std::string m = "M", n = "N", k = "K";
  } gemm;
};
const char* reference_kind_name(Reference::Kind k);

/// How an output is compared with the reference.
struct Tolerance {
  enum class Kind { allclose, gemm, sum };
  Kind kind = Kind::allclose;
  // allclose: |out - ref| <= atol + rtol * |ref| for every element.
  double rtol = 1e-5, atol = 1e-6;
  std::optional<double> rel_l2;  // optional extra bound on ||out-ref||_2/||ref||_2
  // gemm: |out - ref| <= factor * sqrt(K) * 2^-24 * sqrt(sum_k (a_ik*b_kj)^2)
  // (a K-aware FP32 accumulation bound; see README "Tolerances").
  // sum: the same factor (eval::sum_allowed_error).
  double factor = 8.0;
  std::string a = "A", b = "B", m = "M", n = "N", k = "K";
  // sum: the output holds G totals, each as P consecutive partial sums in
  // any order (P = 1: the totals themselves); the reference writes the G
  // totals into its first G elements. Each total adds up `terms` terms; the
  // partials are added up and compared within atol + (rtol + factor *
  // sqrt(terms) * u) * |ref|, u the unit roundoff of the output's type
  // (eval/validate.h); rtol (default 0 for this kind) allows for each term's
  // own error (an exp, a quotient).
  // `partials` gives P, or `totals` gives G (at most one of them is set;
  // neither: one total). The expressions name sizes, defines and tuning
  // parameters; their values for one case and candidate are terms_value and
  // partials_value (filled in by the evaluator: eval::CaseSpec).
  Expr terms, partials, totals;
  int64_t terms_value = 1, partials_value = 1;
};

/// P, the partial sums per total of a sum tolerance on an output of `count`
/// elements with names bound by `b`: `partials`, or count / `totals` (one
/// total when neither is set). 0 when that is below 1 or count is no whole
/// number of totals of P partials. Throws SpecError (kopt.expr.*) when an
/// expression cannot be evaluated.
int64_t sum_partials(const Tolerance& t, int64_t count, const Bindings& b);

struct Timing {
  int warmup = 10;
  int iterations = 100;
  bool flush_l2 = true;  // L2 flushed before every timed launch, as in deployment (docs/evaluation.md)
  double launch_timeout_ms = 10000;  // watchdog for one launch
};

/// How hard the harness checks a candidate (see README "Evaluation").
struct Checks {
  int trials = 3;   // 1: seeded inputs; 2: new contents in the same buffers; 3: new buffers
  int repeats = 3;  // runs of trial 1 compared bit for bit
};

struct TuningParam {
  std::string name;
  std::vector<int64_t> values;
};

struct Tuning {
  std::vector<TuningParam> params;
  std::vector<Expr> constraints;        // each must evaluate non-zero
  std::vector<std::string> compile_options;
  /// "seeds": whole configurations (every parameter, each at one of its
  /// values) the parameter search evaluates first, in this order; a class
  /// search (propose/class_search.h) evaluates them first in every class.
  /// One that breaks a constraint on the GPU at hand is reported and skipped.
  /// They change the search's order only, not the workload: the spec's
  /// fingerprint leaves them out (store/fingerprint.h).
  std::vector<std::map<std::string, int64_t>> seeds;
};

struct Spec {
  std::filesystem::path path;  // the file it was loaded from (absolute)
  std::string name, description;
  uint64_t seed = 0x5eed;
  std::vector<Param> signature;
  std::vector<Case> cases;
  Reference reference;
  std::optional<KernelSource> initial;
  /// "template": a tunable kernel whose tuning parameters (Spec::tuning) are
  /// passed as -D defines; what `kopt optimize` searches.
  std::optional<KernelSource> template_kernel;
  /// "baseline": {"kind": "cublas", "op": "sgemm", "a": "A", ...}: a library
  /// implementation timed beside the candidates (GEMM-shaped workloads).
  std::optional<Reference::Gemm> cublas_baseline;
  Launch launch;
  std::map<std::string, Tolerance> tolerance;  // output name -> tolerance
  Timing timing;
  Checks checks;
  Tuning tuning;
  /// "defines": NAME -> an integer, or an expression of the case's sizes and
  /// of other defines (no cycle: kopt.spec.136). Every kernel (reference, initial, template,
  /// candidates) is compiled with -D NAME=VALUE, and every expression may use
  /// the names. A define whose value names a size (a "case define") differs
  /// per case: kernels are then compiled once per distinct set of values.
  /// Per case values: Case::defines.
  std::map<std::string, Expr> defines;

  const Param* find_param(const std::string& name) const;
  /// True when some define's value depends on a case's sizes: kernels are
  /// compiled per case (Case::defines differ).
  bool has_case_defines() const;
  /// The defines whose value names no size: the same for every case, and
  /// usable in tuning constraints.
  std::map<std::string, int64_t> constant_defines() const;
  std::vector<const Case*> performance_cases() const;
};

/// Loads and validates a spec file. Relative paths in it are relative to the
/// file's folder. Throws SpecError naming file and JSON path: kopt.io.* when
/// the file cannot be read (util/fs.h), kopt.json.* when it is not valid JSON
/// (util/json_read.h: also duplicate keys, 1e999), kopt.spec.1xx otherwise.
Spec load_spec(const std::filesystem::path& file);

/// Where a top-level section of a spec document came from when it was not
/// the spec file (optimize's --input-cases replaces "cases"): errors in it
/// name `file` and the section's own path there (`path`: "$" when the file
/// holds the section itself, "$.cases" when it holds {"cases": [...]}).
struct SectionOrigin {
  std::string file;
  std::string path = "$";
};

/// Same, from an already parsed document; `origin` is used in messages and to
/// resolve relative paths; `sections` maps top-level keys ("cases") to the
/// file they came from.
Spec parse_spec(const nlohmann::json& doc, const std::filesystem::path& origin,
                const std::map<std::string, SectionOrigin>& sections = {});

/// The names of s.defines in an order where each comes after the defines its
/// value uses (the loader refuses cycles: kopt.spec.136).
std::vector<std::string> define_order(const Spec& s);

/// The launch kernel `k` runs with: its own `launch`, else the one its
/// source's kopt: lines give, else the spec's top-level launch.
const Launch& kernel_launch(const Spec& s, const KernelSource& k);

/// The resolved spec as JSON (absolute paths, defaults filled in): what a run
/// folder stores as spec.json. parse_spec(to_json(s), s.path) == s.
nlohmann::json to_json(const Spec& s);

/// Bindings for one case: its sizes, its defines (Case::defines) and the
/// given tuning parameter values. Throws SpecError(kopt.spec.130) if a
/// parameter name shadows a size or a define.
Bindings bindings_for(const Case& c, const std::map<std::string, int64_t>& params);

/// The bytes of every buffer of the signature, as one expression of the
/// sizes (and any tuning parameter a count names): sum of
/// (count) * dtype_size over the buffers, e.g. "(M*K)*4 + (K*N)*4 + (M*N)*4"
/// for SGEMM. What a launch reads and writes at the least; the dispatch's
/// cost model takes it as its data term (model/dispatch.h). Empty when the
/// signature has no buffer.
Expr data_bytes_expr(const Spec& spec);

/// Names that tuning constraints may use besides tuning parameters and
/// constant defines: device limits that the optimizer binds
/// (search/device_constants.h says what each means): MAX_SHARED_PER_BLOCK,
/// MAX_THREADS_PER_BLOCK, REGS_PER_SM, SM_COUNT, WARP_SIZE,
/// MAX_STATIC_SHARED_PER_BLOCK, MAX_SHARED_PER_SM, MAX_THREADS_PER_SM,
/// MAX_REGS_PER_BLOCK, MAX_REGS_PER_THREAD. A constraint naming anything else is a
/// load error (kopt.spec.112); add a name here when the optimizer binds a new one.
const std::vector<std::string>& constraint_constant_names();

/// Replaces every "{case}" in `path` by `case_name` (golden and input .npy paths).
std::filesystem::path expand_case(const std::filesystem::path& path, const std::string& case_name);

/// Field-by-field equality of the fields that matter (Expr compares by text,
/// doubles exactly). Fields a kind does not use are ignored: e.g. `mean` of a
/// uniform Generator, `rtol` of a gemm Tolerance, `generator` of an output
/// buffer, `kernel` of an npy Reference.
bool operator==(const Generator& a, const Generator& b);
bool operator==(const Param& a, const Param& b);
bool operator==(const Case& a, const Case& b);
bool operator==(const Launch& a, const Launch& b);
bool operator==(const KernelSource& a, const KernelSource& b);
bool operator==(const Reference::Gemm& a, const Reference::Gemm& b);
bool operator==(const Reference& a, const Reference& b);
bool operator==(const Tolerance& a, const Tolerance& b);
bool operator==(const Timing& a, const Timing& b);
bool operator==(const Checks& a, const Checks& b);
bool operator==(const TuningParam& a, const TuningParam& b);
bool operator==(const Tuning& a, const Tuning& b);
bool operator==(const Spec& a, const Spec& b);

}  // namespace kopt::spec
