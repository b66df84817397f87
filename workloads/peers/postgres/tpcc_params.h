// TPC-C (v5.11) parameters for the PostgreSQL driver. NURand, its
// constants and the last-name rule are Pandora's TPC-C's own
// (workloads/tpcc/tpcc_random.h), so both systems draw alike.
//
// Mix: NewOrder 45, Payment 43, OrderStatus 4, Delivery 4, StockLevel 4 (%).
// NURand(A, x, y) = (((rand(0, A) | rand(x, y)) + C) % (y - x + 1)) + x
// (2.1.6) with A = 255 for C_LAST, 1023 for C_ID, 8191 for OL_I_ID; the
// run's C for C_LAST differs from the load's by 66 (in the allowed range
// 65..119, not 96 or 112). NewOrder: 5..15 lines, items NURand(8191),
// 1% of lines from a remote warehouse, 1% of transactions roll back on an
// unused item id. Payment: 15% pay through a remote warehouse's customer,
// 60% pick the customer by last name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/bench/rng.h"
#include "workloads/tpcc/tpcc_random.h"

namespace pandora::workloads::tpcc {

enum Type : uint32_t { kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel };

inline constexpr uint64_t kItems = 100000;
inline constexpr uint64_t kDistricts = 10;            // per warehouse
inline constexpr uint64_t kCustomers = 3000;          // per district
inline constexpr uint64_t kOrders = 3000;             // per district, loaded
inline constexpr uint64_t kFirstNewOrder = 2101;      // loaded orders >= this are undelivered
// 45/43/4/4/4.
inline Type pick_type(Rng& rng) {
  const uint64_t d = rng.uniform(100);
  if (d < 45) return kNewOrder;
  if (d < 88) return kPayment;
  if (d < 92) return kOrderStatus;
  if (d < 96) return kDelivery;
  return kStockLevel;
}

// A customer chosen by last name (60%) or by id.
struct CustomerPick {
  bool by_name = false;
  uint64_t c_id = 0;
  std::string c_last;
};
CustomerPick pick_customer(Rng& rng);

struct OrderLine {
  uint64_t i_id = 0;       // kItems + 1 on the rolled-back transaction's last line
  uint64_t supply_w = 0;
  uint64_t quantity = 0;
};
struct NewOrderParams {
  uint64_t w = 0, d = 0, c = 0;
  std::vector<OrderLine> lines;
  bool all_local = true;
  bool rollback = false;
};
NewOrderParams new_order_params(Rng& rng, uint64_t w, uint64_t warehouses);

struct PaymentParams {
  uint64_t w = 0, d = 0, c_w = 0, c_d = 0;
  CustomerPick customer;
  int64_t amount_cents = 0;  // 1.00 .. 5000.00
};
PaymentParams payment_params(Rng& rng, uint64_t w, uint64_t warehouses);

}  // namespace pandora::workloads::tpcc
