// Shape captures: the file a generated launch header writes when the
// application runs with KOPT_CAPTURE set (docs/capture.md), turned into
// weighted performance cases for `kopt optimize --input-cases`.
//
//   {"kopt_capture": 1, "kernel": "sgemm", "sizes": ["M", "N", "K"],
//    "launches": [{"sizes": {"M": 4096, "N": 1024, "K": 512}, "count": 120}, ...]}
//
// Errors (SpecError, exit 2) name the file and the JSON path:
//   kopt.capture.001  "kopt_capture" is not 1 (a newer format, or not a capture)
//   kopt.capture.002  an unknown key (top level or in a launch)
//   kopt.capture.003  the capture's size names are not the spec's
//   kopt.capture.004  a launch whose sizes are not the capture's "sizes"
//   kopt.capture.005  no launches
// Wrong types and values out of range are kopt.json.005 (util/json_read.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kopt::spec {

/// At most this many captured shapes become cases: the most frequent ones.
constexpr size_t kMaxCapturedCases = 64;

/// True when `doc` is a shape capture (an object with "kopt_capture").
bool is_capture(const nlohmann::json& doc);

/// One distinct size tuple of a capture and how often it was launched.
struct CapturedShape {
  std::map<std::string, int64_t> sizes;
  uint64_t count = 0;
};

struct Capture {
  std::string kernel;                  // the launch header's kernel name (NAME of optimize_kernel())
  std::vector<std::string> size_names; // in launch_config()'s order
  std::vector<CapturedShape> shapes;   // distinct, most frequent first (ties: by sizes)
  uint64_t launches = 0;               // sum of the counts (saturating)
};

/// Reads and checks a capture document; `where` names its file in messages.
/// Launches with the same sizes are added together.
Capture parse_capture(const nlohmann::json& doc, const std::string& where);

/// The case name of a captured shape: "captured_M4096_N1024_K512" (sizes in
/// the capture's order), or "captured_<index>" when that would be too long
/// for a file name.
std::string captured_case_name(const Capture& c, size_t index);

/// What cases_with_capture() did, for the caller to say.
struct CaptureUse {
  size_t shapes = 0;           // distinct shapes in the file
  size_t taken = 0;            // performance cases made (at most kMaxCapturedCases)
  uint64_t launches = 0;       // launches in the file
  uint64_t launches_taken = 0; // launches of the shapes taken
  size_t replaced = 0;         // the spec's own performance cases, dropped
  size_t correctness = 0;      // the spec's correctness cases, kept
};

/// The "cases" array for a spec whose performance cases come from a
/// capture: the spec's correctness cases as they are (from `spec_cases`, the
/// spec document's "cases"), then one performance case per captured shape,
/// the most frequent first, weighted by its count. Throws kopt.capture.003
/// when the capture's size names are not those of `spec` (naming the
/// missing or extra ones).
nlohmann::json cases_with_capture(const Spec& spec, const nlohmann::json& spec_cases, const Capture& capture,
                                  const std::string& where, CaptureUse* use = nullptr);

}  // namespace kopt::spec
