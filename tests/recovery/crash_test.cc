// Compute-node crash without a failure detector: a child compute process
// running transfers is killed with SIGKILL mid-run; the test then fences its
// pid on every memory node, runs log recovery directly against memory,
// truncates its lanes, publishes the pid in the survivor's failed-ids and
// checks: money conserved and replicas identical; the post-publish sweep
// leaves no latch of the dead pid on an object its logs name; the next
// transactions steal whatever stray latches remain instead of aborting
// forever. Several rounds (a new pid each), both backends.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "common/latch.h"
#include "common/log_record.h"
#include "common/slot_layout.h"
#include "compute/blocking_client.h"
#include "compute/crash_injector.h"
#include "compute/loader.h"
#include "recovery/log_recovery.h"
#include "compute/op_batch.h"
#include "compute/scheduler.h"
#include "compute/table_geometry.h"
#include "tests/compute/compute_test_support.h"
#include "tests/transport/child_process.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kAccounts = 1;
constexpr uint64_t kRows = 16;  // few rows: many conflicts, latches likely held at the kill
constexpr int64_t kStart = 1000;

class CrashTest : public ::testing::TestWithParam<Backend> {};

int64_t audit(Cluster& c) {
  int64_t total = 0;
  for (uint64_t k = 0; k < kRows; ++k) {
    RawSlot p = raw_find(c, kAccounts, k), b = raw_find(c, kAccounts, k, 1);
    EXPECT_TRUE(p.found && b.found);
    EXPECT_EQ(p.version, b.version) << "key " << k;
    EXPECT_EQ(p.value, b.value) << "key " << k;
    total += as_i64(p.value);
  }
  return total;
}

TEST_P(CrashTest, KilledComputeNodeIsRecoveredFromItsLogsAndItsLatchesAreStolen) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto cluster = connect_with_accounts(memds.config(1, GetParam(), 2), kAccounts, kRows, kStart);
  ASSERT_TRUE(cluster);
  auto survivor = BlockingClient::create(*cluster, 0);
  ASSERT_TRUE(survivor);

  uint32_t rolled_back = 0, rolled_forward = 0, swept = 0;
  for (uint16_t dead = 2; dead <= 4; ++dead) {
    ComputeConfig config = memds.config(dead, GetParam(), 2);
    config.coordinators = 4;
    // The survivor runs nothing meanwhile.
    ASSERT_NO_FATAL_FAILURE(kill_mid_transfers(memds, config, kAccounts, kRows, 300));
    const auto conns = cluster->bootstrap_connections();
    auto report = recover_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    ASSERT_TRUE(report) << report.status().to_string();
    EXPECT_GT(report->records, 0u);
    // Idempotent: a second run (a new recovery leader) changes nothing.
    auto again = recover_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->replicas_restored, 0u);
    rolled_back += report->rolled_back;
    rolled_forward += report->rolled_forward;
    ASSERT_TRUE(truncate_lanes(*cluster, conns, dead, LaneMap::fixed_slot(dead)));
    EXPECT_EQ(recover_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger())->records, 0u);

    EXPECT_EQ(audit(*cluster), int64_t{kRows} * kStart) << "after recovering pid " << dead;

    cluster->failed_ids().add(dead);  // publish
    auto released = sweep_stray_latches(*cluster, conns, dead, report->latch_sites);
    ASSERT_TRUE(released) << released.status().to_string();
    swept += *released;
    for (const LatchSite& s : report->latch_sites) {
      EXPECT_NE(latch_pid(raw_latch(*cluster, s.node, s.slot)), dead) << "latch of pid " << dead << " left";
    }
    // Every account is still usable: stray latches of unlogged transactions
    // are stolen, never waited for.
    for (uint64_t k = 0; k < kRows; ++k) {
      auto o = survivor.value()->transact([&](Txn& t) {
        auto v = t.update(kAccounts, k);
        return v.reason();
      });
      EXPECT_TRUE(o.committed) << "key " << k << ": " << abort_reason_name(o.reason);
    }
    for (const HeldLatch& h : scan_latches(*cluster)) {
      ADD_FAILURE() << "latch " << std::hex << h.word << " left at " << h.slot;
    }
    EXPECT_EQ(audit(*cluster), int64_t{kRows} * kStart);
  }
  fprintf(stderr, "recovery: %u rolled back, %u rolled forward, %u latches swept\n", rolled_back, rolled_forward,
          swept);
}

// log-a-latch writes an intent before every latch CAS, so recovery knows
// every slot the dead node may hold, logged or not: after the sweep no latch
// of it is left anywhere (pandora leaves unlogged ones to be stolen).
TEST_P(CrashTest, LogALatchRecoveryReleasesEveryLatchFromItsIntents) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto cluster = connect_with_accounts(memds.config(1, GetParam(), 2, ProtocolMode::kLogALatch), kAccounts, kRows, kStart);
  ASSERT_TRUE(cluster);
  uint32_t intents = 0, swept = 0;
  for (uint16_t dead = 2; dead <= 4; ++dead) {
    ComputeConfig config = memds.config(dead, GetParam(), 2, ProtocolMode::kLogALatch);
    config.coordinators = 4;
    ASSERT_NO_FATAL_FAILURE(kill_mid_transfers(memds, config, kAccounts, kRows, 300));
    const auto conns = cluster->bootstrap_connections();
    auto report = recover_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    ASSERT_TRUE(report) << report.status().to_string();
    EXPECT_GT(report->intents, 0u);
    intents += report->intents;
    ASSERT_TRUE(truncate_lanes(*cluster, conns, dead, LaneMap::fixed_slot(dead)));
    // Truncation leaves lanes a new owner can use: a re-run (or the next
    // owner's recovery) finds no record and no intent of this one.
    auto again = recover_logs(*cluster, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    ASSERT_TRUE(again) << again.status().to_string();
    EXPECT_EQ(again->records, 0u);
    EXPECT_EQ(again->intents, 0u) << "intents of pid " << dead << " survived the truncation";
    EXPECT_TRUE(again->latch_sites.empty());
    EXPECT_EQ(audit(*cluster), int64_t{kRows} * kStart) << "after recovering pid " << dead;
    cluster->failed_ids().add(dead);
    auto released = sweep_stray_latches(*cluster, conns, dead, report->latch_sites);
    ASSERT_TRUE(released) << released.status().to_string();
    swept += *released;
    for (const HeldLatch& h : scan_latches(*cluster)) {
      ADD_FAILURE() << "latch " << std::hex << h.word << " of pid " << std::dec << latch_pid(h.word) << " left at "
                    << h.slot;
    }
  }
  EXPECT_GT(swept, 0u);
  fprintf(stderr, "log-a-latch recovery: %u intents, %u latches swept\n", intents, swept);
}

// Deterministic decisions: a record whose commit writes reached only some
// replicas is rolled back (exactly the replicas showing old+1 are restored),
// a record whose writes reached every replica is rolled forward, a torn
// record is ignored; latches are never touched until the post-publish sweep.
// Stages txn (dead, coordinator, 1) moving 10 from key a to key b as a
// crash would leave it: latched on the primaries, its record in the
// coordinator's lane (fixed slot) on every log node, and its commit WRITEs
// landed where `applied(key, replica index)` says.
void stage_transfer(Cluster& c, uint16_t dead, uint16_t coordinator, uint64_t a, uint64_t bk,
                    const std::function<bool(uint64_t, size_t)>& applied) {
  LogRecord rec;
  rec.txn_id = encode_latch({dead, coordinator, 1});
  rec.lane_seq = 1;
  // Raw reads/CASes first: they run their own batches on the same
  // connections, so nothing of `b` may be queued meanwhile.
  for (uint64_t key : {a, bk}) {
    RawSlot s = raw_find(c, kAccounts, key);
    LogEntry& e = rec.entries.emplace_back(
        log_entry_for(c, kAccounts, key, s, s.value, i64_value(as_i64(s.value) + (key == a ? -10 : 10))));
    EXPECT_EQ(raw_cas_latch(c, c.replica_indexes(e.shard)[0], s.offset, 0, rec.txn_id), 0u);
  }
  const auto conns = c.bootstrap_connections();
  OpBatch b(conns, std::chrono::seconds(5));
  std::vector<std::vector<uint8_t>> bufs;
  bufs.reserve(8);
  for (const LogEntry& e : rec.entries) {
    const auto reps = c.replica_indexes(e.shard);
    for (size_t r = 0; r < reps.size(); ++r) {
      if (!applied(e.key, r)) continue;
      auto& buf = bufs.emplace_back(16 + 8);
      store_u64(buf.data(), e.old_version + 1);
      store_u64(buf.data() + 8, make_slot_meta(kSlotOccupied, 8));
      std::memcpy(buf.data() + 16, e.new_image.data(), 8);
      b.write(reps[r], e.slot_offset + kSlotVersionOffset, buf.data(), static_cast<uint32_t>(buf.size()));
    }
  }
  std::string enc;
  encode_log_record(rec, enc);
  for (size_t n : c.log_node_indexes(dead)) {
    b.write(n, c.lane_address(n, c.lanes().lane_index(LaneMap::fixed_slot(dead), coordinator).value()), enc.data(),
            static_cast<uint32_t>(enc.size()));
  }
  ASSERT_TRUE(b.run());
}

// Counts the doorbells rung on a connection it forwards to: one per
// OpBatch::run, i.e. one round trip of a synchronous batch.
class CountingConnection final : public Connection {
 public:
  explicit CountingConnection(Connection* inner) : inner_(inner) {}
  void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) override {
    inner_->post_read(remote, local, len, wr_id);
  }
  void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                  Durability d = Durability::kPersistent) override {
    inner_->post_write(remote, local, len, wr_id, d);
  }
  void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                Durability d = Durability::kPersistent) override {
    inner_->post_cas(remote, expected, desired, wr_id, d);
  }
  void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) override {
    inner_->post_faa(remote, add, wr_id, d);
  }
  void flush() override {
    ++flushes;
    inner_->flush();
  }
  size_t poll(std::span<Completion> out) override { return inner_->poll(out); }
  size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) override {
    return inner_->wait(out, timeout);
  }
  size_t outstanding() const override { return inner_->outstanding(); }
  Errc health() const override { return inner_->health(); }
  uint64_t data_begin() const override { return inner_->data_begin(); }
  uint64_t data_end() const override { return inner_->data_end(); }
  std::string_view backend() const override { return inner_->backend(); }

  size_t flushes = 0;

 private:
  Connection* inner_;
};

TEST_P(CrashTest, RecoveryRollsBackPartialCommitsAndForwardCompleteOnes) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto c = connect_with_accounts(memds.config(1, GetParam(), 2), kAccounts, kRows, kStart);
  ASSERT_TRUE(c);
  const uint16_t dead = 5;
  const auto conns = c->bootstrap_connections();
  OpBatch b(conns, std::chrono::seconds(5));
  auto stage = [&](uint16_t coordinator, uint64_t a, uint64_t bk, const std::function<bool(uint64_t, size_t)>& applied) {
    stage_transfer(*c, dead, coordinator, a, bk, applied);
  };
  // Coordinator 0: partial (key 1 on both replicas, key 2 on its primary only).
  stage(0, 1, 2, [](uint64_t key, size_t r) { return key == 1 || r == 0; });
  // Coordinator 1: complete on every replica.
  stage(1, 3, 4, [](uint64_t, size_t) { return true; });
  // Coordinator 2: a torn record (one byte of the lane flipped after writing).
  stage(2, 5, 6, [](uint64_t, size_t) { return false; });
  // Coordinator 3: key 7 on its primary; on its backup only the value WRITE
  // landed (the version WRITE did not), key 8 nowhere.
  stage(3, 7, 8, [](uint64_t key, size_t r) { return key == 7 && r == 0; });
  const std::vector<uint8_t> torn_value = i64_value(kStart - 10);
  {
    const RawSlot s7 = raw_find(*c, kAccounts, 7);
    b.write(c->replica_indexes(c->placement().shard_of(kAccounts, 7))[1], s7.offset + sizeof(SlotHeader),
            torn_value.data(), 8);
  }
  const uint8_t junk = 0xff;  // must outlive b.run()
  for (size_t n : c->log_node_indexes(dead)) {
    b.write(n, c->lane_address(n, c->lanes().lane_index(LaneMap::fixed_slot(dead), 2).value()) + 40, &junk, 1);
  }
  ASSERT_TRUE(b.run());

  auto report = recover_logs(*c, conns, dead, LaneMap::fixed_slot(dead), test_logger());
  ASSERT_TRUE(report) << report.status().to_string();
  EXPECT_EQ(report->records, 3u);  // the torn one is not a record
  EXPECT_EQ(report->rolled_back, 2u);
  EXPECT_EQ(report->rolled_forward, 1u);
  EXPECT_EQ(report->replicas_restored, 5u);  // keys 1 (both), 2 (primary), 7 (primary, torn backup)
  EXPECT_EQ(raw_find(*c, kAccounts, 7, 1).value, i64_value(kStart));
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 8).value), kStart);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 1).value), kStart);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 2).value), kStart);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 3).value), kStart - 10);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 4).value), kStart + 10);
  EXPECT_EQ(audit(*c), int64_t{kRows} * kStart);
  // Nothing released, and a re-run is a no-op.
  for (uint64_t k = 1; k <= 8; ++k) EXPECT_EQ(latch_pid(raw_find(*c, kAccounts, k).latch), dead) << k;
  auto again = recover_logs(*c, conns, dead, LaneMap::fixed_slot(dead), test_logger());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->replicas_restored, 0u);
  EXPECT_EQ(audit(*c), int64_t{kRows} * kStart);
  // Truncate, publish, sweep: the logged objects are unlatched; keys 5 and 6
  // (torn record = unlogged) keep their stray latches until stolen.
  ASSERT_TRUE(truncate_lanes(*c, conns, dead, LaneMap::fixed_slot(dead)));
  c->failed_ids().add(dead);
  auto released = sweep_stray_latches(*c, conns, dead, report->latch_sites);
  ASSERT_TRUE(released);
  EXPECT_EQ(*released, 6u);
  for (uint64_t k : {1, 2, 3, 4, 7, 8}) EXPECT_EQ(raw_find(*c, kAccounts, k).latch, 0u) << k;
  EXPECT_EQ(latch_pid(raw_find(*c, kAccounts, 5).latch), dead);
  auto cl = BlockingClient::create(*c, 0);
  ASSERT_TRUE(cl);
  auto o = cl.value()->transact([&](Txn& t) { return t.update(kAccounts, 5).reason(); });
  EXPECT_TRUE(o.committed) << abort_reason_name(o.reason);
  EXPECT_EQ(raw_find(*c, kAccounts, 5).latch, 0u);
}

// Log recovery decides records that share no object together: its round
// trips do not grow with the records of the failed node (seed Table 4.1 has
// up to 512 outstanding coordinators). Records that do share an object are
// decided in lane order, each reading what the one before repaired.
TEST_P(CrashTest, LogRecoveryRoundTripsDoNotGrowWithTheRecords) {
  constexpr uint64_t kManyRows = 128;
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto c = connect_with_accounts(memds.config(1, GetParam(), 2), kAccounts, kManyRows, kStart);
  ASSERT_TRUE(c);
  const uint16_t dead = 5;
  auto total = [&] {
    int64_t sum = 0;
    for (uint64_t k = 0; k < kManyRows; ++k) {
      const RawSlot p = raw_find(*c, kAccounts, k), b = raw_find(*c, kAccounts, k, 1);
      EXPECT_EQ(p.version, b.version) << "key " << k;
      EXPECT_EQ(p.value, b.value) << "key " << k;
      sum += as_i64(p.value);
    }
    return sum;
  };
  // recover(): log recovery through counting connections; returns the
  // largest number of round trips any memory node saw.
  auto recover = [&](LogRecoveryReport* out) -> size_t {
    std::vector<std::unique_ptr<CountingConnection>> counting;
    std::vector<Connection*> conns;
    for (Connection* inner : c->bootstrap_connections()) {
      counting.push_back(inner ? std::make_unique<CountingConnection>(inner) : nullptr);
      conns.push_back(counting.back().get());
    }
    auto report = recover_logs(*c, conns, dead, LaneMap::fixed_slot(dead), test_logger());
    EXPECT_TRUE(report) << report.status().to_string();
    if (report) *out = std::move(*report);
    size_t most = 0;
    for (const auto& k : counting) most = std::max(most, k ? k->flushes : size_t{0});
    return most;
  };

  // Few records, then many: 2 and 40 transfers on disjoint keys, each
  // landed on the primary of its first key only (all rolled back).
  auto partial = [](uint64_t key, size_t r) { return key % 2 == 0 && r == 0; };
  size_t trips_few = 0, trips_many = 0;
  for (uint16_t records : {2, 40}) {
    for (uint16_t co = 0; co < records; ++co) {
      ASSERT_NO_FATAL_FAILURE(stage_transfer(*c, dead, co, 2 * co, 2 * co + 1, partial));
    }
    LogRecoveryReport report;
    (records == 2 ? trips_few : trips_many) = recover(&report);
    EXPECT_EQ(report.records, records);
    EXPECT_EQ(report.rolled_back, records);
    EXPECT_EQ(report.replicas_restored, records);
    EXPECT_EQ(report.latch_sites.size(), 4u * records);  // 2 keys x 2 replicas, no repeats
    EXPECT_EQ(total(), int64_t{kManyRows} * kStart);
    ASSERT_TRUE(truncate_lanes(*c, c->bootstrap_connections(), dead, LaneMap::fixed_slot(dead)));
    for (uint64_t k = 0; k < 2u * records; ++k) {
      ASSERT_EQ(raw_cas_latch(*c, c->replica_indexes(c->placement().shard_of(kAccounts, k))[0],
                              raw_find(*c, kAccounts, k).offset, encode_latch({dead, static_cast<uint16_t>(k / 2), 1}),
                              0),
                encode_latch({dead, static_cast<uint16_t>(k / 2), 1}));
    }
  }
  // Lanes, versions, roll-backs: three round trips, for 2 records or 40.
  EXPECT_EQ(trips_few, 3u);
  EXPECT_EQ(trips_many, trips_few);

  // Two records naming key 100, as a lane keeps its last record: lane 0's
  // transfer 100 -> 101 committed everywhere and released its latches;
  // lane 1's later one 100 -> 102 (logged with the version lane 0 left)
  // reached key 100's primary only. The first is rolled forward, the second
  // back to the first's image; they are decided one after the other.
  ASSERT_NO_FATAL_FAILURE(stage_transfer(*c, dead, 0, 100, 101, [](uint64_t, size_t) { return true; }));
  for (uint64_t k : {100, 101}) {
    const uint64_t word = encode_latch({dead, 0, 1});
    ASSERT_EQ(raw_cas_latch(*c, c->replica_indexes(c->placement().shard_of(kAccounts, k))[0],
                            raw_find(*c, kAccounts, k).offset, word, 0),
              word);
  }
  ASSERT_NO_FATAL_FAILURE(
      stage_transfer(*c, dead, 1, 100, 102, [](uint64_t key, size_t r) { return key == 100 && r == 0; }));
  LogRecoveryReport report;
  EXPECT_EQ(recover(&report), trips_few + 1) << "overlapping records take a round of their own";
  EXPECT_EQ(report.rolled_forward, 1u);
  EXPECT_EQ(report.rolled_back, 1u);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 100).value), kStart - 10);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 101).value), kStart + 10);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 102).value), kStart);
  EXPECT_EQ(total(), int64_t{kManyRows} * kStart);
}

// A delete that reached every replica of X but not the rest of its
// transaction frees X's slot on X's backup too. If only the primary were
// latched, a key of another shard whose replicas include that backup (but
// not X's primary) could take the slot there before recovery; the roll-back
// would then restore X on its primary only and leave X without a backup
// (a later write of X overwrites the other row on it). The deleting
// transaction must hold the slot on every replica until it is decided.
TEST_P(CrashTest, SlotFreedOnABackupByAnUndecidedDeleteIsNotReused) {
  MemdCluster memds(3);
  ASSERT_TRUE(memds.ok()) << memds.error();
  constexpr uint64_t kX = 0, kY = 1;
  auto c = connect_cluster(memds.config(1, GetParam(), 2), {{kAccounts, "accounts", 8, kRows}});
  ASSERT_TRUE(c);
  {
    TableLoader loader(*c);
    for (uint64_t k : {kX, kY}) ASSERT_TRUE(loader.add(kAccounts, k, i64_value(kStart)));
    ASSERT_TRUE(loader.finish());
  }
  const TableEntry& t = *c->directory().find(kAccounts);
  const auto xs = c->replica_indexes(c->placement().shard_of(kAccounts, kX));
  const std::vector<uint16_t> xr(xs.begin(), xs.end());
  ASSERT_EQ(xr.size(), 2u);
  const uint16_t third = static_cast<uint16_t>(3 - xr[0] - xr[1]);
  const RawSlot x = raw_find(*c, kAccounts, kX);
  ASSERT_TRUE(x.found);
  const uint64_t bucket = (x.offset - t.offset) / bucket_bytes(t);
  ASSERT_EQ(x.offset, slot_offset(t, bucket, 0)) << "X is alone in its home bucket";
  // Z: primary = X's backup, backup = the third node, same home bucket - so
  // the first free slot of Z's path on Z's primary is X's slot once freed.
  uint64_t z = 1000;
  for (;; ++z) {
    const auto zr = c->replica_indexes(c->placement().shard_of(kAccounts, z));
    if (zr[0] == xr[1] && zr[1] == third && home_bucket(t, z) == bucket) break;
    ASSERT_LT(z, 10'000'000u);
  }
  ASSERT_EQ(count_rows(*c, third, kAccounts, kX), 0u);

  // Pid 5 deletes X and updates Y; it dies right after X's second replica
  // write (the commit writes follow the order of the calls).
  const uint16_t dead = 5;
  ChildProcess child = ChildProcess::run([config = memds.config(dead, GetParam(), 2)] {
    auto cc = Cluster::connect(config, test_logger());
    if (!cc || !(*cc)->load_directory()) return 2;
    auto client = BlockingClient::create(**cc, 0);
    if (!client) return 3;
    std::array<std::atomic<uint64_t>, kCrashPointCount> hits{};
    CrashInjector inj{CrashInjector::Counters(hits)};
    inj.arm_point(CrashPoint::kAfterCommitWrite, 2);
    (*client)->engine().set_step_hook(&inj);
    (*client)->transact([&](Txn& txn) {
      if (AbortReason r = txn.remove(kAccounts, kX); r != AbortReason::kNone) return r;
      auto v = txn.update(kAccounts, kY);
      if (v) store_u64((*v).data(), 1);
      return v.reason();
    });
    return 4;  // not reached: the injector kills the process
  });
  ASSERT_GT(child.pid(), 0);
  auto ended = child.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(ended && ended->signaled) << "the child did not crash at the armed point";
  ASSERT_EQ(count_rows(*c, xr[0], kAccounts, kX), 0u);
  ASSERT_EQ(count_rows(*c, xr[1], kAccounts, kX), 0u);

  // Before the failure is even detected, a live node inserts Z.
  auto live = BlockingClient::create(*c, 0);
  ASSERT_TRUE(live);
  const CommitOutcome zi = (*live)->transact([&](Txn& txn) { return txn.insert(kAccounts, z, i64_value(77)); });

  ASSERT_NO_FATAL_FAILURE(fence_everywhere(memds, dead));
  const auto conns = c->bootstrap_connections();
  auto report = recover_logs(*c, conns, dead, LaneMap::fixed_slot(dead), test_logger());
  ASSERT_TRUE(report) << report.status().to_string();
  EXPECT_EQ(report->rolled_back, 1u);
  ASSERT_TRUE(truncate_lanes(*c, conns, dead, LaneMap::fixed_slot(dead)));
  c->failed_ids().add(dead);
  ASSERT_TRUE(sweep_stray_latches(*c, conns, dead, report->latch_sites));

  // X is back on both replicas, Y untouched, and Z (if it committed) intact.
  for (uint16_t n : xr) EXPECT_EQ(count_rows(*c, n, kAccounts, kX), 1u) << "X on node " << n;
  const RawSlot xp = raw_find(*c, kAccounts, kX), xb = raw_find(*c, kAccounts, kX, 1);
  EXPECT_EQ(xp.version, xb.version);
  EXPECT_EQ(xp.value, xb.value);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, kY).value), kStart);
  if (zi.committed) {
    const RawSlot zp = raw_find(*c, kAccounts, z), zb = raw_find(*c, kAccounts, z, 1);
    ASSERT_TRUE(zp.found && zb.found);
    EXPECT_EQ(as_i64(zp.value), 77);
    EXPECT_EQ(as_i64(zb.value), 77);
  }
  // And the store stays usable: X updated on both replicas, Z readable.
  auto o = (*live)->transact_retry([&](Txn& txn) {
    auto v = txn.update(kAccounts, kX);
    if (v) store_u64((*v).data(), 5);
    return v.reason();
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, kX, 1).value), 5);
  if (zi.committed) EXPECT_EQ(as_i64(raw_find(*c, kAccounts, z, 1).value), 77);
}

// A compute node whose transport fails after its record may have reached a
// log node (here: it is fenced between its two log WRITEs) must not abort
// as usual: releasing the latches would let others write these objects,
// and recovery would then undo their writes from its record. It keeps the
// latches and refuses further transactions on that coordinator (its next
// record would overwrite the undecided one). The same for FORD once an
// undo record was written. tcp: on shm a fence kills the fenced process.
TEST(CrashTestTcp, TransportFailureAfterLoggingKeepsTheLatchesForRecovery) {
  for (ProtocolMode mode : {ProtocolMode::kPandora, ProtocolMode::kFord}) {
    SCOPED_TRACE(std::string(protocol_name(mode)));
    MemdCluster memds(3);
    ASSERT_TRUE(memds.ok()) << memds.error();
    auto c = connect_with_accounts(memds.config(1, Backend::kTcp, 2, mode), kAccounts, kRows, kStart);
    ASSERT_TRUE(c);
    const uint16_t pid = 6;
    auto node = connect_cluster(memds.config(pid, Backend::kTcp, 2, mode));
    ASSERT_TRUE(node && node->load_directory());
    auto client = BlockingClient::create(*node, 0);
    ASSERT_TRUE(client);
    CrashInjector inj;
    inj.set_fire_action([&](CrashPoint) { fence_everywhere(memds, pid); });
    inj.arm_point(mode == ProtocolMode::kFord ? CrashPoint::kAfterFordUndo : CrashPoint::kAfterLogWrite, 1);
    (*client)->engine().set_step_hook(&inj);
    const CommitOutcome o = (*client)->transact([&](Txn& t) {
      for (uint64_t k : {2, 3}) {
        auto v = t.update(kAccounts, k);
        if (!v) return v.reason();
        store_u64((*v).data(), 1);
      }
      return AbortReason::kNone;
    });
    EXPECT_FALSE(o.committed);
    EXPECT_EQ(o.reason, AbortReason::kTransport);
    EXPECT_NE(o.detail.message().find("kept for recovery"), std::string::npos) << o.detail.to_string();
    // ford failed on key 3's latch CAS, just after key 2's undo record.
    EXPECT_NE(raw_find(*c, kAccounts, 2).latch, 0u) << "key 2 was released";
    if (mode == ProtocolMode::kPandora) EXPECT_NE(raw_find(*c, kAccounts, 3).latch, 0u) << "key 3 was released";
    inj.disarm();
    const CommitOutcome next = (*client)->transact([&](Txn& t) { return t.read(kAccounts, 5).reason(); });
    EXPECT_EQ(next.reason, AbortReason::kTransport);
    EXPECT_NE(next.detail.message().find("must be recovered"), std::string::npos) << next.detail.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CrashTest, ::testing::Values(Backend::kShm, Backend::kTcp),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace pandora::testing
