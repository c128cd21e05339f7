// submit_workload (description only): the drafted workload spec with the
// reference and initial kernels; validated, compiled (and, with a GPU, the
// reference self-checked) before the optimization starts.
#include <iostream>

#include "agent/common.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
#include "eval/evaluator.h"
#include "opt/optimizer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace kopt::agent::tools::submit_workload {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

/// Writes the spec (sources named reference.cu and initial.cu) and the
/// kernels' sources to `staging`; returns the spec file's path.
stdfs::path stage(const json& a, const stdfs::path& staging, json& doc) {
  auto sj = a.find("spec");
  if (sj == a.end() || !sj->is_object()) throw ToolFailure("'spec' is required: the workload spec as a JSON object");
  doc = *sj;
  doc.erase("template");
  if (!doc.contains("reference") || !doc["reference"].is_object()) doc["reference"] = json::object();
  json& ref = doc["reference"];
  if (!ref.contains("kind")) ref["kind"] = "kernel";
  std::string ref_src, ini_src;
  if (ref["kind"] == "kernel") {
    auto rs = a.find("reference_source");
    if (rs == a.end() || !rs->is_string() || rs->get<std::string>().empty())
      throw ToolFailure("'reference_source' is required: the reference kernel's CUDA source");
    ref_src = rs->get<std::string>();
    ref["source"] = "reference.cu";
  }
  if (auto is = a.find("initial_source"); is != a.end() && is->is_string() && !is->get<std::string>().empty()) {
    ini_src = is->get<std::string>();
    if (!doc.contains("initial") || !doc["initial"].is_object()) doc["initial"] = json::object();
    doc["initial"]["source"] = "initial.cu";
  } else if (doc.contains("initial")) {
    throw ToolFailure("'initial_source' is required when spec.initial is given");
  } else {
    throw ToolFailure("'initial_source' is required: a first kernel to optimize (its entry in spec.initial.entry)");
  }
  const stdfs::path spec_path = staging / "spec.generated.json";
  if (!ref_src.empty()) fs::write_file_atomic(staging / "reference.cu", ref_src);
  fs::write_file_atomic(staging / "initial.cu", ini_src);
  fs::write_file_atomic(spec_path, dump_json(doc, 2) + "\n");
  return spec_path;
}

/// The staged spec, parsed and checked for what a drafted workload needs.
spec::Spec parse(const json& doc, const stdfs::path& spec_path) {
  spec::Spec s;
  try {
    s = spec::parse_spec(doc, spec_path);
  } catch (const Error& e) {
    throw ToolFailure(std::string("the spec does not validate: ") + e.what());
  }
  if (s.performance_cases().empty()) throw ToolFailure("the spec needs at least one case with role \"performance\"");
  bool small_odd = false;
  for (const auto& c : s.cases)
    if (c.role == spec::CaseRole::correctness)
      for (const auto& [k, v] : c.sizes) small_odd |= v == 1 || (v % 2 == 1 && v < 5000);
  if (!small_odd)
    throw ToolFailure("add correctness cases with small odd sizes (1, 17, 1000x1x17-like shapes): they catch missing bounds checks");
  return s;
}

/// The reference (and the initial kernel) must compile; with a GPU the
/// reference must pass its own check. Returns what was checked.
json check_kernels(const Session& session, const spec::Spec& s) {
  const opt::OptimizeOptions& o = session.options();
  eval::EvaluatorOptions eo;
  eo.worker_argv = o.worker_argv;
  eo.cache_dir = o.cache_dir;
  eo.arch = session.arch();
  eo.time = false;
  eo.time_reference = false;
  eval::Evaluator ev(s, eo);
  ev.arch();
  auto kernel_candidate = [](const spec::KernelSource& k, const spec::Launch& dflt, const char* label) {
    spec::Candidate c;
    c.label = label;
    c.source = fs::read_file(k.source);
    c.source_name = k.source.filename().string();
    c.entry = k.entry;
    c.launch = k.launch ? *k.launch : dflt;
    c.options = k.compile_options;
    c.params = k.defines;
    return c;
  };
  json checks = json::object();
  if (s.reference.kind == spec::Reference::Kind::kernel) {
    spec::Candidate rc = kernel_candidate(s.reference.kernel, s.launch, "reference");
    cuda::CompileResult cr = ev.compile(rc);
    if (!cr.ok)
      throw ToolFailure("the reference kernel does not compile (" + cr.error_name + "):\n" + clip(cr.log, 6000));
    checks["reference"] = "compiled";
    if (!session.compile_only()) {
      model::Result r = ev.run(rc, cr, false);
      if (r.verdict != model::Verdict::ok)
        throw ToolFailure("the reference kernel failed when checked against itself: " +
                          std::string(model::verdict_name(r.verdict)) + " - " + clip(r.detail, 2000));
      checks["reference"] = "ran and passed its self-check";
    }
  }
  if (s.initial) {
    spec::Candidate ic = kernel_candidate(*s.initial, s.launch, "initial");
    cuda::CompileResult cr = ev.compile(ic);
    if (!cr.ok) throw ToolFailure("the initial kernel does not compile (" + cr.error_name + "):\n" + clip(cr.log, 6000));
    checks["initial"] = "compiled";
  }
  return checks;
}

}  // namespace

ToolDef define() {
  return {"",
          "Submit the drafted workload: the spec, the reference kernel's source and the initial kernel's source. It is "
          "validated (spec format, the kernels compile, the reference runs when there is a GPU); errors come back for "
          "you to fix.",
          {{"type", "object"},
           {"properties",
            {{"spec", {{"type", "object"}, {"description", "the workload spec (format in the system message); "
                                                          "reference.source and initial.source are set for you"}}},
             {"reference_source", {{"type", "string"}, {"description", "CUDA source of the reference kernel"}}},
             {"initial_source", {{"type", "string"}, {"description", "CUDA source of the initial kernel"}}}}},
           {"required", {"spec", "reference_source", "initial_source"}}}};
}

json run(Session& session, const json& a) {
  json doc;
  const stdfs::path spec_path = stage(a, session.staging_dir(), doc);
  spec::Spec s = parse(doc, spec_path);
  const json checks = check_kernels(session, s);
  session.accept_workload(std::move(s));
  if (!session.options().quiet) std::cerr << "kopt: the drafted workload validates; " << kGeneratedWarning << "\n";
  return {{"accepted", true},
          {"verdict", "accepted"},
          {"checks", checks},
          {"saved_as", "spec.generated.json (with reference.cu and initial.cu) in the run folder"},
          {"next", "optimization starts now"}};
}

}  // namespace kopt::agent::tools::submit_workload
