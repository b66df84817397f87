// The checker on hand-built histories: each Adya phenomenon detected and
// classified, clean histories (serial and concurrent) without anomalies,
// and real-time violations flagged only with real-time edges.
#include "litmus/history/checker.h"

#include <gtest/gtest.h>

#include "litmus/history/report.h"
#include "tests/litmus/history/history_test_util.h"

namespace pandora::history {
namespace {

using testing::at;
using testing::del;
using testing::HistoryBuilder;
using testing::ins;
using testing::kSlotA;
using testing::kSlotB;
using testing::moved_key_history;
using testing::rd;
using testing::upd;

CheckOptions serializability() {
  CheckOptions o;
  o.realtime = false;
  return o;
}

// The only anomaly of `r` (fails the test otherwise).
const Anomaly& only(const Report& r) {
  EXPECT_EQ(r.anomalies.size(), 1u) << format_report_text(r);
  static const Anomaly kNone;
  return r.anomalies.empty() ? kNone : r.anomalies[0];
}

CheckOptions partial_history() {
  CheckOptions o;
  o.complete = false;
  return o;
}

// `r` has exactly one anomaly, a G-single that needs real-time order.
void expect_realtime_gsingle(const Report& r) {
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kGSingle) << format_report_text(r);
  EXPECT_TRUE(a.realtime);
}

std::vector<EdgeType> step_types(const Anomaly& a) {
  std::vector<EdgeType> types;
  for (const CycleStep& s : a.steps) types.push_back(s.type);
  return types;
}

TEST(Checker, EmptyHistoryIsClean) {
  const Report r = check(History{});
  EXPECT_TRUE(r.clean());
  EXPECT_EQ(r.summary.transactions, 0u);
}

TEST(Checker, SerialHistoryIsClean) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(0, 300, 400).items = {rd(1, 1), upd(2, 0)};
  h.txn(1, 500, 600).items = {rd(1, 1), rd(2, 1)};
  h.txn(1, 700, 800).items = {upd(1, 1), upd(2, 1)};
  for (const CheckOptions& o : {CheckOptions{}, serializability()}) {
    const Report r = check(h.txns, o);
    EXPECT_TRUE(r.clean()) << format_report_text(r);
    EXPECT_EQ(r.summary.transactions, 4u);
    EXPECT_EQ(r.summary.committed, 4u);
    EXPECT_EQ(r.summary.objects, 2u);
  }
  const Report r = check(h.txns);
  // x0 and y0 are the initial state (stand-in writers I_x, I_y).
  // ww: I_x->x1->x2, I_y->y1->y2. wr: I_x to T1, I_y to T2, x1 to T2, T3, T4;
  // y1 to T3, T4. rw: T2 read x1 and T3 read x1, y1 -> T4 (the next
  // writer); T1's read of x0 and T2's of y0 are their own.
  EXPECT_EQ(r.summary.edges[static_cast<size_t>(EdgeType::kWW)], 4u);
  EXPECT_EQ(r.summary.edges[static_cast<size_t>(EdgeType::kWR)], 7u);
  EXPECT_EQ(r.summary.standins, 2u);
  EXPECT_EQ(r.summary.initial_standins, 2u);
  EXPECT_EQ(r.summary.edges[static_cast<size_t>(EdgeType::kRW)], 3u);
  EXPECT_GT(r.summary.edges[static_cast<size_t>(EdgeType::kRT)], 0u);
  EXPECT_EQ(r.summary.dependency_components, 0u);
}

TEST(Checker, ConcurrentSerializableHistoryIsClean) {
  HistoryBuilder h;
  // T2 overlaps T1 and reads the version before T1's: T2 < T1, allowed
  // because they overlap in real time.
  h.txn(0, 100, 300).items = {upd(1, 0)};
  h.txn(1, 150, 350).items = {rd(1, 0), upd(2, 0)};
  // T3 starts after both ended and sees both.
  h.txn(2, 400, 500).items = {rd(1, 1), rd(2, 1)};
  // Aborted transactions are not part of the graph.
  h.txn(3, 120, 130, false).items = {upd(1, 0)};
  const Report r = check(h.txns);
  EXPECT_TRUE(r.clean()) << format_report_text(r);
  EXPECT_EQ(r.summary.aborted, 1u);
}

TEST(Checker, UnrecordedVersionsGetStandInWriters) {
  HistoryBuilder h;
  // Versions 5 and 6 of key 1 were installed by nobody recorded. With an
  // unknown initial state v5, the lowest, is it; v6 is a garbage read in a
  // complete history and fine in a partial one. Either way both get a
  // stand-in writer, so the read of v5 precedes v6's writer (rw) and v6's
  // writer precedes the recorded writer of v7 (ww).
  h.txn(0, 100, 200).items = {rd(1, 5)};
  h.txn(0, 300, 400).items = {upd(1, 6)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kGarbageRead);
  EXPECT_EQ(a.version, 6u);
  EXPECT_NE(a.detail.find("its initial state is v5"), std::string::npos) << a.detail;
  const Report p = check(h.txns, partial_history());
  EXPECT_TRUE(p.clean()) << format_report_text(p);
  EXPECT_EQ(p.summary.standins, 2u);
  EXPECT_EQ(p.summary.initial_standins, 1u);
  EXPECT_EQ(p.summary.edges[static_cast<size_t>(EdgeType::kRW)], 1u);
  EXPECT_EQ(p.summary.edges[static_cast<size_t>(EdgeType::kWW)], 2u);
  EXPECT_EQ(p.summary.edges[static_cast<size_t>(EdgeType::kWR)], 2u);
}

TEST(Checker, G0WriteCycle) {
  HistoryBuilder h;
  // Blind writes: x1 by T1 then x2 by T2, but y1 by T2 then y2 by T1.
  h.txn(0, 100, 300).items = {ins(1, 1), ins(2, 2)};
  h.txn(1, 150, 350).items = {ins(1, 2), ins(2, 1)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kG0);
  EXPECT_FALSE(a.realtime);
  ASSERT_EQ(a.txns.size(), 2u);
  EXPECT_EQ(a.txns[0].index, 0u);  // cycles start at the lowest history index
  EXPECT_EQ(a.txns[1].index, 1u);
  EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kWW, EdgeType::kWW}));
  EXPECT_EQ(a.steps[0].key, 1u);
  EXPECT_EQ(a.steps[0].from_version, 1u);
  EXPECT_EQ(a.steps[0].to_version, 2u);
  EXPECT_EQ(r.count(AnomalyKind::kG0), 1u);
  const std::string text = format_report_text(r);
  EXPECT_NE(text.find("G0: write cycle over 2 transactions"), std::string::npos) << text;
  EXPECT_NE(text.find("T1 = 1.0#1 (history #0"), std::string::npos) << text;
  EXPECT_NE(text.find("T1 -ww-> T2: T1 installed t0:k1 v1, T2 the next recorded version v2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("T2 -ww-> T1: T2 installed t0:k2 v1, T1 the next recorded version v2"), std::string::npos)
      << text;
}

TEST(Checker, G1aAbortedRead) {
  HistoryBuilder h;
  h.txn(0, 100, 200, false).items = {upd(1, 0)};  // installed nothing: aborted
  h.txn(1, 300, 400).items = {rd(1, 1)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kG1a);
  ASSERT_EQ(a.txns.size(), 2u);
  EXPECT_FALSE(a.txns[0].committed);  // the aborted writer first
  EXPECT_TRUE(a.txns[1].committed);
  EXPECT_EQ(a.key, 1u);
  EXPECT_EQ(a.version, 1u);
  EXPECT_NE(format_anomaly(a).find("committed T2 read t0:k1 v1, which only aborted T1 installed"), std::string::npos)
      << format_anomaly(a);
}

TEST(Checker, AbortedVersionReusedByACommittedWriterIsNotG1a) {
  HistoryBuilder h;
  h.txn(0, 100, 200, false).items = {upd(1, 0)};
  h.txn(1, 300, 400).items = {upd(1, 0)};  // installs v1 for real
  h.txn(2, 500, 600).items = {rd(1, 1)};
  const Report r = check(h.txns);
  EXPECT_TRUE(r.clean()) << format_report_text(r);
}

TEST(Checker, G1cCircularInformationFlow) {
  HistoryBuilder h;
  // Each reads what the other installed.
  h.txn(0, 100, 300).items = {upd(1, 0), rd(2, 1)};
  h.txn(1, 150, 350).items = {upd(2, 0), rd(1, 1)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kG1c);
  EXPECT_FALSE(a.realtime);
  EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kWR, EdgeType::kWR}));
  EXPECT_NE(format_anomaly(a).find("T1 -wr-> T2: T2 read t0:k1 v1, installed by T1"), std::string::npos)
      << format_anomaly(a);
}

TEST(Checker, G2WriteSkew) {
  HistoryBuilder h;
  // Litmus-2 shape: both read x and y at v0, each updates a different one.
  h.txn(0, 100, 300).items = {rd(1, 0), rd(2, 0), upd(1, 0)};
  h.txn(1, 150, 350).items = {rd(1, 0), rd(2, 0), upd(2, 0)};
  for (const CheckOptions& o : {CheckOptions{}, serializability()}) {
    const Report r = check(h.txns, o);
    const Anomaly& a = only(r);
    EXPECT_EQ(a.kind, AnomalyKind::kG2);
    EXPECT_FALSE(a.realtime);
    EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kRW, EdgeType::kRW}));
    EXPECT_EQ(r.count(AnomalyKind::kG2), 1u);
    EXPECT_NE(format_anomaly(a).find("T1 -rw-> T2: T1 read t0:k2 v0, T2 installed the next recorded version v1"),
              std::string::npos)
        << format_anomaly(a);
  }
}

TEST(Checker, GSingleReadSkew) {
  HistoryBuilder h;
  // T1 reads x before T2 and y after it.
  h.txn(0, 100, 400).items = {rd(1, 0), rd(2, 1)};
  h.txn(1, 150, 200).items = {upd(1, 0), upd(2, 0)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kGSingle);
  EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kRW, EdgeType::kWR}));
}

TEST(Checker, LostUpdate) {
  HistoryBuilder h;
  // Both read v5 and both installed v6.
  h.txn(0, 100, 300).items = {upd(1, 5)};
  h.txn(1, 150, 350).items = {upd(1, 5)};
  const Report r = check(h.txns);
  EXPECT_EQ(r.count(AnomalyKind::kLostUpdate), 1u) << format_report_text(r);
  const Anomaly& lost = r.anomalies[0];
  EXPECT_EQ(lost.kind, AnomalyKind::kLostUpdate);
  EXPECT_EQ(lost.txns.size(), 2u);
  EXPECT_EQ(lost.version, 6u);
  // Each read the version the other overwrote: a G2 cycle as well.
  EXPECT_EQ(r.count(AnomalyKind::kG2), 1u);
  EXPECT_EQ(r.anomalies.size(), 2u);
}

TEST(Checker, RealTimeViolationOnlyWithRealTimeEdges) {
  HistoryBuilder h;
  // T1 commits x1 at 200; T2 starts at 300 and still reads x0: T2 must
  // serialize before T1 although it started after T1 ended.
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(1, 300, 400).items = {rd(1, 0)};
  EXPECT_TRUE(check(h.txns, serializability()).clean());

  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_TRUE(a.realtime);
  EXPECT_EQ(a.kind, AnomalyKind::kGSingle);
  EXPECT_EQ(anomaly_label(a), "G-single-realtime");
  EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kRT, EdgeType::kRW}));
  EXPECT_EQ(r.summary.realtime_components, 1u);
  const std::string text = format_anomaly(a);
  EXPECT_NE(text.find("strict-serializability violation (real-time)"), std::string::npos) << text;
  EXPECT_NE(text.find("T1 -rt-> T2: T1 ended at 200 ns, before T2 began at 300 ns"), std::string::npos) << text;
}

TEST(Checker, RealTimeThroughUnrelatedTransactionsIsOneStep) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 0)};
  // Unrelated transactions in between put time points on the chain.
  h.txn(2, 210, 220).items = {upd(7, 0)};
  h.txn(3, 230, 240).items = {upd(8, 0)};
  h.txn(1, 300, 400).items = {rd(1, 0)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  ASSERT_EQ(a.txns.size(), 2u);
  EXPECT_EQ(a.txns[0].index, 0u);
  EXPECT_EQ(a.txns[1].index, 3u);
  EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kRT, EdgeType::kRW}));
}

TEST(Checker, TouchingTransactionsAreNotRealTimeOrdered) {
  HistoryBuilder h;
  // T2 begins in the nanosecond T1 ended: concurrent, so reading x0 is fine.
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(1, 200, 400).items = {rd(1, 0)};
  EXPECT_TRUE(check(h.txns).clean());
}

TEST(Checker, GarbageRead) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 1)};  // reads the initial v1, installs v2
  h.txn(1, 300, 400).items = {rd(1, 9)};   // nobody installed v9
  h.txn(2, 500, 600).items = {rd(1, 1)};   // the initial state again: stale, but serializable
  CheckOptions no_rt = serializability();
  Report r = check(h.txns, no_rt);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kGarbageRead);
  EXPECT_EQ(a.version, 9u);
  ASSERT_EQ(a.txns.size(), 1u);
  EXPECT_EQ(a.txns[0].index, 1u);

  no_rt.complete = false;
  EXPECT_TRUE(check(h.txns, no_rt).clean());
}

TEST(Checker, InternalInconsistency) {
  HistoryBuilder h;
  TraceItem bad = upd(1, 3);
  bad.write_version = 7;
  h.txn(0, 100, 200).items = {bad};
  TraceItem zero = ins(2, 0);
  h.txn(0, 300, 400).items = {zero};
  const Report r = check(h.txns);
  EXPECT_EQ(r.count(AnomalyKind::kInternal), 2u) << format_report_text(r);
}

TEST(Checker, OneCyclePerComponent) {
  HistoryBuilder h;
  // Two independent write skews.
  h.txn(0, 100, 300).items = {rd(1, 0), rd(2, 0), upd(1, 0)};
  h.txn(1, 150, 350).items = {rd(1, 0), rd(2, 0), upd(2, 0)};
  h.txn(2, 100, 300).items = {rd(3, 0), rd(4, 0), upd(3, 0)};
  h.txn(3, 150, 350).items = {rd(3, 0), rd(4, 0), upd(4, 0)};
  const Report r = check(h.txns);
  EXPECT_EQ(r.count(AnomalyKind::kG2), 2u) << format_report_text(r);
  EXPECT_EQ(r.anomalies.size(), 2u);
  EXPECT_EQ(r.summary.dependency_components, 2u);
}

TEST(Checker, WeakestCycleIsReported) {
  HistoryBuilder h;
  // T1 and T2 form a G1c (wr both ways) and also rw edges: G1c wins.
  h.txn(0, 100, 300).items = {rd(3, 0), upd(1, 0), rd(2, 1)};
  h.txn(1, 150, 350).items = {upd(2, 0), rd(1, 1), upd(3, 0)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kG1c);
}

TEST(Checker, DeleteAndInsertAreWrites) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {ins(1, 1)};
  h.txn(0, 300, 400).items = {rd(1, 1), del(1, 2)};
  h.txn(0, 500, 600).items = {rd(1, 2)};
  const Report r = check(h.txns);
  EXPECT_TRUE(r.clean()) << format_report_text(r);
  EXPECT_EQ(r.summary.edges[static_cast<size_t>(EdgeType::kWW)], 1u);
}

TEST(Checker, StreamingMatchesBatch) {
  HistoryBuilder h;
  h.txn(0, 100, 300).items = {rd(1, 0), rd(2, 0), upd(1, 0)};
  h.txn(1, 150, 350).items = {rd(1, 0), rd(2, 0), upd(2, 0)};
  Checker c;
  for (const TxnTrace& t : h.txns) c.add(t);
  const Report streamed = c.finish();
  EXPECT_EQ(format_report_json(streamed), format_report_json(check(h.txns)));
}

TEST(Checker, JsonReport) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(1, 300, 400).items = {rd(1, 0)};
  const std::string json = format_report_json(check(h.txns, serializability()));
  EXPECT_EQ(json,
            "{\"model\":\"serializability\",\"summary\":{\"transactions\":2,\"committed\":2,\"aborted\":0,"
            "\"objects\":1,\"accesses\":3,\"standins\":1,\"initial_standins\":1,"
            "\"edges\":{\"ww\":1,\"wr\":2,\"rw\":1,\"rt\":0},"
            "\"dependency_components\":0,\"realtime_components\":0},\"counts\":{\"G0\":0,\"G1a\":0,\"G1c\":0,"
            "\"G-single\":0,\"G2\":0,\"lost-update\":0,\"garbage-read\":0,\"internal\":0},\"anomalies\":[]}\n");
  const std::string strict = format_report_json(check(h.txns));
  EXPECT_NE(strict.find("\"label\":\"G-single-realtime\""), std::string::npos) << strict;
  EXPECT_NE(strict.find("\"steps\":[{\"from\":0,\"to\":1,\"type\":\"rt\"},{\"from\":1,\"to\":0,\"type\":\"rw\","
                        "\"table\":0,\"key\":1,\"from_version\":0,\"to_version\":1}]"),
            std::string::npos)
      << strict;
}

// Incarnations (table, key, slot): a key deleted and re-inserted into
// another slot restarts its version numbers there.

TEST(CheckerSlots, KeyReinsertedAtAnotherSlotIsNoAnomaly) {
  const std::vector<TxnTrace> h = moved_key_history();
  for (const CheckOptions& o : {CheckOptions{}, serializability()}) {
    const Report r = check(h, o);
    EXPECT_TRUE(r.clean()) << format_report_text(r);
    EXPECT_EQ(r.summary.committed, 8u);
    // Key 1 at slot A, key 1 at slot B, key 2.
    EXPECT_EQ(r.summary.objects, 3u);
    EXPECT_EQ(r.summary.dependency_components, 0u);
  }
  // ww: k1@A v1->v2->v3, k1@B v1->v2->v3, k2 v4 (initial: a stand-in)
  // ->v5->v6; none across slots.
  EXPECT_EQ(check(h).summary.edges[static_cast<size_t>(EdgeType::kWW)], 6u);
}

TEST(CheckerSlots, SlotZeroIsOneIncarnationAsBefore) {
  // The same history without slots (an old file) mixes the two
  // incarnations of key 1: this is the misreading the slot prevents.
  std::vector<TxnTrace> h = moved_key_history();
  for (TxnTrace& t : h) {
    for (TraceItem& it : t.items) it.slot = 0;
  }
  const Report r = check(h);
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(r.count(AnomalyKind::kLostUpdate), 3u) << format_report_text(r);
  EXPECT_EQ(r.summary.objects, 2u);
}

TEST(CheckerSlots, G0WithinOneIncarnationIsFound) {
  HistoryBuilder h;
  // Key 1's first life, at slot B, ends (delete) before the write cycle on
  // its second, at slot A (versions 1 and 2 again), and key 2.
  h.txn(2, 10, 20).items = {at(ins(1, 1), kSlotB)};
  h.txn(2, 30, 40).items = {at(del(1, 2), kSlotB)};
  h.txn(0, 100, 300).items = {at(ins(1, 1), kSlotA), at(ins(2, 2), kSlotB + 64)};
  h.txn(1, 150, 350).items = {at(ins(1, 2), kSlotA), at(ins(2, 1), kSlotB + 64)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kG0);
  EXPECT_FALSE(a.realtime);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].key, 1u);
  EXPECT_EQ(a.steps[0].slot, kSlotA);
  EXPECT_EQ(a.steps[1].slot, kSlotB + 64);
  const std::string text = format_anomaly(a);
  EXPECT_NE(text.find("T1 -ww-> T2: T1 installed t0:k1@4096 v1, T2 the next recorded version v2"), std::string::npos)
      << text;
  const std::string json = format_report_json(r);
  EXPECT_NE(json.find("\"type\":\"ww\",\"table\":0,\"key\":1,\"slot\":4096,\"from_version\":1"), std::string::npos)
      << json;
}

TEST(CheckerSlots, G1cWithinOneIncarnationIsFound) {
  HistoryBuilder h;
  // Key 1 first lived at slot B, up to v3; now it is at slot A from v1.
  h.txn(2, 10, 20).items = {at(upd(1, 2), kSlotB)};
  h.txn(0, 100, 300).items = {at(upd(1, 0), kSlotA), at(rd(2, 1), kSlotB + 64)};
  h.txn(1, 150, 350).items = {at(upd(2, 0), kSlotB + 64), at(rd(1, 1), kSlotA)};
  const Report r = check(h.txns);
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kG1c);
  EXPECT_EQ(step_types(a), (std::vector<EdgeType>{EdgeType::kWR, EdgeType::kWR}));
  EXPECT_NE(format_anomaly(a).find("T1 -wr-> T2: T2 read t0:k1@4096 v1, installed by T1"), std::string::npos)
      << format_anomaly(a);
}

TEST(CheckerSlots, NonCycleAnomaliesNameTheSlot) {
  HistoryBuilder h;
  h.txn(0, 100, 300).items = {at(upd(1, 5), kSlotA)};
  h.txn(1, 150, 350).items = {at(upd(1, 5), kSlotA)};
  // The same version at another slot is another incarnation: no conflict.
  h.txn(2, 150, 350).items = {at(upd(1, 5), kSlotB)};
  const Report r = check(h.txns);
  ASSERT_EQ(r.count(AnomalyKind::kLostUpdate), 1u) << format_report_text(r);
  const Anomaly& lost = r.anomalies[0];
  EXPECT_EQ(lost.slot, kSlotA);
  EXPECT_EQ(lost.txns.size(), 2u);
  EXPECT_NE(lost.detail.find("installed t0:k1@4096 v6"), std::string::npos) << lost.detail;
  EXPECT_NE(format_report_json(r).find("\"table\":0,\"key\":1,\"slot\":4096,\"version\":6"), std::string::npos)
      << format_report_json(r);
  EXPECT_EQ(object_name(3, 9), "t3:k9");
  EXPECT_EQ(object_name(3, 9, 64), "t3:k9@64");
}

TEST(CheckerSlots, GarbageReadIsPerIncarnation) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {at(upd(1, 6), kSlotA)};  // k1@A v7
  // No recorded transaction wrote key 1 at slot B: v9 there is its initial
  // state, not garbage above k1@A's v7.
  h.txn(1, 300, 400).items = {at(rd(1, 9), kSlotB)};
  EXPECT_TRUE(check(h.txns, serializability()).clean()) << format_report_text(check(h.txns, serializability()));
  // Above a committed version of the same incarnation it is garbage.
  h.txn(1, 500, 600).items = {at(rd(1, 9), kSlotA)};
  const Report r = check(h.txns, serializability());
  const Anomaly& a = only(r);
  EXPECT_EQ(a.kind, AnomalyKind::kGarbageRead);
  EXPECT_EQ(a.slot, kSlotA);
}

// Hole 1: versions no recorded transaction wrote (a partial history: the
// writer was rolled forward by recovery) must still be ordered by their
// numbers. T2 reads v4, T3 starts after T2 ended and reads v3: the store
// went backwards, as a recovery bug that restores an old version would
// make it. Only a stand-in writer per unrecorded version, ordered by
// version, closes the cycle T2 -rt-> T3 -rw-> writer(v4) -wr-> T2.
TEST(CheckerStandIns, PartialHistoryGoingBackwardsIsACycle) {
  HistoryBuilder h;
  h.txn(0, 1000, 2000).items = {upd(1, 1)};  // v1 -> v2, recorded
  h.txn(1, 3000, 4000).items = {rd(1, 4)};   // v4: unrecorded writer
  h.txn(2, 5000, 6000).items = {rd(1, 3)};   // later, v3: unrecorded writer
  h.txn(0, 7000, 8000).items = {upd(1, 4)};  // v4 -> v5, recorded
  expect_realtime_gsingle(check(h.txns, partial_history()));
  // Serializable without real time: the reads can be ordered v3 before v4.
  CheckOptions partial = partial_history();
  partial.realtime = false;
  EXPECT_TRUE(check(h.txns, partial).clean()) << format_report_text(check(h.txns, partial));
}

// Hole 2: two different versions below every recorded write cannot both be
// the initial state. T1 reads v2, a later T2 reads v1, and the only recorded
// write is v2 -> v3: complete, it is a garbage read of v2 (v1 is the
// initial state) and a real-time cycle through v2's stand-in writer.
TEST(CheckerStandIns, TwoPreRunVersionsAreNotBothTheInitialState) {
  HistoryBuilder h;
  h.txn(0, 1000, 2000).items = {rd(1, 2)};
  h.txn(1, 3000, 4000).items = {rd(1, 1)};
  h.txn(0, 5000, 6000).items = {upd(1, 2)};
  const Report r = check(h.txns);
  EXPECT_EQ(r.count(AnomalyKind::kGarbageRead), 1u) << format_report_text(r);
  EXPECT_EQ(r.count(AnomalyKind::kGSingle), 1u) << format_report_text(r);
  expect_realtime_gsingle(check(h.txns, partial_history()));
}

// A header that knows the initial state: key 1 loaded at v1, key 2 absent.
TEST(CheckerStandIns, KnownInitialState) {
  const InitialState loaded = InitialState::loaded(1, {{0, 1, 1}});
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {rd(1, 1)};  // the loaded version: its stand-in is the initial state
  h.txn(0, 300, 400).items = {upd(1, 1)};
  Report r = check(h.txns, {}, loaded);
  EXPECT_TRUE(r.clean()) << format_report_text(r);
  EXPECT_EQ(r.summary.initial_standins, 1u);

  // Below the loaded version: garbage in every mode (no writer can install it).
  h.txn(1, 500, 600).items = {rd(1, 0)};
  const CheckOptions partial = partial_history();
  r = check(h.txns, partial, loaded);
  const Anomaly& below = only(r);
  EXPECT_EQ(below.kind, AnomalyKind::kGarbageRead);
  EXPECT_EQ(below.version, 0u);
  EXPECT_NE(below.detail.find("below v1, the version it was loaded with"), std::string::npos) << below.detail;
  h.txns.pop_back();

  // Key 2 was absent: an unrecorded version of it is garbage in a complete
  // history even below its lowest recorded write (an unknown initial state
  // would take it for the initial one).
  h.txn(1, 500, 600).items = {rd(2, 3)};
  h.txn(1, 700, 800).items = {upd(2, 3)};
  EXPECT_TRUE(check(h.txns).clean()) << format_report_text(check(h.txns));
  r = check(h.txns, {}, loaded);
  const Anomaly& absent = only(r);
  EXPECT_EQ(absent.kind, AnomalyKind::kGarbageRead);
  EXPECT_EQ(absent.key, 2u);
  EXPECT_NE(absent.detail.find("the key was absent when the run began"), std::string::npos) << absent.detail;
  EXPECT_TRUE(check(h.txns, partial, loaded).clean());

  // Reads of an absent key read no version: never garbage.
  TraceItem none = rd(3, 0);
  none.present = false;
  h.txn(2, 900, 1000).items = {none};
  EXPECT_EQ(check(h.txns, {}, loaded).anomalies.size(), 1u);
}

}  // namespace
}  // namespace pandora::history
