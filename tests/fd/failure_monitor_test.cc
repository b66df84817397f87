// FailureMonitor with a fake clock: local suspicion after the timeout, the
// majority rule over fresh reports, and unwatched nodes.
#include "recovery/fd/failure_monitor.h"

#include <gtest/gtest.h>

namespace pandora::fd {
namespace {

using wire::SenderKind;

constexpr uint64_t kMs = 1'000'000;
constexpr NodeKey kA{SenderKind::kCompute, 5};
constexpr NodeKey kB{SenderKind::kCompute, 6};
constexpr NodeKey kMem{SenderKind::kMemory, 5};

MonitorOptions options(uint32_t replicas = 3) {
  return MonitorOptions{.self = 1, .replicas = replicas, .timeout_ns = 5 * kMs, .report_ttl_ns = 1 * kMs};
}

std::vector<uint32_t> ids(std::initializer_list<uint32_t> l) { return l; }

TEST(FailureMonitor, SuspectsOnlyAfterTheTimeout) {
  FailureMonitor m(options());
  m.watch(kA, 100 * kMs);
  EXPECT_TRUE(m.local_suspects(105 * kMs).empty());  // exactly the timeout: not yet
  EXPECT_EQ(m.local_suspects(105 * kMs + 1), std::vector<NodeKey>{kA});
  m.heard(kA, 104 * kMs);
  EXPECT_TRUE(m.local_suspects(109 * kMs).empty());
  EXPECT_EQ(m.local_suspects(110 * kMs), std::vector<NodeKey>{kA});
  // An older heartbeat time (another thread's) does not move it back.
  m.heard(kA, 103 * kMs);
  EXPECT_EQ(m.last_heard(kA), 104 * kMs);
  // Watching again changes nothing.
  m.watch(kA, 200 * kMs);
  EXPECT_EQ(m.last_heard(kA), 104 * kMs);
}

// Memory nodes have their own, longer timeout: failing one over is final,
// so a daemon starved for a few milliseconds must not be taken for dead.
TEST(FailureMonitor, MemoryNodesWaitOutTheirOwnTimeout) {
  MonitorOptions o = options();
  o.memory_timeout_ns = 50 * kMs;
  FailureMonitor m(o);
  m.watch(kA, 0);
  m.watch(kMem, 0);
  EXPECT_EQ(m.local_suspects(6 * kMs), std::vector<NodeKey>{kA});
  EXPECT_EQ(m.next_suspicion(6 * kMs), 50 * kMs + 1);
  EXPECT_EQ(m.local_suspects(50 * kMs + 1), (std::vector<NodeKey>{kA, kMem}));  // in key order
  // Unset, memory nodes use the common timeout.
  FailureMonitor same(options());
  same.watch(kMem, 0);
  EXPECT_EQ(same.local_suspects(5 * kMs + 1), std::vector<NodeKey>{kMem});
}

TEST(FailureMonitor, NextSuspicionIsTheEarliestTimeout) {
  FailureMonitor m(options());
  EXPECT_EQ(m.next_suspicion(0), UINT64_MAX);
  m.watch(kA, 10 * kMs);
  m.watch(kB, 12 * kMs);
  EXPECT_EQ(m.next_suspicion(11 * kMs), 15 * kMs + 1);
  EXPECT_TRUE(m.local_suspects(15 * kMs + 1 - 1).empty());
  EXPECT_FALSE(m.local_suspects(15 * kMs + 1).empty());
  m.heard(kA, 14 * kMs);
  EXPECT_EQ(m.next_suspicion(14 * kMs), 17 * kMs + 1);  // now B
  // Suspected nodes do not count: the next is the one still unsuspected.
  EXPECT_EQ(m.next_suspicion(18 * kMs), 19 * kMs + 1);
  EXPECT_EQ(m.next_suspicion(20 * kMs), UINT64_MAX);
}

TEST(FailureMonitor, OneOfThreeIsNotAMajorityTwoOfThreeIs) {
  FailureMonitor m(options());
  m.watch(kA, 0);
  m.watch(kB, 0);
  const uint64_t t = 10 * kMs;
  m.heard(kB, t);  // B is alive here
  ASSERT_EQ(m.local_suspects(t), std::vector<NodeKey>{kA});
  EXPECT_TRUE(m.failed(t).empty());  // only our own vote
  EXPECT_EQ(m.votes(kA, t), 1u);

  m.report(2, SenderKind::kCompute, ids({6}), t);  // replica 2 suspects B only
  EXPECT_TRUE(m.failed(t).empty());                // A: 1 of 3, B: 1 of 3

  m.report(3, SenderKind::kCompute, ids({5, 6}), t);  // replica 3 suspects both
  EXPECT_EQ(m.failed(t), (std::vector<NodeKey>{kA, kB}));  // A: us + 3, B: 2 + 3
}

TEST(FailureMonitor, PeersAloneMakeAMajority) {
  FailureMonitor m(options());
  m.watch(kA, 0);
  m.heard(kA, 10 * kMs);
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);
  m.report(3, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_EQ(m.failed(10 * kMs), std::vector<NodeKey>{kA});
}

TEST(FailureMonitor, StaleReportsStopCounting) {
  FailureMonitor m(options());
  m.watch(kA, 0);
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_EQ(m.failed(10 * kMs), std::vector<NodeKey>{kA});
  EXPECT_EQ(m.failed(11 * kMs), std::vector<NodeKey>{kA});  // exactly the ttl old
  EXPECT_TRUE(m.failed(11 * kMs + 1).empty());
  EXPECT_EQ(m.votes(kA, 11 * kMs + 1), 1u);
  m.report(2, SenderKind::kCompute, ids({5}), 12 * kMs);  // refreshed
  EXPECT_EQ(m.failed(12 * kMs), std::vector<NodeKey>{kA});
  m.report(2, SenderKind::kCompute, ids({}), 12 * kMs + 1);  // replica 2 heard it again
  EXPECT_TRUE(m.failed(12 * kMs + 1).empty());
}

TEST(FailureMonitor, ReportsAreKeptPerKind) {
  FailureMonitor m(options());
  m.watch(kA, 0);
  m.watch(kMem, 0);
  m.report(2, SenderKind::kMemory, ids({5}), 10 * kMs);
  EXPECT_EQ(m.failed(10 * kMs), std::vector<NodeKey>{kMem});  // not compute node 5
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_EQ(m.failed(10 * kMs), (std::vector<NodeKey>{kA, kMem}));
}

TEST(FailureMonitor, ReportsFromSelfOrUnknownReplicasDoNotVote) {
  FailureMonitor m(options());
  m.watch(kA, 0);
  m.heard(kA, 10 * kMs);
  for (uint32_t who : {0u, 1u, 4u, 1000u}) m.report(who, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_EQ(m.votes(kA, 10 * kMs), 0u);
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);  // the same replica twice is one vote
  EXPECT_EQ(m.votes(kA, 10 * kMs), 1u);
  EXPECT_TRUE(m.failed(10 * kMs).empty());
}

TEST(FailureMonitor, UnwatchedNodesNeverFail) {
  FailureMonitor m(options());
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);
  m.report(3, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_TRUE(m.failed(10 * kMs).empty());
  EXPECT_TRUE(m.local_suspects(100 * kMs).empty());
  EXPECT_FALSE(m.heard(kA, 10 * kMs));

  m.watch(kA, 0);
  EXPECT_EQ(m.failed(10 * kMs), std::vector<NodeKey>{kA});
  m.unwatch(kA);
  EXPECT_TRUE(m.failed(10 * kMs).empty());
  // Watched again (a new node under the id): the old reports are forgotten.
  m.watch(kA, 10 * kMs);
  EXPECT_EQ(m.votes(kA, 10 * kMs), 0u);
}

TEST(FailureMonitor, SingleReplicaDecidesAlone) {
  FailureMonitor m(options(1));
  m.watch(kA, 0);
  EXPECT_TRUE(m.failed(5 * kMs).empty());
  EXPECT_EQ(m.failed(5 * kMs + 1), std::vector<NodeKey>{kA});
}

TEST(FailureMonitor, FiveReplicasNeedThree) {
  FailureMonitor m(options(5));
  m.watch(kA, 0);
  m.report(2, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_TRUE(m.failed(10 * kMs).empty());  // us + 2 = 2 of 5
  m.report(4, SenderKind::kCompute, ids({5}), 10 * kMs);
  EXPECT_EQ(m.failed(10 * kMs), std::vector<NodeKey>{kA});
}

}  // namespace
}  // namespace pandora::fd
