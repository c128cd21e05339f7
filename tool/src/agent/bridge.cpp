#include "agent/bridge.h"

namespace kopt::agent {

model::Attempt Bridge::evaluate(spec::Candidate c) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) throw Stopped();
  request_ = std::move(c);
  result_.reset();
  cv_.notify_all();
  cv_.wait(lock, [&] { return result_.has_value() || stopped_; });
  if (!result_) throw Stopped();
  model::Attempt a = std::move(*result_);
  result_.reset();
  return a;
}

void Bridge::tune(propose::Proposer& inner) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) return;
  inner_ = &inner;
  inner_done_ = false;
  cv_.notify_all();
  cv_.wait(lock, [&] { return inner_done_ || stopped_; });
  inner_ = nullptr;
}

void Bridge::ended(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  error_ = error;
  cv_.notify_all();
}

void Bridge::wait_for_driver() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return asked_ || stopped_; });
}

propose::Proposal Bridge::propose() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!asked_) {
    asked_ = true;
    cv_.notify_all();
  }
  for (;;) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if (stopped_) return propose::Proposal::done();
    if (inner_ && !inner_done_) {
      // The conversation waits in tune(): the inner proposer is the driver's alone.
      propose::Proposal p = inner_->propose();
      if (p.kind == propose::Proposal::Kind::candidate) {
        ++outstanding_;
        return p;
      }
      if (p.kind == propose::Proposal::Kind::wait || outstanding_ > 0) return propose::Proposal::wait();
      inner_done_ = true;  // done, and everything it proposed is observed
      cv_.notify_all();
      continue;
    }
    if (request_) {
      ++outstanding_;
      propose::Proposal p = propose::Proposal::of(std::move(*request_));
      request_.reset();
      return p;
    }
    if (outstanding_ > 0) return propose::Proposal::wait();
    if (ended_) return propose::Proposal::done();
    cv_.wait(lock);
  }
}

void Bridge::observe(const spec::Candidate& c, const model::Attempt& a) {
  std::lock_guard<std::mutex> lock(mu_);
  if (outstanding_ > 0) --outstanding_;
  if (inner_ && !inner_done_) {
    inner_->observe(c, a);
    return;  // the next propose() tells the conversation when the search is over
  }
  result_ = a;
  cv_.notify_all();
}

void Bridge::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

bool Bridge::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

}  // namespace kopt::agent
