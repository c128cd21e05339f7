// `kopt generate`: what the CMake module's custom command runs. Produces the
// best validated kernel as <out-dir>/<name>.cu, its launch configuration
// as <out-dir>/<name>_launch.h and its compile options for nvcc as
// <out-dir>/<name>.nvcc_options, from (in this order of preference):
//   1. a tuning run on this machine's GPU (which also updates the tuning cache),
//   2. the tuning cache entry for this spec and the target GPU,
//   3. the spec's initial kernel,
// and says on stderr which one it used. Outputs are replaced only on success:
// a failing run leaves the previous generated files in place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/driver.h"
#include "spec/spec.h"

namespace kopt::model {
struct DispatchTree;
}

namespace kopt::gen {

struct GenerateOptions {
  driver::OptimizeOptions optimize;       // spec, overrides, budget, strategy, worker...
  std::string name;                    // kernel name: file names and the header's namespace
  std::filesystem::path out_dir;
  std::filesystem::path cache_file;    // tuning cache (JSON, committed by users); may be empty
  /// Where the updated tuning cache goes (empty: cache_file itself). When
  /// set, it is written on every success: cache_file's entries plus the new
  /// one after tuning, a copy of cache_file otherwise (nothing when
  /// cache_file does not exist), and cache_file is only read.
  std::filesystem::path cache_out;
  /// A Make-syntax depfile naming every file the run reads
  /// (gen/depfile.h), target <out_dir>/<name>.cu; written before tuning.
  std::filesystem::path depfile;
  std::string target_gpu;              // GPU name to take from the cache without a GPU (KOPT_TARGET_GPU)
  bool require_gpu = false;            // fail instead of falling back (KOPT_REQUIRE_GPU)
  bool tune = true;                    // false: never run the search, use the cache or the initial kernel
  std::filesystem::path from_run;      // a finished run folder to take the kernel (and variants) from
  /// --cases-from: a cases file or shape capture (docs/capture.md) used as
  /// --input-cases when it exists; while it does not, the spec's own cases
  /// are used and generate says so (optimize_kernel(CASES_FROM)).
  std::filesystem::path cases_from;
  /// --cases-out: the cases the kernel was generated for ({"cases": [...]},
  /// weights included), written with the outputs: the --input-cases of the
  /// tests that optimize_kernel() registers.
  std::filesystem::path cases_out;
};

/// Returns the exit code (0 ok; 2 bad input; 3 tuning failed; 77 no GPU with
/// require_gpu). Throws SpecError/UsageError for bad input, and
/// SpecError(kopt.gen.110) for shape-specialised variants compiled with
/// different options (one file compiles them all with one set).
/// Besides <name>.cu and <name>_launch.h it writes <name>.nvcc_options: the
/// NVRTC options the kernel was compiled with (the spec's
/// tuning.compile_options, then the kernel's kopt:options line) in nvcc's
/// spelling, as an nvcc --options-file (gen/nvcc_options.h); what it leaves
/// out is a note on stderr, what it cannot translate a warning.
int generate(const GenerateOptions& options);

/// The C++ header for a kernel source with kopt: annotations: namespace
/// kopt_<name> with `launch_config(sizes...)` returning grid, block and dynamic
/// shared memory, the entry point's name, the tuning parameters as constexpr
/// values, and (under nvcc) the kernel's declaration from the spec's
/// signature plus `kernel`, a pointer to it whatever the entry's name.
/// Size arguments come in the order of the signature's scalars (M, N, K for
/// SGEMM), then the remaining size names sorted; the header's comment says so.
/// Throws SpecError when the source lacks kopt:entry/grid/block lines, and
/// rather than return a header that would not compile: kopt.gen.107 when a
/// launch expression uses a name that is neither a size nor a kopt:param of
/// that kernel, kopt.gen.108 for a size or parameter name the header cannot
/// declare (a C++ keyword, one of its own names, not an identifier).
std::string launch_header(const std::string& name, const std::string& kernel_source, const spec::Spec& spec,
                          const std::string& origin);

/// One tuned kernel configuration of a (possibly shape-specialised) result.
struct KernelVariant {
  std::string source;  // self-contained kernel with kopt: annotations (best.cu form)
  std::string origin;  // file it came from, for messages
  std::string label;   // e.g. "BM=128,BN=256,..." (empty: from its kopt:param lines)
  std::vector<std::map<std::string, int64_t>> shapes;  // sizes of the cases it was chosen for
};

/// The launch header for one or more variants (variant 0: the best single
/// configuration). Besides launch_config(sizes...) (which picks the variant
/// by `dispatch`, the measured decision tree of model/dispatch.h, written out
/// as nested ifs; without one, the variant tuned on the nearest tuned shape)
/// it declares kVariants,
/// kVariantLabels[], launch_config_variant(v, sizes...), select_variant(),
/// and under nvcc kernels[], kernel (= kernels[0]) and kernel_for(config).
/// The spec's defines are locals of every function that evaluates a launch
/// expression; when some depend on the sizes (compiled into the kernel by
/// the application), tuned_for(sizes...) says whether the sizes give values
/// the tuning ran with.
/// With several variants the entry points are <entry>_v0, <entry>_v1, ...
/// Throws SpecError(kopt.gen.101) for a variant without entry/grid/block lines.
/// Throws SpecError(kopt.gen.109) when `dispatch` asks about a name that is
/// not a size of the workload, or picks a variant that does not exist.
std::string launch_header(const std::string& name, const std::vector<KernelVariant>& variants,
                          const spec::Spec& spec, const model::DispatchTree* dispatch = nullptr);

/// The generated .cu for the variants: one variant is its source unchanged;
/// several are each wrapped in a namespace with their tuning #defines reset
/// and their entry point renamed <entry>_v<i> by a macro; #include lines are
/// hoisted to the top, and the file's kopt: lines describe variant 0
/// (spec::join_variants; spec::split_variants reads such a file back).
std::string combine_variants(const std::vector<KernelVariant>& variants);

// The tuning cache's reader and writer are store/tuning_cache.h's.

}  // namespace kopt::gen
