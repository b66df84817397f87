#include "workloads/peers/postgres/tpcc_params.h"

#include <algorithm>

namespace pandora::workloads::tpcc {

CustomerPick pick_customer(Rng& rng) {
  CustomerPick p;
  p.by_name = rng.uniform(100) < 60;
  if (p.by_name) p.c_last = last_name(static_cast<uint32_t>(nurand(rng, 255, 0, 999, kRunConstants.last_name)));
  else p.c_id = nurand(rng, 1023, 1, kCustomers, kRunConstants.customer);
  return p;
}

// Another warehouse than w, uniformly (w itself when there is only one).
static uint64_t other_warehouse(Rng& rng, uint64_t w, uint64_t warehouses) {
  if (warehouses == 1) return w;
  const uint64_t o = between(rng, 1, warehouses - 1);
  return o >= w ? o + 1 : o;
}

NewOrderParams new_order_params(Rng& rng, uint64_t w, uint64_t warehouses) {
  NewOrderParams p;
  p.w = w;
  p.d = between(rng, 1, kDistricts);
  p.c = nurand(rng, 1023, 1, kCustomers, kRunConstants.customer);
  const uint64_t n = between(rng, 5, 15);
  p.rollback = rng.uniform(100) == 0;
  for (uint64_t i = 0; i < n; ++i) {
    OrderLine l;
    l.i_id = nurand(rng, 8191, 1, kItems, kRunConstants.item);
    l.supply_w = rng.uniform(100) == 0 ? other_warehouse(rng, w, warehouses) : w;
    l.quantity = between(rng, 1, 10);
    p.all_local = p.all_local && l.supply_w == w;
    p.lines.push_back(l);
  }
  if (p.rollback) p.lines.back().i_id = kItems + 1;
  return p;
}

PaymentParams payment_params(Rng& rng, uint64_t w, uint64_t warehouses) {
  PaymentParams p;
  p.w = w;
  p.d = between(rng, 1, kDistricts);
  if (rng.uniform(100) < 85 || warehouses == 1) {
    p.c_w = w;
    p.c_d = p.d;
  } else {
    p.c_w = other_warehouse(rng, w, warehouses);
    p.c_d = between(rng, 1, kDistricts);
  }
  p.customer = pick_customer(rng);
  p.amount_cents = static_cast<int64_t>(between(rng, 100, 500000));
  return p;
}

}  // namespace pandora::workloads::tpcc
