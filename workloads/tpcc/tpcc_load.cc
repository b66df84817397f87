// The initial population (clause 4.3.3.1), queued through a BulkLoader.
//
// Every (table, warehouse, district) draws from its own Rng, so a load is
// deterministic and the order of the loops does not change the data.
#include <algorithm>
#include <array>
#include <ctime>
#include <numeric>

#include <fmt/format.h>

#include "workloads/tpcc/tpcc.h"
#include "workloads/tpcc/tpcc_random.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::workloads {

using namespace tpcc;

namespace {

Rng stream(uint32_t table, uint64_t w, uint64_t d) { return Rng((uint64_t{table} << 48) ^ (w << 8) ^ d ^ 0x79cc); }

template <size_t N>
using Row = std::array<uint8_t, N>;

void put_address(std::span<uint8_t> row, const Address& a, Rng& rng) {
  put(row, a.street1, alpha_string(rng, 10, 20));
  put(row, a.street2, alpha_string(rng, 10, 20));
  put(row, a.city, alpha_string(rng, 10, 20));
  put(row, a.state, alpha_string(rng, 2, 2));
  put(row, a.zip, zip_code(rng));
}

// Queues one row, naming the table on failure.
Status add(BulkLoader& loader, uint32_t table, uint64_t key, std::span<const uint8_t> row) {
  if (Status s = loader.add(table, key, row); !s) {
    return Status(s.code(), fmt::format("table {} key {:#x}: {}", table, key, s.message()));
  }
  return Status::ok();
}

}  // namespace

uint64_t TpccWorkload::load_last_name(Rng& rng, uint64_t c) {
  return c <= kLastNames ? c - 1 : nurand(rng, 255, 0, kLastNames - 1, kLoadConstants.last_name);
}

uint64_t TpccWorkload::initial_new_orders() const {
  return std::max<uint64_t>(1, options_.customers_per_district * kNewOrderPercent / 100);
}

int64_t TpccWorkload::initial_ytd() const {
  return initial_district_ytd_cents(options_.customers_per_district) * kDistrictsPerWarehouse *
         static_cast<int64_t>(options_.warehouses);
}

Status TpccWorkload::load(BulkLoader& loader) const {
  const auto now = static_cast<int64_t>(std::time(nullptr));
  const uint64_t customers = options_.customers_per_district;
  {
    Rng rng = stream(kItem, 0, 0);
    Row<kItemBytes> row{};
    for (uint64_t i = 1; i <= options_.items; ++i) {
      row.fill(0);
      put(row, item::kImageId, static_cast<int64_t>(between(rng, 1, 10000)));
      put(row, item::kName, alpha_string(rng, 14, 24));
      put(row, item::kPrice, static_cast<int64_t>(between(rng, 100, 10000)));
      put(row, item::kData, data_with_original(rng));
      if (Status s = add(loader, kItem, keys_.item(i), row); !s) return s;
    }
  }
  for (uint64_t w = 1; w <= options_.warehouses; ++w) {
    {
      Rng rng = stream(kWarehouse, w, 0);
      Row<kWarehouseBytes> row{};
      put(row, warehouse::kName, alpha_string(rng, 6, 10));
      put_address(row, warehouse::kAddress, rng);
      put(row, warehouse::kTax, static_cast<int64_t>(between(rng, 0, 2000)));
      put(row, warehouse::kYtd, initial_district_ytd_cents(customers) * kDistrictsPerWarehouse);
      if (Status s = add(loader, kWarehouse, keys_.warehouse(w), row); !s) return s;
    }
    {
      Rng rng = stream(kStock, w, 0);
      Row<kStockBytes> row{};
      for (uint64_t i = 1; i <= options_.items; ++i) {
        row.fill(0);
        put(row, stock::kQuantity, static_cast<int64_t>(between(rng, 10, 100)));
        for (const Chars& f : stock::kDist) put(row, f, alpha_string(rng, 24, 24));
        put(row, stock::kData, data_with_original(rng));
        if (Status s = add(loader, kStock, keys_.stock(w, i), row); !s) return s;
      }
    }
    for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      {
        Rng rng = stream(kDistrict, w, d);
        Row<kDistrictBytes> row{};
        put(row, district::kName, alpha_string(rng, 6, 10));
        put_address(row, district::kAddress, rng);
        put(row, district::kTax, static_cast<int64_t>(between(rng, 0, 2000)));
        put(row, district::kYtd, initial_district_ytd_cents(customers));
        put(row, district::kNextOrderId, static_cast<int64_t>(customers + 1));
        if (Status s = add(loader, kDistrict, keys_.district(w, d), row); !s) return s;
        Row<kDeliveryCursorBytes> cursor{};
        put(cursor, delivery_cursor::kOrderId, static_cast<int64_t>(first_undelivered()));
        if (Status s = add(loader, kDeliveryCursor, keys_.delivery_cursor(w, d), cursor); !s) return s;
      }
      // Customers, their history rows, and the last-name index.
      std::vector<std::vector<std::pair<std::string, uint16_t>>> by_name(kLastNames);
      {
        Rng rng = stream(kCustomer, w, d);
        Row<kCustomerBytes> row{};
        Row<kHistoryBytes> hist{};
        for (uint64_t c = 1; c <= customers; ++c) {
          row.fill(0);
          const uint64_t name = load_last_name(rng, c);
          std::string first = alpha_string(rng, 8, 16);
          put(row, customer::kFirst, first);
          put(row, customer::kMiddle, "OE");
          put(row, customer::kLast, last_name(static_cast<uint32_t>(name)));
          put_address(row, customer::kAddress, rng);
          put(row, customer::kPhone, numeric_string(rng, 16, 16));
          put(row, customer::kSince, now);
          put(row, customer::kCredit, rng.uniform(10) == 0 ? "BC" : "GC");
          put(row, customer::kCreditLimit, 5000000);
          put(row, customer::kDiscount, static_cast<int64_t>(between(rng, 0, 5000)));
          put(row, customer::kBalance, -kInitialPaymentCents);
          put(row, customer::kYtdPayment, kInitialPaymentCents);
          put(row, customer::kPaymentCount, 1);
          put(row, customer::kData, alpha_string(rng, 300, 500));
          if (Status s = add(loader, kCustomer, keys_.customer(w, d, c), row); !s) return s;
          by_name[name].emplace_back(std::move(first), static_cast<uint16_t>(c));

          hist.fill(0);
          put(hist, history::kCustomerId, static_cast<int64_t>(c));
          put(hist, history::kCustomerDistrict, static_cast<int64_t>(d));
          put(hist, history::kCustomerWarehouse, static_cast<int64_t>(w));
          put(hist, history::kDistrict, static_cast<int64_t>(d));
          put(hist, history::kWarehouse, static_cast<int64_t>(w));
          put(hist, history::kDate, now);
          put(hist, history::kAmount, kInitialPaymentCents);
          put(hist, history::kData, alpha_string(rng, 12, 24));
          if (Status s = add(loader, kHistory, history_key(w, d, c, 1), hist); !s) return s;
        }
      }
      for (uint64_t n = 0; n < kLastNames; ++n) {
        auto& ids = by_name[n];
        if (ids.empty()) continue;
        if (ids.size() > kNameIndexCapacity) {
          return Status(Errc::kInvalidArgument,
                        fmt::format("warehouse {} district {}: {} customers share last name {}, more than a "
                                    "customer-name row holds ({})",
                                    w, d, ids.size(), n, kNameIndexCapacity));
        }
        std::stable_sort(ids.begin(), ids.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        Row<kCustomerNameBytes> row{};
        put(row, customer_name::kCount, static_cast<int64_t>(ids.size()));
        for (size_t k = 0; k < ids.size(); ++k) put(row, customer_name::id(static_cast<uint32_t>(k)), ids[k].second);
        if (Status s = add(loader, kCustomerName, keys_.customer_name(w, d, n), row); !s) return s;
      }
      // Orders (O_C_ID a permutation of the customers), their lines, the
      // undelivered tail as new-orders, and every customer's last order.
      {
        Rng rng = stream(kOrder, w, d);
        std::vector<uint16_t> owner(customers);
        std::iota(owner.begin(), owner.end(), uint16_t{1});
        for (size_t k = owner.size(); k > 1; --k) std::swap(owner[k - 1], owner[rng.uniform(k)]);
        const uint64_t undelivered = first_undelivered();
        Row<kOrderBytes> ord{};
        Row<kOrderLineBytes> line{};
        Row<kNewOrderBytes> no{};
        Row<kLastOrderBytes> last{};
        for (uint64_t o = 1; o <= customers; ++o) {
          const bool delivered = o < undelivered;
          const auto lines = static_cast<int64_t>(between(rng, 5, kMaxOrderLines));
          ord.fill(0);
          put(ord, order::kOrderId, static_cast<int64_t>(o));
          put(ord, order::kDistrict, static_cast<int64_t>(d));
          put(ord, order::kWarehouse, static_cast<int64_t>(w));
          put(ord, order::kCustomerId, owner[o - 1]);
          put(ord, order::kEntryDate, now);
          put(ord, order::kCarrierId, delivered ? static_cast<int64_t>(between(rng, 1, 10)) : 0);
          put(ord, order::kLineCount, lines);
          put(ord, order::kAllLocal, 1);
          if (Status s = add(loader, kOrder, order_key(w, d, o), ord); !s) return s;
          for (int64_t ol = 1; ol <= lines; ++ol) {
            line.fill(0);
            put(line, order_line::kOrderId, static_cast<int64_t>(o));
            put(line, order_line::kDistrict, static_cast<int64_t>(d));
            put(line, order_line::kWarehouse, static_cast<int64_t>(w));
            put(line, order_line::kNumber, ol);
            put(line, order_line::kItemId, static_cast<int64_t>(between(rng, 1, options_.items)));
            put(line, order_line::kSupplyWarehouse, static_cast<int64_t>(w));
            put(line, order_line::kDeliveryDate, delivered ? now : 0);
            put(line, order_line::kQuantity, 5);
            put(line, order_line::kAmount, delivered ? 0 : static_cast<int64_t>(between(rng, 1, 999999)));
            put(line, order_line::kDistInfo, alpha_string(rng, 24, 24));
            if (Status s = add(loader, kOrderLine, order_line_key(w, d, o, static_cast<uint64_t>(ol)), line); !s) {
              return s;
            }
          }
          if (!delivered) {
            put(no, new_order::kOrderId, static_cast<int64_t>(o));
            put(no, new_order::kDistrict, static_cast<int64_t>(d));
            put(no, new_order::kWarehouse, static_cast<int64_t>(w));
            if (Status s = add(loader, kNewOrder, new_order_key(w, d, o), no); !s) return s;
          }
          put(last, last_order::kOrderId, static_cast<int64_t>(o));
          if (Status s = add(loader, kLastOrder, keys_.last_order(w, d, owner[o - 1]), last); !s) return s;
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace pandora::workloads
