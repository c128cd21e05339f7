// `#pragma unroll NAME` in a generated kernel file.
//
// Kernel Tuner's users name a tuning parameter in the pragma itself
// (`#pragma unroll loop_unroll_factor_0`). kopt compiles candidates with
// NVRTC, whose preprocessor expands macros in `#pragma unroll ARG` and in
// `_Pragma("unroll ARG")`; nvcc's does not ("identifier ... is undefined"),
// so the generated file, which #defines the tuned values, would not compile
// in the application's build. Before the variants are joined, each one's
// pragmas are written so that nvcc reads what NVRTC read when it was tuned:
//
//   - ARG over names the generated file fixes for that variant (the caller
//     decides which: generate passes a file of one variant's tuning
//     parameters as macros, since their #ifndef defaults yield to a -D; the
//     workload's defines that name no size are fixed) and that the
//     kernel's source does not #define again (other than a default right
//     under `#ifndef NAME`, or under `#ifndef X` for such a name X, as Kernel
//     Tuner's defaults under `#ifndef kernel_tuner`) nor #undef: the value,
//     evaluated as C (spec::Expr, only
//     for an ARG of C's operators alone, which spec::Expr reads as C does):
//       value >= 1: `#pragma unroll VALUE` (1 keeps the loop rolled);
//       value <= 0: the pragma is left out, in a comment. NVRTC (CUDA 13.0)
//                   ignores it with warning #20168-D "the unroll value cannot
//                   be zero or negative, ignoring pragma for this loop", and
//                   its code is that of the loop without the pragma, byte for
//                   byte (nvcc says and does the same); Kernel Tuner removes
//                   the line for 0 too.
//   - ARG that uses another macro (a define that depends on the sizes, which
//     the application passes with -D; a macro of the kernel's source; a name
//     the source #defines again): `KOPT_PRAGMA_UNROLL(ARG)`, which the file
//     defines (unroll_macro_definition): it expands ARG at that line, as
//     NVRTC did, then makes the pragma with _Pragma.
//   - ARG without a macro (a literal, a constexpr variable): as it is.
// The same for the uses of a function-like macro that makes a pragma of its
// argument, the idiom `#define PRAGMA(x) _Pragma(#x)` then `PRAGMA(unroll
// ARG)` (the # stringizes ARG unexpanded, and NVRTC expands it in the
// pragma): ARG is replaced by its value as above (a value below 1 too: the
// use stays, since the macro's body may do more than the pragma); an ARG
// that uses another macro becomes KOPT_PRAGMA_UNROLL(ARG) when the macro's
// body is the _Pragma alone, and is left as it is and reported when the body
// does more or the macro is #defined more than once or #undef'd. A use in
// another macro's #define whose ARG names that macro's parameters is left
// to it (its argument is substituted there).
// Pragmas in comments and string literals are not touched; a `#pragma
// unroll` line continued with '\' is left as it is and reported.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kopt::gen {

/// The names one variant's pragmas may take a value from.
struct UnrollNames {
  /// Names whose value the generated file fixes: the variant's tuning
  /// parameters (its kopt:param lines and #defines) and the workload's
  /// constant defines (the file's prelude).
  std::map<std::string, int64_t> fixed;
  /// Other names that were macros when kopt compiled the variant: the
  /// workload's defines that depend on the sizes (the application's -D).
  std::set<std::string> macros;
};

/// What rewrite_unroll_pragmas did, for generate's messages.
struct UnrollRewrite {
  std::string source;                   // the variant's source, rewritten
  std::vector<std::string> valued;      // "ARG=VALUE" of each pragma written with its value
  std::vector<std::string> left_out;    // "ARG=VALUE" of each pragma left out (VALUE <= 0)
  /// "ARG (reason)" of each pragma written KOPT_PRAGMA_UNROLL(ARG): the file
  /// needs unroll_macro_definition() before this source.
  std::vector<std::string> through_macro;
  std::vector<std::string> continued;   // "line N: ARG" of pragma lines continued with '\', left as they are
  /// "line N: NAME(unroll ARG) (reason)" of each use of a stringizing macro
  /// left as it is: its body does more than the pragma, or it is #defined
  /// more than once or #undef'd.
  std::vector<std::string> not_rewritten;
};

/// `source` (one variant, best.cu form) with its `#pragma unroll ARG` and
/// `_Pragma("unroll ARG")` written for nvcc as the file's comment says.
/// Lines stay lines (line numbers unchanged). Never throws on odd input: a
/// pragma it cannot read is left as it is.
UnrollRewrite rewrite_unroll_pragmas(const std::string& source, const UnrollNames& names);

/// The #ifndef-guarded definition of KOPT_PRAGMA_UNROLL(...), with a comment
/// saying why: whole lines, no blank line before or after.
std::string unroll_macro_definition();

}  // namespace kopt::gen
