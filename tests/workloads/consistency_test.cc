// The workloads against real daemons: the end-of-run checks hold with
// several forked compute processes x several coordinators, on both backends
// and in every protocol mode, and the checks do catch a lost update, a leaked
// latch and a corrupted row; the storage audit under them
// (recovery/table_audit.h) catches what transactions cannot see.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "compute/blocking_client.h"
#include "compute/loader.h"
#include "compute/op_batch.h"
#include "compute/table_geometry.h"
#include "recovery/table_audit.h"
#include "tests/workloads/workload_test_support.h"
#include "workloads/micro/micro.h"
#include "workloads/smallbank/smallbank.h"

namespace pandora::testing {
namespace {

using workloads::Audit;
using workloads::CheckInput;
using workloads::CheckResult;
using workloads::MicroOptions;
using workloads::MicroWorkload;
using workloads::SmallBankOptions;
using workloads::SmallBankWorkload;
using workloads::Workload;

using Param = std::tuple<Backend, ProtocolMode>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string p(protocol_name(std::get<1>(info.param)));
  for (char& c : p) {
    if (c == '-') c = '_';
  }
  return std::string(backend_name(std::get<0>(info.param))) + "_" + p;
}

// Loads `w` through a compute node of pid 1 and returns that node.
std::unique_ptr<Cluster> load(const ComputeConfig& cfg, const Workload& w) {
  auto cluster = Cluster::connect(cfg, quiet_logger());
  EXPECT_TRUE(cluster) << cluster.status().to_string();
  if (!cluster) return nullptr;
  Status s = create_tables(**cluster, w.tables());
  EXPECT_TRUE(s) << s.to_string();
  TableLoader loader(**cluster);
  s = w.load(loader);
  EXPECT_TRUE(s) << s.to_string();
  s = loader.finish();
  EXPECT_TRUE(s) << s.to_string();
  return std::move(*cluster);
}

// Audits with a fresh compute node of pid 1 (nothing else runs).
Result<Audit> audit_now(const ComputeConfig& cfg, const Workload& w) {
  auto cluster = Cluster::connect(cfg, quiet_logger());
  if (!cluster) return cluster.status();
  if (Status s = (*cluster)->load_directory(); !s) return s;
  auto client = BlockingClient::create(**cluster, 0);
  if (!client) return client.status();
  return w.audit(**client);
}

CheckResult check_now(const ComputeConfig& cfg, const Workload& w, const CheckInput& in) {
  auto cluster = Cluster::connect(cfg, quiet_logger());
  if (!cluster) return {false, cluster.status().to_string()};
  if (Status s = (*cluster)->load_directory(); !s) return {false, s.to_string()};
  auto client = BlockingClient::create(**cluster, 0);
  if (!client) return {false, client.status().to_string()};
  return w.check(**client, in);
}

// Runs `w` in forked processes and checks the invariant afterwards.
void run_and_check(MemdCluster& d, const ComputeConfig& cfg, const Workload& w, int64_t expected_initial) {
  { auto loaded = load(cfg, w); ASSERT_TRUE(loaded); }
  Result<Audit> before = audit_now(cfg, w);
  ASSERT_TRUE(before) << before.status().to_string();
  ASSERT_TRUE(before->clean()) << before->problems.front();
  EXPECT_EQ(before->value, expected_initial);

  ChildRunSpec spec;
  spec.processes = 2;
  spec.threads = 1;
  spec.coordinators = 4;
  spec.duration = std::chrono::milliseconds(1500);
  const auto reports = run_in_children(cfg, w, spec);
  CheckInput in;
  in.baseline = before->value;
  uint64_t commits = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    ASSERT_EQ(reports[i].status, 0) << "process " << i << ": " << reports[i].error;
    EXPECT_GT(reports[i].commits, 0u) << "process " << i << " committed nothing";
    in.committed_delta += reports[i].delta;
    in.uncertain += reports[i].uncertain;
    commits += reports[i].commits;
  }
  const CheckResult r = check_now(cfg, w, in);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(in.uncertain, 0u);
  ::testing::Test::RecordProperty("commits", static_cast<int>(commits));
}

class SmallBankMoney : public ::testing::TestWithParam<Param> {};

TEST_P(SmallBankMoney, ConservedAcrossProcessesAndCoordinators) {
  MemdCluster d(2, "32M");
  ASSERT_TRUE(d.ok()) << d.error();
  // Two replicas: the audit also compares the copies of every row.
  const ComputeConfig cfg = d.config(1, std::get<0>(GetParam()), 2, std::get<1>(GetParam()));
  SmallBankOptions o;
  o.accounts = 2000;
  o.hot_fraction = 0.01;  // 20 hot accounts drawn 90% of the time: plenty of conflicts
  o.hot_probability = 0.9;
  auto w = SmallBankWorkload::create(o);
  ASSERT_TRUE(w);
  run_and_check(d, cfg, **w, (*w)->initial_total());
}

class MicroCounters : public ::testing::TestWithParam<Param> {};

TEST_P(MicroCounters, SumEqualsCommittedIncrements) {
  MemdCluster d(2, "32M");
  ASSERT_TRUE(d.ok()) << d.error();
  const ComputeConfig cfg = d.config(1, std::get<0>(GetParam()), 1, std::get<1>(GetParam()));
  MicroOptions o;
  o.keys = 1000;
  o.write_ratio = 0.75;
  o.ops_per_txn = 4;
  o.zipf = true;
  o.zipf_theta = 0.99;
  auto w = MicroWorkload::create(o);
  ASSERT_TRUE(w);
  run_and_check(d, cfg, **w, 0);
}

const auto kParams = ::testing::Combine(::testing::Values(Backend::kShm, Backend::kTcp),
                                        ::testing::Values(ProtocolMode::kPandora, ProtocolMode::kFord,
                                                          ProtocolMode::kLogALatch));
INSTANTIATE_TEST_SUITE_P(Modes, SmallBankMoney, kParams, param_name);
INSTANTIATE_TEST_SUITE_P(Modes, MicroCounters, kParams, param_name);

// The checks are not vacuous: each kind of damage is reported.
class CheckCatches : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = std::make_unique<MemdCluster>(2, "32M");
    ASSERT_TRUE(d_->ok()) << d_->error();
    cfg_ = d_->config(1, Backend::kTcp, 2, ProtocolMode::kPandora);
    MicroOptions o;
    o.keys = 300;
    auto w = MicroWorkload::create(o);
    ASSERT_TRUE(w);
    w_ = std::move(*w);
    cluster_ = load(cfg_, *w_);
    ASSERT_TRUE(cluster_);
  }

  // Slot offset of `key` on its primary, found along its probe path.
  struct Where {
    size_t node = 0;
    size_t backup = 0;
    uint64_t offset = 0;
  };
  Where locate(uint64_t key) {
    const TableEntry* t = cluster_->directory().find(MicroWorkload::kTable);
    const auto replicas = cluster_->replica_indexes(cluster_->placement().shard_of(MicroWorkload::kTable, key));
    Where w{replicas[0], replicas[1], 0};
    std::vector<uint8_t> slot(t->slot_bytes);
    const uint64_t home = home_bucket(*t, key);
    for (uint32_t step = 0; step < t->max_probe && w.offset == 0; ++step) {
      for (uint32_t s = 0; s < t->slots_per_bucket; ++s) {
        const uint64_t off = slot_offset(*t, path_bucket(*t, home, step), s);
        OpBatch b(cluster_->bootstrap_connections(), std::chrono::seconds(5));
        b.read(w.node, off, slot.data(), static_cast<uint32_t>(slot.size()));
        EXPECT_TRUE(b.run());
        SlotView v(slot.data());
        if (v.occupied() && v.key() == key) {
          w.offset = off;
          break;
        }
      }
    }
    EXPECT_NE(w.offset, 0u) << "key " << key << " not found";
    return w;
  }

  CheckResult check(int64_t delta) { return check_now(cfg_, *w_, CheckInput{0, delta, 0}); }

  std::unique_ptr<MemdCluster> d_;
  ComputeConfig cfg_;
  std::unique_ptr<MicroWorkload> w_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(CheckCatches, CleanDataPasses) {
  const CheckResult r = check(0);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("check passed"), std::string::npos);
}

TEST_F(CheckCatches, AnUncountedIncrement) {
  // A committed increment nobody reported: the sum is off by one.
  auto client = BlockingClient::create(*cluster_, 0);
  ASSERT_TRUE(client);
  CommitOutcome o = (*client)->transact([](Txn& t) {
    auto v = t.update(MicroWorkload::kTable, 17);
    if (!v) return v.reason();
    (*v)[0] += 1;
    return AbortReason::kNone;
  });
  ASSERT_TRUE(o.committed);
  EXPECT_TRUE(check(1).passed);
  const CheckResult r = check(0);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("MISMATCH by 1"), std::string::npos) << r.message;
  // Unknown outcomes make the check fail too.
  EXPECT_FALSE(check_now(cfg_, *w_, CheckInput{0, 1, 1}).passed);
}

TEST_F(CheckCatches, ALeakedLatch) {
  const Where w = locate(42);
  OpBatch b(cluster_->bootstrap_connections(), std::chrono::seconds(5));
  const size_t op = b.cas(w.node, w.offset + kSlotLatchOffset, 0, encode_latch({9, 3, 77}));
  ASSERT_TRUE(b.run());
  ASSERT_EQ(b.value(op), 0u);
  // Transactions cannot read past a live pid's latch: the check fails ...
  const CheckResult r = check(0);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("aborted (latched) on a quiet cluster"), std::string::npos) << r.message;
  // ... and the storage audit names the latch and its owner.
  auto a = audit_table(*cluster_, MicroWorkload::kTable);
  ASSERT_TRUE(a) << a.status().to_string();
  ASSERT_FALSE(a->clean());
  EXPECT_NE(a->problems.front().find("key 42 is still latched"), std::string::npos) << a->problems.front();
  EXPECT_NE(a->problems.front().find("pid 9"), std::string::npos) << a->problems.front();
}

// After a recovery, a crashed transaction's latches from before its log
// record stay until someone steals them: with the pid in failed-ids the
// storage audit counts them and stays clean, and transactions read through
// them; the same latch of a live pid is a leak.
TEST_F(CheckCatches, ALatchOfARecoveredPidIsStrayNotAProblem) {
  const Where w = locate(42);
  OpBatch b(cluster_->bootstrap_connections(), std::chrono::seconds(5));
  b.cas(w.node, w.offset + kSlotLatchOffset, 0, encode_latch({9, 3, 77}));
  ASSERT_TRUE(b.run());
  auto live = audit_table(*cluster_, MicroWorkload::kTable);
  ASSERT_TRUE(live) << live.status().to_string();
  EXPECT_FALSE(live->clean());
  EXPECT_EQ(live->stray_latches, 0u);
  cluster_->failed_ids().add(9);
  auto recovered = audit_table(*cluster_, MicroWorkload::kTable);
  ASSERT_TRUE(recovered) << recovered.status().to_string();
  EXPECT_TRUE(recovered->clean()) << recovered->problems.front();
  EXPECT_EQ(recovered->stray_latches, 1u);
  EXPECT_EQ(recovered->rows, 300u);
  auto client = BlockingClient::create(*cluster_, 0);
  ASSERT_TRUE(client);
  Result<Audit> through_txn = w_->audit(**client);
  ASSERT_TRUE(through_txn) << through_txn.status().to_string();
  EXPECT_TRUE(through_txn->clean()) << through_txn->problems.front();
  EXPECT_EQ(through_txn->rows, 300u);
}

TEST_F(CheckCatches, ADivergentReplicaAndAClobberedValue) {
  const Where w = locate(5);
  // Backup gets a different counter; primary gets its filler overwritten.
  const uint64_t one = 1;
  const uint8_t junk[4] = {0xde, 0xad, 0xbe, 0xef};
  OpBatch b(cluster_->bootstrap_connections(), std::chrono::seconds(5));
  b.write(w.backup, w.offset + sizeof(SlotHeader), &one, sizeof one);
  b.write(w.node, w.offset + sizeof(SlotHeader) + 20, junk, sizeof junk);
  ASSERT_TRUE(b.run());
  // The workload's check reads the primary: the clobbered filler shows.
  const CheckResult r = check(0);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("key 5: bytes 8..48 of its value were overwritten"), std::string::npos) << r.message;
  // Only the storage audit compares replicas.
  auto a = audit_table(*cluster_, MicroWorkload::kTable);
  ASSERT_TRUE(a) << a.status().to_string();
  bool disagree = false;
  for (const std::string& p : a->problems) disagree |= p.find("replicas of key 5 disagree") != std::string::npos;
  EXPECT_TRUE(disagree) << (a->problems.empty() ? "no problem found" : a->problems.front());
}

// A row that is gone (its slot cleared below the API) is reported by the
// transactional check as missing, and the scan goes on past it.
TEST_F(CheckCatches, AMissingRow) {
  const Where w = locate(77);
  std::vector<uint8_t> zero(sizeof(SlotHeader), 0);
  OpBatch b(cluster_->bootstrap_connections(), std::chrono::seconds(5));
  b.write(w.node, w.offset, zero.data(), static_cast<uint32_t>(zero.size()));
  b.write(w.backup, w.offset, zero.data(), static_cast<uint32_t>(zero.size()));
  ASSERT_TRUE(b.run());
  auto client = BlockingClient::create(*cluster_, 0);
  ASSERT_TRUE(client);
  Result<Audit> a = w_->audit(**client);
  ASSERT_TRUE(a) << a.status().to_string();
  bool reported = false;
  for (const std::string& p : a->problems) reported |= p.find("key 77 is missing") != std::string::npos;
  EXPECT_TRUE(reported) << a->problem_count << " problem(s), first: "
                        << (a->problems.empty() ? "none" : a->problems.front());
  EXPECT_LE(a->rows, 299u);
  EXPECT_GE(a->rows, 290u);  // the scan went on past the gap
}

}  // namespace
}  // namespace pandora::testing
