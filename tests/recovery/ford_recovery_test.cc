// Stop-the-world recovery of the `ford` baseline (recovery/ford_recovery.h):
// a FORD compute process killed mid-run is recovered from its undo records
// on every node, then a scan releases every latch it left (owner-less, so
// nothing else could); and an aborted FORD transaction's undo records no
// longer mislead recovery into undoing someone else's committed write
// (FORD's lost decision).
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "common/latch.h"
#include "compute/blocking_client.h"
#include "recovery/ford_recovery.h"
#include "compute/loader.h"
#include "compute/scheduler.h"
#include "compute/table_geometry.h"
#include "tests/compute/compute_test_support.h"
#include "tests/transport/child_process.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kAccounts = 1;
constexpr uint64_t kRows = 16;
constexpr int64_t kStart = 1000;

class FordRecoveryTest : public ::testing::TestWithParam<Backend> {};

// Sum of the primaries; every replica must agree with its primary.
int64_t audit(Cluster& c) {
  int64_t total = 0;
  for (uint64_t k = 0; k < kRows; ++k) {
    RawSlot p = raw_find(c, kAccounts, k), b = raw_find(c, kAccounts, k, 1);
    EXPECT_TRUE(p.found && b.found) << "key " << k;
    EXPECT_EQ(p.version, b.version) << "key " << k;
    EXPECT_EQ(p.value, b.value) << "key " << k;
    total += as_i64(p.value);
  }
  return total;
}

std::unique_ptr<Cluster> loaded_cluster(MemdCluster& memds, Backend backend) {
  return connect_with_accounts(memds.config(1, backend, 2, ProtocolMode::kFord), kAccounts, kRows, kStart);
}

TEST_P(FordRecoveryTest, KilledNodeIsRecoveredAndTheScanReleasesItsLatches) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto cluster = loaded_cluster(memds, GetParam());
  ASSERT_TRUE(cluster);
  auto survivor = BlockingClient::create(*cluster, 0);
  ASSERT_TRUE(survivor);
  uint32_t rolled_back = 0, released = 0;
  for (uint16_t dead = 2; dead <= 4; ++dead) {
    ComputeConfig config = memds.config(dead, GetParam(), 2, ProtocolMode::kFord);
    config.coordinators = 4;
    // The survivor runs nothing meanwhile.
    ASSERT_NO_FATAL_FAILURE(kill_mid_transfers(memds, config, kAccounts, kRows, 300));
    const auto conns = cluster->bootstrap_connections();
    auto report = recover_ford_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    ASSERT_TRUE(report) << report.status().to_string();
    EXPECT_GT(report->records, 0u);
    auto again = recover_ford_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->replicas_restored, 0u) << "recovery is idempotent";
    rolled_back += report->rolled_back;
    EXPECT_EQ(audit(*cluster), int64_t{kRows} * kStart) << "after recovering pid " << dead;
    ASSERT_TRUE(truncate_ford_lanes(*cluster, conns, LaneMap::fixed_slot(dead)));
    EXPECT_EQ(recover_ford_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger())->records, 0u);

    auto scan = release_all_latches(*cluster, conns, test_logger());
    ASSERT_TRUE(scan) << scan.status().to_string();
    EXPECT_GE(scan->slots, kRows * memds.size());
    released += scan->released;
    for (const HeldLatch& h : scan_latches(*cluster)) {
      ADD_FAILURE() << "latch " << std::hex << h.word << " left at " << h.slot;
    }
    // Every account is usable again.
    for (uint64_t k = 0; k < kRows; ++k) {
      auto o = survivor.value()->transact([&](Txn& t) { return t.update(kAccounts, k).reason(); });
      EXPECT_TRUE(o.committed) << "key " << k << ": " << abort_reason_name(o.reason);
    }
    EXPECT_EQ(audit(*cluster), int64_t{kRows} * kStart);
  }
  // Four coordinators in a tight transfer loop hold latches nearly always.
  EXPECT_GT(released, 0u);
  fprintf(stderr, "ford recovery: %u rolled back, %u latches released by the scan\n", rolled_back, released);
}

// T (pid 5) updates X and Y - writing their undo records - then aborts; U
// commits a write of X alone. If T's records survived its abort, recovery
// of pid 5 would see X at old+1 and Y at old, call T partial and "roll back"
// X: U's committed write would be lost.
TEST_P(FordRecoveryTest, AnAbortedTransactionsUndoRecordsAreNotRecovered) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto cluster = loaded_cluster(memds, GetParam());
  ASSERT_TRUE(cluster);
  constexpr uint64_t kX = 3, kY = 9;
  // T runs in its own process: fencing pid 5 on shm kills whatever process
  // still holds a session as pid 5.
  ChildProcess t_proc = ChildProcess::run([config = memds.config(5, GetParam(), 2, ProtocolMode::kFord)] {
    auto tc = Cluster::connect(config, test_logger());
    if (!tc || !(*tc)->load_directory()) return 2;
    auto t = BlockingClient::create(**tc, 0);
    if (!t) return 3;
    int rc = 0;
    (*t)->run([&](Txn& txn) {
      txn.begin();
      if (!txn.update(kAccounts, kX) || !txn.update(kAccounts, kY)) rc = 4;
      txn.abort();
    });
    return rc;
  });
  auto t_exit = t_proc.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(t_exit && t_exit->exited && t_exit->code == 0);
  auto u = BlockingClient::create(*cluster, 0);
  ASSERT_TRUE(u);
  auto o = (*u)->transact([&](Txn& txn) {
    auto v = txn.update(kAccounts, kX);
    if (v) store_u64((*v).data(), 4242);
    return v.reason();
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);

  ASSERT_NO_FATAL_FAILURE(fence_everywhere(memds, 5));
  const auto conns = cluster->bootstrap_connections();
  auto report = recover_ford_logs(*cluster, conns, 5, LaneMap::fixed_slot(5), test_logger());
  ASSERT_TRUE(report) << report.status().to_string();
  EXPECT_EQ(report->records, 0u);
  EXPECT_EQ(report->replicas_restored, 0u);
  EXPECT_EQ(as_i64(raw_find(*cluster, kAccounts, kX).value), 4242);
  EXPECT_EQ(as_i64(raw_find(*cluster, kAccounts, kX, 1).value), 4242);
}

INSTANTIATE_TEST_SUITE_P(Backends, FordRecoveryTest, ::testing::Values(Backend::kShm, Backend::kTcp),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace pandora::testing
