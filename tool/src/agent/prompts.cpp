// The agent's prompts (see prompts.h).
#include "agent/prompts.h"

#include <set>
#include <sstream>

#include "agent/agent.h"
#include "agent/candidate.h"
#include "agent/common.h"
#include "spec/local_include.h"
#include "util/error.h"
#include "util/json.h"

namespace kopt::agent {

const char* const kOptimizeTask = "Optimize this kernel. Start by evaluating your first candidate.";
const char* const kOptimizeAfterDraftTask =
    "The workload is accepted and saved. Now optimize the kernel: the system "
    "message has the workload, the reference and the initial kernel.";

std::string describe_workload(const spec::Spec& s) {
  std::ostringstream o;
  o << "Workload: " << s.name << "\n";
  if (!s.description.empty()) o << "Description: " << s.description << "\n";
  o << "\nKernel parameters, in this order (buffers are device pointers):\n";
  for (const auto& p : s.signature) {
    if (p.is_buffer && p.role == spec::Role::constant)
      o << "  (not a parameter) __constant__ " << spec::dtype_c_type(p.dtype) << " " << p.name << "[...]  // filled "
        << "before every launch, " << p.count.text() << " elements\n";
    else if (p.is_buffer)
      o << "  " << (p.role == spec::Role::input ? "const " : "") << spec::dtype_c_type(p.dtype) << "* " << p.name << "  // "
        << spec::role_name(p.role) << ", " << p.count.text() << " elements\n";
    else
      o << "  " << spec::dtype_c_type(p.dtype) << " " << p.name << "  // scalar = "
        << (p.float_value ? fmt(*p.float_value, 17) : p.value.text()) << "\n";
  }
  std::set<std::string> sizes;
  for (const auto& c : s.cases)
    for (const auto& [k, v] : c.sizes) sizes.insert(k);
  o << "\nCases (" << s.cases.size() << "; correctness cases are checked, performance cases are checked and timed):\n";
  for (const auto& c : s.cases) {
    o << "  " << c.name << " (" << spec::case_role_name(c.role) << "):";
    for (const auto& [k, v] : c.sizes) o << " " << k << "=" << v;
    o << "\n";
  }
  o << "Size names usable in launch expressions:";
  for (const auto& n : sizes) o << " " << n;
  o << "\n\nTolerances (per output, against the reference):\n";
  for (const auto& [name, t] : s.tolerance) {
    if (t.kind == spec::Tolerance::Kind::gemm)
      o << "  " << name << ": gemm bound |C-R| <= " << fmt(t.factor) << " * sqrt(K) * 2^-24 * sqrt(sum_k (a_ik*b_kj)^2) + 2^-24*|R| (FP32 accumulation; TF32/FP16 rounding fails)\n";
    else if (t.kind == spec::Tolerance::Kind::sum)
      o << "  " << name << ": sum of " << t.terms.text() << " terms in any order; the output holds "
        << (t.partials.empty() ? (t.totals.empty() ? std::string("1") : t.totals.text()) + " total(s)"
                               : "totals of " + t.partials.text() + " partials each")
        << " as consecutive partial sums, added up and compared with the reference's totals within "
        << fmt(t.atol) << " + (" << fmt(t.rtol) << " + " << fmt(t.factor)
        << " * sqrt(terms) * u) * |ref| (u: unit roundoff of the output type)\n";
    else
      o << "  " << name << ": allclose |out-ref| <= " << fmt(t.atol) << " + " << fmt(t.rtol) << " * |ref|"
        << (t.rel_l2 ? ", relative L2 <= " + fmt(*t.rel_l2) : std::string()) << "\n";
  }
  o << "NaN or Inf where the reference is finite always fails.\n";
  return o.str();
}

std::string describe_reference(const spec::Spec& s) {
  switch (s.reference.kind) {
    case spec::Reference::Kind::cublas: return "The reference is cuBLAS SGEMM in FP32 (no TF32).\n";
    case spec::Reference::Kind::npy: return "The reference is golden outputs from .npy files.\n";
    case spec::Reference::Kind::kernel: break;
  }
  std::string src;
  try {
    src = spec::read_kernel_text(s.reference.kernel.source);
  } catch (const Error&) {
    src = "(unreadable)";
  }
  const spec::Launch l = s.reference.kernel.launch ? *s.reference.kernel.launch : s.launch;
  return "The reference kernel (the oracle and the speed baseline), entry " + s.reference.kernel.entry + ", " +
         launch_text(l) + ":\n```cuda\n" + clip(src, 12000) + "\n```\n";
}

std::string rules_text(const std::string& arch, bool compile_only, bool hybrid, const model::Budget& budget,
                       int max_repairs, int template_evals) {
  std::ostringstream o;
  o << "How candidates are judged: evaluate_candidate compiles your complete kernel source with NVRTC (C++17, -arch="
    << arch
    << "; device code only: no host code, no main, no standard library host headers; CUDA headers such as "
       "cuda_fp16.h and cuda_pipeline.h are available), launches it with the launch you give, and checks every case "
       "against the reference: outputs are poisoned with NaN before every launch, buffers end against unmapped "
       "pages (out-of-bounds accesses are caught), inputs must not be modified, three trials use fresh inputs, "
       "repeated runs must give identical bits. Performance cases are then timed with CUDA events (median of many "
       "launches); the score is the geometric mean over performance cases (lower is better). Never special-case "
       "the test data or skip work: only correct kernels count.\n"
       "Launch: grid and block are 1 to 3 integer expressions of the case sizes, shared_bytes one expression "
       "(dynamic shared memory; over 48 KB is allowed, the harness opts in). Syntax: integers, size names, + - * / % "
       "( ), comparisons, && ||, and ceil_div(a,b), min(a,b,..), max(a,b,..), abs, align_up(a,b), pow2, log2, "
       "is_pow2. Example: {\"grid\": [\"ceil_div(N, 256)\", 1, 1], \"block\": [256, 1, 1], \"shared_bytes\": 0}. "
       "Grid y and z are at most 65535. Use extern \"C\" __global__ for the entry point (C++ names work too).\n";
  if (compile_only)
    o << "THIS MACHINE HAS NO GPU: candidates are compiled for " << arch
      << " only, never run; the verdict 'compiled' means NVRTC accepted the kernel (correctness and speed are "
         "unknown). Focus on kernels that are correct by construction.\n";
  if (hybrid)
    o << "Hybrid mode: prefer propose_template: write the kernel with compile-time parameters (macros such as "
         "BM, BN, TM, passed as -D NAME=VALUE; launch expressions may use them too), give each parameter's values "
         "and optional constraints; the search evaluates up to "
      << template_evals << " configurations and returns the results. evaluate_candidate is still available.\n";
  o << "Work in small steps: evaluate, read the verdict and the compile log, repair failures, then make it faster "
       "(read_optimization_notes, profile_candidate, get_history help). When you have nothing better to try, reply "
       "with a short summary and no tool call: that ends the run.\nBudget: ";
  const int64_t turns = budget.turn_limit(), evals = budget.evaluations;
  if (turns > 0 && evals > 0) o << "at most " << turns << " model turns and " << evals << " evaluations; ";
  if (turns > 0 && evals == 0) o << "at most " << turns << " model turns; ";
  if (turns == 0 && evals > 0) o << "at most " << evals << " evaluations; ";
  if (budget.patience > 0)
    o << "the run stops after " << budget.patience << " evaluations in a row without a faster kernel; ";
  o << "the run stops after " << (max_repairs + 1) << " failed candidates in a row.\n";
  return o.str();
}

std::string draft_prompt(const std::string& device_text) {
  return std::string(
             "You draft a benchmark workload for one CUDA kernel from the user's description, for KernelOptimizer "
             "(kopt), which will then optimize the kernel. Call submit_workload once with:\n"
             "- spec: a workload spec object (format below);\n"
             "- reference_source: a simple, obviously correct CUDA kernel: the oracle every candidate is checked "
             "against (accumulate in double where that helps accuracy; deterministic: no float atomics); its "
             "__global__ function is spec.reference.entry;\n"
             "- initial_source: a straightforward first kernel to optimize; its function is spec.initial.entry.\n"
             "Both are compiled with NVRTC (C++17, device code only). Validation errors come back to you: fix them "
             "and call submit_workload again.\n\n"
             "Spec format (JSON): {\"format_version\": 1, \"name\": identifier, \"description\": text, "
             "\"signature\": [...], \"launch\": {\"grid\": [3 exprs], \"block\": [3 exprs], \"shared_bytes\": expr}, "
             "\"reference\": {\"kind\": \"kernel\", \"entry\": name, \"launch\"?: {...}}, \"initial\": {\"entry\": "
             "name, \"launch\"?: {...}}, \"cases\": [{\"name\": ..., \"role\": \"correctness\"|\"performance\", "
             "\"sizes\": {\"N\": 1000}}], \"tolerance\": {\"<output>\": {\"kind\": \"allclose\", \"rtol\": r, "
             "\"atol\": a}}}.\n"
             "signature: the kernel's parameters in order. Buffers: {\"name\", \"type\", \"role\": "
             "input|output|inout, \"count\": expression of the sizes, \"init\"?: {\"kind\": "
             "uniform|normal|int_range|constant|iota, ...}}; scalars: {\"name\", \"type\", \"value\": expression or "
             "a float number}. Types: half, bfloat16, float, double, int8, uint8, int32, uint32, int64, uint64.\n"
             "Expressions: integers, size names, + - * / % ( ), comparisons, && ||, ceil_div, min, max, abs, "
             "align_up, pow2, log2, is_pow2. Every name must be a size of every case.\n"
             "Cases: correctness cases with small and odd sizes (1, 17, 1000, and mixed shapes such as 1000x1x17, "
             "1x1000x17, 127x129) and 1 to 3 performance cases big enough to time (tens of MB). Tolerances: 0/0 for "
             "pure data movement, about rtol 1e-5 / atol 1e-5 for float arithmetic (larger for long sums).\n\n") +
         device_text;
}

std::string draft_task(const std::string& description) {
  return "Draft the workload for this kernel:\n" + description;
}

std::string device_text(const std::optional<model::DeviceInfo>& device, const std::string& arch) {
  if (device) return "The GPU (CUDA device properties):\n" + dump_json(device->to_json()) + "\n";
  return "No GPU on this machine: kernels are compiled for " + arch +
         " (assume an NVIDIA H100/H200 class device: 132 SMs, 227 KB shared memory per block with opt-in, 65536 "
         "registers per SM) but not run.\n";
}

std::string optimize_prompt(const spec::Spec& s, const ShownKernel* shown, std::optional<double> reference_geomean_ms,
                            const std::string& device_text, const std::string& rules) {
  std::ostringstream o;
  o << "You are an expert CUDA performance engineer. You optimize one CUDA kernel for speed on the GPU below, "
       "keeping it exactly as correct as the reference allows.\n\n"
    << describe_workload(s) << "\n"
    << describe_reference(s) << "\n";
  if (shown && shown->attempt) {
    const model::Attempt* cur = shown->attempt;
    o << (shown->is_best ? "The current best kernel" : "The initial kernel") << " (" << cur->label << ", entry "
      << shown->entry << ", " << launch_text(shown->launch) << "; " << model::verdict_name(cur->result.verdict);
    if (cur->result.geomean_ms) o << ", geomean " << fmt(*cur->result.geomean_ms) << " ms";
    if (reference_geomean_ms) o << "; the reference's geomean is " << fmt(*reference_geomean_ms) << " ms";
    o << "):\n```cuda\n" << clip(cur->source, 16000) << "\n```\n\n";
  }
  o << device_text << "\n" << rules;
  o << "Optimization notes topics (read_optimization_notes):";
  for (const auto& [t, text] : optimization_notes()) o << " " << t;
  o << "\n";
  return o.str();
}

}  // namespace kopt::agent
