// PauseGate (compute/pause_gate.h): when a node acknowledges ford's
// stop-the-world pause, when it refuses, and that sessions stay parked
// until the pause is over.
#include "compute/pause_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pandora {
namespace {

struct Calls {
  std::vector<uint64_t> acks, refusals;
  PauseGate gate{[this](uint64_t e) { acks.push_back(e); }, [this](uint64_t e) { refusals.push_back(e); }};
};

TEST(PauseGate, AnIdleNodeAcknowledgesAtOnceAndOncePerEpoch) {
  Calls c;
  c.gate.set_epoch(3);
  c.gate.set_epoch(3);  // re-read after a watch: no second acknowledgement
  EXPECT_EQ(c.acks, (std::vector<uint64_t>{3}));
  c.gate.set_epoch(0);
  c.gate.set_epoch(4);
  EXPECT_EQ(c.acks, (std::vector<uint64_t>{3, 4}));
  EXPECT_TRUE(c.refusals.empty());
  EXPECT_EQ(c.gate.acknowledged(), 4u);
}

TEST(PauseGate, TheAcknowledgementWaitsForTransactionsInFlight) {
  Calls c;
  c.gate.enter();
  c.gate.enter();
  c.gate.set_epoch(5);
  EXPECT_TRUE(c.acks.empty()) << "acknowledged with two transactions in flight";
  c.gate.leave(false);
  EXPECT_TRUE(c.acks.empty()) << "acknowledged with one transaction in flight";
  c.gate.leave(false);
  EXPECT_EQ(c.acks, (std::vector<uint64_t>{5}));
}

TEST(PauseGate, ASessionStaysParkedUntilThePauseIsOver) {
  Calls c;
  c.gate.set_epoch(6);
  std::atomic<bool> resuming{false};
  bool entered_before_resume = false;
  std::thread session([&] {
    c.gate.enter();
    entered_before_resume = !resuming.load();
    c.gate.leave(false);
  });
  resuming.store(true);
  c.gate.set_epoch(0);
  session.join();
  EXPECT_FALSE(entered_before_resume) << "a transaction began during a stop-the-world pause";
}

TEST(PauseGate, ANodeThatNeedsRecoveryRefusesEveryPauseAndNeverAcknowledges) {
  Calls c;
  c.gate.enter();
  c.gate.leave(true);  // its coordinator halted: a latch may be left held
  EXPECT_TRUE(c.refusals.empty()) << "refused with no pause asked";
  c.gate.set_epoch(9);
  c.gate.set_epoch(9);
  c.gate.set_epoch(10);
  EXPECT_EQ(c.refusals, (std::vector<uint64_t>{9, 10}));
  EXPECT_TRUE(c.acks.empty());
  EXPECT_EQ(c.gate.refused(), 10u);
}

TEST(PauseGate, AHaltDuringAPauseRefusesIt) {
  Calls c;
  c.gate.enter();
  c.gate.set_epoch(4);
  c.gate.leave(true);
  EXPECT_EQ(c.refusals, (std::vector<uint64_t>{4}));
  EXPECT_TRUE(c.acks.empty());
}

}  // namespace
}  // namespace pandora

namespace pandora {
namespace {

// A session that records when it runs and whether the gate had acknowledged
// the pause by then.
class ProbeSession final : public Session {
 public:
  explicit ProbeSession(Calls& c) : c_(c) {}
  void run(const std::function<void(Txn&)>&) override { acks_seen.push_back(c_.acks.size()); }
  CommitOutcome transact(const std::function<AbortReason(Txn&)>&) override {
    acks_seen.push_back(c_.acks.size());
    // A pause begins while this transaction runs: not acknowledged yet.
    if (pause_during) c_.gate.set_epoch(pause_during);
    acks_during.push_back(c_.acks.size());
    return CommitOutcome{true, AbortReason::kNone, {}};
  }
  std::vector<size_t> acks_seen, acks_during;
  uint64_t pause_during = 0;

 private:
  Calls& c_;
};

// The bench's load and run hold the gate for their whole stretch; the
// check's transactions (a GatedSession) each are one stretch: a pause that
// begins inside one is acknowledged when it ends, not before.
TEST(PauseGate, HoldsAndGatedSessionsAreStretchesThePauseWaitsFor) {
  Calls c;
  {
    PauseGateHold hold(&c.gate);
    c.gate.set_epoch(7);
    EXPECT_TRUE(c.acks.empty()) << "acknowledged in the middle of a held stretch (a load, a run)";
  }
  EXPECT_EQ(c.acks, (std::vector<uint64_t>{7}));
  c.gate.set_epoch(0);

  ProbeSession inner(c);
  bool halted = false;
  GatedSession s(inner, c.gate, [&halted] { return halted; });
  inner.pause_during = 8;
  EXPECT_TRUE(s.transact([](Txn&) { return AbortReason::kNone; }).committed);
  EXPECT_EQ(inner.acks_during, (std::vector<size_t>{1})) << "acknowledged while the transaction ran";
  EXPECT_EQ(c.acks, (std::vector<uint64_t>{7, 8})) << "acknowledged when it ended";
  c.gate.set_epoch(0);

  // A halted session's node refuses the next pause instead.
  inner.pause_during = 0;
  halted = true;
  s.transact([](Txn&) { return AbortReason::kNone; });
  c.gate.set_epoch(9);
  EXPECT_EQ(c.refusals, (std::vector<uint64_t>{9}));
  EXPECT_EQ(c.acks, (std::vector<uint64_t>{7, 8}));

  // A null hold holds nothing.
  { PauseGateHold none(nullptr); }
}

}  // namespace
}  // namespace pandora
