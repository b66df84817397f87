#include "workloads/tpcc/tpcc.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "workloads/tpcc/tpcc_random.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::workloads {

using namespace tpcc;

void TpccFlags::declare(OptionSet& opts) {
  opts.add_u64("warehouses", &warehouses, "tpcc: number of warehouses (the scale factor)", 1, kMaxWarehouse);
  opts.add_u64("tpcc-items", &items,
               "tpcc: rows in the item table and stock rows per warehouse (the spec's 100000; smaller for tests)", 1,
               kMaxItem - 1);
  opts.add_u64("tpcc-customers-per-district", &customers,
               "tpcc: customers per district, also the initial orders per district (the spec's 3000; smaller for "
               "tests); the last 30% of the initial orders are undelivered",
               10, kMaxCustomer);
  opts.add_u64("tpcc-max-orders-per-district", &max_orders,
               "tpcc: orders a district may reach in the tables' lifetime, the initial ones included; sizes the "
               "order, order-line, new-order and history tables (about 31 MB per warehouse and 1000 orders); a run "
               "that goes past it stops with an error",
               11, kMaxOrder);
}

std::vector<std::string> TpccFlags::names() {
  return {"warehouses", "tpcc-items", "tpcc-customers-per-district", "tpcc-max-orders-per-district"};
}

Result<TpccOptions> TpccFlags::resolve() const {
  TpccOptions o;
  o.warehouses = warehouses;
  o.items = items;
  o.customers_per_district = customers;
  o.max_orders_per_district = max_orders;
  return o;
}

Result<std::unique_ptr<TpccWorkload>> TpccWorkload::create(const TpccOptions& o) {
  auto bad = [](std::string m) { return Status(Errc::kInvalidArgument, std::move(m)); };
  if (o.warehouses < 1 || o.warehouses > kMaxWarehouse) {
    return bad(fmt::format("--warehouses {} must be in 1..{}", o.warehouses, kMaxWarehouse));
  }
  // The unused item id of a rolled-back NewOrder (items + 1) must fit the key too.
  if (o.items < 1 || o.items >= kMaxItem) {
    return bad(fmt::format("--tpcc-items {} must be in 1..{}", o.items, kMaxItem - 1));
  }
  if (o.customers_per_district < 10 || o.customers_per_district > kMaxCustomer) {
    return bad(fmt::format("--tpcc-customers-per-district {} must be in 10..{}", o.customers_per_district,
                           kMaxCustomer));
  }
  if (o.max_orders_per_district <= o.customers_per_district || o.max_orders_per_district > kMaxOrder) {
    return bad(fmt::format("--tpcc-max-orders-per-district {} must exceed the initial orders per district "
                           "(--tpcc-customers-per-district {}) and be at most {}",
                           o.max_orders_per_district, o.customers_per_district, kMaxOrder));
  }
  return std::unique_ptr<TpccWorkload>(new TpccWorkload(o));
}

std::vector<TableSpec> TpccWorkload::tables() const {
  const uint64_t w = options_.warehouses;
  const uint64_t districts = w * kDistrictsPerWarehouse;
  const uint64_t c = options_.customers_per_district;
  const uint64_t m = options_.max_orders_per_district;
  // Order lines average 10 per order (5..15 uniform); at the tables' load
  // factor of 1/2 a district full of 15-line orders still fits.
  return {
      TableSpec{kWarehouse, "tpcc-warehouse", kWarehouseBytes, w},
      TableSpec{kDistrict, "tpcc-district", kDistrictBytes, districts},
      TableSpec{kCustomer, "tpcc-customer", kCustomerBytes, districts * c},
      TableSpec{kHistory, "tpcc-history", kHistoryBytes, districts * (c + m)},
      TableSpec{kNewOrder, "tpcc-new-order", kNewOrderBytes, districts * m},
      TableSpec{kOrder, "tpcc-order", kOrderBytes, districts * m},
      TableSpec{kOrderLine, "tpcc-order-line", kOrderLineBytes, districts * m * 10},
      TableSpec{kItem, "tpcc-item", kItemBytes, options_.items},
      TableSpec{kStock, "tpcc-stock", kStockBytes, w * options_.items},
      TableSpec{kCustomerName, "tpcc-customer-name", kCustomerNameBytes, districts * std::min<uint64_t>(c, kLastNames)},
      TableSpec{kLastOrder, "tpcc-last-order", kLastOrderBytes, districts * c},
      TableSpec{kDeliveryCursor, "tpcc-delivery-cursor", kDeliveryCursorBytes, districts},
  };
}

std::vector<TpccWorkload::OrderItem> TpccWorkload::draw_order_items(Rng& rng, uint64_t w) const {
  const uint64_t count = between(rng, 5, kMaxOrderLines);
  const bool rollback = between(rng, 1, 100) == 1;
  std::vector<OrderItem> items(count);
  for (uint64_t k = 0; k < count; ++k) {
    OrderItem& it = items[k];
    it.item = nurand(rng, 8191, 1, options_.items, kRunConstants.item);
    if (rollback && k + 1 == count) it.item = options_.items + 1;
    it.supply_warehouse = w;
    if (options_.warehouses > 1 && between(rng, 1, 100) == 1) {
      const uint64_t other = between(rng, 1, options_.warehouses - 1);
      it.supply_warehouse = other >= w ? other + 1 : other;
    }
    it.quantity = between(rng, 1, 10);
  }
  return items;
}

TpccWorkload::CustomerRef TpccWorkload::draw_customer(Rng& rng, uint64_t w, uint64_t d, bool allow_remote) const {
  CustomerRef c{w, d, false, 0};
  if (allow_remote && options_.warehouses > 1 && between(rng, 1, 100) <= 15) {
    const uint64_t other = between(rng, 1, options_.warehouses - 1);
    c.w = other >= w ? other + 1 : other;
    c.d = between(rng, 1, kDistrictsPerWarehouse);
  }
  const uint64_t customers = options_.customers_per_district;
  if (between(rng, 1, 100) <= 60) {
    // With fewer than 1000 customers only names 0..customers-1 exist.
    c.by_name = true;
    c.customer = nurand(rng, 255, 0, std::min<uint64_t>(customers, kLastNames) - 1, kRunConstants.last_name);
  } else {
    c.customer = nurand(rng, 1023, 1, customers, kRunConstants.customer);
  }
  return c;
}

TxnOutcome TpccWorkload::run_one(Txn& txn, Rng& rng) const {
  const uint64_t w = between(rng, 1, options_.warehouses);
  const uint64_t dice = rng.uniform(100);
  TxnOutcome out;
  if (dice < 45) {
    const uint64_t d = between(rng, 1, kDistrictsPerWarehouse);
    const uint64_t c = nurand(rng, 1023, 1, options_.customers_per_district, kRunConstants.customer);
    out = new_order(txn, w, d, c, draw_order_items(rng, w));
  } else if (dice < 88) {
    const uint64_t d = between(rng, 1, kDistrictsPerWarehouse);
    const CustomerRef c = draw_customer(rng, w, d, true);
    out = payment(txn, w, d, c, static_cast<int64_t>(between(rng, 100, 500000)));
  } else if (dice < 92) {
    out = order_status(txn, draw_customer(rng, w, between(rng, 1, kDistrictsPerWarehouse), false));
  } else if (dice < 96) {
    out = delivery(txn, w, between(rng, 1, 10));
  } else {
    out = stock_level(txn, w, between(rng, 1, kDistrictsPerWarehouse), static_cast<int64_t>(between(rng, 10, 20)));
  }
  // A full table or a log record that does not fit its lane would fail every
  // later attempt the same way: stop the run with the reason.
  if (!out.commit.committed && out.commit.reason == AbortReason::kTableFull) {
    throw std::runtime_error(fmt::format("tpcc: a {} insert found its table full; raise "
                                         "--tpcc-max-orders-per-district (and --load again)",
                                         types_[out.type]));
  }
  if (!out.commit.committed && out.commit.reason == AbortReason::kInvalid) {
    // Calls other than commit() carry no detail; the engine logs it.
    const std::string why = out.commit.detail ? std::string("an operation was refused (see the log)")
                                               : out.commit.detail.to_string();
    throw std::runtime_error(fmt::format("tpcc: {} failed: {}", types_[out.type], why));
  }
  return out;
}

}  // namespace pandora::workloads
