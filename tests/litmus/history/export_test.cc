// Golden tests of the Elle (rw-register EDN) and dbcop (JSON) exports.
#include <gtest/gtest.h>

#include "litmus/history/export_common.h"
#include "litmus/history/export_dbcop.h"
#include "litmus/history/export_elle.h"
#include "tests/litmus/history/history_test_util.h"

namespace pandora::history {
namespace {

using testing::at;
using testing::HistoryBuilder;
using testing::ins;
using testing::kSlotA;
using testing::kSlotB;
using testing::moved_key_history;
using testing::rd;
using testing::upd;

// Coordinator 0 updates t0:k5 (v3 -> v4) and reads t1:k2 at v7; coordinator
// 1 aborts an update of t0:k6 (v1 -> v2); coordinator 0 then reads k5 v4
// and k6 v2 (the aborted version) and inserts k7. With an unknown initial
// state, k5 v3 and t1:k2 v7 are the initial state: the initial transaction
// writes them.
std::vector<TxnTrace> small_history() {
  HistoryBuilder h;
  h.txn(0, 1000, 2000).items = {upd(5, 3), rd(2, 7, 1)};
  h.txn(1, 1500, 2500, false).items = {upd(6, 1)};
  h.txn(0, 3000, 3500).items = {rd(5, 4), rd(6, 2), ins(7, 1)};
  return h.txns;
}

TEST(ExportElle, Golden) {
  auto text = elle_text({{}, small_history()});
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_EQ(*text,
            "{:type :invoke, :f :txn, :value [[:w 5 3] [:w 1099511627778 7]], :process 4294967296, :time 0, "
            ":index 0}\n"
            "{:type :ok, :f :txn, :value [[:w 5 3] [:w 1099511627778 7]], :process 4294967296, :time 0, :index 1}\n"
            "{:type :invoke, :f :txn, :value [[:r 5 nil] [:w 5 4] [:r 1099511627778 nil]], :process 65536, :time 0, "
            ":index 2}\n"
            "{:type :invoke, :f :txn, :value [[:r 6 nil] [:w 6 2]], :process 65537, :time 500, :index 3}\n"
            "{:type :ok, :f :txn, :value [[:r 5 3] [:w 5 4] [:r 1099511627778 7]], :process 65536, :time 1000, "
            ":index 4}\n"
            "{:type :fail, :f :txn, :value [[:r 6 nil] [:w 6 2]], :process 65537, :time 1500, :index 5}\n"
            "{:type :invoke, :f :txn, :value [[:r 5 nil] [:r 6 nil] [:w 7 1]], :process 65536, :time 2000, "
            ":index 6}\n"
            "{:type :ok, :f :txn, :value [[:r 5 4] [:r 6 2] [:w 7 1]], :process 65536, :time 2500, :index 7}\n");
}

TEST(ExportDbcop, Golden) {
  auto text = dbcop_text({{}, small_history()});
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_EQ(*text,
            "{\"params\":{\"id\":0,\"n_node\":3,\"n_variable\":4,\"n_transaction\":2,\"n_event\":3},"
            "\"info\":\"pandora history\",\"start\":\"1970-01-01T00:00:00.000001000+00:00\","
            "\"end\":\"1970-01-01T00:00:00.000003500+00:00\",\"data\":[\n"
            "[\n"
            "{\"events\":[{\"Write\":{\"variable\":5,\"version\":3}},{\"Write\":{\"variable\":1099511627778,"
            "\"version\":7}}],\"committed\":true}\n"
            "],\n"
            "[\n"
            "{\"events\":[{\"Read\":{\"variable\":5,\"version\":3}},{\"Write\":{\"variable\":5,\"version\":4}},"
            "{\"Read\":{\"variable\":1099511627778,\"version\":7}}],\"committed\":true},\n"
            "{\"events\":[{\"Read\":{\"variable\":5,\"version\":4}},{\"Read\":{\"variable\":6,\"version\":2}},"
            "{\"Write\":{\"variable\":7,\"version\":1}}],\"committed\":true}\n"
            "],\n"
            "[\n"
            "{\"events\":[{\"Write\":{\"variable\":6,\"version\":2}}],\"committed\":false}\n"
            "]\n"
            "]}\n");
}

TEST(ExportDbcop, EmptyHistory) {
  auto text = dbcop_text(History{});
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(*text,
            "{\"params\":{\"id\":0,\"n_node\":0,\"n_variable\":0,\"n_transaction\":0,\"n_event\":0},"
            "\"info\":\"pandora history\",\"start\":\"1970-01-01T00:00:00.000000000+00:00\","
            "\"end\":\"1970-01-01T00:00:00.000000000+00:00\",\"data\":[]}\n");
}

TEST(Export, AbortedWritesOfCommittedVersionsAreDropped) {
  HistoryBuilder h;
  h.txn(1, 100, 200, false).items = {upd(1, 0)};  // would-be v1, reused below
  h.txn(0, 300, 400).items = {upd(1, 0)};         // the real v1
  h.txn(2, 500, 600, false).items = {upd(1, 1)};  // v2: nobody committed it
  h.txn(3, 700, 800, false).items = {upd(1, 1)};  // v2 again: only the first aborted writer exports it
  auto text = dbcop_text({{}, h.txns});
  ASSERT_TRUE(text.is_ok());
  // Only transaction 3's write survives among the aborted ones.
  EXPECT_EQ(text->find("\"committed\":false"), text->rfind("\"committed\":false")) << *text;
  EXPECT_NE(text->find("{\"events\":[{\"Write\":{\"variable\":1,\"version\":2}}],\"committed\":false}"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("{\"events\":[{\"Read\":{\"variable\":1,\"version\":0}},"
                       "{\"Write\":{\"variable\":1,\"version\":1}}],\"committed\":true}"),
            std::string::npos)
      << *text;
  auto edn = elle_text({{}, h.txns});
  ASSERT_TRUE(edn.is_ok());
  // Transaction 1 (aborted) keeps only its nil read; 3 writes v2; 4 does not.
  EXPECT_NE(edn->find("{:type :fail, :f :txn, :value [[:r 1 nil]], :process 65537"), std::string::npos) << *edn;
  EXPECT_NE(edn->find("{:type :fail, :f :txn, :value [[:r 1 nil] [:w 1 2]], :process 65538"), std::string::npos)
      << *edn;
  EXPECT_NE(edn->find("{:type :fail, :f :txn, :value [[:r 1 nil]], :process 65539"), std::string::npos) << *edn;
}

TEST(Export, ReadsAfterOwnWritesAreInternal) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 0), rd(1, 0)};
  auto edn = elle_text({{}, h.txns});
  ASSERT_TRUE(edn.is_ok());
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:r 1 0] [:w 1 1]],"), std::string::npos) << *edn;
}

// No committed read is nil: the initial state is written by the initial
// transaction, and every other unrecorded version keeps its number, so the
// tools see it as the garbage read it is.
TEST(Export, GarbageReadsKeepTheirVersion) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 3)};  // reads v3, installs v4
  h.txn(0, 300, 400).items = {rd(1, 9), rd(1, 2)};
  auto edn = elle_text({{}, h.txns});
  ASSERT_TRUE(edn.is_ok());
  // Unknown initial state: v2, the lowest unrecorded version read, is it;
  // v3 and v9 are garbage.
  EXPECT_NE(edn->find("{:type :ok, :f :txn, :value [[:w 1 2]], :process 4294967296, :time 0, :index 1}"),
            std::string::npos)
      << *edn;
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:r 1 3] [:w 1 4]],"), std::string::npos) << *edn;
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:r 1 9] [:r 1 2]],"), std::string::npos) << *edn;
  // Loaded at v3: the initial transaction writes v3, and v2 is below it.
  auto loaded = elle_text({InitialState::loaded(3), h.txns});
  ASSERT_TRUE(loaded.is_ok());
  EXPECT_NE(loaded->find("{:type :ok, :f :txn, :value [[:w 1 3]], :process 4294967296"), std::string::npos) << *loaded;
  EXPECT_NE(loaded->find(":type :ok, :f :txn, :value [[:r 1 9] [:r 1 2]],"), std::string::npos) << *loaded;
  // Key 1 absent at the start: no initial transaction, every read is garbage.
  auto absent = dbcop_text({InitialState::loaded(1, {{0, 2, 2}}), h.txns});
  ASSERT_TRUE(absent.is_ok());
  EXPECT_EQ(absent->find("\"n_node\":1,"), absent->find("\"n_node\"")) << *absent;
  EXPECT_EQ(absent->find("null"), std::string::npos) << *absent;
}

TEST(Export, ObjectsOutsideTheEncodingAreRefused) {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {rd(uint64_t{1} << 40, 0)};
  auto edn = elle_text({{}, h.txns});
  ASSERT_FALSE(edn.is_ok());
  EXPECT_NE(edn.status().message().find("t0:k1099511627776 does not fit"), std::string::npos)
      << edn.status().message();
  EXPECT_FALSE(dbcop_text({{}, h.txns}).is_ok());

  auto packed = pack_object((1u << 23) - 1, (uint64_t{1} << 40) - 1);
  ASSERT_TRUE(packed.is_ok());
  EXPECT_EQ(*packed, (uint64_t{1} << 63) - 1);
  EXPECT_FALSE(pack_object(1u << 23, 0).is_ok());
}

TEST(Export, ElleOrdersTiesSoProcessesStayWellFormed) {
  HistoryBuilder h;
  // The next transaction of coordinator 0 starts in the nanosecond the
  // previous one ended; a zero-length one starts and ends at 200 too.
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(0, 200, 300).items = {rd(1, 1)};
  h.txn(1, 200, 200).items = {rd(1, 0)};
  auto edn = elle_text({{}, h.txns});
  ASSERT_TRUE(edn.is_ok());
  const size_t ok1 = edn->find(":type :ok, :f :txn, :value [[:r 1 0] [:w 1 1]]");
  const size_t inv2 = edn->find(":type :invoke, :f :txn, :value [[:r 1 nil]], :process 65536");
  const size_t inv3 = edn->find(":type :invoke, :f :txn, :value [[:r 1 nil]], :process 65537");
  const size_t ok3 = edn->find(":type :ok, :f :txn, :value [[:r 1 0]], :process 65537");
  ASSERT_NE(ok1, std::string::npos);
  EXPECT_LT(ok1, inv2);
  EXPECT_LT(inv2, inv3);
  EXPECT_LT(inv3, ok3);
}

// Key 1 at slot A is its incarnation 0 (object 1), at slot B incarnation 1:
// (1 << 8 | 0) << 40 | 1.
constexpr uint64_t kMovedObject = (uint64_t{1} << 48) | 1;

TEST(ExportSlots, EachIncarnationIsItsOwnObject) {
  auto edn = elle_text({{}, moved_key_history()});
  ASSERT_TRUE(edn.is_ok()) << edn.status().to_string();
  const std::string moved = std::to_string(kMovedObject);
  // Slot A keeps the old encoding; slot B's versions restart under their own object.
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:w 1 1]], :process 65536, :time 100"), std::string::npos)
      << *edn;
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:w " + moved + " 1]], :process 65537"), std::string::npos)
      << *edn;
  EXPECT_NE(edn->find(":value [[:r " + moved + " 1] [:w " + moved + " 2] [:r 2 5]]"), std::string::npos) << *edn;
  EXPECT_NE(edn->find(":value [[:r " + moved + " 2] [:r 2 5] [:w 2 6]]"), std::string::npos) << *edn;
  // Only T1 writes v1 of object 1 (in its invocation and completion): no
  // write of a version repeats on one object, as both tools require.
  size_t writes = 0;
  for (size_t pos = edn->find("[:w 1 1]"); pos != std::string::npos; pos = edn->find("[:w 1 1]", pos + 1)) ++writes;
  EXPECT_EQ(writes, 2u) << *edn;

  auto json = dbcop_text({{}, moved_key_history()});
  ASSERT_TRUE(json.is_ok()) << json.status().to_string();
  EXPECT_NE(json->find("\"n_variable\":3"), std::string::npos) << *json;
  EXPECT_NE(json->find("{\"Write\":{\"variable\":" + moved + ",\"version\":1}}"), std::string::npos) << *json;
  EXPECT_NE(json->find("{\"Write\":{\"variable\":1,\"version\":1}}"), std::string::npos) << *json;
}

TEST(ExportSlots, IncarnationsAreNumberedByFirstAccess) {
  HistoryBuilder h;
  // Slot B is used first, though its offset is higher.
  h.txn(0, 100, 200).items = {at(ins(1, 1), kSlotB)};
  h.txn(0, 300, 400).items = {at(ins(1, 5), kSlotA)};
  h.txn(0, 500, 600).items = {at(upd(1, 1), kSlotB)};  // back at B: still incarnation 0
  auto edn = elle_text({{}, h.txns});
  ASSERT_TRUE(edn.is_ok()) << edn.status().to_string();
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:w 1 1]]"), std::string::npos) << *edn;
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:w " + std::to_string(kMovedObject) + " 5]]"), std::string::npos)
      << *edn;
  EXPECT_NE(edn->find(":type :ok, :f :txn, :value [[:r 1 1] [:w 1 2]]"), std::string::npos) << *edn;
}

TEST(ExportSlots, EncodingBounds) {
  auto moved = pack_object(255, (uint64_t{1} << 40) - 1, (uint64_t{1} << 15) - 1);
  ASSERT_TRUE(moved.is_ok());
  EXPECT_EQ(*moved, (uint64_t{1} << 63) - 1);
  EXPECT_FALSE(pack_object(256, 0, 1).is_ok());
  EXPECT_FALSE(pack_object(0, 0, uint64_t{1} << 15).is_ok());
  auto error = pack_object(0, uint64_t{1} << 40, 1, kSlotA);
  ASSERT_FALSE(error.is_ok());
  EXPECT_NE(error.status().message().find("object t0:k1099511627776@4096 (incarnation 1 of the key)"),
            std::string::npos)
      << error.status().message();

  // A key with two incarnations forbids tables >= 2^8 anywhere (their
  // objects could collide); without one, large tables export as before.
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {at(ins(1, 1), kSlotA), at(ins(2, 1, 300), kSlotA + 64)};
  EXPECT_TRUE(elle_text({{}, h.txns}).is_ok());
  h.txn(0, 300, 400).items = {at(ins(1, 1), kSlotB)};
  auto refused = elle_text({{}, h.txns});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("table 300 >= 2^8"), std::string::npos) << refused.status().message();
  EXPECT_FALSE(dbcop_text({{}, h.txns}).is_ok());
}

TEST(ExportSlots, LargeHistoriesNumberIncarnationsAlike) {
  // Enough accesses that the index compacts its incarnation list on the
  // way: every key lives at slot A in the first half and at B in the second.
  constexpr uint64_t kKeys = 1000;
  constexpr uint64_t kTxns = 40000;
  HistoryBuilder h;
  for (uint64_t i = 0; i < kTxns; ++i) {
    const uint64_t slot = i < kTxns / 2 ? kSlotA : kSlotB;
    const uint64_t version = (i % (kTxns / 2)) / kKeys;  // each key's reads of its slot's counter
    h.txn(0, 100 + 10 * i, 105 + 10 * i).items = {at(rd(i % kKeys, version), slot + (i % kKeys) * 64),
                                                  at(rd((i + 1) % kKeys, version), slot + ((i + 1) % kKeys) * 64)};
  }
  auto json = dbcop_text({{}, h.txns});
  ASSERT_TRUE(json.is_ok()) << json.status().to_string();
  EXPECT_NE(json->find("\"n_variable\":2000,"), std::string::npos) << json->substr(0, 200);
  // Key 7's second half reads its incarnation 1.
  const std::string moved7 = std::to_string((uint64_t{1} << 48) | 7);
  EXPECT_NE(json->find("{\"Read\":{\"variable\":" + moved7 + ","), std::string::npos);
  EXPECT_EQ(json->find("{\"Read\":{\"variable\":" + std::to_string((uint64_t{2} << 48) | 7) + ","), std::string::npos);
}

TEST(Export, Rfc3339) {
  EXPECT_EQ(rfc3339_utc(1700000000123456789), "2023-11-14T22:13:20.123456789+00:00");
}

}  // namespace
}  // namespace pandora::history
