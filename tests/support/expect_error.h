// Checking kopt's errors in tests: that a call throws an error of the
// expected type with the expected stable id ("kopt.spec.104") and a message
// that contains the expected pieces. Test support, not part of the tool:
// header-only, included as "support/expect_error.h".
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "util/error.h"

namespace kopt::test {

/// Runs `f` and expects it to throw an `E` (a kopt::Error: SpecError, the
/// default, for bad input; UsageError; ...) whose id() is `id` and whose
/// what() contains every one of `needles`. A test failure when `f` returns;
/// an exception of another type passes through (and fails the test).
template <typename E = kopt::SpecError>
void expect_error(const std::function<void()>& f, const std::string& id,
                  const std::vector<std::string>& needles = {}) {
  try {
    f();
  } catch (const E& e) {
    EXPECT_EQ(e.id(), id) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected error " << id << ", nothing thrown";
}

}  // namespace kopt::test
