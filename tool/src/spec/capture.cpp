#include "spec/capture.h"

#include <algorithm>
#include <limits>
#include <set>

#include "util/error.h"
#include "util/json_read.h"

namespace kopt::spec {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

/// A count: a whole number of 1 or more, up to 2^64 - 1.
uint64_t count_of(const JsonAt& j) {
  const nlohmann::json& v = j.value();
  if (v.is_number_unsigned() && v.get<uint64_t>() >= 1) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 1) return static_cast<uint64_t>(v.get<int64_t>());
  j.fail("expected a whole number of 1 or more (how often the shape was launched), got " + json_describe(v) +
         json_quoted_number_hint(v));
}

}  // namespace

bool is_capture(const nlohmann::json& doc) { return doc.is_object() && doc.contains("kopt_capture"); }

Capture parse_capture(const nlohmann::json& doc, const std::string& where) {
  const JsonAt top(doc, where);
  top.expect_object();
  for (const auto& [key, value] : doc.items()) {
    (void)value;
    if (key != "kopt_capture" && key != "kernel" && key != "sizes" && key != "launches")
      top.at(key).fail("unknown key '" + json_shown(key) +
                           "'; a capture file holds kopt_capture, kernel, sizes and launches (docs/capture.md)",
                       "kopt.capture.002");
  }
  const JsonAt version = top.at("kopt_capture");
  if (!version.value().is_number_integer() || version.value().get<int64_t>() != 1)
    version.fail("expected 1 (the capture format this kopt reads), got " + json_describe(version.value()),
                 "kopt.capture.001");
  Capture c;
  c.kernel = top.at("kernel").string();
  const JsonAt names = top.at("sizes");
  names.expect_array();
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string n = names.at(i).string();
    if (n.empty() || !seen.insert(n).second)
      names.at(i).fail(n.empty() ? "expected a size name, got an empty string" : "size '" + json_shown(n) + "' is listed twice",
                       "kopt.capture.004");
    c.size_names.push_back(n);
  }
  const JsonAt launches = top.at("launches");
  launches.expect_array();
  std::map<std::map<std::string, int64_t>, uint64_t> counts;
  for (size_t i = 0; i < launches.size(); ++i) {
    const JsonAt l = launches.at(i);
    l.expect_object();
    for (const auto& [key, value] : l.value().items()) {
      (void)value;
      if (key != "sizes" && key != "count")
        l.at(key).fail("unknown key '" + json_shown(key) + "'; a launch holds sizes and count", "kopt.capture.002");
    }
    const JsonAt sizes = l.at("sizes");
    sizes.expect_object();
    std::map<std::string, int64_t> tuple;
    for (const auto& [key, value] : sizes.value().items()) {
      (void)value;
      if (!seen.count(key))
        sizes.at(key).fail("'" + json_shown(key) + "' is not one of the capture's sizes (" + join(c.size_names) + ")",
                           "kopt.capture.004");
      tuple[key] = sizes.at(key).integer(1);
    }
    for (const auto& n : c.size_names)
      if (!tuple.count(n)) sizes.fail("size '" + n + "' is missing (the capture's sizes: " + join(c.size_names) + ")", "kopt.capture.004");
    const uint64_t n = count_of(l.at("count"));
    counts[tuple] = saturating_add(counts[tuple], n);
    c.launches = saturating_add(c.launches, n);
  }
  if (counts.empty())
    launches.fail("no launches recorded; run the application with KOPT_CAPTURE set first (docs/capture.md)",
                  "kopt.capture.005");
  for (const auto& [sizes, n] : counts) c.shapes.push_back({sizes, n});
  // Most frequent first; ties in the capture's size order, smallest first.
  auto key = [&](const CapturedShape& s) {
    std::vector<int64_t> k;
    for (const auto& n : c.size_names) k.push_back(s.sizes.at(n));
    return k;
  };
  std::stable_sort(c.shapes.begin(), c.shapes.end(), [&](const CapturedShape& a, const CapturedShape& b) {
    if (a.count != b.count) return a.count > b.count;
    return key(a) < key(b);
  });
  return c;
}

std::string captured_case_name(const Capture& c, size_t index) {
  std::string name = "captured";
  for (const auto& n : c.size_names) name += "_" + n + std::to_string(c.shapes[index].sizes.at(n));
  if (name.size() > 128) name = "captured_" + std::to_string(index);
  return name;
}

nlohmann::json cases_with_capture(const Spec& spec, const nlohmann::json& spec_cases, const Capture& capture,
                                  const std::string& where, CaptureUse* use) {
  std::set<std::string> spec_sizes;
  for (const auto& sc : spec.cases)
    for (const auto& [k, v] : sc.sizes) spec_sizes.insert(k);
  const std::set<std::string> captured(capture.size_names.begin(), capture.size_names.end());
  std::vector<std::string> missing, extra;
  for (const auto& n : spec_sizes)
    if (!captured.count(n)) missing.push_back(n);
  for (const auto& n : capture.size_names)
    if (!spec_sizes.count(n)) extra.push_back(n);
  if (!missing.empty() || !extra.empty())
    throw SpecError("kopt.capture.003",
                    where + ": $.sizes: the captured sizes (" + join(capture.size_names) + ") are not the spec's (" +
                        join(std::vector<std::string>(spec_sizes.begin(), spec_sizes.end())) + ")" +
                        (missing.empty() ? "" : "; missing: " + join(missing)) +
                        (extra.empty() ? "" : "; not in the spec: " + join(extra)) +
                        "; was it captured from another kernel's launch header (kernel '" + json_shown(capture.kernel) +
                        "')?");
  CaptureUse u;
  u.shapes = capture.shapes.size();
  u.launches = capture.launches;
  nlohmann::json out = nlohmann::json::array();
  std::set<std::string> names;
  for (size_t i = 0; i < spec.cases.size(); ++i) {
    if (spec.cases[i].role == CaseRole::performance) {
      ++u.replaced;
      continue;
    }
    out.push_back(spec_cases.at(i));
    names.insert(spec.cases[i].name);
    ++u.correctness;
  }
  for (size_t i = 0; i < capture.shapes.size() && u.taken < kMaxCapturedCases; ++i) {
    std::string name = captured_case_name(capture, i);
    while (names.count(name)) name += "_";
    names.insert(name);
    const CapturedShape& s = capture.shapes[i];
    out.push_back({{"name", name},
                   {"role", "performance"},
                   {"sizes", s.sizes},
                   {"weight", static_cast<double>(s.count)}});
    ++u.taken;
    u.launches_taken = saturating_add(u.launches_taken, s.count);
  }
  if (use) *use = u;
  return out;
}

}  // namespace kopt::spec
