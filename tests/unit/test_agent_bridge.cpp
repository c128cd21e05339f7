// The hand-over between the agent's conversation thread and the run driver.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "agent/bridge.h"

namespace {

using kopt::agent::Bridge;
using kopt::propose::Proposal;

kopt::spec::Candidate cand(const std::string& label) {
  kopt::spec::Candidate c;
  c.label = label;
  return c;
}

/// A stand-in proposer that offers `n` candidates at once, as a search does.
class Burst final : public kopt::propose::Proposer {
 public:
  explicit Burst(int n) : n_(n) {}
  std::string name() const override { return "burst"; }
  void start(kopt::propose::EvaluationService&) override {}
  void observe_recorded(const kopt::model::Attempt&) override {}
  Proposal propose() override {
    if (proposed_ < n_) return Proposal::of(cand("b" + std::to_string(proposed_++)));
    return observed.size() < static_cast<size_t>(n_) ? Proposal::wait() : Proposal::done();
  }
  void observe(const kopt::spec::Candidate& c, const kopt::model::Attempt&) override { observed.push_back(c.label); }
  std::optional<kopt::spec::Candidate> candidate_for(const kopt::model::Attempt&) const override { return {}; }
  std::vector<std::string> observed;

 private:
  int n_, proposed_ = 0;
};

/// The driver's side: proposes and observes until done; each attempt gets the next index.
std::vector<std::string> drive(Bridge& b) {
  std::vector<std::string> order;
  std::vector<kopt::spec::Candidate> in_flight;
  int index = 0;
  for (;;) {
    Proposal p = b.propose();
    if (p.kind == Proposal::Kind::candidate) {
      in_flight.push_back(p.candidate);
      continue;
    }
    if (p.kind == Proposal::Kind::done && in_flight.empty()) return order;
    if (in_flight.empty()) throw std::logic_error("wait with nothing outstanding");
    kopt::model::Attempt a;
    a.index = ++index;
    a.label = in_flight.front().label;
    order.push_back(a.label);
    b.observe(in_flight.front(), a);
    in_flight.erase(in_flight.begin());
  }
}

TEST(AgentBridge, EvaluationsComeBackInOrder) {
  Bridge b;
  std::vector<int> got;
  std::thread conv([&] {
    got.push_back(b.evaluate(cand("x")).index);
    got.push_back(b.evaluate(cand("y")).index);
    b.ended();
  });
  EXPECT_EQ(drive(b), (std::vector<std::string>{"x", "y"}));
  conv.join();
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
}

TEST(AgentBridge, ATuneHandsTheDriverSeveralCandidatesAtOnce) {
  Bridge b;
  Burst inner(3);
  std::thread conv([&] {
    b.tune(inner);
    b.evaluate(cand("after"));
    b.ended();
  });
  EXPECT_EQ(drive(b), (std::vector<std::string>{"b0", "b1", "b2", "after"}));
  conv.join();
  EXPECT_EQ(inner.observed, (std::vector<std::string>{"b0", "b1", "b2"}));
}

TEST(AgentBridge, StopWakesAPendingEvaluation) {
  Bridge b;
  bool stopped = false;
  std::thread conv([&] {
    try {
      b.evaluate(cand("never"));
    } catch (const kopt::agent::Stopped&) {
      stopped = true;
    }
    b.ended();
  });
  const Proposal p = b.propose();  // handed over, never observed
  EXPECT_EQ(p.kind, Proposal::Kind::candidate);
  b.stop();
  conv.join();
  EXPECT_TRUE(stopped);
  EXPECT_EQ(b.propose().kind, Proposal::Kind::done);
  EXPECT_THROW(b.evaluate(cand("late")), kopt::agent::Stopped);
}

TEST(AgentBridge, AnErrorOfTheConversationReachesTheDriver) {
  Bridge b;
  std::thread conv([&] { b.ended(std::make_exception_ptr(std::runtime_error("boom"))); });
  conv.join();
  EXPECT_THROW(b.propose(), std::runtime_error);
  EXPECT_EQ(b.propose().kind, Proposal::Kind::done);
}

}  // namespace
