// Kernel parameters against the signature (see kernel_params.h).
#include "eval/kernel_params.h"

#include <algorithm>

namespace kopt::eval {

std::vector<ExpectedParam> expected_params(const std::vector<spec::Param>& signature) {
  std::vector<ExpectedParam> out;
  for (const spec::Param& p : signature) {
    if (p.is_buffer && p.role == spec::Role::constant) continue;  // a __constant__ symbol, not a parameter
    ExpectedParam e;
    e.name = p.name;
    if (p.is_buffer) {
      e.type = std::string("pointer to ") + spec::dtype_name(p.dtype);
      e.size = 8;
    } else {
      e.type = spec::dtype_name(p.dtype);
      e.size = spec::dtype_size(p.dtype);
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::string> param_mismatch(const std::vector<ExpectedParam>& expected,
                                          const std::vector<size_t>& actual) {
  auto bytes = [](size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); };
  auto describe = [&](size_t i) {
    const ExpectedParam& e = expected[i];
    return "parameter " + std::to_string(i) + " ('" + e.name + "', " + e.type + ", " + bytes(e.size) + ")";
  };
  std::string why;
  const size_t common = std::min(expected.size(), actual.size());
  for (size_t i = 0; i < common && why.empty(); ++i)
    if (expected[i].size != actual[i])
      why = describe(i) + " is " + bytes(actual[i]) + " in the kernel";
  if (why.empty() && actual.size() < expected.size()) why = describe(actual.size()) + " is missing from the kernel";
  if (why.empty() && actual.size() > expected.size())
    why = "the kernel's parameter " + std::to_string(expected.size()) + " (" + bytes(actual[expected.size()]) +
          ") has no entry in the signature";
  if (why.empty()) return std::nullopt;
  std::string names;
  for (const ExpectedParam& e : expected) names += (names.empty() ? "" : ", ") + e.name;
  std::string msg = "the kernel's parameters do not match the spec's signature: ";
  if (actual.size() != expected.size())
    msg += "it has " + std::to_string(actual.size()) + " parameter" + (actual.size() == 1 ? "" : "s") +
           ", the signature " + std::to_string(expected.size()) + " (" + (names.empty() ? "none" : names) + "); ";
  return msg + why;
}

}  // namespace kopt::eval
