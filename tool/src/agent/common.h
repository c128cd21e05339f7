// Small helpers shared by the agent's files (internal: not part of agent.h).
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include "agent/llm.h"

namespace kopt::agent {

using Clock = std::chrono::steady_clock;

/// A tool call that cannot be carried out: the message goes back to the model.
struct ToolFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Said wherever the model drafted the workload (description-only mode).
extern const char* const kGeneratedWarning;

/// `v` with `precision` significant digits.
std::string fmt(double v, int precision = 4);

/// prefix + n as four digits + suffix ("call-0007.json").
std::string numbered(const char* prefix, int n, const char* suffix);

/// The head and tail of a long text, with what was left out said.
std::string clip(const std::string& s, size_t max);

std::string lower(std::string s);

/// A C identifier.
bool is_identifier(const std::string& s);

Message msg(Role role, std::string content);

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace kopt::agent
