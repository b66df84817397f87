// TPC-C (revision 5.11) on Pandora: the nine tables (tpcc_schema.h), the
// clause 4.3.3 initial population, and the five transactions in the
// standard mix, each one Pandora transaction:
//
//   NewOrder     45%  read warehouse, customer, items; D_NEXT_O_ID++; insert order,
//                     new-order, 5..15 order lines; update 5..15 stocks. 1% roll
//                     back on an unused item id (AbortReason::kUser). 1% of the
//                     items come from a remote warehouse (when warehouses > 1).
//   Payment      43%  W_YTD, D_YTD += amount; customer (60% by last name, 15% of
//                     a remote warehouse) pays; insert a history row.
//   OrderStatus   4%  (read-only) customer (60% by last name), its last order and lines.
//   Delivery      4%  per district: the oldest new-order is removed, its order gets
//                     the carrier, its lines the delivery date, its customer the amount.
//   StockLevel    4%  (read-only) distinct items of the district's last 20 orders
//                     whose stock is below a threshold (10..20).
//
// Design choices a key-value store forces (README "TPC-C"):
//  * Last-name lookup reads the customer-name table: one row per (warehouse,
//    district, last-name number) with the customer ids sorted by C_FIRST.
//    It is built at load and never written: TPC-C never changes a name nor
//    adds a customer, so a static index is exact; reading it through the
//    transaction costs one READ and never conflicts.
//  * NewOrder writes the customer's last order id (last-order table), which
//    OrderStatus reads; Delivery keeps a per-district cursor (the oldest
//    undelivered order), so new-order rows form the range [cursor,
//    D_NEXT_O_ID). Delivery removes the cursor's new-order row; when the
//    district has none the remove aborts with kNotFound, and Delivery
//    starts again without that district (clause 2.7.4.2: skipped). Delivery
//    does every district in one transaction: its log record (up to ~50 KB
//    with log-a-latch's intents) needs 64 KiB log lanes
//    (min_log_lane_bytes(); --lane-bytes at load time).
//  * The tables are fixed-size hash tables: orders, order lines, new-orders
//    and history are sized for --tpcc-max-orders-per-district orders per
//    district (initial ones included). A NewOrder that would go past it,
//    or an insert that finds its table full, stops the run (run_one
//    throws, so pandora-bench fails naming the flag to raise).
//
// Invariant: the sum of W_YTD over all warehouses; Payment adds its amount
// (TxnOutcome::delta), nothing else changes it. audit() reads everything
// through transactions and checks the consistency conditions 1-12 of clause
// 3.3.2 (11 in a form Delivery keeps; see tpcc_audit.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/options.h"
#include "workloads/bench/workload.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::workloads {

struct TpccOptions {
  uint64_t warehouses = 1;
  // Scale knobs for tests and small machines (spec: 100000 and 3000). The
  // initial orders per district equal the customers; the last 30% of them
  // are undelivered (900 of 3000). D_YTD is loaded as 10.00 per customer
  // (the spec's 30,000.00 at 3000), what their loaded payments add up to.
  uint64_t items = 100000;
  uint64_t customers_per_district = 3000;
  // Orders each district may hold, the initial ones included: sizes the
  // order, order-line, new-order and history tables.
  uint64_t max_orders_per_district = 10000;
};

struct TpccFlags {
  uint64_t warehouses = 1;
  uint64_t items = 100000;
  uint64_t customers = 3000;
  uint64_t max_orders = 10000;

  // --warehouses, --tpcc-items, --tpcc-customers-per-district,
  // --tpcc-max-orders-per-district.
  void declare(OptionSet& opts);
  static std::vector<std::string> names();
  Result<TpccOptions> resolve() const;
};

class TpccWorkload final : public Workload {
 public:
  enum Type : uint32_t { kTxnNewOrder, kTxnPayment, kTxnOrderStatus, kTxnDelivery, kTxnStockLevel };
  // Log lanes Delivery's record needs (see above).
  static constexpr uint32_t kMinLaneBytes = 64 * 1024;
  // Share of each district's initial orders left undelivered (900 of 3000).
  static constexpr uint64_t kNewOrderPercent = 30;

  // kInvalidArgument naming the flag for options out of range.
  static Result<std::unique_ptr<TpccWorkload>> create(const TpccOptions& options);

  std::string_view name() const override { return "tpcc"; }
  std::vector<TableSpec> tables() const override;
  Status load(BulkLoader& loader) const override;
  // Delivery's log record.
  uint32_t min_log_lane_bytes() const override { return kMinLaneBytes; }
  const std::vector<std::string>& txn_types() const override { return types_; }
  TxnOutcome run_one(Txn& txn, Rng& rng) const override;
  std::string_view invariant_name() const override { return "sum of W_YTD (cents)"; }
  Result<Audit> audit(Session& session) const override;

  const TpccOptions& options() const { return options_; }
  const tpcc::StaticKeys& keys() const { return keys_; }
  // Undelivered orders per district at load, and the first of them.
  uint64_t initial_new_orders() const;
  uint64_t first_undelivered() const { return options_.customers_per_district - initial_new_orders() + 1; }
  // Sum of W_YTD as loaded.
  int64_t initial_ytd() const;

  // The transactions with their inputs drawn (public for tests). Each
  // begins, runs and commits or aborts `txn`.
  struct OrderItem {
    uint64_t item = 0;  // > items(): the unused id that rolls the order back
    uint64_t supply_warehouse = 0;
    uint64_t quantity = 0;
  };
  TxnOutcome new_order(Txn& txn, uint64_t w, uint64_t d, uint64_t c, const std::vector<OrderItem>& items) const;
  // by_name: `customer` is a last-name number (0..999), else a customer id.
  struct CustomerRef {
    uint64_t w = 0, d = 0;
    bool by_name = false;
    uint64_t customer = 0;
  };
  TxnOutcome payment(Txn& txn, uint64_t w, uint64_t d, const CustomerRef& c, int64_t amount) const;
  TxnOutcome order_status(Txn& txn, const CustomerRef& c) const;
  TxnOutcome delivery(Txn& txn, uint64_t w, uint64_t carrier) const;
  // `low_stock` receives the count the transaction computes.
  TxnOutcome stock_level(Txn& txn, uint64_t w, uint64_t d, int64_t threshold, uint64_t* low_stock = nullptr) const;

  // Input generation (clause 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1).
  std::vector<OrderItem> draw_order_items(Rng& rng, uint64_t w) const;
  CustomerRef draw_customer(Rng& rng, uint64_t w, uint64_t d, bool allow_remote) const;
  // Customer c's (1-based) last-name number at load: c-1 for the first
  // 1000, else NURand(255, 0, 999) (clause 4.3.3.1).
  static uint64_t load_last_name(Rng& rng, uint64_t c);

 private:
  explicit TpccWorkload(const TpccOptions& o)
      : options_(o), keys_(o.warehouses, o.items, o.customers_per_district) {}
  // Resolves a CustomerRef to a customer id inside `txn` (kNone or the abort).
  AbortReason find_customer(Txn& txn, const CustomerRef& c, uint64_t* id) const;

  TpccOptions options_;
  tpcc::StaticKeys keys_;
  std::vector<std::string> types_{"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"};
};

}  // namespace pandora::workloads
