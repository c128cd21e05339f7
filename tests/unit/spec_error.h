// The id and message of the kopt::SpecError `f` throws; a test failure (and
// two empty strings) when it throws something else or nothing. Shared by the
// unit tests of the readers that name the file and the JSON path.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "util/error.h"

namespace kopt::test {

inline std::pair<std::string, std::string> spec_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const kopt::SpecError& e) {
    return {e.id(), e.what()};
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a SpecError: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

}  // namespace kopt::test
