// The engine when the transport misbehaves under it (FaultConnection wraps
// the real connections to real daemons):
//  * commit() reports committed before its latch releases complete - they
//    are still in flight when it returns;
//  * a release that fails halts the coordinator (its node needs recovery)
//    instead of being dropped;
//  * a latch CAS that reports a transport error but landed at the daemon
//    halts the coordinator instead of "releasing" what it cannot know it
//    holds.
#include <cstring>

#include <gtest/gtest.h>

#include "common/latch.h"
#include "common/slot_layout.h"
#include "compute/scheduler.h"
#include "tests/compute/compute_test_support.h"
#include "tests/compute/fault_connection.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kAccounts = 1;
constexpr uint64_t kRows = 16;

class EngineFailureTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    memds_ = std::make_unique<MemdCluster>(2);
    ASSERT_TRUE(memds_->ok()) << memds_->error();
    cluster_ = connect_with_accounts(memds_->config(1, GetParam(), 2), kAccounts, kRows, 100);
    ASSERT_TRUE(cluster_);
    rule_ = std::make_shared<FaultRule>([](size_t, const PostedOp&) { return Fate::kPass; });
    auto conns = cluster_->open_connections();
    ASSERT_TRUE(conns) << conns.status().to_string();
    worker_ = std::make_unique<Worker>(*cluster_, 0, 1, 0, FaultConnection::wrap(std::move(*conns), rule_));
  }

  // Runs `body` on the worker's only coordinator.
  void run(const std::function<void(Coordinator&)>& body) { worker_->run(body); }
  TxnEngine& engine() { return worker_->coordinator(0).engine(); }

  // The latch word's address of `key` on its primary, and the primary.
  std::pair<size_t, uint64_t> latch_of(uint64_t key) {
    const RawSlot s = raw_find(*cluster_, kAccounts, key);
    EXPECT_TRUE(s.found);
    return {cluster_->replica_indexes(cluster_->placement().shard_of(kAccounts, key))[0], s.offset + kSlotLatchOffset};
  }

  // One transaction adding 1 to `key`.
  static CommitOutcome increment(Txn& t, uint64_t key) {
    t.begin();
    auto v = t.update(kAccounts, key);
    if (!v) return CommitOutcome{false, v.reason(), {}};
    int64_t x = as_i64(*v) + 1;
    std::memcpy((*v).data(), &x, sizeof x);
    return t.commit();
  }

  std::unique_ptr<MemdCluster> memds_;
  std::unique_ptr<Cluster> cluster_;
  std::shared_ptr<FaultRule> rule_;
  std::unique_ptr<Worker> worker_;
};

TEST_P(EngineFailureTest, CommitReportsCommittedBeforeItsLatchReleasesComplete) {
  size_t in_flight = 0;
  run([&](Coordinator& c) {
    const CommitOutcome o = increment(c.txn(), 3);
    ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
    // The coroutine did not yield since commit() posted the release, so
    // it cannot have completed: commit() did not wait for it.
    in_flight = c.ops().outstanding();
  });
  EXPECT_EQ(in_flight, 1u) << "commit() waited for its latch release";
  // The scheduler drained it when the task ended: released, not halted.
  const RawSlot after = raw_find(*cluster_, kAccounts, 3);
  EXPECT_EQ(after.latch, 0u);
  EXPECT_EQ(as_i64(after.value), 101);
  EXPECT_FALSE(engine().halted());
}

// Latch words are posted Durability::kVisible (a memory node's power loss
// makes every latch stale anyway), and nothing else is: the log record and
// the commit's writes must be persistent when the transaction commits.
TEST_P(EngineFailureTest, OnlyLatchWordsArePostedVisible) {
  struct Seen {
    size_t node;
    PostedOp op;
  };
  std::vector<Seen> seen;
  *rule_ = [&seen](size_t node, const PostedOp& op) {
    if (op.op != OpType::kRead) seen.push_back({node, op});
    return Fate::kPass;
  };
  run([&](Coordinator& c) { ASSERT_TRUE(increment(c.txn(), 7).committed); });
  const auto [primary, latch] = latch_of(7);
  const RawSlot backup = raw_find(*cluster_, kAccounts, 7, 1);
  const size_t backup_node = cluster_->replica_indexes(cluster_->placement().shard_of(kAccounts, 7))[1];
  size_t latch_ops = 0, version_writes = 0, other_writes = 0;
  for (const Seen& s : seen) {
    const bool is_latch = s.node == primary && s.op.remote == latch;
    if (is_latch) {
      ++latch_ops;
      EXPECT_EQ(s.op.durability, Durability::kVisible) << op_name(s.op.op) << " of the latch word";
      continue;
    }
    EXPECT_EQ(s.op.durability, Durability::kPersistent)
        << op_name(s.op.op) << " of " << s.op.len << " bytes at " << s.op.remote << " on node " << s.node;
    if (s.op.op != OpType::kWrite) continue;
    if ((s.node == primary && s.op.remote == latch - kSlotLatchOffset + kSlotVersionOffset) ||
        (s.node == backup_node && s.op.remote == backup.offset + kSlotVersionOffset)) {
      ++version_writes;
    } else {
      ++other_writes;
    }
  }
  EXPECT_EQ(latch_ops, 2u) << "the latch CAS and its release";
  EXPECT_EQ(version_writes, 2u) << "the commit's version WRITE on each replica";
  EXPECT_GE(other_writes, 2u) << "the log record and the value WRITEs";
}

TEST_P(EngineFailureTest, AFailedLatchReleaseHaltsTheCoordinatorInsteadOfBeingDropped) {
  const auto [primary, latch] = latch_of(4);
  // Every WRITE to key 4's latch word is lost (the link failed).
  *rule_ = [primary = primary, latch = latch](size_t node, const PostedOp& op) {
    return op.op == OpType::kWrite && node == primary && op.remote == latch ? Fate::kDrop : Fate::kPass;
  };
  CommitOutcome first, next;
  run([&](Coordinator& c) {
    first = increment(c.txn(), 4);
    next = increment(c.txn(), 5);  // begin() collects the failed release
  });
  // The transaction committed (every replica holds the new value)...
  ASSERT_TRUE(first.committed) << abort_reason_name(first.reason);
  EXPECT_EQ(as_i64(raw_find(*cluster_, kAccounts, 4).value), 101);
  EXPECT_EQ(as_i64(raw_find(*cluster_, kAccounts, 4, 1).value), 101);
  // ...but its latch is still held by this live pid, so the coordinator
  // stops and says its node must be recovered.
  EXPECT_NE(raw_find(*cluster_, kAccounts, 4).latch, 0u);
  EXPECT_TRUE(engine().halted());
  EXPECT_FALSE(next.committed);
  EXPECT_EQ(next.reason, AbortReason::kTransport);
  EXPECT_NE(engine().last_detail().message().find("must be recovered"), std::string::npos)
      << engine().last_detail().to_string();
  EXPECT_EQ(as_i64(raw_find(*cluster_, kAccounts, 5).value), 100) << "a halted coordinator ran a transaction";
}

TEST_P(EngineFailureTest, ALatchCasWhoseOutcomeIsUnknownHaltsTheCoordinator) {
  const auto [primary, latch] = latch_of(6);
  // The CAS on key 6's latch reaches the daemon, but reports a timeout.
  *rule_ = [primary = primary, latch = latch](size_t node, const PostedOp& op) {
    return op.op == OpType::kCas && node == primary && op.remote == latch ? Fate::kLandButFail : Fate::kPass;
  };
  CommitOutcome o;
  uint64_t word = 0;
  run([&](Coordinator& c) {
    o = increment(c.txn(), 6);
    word = c.engine().latch_word();
  });
  EXPECT_FALSE(o.committed);
  EXPECT_EQ(o.reason, AbortReason::kTransport);
  // The latch is ours at the daemon though the engine could not know it:
  // aborting as if nothing were held would strand it (a live pid's latch
  // nobody may steal). The coordinator must refuse work and report.
  EXPECT_EQ(raw_find(*cluster_, kAccounts, 6).latch, word);
  EXPECT_TRUE(engine().halted());
  EXPECT_NE(engine().last_detail().message().find("must be recovered"), std::string::npos)
      << engine().last_detail().to_string();
  CommitOutcome next;
  *rule_ = [](size_t, const PostedOp&) { return Fate::kPass; };
  run([&](Coordinator& c) { next = increment(c.txn(), 7); });
  EXPECT_EQ(next.reason, AbortReason::kTransport);
  EXPECT_EQ(as_i64(raw_find(*cluster_, kAccounts, 7).value), 100);
}

INSTANTIATE_TEST_SUITE_P(Backends, EngineFailureTest, ::testing::Values(Backend::kShm, Backend::kTcp),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace pandora::testing
