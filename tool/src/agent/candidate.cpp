// Candidates from the model's tool arguments (see candidate.h).
#include "agent/candidate.h"

#include "spec/kernel_file.h"

#include <sstream>

#include "agent/common.h"
#include "spec/launch.h"
#include "util/error.h"

namespace kopt::agent {

using nlohmann::json;

std::string launch_text(const spec::Launch& l) {
  auto e = [](const spec::Expr& x, const char* dflt) { return x.empty() ? std::string(dflt) : x.text(); };
  return "grid (" + e(l.grid[0], "1") + ", " + e(l.grid[1], "1") + ", " + e(l.grid[2], "1") + "), block (" +
         e(l.block[0], "1") + ", " + e(l.block[1], "1") + ", " + e(l.block[2], "1") + "), shared_bytes " +
         e(l.shared_bytes, "0");
}

spec::Expr parse_expr(const json& v, const std::string& where) {
  std::string text;
  if (v.is_string())
    text = v.get<std::string>();
  else if (v.is_number_integer())
    text = std::to_string(v.get<int64_t>());
  else
    throw ToolFailure(where + ": expected an integer expression (a string such as \"ceil_div(N, 256)\" or an integer)");
  try {
    return spec::Expr::parse(text);
  } catch (const Error& e) {
    throw ToolFailure(where + ": " + e.what());
  }
}

/// {"grid": [..1-3..], "block": [..], "shared_bytes": e} -> Launch.
spec::Launch parse_launch(const json& j, const std::string& where) {
  if (!j.is_object()) throw ToolFailure(where + ": expected an object {\"grid\": [x, y, z], \"block\": [x, y, z], \"shared_bytes\": n}");
  for (const auto& [k, v] : j.items())
    if (k != "grid" && k != "block" && k != "shared_bytes")
      throw ToolFailure(where + ": unknown key '" + k + "' (allowed: grid, block, shared_bytes)");
  spec::Launch l;
  for (const char* key : {"grid", "block"}) {
    auto it = j.find(key);
    if (it == j.end()) throw ToolFailure(where + "." + key + " is required (1 to 3 integer expressions)");
    spec::Expr* dst = std::string(key) == "grid" ? l.grid : l.block;
    json arr = it->is_array() ? *it : json::array({*it});
    if (arr.empty() || arr.size() > 3)
      throw ToolFailure(where + "." + key + ": expected 1 to 3 expressions, got " + std::to_string(arr.size()));
    for (size_t i = 0; i < 3; ++i)
      dst[i] = i < arr.size() ? parse_expr(arr[i], where + "." + key + "[" + std::to_string(i) + "]")
                              : spec::Expr::constant(1);
  }
  auto sh = j.find("shared_bytes");
  l.shared_bytes = sh == j.end() || sh->is_null() ? spec::Expr::constant(0) : parse_expr(*sh, where + ".shared_bytes");
  return l;
}

/// The base launch with per-case overrides folded into its expressions: each
/// dimension becomes "(C1) * (O1) + (!(C1)) * (...)" where Ci tests the sizes
/// of the overridden case.
spec::Launch fold_case_launches(const spec::Launch& base, const std::vector<std::pair<const spec::Case*, spec::Launch>>& ov) {
  if (ov.empty()) return base;
  auto cond = [](const spec::Case& c) {
    std::string s;
    for (const auto& [k, v] : c.sizes) s += (s.empty() ? "" : " && ") + k + " == " + std::to_string(v);
    return s.empty() ? std::string("1") : s;
  };
  auto fold = [&](auto get) {
    std::string text = get(base).empty() ? "1" : get(base).text();
    for (auto it = ov.rbegin(); it != ov.rend(); ++it) {
      const std::string c = cond(*it->first);
      const spec::Expr& e = get(it->second);
      text = "(" + c + ") * (" + (e.empty() ? std::string("1") : e.text()) + ") + (!(" + c + ")) * (" + text + ")";
    }
    return spec::Expr::parse(text);
  };
  spec::Launch out;
  for (int i = 0; i < 3; ++i) {
    out.grid[i] = fold([i](const spec::Launch& l) -> const spec::Expr& { return l.grid[i]; });
    out.block[i] = fold([i](const spec::Launch& l) -> const spec::Expr& { return l.block[i]; });
  }
  out.shared_bytes = fold([](const spec::Launch& l) -> const spec::Expr& { return l.shared_bytes; });
  return out;
}

void validate_launch(const spec::Spec& s, const spec::Launch& l, const std::map<std::string, int64_t>& params) {
  for (const spec::Case& c : s.cases) {
    spec::LaunchDims d;
    try {
      d = spec::resolve_launch(l, c, params);
    } catch (const Error& e) {
      throw ToolFailure(std::string("launch: ") + e.what());
    }
    for (int i = 0; i < 3; ++i)
      if (d.grid[i] < 1 || d.block[i] < 1)
        throw ToolFailure("launch: for case " + c.name + " the " + (d.grid[i] < 1 ? "grid" : "block") + " dimension " +
                          std::to_string(i) + " is " + std::to_string(d.grid[i] < 1 ? d.grid[i] : d.block[i]) +
                          " (must be >= 1)");
    if (d.shared_bytes < 0) throw ToolFailure("launch: shared_bytes is negative for case " + c.name);
  }
}

spec::Candidate candidate_from_args(const spec::Spec& s, const json& a, const std::string& label, bool validate,
                                    const std::map<std::string, int64_t>& extra_params) {
  if (!a.is_object()) throw ToolFailure("the arguments must be a JSON object");
  auto src = a.find("source");
  if (src == a.end() || !src->is_string() || src->get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos)
    throw ToolFailure("'source' is required: the complete CUDA source of the kernel, as a string");
  const std::string source = src->get<std::string>();
  spec::Annotations ann;
  try {
    ann = spec::parse_annotations(source, label);
  } catch (const Error& e) {
    throw ToolFailure(std::string("the source's kopt: annotation lines: ") + e.what());
  }
  spec::Candidate c;
  c.label = label;
  c.source_name = "kernel.cu";
  if (auto e = a.find("entry"); e != a.end() && !e->is_null()) {
    if (!e->is_string() || !is_identifier(e->get<std::string>()))
      throw ToolFailure("'entry' must be the name of the __global__ function");
    c.entry = e->get<std::string>();
  } else if (ann.entry) {
    c.entry = *ann.entry;
  } else if (s.initial) {
    c.entry = s.initial->entry;
  } else {
    throw ToolFailure("'entry' is required: the name of the __global__ function");
  }
  spec::Launch base;
  if (auto l = a.find("launch"); l != a.end() && !l->is_null()) {
    base = parse_launch(*l, "launch");
  } else if (ann.grid || ann.block) {
    base = *spec::annotated_launch(ann);
  } else {
    base = s.initial && s.initial->launch ? *s.initial->launch : s.launch;
  }
  std::vector<std::pair<const spec::Case*, spec::Launch>> overrides;
  if (auto cl = a.find("case_launch"); cl != a.end() && !cl->is_null()) {
    if (!cl->is_object()) throw ToolFailure("'case_launch' must be an object: case name -> launch");
    for (const auto& [name, lj] : cl->items()) {
      const spec::Case* found = nullptr;
      for (const auto& c2 : s.cases)
        if (c2.name == name) found = &c2;
      if (!found) throw ToolFailure("case_launch: no case named '" + name + "'");
      overrides.emplace_back(found, parse_launch(lj, "case_launch." + name));
    }
    for (size_t i = 0; i < overrides.size(); ++i)
      for (size_t j = i + 1; j < overrides.size(); ++j)
        if (overrides[i].first->sizes == overrides[j].first->sizes && !(overrides[i].second == overrides[j].second))
          throw ToolFailure("case_launch: cases " + overrides[i].first->name + " and " + overrides[j].first->name +
                            " have the same sizes, so they need the same launch");
  }
  c.launch = fold_case_launches(base, overrides);
  if (auto co = a.find("compile_options"); co != a.end() && !co->is_null()) {
    if (!co->is_array()) throw ToolFailure("'compile_options' must be an array of strings");
    for (const auto& x : *co) {
      if (!x.is_string()) throw ToolFailure("'compile_options' must be an array of strings");
      const std::string opt = x.get<std::string>();
      if (opt.find("rdc") != std::string::npos || opt == "-dc")
        throw ToolFailure("compile option '" + opt + "' is refused (no relocatable device code)");
      c.options.push_back(opt);
    }
  }
  c.options.insert(c.options.end(), ann.options.begin(), ann.options.end());
  c.params = ann.params;
  for (const auto& [k, v] : extra_params) c.params[k] = v;
  if (validate) validate_launch(s, *c.launch, c.params);
  // The recorded source carries its entry and launch, so that candidates/NNNN/kernel.cu
  // reproduces the attempt with `kopt evaluate --kernel` (appended: line numbers unchanged).
  c.source = spec::with_evaluated_trailer(source, c.entry, *c.launch, c.options);
  return c;
}

}  // namespace kopt::agent
