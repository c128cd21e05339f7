#include "gen/generate.h"

#include <algorithm>
#include <ctime>
#include <optional>
#include <iostream>
#include <map>
#include <set>

#include "gen/depfile.h"
#include "gen/dispatch_code.h"
#include "gen/nvcc_options.h"
#include "gen/unroll_pragma.h"
#include "model/dispatch.h"
#include "store/fingerprint.h"
#include "store/store.h"
#include "store/tuning_cache.h"
#include "spec/annotations.h"
#include "spec/kernel_file.h"
#include "spec/local_include.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/text.h"

namespace kopt::gen {
namespace {

/// The spec's defines for a compile outside kopt: those that name no size as
/// #ifndef-guarded #defines (kopt compiled every kernel with them); those
/// that depend on the problem size stay the application's, as before tuning,
/// and a comment says which and the values the kernel was tuned with.
std::string defines_prelude(const spec::Spec& s) {
  if (s.defines.empty()) return "";
  const std::map<std::string, int64_t> constant = s.constant_defines();
  std::string out = "\n// The workload's defines (kopt compiled the kernel with -D for each):\n" + spec::param_defines(constant);
  std::string sized;
  for (const auto& [name, e] : s.defines)
    if (!constant.count(name)) sized += (sized.empty() ? "" : ", ") + name;
  if (!sized.empty()) {
    out += "// " + sized + " depend on the problem size: compile this file with -D for the size it runs\n"
           "// (the tuning ran with:";
    std::set<std::map<std::string, int64_t>> seen;
    for (const spec::Case& c : s.cases) {
      std::map<std::string, int64_t> v;
      for (const auto& [k, x] : c.defines)
        if (!constant.count(k)) v[k] = x;
      if (!seen.insert(v).second) continue;
      std::string one;
      for (const auto& [k, x] : v) one += (one.empty() ? "" : " ") + k + "=" + std::to_string(x);
      out += (seen.size() == 1 ? " " : "; ") + one;
    }
    out += "); the launch header's tuned_for() says whether sizes are among them.\n";
  }
  return out + "\n";
}

/// Adds "a, b, c" of `items` to `*out`, each once, after "v<i>: " when the
/// file holds several variants.
void list_into(std::string* out, const std::vector<std::string>& items, size_t variant, size_t n) {
  std::set<std::string> seen;
  for (const std::string& item : items)
    if (seen.insert(item).second)
      *out += (out->empty() ? "" : ", ") + (n > 1 ? "v" + std::to_string(variant) + ": " : std::string()) + item;
}

/// The variants with their `#pragma unroll NAME` written for nvcc, which
/// does not expand macros there (gen/unroll_pragma.h): each variant's with
/// its own tuning parameters, and the workload's constant defines. Sets
/// `*macro_definition` when a pragma needs KOPT_PRAGMA_UNROLL, and `*notes`
/// to the lines that say on stderr what was rewritten.
std::vector<KernelVariant> unroll_for_nvcc(std::vector<KernelVariant> variants, const spec::Spec& s,
                                           const std::string& file, std::string* macro_definition,
                                           std::string* notes) {
  const std::map<std::string, int64_t> constant = s.constant_defines();
  UnrollNames names;
  for (const auto& [name, e] : s.defines)
    if (!constant.count(name)) names.macros.insert(name);
  std::string valued, left_out, through_macro, continued, not_rewritten;
  // One variant: its tuning parameters are #ifndef defaults that a -D
  // overrides (kopt evaluate --params, an application's own value), so its
  // pragmas go through KOPT_PRAGMA_UNROLL, which reads the macro as NVRTC
  // did; several variants fix theirs (no override is allowed).
  const bool overridable = variants.size() == 1;
  for (size_t i = 0; i < variants.size(); ++i) {
    names.fixed = constant;
    for (const auto& [k, v] : spec::parse_annotations(variants[i].source, variants[i].origin).params) {
      if (overridable)
        names.macros.insert(k);
      else
        names.fixed[k] = v;
    }
    UnrollRewrite r = rewrite_unroll_pragmas(variants[i].source, names);
    variants[i].source = std::move(r.source);
    list_into(&valued, r.valued, i, variants.size());
    list_into(&left_out, r.left_out, i, variants.size());
    list_into(&through_macro, r.through_macro, i, variants.size());
    list_into(&continued, r.continued, i, variants.size());
    list_into(&not_rewritten, r.not_rewritten, i, variants.size());
  }
  if (!through_macro.empty()) *macro_definition = unroll_macro_definition();
  const std::string at = "kopt generate: " + file + ": `#pragma unroll` ";
  if (!valued.empty()) *notes += at + "written with the value of its macro (nvcc does not expand macros there): " + valued + "\n";
  if (!left_out.empty())
    *notes += at + "left out for a value below 1, which NVRTC ignores (warning #20168-D): " + left_out + "\n";
  if (!through_macro.empty())
    *notes += at + "written KOPT_PRAGMA_UNROLL(...), which expands its macros there as NVRTC did: " + through_macro + "\n";
  if (!continued.empty())
    *notes += "kopt generate: warning: " + file + ": `#pragma unroll` continued on the next line, left as it is "
              "(an nvcc build does not expand the macros in it): " + continued + "\n";
  if (!not_rewritten.empty())
    *notes += "kopt generate: warning: " + file + ": a use of a macro that makes `#pragma unroll` of its argument, "
              "left as it is (an nvcc build does not expand the macros in the argument): " + not_rewritten + "\n";
  return variants;
}

/// The options of variant 0's kopt:options line, which every variant must
/// share: one generated file compiles all of them with one set. Throws
/// SpecError(kopt.gen.110) naming the variant that differs and both sets.
std::vector<std::string> shared_variant_options(const std::vector<KernelVariant>& variants, const std::string& name) {
  const std::vector<std::string> own = spec::parse_annotations(variants[0].source, variants[0].origin).options;
  auto shown = [](const std::vector<std::string>& options) {
    std::string t;
    for (const std::string& o : options) t += (t.empty() ? "" : " ") + o;
    return t.empty() ? std::string("none") : "'" + spec::one_line(t) + "'";
  };
  for (size_t i = 1; i < variants.size(); ++i) {
    const std::vector<std::string> other = spec::parse_annotations(variants[i].source, variants[i].origin).options;
    if (other != own)
      throw SpecError("kopt.gen.110",
                      variants[i].origin + ": variant " + std::to_string(i) + " was compiled with the options " +
                          shown(other) + ", variant 0 with " + shown(own) + ": one generated file (" + name +
                          ".cu) compiles all its variants with one set of options (" + name +
                          ".nvcc_options). Generate variant 0 alone (kopt generate --no-specialize), or re-tune so "
                          "that the variants share their options");
  }
  return own;
}

/// The generated file's options for nvcc (gen/nvcc_options.h): what NVRTC
/// compiled the kernel with beyond kopt's own (--std=c++17, -arch, the CUDA
/// include folders, the defines and parameters, which the file #defines):
/// the spec's tuning.compile_options, then the kernel's kopt:options line
/// (its template's or initial kernel's compile_options, an agent's), in the
/// order NVRTC got them; every variant's (shared_variant_options, which
/// throws). Sets `*comment` to the generated file's lines that say so,
/// `*notes` to what generate says on stderr: a note for each option left
/// out, a warning for each one nvcc does not get.
std::vector<std::string> nvcc_options_of(const spec::Spec& s, const std::vector<KernelVariant>& variants,
                                         const std::string& name, std::string* comment, std::string* notes) {
  const std::vector<std::string> own = shared_variant_options(variants, name);
  const std::filesystem::path cwd = std::filesystem::current_path();
  const std::vector<std::pair<std::string, NvccOptions>> parts = {
      {"the spec's tuning.compile_options", nvcc_options(s.tuning.compile_options, cwd)},
      {"the kernel's kopt:options line", nvcc_options(own, cwd)}};
  std::vector<std::string> options;
  std::string left_out, not_given;
  for (const auto& [where, part] : parts) {
    for (const std::string& o : part.options)
      if (std::find(options.begin(), options.end(), o) == options.end()) options.push_back(o);
    for (const DroppedOption& d : part.left_out) {
      left_out += (left_out.empty() ? "" : ", ") + d.option + " (" + d.why + ")";
      *notes += "kopt generate: " + name + ".cu: NVRTC option '" + d.option + "' (" + where + ") is left out of " +
                name + ".nvcc_options: " + d.why + "\n";
    }
    for (const DroppedOption& d : part.not_translated) {
      not_given += (not_given.empty() ? "" : ", ") + d.option + " (" + d.why + ")";
      *notes += "kopt generate: warning: " + name + ".cu: NVRTC option '" + d.option + "' (" + where +
                ") has no nvcc translation (" + d.why + "): the build compiles the kernel without it, unlike kopt, "
                "which checked and timed it with it\n";
    }
  }
  std::string joined;
  for (const std::string& o : options) joined += (joined.empty() ? "" : " ") + o;
  if (!options.empty()) {
    *comment += "// nvcc options, as kopt compiled the kernel (" + name + ".nvcc_options, which optimize_kernel() "
                "passes to nvcc with --options-file): " + spec::one_line(joined) + "\n";
    *notes += "kopt generate: " + name + ".nvcc_options: " + joined + "\n";
  }
  if (!left_out.empty()) *comment += "// NVRTC options left out for nvcc: " + spec::one_line(left_out) + "\n";
  if (!not_given.empty())
    *comment += "// NVRTC options kopt compiled the kernel with that nvcc does not get: " + spec::one_line(not_given) +
                "\n";
  return options;
}

/// Writes the outputs, each atomically; only called once they are ready.
/// With --no-specialize, of a shape-specialised result (from a run or a
/// cache entry) only variant 0 is written, the best single configuration,
/// and a header without dispatch.
void emit(const GenerateOptions& o, const spec::Spec& s, std::vector<KernelVariant> variants, std::string why,
          std::optional<model::DispatchTree> dispatch = std::nullopt) {
  if (!o.optimize.specialize && variants.size() > 1) {
    why += "; variant 0 of its " + std::to_string(variants.size()) + " shape-specialised variants (--no-specialize)";
    variants.resize(1);
    variants[0].shapes.clear();
    dispatch.reset();
  }
  const std::string header = launch_header(o.name, variants, s, dispatch ? &*dispatch : nullptr);
  std::string unroll_macro, unroll_notes;
  const std::vector<KernelVariant> for_nvcc = unroll_for_nvcc(variants, s, o.name + ".cu", &unroll_macro, &unroll_notes);
  const std::string prelude = defines_prelude(s);
  if (!unroll_macro.empty()) unroll_macro = (prelude.empty() ? "\n" : "") + unroll_macro + "\n";
  std::string options_comment, options_notes;
  const std::vector<std::string> nvcc = nvcc_options_of(s, variants, o.name, &options_comment, &options_notes);
  std::string cu = "// Generated by kopt generate for workload '" + s.name + "': " + why + "\n" + options_comment +
                   prelude + unroll_macro + combine_variants(for_nvcc);
  fs::write_file_atomic(o.out_dir / (o.name + ".nvcc_options"), options_file_text(nvcc));
  fs::write_file_atomic(o.out_dir / (o.name + ".cu"), cu);
  fs::write_file_atomic(o.out_dir / (o.name + "_launch.h"), header);
  nlohmann::json labels = nlohmann::json::array();
  for (const auto& v : variants) labels.push_back(v.label);
  nlohmann::json meta = {{"name", o.name}, {"workload", s.name}, {"source_of_kernel", why},
                         {"variants", labels}, {"nvcc_options", nvcc}, {"generated", now_iso8601_utc()}};
  fs::write_file_atomic(o.out_dir / (o.name + ".json"), dump_json(meta, 2) + "\n");
  if (!o.cases_out.empty())
    fs::write_file_atomic(o.cases_out, dump_json(nlohmann::json{{"cases", spec::to_json(s)["cases"]}}, 2) + "\n");
  std::cerr << "kopt generate: " << o.name << ".cu: " << why;
  if (variants.size() > 1) std::cerr << "; " << variants.size() << " shape-specialised variants";
  std::cerr << "\n" << options_notes << unroll_notes;
}

/// A run's variants: summary.json "specialization" with variants/v<N>.cu,
/// else best.cu alone.
std::vector<KernelVariant> run_variants(const std::filesystem::path& run_dir, const store::Summary& summary,
                                        const spec::Spec& spec, std::optional<model::DispatchTree>* dispatch) {
  std::vector<KernelVariant> out;
  const std::filesystem::path summary_file = run_dir / "summary.json";
  if (summary.specialization && summary.specialization->variants.size() > 1) {
    const store::Specialization& sp = *summary.specialization;
    for (size_t i = 0; i < sp.variants.size(); ++i) {
      const store::SpecializationVariant& v = sp.variants[i];
      if (v.file.empty())
        throw SpecError("kopt.json.005", fs::display(summary_file) + ": $.specialization.variants[" +
                                             std::to_string(i) + "]: missing required key 'file'");
      KernelVariant kv;
      const std::filesystem::path f = run_dir / v.file;
      kv.source = fs::read_file(f, "kernel source", fs::kSourceMaxBytes);
      kv.origin = f.string();
      kv.label = v.label;
      out.push_back(kv);
    }
    for (const auto& [name, c] : sp.cases) {
      (void)name;
      const size_t v = static_cast<size_t>(c.variant);
      if (v < out.size() && c.sizes) out[v].shapes.push_back(*c.sizes);
    }
    *dispatch = recorded_dispatch(sp, out.size(), summary_file.string(), spec);
    return out;
  }
  KernelVariant kv;
  kv.source = fs::read_file(run_dir / "best.cu", "kernel source", fs::kSourceMaxBytes);
  kv.origin = (run_dir / "best.cu").string();
  kv.label = summary.final_best ? summary.final_best->label.value_or("") : "";
  return {kv};
}

/// A tuning cache entry's variants ("variants", else "kernel_source").
std::vector<KernelVariant> cache_variants(const store::CacheEntry& e, const std::string& origin, const spec::Spec& spec,
                                          std::optional<model::DispatchTree>* dispatch) {
  std::vector<KernelVariant> out;
  if (e.variants && e.variants->size() > 1) {
    for (const store::CacheVariant& v : *e.variants) out.push_back({v.kernel_source, origin, v.label, v.shapes});
    if (e.specialization) *dispatch = recorded_dispatch(*e.specialization, out.size(), origin, spec);
    return out;
  }
  KernelVariant kv;
  kv.source = e.kernel_source;
  kv.origin = origin;
  kv.label = e.best.label.value_or("");
  return {kv};
}

}  // namespace

std::string combine_variants(const std::vector<KernelVariant>& variants) {
  std::vector<spec::VariantSource> vs;
  for (const auto& v : variants) vs.push_back({v.source, v.origin, v.label});
  return spec::join_variants(vs);
}

namespace {

/// A run folder's summary.json (store::read_summary, strict: kopt.io.*,
/// kopt.json.*) and the GPU of its device.json.
std::pair<store::Summary, store::CacheGpu> read_run_outputs(const std::filesystem::path& run_dir) {
  store::Summary summary = store::read_summary(run_dir / "summary.json", store::ReadMode::strict);
  const std::filesystem::path df = run_dir / "device.json";
  const nlohmann::json device = parse_json_file(df, "run folder's device.json");
  const JsonAt d(device, fs::display(df));
  d.expect_object();
  store::CacheGpu gpu;
  if (auto v = d.find("name")) gpu.name = v->string();
  if (auto v = d.find("compute_capability")) gpu.compute_capability = v->string();
  return {std::move(summary), std::move(gpu)};
}

/// The tuning cache entry for this spec, `device` and the run `summary`
/// (the winner `variants` from its run folder).
store::CacheEntry tuned_entry(const spec::Spec& s, const std::string& hash, const std::string& base_hash,
                              const store::CacheGpu& device, const store::Summary& summary,
                              const std::vector<KernelVariant>& variants) {
  store::CacheEntry e;
  e.workload = s.name;
  e.spec_hash = hash;
  if (!base_hash.empty()) e.base_spec_hash = base_hash;
  e.gpu = {device.name.value_or(""), device.compute_capability.value_or("")};
  e.kernel_source = variants.front().source;
  if (summary.final_best) {
    e.best = *summary.final_best;
    e.params = summary.final_best->params.value_or(std::map<std::string, int64_t>{});
    e.geomean_ms = summary.final_best->geomean_ms.value_or(0.0);
  }
  e.cublas_geomean_ms = summary.cublas_geomean_ms.value_or(0.0);
  e.specialization = summary.specialization;
  e.tool_version = KOPT_VERSION;
  e.created = now_iso8601_utc();
  if (variants.size() > 1) {
    e.variants.emplace();
    for (const auto& v : variants) e.variants->push_back({v.label, v.source, v.shapes});
  }
  return e;
}

}  // namespace

namespace {

/// The fingerprints a cache entry is matched by: the spec with these cases,
/// and (with --input-cases) the spec with its own cases ("" otherwise).
struct SpecHashes {
  std::string hash, base_hash;
};

/// After tuning: the cache with this GPU's entry for the spec replaced by the
/// run's result (an entry tuned on an earlier capture of the same spec too),
/// written to --cache-out, else --cache-file.
void write_updated_cache(const GenerateOptions& o, const spec::Spec& s, const store::TuningCache& cache,
                         const SpecHashes& h, const store::Summary& summary, const store::CacheGpu& device,
                         const std::vector<KernelVariant>& variants) {
  store::TuningCache updated = cache;
  updated.entries.clear();
  for (const store::CacheEntry& e : cache.entries)
    if (!((e.spec_hash == h.hash || (!h.base_hash.empty() && e.base_spec_hash.value_or("") == h.base_hash)) &&
          e.gpu.name.value_or("") == device.name.value_or("") &&
          e.gpu.compute_capability.value_or("") == device.compute_capability.value_or("")))
      updated.entries.push_back(e);
  updated.entries.push_back(tuned_entry(s, h.hash, h.base_hash, device, summary, variants));
  const std::filesystem::path& out = o.cache_out.empty() ? o.cache_file : o.cache_out;
  store::write_tuning_cache(out, updated);
  if (o.cache_out.empty())
    std::cerr << "kopt generate: updated the tuning cache " << out.string() << "\n";
  else
    std::cerr << "kopt generate: wrote the updated tuning cache to " << out.string() << " (" << o.cache_file.string()
              << " is left as it is: copy the file over it to keep this tuning, or use UPDATE_CACHE)\n";
}

/// A build without tuning: the cache entry for this spec (and the target
/// GPU), checked against the spec's space, with `other_note` set when it was
/// tuned on other cases; null, with `cache_note` saying why, when the cache
/// holds none or several.
const store::CacheEntry* cache_entry(const GenerateOptions& o, const spec::Spec& s, const store::TuningCache& cache,
                                     const SpecHashes& h, std::string* other_note, std::string* cache_note) {
  std::vector<const store::CacheEntry*> matching, other_cases;
  std::vector<std::string> stale;
  for (const store::CacheEntry& e : cache.entries) {
    const bool same = e.spec_hash == h.hash;
    const bool other = !same && !h.base_hash.empty() &&
                       (e.spec_hash == h.base_hash || e.base_spec_hash.value_or("") == h.base_hash);
    if (!same && !other) {
      stale.push_back(e.gpu.label());
      continue;
    }
    if (o.target_gpu.empty() || e.gpu.name.value_or("") == o.target_gpu) (same ? matching : other_cases).push_back(&e);
  }
  // Nothing tuned on these cases: an entry of the same spec tuned on other
  // cases (the spec's own, or an earlier capture), one per GPU, the capture's first.
  if (matching.empty() && !other_cases.empty()) {
    std::map<std::string, const store::CacheEntry*> per_gpu;
    for (const store::CacheEntry* e : other_cases) {
      const std::string g = e->gpu.label();
      if (!per_gpu.count(g) || e->base_spec_hash) per_gpu[g] = e;
    }
    for (const auto& [g, e] : per_gpu) matching.push_back(e);
    *other_note = "; tuned on other cases than " + o.optimize.input_cases.filename().string() +
                  " (the spec's or an earlier capture's): re-tune on a GPU for these";
  }
  if (!stale.empty())
    std::cerr << "kopt generate: warning: the tuning cache " << o.cache_file.string() << " holds " << stale.size()
              << " stale entr" << (stale.size() == 1 ? "y" : "ies")
              << " (the spec changed since they were tuned); they are not used. Re-tune on a GPU to refresh it.\n";
  if (matching.size() == 1) {
    const store::CacheEntry& e = *matching.front();
    // What it records must be of this spec's space (a hand-edited value would change the generated code).
    store::check_entry_against_spec(e, static_cast<size_t>(&e - cache.entries.data()), s, fs::display(o.cache_file));
    return &e;
  }
  if (matching.size() > 1)
    *cache_note = "; the cache holds several GPUs for this spec: set KOPT_TARGET_GPU to choose one";
  else if (!o.target_gpu.empty())
    *cache_note = "; the cache has no entry for KOPT_TARGET_GPU='" + o.target_gpu + "'";
  return nullptr;
}

}  // namespace

namespace {

/// The initial kernel's source, its compile_options joined to its
/// kopt:options line (one line, which the source's own no longer shadows),
/// in the order NVRTC gets them: for kopt evaluate of the generated file and
/// for <name>.nvcc_options.
std::string initial_source_with_options(const spec::KernelSource& initial) {
  const std::string src = spec::read_kernel_text(initial.source);
  if (initial.compile_options.empty()) return src;
  std::vector<std::string> options = spec::parse_annotations(src, initial.source.string()).options;
  options.insert(options.end(), initial.compile_options.begin(), initial.compile_options.end());
  return spec::options_annotation(options) + "\n" + spec::supersede_annotations(src, {"options"}, {});
}

/// --cases-from: the capture as the run's input cases when it exists; a
/// capture that does not exist yet (the application has not run with
/// KOPT_CAPTURE) leaves the spec's cases, until it appears.
void use_capture_if_present(GenerateOptions& o) {
  if (o.cases_from.empty()) return;
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(o.cases_from, ec))) {
    o.optimize.input_cases = o.cases_from;
  } else if (!o.optimize.quiet) {
    std::cerr << "kopt generate: --cases-from " << o.cases_from.string()
              << " does not exist (yet): using the spec's cases; the build tunes again once it appears\n";
  }
}

/// With --input-cases (a capture), the fingerprint of the spec with its own
/// cases: a cache entry tuned on the spec's cases or on an earlier capture
/// ("base_spec_hash") still serves a build without a GPU. Empty without one.
std::string base_fingerprint(const driver::OptimizeOptions& optimize) {
  if (optimize.input_cases.empty()) return "";
  driver::OptimizeOptions plain = optimize;
  plain.input_cases.clear();
  plain.quiet = true;
  return store::spec_fingerprint(driver::load_spec_with_overrides(plain));
}

}  // namespace

int generate(const GenerateOptions& options) {
  GenerateOptions o = options;
  if (o.name.empty()) throw UsageError("kopt.gen.103", "--name is required");
  use_capture_if_present(o);
  driver::OptimizeOptions load = o.optimize;
  load.quiet = true;  // where the cases come from is said once, by the tuning run that loads the spec again
  const spec::Spec s = driver::load_spec_with_overrides(load);
  const std::string hash = store::spec_fingerprint(s);
  const std::string base_hash = base_fingerprint(o.optimize);
  const store::TuningCache cache = o.cache_file.empty() ? store::TuningCache{} : store::read_tuning_cache(o.cache_file);
  std::filesystem::create_directories(o.out_dir);
  if (!o.depfile.empty()) {
    // A --cases-from file is not in the depfile: it may go away, and Make
    // (CMake's compiler_depend.make keeps every entry it has seen) would then
    // re-run this on every build. optimize_kernel(CASES_FROM) follows it
    // with a stamp of its content instead.
    driver::OptimizeOptions deps = o.optimize;
    if (!o.cases_from.empty()) deps.input_cases.clear();
    fs::write_file_atomic(o.depfile, depfile_text(o.out_dir / (o.name + ".cu"), spec_dependencies(s, deps, o.cache_file)));
  }
  // --cache-out: the committed cache is only read; its updated copy (or a
  // plain copy, when nothing was tuned) goes there, for the benchmark test.
  // A cache file that does not exist yet gives an empty copy: the CMake
  // module declares --cache-out an output of the step, and an output that is
  // never written would make every build run the step again.
  auto copy_cache = [&]() {
    std::error_code ec;
    if (!o.cache_out.empty() && !o.cache_file.empty() &&
        (std::filesystem::is_regular_file(o.cache_file, ec) || !std::filesystem::exists(o.cache_file, ec)))
      store::write_tuning_cache(o.cache_out, cache);
  };

  // The cache's entry for a run: written before the outputs (it is also an
  // input of the build step, so the outputs must end up newer than it, or the
  // next build would tune again). A full disk or a read-only cache must not
  // cost the build its kernel: a warning that says where the tuning is kept.
  auto update_cache = [&](const std::filesystem::path& run_dir, const store::Summary& summary,
                          const store::CacheGpu& device, const std::vector<KernelVariant>& variants) {
    if (o.cache_file.empty()) return;
    try {
      write_updated_cache(o, s, cache, {hash, base_hash}, summary, device, variants);
    } catch (const EnvironmentError& e) {
      if (o.require_gpu) throw;
      std::cerr << "kopt generate: warning: the tuning cache was not updated: " << e.what() << "\n"
                << "kopt generate: the tuning is kept in " << fs::display(run_dir)
                << "; `kopt generate --from-run` of that folder with the same --cache-file writes its entry\n";
    }
  };

  // 0. A finished run folder, as given.
  if (!o.from_run.empty()) {
    store::RunStore::open(o.from_run, hash);  // throws when it is not a run of this spec
    const std::filesystem::path summary_file = o.from_run / "summary.json";
    if (!std::filesystem::exists(o.from_run / "best.cu") || !std::filesystem::exists(summary_file))
      throw UsageError("kopt.gen.106", o.from_run.string() + ": the run has no best.cu/summary.json (it did not finish, "
                                                             "or no candidate passed)");
    const auto [summary, device] = read_run_outputs(o.from_run);
    std::optional<model::DispatchTree> dispatch;
    const std::vector<KernelVariant> variants = run_variants(o.from_run, summary, s, &dispatch);
    update_cache(o.from_run, summary, device, variants);
    // The run by its folder's name: the outputs carry no path of this machine.
    const std::filesystem::path run = o.from_run.lexically_normal();
    const std::string run_name = (run.has_filename() ? run : run.parent_path()).filename().string();
    emit(o, s, variants, "from run " + run_name + ", tuned on " + device.label(), dispatch);
    return 0;
  }

  // 1. Tune on this machine's GPU.
  std::string no_gpu_reason = "tuning disabled";
  if (o.tune) {
    driver::OptimizeOptions oo = o.optimize;
    oo.results_dir = o.out_dir / "runs";
    oo.arch.clear();  // never compile-only here: without a GPU, fall back instead
    std::filesystem::path run_dir;
    int code = 0;
    try {
      code = driver::optimize(oo, &run_dir);
    } catch (const NoDeviceError& e) {
      // The full reason (which library, which call) goes to stderr once; the
      // generated files carry the short form.
      std::cerr << "kopt generate: " << e.what() << "\n";
      no_gpu_reason = "no CUDA device found";
      code = 77;
    }
    if (code == 0) {
      const auto [summary, device] = read_run_outputs(run_dir);
      std::optional<model::DispatchTree> dispatch;
      const std::vector<KernelVariant> variants = run_variants(run_dir, summary, s, &dispatch);
      launch_header(o.name, variants, s, dispatch ? &*dispatch : nullptr);  // throws (writing nothing) when it would not compile
      shared_variant_options(variants, o.name);  // throws (writing nothing) when one file cannot compile them all
      // The cache is written before the outputs: it is also an input of the
      // build step, so the outputs must end up newer than it (or the next
      // build would tune again).
      update_cache(run_dir, summary, device, variants);
      emit(o, s, variants, "tuned on " + device.label() + " (run " + run_dir.filename().string() + ")", dispatch);
      return 0;
    }
    if (util::interrupted()) return code;  // SIGINT/SIGTERM: 130/143, the run folder says how to resume
    if (code != 77) {
      std::cerr << "kopt generate: tuning failed (exit " << code << "); the previous generated kernel is kept\n";
      return 3;
    }
  }
  if (o.require_gpu) {
    std::cerr << "kopt generate: a GPU is required (KOPT_REQUIRE_GPU) but " << no_gpu_reason << "\n";
    return 77;
  }

  // 2. The tuning cache.
  std::string other_note, cache_note;
  if (const store::CacheEntry* e = cache_entry(o, s, cache, {hash, base_hash}, &other_note, &cache_note)) {
    copy_cache();
    std::optional<model::DispatchTree> dispatch;
    const std::vector<KernelVariant> variants = cache_variants(*e, o.cache_file.string(), s, &dispatch);
    emit(o, s, variants,
         "from the tuning cache " + o.cache_file.filename().string() + ", tuned on " + e->gpu.label() + " (" +
             no_gpu_reason + other_note + ")",
         dispatch);
    return 0;
  }

  // 3. The initial kernel.
  if (!s.initial)
    throw SpecError("kopt.gen.104", s.path.string() + ": no GPU, no usable tuning cache entry and no initial kernel to fall back on");
  std::string src = initial_source_with_options(*s.initial);
  // The spec's defines of the initial kernel (its configuration, when it is
  // the template's source) go into the file as kopt:param lines, which the
  // launch header reads, and guarded #defines, which the application's
  // compiler reads; they come first, so they win over the source's own lines.
  if (!s.initial->defines.empty()) {
    std::string pre;
    for (const auto& [name, v] : s.initial->defines) pre += spec::param_annotation(name, v) + "\n";
    src = pre + spec::param_defines(s.initial->defines) + "\n" + src;
  }
  const spec::Launch l = s.initial->launch ? *s.initial->launch : s.launch;
  copy_cache();
  emit(o, s, {KernelVariant{spec::with_missing_annotations(src, s.initial->source.string(), s.initial->entry, l),
                            s.initial->source.string(), "", {}}},
       "the initial kernel " + s.initial->source.filename().string() + ", not tuned (" + no_gpu_reason + cache_note + ")");
  return 0;
}

}  // namespace kopt::gen
