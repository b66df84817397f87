// TPC-C's tables as Pandora tables: ids, value sizes, 64-bit keys packed
// from the composite primary keys, and the byte layout of every row.
//
// Value sizes are the row sizes of the TPC-C specification (clause 1.3 /
// 4.2.2, "typical" bytes per row):
//
//   id  table        bytes   primary key (bit fields, most significant first)
//   20  warehouse      89    w:16
//   21  district       95    w:16 d:4
//   22  customer      655    w:16 d:4 c:12
//   23  history        46    w:16 d:4 c:12 seq:16   (seq = C_PAYMENT_CNT after the payment)
//   24  new-order       8    w:16 d:4 o:32
//   25  order          24    w:16 d:4 o:32
//   26  order-line     54    w:16 d:4 o:32 ol:4
//   27  item           82    i:20
//   28  stock         306    w:16 i:20
// and three small tables the key-value model needs where SQL would use an
// index or a query:
//   29  customer-name  224   w:16 d:4 name:10  (customer ids with that last name, sorted by C_FIRST)
//   30  last-order       8   w:16 d:4 c:12     (the customer's most recent O_ID)
//   31  delivery-cursor  8   w:16 d:4          (oldest undelivered O_ID of the district)
//
// Growing tables use these bits as the key; static tables a scramble of the
// row's index (StaticKeys below). Ranges (checked by TpccWorkload::create): w 1..65535, d 1..10, c 1..4095,
// o 1..2^32-1, ol 1..15, i 1..2^20-1, seq 1..65535, name 0..999. History has
// no primary key in the specification; (customer, its payment count) is
// unique because Payment increments C_PAYMENT_CNT with the customer latched.
//
// A row is a fixed-size byte array. Numbers are little-endian two's
// complement integers of the width the field needs (money in cents, rates in
// 1/10000, dates in seconds since the epoch, 0 = null); strings are
// zero-padded byte arrays. Key columns live only in the key, except in
// new-order, order and order-line, whose rows repeat them (the spec's row
// sizes leave room, and the audit checks them against the key).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "pandora/table.h"

namespace pandora::workloads::tpcc {

// ---- tables -----------------------------------------------------------------

inline constexpr uint32_t kWarehouse = 20;
inline constexpr uint32_t kDistrict = 21;
inline constexpr uint32_t kCustomer = 22;
inline constexpr uint32_t kHistory = 23;
inline constexpr uint32_t kNewOrder = 24;
inline constexpr uint32_t kOrder = 25;
inline constexpr uint32_t kOrderLine = 26;
inline constexpr uint32_t kItem = 27;
inline constexpr uint32_t kStock = 28;
inline constexpr uint32_t kCustomerName = 29;
inline constexpr uint32_t kLastOrder = 30;
inline constexpr uint32_t kDeliveryCursor = 31;

inline constexpr uint32_t kWarehouseBytes = 89;
inline constexpr uint32_t kDistrictBytes = 95;
inline constexpr uint32_t kCustomerBytes = 655;
inline constexpr uint32_t kHistoryBytes = 46;
inline constexpr uint32_t kNewOrderBytes = 8;
inline constexpr uint32_t kOrderBytes = 24;
inline constexpr uint32_t kOrderLineBytes = 54;
inline constexpr uint32_t kItemBytes = 82;
inline constexpr uint32_t kStockBytes = 306;
inline constexpr uint32_t kNameIndexCapacity = 111;  // customer ids one customer-name row holds
inline constexpr uint32_t kCustomerNameBytes = 2 + 2 * kNameIndexCapacity;
inline constexpr uint32_t kLastOrderBytes = 8;
inline constexpr uint32_t kDeliveryCursorBytes = 8;

inline constexpr uint32_t kDistrictsPerWarehouse = 10;
inline constexpr uint32_t kMaxOrderLines = 15;
inline constexpr uint32_t kLastNames = 1000;

// ---- keys -------------------------------------------------------------------

inline constexpr uint64_t kMaxWarehouse = (1u << 16) - 1;
inline constexpr uint64_t kMaxCustomer = (1u << 12) - 1;
inline constexpr uint64_t kMaxItem = (1u << 20) - 1;
inline constexpr uint64_t kMaxOrder = (uint64_t{1} << 32) - 1;
inline constexpr uint64_t kMaxHistorySeq = (1u << 16) - 1;

// Growing tables (rows inserted by transactions): the packed bits are the key.
constexpr uint64_t district_bits(uint64_t w, uint64_t d) { return w << 4 | d; }
constexpr uint64_t customer_bits(uint64_t w, uint64_t d, uint64_t c) { return district_bits(w, d) << 12 | c; }
constexpr uint64_t history_key(uint64_t w, uint64_t d, uint64_t c, uint64_t seq) {
  return customer_bits(w, d, c) << 16 | seq;
}
constexpr uint64_t order_key(uint64_t w, uint64_t d, uint64_t o) { return district_bits(w, d) << 32 | o; }
constexpr uint64_t new_order_key(uint64_t w, uint64_t d, uint64_t o) { return order_key(w, d, o); }
constexpr uint64_t order_line_key(uint64_t w, uint64_t d, uint64_t o, uint64_t ol) {
  return order_key(w, d, o) << 4 | ol;
}

// Static tables (rows only loaded, never inserted or removed): the key is
// pandora::dense_key of the row's dense index (0 .. rows-1, in the bit
// order above), which sends row n to bucket n % bucket_count. With the
// tables' load factor of 1/2 every bucket then gets at most half its slots
// filled and no probe path ever overflows. Why: a probe path is 8 buckets
// of about 1 KiB, so rows of 342+ bytes (stock: 2 per bucket, customer: 1)
// overflow random 8-slot paths at load factor 1/2 (a 30000-row customer
// table failed in most simulated loads).

class StaticKeys {
 public:
  StaticKeys(uint64_t warehouses, uint64_t items, uint64_t customers)
      : items_(items), customers_(customers), names_(customers < kLastNames ? customers : kLastNames) {
    (void)warehouses;
  }
  uint64_t warehouse(uint64_t w) const { return dense_key(kWarehouse, w - 1); }
  uint64_t district(uint64_t w, uint64_t d) const { return dense_key(kDistrict, district_index(w, d)); }
  uint64_t customer(uint64_t w, uint64_t d, uint64_t c) const {
    return dense_key(kCustomer, customer_index(w, d, c));
  }
  uint64_t item(uint64_t i) const { return dense_key(kItem, i - 1); }
  uint64_t stock(uint64_t w, uint64_t i) const { return dense_key(kStock, (w - 1) * items_ + i - 1); }
  uint64_t customer_name(uint64_t w, uint64_t d, uint64_t name) const {
    return dense_key(kCustomerName, district_index(w, d) * names_ + name);
  }
  uint64_t last_order(uint64_t w, uint64_t d, uint64_t c) const {
    return dense_key(kLastOrder, customer_index(w, d, c));
  }
  uint64_t delivery_cursor(uint64_t w, uint64_t d) const {
    return dense_key(kDeliveryCursor, district_index(w, d));
  }

 private:
  static uint64_t district_index(uint64_t w, uint64_t d) { return (w - 1) * kDistrictsPerWarehouse + d - 1; }
  uint64_t customer_index(uint64_t w, uint64_t d, uint64_t c) const {
    return district_index(w, d) * customers_ + c - 1;
  }
  uint64_t items_, customers_, names_;
};

// ---- fields -----------------------------------------------------------------

// A little-endian signed integer of `bytes` (1..8) at `off`.
struct Int {
  uint16_t off;
  uint16_t bytes;
};
// A zero-padded string of at most `bytes` at `off`.
struct Chars {
  uint16_t off;
  uint16_t bytes;
};
template <typename F>
constexpr uint16_t end_of(F f) {
  return static_cast<uint16_t>(f.off + f.bytes);
}

inline int64_t get(std::span<const uint8_t> row, Int f) {
  uint64_t v = 0;
  std::memcpy(&v, row.data() + f.off, f.bytes);
  const int shift = 64 - 8 * f.bytes;
  return static_cast<int64_t>(v << shift) >> shift;  // sign-extend
}
inline void put(std::span<uint8_t> row, Int f, int64_t v) { std::memcpy(row.data() + f.off, &v, f.bytes); }
// Whether `v` survives put() into `f` (used for counters that grow in a run).
inline bool fits(Int f, int64_t v) {
  if (f.bytes >= 8) return true;
  const int64_t lim = int64_t{1} << (8 * f.bytes - 1);
  return v >= -lim && v < lim;
}
inline std::string_view get(std::span<const uint8_t> row, Chars f) {
  const auto* p = reinterpret_cast<const char*>(row.data() + f.off);
  return std::string_view(p, strnlen(p, f.bytes));
}
inline void put(std::span<uint8_t> row, Chars f, std::string_view s) {
  const size_t n = s.size() < f.bytes ? s.size() : f.bytes;
  std::memcpy(row.data() + f.off, s.data(), n);
  std::memset(row.data() + f.off + n, 0, f.bytes - n);
}

// The address block warehouse, district and customer share.
struct Address {
  Chars street1, street2, city, state, zip;
};
constexpr Address address_at(uint16_t off) {
  return {{off, 20}, {static_cast<uint16_t>(off + 20), 20}, {static_cast<uint16_t>(off + 40), 20},
          {static_cast<uint16_t>(off + 60), 2}, {static_cast<uint16_t>(off + 62), 9}};
}
inline constexpr uint16_t kAddressBytes = 71;

namespace warehouse {
inline constexpr Chars kName{0, 10};
inline constexpr Address kAddress = address_at(end_of(kName));
inline constexpr Int kTax{end_of(kAddress.zip), 2};  // 1/10000
inline constexpr Int kYtd{end_of(kTax), 6};          // cents
static_assert(end_of(kYtd) <= kWarehouseBytes);
}  // namespace warehouse

namespace district {
inline constexpr Chars kName{0, 10};
inline constexpr Address kAddress = address_at(end_of(kName));
inline constexpr Int kTax{end_of(kAddress.zip), 2};
inline constexpr Int kYtd{end_of(kTax), 6};
inline constexpr Int kNextOrderId{end_of(kYtd), 4};
static_assert(end_of(kNextOrderId) <= kDistrictBytes);
}  // namespace district

namespace customer {
inline constexpr Chars kFirst{0, 16};
inline constexpr Chars kMiddle{end_of(kFirst), 2};
inline constexpr Chars kLast{end_of(kMiddle), 16};
inline constexpr Address kAddress = address_at(end_of(kLast));
inline constexpr Chars kPhone{end_of(kAddress.zip), 16};
inline constexpr Int kSince{end_of(kPhone), 4};
inline constexpr Chars kCredit{end_of(kSince), 2};  // "GC" or "BC"
inline constexpr Int kCreditLimit{end_of(kCredit), 4};
inline constexpr Int kDiscount{end_of(kCreditLimit), 2};
inline constexpr Int kBalance{end_of(kDiscount), 6};
inline constexpr Int kYtdPayment{end_of(kBalance), 6};
inline constexpr Int kPaymentCount{end_of(kYtdPayment), 4};
inline constexpr Int kDeliveryCount{end_of(kPaymentCount), 4};
inline constexpr Chars kData{end_of(kDeliveryCount), 500};
static_assert(end_of(kData) <= kCustomerBytes);
}  // namespace customer

namespace history {
inline constexpr Int kCustomerId{0, 2};
inline constexpr Int kCustomerDistrict{end_of(kCustomerId), 1};
inline constexpr Int kCustomerWarehouse{end_of(kCustomerDistrict), 2};
inline constexpr Int kDistrict{end_of(kCustomerWarehouse), 1};
inline constexpr Int kWarehouse{end_of(kDistrict), 2};
inline constexpr Int kDate{end_of(kWarehouse), 4};
inline constexpr Int kAmount{end_of(kDate), 4};
inline constexpr Chars kData{end_of(kAmount), 24};
static_assert(end_of(kData) <= kHistoryBytes);
}  // namespace history

namespace new_order {
inline constexpr Int kOrderId{0, 4};
inline constexpr Int kDistrict{end_of(kOrderId), 1};
inline constexpr Int kWarehouse{end_of(kDistrict), 2};
static_assert(end_of(kWarehouse) <= kNewOrderBytes);
}  // namespace new_order

namespace order {
inline constexpr Int kOrderId{0, 4};
inline constexpr Int kDistrict{end_of(kOrderId), 1};
inline constexpr Int kWarehouse{end_of(kDistrict), 2};
inline constexpr Int kCustomerId{end_of(kWarehouse), 2};
inline constexpr Int kEntryDate{end_of(kCustomerId), 4};
inline constexpr Int kCarrierId{end_of(kEntryDate), 1};  // 0 = null (not delivered)
inline constexpr Int kLineCount{end_of(kCarrierId), 1};
inline constexpr Int kAllLocal{end_of(kLineCount), 1};
static_assert(end_of(kAllLocal) <= kOrderBytes);
}  // namespace order

namespace order_line {
inline constexpr Int kOrderId{0, 4};
inline constexpr Int kDistrict{end_of(kOrderId), 1};
inline constexpr Int kWarehouse{end_of(kDistrict), 2};
inline constexpr Int kNumber{end_of(kWarehouse), 1};
inline constexpr Int kItemId{end_of(kNumber), 4};
inline constexpr Int kSupplyWarehouse{end_of(kItemId), 2};
inline constexpr Int kDeliveryDate{end_of(kSupplyWarehouse), 4};  // 0 = null
inline constexpr Int kQuantity{end_of(kDeliveryDate), 1};
inline constexpr Int kAmount{end_of(kQuantity), 4};
inline constexpr Chars kDistInfo{end_of(kAmount), 24};
static_assert(end_of(kDistInfo) <= kOrderLineBytes);
}  // namespace order_line

namespace item {
inline constexpr Int kImageId{0, 4};
inline constexpr Chars kName{end_of(kImageId), 24};
inline constexpr Int kPrice{end_of(kName), 4};
inline constexpr Chars kData{end_of(kPrice), 50};
static_assert(end_of(kData) <= kItemBytes);
}  // namespace item

namespace stock {
inline constexpr Int kQuantity{0, 2};
inline constexpr Chars kDist[kDistrictsPerWarehouse] = {{2, 24},   {26, 24},  {50, 24},  {74, 24},  {98, 24},
                                                        {122, 24}, {146, 24}, {170, 24}, {194, 24}, {218, 24}};
inline constexpr Int kYtd{end_of(kDist[9]), 4};
inline constexpr Int kOrderCount{end_of(kYtd), 4};
inline constexpr Int kRemoteCount{end_of(kOrderCount), 4};
inline constexpr Chars kData{end_of(kRemoteCount), 50};
static_assert(end_of(kData) <= kStockBytes);
}  // namespace stock

namespace customer_name {
inline constexpr Int kCount{0, 2};
// The i-th customer id (0-based), in C_FIRST order.
constexpr Int id(uint32_t i) { return Int{static_cast<uint16_t>(2 + 2 * i), 2}; }
static_assert(end_of(id(kNameIndexCapacity - 1)) <= kCustomerNameBytes);
}  // namespace customer_name

namespace last_order {
inline constexpr Int kOrderId{0, 4};
}  // namespace last_order

namespace delivery_cursor {
inline constexpr Int kOrderId{0, 4};  // oldest undelivered order; D_NEXT_O_ID when none
}  // namespace delivery_cursor

}  // namespace pandora::workloads::tpcc
