// The transaction engine against real daemons, on both backends: loader and
// directory, latch words, exact latch release on abort, stealing, address
// cache invalidation, inserts/deletes, remote-op counts.
#include <gtest/gtest.h>

#include "common/latch.h"
#include "common/slot_layout.h"
#include "compute/blocking_client.h"
#include "compute/loader.h"
#include "compute/op_batch.h"
#include "compute/scheduler.h"
#include "compute/table_geometry.h"
#include "compute/txn/locate.h"
#include "tests/compute/compute_test_support.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kAccounts = 1;
constexpr uint32_t kItems = 3;
constexpr uint32_t kBig = 5;  // rows of 12000 bytes: one per bucket
constexpr uint64_t kRows = 64;

std::vector<TableSpec> specs() {
  return {{kAccounts, "accounts", 8, kRows}, {kItems, "items", 24, 256}, {kBig, "big", 12000, 16}};
}

class EngineTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    memds_ = std::make_unique<MemdCluster>(3);
    ASSERT_TRUE(memds_->ok()) << memds_->error();
  }
  std::unique_ptr<Cluster> load(ComputeConfig cfg) {
    auto c = connect_cluster(cfg, specs());
    if (!c) return nullptr;
    uint64_t progress_calls = 0;
    TableLoader loader(*c, [&](const LoadProgress&) { ++progress_calls; }, 16);
    for (uint64_t k = 0; k < kRows; ++k) EXPECT_TRUE(loader.add(kAccounts, k, i64_value(100)));
    EXPECT_TRUE(loader.finish());
    EXPECT_GE(progress_calls, kRows / 16);
    return c;
  }
  ComputeConfig cfg(uint16_t pid) const { return memds_->config(pid, GetParam(), 2); }
  std::unique_ptr<MemdCluster> memds_;
};

std::unique_ptr<BlockingClient> client(Cluster& c, uint16_t coordinator = 0) {
  auto r = BlockingClient::create(c, coordinator);
  EXPECT_TRUE(r) << r.status().to_string();
  return r ? std::move(*r) : nullptr;
}

TEST_P(EngineTest, LoadedRowsAreOnTheirReplicasAndReadableFromAnotherComputeNode) {
  auto loader = load(cfg(1));
  ASSERT_TRUE(loader);
  auto other = connect_cluster(cfg(2));
  ASSERT_TRUE(other);
  ASSERT_TRUE(other->load_directory());
  auto cl = client(*other);
  int64_t total = 0;
  auto o = cl->transact([&](Txn& t) {
    for (uint64_t k = 0; k < kRows; ++k) {
      auto v = t.read(kAccounts, k);
      if (!v) return v.reason();
      total += as_i64(*v);
    }
    return AbortReason::kNone;
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  EXPECT_EQ(total, int64_t{100} * kRows);
  for (uint64_t k : {0ull, 17ull, 63ull}) {
    const auto reps = other->replica_indexes(other->placement().shard_of(kAccounts, k));
    for (size_t n = 0; n < other->node_count(); ++n) {
      const bool replica = std::find(reps.begin(), reps.end(), n) != reps.end();
      EXPECT_EQ(count_rows(*other, n, kAccounts, k), replica ? 1u : 0u) << "key " << k << " node " << n;
    }
  }
}

TEST_P(EngineTest, DirectoriesThatDifferAreAClearErrorAndLoadingTwiceIsRefused) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  EXPECT_EQ(create_tables(*c, specs()).code(), Errc::kMismatch);
  // A different directory on node index 1.
  std::vector<TableSpec> other_specs = {{9, "other", 8, 10}};
  auto d = plan_table_directory(other_specs, c->config().cluster_id, 64, 2, kTestLaneBytes, 256, c->table_begin(),
                                c->table_limit());
  ASSERT_TRUE(d);
  const std::string enc = encode_table_directory(*d);
  OpBatch b(c->bootstrap_connections(), std::chrono::seconds(5));
  b.write(1, c->table_begin(), enc.data(), static_cast<uint32_t>(enc.size()));
  ASSERT_TRUE(b.run());
  auto fresh = connect_cluster(cfg(2));
  ASSERT_TRUE(fresh);
  Status s = fresh->load_directory();
  EXPECT_EQ(s.code(), Errc::kMismatch);
  EXPECT_NE(s.message().find("different table directories"), std::string::npos) << s.message();
}

TEST_P(EngineTest, LatchWordCarriesPidCoordinatorAndSequenceAndIsReleasedAfterCommit) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto cl = client(*c, 3);
  const RawSlot before = raw_find(*c, kAccounts, 5);
  ASSERT_TRUE(before.found);
  const size_t primary = c->replica_indexes(c->placement().shard_of(kAccounts, 5))[0];
  cl->run([&](Txn& t) {
    t.begin();
    auto v = t.update(kAccounts, 5);
    ASSERT_TRUE(v);
    const uint64_t word = raw_latch(*c, primary, before.offset);
    EXPECT_EQ(word, cl->engine().latch_word());
    EXPECT_EQ(decode_latch(word).pid, 1);
    EXPECT_EQ(decode_latch(word).coordinator, 3);
    int64_t x = as_i64(*v) + 1;
    std::memcpy((*v).data(), &x, sizeof x);
    EXPECT_TRUE(t.commit().committed);
  });
  const RawSlot after = raw_find(*c, kAccounts, 5);
  EXPECT_EQ(after.latch, 0u);
  EXPECT_EQ(after.version, before.version + 1);
  EXPECT_EQ(as_i64(after.value), 101);
  const RawSlot backup = raw_find(*c, kAccounts, 5, 1);
  EXPECT_EQ(backup.version, before.version + 1);
  EXPECT_EQ(as_i64(backup.value), 101);
  EXPECT_EQ(backup.latch, 0u);  // latches live on the primary only
}

void set_foreign_latch(Cluster& c, uint64_t key, uint64_t word) {
  const RawSlot s = raw_find(c, kAccounts, key);
  ASSERT_TRUE(s.found);
  const size_t primary = c.replica_indexes(c.placement().shard_of(kAccounts, key))[0];
  ASSERT_EQ(raw_cas_latch(c, primary, s.offset, 0, word), 0u);
}

TEST_P(EngineTest, AbortReleasesExactlyTheLatchesItAcquired) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  const uint64_t foreign = encode_latch({9, 0, 1});
  set_foreign_latch(*c, 7, foreign);
  auto cl = client(*c);
  auto o = cl->transact([&](Txn& t) {
    EXPECT_TRUE(t.update(kAccounts, 5));
    EXPECT_TRUE(t.update(kAccounts, 6));
    EXPECT_EQ(t.insert(kItems, 1000, std::vector<uint8_t>(24, 1)), AbortReason::kNone);
    auto v = t.update(kAccounts, 7);
    EXPECT_EQ(v.reason(), AbortReason::kLatched);
    return v.reason();
  });
  EXPECT_FALSE(o.committed);
  EXPECT_EQ(o.reason, AbortReason::kLatched);
  auto held = scan_latches(*c);
  ASSERT_EQ(held.size(), 1u);  // only the foreign latch: 5, 6 and the insert's replicas are free
  EXPECT_EQ(held[0].word, foreign);
  EXPECT_EQ(raw_find(*c, kAccounts, 7).latch, foreign);
  EXPECT_FALSE(raw_find(*c, kItems, 1000).found);
}

TEST_P(EngineTest, ComplicitAbortBugReleasesALatchItNeverAcquired) {
  if (!bug_switches_available()) GTEST_SKIP() << "bug switches are compiled out";
  ComputeConfig config = cfg(1);
  config.bugs.complicit_abort = true;
  auto c = load(config);
  ASSERT_TRUE(c);
  set_foreign_latch(*c, 7, encode_latch({9, 0, 1}));
  auto cl = client(*c);
  auto o = cl->transact([&](Txn& t) {
    EXPECT_TRUE(t.update(kAccounts, 5));
    return t.update(kAccounts, 7).reason();
  });
  EXPECT_EQ(o.reason, AbortReason::kLatched);
  EXPECT_EQ(raw_find(*c, kAccounts, 7).latch, 0u);  // the bug: someone else's latch released
}

TEST_P(EngineTest, LatchesOfFailedPidsAreStolenAndIgnoredByReaders) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  const uint64_t stray = encode_latch({9, 2, 44});
  set_foreign_latch(*c, 7, stray);
  set_foreign_latch(*c, 8, stray);
  auto cl = client(*c);
  // Live owner: readers and writers abort.
  EXPECT_EQ(cl->transact([&](Txn& t) { return t.read(kAccounts, 8).reason(); }).reason, AbortReason::kLatched);
  EXPECT_EQ(cl->transact([&](Txn& t) { return t.update(kAccounts, 7).reason(); }).reason, AbortReason::kLatched);
  c->failed_ids().add(9);
  auto o = cl->transact([&](Txn& t) {
    auto r = t.read(kAccounts, 8);
    if (!r) return r.reason();
    auto v = t.update(kAccounts, 7);
    if (!v) return v.reason();
    int64_t x = as_i64(*v) + 5;
    std::memcpy((*v).data(), &x, sizeof x);
    return AbortReason::kNone;
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  EXPECT_EQ(raw_find(*c, kAccounts, 7).latch, 0u);  // stolen, then released by its new owner
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 7).value), 105);
  EXPECT_EQ(raw_find(*c, kAccounts, 8).latch, stray);  // only read: left alone
}

TEST_P(EngineTest, StaleAddressCacheEntriesAreDetectedAndReplaced) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto cl = client(*c);
  const RawSlot five = raw_find(*c, kAccounts, 5);
  const RawSlot six = raw_find(*c, kAccounts, 6);
  ASSERT_TRUE(five.found && six.found);
  // Key 6's slot cached for key 5: a read must still return key 5's row.
  cl->cache().put(kAccounts, 5, six.offset);
  auto o = cl->transact([&](Txn& t) {
    auto v = t.read(kAccounts, 5);
    EXPECT_TRUE(v);
    return v.reason();
  });
  ASSERT_TRUE(o.committed);
  EXPECT_EQ(cl->cache().get(kAccounts, 5), five.offset);
  // Again for a write: the latch taken on the wrong slot must be released.
  cl->cache().put(kAccounts, 5, six.offset);
  o = cl->transact([&](Txn& t) {
    auto v = t.update(kAccounts, 5);
    if (!v) return v.reason();
    int64_t x = 55;
    std::memcpy((*v).data(), &x, sizeof x);
    return AbortReason::kNone;
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  EXPECT_EQ(cl->cache().get(kAccounts, 5), five.offset);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 5).value), 55);
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 6).value), 100);
  EXPECT_TRUE(scan_latches(*c).empty());
}

TEST_P(EngineTest, InsertRemoveAndReinsert) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto cl = client(*c);
  std::vector<uint8_t> val(24, 7);
  EXPECT_TRUE(cl->transact([&](Txn& t) { return t.insert(kItems, 42, val); }).committed);
  EXPECT_EQ(cl->transact([&](Txn& t) { return t.insert(kItems, 42, val); }).reason, AbortReason::kDuplicate);
  auto o = cl->transact([&](Txn& t) {
    auto v = t.read(kItems, 42);
    if (v) EXPECT_EQ((*v)[3], 7);
    return v.reason();
  });
  EXPECT_TRUE(o.committed);
  const RawSlot ins = raw_find(*c, kItems, 42);
  EXPECT_TRUE(cl->transact([&](Txn& t) { return t.remove(kItems, 42); }).committed);
  EXPECT_EQ(cl->transact([&](Txn& t) { return t.read(kItems, 42).reason(); }).reason, AbortReason::kNotFound);
  EXPECT_EQ(cl->transact([&](Txn& t) { return t.remove(kItems, 42); }).reason, AbortReason::kNotFound);
  val[0] = 9;
  EXPECT_TRUE(cl->transact([&](Txn& t) { return t.insert(kItems, 42, val); }).committed);
  const RawSlot again = raw_find(*c, kItems, 42);
  ASSERT_TRUE(again.found);
  EXPECT_EQ(again.offset, ins.offset);          // first free slot of the path again
  EXPECT_EQ(again.version, ins.version + 2);    // delete and insert both bump the version
  for (uint16_t n : c->replica_indexes(c->placement().shard_of(kItems, 42))) {
    EXPECT_EQ(count_rows(*c, n, kItems, 42), 1u);
  }
  // Many inserts along colliding paths (table sized for 256 rows).
  for (uint64_t k = 100; k < 300; ++k) {
    auto r = cl->transact([&](Txn& t) { return t.insert(kItems, k, val); });
    ASSERT_TRUE(r.committed) << k << " " << abort_reason_name(r.reason);
  }
  for (uint64_t k = 100; k < 300; k += 37) EXPECT_TRUE(raw_find(*c, kItems, k).found);
  EXPECT_TRUE(scan_latches(*c).empty());
}

TEST_P(EngineTest, ReadValidationSeesConcurrentCommits) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto a = client(*c, 0);
  auto b = client(*c, 1);
  auto o = a->transact([&](Txn& t) {
    auto v = t.read(kAccounts, 3);
    if (!v) return v.reason();
    // Another coordinator commits a write to key 3 in between.
    EXPECT_TRUE(b->transact([&](Txn& u) {
                   auto w = u.update(kAccounts, 3);
                   if (!w) return w.reason();
                   (*w)[0] ^= 1;
                   return AbortReason::kNone;
                 }).committed);
    auto w = t.update(kAccounts, 4);
    return w.reason();
  });
  EXPECT_EQ(o.reason, AbortReason::kValidationFailed);
  EXPECT_TRUE(scan_latches(*c).empty());
}

// read_if_present: absence is an answer, not an abort, and it is validated
// like a read - an insert of the key committed in between aborts the
// reader, while the reader's own insert and delete are its own view.
TEST_P(EngineTest, ReadIfPresentAnswersAbsenceAndValidatesIt) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto a = client(*c, 0);
  auto b = client(*c, 1);
  const std::vector<uint8_t> val(24, 7);
  // Absent and present keys in one transaction that commits.
  auto o = a->transact([&](Txn& t) {
    auto missing = t.read_if_present(kItems, 500);
    EXPECT_TRUE(missing) << abort_reason_name(missing.reason());
    EXPECT_FALSE((*missing).has_value());
    auto there = t.read_if_present(kAccounts, 3);
    EXPECT_TRUE(there && (*there).has_value());
    if (there && *there) EXPECT_EQ(as_i64(**there), 100);
    return t.write(kAccounts, 4, i64_value(5));
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  // Another coordinator inserts the key between the read and the commit.
  o = a->transact([&](Txn& t) {
    auto missing = t.read_if_present(kItems, 501);
    if (!missing) return missing.reason();
    EXPECT_FALSE((*missing).has_value());
    EXPECT_TRUE(b->transact([&](Txn& u) { return u.insert(kItems, 501, val); }).committed);
    return t.write(kAccounts, 4, i64_value(6));
  });
  EXPECT_EQ(o.reason, AbortReason::kValidationFailed) << "an absence read survived a concurrent insert";
  EXPECT_EQ(as_i64(raw_find(*c, kAccounts, 4).value), 5);
  // The same, read-only: still validated.
  o = a->transact([&](Txn& t) {
    auto missing = t.read_if_present(kItems, 502);
    if (!missing) return missing.reason();
    EXPECT_TRUE(b->transact([&](Txn& u) { return u.insert(kItems, 502, val); }).committed);
    return AbortReason::kNone;
  });
  EXPECT_EQ(o.reason, AbortReason::kValidationFailed);
  // Its own insert after reading the key absent commits; its own delete
  // makes the key absent in its view.
  o = a->transact([&](Txn& t) {
    auto missing = t.read_if_present(kItems, 503);
    if (!missing) return missing.reason();
    if (AbortReason r = t.insert(kItems, 503, val); r != AbortReason::kNone) return r;
    auto mine = t.read_if_present(kItems, 503);
    EXPECT_TRUE(mine && (*mine).has_value());
    if (AbortReason r = t.remove(kItems, 501); r != AbortReason::kNone) return r;
    auto gone = t.read_if_present(kItems, 501);
    EXPECT_TRUE(gone && !(*gone).has_value());
    return AbortReason::kNone;
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  EXPECT_TRUE(raw_find(*c, kItems, 503).found);
  EXPECT_FALSE(raw_find(*c, kItems, 501).found);
  EXPECT_TRUE(scan_latches(*c).empty());
}

// A coordinator waiting on something other than its own operations (the
// litmus driver's pause flag) yields; the worker must run it again even
// though none of its operations completed, while the others progress.
TEST_P(EngineTest, AYieldingCoordinatorRunsAgainWhileTheOthersProgress) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto sched = Scheduler::create(*c);
  ASSERT_TRUE(sched);
  const size_t n = (*sched)->worker(0).coordinator_count();
  ASSERT_GE(n, 2u);
  size_t done = 0;  // one worker thread: no race
  uint64_t yields = 0;
  (*sched)->run([&](Coordinator& co) {
    if (co.slot() == 0) {
      while (done < n - 1) {
        ++yields;
        co.yield();
      }
      return;
    }
    auto r = [&] {
      Txn& t = co.txn();
      t.begin();
      auto v = t.update(kAccounts, co.slot());
      if (v) (*v)[0] ^= 1;
      return t.commit();
    }();
    EXPECT_TRUE(r.committed) << abort_reason_name(r.reason);
    ++done;
  });
  EXPECT_EQ(done, n - 1);
  EXPECT_GT(yields, 0u);
}

TEST_P(EngineTest, CountsRemoteOperationsPerTransaction) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto cl = client(*c);
  auto bump = [&](Txn& t) {
    auto v = t.update(kAccounts, 9);
    if (!v) return v.reason();
    (*v)[0] += 1;
    return AbortReason::kNone;
  };
  ASSERT_TRUE(cl->transact(bump).committed);  // warms the address cache
  ASSERT_TRUE(cl->transact(bump).committed);
  const OpCounters ops = cl->engine().last_txn_ops();
  EXPECT_EQ(ops.cas, 1u);
  EXPECT_EQ(ops.reads, 1u);   // the slot behind the latch; no bucket READ
  // log x2 (f+1); per replica (x2) value then version+meta; release x1
  EXPECT_EQ(ops.writes, 7u);
  EXPECT_EQ(ops.faa, 0u);
  EXPECT_EQ(cl->engine().counters().commits, 2u);
}

// An insert reads its key's probe path in one READ - two where the path
// wraps past the table's last bucket - then each replica's slot header,
// then the path again at validation (issue 11: no READ per bucket).
TEST_P(EngineTest, AnInsertReadsItsProbePathInOneReadOrTwoWhereItWraps) {
  auto c = load(cfg(1));
  ASSERT_TRUE(c);
  auto cl = client(*c);
  const TableEntry* t = c->directory().find(kItems);
  ASSERT_NE(t, nullptr);
  ASSERT_GT(t->max_probe, 2u);
  const std::vector<uint8_t> val(24, 7);
  int wrapped = 0, straight = 0;
  for (uint64_t key = 5000; key < 100000 && (wrapped < 2 || straight < 4); ++key) {
    const bool wraps = home_bucket(*t, key) + t->max_probe > t->bucket_count;
    if (wraps ? wrapped >= 2 : straight >= 4) continue;
    ASSERT_TRUE(cl->transact([&](Txn& x) { return x.insert(kItems, key, val); }).committed) << key;
    const uint64_t path_reads = wraps ? 2 : 1;
    const uint64_t replicas = c->replica_indexes(c->placement().shard_of(kItems, key)).size();
    EXPECT_EQ(cl->engine().last_txn_ops().reads, 2 * path_reads + replicas) << "key " << key;
    ++(wraps ? wrapped : straight);
  }
  EXPECT_EQ(wrapped, 2);
  EXPECT_EQ(straight, 4);
}

// A path of big buckets is read in pieces of at most kMaxPathReadBytes
// (whole buckets), not in one READ of half a megabyte.
TEST_P(EngineTest, APathOfBigBucketsIsReadInPiecesOfAtMost64KiB) {
  ComputeConfig big_lanes = cfg(1);
  big_lanes.lane_bytes = 32 * 1024;  // the log record holds the 12000-byte row twice
  auto c = load(big_lanes);
  ASSERT_TRUE(c);
  auto cl = client(*c);
  const TableEntry* t = c->directory().find(kBig);
  ASSERT_NE(t, nullptr);
  const uint64_t per_read = txn::kMaxPathReadBytes / bucket_bytes(*t);
  ASSERT_GE(per_read, 1u);
  ASSERT_LT(per_read, t->max_probe);  // so the path takes several READs
  const uint64_t pieces = (t->max_probe + per_read - 1) / per_read;
  const std::vector<uint8_t> val(12000, 3);
  int checked = 0;
  for (uint64_t key = 1; key < 1000 && checked < 3; ++key) {
    if (home_bucket(*t, key) + t->max_probe > t->bucket_count) continue;  // no wrap: pieces alone
    const auto out = cl->transact([&](Txn& x) { return x.insert(kBig, key, val); });
    ASSERT_TRUE(out.committed) << key << ": " << abort_reason_name(out.reason);
    const uint64_t replicas = c->replica_indexes(c->placement().shard_of(kBig, key)).size();
    EXPECT_EQ(cl->engine().last_txn_ops().reads, 2 * pieces + replicas) << "key " << key;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

INSTANTIATE_TEST_SUITE_P(Backends, EngineTest, ::testing::Values(Backend::kShm, Backend::kTcp),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace pandora::testing
