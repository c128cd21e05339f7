// The hand-over between the agent's conversation, which runs on its own thread
// and needs each result before its next model turn, and the run driver, which
// pulls candidates from a proposer (propose/proposer.h) and pushes results
// back. The conversation calls evaluate() or tune() and blocks; the driver's
// propose() hands over what it asked for, and observe() wakes it.
//
// Exactly one side runs at a time: while the conversation thread works, the
// driver waits in propose() (or reports a result it already recorded), so the
// conversation may read the driver's EvaluationService between calls.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "propose/proposer.h"

namespace kopt::agent {

/// Thrown into the conversation when the driver asks for nothing more.
struct Stopped : std::runtime_error {
  Stopped() : std::runtime_error("the run is stopping") {}
};

class Bridge {
 public:
  // --- the conversation thread

  /// Has the driver evaluate and record `c`; returns the recorded attempt.
  /// Throws Stopped once stop() was called.
  model::Attempt evaluate(spec::Candidate c);
  /// Has the driver evaluate what `inner` proposes until it is done and every
  /// proposal is observed (the hybrid's template search). Returns early, with
  /// what was observed, once stop() was called.
  void tune(propose::Proposer& inner);
  /// The conversation is over; `error` is rethrown from the driver's next propose().
  void ended(std::exception_ptr error = nullptr);
  /// Waits until the driver first asks for a candidate (the initial kernel
  /// and the baseline are recorded by then, and the GPU is idle), or stop().
  void wait_for_driver();

  // --- the driver's thread (through the agent proposer)

  /// Blocks until the conversation asks for an evaluation or ends.
  propose::Proposal propose();
  void observe(const spec::Candidate& c, const model::Attempt& a);
  /// Wakes the conversation: pending and later evaluate() calls throw Stopped.
  void stop();
  bool stopped() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<spec::Candidate> request_;  // evaluate(): not yet handed to the driver
  std::optional<model::Attempt> result_;    // evaluate(): its attempt
  propose::Proposer* inner_ = nullptr;      // tune(): the search in progress
  bool inner_done_ = false;
  int outstanding_ = 0;                     // handed to the driver, not yet observed
  bool ended_ = false, stopped_ = false;
  bool asked_ = false;  // the driver has called propose()
  std::exception_ptr error_;
};

}  // namespace kopt::agent
