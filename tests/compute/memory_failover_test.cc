// A memory node's crash inside running transactions (compute/txn/failover.h):
// once the failure detector declares the node failed, a coordinator decides
// its transaction by the live replicas - a logged one commits on them, an
// unlogged one aborts and releases its latches on live nodes - instead of
// halting its compute node for recovery. A node that is not declared still
// halts the coordinator, as before. The "crash" is the node's link failing
// at an exact operation (FaultConnection drops everything to it from then
// on), so each case is deterministic on shm and tcp, in every protocol
// (ford decides by whether its commit WRITEs began: it has no logging
// phase; log-a-latch's intents go to the log nodes, one of which may be the
// dead one).
#include <algorithm>
#include <csignal>
#include <thread>
#include <future>
#include <cstring>
#include <tuple>

#include <gtest/gtest.h>

#include "common/latch.h"
#include "common/log_record.h"
#include "common/slot_layout.h"
#include "compute/loader.h"
#include "compute/scheduler.h"
#include "tests/compute/compute_test_support.h"
#include "tests/compute/fault_connection.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kAccounts = 1;
constexpr uint64_t kRows = 32;

class MemoryFailoverTest : public ::testing::TestWithParam<std::tuple<Backend, ProtocolMode>> {
 protected:
  void SetUp() override {
    memds_ = std::make_unique<MemdCluster>(3);
    ASSERT_TRUE(memds_->ok()) << memds_->error();
    ComputeConfig cfg = memds_->config(1, std::get<0>(GetParam()), 2);
    cfg.protocol = std::get<1>(GetParam());
    cfg.memory_failover_wait = failover_wait();
    cluster_ = connect_with_accounts(cfg, kAccounts, kRows, 100);
    ASSERT_TRUE(cluster_);
    rule_ = std::make_shared<FaultRule>([this](size_t node, const PostedOp&) {
      return node == dead_ ? Fate::kDrop : Fate::kPass;
    });
    auto conns = cluster_->open_connections();
    ASSERT_TRUE(conns) << conns.status().to_string();
    worker_ = std::make_unique<Worker>(*cluster_, 0, 1, 0, FaultConnection::wrap(std::move(*conns), rule_));
  }

  // Long enough never to end before a declaration that comes.
  virtual std::chrono::milliseconds failover_wait() const { return std::chrono::seconds(20); }

  void run(const std::function<void(Coordinator&)>& body) { worker_->run(body); }
  TxnEngine& engine() { return worker_->coordinator(0).engine(); }
  std::span<const uint16_t> replicas_of(uint64_t key) {
    return cluster_->replica_indexes(cluster_->placement().shard_of(kAccounts, key));
  }
  // The first key whose primary is `node` and that is not `other`.
  uint64_t key_with_primary(size_t node, uint64_t other = kRows) {
    for (uint64_t k = 0; k < kRows; ++k) {
      if (k != other && replicas_of(k)[0] == node) return k;
    }
    ADD_FAILURE() << "no key with primary " << node;
    return 0;
  }
  // `key`'s slot as replica position `r` holds it (read directly, not
  // through the failing links).
  RawSlot slot(uint64_t key, size_t r) { return raw_find(*cluster_, kAccounts, key, r); }

  // From now on every operation to `node` fails (its daemon is gone), and,
  // when `declare`, the failure detector has said so.
  void crash(size_t node, bool declare) {
    dead_ = node;
    if (declare) cluster_->declare_memory_failed(node);
  }

  static CommitOutcome add(Txn& t, std::initializer_list<uint64_t> keys, int64_t delta) {
    t.begin();
    for (uint64_t k : keys) {
      auto v = t.update(kAccounts, k);
      if (!v) return CommitOutcome{false, v.reason(), {}};
      const int64_t x = as_i64(*v) + delta;
      std::memcpy((*v).data(), &x, sizeof x);
    }
    return t.commit();
  }

  std::unique_ptr<MemdCluster> memds_;
  std::unique_ptr<Cluster> cluster_;
  std::shared_ptr<FaultRule> rule_;
  std::unique_ptr<Worker> worker_;
  size_t dead_ = SIZE_MAX;
};

// The primary dies after the record is logged, at the first commit WRITE to
// it: the transaction was decided (validated and logged), so it commits on
// the live backup, and the coordinator runs on.
TEST_P(MemoryFailoverTest, ALoggedTransactionCommitsOnTheLiveReplicas) {
  const uint64_t k = key_with_primary(0);
  const size_t primary = replicas_of(k)[0], backup = replicas_of(k)[1];
  const RawSlot before = slot(k, 1);
  const uint64_t value_addr = slot(k, 0).offset + sizeof(SlotHeader);
  auto pass_all = *rule_;
  *rule_ = [&, pass_all](size_t node, const PostedOp& op) {
    if (node == primary && op.op == OpType::kWrite && op.remote == value_addr && dead_ == SIZE_MAX) {
      crash(primary, true);
    }
    return pass_all(node, op);
  };
  CommitOutcome o;
  run([&](Coordinator& c) { o = add(c.txn(), {k}, 5); });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason) << ": " << o.detail.to_string();
  EXPECT_FALSE(engine().halted());
  EXPECT_EQ(engine().counters().memory_failovers, 1u);
  const RawSlot after = slot(k, 1);
  EXPECT_EQ(as_i64(after.value), 105) << "the backup (node " << backup << ") must hold the committed value";
  EXPECT_EQ(after.version, before.version + 1);
  EXPECT_EQ(after.latch, 0u);

  // Every coordinator parked (here: none running): primaries switch.
  ASSERT_TRUE(cluster_->apply_memory_failures());
  EXPECT_EQ(replicas_of(k).size(), 1u);
  EXPECT_EQ(replicas_of(k)[0], backup);
  run([&](Coordinator& c) { o = add(c.txn(), {k}, 1); });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason) << ": " << o.detail.to_string();
  EXPECT_EQ(as_i64(slot(k, 0).value), 106);
  EXPECT_EQ(slot(k, 0).latch, 0u) << "the latch taken on the new primary was released";
  EXPECT_FALSE(engine().halted());
}

// The primary of one written key dies while the transaction executes (its
// latch CAS fails): nothing is logged, so it aborts, releases the latch it
// holds on a live node, and the coordinator runs on.
TEST_P(MemoryFailoverTest, AnUnloggedTransactionAbortsAndReleasesItsLiveLatches) {
  const uint64_t live_key = key_with_primary(1);
  const uint64_t dead_key = key_with_primary(0, live_key);
  crash(0, true);
  CommitOutcome o;
  run([&](Coordinator& c) { o = add(c.txn(), {live_key, dead_key}, 5); });
  EXPECT_FALSE(o.committed);
  EXPECT_EQ(o.reason, AbortReason::kFailedOver);
  EXPECT_TRUE(is_retryable(o.reason));
  EXPECT_NE(engine().last_detail().message().find("failed; the transaction aborted"), std::string::npos)
      << engine().last_detail().to_string();
  EXPECT_FALSE(engine().halted());
  EXPECT_EQ(slot(live_key, 0).latch, 0u) << "the latch on the live node was not released";
  EXPECT_EQ(as_i64(slot(live_key, 0).value), 100);
  EXPECT_EQ(as_i64(slot(live_key, 1).value), 100);
  EXPECT_EQ(as_i64(slot(dead_key, 1).value), 100);
}

// A latch release lost with its node: the latch went with the node; the
// next transaction begins normally.
TEST_P(MemoryFailoverTest, AReleaseLostWithItsNodeDoesNotHalt) {
  const uint64_t k = key_with_primary(2);
  const uint64_t latch_addr = slot(k, 0).offset + kSlotLatchOffset;
  auto pass_all = *rule_;
  *rule_ = [&, pass_all](size_t node, const PostedOp& op) {
    if (node == 2 && op.op == OpType::kWrite && op.remote == latch_addr && dead_ == SIZE_MAX) crash(2, true);
    return pass_all(node, op);
  };
  CommitOutcome first, next;
  const uint64_t other = key_with_primary(1);
  run([&](Coordinator& c) {
    first = add(c.txn(), {k}, 1);
    next = add(c.txn(), {other}, 1);  // begin() collects the lost release
  });
  ASSERT_TRUE(first.committed);
  ASSERT_TRUE(next.committed) << abort_reason_name(next.reason) << ": " << next.detail.to_string();
  EXPECT_FALSE(engine().halted());
}

// The application aborts after the backup of the object it updated died
// (declared failed) - in ford just as the abort zeroes its undo record in
// the lane on that node: what the dead node held went with it, so the
// abort completes on the live nodes instead of halting the coordinator.
TEST_P(MemoryFailoverTest, AnAbortTheApplicationChoseCompletesOnTheLiveNodes) {
  const uint64_t k = key_with_primary(0);
  const size_t backup = replicas_of(k)[1];
  auto pass_all = *rule_;
  *rule_ = [&, pass_all](size_t node, const PostedOp& op) {
    // ford's abort: a WRITE of a zeroed record header to each lane it wrote.
    if (node == backup && op.op == OpType::kWrite && op.len == sizeof(LogRecordHeader) && dead_ == SIZE_MAX) {
      crash(backup, true);
    }
    return pass_all(node, op);
  };
  bool updated = false;
  CommitOutcome next;
  run([&](Coordinator& c) {
    Txn& t = c.txn();
    t.begin();
    updated = static_cast<bool>(t.update(kAccounts, k));
    if (backup != 0 && dead_ == SIZE_MAX) crash(backup, true);  // pandora, log-a-latch: no lane write to wait for
    t.abort();
  });
  ASSERT_TRUE(updated);
  ASSERT_TRUE(cluster_->apply_memory_failures());  // as at the pause: the coordinator runs on
  run([&](Coordinator& c) { next = add(c.txn(), {k}, 1); });
  EXPECT_FALSE(engine().halted()) << engine().last_detail().to_string();
  EXPECT_EQ(slot(k, 0).latch, 0u) << "the abort released the latch on the live primary";
  ASSERT_TRUE(next.committed) << abort_reason_name(next.reason) << ": " << next.detail.to_string();
  EXPECT_EQ(as_i64(slot(k, 0).value), 101) << "nothing of the aborted update, then the next one";
}

// A node the failure detector does not declare failed (a broken link, not a
// crash) within the wait: the logged transaction is left to recovery, as
// without fail-over.
class MemoryFailoverUndeclaredTest : public MemoryFailoverTest {
 protected:
  std::chrono::milliseconds failover_wait() const override { return std::chrono::milliseconds(50); }
};

TEST_P(MemoryFailoverUndeclaredTest, AnUndeclaredNodeStillHaltsTheCoordinator) {
  const uint64_t k = key_with_primary(0);
  const uint64_t value_addr = slot(k, 0).offset + sizeof(SlotHeader);
  auto pass_all = *rule_;
  *rule_ = [&, pass_all](size_t node, const PostedOp& op) {
    if (node == 0 && op.op == OpType::kWrite && op.remote == value_addr && dead_ == SIZE_MAX) crash(0, false);
    return pass_all(node, op);
  };
  CommitOutcome o;
  run([&](Coordinator& c) { o = add(c.txn(), {k}, 5); });
  EXPECT_FALSE(o.committed);
  EXPECT_EQ(o.reason, AbortReason::kTransport);
  EXPECT_TRUE(engine().halted());
  EXPECT_TRUE(engine().left_undecided());
  EXPECT_EQ(engine().counters().memory_failovers, 0u);
  EXPECT_NE(slot(k, 0).latch, 0u) << "an undecided transaction keeps its latch for recovery";
}

// Once a coordinator of this process waited for a node in vain, nobody
// waits again - not for another node either. A partitioned compute node
// loses its memory nodes one step apart; before, it waited the whole
// memory_failover_wait for each in turn (the netns partition test's
// compute node stopped after 21 s instead of 11, past the test's bound).
// The wait here is 10 minutes, so only the rule can end it in time.
class MemoryFailoverAfterAWaitedOutNodeTest : public MemoryFailoverTest {
 protected:
  std::chrono::milliseconds failover_wait() const override { return std::chrono::minutes(10); }
};

TEST_P(MemoryFailoverAfterAWaitedOutNodeTest, ANodeLostLaterIsNotWaitedForAgain) {
  const uint64_t k = key_with_primary(0);
  const uint64_t value_addr = slot(k, 0).offset + sizeof(SlotHeader);
  // Node 2 was waited out earlier (by another coordinator, say); now node
  // 0's link breaks at the commit WRITE of a logged transaction.
  cluster_->note_waited_out(uint64_t{1} << 2, failover_wait());
  auto pass_all = *rule_;
  *rule_ = [&, pass_all](size_t node, const PostedOp& op) {
    if (node == 0 && op.op == OpType::kWrite && op.remote == value_addr && dead_ == SIZE_MAX) crash(0, false);
    return pass_all(node, op);
  };
  auto outcome = std::async(std::launch::async, [&] {
    CommitOutcome o;
    run([&](Coordinator& c) { o = add(c.txn(), {k}, 5); });
    return o;
  });
  const bool in_time = outcome.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!in_time) cluster_->declare_memory_failed(0);  // ends the wait, so the thread can be joined
  const CommitOutcome o = outcome.get();
  ASSERT_TRUE(in_time) << "the coordinator waited for node 0's declaration although node 2 was waited out";
  EXPECT_FALSE(o.committed);
  EXPECT_EQ(o.reason, AbortReason::kTransport);
  EXPECT_TRUE(engine().halted());
  EXPECT_TRUE(engine().left_undecided()) << "logged and undeclared: left to recovery";
  EXPECT_EQ(cluster_->waited_out_mask(), uint64_t{1} << 2) << "node 0 was not waited for, so not waited out";
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<Backend, ProtocolMode>>& info) {
  std::string p(protocol_name(std::get<1>(info.param)));
  std::replace(p.begin(), p.end(), '-', '_');
  return std::string(backend_name(std::get<0>(info.param))) + "_" + p;
}

INSTANTIATE_TEST_SUITE_P(Backends, MemoryFailoverUndeclaredTest,
                         ::testing::Combine(::testing::Values(Backend::kShm, Backend::kTcp),
                                            ::testing::Values(ProtocolMode::kPandora, ProtocolMode::kFord,
                                                              ProtocolMode::kLogALatch)),
                         param_name);

INSTANTIATE_TEST_SUITE_P(Backends, MemoryFailoverAfterAWaitedOutNodeTest,
                         ::testing::Combine(::testing::Values(Backend::kShm, Backend::kTcp),
                                            ::testing::Values(ProtocolMode::kPandora, ProtocolMode::kFord,
                                                              ProtocolMode::kLogALatch)),
                         param_name);

INSTANTIATE_TEST_SUITE_P(Backends, MemoryFailoverTest,
                         ::testing::Combine(::testing::Values(Backend::kShm, Backend::kTcp),
                                            ::testing::Values(ProtocolMode::kPandora, ProtocolMode::kFord,
                                                              ProtocolMode::kLogALatch)),
                         param_name);

// The placement side alone: a declared node leaves every replica list and
// log-node list once applied, and a configuration that would leave a shard
// without any replica is refused.
TEST(MemoryFailoverPlacementTest, ApplyingMovesPrimariesAndRefusesLosingAShard) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto cluster = connect_with_accounts(memds.config(1, Backend::kTcp, 2), kAccounts, kRows, 0);
  ASSERT_TRUE(cluster);
  const uint32_t shards = cluster->placement().shards();
  cluster->declare_memory_failed(1);
  for (uint32_t s = 0; s < shards; ++s) EXPECT_EQ(cluster->replica_indexes(s).size(), 2u) << "applied too early";
  ASSERT_TRUE(cluster->apply_memory_failures());
  EXPECT_EQ(cluster->applied_failed_mask(), 2u);
  EXPECT_EQ(cluster->memory_config_version(), 1u);
  for (uint32_t s = 0; s < shards; ++s) {
    const auto reps = cluster->replica_indexes(s);
    ASSERT_GE(reps.size(), 1u);
    for (uint16_t n : reps) EXPECT_NE(n, 1u) << "shard " << s;
  }
  for (uint16_t pid = 1; pid < 50; ++pid) {
    for (size_t n : cluster->log_node_indexes(pid)) EXPECT_NE(n, 1u) << "pid " << pid;
  }
  // Losing a second node loses the shards both held: refused, unchanged.
  cluster->declare_memory_failed(2);
  const Status s = cluster->apply_memory_failures();
  EXPECT_EQ(s.code(), Errc::kUnavailable) << s.to_string();
  EXPECT_EQ(cluster->applied_failed_mask(), 2u);
  EXPECT_EQ(cluster->memory_config_version(), 1u);
}

// A compute node that starts after a memory node was failed over (the
// cluster record lists it): the dead daemon is never contacted, placement
// keeps its ring (the node keeps its id) without it, and transactions run.
TEST(MemoryFailoverPlacementTest, ANodeJoiningAfterAFailOverSkipsTheFailedNode) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  const ComputeConfig loader_cfg = memds.config(1, Backend::kTcp, 2);
  auto loaded = connect_with_accounts(loader_cfg, kAccounts, kRows, 100);
  ASSERT_TRUE(loaded);
  const uint32_t dead_id = loaded->node(1).region.node_id;
  std::vector<std::vector<uint16_t>> expected;  // every shard's replicas without node 1, as before
  for (uint32_t s = 0; s < loaded->placement().shards(); ++s) {
    std::vector<uint16_t> live;
    for (uint16_t n : loaded->replica_indexes(s)) {
      if (n != 1) live.push_back(n);
    }
    expected.push_back(live);
  }
  loaded.reset();
  memds.memd(1).kill9();

  ComputeConfig cfg = memds.config(2, Backend::kTcp, 2);
  cfg.failed_memory_nodes = {{dead_id, cfg.memory_nodes[1]}};
  cfg.connect_timeout = std::chrono::milliseconds(500);  // contacting it would fail the test
  auto joined = Cluster::connect(cfg, test_logger());
  ASSERT_TRUE(joined) << joined.status().to_string();
  ASSERT_TRUE((*joined)->load_directory());
  Cluster& c = **joined;
  EXPECT_EQ(c.applied_failed_mask(), 2u);
  EXPECT_EQ(c.node(1).region.node_id, dead_id);
  for (uint32_t s = 0; s < c.placement().shards(); ++s) {
    const auto reps = c.replica_indexes(s);
    EXPECT_EQ(std::vector<uint16_t>(reps.begin(), reps.end()), expected[s]) << "shard " << s;
  }
  auto conns = c.open_connections();
  ASSERT_TRUE(conns) << conns.status().to_string();
  Worker w(c, 0, 1, 0, std::move(*conns));
  CommitOutcome o;
  w.run([&](Coordinator& co) {
    Txn& t = co.txn();
    t.begin();
    for (uint64_t k = 0; k < kRows; ++k) {
      auto v = t.update(kAccounts, k);
      ASSERT_TRUE(v) << abort_reason_name(v.reason());
      const int64_t x = as_i64(*v) + 1;
      std::memcpy((*v).data(), &x, sizeof x);
    }
    o = t.commit();
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason) << ": " << o.detail.to_string();
  for (uint64_t k = 0; k < kRows; ++k) EXPECT_EQ(as_i64(raw_find(c, kAccounts, k).value), 101) << "key " << k;
  // No new tables on a degraded cluster: every shard would start short.
  const Status load = create_tables(c, {}, CreateTablesOptions{});
  EXPECT_EQ(load.code(), Errc::kUnavailable) << load.to_string();
}

// A memory node cut off rather than dead (SIGSTOP: its connection neither
// answers nor closes): once it is declared failed, a coordinator waiting on
// an operation to it resumes at once (Connection::abandon) and decides its
// transaction, instead of waiting out the operation timeout - 10 minutes
// here, so nothing else could end the wait within the test. (Measured
// before: a fail-over of a stopped daemon stood 4.9 s, the default 5 s
// timeout, waiting for the coordinators to park.)
TEST(MemoryNodeCutOff, ADeclarationEndsTheWaitForAnOperationThatNeverAnswers) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  ComputeConfig cfg = memds.config(1, Backend::kTcp, 2);
  cfg.op_timeout = std::chrono::minutes(10);
  cfg.memory_failover_wait = std::chrono::minutes(10);
  auto cluster = connect_with_accounts(cfg, kAccounts, kRows, 100);
  ASSERT_TRUE(cluster);
  constexpr size_t kCut = 2;
  uint64_t key = kRows;
  for (uint64_t k = 0; k < kRows && key == kRows; ++k) {
    if (cluster->replica_indexes(cluster->placement().shard_of(kAccounts, k))[0] == kCut) key = k;
  }
  ASSERT_LT(key, kRows);
  auto conns = cluster->open_connections();
  ASSERT_TRUE(conns) << conns.status().to_string();
  Worker worker(*cluster, 0, 1, 0, std::move(*conns));
  const pid_t cut = memds.memd(kCut).pid();
  ASSERT_EQ(::kill(cut, SIGSTOP), 0);
  std::promise<CommitOutcome> decided;
  std::future<CommitOutcome> outcome = decided.get_future();
  std::thread coordinator([&] {
    worker.run([&](Coordinator& c) {
      Txn& t = c.txn();
      t.begin();
      auto v = t.update(kAccounts, key);
      if (!v) {
        t.abort();
        decided.set_value(CommitOutcome{false, v.reason(), c.engine().last_detail()});
        return;
      }
      decided.set_value(t.commit());
    });
  });
  // Usually after the READ to the stopped node is posted; a declaration
  // that comes first must end the wait just the same.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  cluster->declare_memory_failed(kCut);
  const bool in_time = outcome.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  ::kill(cut, SIGCONT);  // lets a wait that was not abandoned end, so the thread can be joined
  coordinator.join();
  ASSERT_TRUE(in_time) << "the coordinator still waited on the cut-off node 60 s after its declaration";
  const CommitOutcome o = outcome.get();
  EXPECT_FALSE(o.committed) << "nothing was logged: it aborts";
  EXPECT_EQ(o.reason, AbortReason::kFailedOver) << abort_reason_name(o.reason) << " " << o.detail.to_string();
}

}  // namespace
}  // namespace pandora::testing
