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
