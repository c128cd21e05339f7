// submit_workload (description only): the drafted workload spec with the
// reference and initial kernels; validated, compiled (and, with a GPU, the
// reference self-checked) before the optimization starts.
#include <iostream>

#include "agent/common.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
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
  const json checked = session.check_workload(s);
  if (checked.contains("error")) throw ToolFailure(checked["error"].get<std::string>());
  const json checks = checked.value("checks", json::object());
  session.accept_workload(std::move(s));
  if (!session.options().quiet) std::cerr << "kopt: the drafted workload validates; " << kGeneratedWarning << "\n";
  return {{"accepted", true},
          {"verdict", "accepted"},
          {"checks", checks},
          {"saved_as", "spec.generated.json (with reference.cu and initial.cu) in the run folder"},
          {"next", "optimization starts now"}};
}

}  // namespace kopt::agent::tools::submit_workload
