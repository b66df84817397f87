#include "workloads/peers/postgres/tpcc_params.h"

#include <fmt/format.h>

#include "workloads/tpcc/tpcc.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::workloads::tpcc {

// The scale is pandora-bench's (workloads/tpcc/tpcc.cc: TpccFlags, TpccWorkload::create).
static_assert(Scale::kMaxItems == kMaxItem - 1);
static_assert(Scale::kMaxCustomers == kMaxCustomer);
static_assert(Scale::kNewOrderPercent == TpccWorkload::kNewOrderPercent);
static_assert(Scale::kLastNames == kLastNames);
static_assert(kDistricts == kDistrictsPerWarehouse);
static_assert(Scale{}.warehouses == TpccOptions{}.warehouses && Scale{}.items == TpccOptions{}.items &&
              Scale{}.customers_per_district == TpccOptions{}.customers_per_district);
static_assert(Scale{}.first_new_order() == 2101 && Scale{}.new_orders() == 900);  // clause 4.3.3.1

Status check_scale(const Scale& s) {
  if (s.items < Scale::kMinItems || s.items > Scale::kMaxItems) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--tpcc-items {} must be in {}..{}", s.items, Scale::kMinItems, Scale::kMaxItems));
  }
  if (s.customers_per_district < Scale::kMinCustomers || s.customers_per_district > Scale::kMaxCustomers) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--tpcc-customers-per-district {} must be in {}..{}", s.customers_per_district,
                              Scale::kMinCustomers, Scale::kMaxCustomers));
  }
  return Status::ok();
}

CustomerPick pick_customer(Rng& rng, const Scale& s) {
  CustomerPick p;
  p.by_name = rng.uniform(100) < 60;
  // With fewer than 1000 customers only the names 0..customers-1 exist.
  if (p.by_name) {
    p.c_last = last_name(static_cast<uint32_t>(nurand(rng, 255, 0, s.last_names() - 1, kRunConstants.last_name)));
  } else {
    p.c_id = nurand(rng, 1023, 1, s.customers_per_district, kRunConstants.customer);
  }
  return p;
}

// Another warehouse than w, uniformly (w itself when there is only one).
static uint64_t other_warehouse(Rng& rng, uint64_t w, uint64_t warehouses) {
  if (warehouses == 1) return w;
  const uint64_t o = between(rng, 1, warehouses - 1);
  return o >= w ? o + 1 : o;
}

NewOrderParams new_order_params(Rng& rng, uint64_t w, const Scale& s) {
  NewOrderParams p;
  p.w = w;
  p.d = between(rng, 1, kDistricts);
  p.c = nurand(rng, 1023, 1, s.customers_per_district, kRunConstants.customer);
  const uint64_t n = between(rng, 5, 15);
  p.rollback = rng.uniform(100) == 0;
  for (uint64_t i = 0; i < n; ++i) {
    OrderLine l;
    l.i_id = nurand(rng, 8191, 1, s.items, kRunConstants.item);
    l.supply_w = rng.uniform(100) == 0 ? other_warehouse(rng, w, s.warehouses) : w;
    l.quantity = between(rng, 1, 10);
    p.all_local = p.all_local && l.supply_w == w;
    p.lines.push_back(l);
  }
  if (p.rollback) p.lines.back().i_id = s.items + 1;
  return p;
}

PaymentParams payment_params(Rng& rng, uint64_t w, const Scale& s) {
  PaymentParams p;
  p.w = w;
  p.d = between(rng, 1, kDistricts);
  if (rng.uniform(100) < 85 || s.warehouses == 1) {
    p.c_w = w;
    p.c_d = p.d;
  } else {
    p.c_w = other_warehouse(rng, w, s.warehouses);
    p.c_d = between(rng, 1, kDistricts);
  }
  p.customer = pick_customer(rng, s);
  p.amount_cents = static_cast<int64_t>(between(rng, 100, 500000));
  return p;
}

}  // namespace pandora::workloads::tpcc
