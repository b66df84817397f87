// TPC-C (v5.11) parameters for the PostgreSQL driver. NURand, its
// constants and the last-name rule are Pandora's TPC-C's own
// (workloads/tpcc/tpcc_random.h), and so are the scale's defaults, bounds
// and rules (Scale below, checked against workloads/tpcc/tpcc.h in
// tpcc_params.cc), so both systems draw alike.
//
// Mix: NewOrder 45, Payment 43, OrderStatus 4, Delivery 4, StockLevel 4 (%).
// NURand(A, x, y) = (((rand(0, A) | rand(x, y)) + C) % (y - x + 1)) + x
// (2.1.6) with A = 255 for C_LAST, 1023 for C_ID, 8191 for OL_I_ID; the
// run's C for C_LAST differs from the load's by 66 (in the allowed range
// 65..119, not 96 or 112). At a smaller scale y is the scale's: OL_I_ID in
// 1..items, C_ID in 1..customers, C_LAST among the last names that exist
// (0..min(customers, 1000)-1). NewOrder: 5..15 lines, items NURand(8191),
// 1% of lines from a remote warehouse, 1% of transactions roll back on an
// unused item id (items + 1). Payment: 15% pay through a remote
// warehouse's customer, 60% pick the customer by last name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "workloads/bench/rng.h"
#include "workloads/tpcc/tpcc_random.h"

namespace pandora::workloads::tpcc {

// Index into TpccPg::txn_types() (the names of Pandora's TpccWorkload::Type).
enum Type : uint32_t { kTxnNewOrder, kTxnPayment, kTxnOrderStatus, kTxnDelivery, kTxnStockLevel };

inline constexpr uint64_t kDistricts = 10;  // per warehouse

// The database's size: pandora-bench's --warehouses, --tpcc-items and
// --tpcc-customers-per-district (TpccOptions in workloads/tpcc/tpcc.h),
// with its defaults (the spec's), bounds and derived counts.
struct Scale {
  // Pandora's keys have 20 bits for an item id, and the rolled-back
  // NewOrder's unused id (items + 1) must fit too; 12 bits for a customer id.
  static constexpr uint64_t kMinItems = 1;
  static constexpr uint64_t kMaxItems = (uint64_t{1} << 20) - 2;
  static constexpr uint64_t kMinCustomers = 10;
  static constexpr uint64_t kMaxCustomers = (uint64_t{1} << 12) - 1;
  // Share of each district's loaded orders left undelivered (900 of 3000).
  static constexpr uint64_t kNewOrderPercent = 30;
  static constexpr uint64_t kLastNames = 1000;  // 0..999 (clause 4.3.2.3)

  uint64_t warehouses = 1;
  uint64_t items = 100000;                 // rows in item, stock rows per warehouse
  uint64_t customers_per_district = 3000;  // also the loaded orders per district

  // Orders per district at load (O_C_ID is a permutation of the customers).
  constexpr uint64_t orders() const { return customers_per_district; }
  // The loaded orders left undelivered per district: the last 30%, at least one.
  constexpr uint64_t new_orders() const {
    return std::max<uint64_t>(1, customers_per_district * kNewOrderPercent / 100);
  }
  // The first of them (2101 of 3000).
  constexpr uint64_t first_new_order() const { return orders() - new_orders() + 1; }
  // Last-name numbers the customers carry: 0..last_names()-1. Customer c
  // (1-based) gets c-1 for the first 1000, NURand(255, 0, 999) after.
  constexpr uint64_t last_names() const { return std::min(customers_per_district, kLastNames); }
};
// kInvalidArgument naming the flag (pandora-bench's message) when `s` is
// out of bounds. (warehouses is pandora-pg-bench's own, 1..10000.)
Status check_scale(const Scale& s);

// 45/43/4/4/4.
inline Type pick_type(Rng& rng) {
  const uint64_t d = rng.uniform(100);
  if (d < 45) return kTxnNewOrder;
  if (d < 88) return kTxnPayment;
  if (d < 92) return kTxnOrderStatus;
  if (d < 96) return kTxnDelivery;
  return kTxnStockLevel;
}

// A customer chosen by last name (60%) or by id.
struct CustomerPick {
  bool by_name = false;
  uint64_t c_id = 0;
  std::string c_last;
};
CustomerPick pick_customer(Rng& rng, const Scale& s);

struct OrderLine {
  uint64_t i_id = 0;       // s.items + 1 on the rolled-back transaction's last line
  uint64_t supply_w = 0;
  uint64_t quantity = 0;
};
struct NewOrderParams {
  uint64_t w = 0, d = 0, c = 0;
  std::vector<OrderLine> lines;
  bool all_local = true;
  bool rollback = false;
};
NewOrderParams new_order_params(Rng& rng, uint64_t w, const Scale& s);

struct PaymentParams {
  uint64_t w = 0, d = 0, c_w = 0, c_d = 0;
  CustomerPick customer;
  int64_t amount_cents = 0;  // 1.00 .. 5000.00
};
PaymentParams payment_params(Rng& rng, uint64_t w, const Scale& s);

}  // namespace pandora::workloads::tpcc
