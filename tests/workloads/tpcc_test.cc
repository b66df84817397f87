// TPC-C: the random-input rules and key layout (units), then the workload
// against real daemons: every transaction's effect, the 1% rollback,
// Delivery on an empty district, a run in forked processes that must pass
// the consistency conditions, and damage the audit must report.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include "compute/blocking_client.h"
#include "compute/loader.h"
#include "compute/placement.h"
#include "compute/table_geometry.h"
#include "tests/workloads/workload_test_support.h"
#include "workloads/bench/registry.h"
#include "workloads/tpcc/tpcc.h"
#include "workloads/tpcc/tpcc_random.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::testing {
namespace {

using workloads::Audit;
using workloads::CheckInput;
using workloads::Rng;
using workloads::TpccOptions;
using workloads::TpccWorkload;
using workloads::TxnOutcome;
namespace tpcc = workloads::tpcc;

// ---- units -------------------------------------------------------------------

TEST(TpccRandom, LastNamesFollowTheSyllableRule) {
  EXPECT_EQ(tpcc::last_name(0), "BARBARBAR");
  EXPECT_EQ(tpcc::last_name(371), "PRICALLYOUGHT");
  EXPECT_EQ(tpcc::last_name(999), "EINGEINGEING");
  std::set<std::string> names;
  for (uint32_t n = 0; n < 1000; ++n) names.insert(tpcc::last_name(n));
  EXPECT_EQ(names.size(), 1000u);
}

TEST(TpccRandom, NURandStaysInRangeAndIsSkewed) {
  Rng rng(5);
  std::map<uint64_t, int> hits;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t v = tpcc::nurand(rng, 255, 0, 999, 157);
    ASSERT_LE(v, 999u);
    ++hits[v];
  }
  int most = 0;
  for (auto& [v, n] : hits) most = std::max(most, n);
  // Uniform would give 200 per value; (random(0,255) | random(0,999))
  // favours values with many low bits set.
  EXPECT_GT(most, 1000);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t c = tpcc::nurand(rng, 1023, 1, 30, 259);
    ASSERT_GE(c, 1u);
    ASSERT_LE(c, 30u);
  }
  // Clause 2.1.6.1: the run-time C of C_LAST differs from the load's by 65..119, not 96 or 112.
  EXPECT_TRUE(tpcc::valid_last_name_delta(tpcc::kLoadConstants.last_name, tpcc::kRunConstants.last_name));
  EXPECT_FALSE(tpcc::valid_last_name_delta(100, 196));
  EXPECT_FALSE(tpcc::valid_last_name_delta(100, 164));
}

TEST(TpccKeys, PackedFieldsDoNotOverlap) {
  const uint64_t k = tpcc::order_line_key(tpcc::kMaxWarehouse, 10, tpcc::kMaxOrder, 15);
  EXPECT_EQ(k & 0xf, 15u);
  EXPECT_EQ((k >> 4) & 0xffffffffull, tpcc::kMaxOrder);
  EXPECT_EQ((k >> 36) & 0xf, 10u);
  EXPECT_EQ(k >> 40, tpcc::kMaxWarehouse);
  const uint64_t h = tpcc::history_key(tpcc::kMaxWarehouse, 10, tpcc::kMaxCustomer, tpcc::kMaxHistorySeq);
  EXPECT_EQ(h & 0xffff, tpcc::kMaxHistorySeq);
  EXPECT_EQ((h >> 16) & 0xfff, tpcc::kMaxCustomer);
  EXPECT_EQ(h >> 28, (tpcc::kMaxWarehouse << 4) | 10);
  EXPECT_NE(tpcc::order_key(1, 2, 3), tpcc::order_key(2, 1, 3));
  EXPECT_NE(tpcc::order_line_key(1, 1, 1, 2), tpcc::order_line_key(1, 1, 2, 1));
}

// Static tables never overflow a probe path: their keys fill every bucket
// at most half way, whatever the slot size.
TEST(TpccKeys, StaticRowsFillNoBucketBeyondHalf) {
  TpccOptions o;
  o.warehouses = 3;
  o.items = 1000;
  o.customers_per_district = 1200;  // > 1000: NURand last names
  o.max_orders_per_district = 2000;
  auto w = TpccWorkload::create(o);
  ASSERT_TRUE(w);
  const auto specs = (*w)->tables();
  auto dir = plan_table_directory(specs, 1, 64, 1, 65536, 16, 64 * 1024, uint64_t{1} << 40);
  ASSERT_TRUE(dir) << dir.status().to_string();
  const tpcc::StaticKeys& k = (*w)->keys();
  std::map<uint32_t, std::vector<uint64_t>> keys;
  for (uint64_t wh = 1; wh <= o.warehouses; ++wh) {
    keys[tpcc::kWarehouse].push_back(k.warehouse(wh));
    for (uint64_t i = 1; i <= o.items; ++i) keys[tpcc::kStock].push_back(k.stock(wh, i));
    for (uint64_t d = 1; d <= 10; ++d) {
      keys[tpcc::kDistrict].push_back(k.district(wh, d));
      keys[tpcc::kDeliveryCursor].push_back(k.delivery_cursor(wh, d));
      for (uint64_t n = 0; n < 1000; ++n) keys[tpcc::kCustomerName].push_back(k.customer_name(wh, d, n));
      for (uint64_t c = 1; c <= o.customers_per_district; ++c) {
        keys[tpcc::kCustomer].push_back(k.customer(wh, d, c));
        keys[tpcc::kLastOrder].push_back(k.last_order(wh, d, c));
      }
    }
  }
  for (uint64_t i = 1; i <= o.items; ++i) keys[tpcc::kItem].push_back(k.item(i));
  for (auto& [table, list] : keys) {
    const TableEntry* t = dir->find(table);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(std::set<uint64_t>(list.begin(), list.end()).size(), list.size()) << "table " << table;
    std::map<uint64_t, uint32_t> per_bucket;
    for (uint64_t key : list) ++per_bucket[home_bucket(*t, key)];
    for (auto& [b, n] : per_bucket) {
      ASSERT_LE(n, (t->slots_per_bucket + 1) / 2) << "table " << table << " bucket " << b;
    }
  }
}

TEST(TpccOptionsCheck, BadValuesAreRefusedNamingTheFlag) {
  auto refused = [](TpccOptions o, const char* flag) {
    auto w = TpccWorkload::create(o);
    ASSERT_FALSE(w);
    EXPECT_NE(w.status().message().find(flag), std::string::npos) << w.status().message();
  };
  TpccOptions o;
  o.warehouses = 0;
  refused(o, "--warehouses");
  o = {};
  o.customers_per_district = 5;
  refused(o, "--tpcc-customers-per-district");
  o = {};
  o.max_orders_per_district = 3000;
  refused(o, "--tpcc-max-orders-per-district");
  o = {};
  o.items = tpcc::kMaxItem;
  refused(o, "--tpcc-items");
  EXPECT_TRUE(TpccWorkload::create(TpccOptions{}));
}

// Delivery's record needs 64 KiB lanes: the workload says so, and the
// driver compares it with the loaded tables' lanes (bench_app.cc).
TEST(TpccOptionsCheck, DeclaresTheLanesDeliveryNeedsAndAttachesToItsTables) {
  auto w = TpccWorkload::create(TpccOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)->min_log_lane_bytes(), 65536u);
  const auto specs = (*w)->tables();
  auto dir = plan_table_directory(specs, 1, 64, 1, 65536, 16, 64 * 1024, uint64_t{1} << 40);
  ASSERT_TRUE(dir);
  EXPECT_TRUE((*w)->attach(table_specs(*dir)));
  // Another workload's size of the same table is refused, naming it.
  auto other_specs = specs;
  other_specs[0].expected_rows += 1;
  auto other = plan_table_directory(other_specs, 1, 64, 1, 65536, 16, 64 * 1024, uint64_t{1} << 40);
  ASSERT_TRUE(other);
  Status s = (*w)->attach(table_specs(*other));
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find(specs[0].name), std::string::npos) << s.message();
}

// ---- against daemons ----------------------------------------------------------

TpccOptions small_options() {
  TpccOptions o;
  o.warehouses = 2;
  o.items = 1000;
  o.customers_per_district = 30;  // 30 orders per district, the last 9 undelivered
  o.max_orders_per_district = 400;
  return o;
}

class TpccOnDaemons : public ::testing::TestWithParam<ProtocolMode> {
 protected:
  void SetUp() override { start(small_options()); }

  void start(const TpccOptions& o) {
    d_ = std::make_unique<MemdCluster>(2, "96M", "16M");
    ASSERT_TRUE(d_->ok()) << d_->error();
    cfg_ = d_->config(1, Backend::kShm, 2, GetParam());
    cfg_.lane_bytes = TpccWorkload::kMinLaneBytes;
    auto w = TpccWorkload::create(o);
    ASSERT_TRUE(w) << w.status().to_string();
    w_ = std::move(*w);
    auto cluster = Cluster::connect(cfg_, quiet_logger());
    ASSERT_TRUE(cluster) << cluster.status().to_string();
    cluster_ = std::move(*cluster);
    ASSERT_TRUE(create_tables(*cluster_, w_->tables()));
    TableLoader loader(*cluster_);
    Status s = w_->load(loader);
    ASSERT_TRUE(s) << s.to_string();
    s = loader.finish();
    ASSERT_TRUE(s) << s.to_string();
    ASSERT_TRUE(w_->attach(table_specs(cluster_->directory())));
    auto client = BlockingClient::create(*cluster_, 0);
    ASSERT_TRUE(client);
    client_ = std::move(*client);
  }

  TxnOutcome run(const std::function<TxnOutcome(Txn&)>& body) {
    TxnOutcome out;
    client_->run([&](Txn& t) { out = body(t); });
    return out;
  }
  Audit audit() {
    Result<Audit> a = w_->audit(*client_);
    EXPECT_TRUE(a) << a.status().to_string();
    return a ? *a : Audit{};
  }
  static std::string problems(const Audit& a) {
    std::string s;
    for (const std::string& p : a.problems) s += "\n  " + p;
    return s;
  }
  // A field of one row, read through a transaction.
  int64_t field(uint32_t table, uint64_t key, tpcc::Int f) {
    int64_t v = -1;
    const CommitOutcome o = client_->transact([&](Txn& t) {
      auto r = t.read(table, key);
      if (!r) return r.reason();
      v = tpcc::get(*r, f);
      return AbortReason::kNone;
    });
    EXPECT_TRUE(o.committed) << abort_reason_name(o.reason) << " " << o.detail.to_string() << " tables "
                             << cluster_->directory().tables.size();
    return v;
  }
  // Adds `delta` to field `f` of one row, in a transaction of its own.
  void add_to(uint32_t table, uint64_t key, tpcc::Int f, int64_t delta) {
    const CommitOutcome o = client_->transact([&](Txn& t) {
      auto r = t.update(table, key);
      if (!r) return r.reason();
      tpcc::put(*r, f, tpcc::get(*r, f) + delta);
      return AbortReason::kNone;
    });
    ASSERT_TRUE(o.committed) << abort_reason_name(o.reason) << " " << o.detail.to_string();
  }
  // A copy of one row, to insert again after removing it.
  std::vector<uint8_t> row(uint32_t table, uint64_t key) {
    std::vector<uint8_t> v;
    const CommitOutcome o = client_->transact([&](Txn& t) {
      auto r = t.read(table, key);
      if (!r) return r.reason();
      v.assign((*r).begin(), (*r).end());
      return AbortReason::kNone;
    });
    EXPECT_TRUE(o.committed) << abort_reason_name(o.reason);
    return v;
  }
  // The numbers of the conditions the audit's problems name ("condition N (").
  static std::set<int> conditions(const Audit& a) {
    static const std::regex kName(R"(condition (\d+) \()");
    std::set<int> out;
    for (const std::string& p : a.problems) {
      for (std::sregex_iterator m(p.begin(), p.end(), kName), end; m != end; ++m) out.insert(std::stoi((*m)[1]));
    }
    return out;
  }
  bool exists(uint32_t table, uint64_t key) {
    return client_->transact([&](Txn& t) {
      auto r = t.read(table, key);
      return r ? AbortReason::kNone : r.reason();
    }).committed;
  }
  std::vector<TpccWorkload::OrderItem> items(std::initializer_list<uint64_t> ids, uint64_t supply = 1) {
    std::vector<TpccWorkload::OrderItem> v;
    for (uint64_t i : ids) v.push_back({i, supply, 3});
    return v;
  }

  std::unique_ptr<MemdCluster> d_;
  ComputeConfig cfg_;
  std::unique_ptr<TpccWorkload> w_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<BlockingClient> client_;
};

TEST_P(TpccOnDaemons, LoadedDataPassesTheAudit) {
  const Audit a = audit();
  EXPECT_TRUE(a.clean()) << problems(a);
  EXPECT_EQ(a.value, w_->initial_ytd());
  // Every order, its lines and the 9 undelivered new-orders of 20 districts were read.
  EXPECT_GT(a.rows, 20u * (30 + 30 * 5 + 9));
}

TEST_P(TpccOnDaemons, EachTransactionDoesWhatTheSpecSays) {
  const tpcc::StaticKeys& k = w_->keys();
  // NewOrder: D_NEXT_O_ID 31 -> 32, order 31 with its lines and a new-order
  // row, the customer's last order, stock quantities and counts; one item
  // from warehouse 2.
  const int64_t qty_before = field(tpcc::kStock, k.stock(2, 7), tpcc::stock::kQuantity);
  auto lines = items({5, 6, 7, 8, 9});
  lines[2].supply_warehouse = 2;
  TxnOutcome o = run([&](Txn& t) { return w_->new_order(t, 1, 4, 17, lines); });
  ASSERT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  EXPECT_EQ(field(tpcc::kDistrict, k.district(1, 4), tpcc::district::kNextOrderId), 32);
  EXPECT_EQ(field(tpcc::kOrder, tpcc::order_key(1, 4, 31), tpcc::order::kLineCount), 5);
  EXPECT_EQ(field(tpcc::kOrder, tpcc::order_key(1, 4, 31), tpcc::order::kAllLocal), 0);
  EXPECT_EQ(field(tpcc::kNewOrder, tpcc::new_order_key(1, 4, 31), tpcc::new_order::kOrderId), 31);
  EXPECT_EQ(field(tpcc::kOrderLine, tpcc::order_line_key(1, 4, 31, 3), tpcc::order_line::kSupplyWarehouse), 2);
  EXPECT_EQ(field(tpcc::kLastOrder, k.last_order(1, 4, 17), tpcc::last_order::kOrderId), 31);
  const int64_t qty_after = field(tpcc::kStock, k.stock(2, 7), tpcc::stock::kQuantity);
  EXPECT_EQ(qty_after, qty_before >= 13 ? qty_before - 3 : qty_before - 3 + 91);
  EXPECT_EQ(field(tpcc::kStock, k.stock(2, 7), tpcc::stock::kRemoteCount), 1);

  // Payment by last name (customer 3 is district 2's only "BARBARABLE",
  // name 2, with 30 customers): W_YTD and D_YTD grow, the customer pays, and a
  // history row keyed by its payment count appears.
  const int64_t w_ytd = field(tpcc::kWarehouse, k.warehouse(1), tpcc::warehouse::kYtd);
  o = run([&](Txn& t) { return w_->payment(t, 1, 5, {2, 2, true, 2}, 4321); });
  ASSERT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  EXPECT_EQ(o.delta, 4321);
  EXPECT_EQ(field(tpcc::kWarehouse, k.warehouse(1), tpcc::warehouse::kYtd), w_ytd + 4321);
  EXPECT_EQ(field(tpcc::kCustomer, k.customer(2, 2, 3), tpcc::customer::kBalance), -1000 - 4321);
  EXPECT_EQ(field(tpcc::kCustomer, k.customer(2, 2, 3), tpcc::customer::kPaymentCount), 2);
  EXPECT_EQ(field(tpcc::kHistory, tpcc::history_key(2, 2, 3, 2), tpcc::history::kAmount), 4321);
  EXPECT_EQ(field(tpcc::kHistory, tpcc::history_key(2, 2, 3, 2), tpcc::history::kWarehouse), 1);

  // OrderStatus and StockLevel are read-only and commit.
  o = run([&](Txn& t) { return w_->order_status(t, {1, 4, false, 17}); });
  EXPECT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  uint64_t low = 99999;
  o = run([&](Txn& t) { return w_->stock_level(t, 1, 4, 101, &low); });
  ASSERT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  EXPECT_GT(low, 0u);  // every quantity is below 101
  EXPECT_LT(low, 99999u);

  // Delivery: each district's oldest new-order (22) goes; the order gets
  // the carrier, its lines the date, its customer the amount.
  const auto c22 = static_cast<uint64_t>(field(tpcc::kOrder, tpcc::order_key(1, 6, 22), tpcc::order::kCustomerId));
  const int64_t balance = field(tpcc::kCustomer, k.customer(1, 6, c22), tpcc::customer::kBalance);
  int64_t amount = 0;
  const int64_t n22 = field(tpcc::kOrder, tpcc::order_key(1, 6, 22), tpcc::order::kLineCount);
  for (int64_t ol = 1; ol <= n22; ++ol) {
    amount += field(tpcc::kOrderLine, tpcc::order_line_key(1, 6, 22, static_cast<uint64_t>(ol)),
                    tpcc::order_line::kAmount);
  }
  o = run([&](Txn& t) { return w_->delivery(t, 1, 7); });
  ASSERT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  for (uint64_t d = 1; d <= 10; ++d) {
    EXPECT_FALSE(exists(tpcc::kNewOrder, tpcc::new_order_key(1, d, 22))) << d;
    EXPECT_EQ(field(tpcc::kDeliveryCursor, k.delivery_cursor(1, d), tpcc::delivery_cursor::kOrderId), 23);
  }
  EXPECT_EQ(field(tpcc::kOrder, tpcc::order_key(1, 6, 22), tpcc::order::kCarrierId), 7);
  EXPECT_NE(field(tpcc::kOrderLine, tpcc::order_line_key(1, 6, 22, 1), tpcc::order_line::kDeliveryDate), 0);
  EXPECT_EQ(field(tpcc::kCustomer, k.customer(1, 6, c22), tpcc::customer::kBalance), balance + amount);

  const Audit a = audit();
  EXPECT_TRUE(a.clean()) << problems(a);
  EXPECT_EQ(a.value, w_->initial_ytd() + 4321);
}

TEST_P(TpccOnDaemons, AnUnusedItemRollsTheOrderBack) {
  const tpcc::StaticKeys& k = w_->keys();
  const int64_t qty = field(tpcc::kStock, k.stock(1, 5), tpcc::stock::kQuantity);
  const TxnOutcome o = run([&](Txn& t) { return w_->new_order(t, 1, 3, 4, items({5, 6, 1001})); });
  EXPECT_FALSE(o.commit.committed);
  EXPECT_EQ(o.commit.reason, AbortReason::kUser);
  EXPECT_EQ(o.type, TpccWorkload::kTxnNewOrder);
  EXPECT_EQ(field(tpcc::kDistrict, k.district(1, 3), tpcc::district::kNextOrderId), 31);
  EXPECT_FALSE(exists(tpcc::kOrder, tpcc::order_key(1, 3, 31)));
  EXPECT_EQ(field(tpcc::kStock, k.stock(1, 5), tpcc::stock::kQuantity), qty);
  // About 1% of drawn orders end on the unused id, always as the last item.
  Rng rng(3);
  int rollbacks = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto v = w_->draw_order_items(rng, 1);
    for (size_t j = 0; j + 1 < v.size(); ++j) ASSERT_LE(v[j].item, 1000u);
    rollbacks += v.back().item == 1001;
  }
  EXPECT_GT(rollbacks, 120);
  EXPECT_LT(rollbacks, 300);
  const Audit a = audit();
  EXPECT_TRUE(a.clean()) << problems(a);
}

TEST_P(TpccOnDaemons, DeliverySkipsDistrictsWithNothingToDeliver) {
  const tpcc::StaticKeys& k = w_->keys();
  // 9 undelivered orders per district: the 10th Delivery finds none anywhere.
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(run([&](Txn& t) { return w_->delivery(t, 1, 1); }).commit.committed);
  }
  // One more order in district 5 only: the next Delivery delivers it and
  // skips the other nine.
  ASSERT_TRUE(run([&](Txn& t) { return w_->new_order(t, 1, 5, 2, items({1, 2, 3, 4, 5})); }).commit.committed);
  TxnOutcome o = run([&](Txn& t) { return w_->delivery(t, 1, 2); });
  ASSERT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  EXPECT_EQ(field(tpcc::kOrder, tpcc::order_key(1, 5, 31), tpcc::order::kCarrierId), 2);
  for (uint64_t d = 1; d <= 10; ++d) {
    EXPECT_EQ(field(tpcc::kDeliveryCursor, k.delivery_cursor(1, d), tpcc::delivery_cursor::kOrderId),
              d == 5 ? 32 : 31);
  }
  o = run([&](Txn& t) { return w_->delivery(t, 1, 3); });
  EXPECT_TRUE(o.commit.committed) << abort_reason_name(o.commit.reason);
  const Audit a = audit();
  EXPECT_TRUE(a.clean()) << problems(a);
}

TEST_P(TpccOnDaemons, RunsInForkedProcessesAndKeepsTheConditions) {
  ChildRunSpec spec;
  spec.processes = 2;
  spec.coordinators = 4;
  spec.duration = std::chrono::milliseconds(1500);
  const auto reports = run_in_children(cfg_, *w_, spec);
  CheckInput in;
  in.baseline = w_->initial_ytd();
  for (size_t i = 0; i < reports.size(); ++i) {
    ASSERT_EQ(reports[i].status, 0) << "process " << i << ": " << reports[i].error;
    EXPECT_GT(reports[i].commits, 0u) << "process " << i;
    in.committed_delta += reports[i].delta;
    in.uncertain += reports[i].uncertain;
  }
  EXPECT_GT(in.committed_delta, 0);  // payments committed
  const auto r = w_->check(*client_, in);
  EXPECT_TRUE(r.passed) << r.message;
}

// The audit is not vacuous: damage done through ordinary transactions
// (each keeps rows well-formed, only a TPC-C condition breaks) is reported.
TEST_P(TpccOnDaemons, AuditReportsBrokenConditions) {
  const tpcc::StaticKeys& k = w_->keys();
  auto commit = [&](const std::function<AbortReason(Txn&)>& body) {
    const CommitOutcome o = client_->transact(body);
    ASSERT_TRUE(o.committed) << abort_reason_name(o.reason) << " " << o.detail.to_string();
  };
  // 1 (and 9): D_YTD paid without W_YTD.
  commit([&](Txn& t) {
    auto d = t.update(tpcc::kDistrict, k.district(2, 3));
    if (!d) return d.reason();
    tpcc::put(*d, tpcc::district::kYtd, tpcc::get(*d, tpcc::district::kYtd) + 100);
    return AbortReason::kNone;
  });
  // 3 (and 11): an undelivered order's new-order row removed in the middle.
  commit([&](Txn& t) { return t.remove(tpcc::kNewOrder, tpcc::new_order_key(1, 7, 25)); });
  // 4 and 6: an order line past the order's O_OL_CNT.
  const auto n = static_cast<uint64_t>(field(tpcc::kOrder, tpcc::order_key(1, 2, 10), tpcc::order::kLineCount));
  if (n < tpcc::kMaxOrderLines) {
    std::vector<uint8_t> line(tpcc::kOrderLineBytes, 0);
    tpcc::put(line, tpcc::order_line::kOrderId, 10);
    tpcc::put(line, tpcc::order_line::kNumber, static_cast<int64_t>(n + 1));
    tpcc::put(line, tpcc::order_line::kDeliveryDate, 1);
    commit([&](Txn& t) { return t.insert(tpcc::kOrderLine, tpcc::order_line_key(1, 2, 10, n + 1), line); });
  }
  const Audit a = audit();
  ASSERT_FALSE(a.clean());
  const std::string all = problems(a);
  EXPECT_NE(all.find("warehouse 2: condition 1"), std::string::npos) << all;
  EXPECT_NE(all.find("warehouse 1 district 7: new-order 25"), std::string::npos) << all;
  if (n < tpcc::kMaxOrderLines) {
    EXPECT_NE(all.find("condition 4 (sum(O_OL_CNT) = order-line rows) fails"), std::string::npos) << all;
    EXPECT_NE(all.find("order 10 has a line"), std::string::npos) << all;
  }
}

// Conditions 8-12, one damage at a time (each undone before the next):
// every damage breaks exactly the conditions listed, as the spec's sums
// over the rows that exist would, and the audit must name those, no
// others, with the ids of the warehouse, district or customer. Thirteen
// audits: one protocol suffices, as the damage is ordinary transactions
// and the audit's reads run in every mode in the tests above.
class TpccAuditDamage : public TpccOnDaemons {};

TEST_P(TpccAuditDamage, AuditNamesTheConditionsEachMoneyOrCountDamageBreaks) {
  const tpcc::StaticKeys& k = w_->keys();
  auto commit = [&](const std::function<AbortReason(Txn&)>& body) {
    const CommitOutcome o = client_->transact(body);
    ASSERT_TRUE(o.committed) << abort_reason_name(o.reason) << " " << o.detail.to_string();
  };
  auto expect = [&](const std::string& damage, const std::set<int>& want, const std::vector<std::string>& names) {
    const Audit a = audit();
    const std::string all = problems(a);
    ASSERT_LE(a.problem_count, Audit::kMaxProblems) << damage << all;  // none left out of conditions()
    EXPECT_EQ(conditions(a), want) << damage << all;
    for (const std::string& n : names) {
      EXPECT_NE(all.find(n), std::string::npos) << damage << ": no '" << n << "'" << all;
    }
  };

  // 8 (and 1): W_YTD grows without a payment.
  add_to(tpcc::kWarehouse, k.warehouse(1), tpcc::warehouse::kYtd, 700);
  expect("W_YTD + 7.00", {1, 8}, {"warehouse 1: condition 8"});
  add_to(tpcc::kWarehouse, k.warehouse(1), tpcc::warehouse::kYtd, -700);

  // 9 alone: 7.00 of D_YTD moves to another district of the warehouse.
  add_to(tpcc::kDistrict, k.district(2, 3), tpcc::district::kYtd, 700);
  add_to(tpcc::kDistrict, k.district(2, 4), tpcc::district::kYtd, -700);
  expect("D_YTD moved between districts", {9},
         {"warehouse 2 district 3: condition 9", "warehouse 2 district 4: condition 9"});
  add_to(tpcc::kDistrict, k.district(2, 3), tpcc::district::kYtd, -700);
  add_to(tpcc::kDistrict, k.district(2, 4), tpcc::district::kYtd, 700);

  // 8, 9, 10: a payment's H_AMOUNT.
  const uint64_t h = tpcc::history_key(1, 3, 5, 1);
  add_to(tpcc::kHistory, h, tpcc::history::kAmount, 700);
  expect("H_AMOUNT + 7.00", {8, 9, 10},
         {"warehouse 1: condition 8", "warehouse 1 district 3: condition 9",
          "warehouse 1 district 3 customer 5: condition 10"});
  add_to(tpcc::kHistory, h, tpcc::history::kAmount, -700);

  // 8 and 9 only: the payment went to warehouse 2 (the H_W_ID of a remote
  // payment): the sums go by H_W_ID, and the customer's balance still holds.
  add_to(tpcc::kHistory, h, tpcc::history::kWarehouse, 1);
  expect("H_W_ID 1 -> 2", {8, 9},
         {"warehouse 1: condition 8", "warehouse 2: condition 8", "warehouse 1 district 3: condition 9",
          "warehouse 2 district 3: condition 9"});
  add_to(tpcc::kHistory, h, tpcc::history::kWarehouse, -1);

  // 8, 9, 10: a history row removed.
  const uint64_t gone = tpcc::history_key(2, 6, 7, 1);
  const std::vector<uint8_t> history_row = row(tpcc::kHistory, gone);
  commit([&](Txn& t) { return t.remove(tpcc::kHistory, gone); });
  expect("history row removed", {8, 9, 10},
         {"warehouse 2 district 6 customer 7: history row 1 is missing", "warehouse 2: condition 8",
          "warehouse 2 district 6: condition 9", "warehouse 2 district 6 customer 7: condition 10"});
  commit([&](Txn& t) { return t.insert(tpcc::kHistory, gone, history_row); });

  // 10 and 12: C_BALANCE.
  add_to(tpcc::kCustomer, k.customer(1, 4, 9), tpcc::customer::kBalance, 700);
  expect("C_BALANCE + 7.00", {10, 12},
         {"warehouse 1 district 4 customer 9: condition 10", "warehouse 1 district 4 customer 9: condition 12"});
  add_to(tpcc::kCustomer, k.customer(1, 4, 9), tpcc::customer::kBalance, -700);

  // 12 alone: C_YTD_PAYMENT.
  add_to(tpcc::kCustomer, k.customer(1, 4, 9), tpcc::customer::kYtdPayment, 700);
  expect("C_YTD_PAYMENT + 7.00", {12}, {"warehouse 1 district 4 customer 9: condition 12"});
  add_to(tpcc::kCustomer, k.customer(1, 4, 9), tpcc::customer::kYtdPayment, -700);

  // 10 and 12: the OL_AMOUNT of a delivered line (order 5 was loaded
  // delivered), charged to the order's customer.
  const int64_t owner = field(tpcc::kOrder, tpcc::order_key(2, 2, 5), tpcc::order::kCustomerId);
  const std::string customer = "warehouse 2 district 2 customer " + std::to_string(owner);
  add_to(tpcc::kOrderLine, tpcc::order_line_key(2, 2, 5, 1), tpcc::order_line::kAmount, 700);
  expect("delivered OL_AMOUNT + 7.00", {10, 12}, {customer + ": condition 10", customer + ": condition 12"});
  add_to(tpcc::kOrderLine, tpcc::order_line_key(2, 2, 5, 1), tpcc::order_line::kAmount, -700);

  // None: an undelivered line (order 25) is no customer's debt yet.
  add_to(tpcc::kOrderLine, tpcc::order_line_key(2, 2, 25, 1), tpcc::order_line::kAmount, 700);
  expect("undelivered OL_AMOUNT + 7.00", {}, {});
  add_to(tpcc::kOrderLine, tpcc::order_line_key(2, 2, 25, 1), tpcc::order_line::kAmount, -700);

  // 11 (and 3): the newest new-order row removed without a delivery.
  const uint64_t no = tpcc::new_order_key(1, 8, 30);
  const std::vector<uint8_t> new_order_row = row(tpcc::kNewOrder, no);
  commit([&](Txn& t) { return t.remove(tpcc::kNewOrder, no); });
  expect("new-order row removed", {3, 11}, {"warehouse 1 district 8: condition 11"});
  commit([&](Txn& t) { return t.insert(tpcc::kNewOrder, no, new_order_row); });

  // 11 alone: C_DELIVERY_CNT counts a delivery that removed no new-order row.
  add_to(tpcc::kCustomer, k.customer(1, 5, 11), tpcc::customer::kDeliveryCount, 1);
  expect("C_DELIVERY_CNT + 1", {11}, {"warehouse 1 district 5: condition 11"});
  add_to(tpcc::kCustomer, k.customer(1, 5, 11), tpcc::customer::kDeliveryCount, -1);

  const Audit a = audit();
  EXPECT_TRUE(a.clean()) << "after undoing every damage:" << problems(a);
}

INSTANTIATE_TEST_SUITE_P(Modes, TpccOnDaemons,
                         ::testing::Values(ProtocolMode::kPandora, ProtocolMode::kFord, ProtocolMode::kLogALatch),
                         [](const ::testing::TestParamInfo<ProtocolMode>& info) {
                           std::string p(protocol_name(info.param));
                           for (char& c : p) c = c == '-' ? '_' : c;
                           return p;
                         });

INSTANTIATE_TEST_SUITE_P(Pandora, TpccAuditDamage, ::testing::Values(ProtocolMode::kPandora),
                         [](const ::testing::TestParamInfo<ProtocolMode>&) { return std::string("pandora"); });

// A district that has used its order ids stops the run with the flag to raise.
TEST(TpccLimits, RunningOutOfOrderIdsNamesTheFlag) {
  MemdCluster d(2, "64M", "16M");
  ASSERT_TRUE(d.ok()) << d.error();
  ComputeConfig cfg = d.config(1, Backend::kShm, 2);
  cfg.lane_bytes = TpccWorkload::kMinLaneBytes;
  TpccOptions o = small_options();
  o.warehouses = 1;
  o.max_orders_per_district = 31;  // room for exactly one new order per district
  auto w = TpccWorkload::create(o);
  ASSERT_TRUE(w);
  auto cluster = Cluster::connect(cfg, quiet_logger());
  ASSERT_TRUE(cluster);
  ASSERT_TRUE(create_tables(**cluster, (*w)->tables()));
  TableLoader loader(**cluster);
  ASSERT_TRUE((*w)->load(loader));
  ASSERT_TRUE(loader.finish());
  auto client = BlockingClient::create(**cluster, 0);
  ASSERT_TRUE(client);
  const std::vector<TpccWorkload::OrderItem> its{{1, 1, 1}, {2, 1, 1}, {3, 1, 1}, {4, 1, 1}, {5, 1, 1}};
  // District 1 as if it had taken order 31, its last one.
  const CommitOutcome used = (*client)->transact([&](Txn& t) {
    auto d = t.update(tpcc::kDistrict, (*w)->keys().district(1, 1));
    if (!d) return d.reason();
    tpcc::put(*d, tpcc::district::kNextOrderId, 32);
    return AbortReason::kNone;
  });
  ASSERT_TRUE(used.committed);
  std::string error;
  (*client)->run([&](Txn& t) {
    try {
      (*w)->new_order(t, 1, 1, 1, its);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  });
  EXPECT_NE(error.find("--tpcc-max-orders-per-district"), std::string::npos) << error;
  // The failed attempt released its latches: the district can be read.
  const CommitOutcome after = (*client)->transact([&](Txn& t) {
    auto d = t.read(tpcc::kDistrict, (*w)->keys().district(1, 1));
    return d ? AbortReason::kNone : d.reason();
  });
  EXPECT_TRUE(after.committed) << abort_reason_name(after.reason);
}

}  // namespace
}  // namespace pandora::testing
