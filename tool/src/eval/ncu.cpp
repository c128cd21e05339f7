// Nsight Compute as an observer of one evaluation (see ncu.h).
#include "eval/ncu.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace kopt::eval {

using nlohmann::json;

namespace {

/// One CSV line: quoted fields ("" inside quotes is a quote), carriage returns dropped.
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (q) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        q = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"') {
      q = true;
    } else if (ch == ',') {
      f.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  f.push_back(cur);
  return f;
}

}  // namespace

json parse_ncu_csv(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> header;
  int i_id = -1, i_kernel = -1, i_section = -1, i_name = -1, i_unit = -1, i_value = -1;
  int i_rule = -1, i_rule_type = -1, i_rule_text = -1, i_speedup_type = -1, i_speedup = -1;
  std::string first_id, kernel;
  json metrics = json::object();
  json rules = json::array();
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '"') continue;
    auto f = split_csv_line(line);
    if (header.empty()) {
      auto find = [&](const char* name) {
        for (size_t k = 0; k < f.size(); ++k)
          if (f[k] == name) return static_cast<int>(k);
        return -1;
      };
      if (find("Metric Name") < 0 || find("Metric Value") < 0) continue;
      header = f;
      i_id = find("ID");
      i_kernel = find("Kernel Name");
      i_section = find("Section Name");
      i_name = find("Metric Name");
      i_unit = find("Metric Unit");
      i_value = find("Metric Value");
      i_rule = find("Rule Name");
      i_rule_type = find("Rule Type");
      i_rule_text = find("Rule Description");
      i_speedup_type = find("Estimated Speedup Type");
      i_speedup = find("Estimated Speedup");
      continue;
    }
    // Metric rows leave the trailing rule columns out (ncu 2025 ends them
    // with "value",); rule rows leave the metric columns empty.
    if (f.size() > header.size() || static_cast<int>(f.size()) <= i_value) continue;
    f.resize(header.size());
    const std::string id = i_id >= 0 ? f[i_id] : "";
    if (first_id.empty()) {
      first_id = id.empty() ? "-" : id;
      if (i_kernel >= 0) kernel = f[i_kernel];
    } else if (!id.empty() && id != first_id) {
      break;  // the first kernel only
    }
    if (f[i_name].empty()) {
      if (i_rule >= 0 && !f[i_rule].empty()) {
        json r = {{"section", i_section >= 0 ? f[i_section] : ""}, {"rule", f[i_rule]}};
        if (i_rule_type >= 0) r["type"] = f[i_rule_type];
        if (i_rule_text >= 0) r["description"] = f[i_rule_text];
        if (i_speedup >= 0 && !f[i_speedup].empty()) {
          r["estimated_speedup"] = f[i_speedup];
          if (i_speedup_type >= 0) r["estimated_speedup_type"] = f[i_speedup_type];
        }
        rules.push_back(std::move(r));
      }
      continue;
    }
    std::string key = (i_section >= 0 && !f[i_section].empty() ? f[i_section] + ": " : std::string()) + f[i_name];
    if (i_unit >= 0 && !f[i_unit].empty()) key += " [" + f[i_unit] + "]";
    std::string v = f[i_value];
    std::string num;
    for (char ch : v)
      if (ch != ',') num += ch;
    char* endp = nullptr;
    const double d = std::strtod(num.c_str(), &endp);
    if (!num.empty() && endp && *endp == '\0' && std::isfinite(d))
      metrics[key] = d;
    else
      metrics[key] = v;
  }
  if (metrics.empty()) return nullptr;
  json out = {{"kernel", kernel}, {"metrics", metrics}};
  if (!rules.empty()) out["rules"] = rules;
  return out;
}

std::string find_ncu() { return util::find_program("ncu", {"/usr/local/cuda/bin", "/opt/nvidia/nsight-compute"}); }

std::vector<std::string> ncu_prefix(const std::string& ncu, const std::string& entry,
                                    const std::filesystem::path& log_file) {
  return {ncu, "--target-processes", "all", "--clock-control", "none", "--kernel-name-base", "function", "-k", entry,
          "-c", "1", "--section", "SpeedOfLight", "--section", "Occupancy", "--section", "LaunchStats", "--csv",
          "--page", "details", "--log-file", log_file.string()};
}

json read_ncu_log(const std::filesystem::path& log_file, const std::string& outcome) {
  std::string text;
  try {
    text = fs::read_file(log_file, "ncu log", fs::kLogMaxBytes);
  } catch (const std::exception&) {
    // ncu never started, or wrote nothing: the outcome says why.
  }
  if (text.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return {{"available", false},
            {"reason", "profiling unavailable: not permitted to read the GPU performance counters (ERR_NVGPUCTRPERM); "
                       "an administrator must allow it (NVreg_RestrictProfilingToAdminUsers=0) or run as root"}};
  json parsed = parse_ncu_csv(text);
  if (parsed.is_null())
    return {{"available", false},
            {"reason", "profiling unavailable: ncu gave no metrics (" + outcome + ")" +
                           (text.empty() ? std::string() : ": " + clip_middle(text, 1500))}};
  parsed["available"] = true;
  return parsed;
}

}  // namespace kopt::eval
