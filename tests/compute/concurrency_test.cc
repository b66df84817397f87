// Concurrency with several compute processes (fork) x several coordinators,
// on both backends and in every protocol mode: money transfers conserve the
// total, a counter ends at exactly the number of committed increments, racing
// inserts/deletes of the same keys succeed exactly once, and no slot is left
// latched after a clean run.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "compute/blocking_client.h"
#include "compute/loader.h"
#include "compute/scheduler.h"
#include "tests/compute/compute_test_support.h"
#include "tests/support/verbs_support.h"
#include "tests/transport/child_process.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kChecking = 1;
constexpr uint32_t kSavings = 2;
constexpr uint32_t kCounter = 3;
constexpr uint32_t kScratch = 4;
constexpr uint32_t kItems = 5;
constexpr uint64_t kAccounts = 24;
constexpr int64_t kStartBalance = 1000;
constexpr int kChildren = 2;
constexpr int kTxnsPerCoordinator = 150;

std::vector<TableSpec> specs() {
  return {{kChecking, "checking", 8, kAccounts},
          {kSavings, "savings", 8, kAccounts},
          {kCounter, "counter", 8, 4},
          {kScratch, "scratch", 16, 8},
          {kItems, "items", 16, 512}};
}

using Param = std::tuple<Backend, ProtocolMode>;

class ConcurrencyTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (std::get<0>(GetParam()) == Backend::kVerbs) PANDORA_SKIP_WITHOUT_VERBS();
    memds_ = std::make_unique<MemdCluster>(3);
    ASSERT_TRUE(memds_->ok()) << memds_->error();
    cluster_ = connect_cluster(cfg(1), specs());
    ASSERT_TRUE(cluster_);
    TableLoader loader(*cluster_);
    for (uint64_t k = 0; k < kAccounts; ++k) {
      ASSERT_TRUE(loader.add(kChecking, k, i64_value(kStartBalance)));
      ASSERT_TRUE(loader.add(kSavings, k, i64_value(kStartBalance)));
    }
    ASSERT_TRUE(loader.add(kCounter, 0, i64_value(0)));
    for (uint64_t k = 0; k < 8; ++k) ASSERT_TRUE(loader.add(kScratch, k, i64_value(0, 16)));
    ASSERT_TRUE(loader.finish());
  }
  ComputeConfig cfg(uint16_t pid) const {
    ComputeConfig c = memds_->config(pid, std::get<0>(GetParam()), 2, std::get<1>(GetParam()));
    c.threads = 2;  // 2 worker threads x 2 coordinators per compute process
    c.coordinators = 2;
    return c;
  }
  // Runs `body` in kChildren forked compute processes (pids 2..) and waits
  // (bounded) for all of them to exit 0.
  void run_children(const std::function<int(Cluster&, int child)>& body) {
    std::vector<ChildProcess> kids;
    for (int i = 0; i < kChildren; ++i) {
      const ComputeConfig config = cfg(static_cast<uint16_t>(2 + i));
      kids.push_back(ChildProcess::run([config, i, &body] {
        auto c = Cluster::connect(config, test_logger());
        if (!c || !(*c)->load_directory()) return 2;
        return body(**c, i);
      }));
      ASSERT_GT(kids.back().pid(), 0);
    }
    for (auto& k : kids) {
      auto st = k.wait_for(std::chrono::seconds(300));
      ASSERT_TRUE(st.has_value()) << "child did not finish in time";
      EXPECT_TRUE(st->exited && st->code == 0) << "child exit " << st->code << " signal " << st->signal;
    }
  }
  std::unique_ptr<MemdCluster> memds_;
  std::unique_ptr<Cluster> cluster_;
};

void add_i64(std::span<uint8_t> v, int64_t d) {
  int64_t x = as_i64(v) + d;
  std::memcpy(v.data(), &x, sizeof x);
}

// One coordinator's share of the mixed workload. Returns false on an
// unexpected abort reason.
bool mixed_workload(Coordinator& co, SharedCounters& shared, int child) {
  std::mt19937_64 rng(co.id() * 7919 + child * 104729 + 1);
  Txn& t = co.txn();
  for (int i = 0; i < kTxnsPerCoordinator;) {
    const int kind = static_cast<int>(rng() % 10);
    t.begin();
    AbortReason r = AbortReason::kNone;
    if (kind < 6) {  // transfer between two accounts of either table
      const uint32_t ta = rng() % 2 ? kChecking : kSavings, tb = rng() % 2 ? kChecking : kSavings;
      const uint64_t a = rng() % kAccounts, b = rng() % kAccounts;
      if (ta == tb && a == b) {
        t.abort();
        continue;
      }
      const int64_t amount = static_cast<int64_t>(rng() % 50);
      auto va = t.update(ta, a);
      if (!va) {
        r = va.reason();
      } else {
        auto vb = t.update(tb, b);
        if (!vb) {
          r = vb.reason();
        } else {
          add_i64(*va, -amount);
          add_i64(*vb, amount);
        }
      }
    } else if (kind < 8) {  // counter increment plus a blind write (latch CAS left in flight)
      const uint64_t s = rng() % 8;
      std::vector<uint8_t> blind = i64_value(static_cast<int64_t>(rng()), 16);
      r = t.write(kScratch, s, blind);
      if (r == AbortReason::kNone) {
        auto v = t.update(kCounter, 0);
        if (!v) r = v.reason();
        else add_i64(*v, 1);
      }
    } else {  // read-only audit of a few accounts (validated at commit)
      for (int k = 0; k < 3 && r == AbortReason::kNone; ++k) r = t.read(kChecking, rng() % kAccounts).reason();
    }
    CommitOutcome o = r == AbortReason::kNone ? t.commit() : CommitOutcome{false, r, {}};
    if (r == AbortReason::kNone && !o.committed) r = o.reason;
    if (r != AbortReason::kNone) {
      t.abort();
      if (r != AbortReason::kLatched && r != AbortReason::kValidationFailed) {
        fprintf(stderr, "unexpected abort %s: %s\n", std::string(abort_reason_name(r)).c_str(),
                co.engine().last_detail().to_string().c_str());
        return false;
      }
      shared[1].fetch_add(1);
      continue;
    }
    if (kind >= 6 && kind < 8) shared[0].fetch_add(1);  // committed increments
    shared[2].fetch_add(1);
    ++i;
  }
  return true;
}

TEST_P(ConcurrencyTest, TransfersConserveMoneyAndTheCounterCountsCommits) {
  SharedCounters shared;
  run_children([&](Cluster& c, int child) {
    auto sched = Scheduler::create(c);
    if (!sched) return 3;
    std::atomic<bool> ok{true};
    (*sched)->run([&](Coordinator& co) {
      if (!mixed_workload(co, shared, child)) ok = false;
    });
    return ok ? 0 : 4;
  });
  EXPECT_EQ(shared[2].load(), uint64_t{kChildren} * 4 * kTxnsPerCoordinator);
  int64_t total = 0;
  for (uint64_t k = 0; k < kAccounts; ++k) {
    for (uint32_t t : {kChecking, kSavings}) {
      RawSlot p = raw_find(*cluster_, t, k), b = raw_find(*cluster_, t, k, 1);
      ASSERT_TRUE(p.found && b.found);
      EXPECT_EQ(p.value, b.value) << "replicas differ for " << t << "/" << k;
      EXPECT_EQ(p.version, b.version);
      total += as_i64(p.value);
    }
  }
  EXPECT_EQ(total, 2 * int64_t{kAccounts} * kStartBalance);
  EXPECT_EQ(as_i64(raw_find(*cluster_, kCounter, 0).value), static_cast<int64_t>(shared[0].load()));
  auto held = scan_latches(*cluster_);
  EXPECT_TRUE(held.empty()) << held.size() << " latches left, first " << std::hex << held[0].word;
  fprintf(stderr, "commits %lu aborts %lu\n", static_cast<unsigned long>(shared[2].load()),
          static_cast<unsigned long>(shared[1].load()));
}

TEST_P(ConcurrencyTest, RacingInsertsAndDeletesOfTheSameKeysSucceedOnce) {
  SharedCounters shared;
  constexpr uint64_t kKeys = 120;
  run_children([&](Cluster& c, int child) {
    auto sched = Scheduler::create(c);
    if (!sched) return 3;
    std::atomic<bool> ok{true};
    (*sched)->run([&](Coordinator& co) {
      // Every coordinator of every child walks all keys (in its own order):
      // insert phase, then delete phase.
      std::mt19937_64 rng(co.id() + 100 * child);
      std::vector<uint64_t> keys(kKeys);
      for (uint64_t k = 0; k < kKeys; ++k) keys[k] = k * 7 + 1;
      std::shuffle(keys.begin(), keys.end(), rng);
      for (int phase = 0; phase < 2; ++phase) {
        for (uint64_t k : keys) {
          for (;;) {
            Txn& t = co.txn();
            t.begin();
            AbortReason r = phase == 0 ? t.insert(kItems, k, i64_value(static_cast<int64_t>(k), 16))
                                       : t.remove(kItems, k);
            CommitOutcome o = r == AbortReason::kNone ? t.commit() : CommitOutcome{false, r, {}};
            if (o.committed) {
              shared[phase].fetch_add(1);
              break;
            }
            t.abort();
            if (o.reason == AbortReason::kDuplicate || o.reason == AbortReason::kNotFound) break;
            if (o.reason != AbortReason::kLatched && o.reason != AbortReason::kValidationFailed) {
              fprintf(stderr, "unexpected %s\n", std::string(abort_reason_name(o.reason)).c_str());
              ok = false;
              return;
            }
          }
        }
        // Phases of different coordinators overlap: a key deleted early may
        // be inserted again by a slower coordinator; the check below holds
        // either way (rows = committed inserts - committed deletes).
      }
    });
    return ok ? 0 : 4;
  });
  // Each key was inserted at least once and deleted at most once per insert.
  uint64_t present = 0;
  for (uint64_t k = 0; k < kKeys; ++k) {
    const uint64_t key = k * 7 + 1;
    const auto reps = cluster_->replica_indexes(cluster_->placement().shard_of(kItems, key));
    const size_t n0 = count_rows(*cluster_, reps[0], kItems, key);
    EXPECT_LE(n0, 1u) << "duplicate rows for key " << key;
    EXPECT_EQ(count_rows(*cluster_, reps[1], kItems, key), n0);
    present += n0;
  }
  EXPECT_EQ(shared[0].load() - shared[1].load(), present);
  EXPECT_GE(shared[0].load(), kKeys);
  EXPECT_TRUE(scan_latches(*cluster_).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ConcurrencyTest,
    ::testing::Combine(::testing::Values(Backend::kShm, Backend::kTcp, Backend::kVerbs),
                       ::testing::Values(ProtocolMode::kPandora, ProtocolMode::kFord, ProtocolMode::kLogALatch)),
    [](const auto& info) {
      std::string name = std::string(backend_name(std::get<0>(info.param))) + "_" +
                         std::string(protocol_name(std::get<1>(info.param)));
      for (char& ch : name) ch = ch == '-' ? '_' : ch;
      return name;
    });

}  // namespace
}  // namespace pandora::testing
