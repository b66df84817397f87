// TPC-C on PostgreSQL (tpcc_params.h for the mix and parameters): the nine
// tables of the specification (warehouse, district, customer, history,
// orders, new_order, order_line, item, stock), loaded as in clause 4.3
// (by default the spec's 100000 items and 3000 customers and orders per
// district, the last 900 undelivered; --tpcc-items and
// --tpcc-customers-per-district scale them down as pandora-bench's flags
// do: tpcc_params.h), the five transactions as in clause 2, each warehouse
// picked uniformly per transaction (no terminal-to-warehouse binding, no
// keying/think times).
// NewOrder's 1% with an unused item id rolls back ("user").
// W_YTD and D_YTD are loaded as the sum of the customers' initial payments
// (the spec's 300,000.00 and 30,000.00 at 3000 customers per district).
// check(): consistency conditions 1-12 (clause 3.3.2; 11 counts the
// orders loaded as delivered), and the invariant sum(W_YTD) in cents =
// before + committed payment amounts.
#pragma once

#include "workloads/peers/postgres/pg_workload.h"
#include "workloads/peers/postgres/tpcc_params.h"

namespace pandora::workloads::pg {

// warehouses, items, customers_per_district (tpcc::check_scale() for the bounds).
using TpccOptions = tpcc::Scale;

class TpccPg final : public PgWorkload {
 public:
  explicit TpccPg(TpccOptions o) : o_(o) {}

  std::string name() const override { return "tpcc"; }
  const std::vector<std::string>& txn_types() const override { return types_; }
  // pandora-bench's keys for the same options.
  nlohmann::json options_json() const override {
    return {{"warehouses", o_.warehouses}, {"items", o_.items}, {"customers_per_district", o_.customers_per_district}};
  }
  std::string options_text() const override;
  uint64_t load(PgConn& c, const std::function<void(uint64_t)>& progress) const override;
  void prepare(PgConn& c) const override;
  PgTxn draw(Rng& rng) const override;
  int64_t invariant(PgConn& c) const override;
  PgCheck check(PgConn& c, int64_t before, int64_t committed_delta) const override;

 private:
  TpccOptions o_;
  std::vector<std::string> types_{"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"};
};

}  // namespace pandora::workloads::pg
