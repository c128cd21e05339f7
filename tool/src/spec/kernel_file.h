// The kernel-file format: the one place that reads and writes it.
//
// A kernel file is CUDA C++ source whose comment lines describe how to run it:
//
//   annotation lines   "// kopt:KEY VALUE" for entry, grid, block, shared,
//                      options and param (parsed by parse_annotations, see
//                      annotations.h; the first line of a key wins)
//   superseded lines   "// kopt-superseded:KEY VALUE": an annotation that a
//                      header or trailer written around the source replaces
//                      (same line count, so compiler line numbers stay put)
//   self-contained     best.cu and variants/v<N>.cu of a run folder: a
//   kernel file        comment header (header_block), the annotations, the
//                      tuning parameters as #ifndef-guarded #defines, then the
//                      source with the lines the header supersedes neutralised
//                      (self_contained_kernel_file)
//   evaluated-with     candidates/NNNN/kernel.cu of an agent run: the source
//   trailer            with its whole-line annotations neutralised, then the
//                      entry, launch and options it was evaluated with
//                      (with_evaluated_trailer)
//   variant blocks     a generated file holding shape-specialised variants:
//                      variant 0's annotations, the hoisted #include lines,
//                      then one "// ===== variant <i>: <label> =====" block a
//                      variant whose own annotations read "// kopt-variant:"
//                      (join_variants, split_variants)
//
// Plain text in, plain text out: nothing here reads the run folder, the
// device or the compiler (spec may use util and model; this uses util).
// The callers fill in what only they know: the run folder the header's
// values (store/store), gen the variants to join, the agent the launch it
// evaluated a candidate with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "spec/annotations.h"
#include "spec/candidate.h"
#include "spec/spec.h"

namespace kopt::spec {

// ---------------------------------------------------------------------------
// Parse (parse_annotations itself is in annotations.h)

/// The launch the annotations give: grid and block with missing dimensions
/// 1, shared 0; nullopt when the source has none of grid, block, shared.
std::optional<Launch> annotated_launch(const Annotations& a);

/// A Candidate from a kernel file's text: its source, entry, launch, options
/// and params from its annotations. `name` becomes source_name and label;
/// `origin` names the file in errors. Throws SpecError(kopt.annot.4xx) on bad
/// annotations.
Candidate candidate_from_text(const std::string& text, const std::string& name, const std::string& origin);

/// Reads a .cu file into a Candidate, applying its kopt: annotations.
/// Throws SpecError on unreadable files (kopt.io.001) or bad annotations.
Candidate candidate_from_file(const std::filesystem::path& file);

/// Like candidate_from_text, but a generated file holding shape-specialised
/// variants (see join_variants) gives one candidate per variant: the whole
/// file's source and options, entry <entry>_v<i>, that variant's launch and
/// parameters, label "<name> (variant <i>)". Throws as candidate_from_text
/// does, and SpecError(kopt.annot.405) for a variant block without its
/// kopt-variant:entry/grid/block lines.
std::vector<Candidate> candidates_from_text(const std::string& text, const std::string& name,
                                            const std::string& origin);

/// candidates_from_text of a file (name: its file name; origin: its path).
std::vector<Candidate> candidates_from_file(const std::filesystem::path& file);

// ---------------------------------------------------------------------------
// Write: annotation lines

/// `s` with every control character (newlines included) turned into a space,
/// so that it fits in one comment line.
std::string one_line(const std::string& s);

/// "// kopt:entry NAME".
std::string entry_annotation(const std::string& entry);

/// The three lines "// kopt:grid X, Y, Z", "// kopt:block X, Y, Z" and
/// "// kopt:shared S", each expression as written; an empty expression is
/// written 1 (grid, block) or 0 (shared).
std::vector<std::string> launch_annotation_lines(const Launch& launch);

/// "// kopt:options A B C" (each option after one space); "" for no options.
std::string options_annotation(const std::vector<std::string>& options);

/// "// kopt:param NAME=VALUE".
std::string param_annotation(const std::string& name, int64_t value);

/// One "#ifndef NAME\n#define NAME VALUE\n#endif\n" per parameter, in name
/// order, so that -DNAME=VALUE overrides the value.
std::string param_defines(const std::map<std::string, int64_t>& params);

/// `source` with "// kopt:entry/grid/block/shared" lines put in front of it
/// for those of the four keys its annotations lack (from `entry` and
/// `launch`, as launch_annotation_lines writes them). `origin` names the file
/// in errors: throws SpecError(kopt.annot.4xx) as parse_annotations does.
std::string with_missing_annotations(const std::string& source, const std::string& origin, const std::string& entry,
                                     const Launch& launch);

// ---------------------------------------------------------------------------
// Write: self-contained kernel files (best.cu, variants/v<N>.cu)

/// The comment header of a self-contained kernel file:
///   // <title>
///   // <name>: <value>      (one line a field, values aligned at column 15)
///   //
/// Title and values are written as given: pass one-line text (one_line).
struct KernelFileHeader {
  std::string title;
  std::vector<std::pair<std::string, std::string>> fields;
};

/// The header's text, ending with "//\n".
std::string header_block(const KernelFileHeader& header);

/// What a self-contained kernel file holds.
struct SelfContainedKernel {
  KernelFileHeader header;
  /// kopt:entry (one_line applied); empty: no entry line.
  std::string entry;
  /// Annotation lines to write as given by a proposer (launch_annotation_lines,
  /// maybe a "// kopt:options" line): one_line applied, leading blanks
  /// dropped, "// " put in front of a line that lacks "//", blank lines left out.
  std::vector<std::string> launch_lines;
  /// The options the kernel was compiled with: written as one kopt:options
  /// line unless launch_lines has one, leaving out -DNAME / -DNAME=... of a
  /// tuning parameter (that is a #define of the file).
  std::vector<std::string> compile_options;
  /// Tuning parameters: one kopt:param line and one guarded #define each.
  std::map<std::string, int64_t> params;
  /// The kernel's source (its own annotations are superseded as needed).
  std::string source;
};

/// The annotation lines of the file: entry, launch_lines, options, params.
std::vector<std::string> header_annotation_lines(const SelfContainedKernel& kernel);

/// The whole file: header_block, the annotation lines, a blank line and the
/// #defines (when there are params), a blank line, then the source with the
/// annotation lines the header supersedes neutralised (supersede_annotations
/// with the header's keys and parameter names); ends with a newline.
std::string self_contained_kernel_file(const SelfContainedKernel& kernel);

// ---------------------------------------------------------------------------
// Supersede

/// The key of the first "// kopt:KEY" on `line` ("" when none); for a param
/// line, `param` (when given) receives the parameter's name.
std::string annotation_key(const std::string& line, std::string* param = nullptr);

/// `source` with each line whose first "// kopt:KEY" has KEY in `keys`, or is
/// "// kopt:param NAME=..." with NAME in `params`, rewritten to
/// "// kopt-superseded:KEY..." (anywhere on the line, as parse_annotations
/// finds it). Lines stay lines; a final newline stays.
std::string supersede_annotations(const std::string& source, const std::set<std::string>& keys,
                                  const std::set<std::string>& params);

/// The agent's rule: a line that is only a comment "//<blanks>kopt:KEY ..."
/// with KEY entry, grid, block, shared or options becomes
/// "//<blanks>kopt-superseded:KEY ..."; param lines, unknown keys and
/// annotations after code on a line are kept. Lines stay lines; a final
/// newline stays.
std::string neutralise_annotations(const std::string& source);

/// The trailer of a candidate's recorded source:
///   // ---- kopt: the entry and launch this candidate was evaluated with ----
///   // kopt:entry ENTRY
///   launch_annotation_lines(launch)
///   options_annotation(options)   (only with options)
std::string evaluated_with_trailer(const std::string& entry, const Launch& launch,
                                   const std::vector<std::string>& options);

/// neutralise_annotations(source), a newline when the source lacks a final
/// one, then evaluated_with_trailer (appended: line numbers unchanged), so
/// that `kopt evaluate --kernel` on the result reproduces the evaluation.
std::string with_evaluated_trailer(const std::string& source, const std::string& entry, const Launch& launch,
                                   const std::vector<std::string>& options);

// ---------------------------------------------------------------------------
// Variants of a generated file

/// One variant to join: a self-contained kernel (best.cu form).
struct VariantSource {
  std::string source;
  std::string origin;  // file it came from, for messages
  std::string label;   // written on its block's marker line (may be empty)
};

/// The entry point variant `i` of `n` is compiled under: `entry` alone, else
/// <entry>_v<i>.
std::string variant_entry(const std::string& entry, size_t i, size_t n);

/// The annotations of a variant, which must have kopt:entry, kopt:grid and
/// kopt:block lines: SpecError(kopt.gen.101) naming `origin` otherwise
/// (and kopt.annot.4xx as parse_annotations throws).
Annotations parse_variant_annotations(const std::string& source, const std::string& origin);

/// The generated file for the variants: one variant is its source unchanged;
/// several are each wrapped in a namespace with every variant's tuning
/// #defines reset and their entry point renamed <entry>_v<i> by a macro;
/// #include lines are hoisted to the top (sorted, once each), and the file's
/// kopt: lines describe variant 0. Throws UsageError(kopt.gen.105) for no
/// variant, SpecError(kopt.gen.101) as parse_variant_annotations does, and
/// SpecError(kopt.gen.110) when a variant's options differ from variant 0's.
std::string join_variants(const std::vector<VariantSource>& variants);

/// One variant block of a joined file.
struct VariantBlock {
  std::string label;        // from the marker line
  Annotations annotations;  // its kopt-variant: lines (entry: the variant's own, not <entry>_v<i>)
  std::string body;         // its source as joined: "#include" lines hoisted out, annotations as kopt:
};

/// The variant blocks of a joined file (each "// ===== variant " marker at the
/// start of a line opens one); empty when there are fewer than two. `origin`
/// names the file in errors: SpecError(kopt.annot.405) for a block without its
/// kopt-variant:entry/grid/block lines, kopt.annot.4xx for bad lines.
std::vector<VariantBlock> split_variants(const std::string& text, const std::string& origin);

}  // namespace kopt::spec
