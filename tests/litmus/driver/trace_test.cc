// TxnEngine::set_observer: the TxnTrace handed over at commit and abort
// names what each item observed and installed (versions, first 8 value
// bytes, presence), the outcome, the reason and a begin..end CLOCK_REALTIME
// window; an aborted transaction installs nothing (write versions 0); a
// detached observer receives nothing. Also: an attached but unarmed
// CrashInjector counts the hits of a committed update and changes nothing.
#include <gtest/gtest.h>

#include <ctime>
#include <vector>

#include "compute/blocking_client.h"
#include "compute/crash_injector.h"
#include "compute/loader.h"
#include "compute/txn_trace.h"
#include "tests/compute/compute_test_support.h"

namespace pandora::testing {
namespace {

constexpr uint32_t kTable = 1;

struct Recorder final : TxnObserver {
  std::vector<TxnTrace> traces;
  void on_txn_end(const TxnTrace& t) override { traces.push_back(t); }
};

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

class TraceTest : public ::testing::TestWithParam<Backend> {};

TEST_P(TraceTest, ObserverSeesVersionsValuesAndOutcomes) {
  MemdCluster memds(2);
  ASSERT_TRUE(memds.ok()) << memds.error();
  auto c = connect_cluster(memds.config(1, GetParam(), 2), {{kTable, "t", 8, 64}});
  ASSERT_TRUE(c);
  {
    TableLoader loader(*c);
    for (uint64_t k = 0; k < 4; ++k) ASSERT_TRUE(loader.add(kTable, k, i64_value(100 + k)));
    ASSERT_TRUE(loader.finish());
  }
  auto cl = BlockingClient::create(*c, 0);
  ASSERT_TRUE(cl);
  Recorder rec;
  CrashInjector crash;
  (*cl)->engine().set_observer(&rec);
  (*cl)->engine().set_step_hook(&crash);

  const uint64_t before = now_ns();
  // Read key 0, update key 1 to 7, insert key 10, delete key 2.
  auto o = (*cl)->transact([&](Txn& t) {
    if (auto r = t.read(kTable, 0); !r) return r.reason();
    auto u = t.update(kTable, 1);
    if (!u) return u.reason();
    const auto seven = i64_value(7);
    std::copy(seven.begin(), seven.end(), (*u).begin());
    if (auto r = t.insert(kTable, 10, i64_value(55)); r != AbortReason::kNone) return r;
    return t.remove(kTable, 2);
  });
  ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  const uint64_t after = now_ns();
  ASSERT_EQ(rec.traces.size(), 1u);
  const TxnTrace t = rec.traces[0];  // a copy: later traces grow the vector
  EXPECT_TRUE(t.committed);
  EXPECT_EQ(t.reason, AbortReason::kNone);
  EXPECT_EQ(t.pid, 1);
  EXPECT_EQ(t.coordinator, 0);
  EXPECT_LE(before, t.begin_ns);
  EXPECT_LE(t.begin_ns, t.end_ns);
  EXPECT_LE(t.end_ns, after);
  ASSERT_EQ(t.items.size(), 4u);
  EXPECT_EQ(t.items[0].op, TraceOp::kRead);
  EXPECT_EQ(t.items[0].key, 0u);
  EXPECT_TRUE(t.items[0].present);
  EXPECT_EQ(t.items[0].read_version, 1u);  // the loader writes version 1
  EXPECT_EQ(t.items[0].read_value, 100u);
  EXPECT_EQ(t.items[1].op, TraceOp::kUpdate);
  EXPECT_EQ(t.items[1].read_version, 1u);
  EXPECT_EQ(t.items[1].write_version, 2u);
  EXPECT_EQ(t.items[1].read_value, 101u);
  EXPECT_EQ(t.items[1].write_value, 7u);
  EXPECT_EQ(t.items[2].op, TraceOp::kInsert);
  EXPECT_EQ(t.items[2].key, 10u);
  EXPECT_EQ(t.items[2].write_value, 55u);
  EXPECT_GE(t.items[2].write_version, 1u);
  EXPECT_EQ(t.items[3].op, TraceOp::kDelete);
  EXPECT_EQ(t.items[3].read_version, 1u);
  EXPECT_EQ(t.items[3].write_version, 2u);
  EXPECT_EQ(t.items[3].read_value, 102u);
  // The unarmed injector counted the steps of that commit.
  EXPECT_EQ(crash.hits(CrashPoint::kAfterExecRead), 1u);
  EXPECT_EQ(crash.hits(CrashPoint::kInsertAfterSlotCheck), 1u);
  EXPECT_EQ(crash.hits(CrashPoint::kAfterValidation), 1u);
  EXPECT_EQ(crash.hits(CrashPoint::kAfterLogWrite), 2u);      // f+1 = 2 log nodes
  EXPECT_EQ(crash.hits(CrashPoint::kAfterCommitWrite), 6u);   // 3 written objects x 2 replicas
  EXPECT_EQ(crash.hits(CrashPoint::kBeforeUnlatch), 1u);
  EXPECT_EQ(crash.hits(CrashPoint::kAfterUnlatch), 3u);

  // An aborted transaction: it updated key 3, then the application aborted.
  o = (*cl)->transact([&](Txn& t) {
    if (auto u = t.update(kTable, 3); !u) return u.reason();
    return AbortReason::kUser;
  });
  EXPECT_FALSE(o.committed);
  ASSERT_EQ(rec.traces.size(), 2u);
  const TxnTrace a = rec.traces[1];
  EXPECT_FALSE(a.committed);
  EXPECT_EQ(a.reason, AbortReason::kUser);
  EXPECT_EQ(a.seq, t.seq + 1);
  ASSERT_EQ(a.items.size(), 1u);
  EXPECT_EQ(a.items[0].read_version, 1u);
  EXPECT_EQ(a.items[0].write_version, 0u);  // installed nothing
  EXPECT_EQ(crash.hits(CrashPoint::kAfterAbortRelease), 1u);

  // A read of a missing key aborts the transaction; the trace says absent.
  o = (*cl)->transact([&](Txn& t) { return t.read(kTable, 999).reason(); });
  EXPECT_EQ(o.reason, AbortReason::kNotFound);
  ASSERT_EQ(rec.traces.size(), 3u);
  ASSERT_EQ(rec.traces[2].items.size(), 1u);
  EXPECT_FALSE(rec.traces[2].items[0].present);

  (*cl)->engine().set_observer(nullptr);
  o = (*cl)->transact([&](Txn& t) { return t.read(kTable, 0).reason(); });
  EXPECT_TRUE(o.committed);
  EXPECT_EQ(rec.traces.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Backends, TraceTest, ::testing::Values(Backend::kShm, Backend::kTcp),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace pandora::testing
