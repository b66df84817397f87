// Re-replication (recovery/replica_rebuild.h) against real daemons: a
// memory node fails over, rows are inserted while it is out (so some of
// them take a slot another row holds on the failed node), a replacement
// daemon with a fresh region is filled and restored. Every row must then
// sit on each of its replicas at one offset, once, with equal versions and
// values (audit_table), transactions must find every row, and commits must
// reach the replacement. Also: a rebuild that dies between writing moved
// rows and freeing their old slots is finished by the next run from its
// journal.
#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "common/slot_layout.h"
#include "compute/scheduler.h"
#include "compute/table_geometry.h"
#include "recovery/replica_rebuild.h"
#include "recovery/table_audit.h"
#include "tests/compute/compute_test_support.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kTable = 1;
constexpr uint64_t kLoaded = 200;       // rows before the failure (keys 0..199)
constexpr uint64_t kInserted = 120;     // rows inserted while node 3 is out (keys 1000..)
constexpr uint64_t kFirstInserted = 1000;
constexpr size_t kDead = 2;             // node index of node id 3

class MemoryJournal final : public RelocationJournal {
 public:
  Result<std::vector<Relocation>> read() override { return moves; }
  Status write(const std::vector<Relocation>& m) override {
    moves = m;
    ++writes;
    return Status::ok();
  }
  Status clear() override {
    moves.clear();
    return Status::ok();
  }
  std::vector<Relocation> moves;
  int writes = 0;
};

struct CrashHere : std::runtime_error {
  CrashHere() : std::runtime_error("simulated leader crash") {}
};

class ReplicaRebuildTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    memds_ = std::make_unique<MemdCluster>(3);
    ASSERT_TRUE(memds_->ok()) << memds_->error();
    cluster_ = connect_with_accounts(memds_->config(1, GetParam(), 2), kTable, kLoaded, 100);
    ASSERT_TRUE(cluster_);
    // Node 3 dies and is failed over (its daemon gone for good).
    memds_->memd(kDead).kill9();
    cluster_->declare_memory_failed(kDead);
    ASSERT_TRUE(cluster_->apply_memory_failures());
    // Inserts that check only the live replicas.
    for (uint64_t k = kFirstInserted; k < kFirstInserted + kInserted; ++k) {
      const CommitOutcome o = transact([&](Txn& t) { return t.insert(kTable, k, i64_value(static_cast<int64_t>(k))); });
      ASSERT_TRUE(o.committed) << "insert of " << k << ": " << abort_reason_name(o.reason) << " " << o.detail.to_string();
    }
    // The replacement: the same node id, a fresh region.
    ASSERT_EQ(std::remove(memds_->memd(kDead).region_path().c_str()), 0);
    ASSERT_TRUE(memds_->memd(kDead).restart());
  }

  CommitOutcome transact(const std::function<AbortReason(Txn&)>& body) {
    if (!worker_) {
      auto conns = cluster_->open_connections();
      EXPECT_TRUE(conns) << conns.status().to_string();
      if (!conns) return CommitOutcome{};
      worker_ = std::make_unique<Worker>(*cluster_, 0, 1, 0, std::move(*conns));
    }
    CommitOutcome out;
    worker_->run([&](Coordinator& c) {
      Txn& t = c.txn();
      t.begin();
      const AbortReason r = body(t);
      if (r != AbortReason::kNone) {
        t.abort();
        out = CommitOutcome{false, r, c.engine().last_detail()};
        return;
      }
      out = t.commit();
    });
    return out;
  }

  Result<RebuildReport> rebuild(RelocationJournal& journal, const RebuildOptions& options = {}) {
    wire::RegionInfo region;
    auto repl = cluster_->connect_replacement(kDead, memds_->memd(kDead).endpoint(), &region);
    if (!repl) return repl.status();
    filled_ = region.daemon_incarnation;
    std::vector<Connection*> conns(cluster_->bootstrap_connections().begin(), cluster_->bootstrap_connections().end());
    conns[kDead] = repl->get();
    return rebuild_memory_node(*cluster_, conns, kDead, journal, test_logger(), options);
  }

  // The node is back; then every check of the data.
  void restore_and_check() {
    ASSERT_NE(filled_, 0u) << "a daemon names its incarnation at login";
    ASSERT_TRUE(cluster_->restore_memory_node(kDead, memds_->memd(kDead).endpoint(), filled_));
    EXPECT_FALSE(cluster_->failed_over(kDead));
    auto audit = audit_table(*cluster_, kTable);
    ASSERT_TRUE(audit) << audit.status().to_string();
    EXPECT_TRUE(audit->clean()) << fmt::format("{}", fmt::join(audit->problems, "\n"));
    EXPECT_EQ(audit->rows, kLoaded + kInserted);
    // Transactions (on a worker opened before the restore: it reconnects
    // at begin) find every row, and a commit reaches the replacement.
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < kLoaded; ++k) keys.push_back(k);
    for (uint64_t k = kFirstInserted; k < kFirstInserted + kInserted; ++k) keys.push_back(k);
    for (uint64_t k : keys) {
      int64_t seen = -1;
      const CommitOutcome o = transact([&](Txn& t) {
        auto v = t.read(kTable, k);
        if (!v) return v.reason();
        seen = as_i64(*v);
        return AbortReason::kNone;
      });
      ASSERT_TRUE(o.committed) << "read of " << k << ": " << abort_reason_name(o.reason);
      EXPECT_EQ(seen, k < kLoaded ? 100 : static_cast<int64_t>(k)) << "key " << k;
    }
    size_t on_replacement = 0;
    for (uint64_t k : keys) {
      const auto reps = cluster_->replica_indexes(cluster_->placement().shard_of(kTable, k));
      const auto at = std::find(reps.begin(), reps.end(), kDead);
      if (at == reps.end()) continue;
      ++on_replacement;
      const CommitOutcome o = transact([&](Txn& t) {
        auto v = t.update(kTable, k);
        if (!v) return v.reason();
        const int64_t x = 7777;
        std::memcpy((*v).data(), &x, sizeof x);
        return AbortReason::kNone;
      });
      ASSERT_TRUE(o.committed) << "update of " << k << ": " << abort_reason_name(o.reason) << " "
                               << o.detail.to_string();
      const RawSlot s = raw_find(*cluster_, kTable, k, static_cast<size_t>(at - reps.begin()));
      ASSERT_TRUE(s.found) << "key " << k << " on the replacement";
      EXPECT_EQ(as_i64(s.value), 7777) << "key " << k << ": the commit did not reach the replacement";
      break;
    }
    EXPECT_EQ(on_replacement, 1u);
  }

  std::unique_ptr<MemdCluster> memds_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Worker> worker_;
  uint64_t filled_ = 0;  // the incarnation of the daemon rebuild() filled
};

TEST_P(ReplicaRebuildTest, RowsThatShareASlotOnTheReplacementAreRelocated) {
  // The worker that inserted lives on across the restore.
  MemoryJournal journal;
  auto report = rebuild(journal);
  ASSERT_TRUE(report) << report.status().to_string();
  // Which rows collide follows from hashing and placement alone, so this
  // run always has some: the case the rebuild exists for.
  EXPECT_GT(report->relocated, 0u);
  EXPECT_EQ(report->resumed, 0u);
  EXPECT_GT(journal.writes, 0);
  EXPECT_TRUE(journal.moves.empty()) << "the journal is cleared once the moves are done";
  // Rows that belong on node 3: about 2/3 of them (3 nodes, 2 replicas).
  EXPECT_GT(report->rows, (kLoaded + kInserted) / 2);
  EXPECT_LT(report->rows, kLoaded + kInserted);
  restore_and_check();
}

TEST_P(ReplicaRebuildTest, AMoveInterruptedBeforeTheOldSlotsWereFreedIsFinishedByTheNextRun) {
  MemoryJournal journal;
  RebuildOptions crashing;
  crashing.journal_batch = 2;
  crashing.after_moves_written = [] { throw CrashHere(); };
  EXPECT_THROW((void)rebuild(journal, crashing), CrashHere);
  ASSERT_EQ(journal.moves.size(), 2u) << "the batch in flight stays journaled";
  // Left behind: each moved row twice on its survivor (new slot written,
  // old one not freed yet). A rebuild must not copy both.
  for (const Relocation& m : journal.moves) {
    const RawSlot s = raw_find(*cluster_, kTable, m.key, 0);
    ASSERT_TRUE(s.found);
  }
  auto report = rebuild(journal);
  ASSERT_TRUE(report) << report.status().to_string();
  EXPECT_EQ(report->resumed, 2u);
  EXPECT_TRUE(journal.moves.empty());
  restore_and_check();
}

// The daemon that was filled dies and another starts at its address on an
// empty region before this compute node switches back: the record's
// binding (the filled daemon's incarnation) keeps it from taking the empty
// one for the node.
TEST_P(ReplicaRebuildTest, ADaemonRestartedAtTheReplacementsAddressIsNotRestored) {
  MemoryJournal journal;
  ASSERT_TRUE(rebuild(journal));
  const uint64_t filled = filled_;
  memds_->memd(kDead).kill9();
  ASSERT_EQ(std::remove(memds_->memd(kDead).region_path().c_str()), 0);
  ASSERT_TRUE(memds_->memd(kDead).restart());
  Status s = cluster_->restore_memory_node(kDead, memds_->memd(kDead).endpoint(), filled);
  ASSERT_FALSE(s) << "an empty region was taken for the rebuilt node";
  EXPECT_EQ(s.code(), Errc::kMismatch) << s.to_string();
  EXPECT_NE(s.message().find("restarted"), std::string::npos) << s.to_string();
  EXPECT_TRUE(cluster_->failed_over(kDead));
  // Filled again, the new daemon is the one bound.
  ASSERT_TRUE(rebuild(journal));
  EXPECT_NE(filled_, filled);
  restore_and_check();
}

TEST_P(ReplicaRebuildTest, ANodeInTheConfigurationIsNotRebuilt) {
  MemoryJournal journal;
  std::vector<Connection*> conns(cluster_->bootstrap_connections().begin(), cluster_->bootstrap_connections().end());
  auto r = rebuild_memory_node(*cluster_, conns, 0, journal, test_logger());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
  // A daemon serving another node id is no replacement for node 3.
  auto wrong = cluster_->connect_replacement(kDead, memds_->memd(0).endpoint());
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.status().code(), Errc::kMismatch);
  // Nor one for node 3 whose region has another size (its log area would
  // start elsewhere).
  const auto& o = memds_->memd(kDead).options();
  TempDir dir;
  MemdProcess bigger(dir.path(), {.node_id = 3, .cluster_id = o.cluster_id, .size = "32M", .log_size = o.log_size,
                                  .secret = o.secret});
  ASSERT_TRUE(bigger.start()) << bigger.last_error();
  auto sized = cluster_->connect_replacement(kDead, bigger.endpoint());
  ASSERT_FALSE(sized);
  EXPECT_EQ(sized.status().code(), Errc::kMismatch) << sized.status().to_string();
  EXPECT_NE(sized.status().message().find("needs a region of"), std::string::npos) << sized.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Backends, ReplicaRebuildTest, ::testing::Values(Backend::kTcp, Backend::kShm),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });

TEST(RelocationJournalText, RoundTripsAndRejectsGarbage) {
  const std::vector<Relocation> moves = {{1, 42, 0x10040, 0x10080}, {7, UINT64_MAX, 64, 128}};
  auto back = decode_relocations(encode_relocations(moves));
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(*back, moves);
  EXPECT_TRUE(decode_relocations("")->empty());
  for (const char* bad : {"1 2 3\n", "1 2 3 4 5\n", "x 2 3 4\n", "1  2 3 4\n", "4294967296 1 2 3\n", "1 2 3 -4\n"}) {
    auto r = decode_relocations(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) EXPECT_EQ(r.status().code(), Errc::kCorrupt) << bad;
  }
}

}  // namespace
}  // namespace pandora::testing
