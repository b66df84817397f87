// The five TPC-C transactions (clauses 2.4-2.8) on the Txn API.
//
// Every transaction is one Pandora transaction. A call that fails has
// already aborted it; abandon() closes the attempt. Outputs the
// specification asks a terminal to display are computed but not kept.
#include <algorithm>
#include <array>
#include <bitset>
#include <ctime>
#include <set>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "workloads/tpcc/tpcc.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::workloads {

using namespace tpcc;

namespace {

TxnOutcome abandon(Txn& txn, uint32_t type, AbortReason reason) {
  txn.abort();
  return TxnOutcome{CommitOutcome{false, reason, {}}, type, 0};
}

int64_t now_seconds() { return static_cast<int64_t>(std::time(nullptr)); }

int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }

// The run cannot go on without more table space: stop it, naming the flag.
[[noreturn]] void out_of_space(Txn& txn, const std::string& what) {
  txn.abort();
  throw std::runtime_error(fmt::format("tpcc: {}; raise --tpcc-max-orders-per-district (and --load again)", what));
}

}  // namespace

AbortReason TpccWorkload::find_customer(Txn& txn, const CustomerRef& c, uint64_t* id) const {
  if (!c.by_name) {
    *id = c.customer;
    return AbortReason::kNone;
  }
  auto row = txn.read(kCustomerName, keys_.customer_name(c.w, c.d, c.customer));
  if (!row) return row.reason();
  const int64_t n = get(*row, customer_name::kCount);
  if (n <= 0 || n > static_cast<int64_t>(kNameIndexCapacity)) return AbortReason::kNotFound;
  // Clause 2.5.2.2: sorted by C_FIRST, the one at position ceil(n/2).
  *id = static_cast<uint64_t>(get(*row, customer_name::id(static_cast<uint32_t>((n - 1) / 2))));
  return AbortReason::kNone;
}

TxnOutcome TpccWorkload::new_order(Txn& txn, uint64_t w, uint64_t d, uint64_t c,
                                   const std::vector<OrderItem>& items) const {
  txn.begin();
  auto wh = txn.read(kWarehouse, keys_.warehouse(w));
  if (!wh) return abandon(txn, kTxnNewOrder, wh.reason());
  auto di = txn.update(kDistrict, keys_.district(w, d));
  if (!di) return abandon(txn, kTxnNewOrder, di.reason());
  const int64_t o = get(*di, district::kNextOrderId);
  if (static_cast<uint64_t>(o) > options_.max_orders_per_district) {
    out_of_space(txn, fmt::format("district {} of warehouse {} has used its {} order ids", d, w,
                                  options_.max_orders_per_district));
  }
  put(*di, district::kNextOrderId, o + 1);
  auto cu = txn.read(kCustomer, keys_.customer(w, d, c));
  if (!cu) return abandon(txn, kTxnNewOrder, cu.reason());
  const int64_t discount = get(*cu, customer::kDiscount);

  const int64_t now = now_seconds();
  const bool all_local =
      std::all_of(items.begin(), items.end(), [w](const OrderItem& it) { return it.supply_warehouse == w; });
  std::array<uint8_t, kOrderBytes> ord{};
  put(ord, order::kOrderId, o);
  put(ord, order::kDistrict, i64(d));
  put(ord, order::kWarehouse, i64(w));
  put(ord, order::kCustomerId, i64(c));
  put(ord, order::kEntryDate, now);
  put(ord, order::kLineCount, i64(items.size()));
  put(ord, order::kAllLocal, all_local ? 1 : 0);
  const uint64_t ok = order_key(w, d, static_cast<uint64_t>(o));
  if (AbortReason r = txn.insert(kOrder, ok, ord); r != AbortReason::kNone) return abandon(txn, kTxnNewOrder, r);
  std::array<uint8_t, kNewOrderBytes> no{};
  put(no, new_order::kOrderId, o);
  put(no, new_order::kDistrict, i64(d));
  put(no, new_order::kWarehouse, i64(w));
  if (AbortReason r = txn.insert(kNewOrder, ok, no); r != AbortReason::kNone) return abandon(txn, kTxnNewOrder, r);
  std::array<uint8_t, kLastOrderBytes> last{};
  put(last, last_order::kOrderId, o);
  if (AbortReason r = txn.write(kLastOrder, keys_.last_order(w, d, c), last); r != AbortReason::kNone) {
    return abandon(txn, kTxnNewOrder, r);
  }

  int64_t total = 0;
  std::array<uint8_t, kOrderLineBytes> line{};
  for (size_t k = 0; k < items.size(); ++k) {
    const OrderItem& it = items[k];
    auto item_row = txn.read(kItem, keys_.item(it.item));
    if (!item_row) {
      // Clause 2.4.2.3: an unused item id rolls the order back.
      const bool expected = item_row.reason() == AbortReason::kNotFound && it.item > options_.items;
      return abandon(txn, kTxnNewOrder, expected ? AbortReason::kUser : item_row.reason());
    }
    const int64_t price = get(*item_row, item::kPrice);
    auto st = txn.update(kStock, keys_.stock(it.supply_warehouse, it.item));
    if (!st) return abandon(txn, kTxnNewOrder, st.reason());
    const auto qty = i64(it.quantity);
    const int64_t s_qty = get(*st, stock::kQuantity);
    put(*st, stock::kQuantity, s_qty >= qty + 10 ? s_qty - qty : s_qty - qty + 91);
    put(*st, stock::kYtd, get(*st, stock::kYtd) + qty);
    put(*st, stock::kOrderCount, get(*st, stock::kOrderCount) + 1);
    if (it.supply_warehouse != w) put(*st, stock::kRemoteCount, get(*st, stock::kRemoteCount) + 1);
    const int64_t amount = qty * price;
    total += amount;
    line.fill(0);
    put(line, order_line::kOrderId, o);
    put(line, order_line::kDistrict, i64(d));
    put(line, order_line::kWarehouse, i64(w));
    put(line, order_line::kNumber, i64(k + 1));
    put(line, order_line::kItemId, i64(it.item));
    put(line, order_line::kSupplyWarehouse, i64(it.supply_warehouse));
    put(line, order_line::kQuantity, qty);
    put(line, order_line::kAmount, amount);
    put(line, order_line::kDistInfo, get(*st, stock::kDist[d - 1]));
    if (AbortReason r = txn.insert(kOrderLine, order_line_key(w, d, static_cast<uint64_t>(o), k + 1), line);
        r != AbortReason::kNone) {
      return abandon(txn, kTxnNewOrder, r);
    }
  }
  // The total the terminal would show: sum * (1 - discount) * (1 + taxes).
  (void)(total * (10000 - discount) *
         (10000 + get(*wh, warehouse::kTax) + get(*di, district::kTax)));
  return TxnOutcome{txn.commit(), kTxnNewOrder, 0};
}

TxnOutcome TpccWorkload::payment(Txn& txn, uint64_t w, uint64_t d, const CustomerRef& c, int64_t amount) const {
  txn.begin();
  auto wh = txn.update(kWarehouse, keys_.warehouse(w));
  if (!wh) return abandon(txn, kTxnPayment, wh.reason());
  put(*wh, warehouse::kYtd, get(*wh, warehouse::kYtd) + amount);
  auto di = txn.update(kDistrict, keys_.district(w, d));
  if (!di) return abandon(txn, kTxnPayment, di.reason());
  put(*di, district::kYtd, get(*di, district::kYtd) + amount);
  uint64_t id = 0;
  if (AbortReason r = find_customer(txn, c, &id); r != AbortReason::kNone) return abandon(txn, kTxnPayment, r);
  auto cu = txn.update(kCustomer, keys_.customer(c.w, c.d, id));
  if (!cu) return abandon(txn, kTxnPayment, cu.reason());
  put(*cu, customer::kBalance, get(*cu, customer::kBalance) - amount);
  put(*cu, customer::kYtdPayment, get(*cu, customer::kYtdPayment) + amount);
  const int64_t seq = get(*cu, customer::kPaymentCount) + 1;
  if (static_cast<uint64_t>(seq) > kMaxHistorySeq) {
    out_of_space(txn, fmt::format("customer {} of district {} warehouse {} made {} payments, the most a history key "
                                  "numbers",
                                  id, c.d, c.w, kMaxHistorySeq));
  }
  put(*cu, customer::kPaymentCount, seq);
  if (get(*cu, customer::kCredit) == "BC") {
    // Clause 2.5.2.2: bad credit keeps a trail of payments in C_DATA.
    std::string data = fmt::format("{} {} {} {} {} {}.{:02}|", id, c.d, c.w, d, w, amount / 100, amount % 100);
    data += get(*cu, customer::kData);
    put(*cu, customer::kData, data);
  }
  std::array<uint8_t, kHistoryBytes> h{};
  put(h, history::kCustomerId, i64(id));
  put(h, history::kCustomerDistrict, i64(c.d));
  put(h, history::kCustomerWarehouse, i64(c.w));
  put(h, history::kDistrict, i64(d));
  put(h, history::kWarehouse, i64(w));
  put(h, history::kDate, now_seconds());
  put(h, history::kAmount, amount);
  put(h, history::kData, fmt::format("{}    {}", get(*wh, warehouse::kName), get(*di, district::kName)));
  if (AbortReason r = txn.insert(kHistory, history_key(c.w, c.d, id, static_cast<uint64_t>(seq)), h);
      r != AbortReason::kNone) {
    return abandon(txn, kTxnPayment, r);
  }
  return TxnOutcome{txn.commit(), kTxnPayment, amount};
}

TxnOutcome TpccWorkload::order_status(Txn& txn, const CustomerRef& c) const {
  txn.begin();
  uint64_t id = 0;
  if (AbortReason r = find_customer(txn, c, &id); r != AbortReason::kNone) return abandon(txn, kTxnOrderStatus, r);
  auto cu = txn.read(kCustomer, keys_.customer(c.w, c.d, id));
  if (!cu) return abandon(txn, kTxnOrderStatus, cu.reason());
  auto last = txn.read(kLastOrder, keys_.last_order(c.w, c.d, id));
  if (!last) return abandon(txn, kTxnOrderStatus, last.reason());
  const auto o = static_cast<uint64_t>(get(*last, last_order::kOrderId));
  auto ord = txn.read(kOrder, order_key(c.w, c.d, o));
  if (!ord) return abandon(txn, kTxnOrderStatus, ord.reason());
  const int64_t lines = get(*ord, order::kLineCount);
  for (int64_t ol = 1; ol <= lines; ++ol) {
    auto line = txn.read(kOrderLine, order_line_key(c.w, c.d, o, static_cast<uint64_t>(ol)));
    if (!line) return abandon(txn, kTxnOrderStatus, line.reason());
  }
  return TxnOutcome{txn.commit(), kTxnOrderStatus, 0};
}

TxnOutcome TpccWorkload::delivery(Txn& txn, uint64_t w, uint64_t carrier) const {
  // Districts found without an undelivered order: each restart adds one,
  // so at most kDistrictsPerWarehouse + 1 attempts.
  std::bitset<kDistrictsPerWarehouse + 1> empty;
  for (;;) {
    txn.begin();
    std::vector<std::pair<uint64_t, uint64_t>> picked;  // (district, order)
    bool restart = false;
    for (uint64_t d = 1; d <= kDistrictsPerWarehouse && !restart; ++d) {
      if (empty[d]) continue;
      auto cursor = txn.update(kDeliveryCursor, keys_.delivery_cursor(w, d));
      if (!cursor) return abandon(txn, kTxnDelivery, cursor.reason());
      const int64_t o = get(*cursor, delivery_cursor::kOrderId);
      const AbortReason r = txn.remove(kNewOrder, new_order_key(w, d, static_cast<uint64_t>(o)));
      if (r == AbortReason::kNotFound) {
        // Clause 2.7.4.2: no undelivered order; this district is skipped.
        txn.abort();
        empty[d] = true;
        restart = true;
        break;
      }
      if (r != AbortReason::kNone) return abandon(txn, kTxnDelivery, r);
      put(*cursor, delivery_cursor::kOrderId, o + 1);
      picked.emplace_back(d, static_cast<uint64_t>(o));
    }
    if (restart) continue;
    const int64_t now = now_seconds();
    for (auto [d, o] : picked) {
      auto ord = txn.update(kOrder, order_key(w, d, o));
      if (!ord) return abandon(txn, kTxnDelivery, ord.reason());
      put(*ord, order::kCarrierId, i64(carrier));
      const auto c = static_cast<uint64_t>(get(*ord, order::kCustomerId));
      const int64_t lines = get(*ord, order::kLineCount);
      int64_t sum = 0;
      for (int64_t ol = 1; ol <= lines; ++ol) {
        auto line = txn.update(kOrderLine, order_line_key(w, d, o, static_cast<uint64_t>(ol)));
        if (!line) return abandon(txn, kTxnDelivery, line.reason());
        sum += get(*line, order_line::kAmount);
        put(*line, order_line::kDeliveryDate, now);
      }
      auto cu = txn.update(kCustomer, keys_.customer(w, d, c));
      if (!cu) return abandon(txn, kTxnDelivery, cu.reason());
      put(*cu, customer::kBalance, get(*cu, customer::kBalance) + sum);
      put(*cu, customer::kDeliveryCount, get(*cu, customer::kDeliveryCount) + 1);
    }
    return TxnOutcome{txn.commit(), kTxnDelivery, 0};
  }
}

TxnOutcome TpccWorkload::stock_level(Txn& txn, uint64_t w, uint64_t d, int64_t threshold,
                                     uint64_t* low_stock) const {
  txn.begin();
  auto di = txn.read(kDistrict, keys_.district(w, d));
  if (!di) return abandon(txn, kTxnStockLevel, di.reason());
  const auto next = static_cast<uint64_t>(get(*di, district::kNextOrderId));
  const uint64_t first = next > 20 ? next - 20 : 1;
  std::set<uint64_t> items;
  for (uint64_t o = first; o < next; ++o) {
    auto ord = txn.read(kOrder, order_key(w, d, o));
    if (!ord) return abandon(txn, kTxnStockLevel, ord.reason());
    const int64_t lines = get(*ord, order::kLineCount);
    for (int64_t ol = 1; ol <= lines; ++ol) {
      auto line = txn.read(kOrderLine, order_line_key(w, d, o, static_cast<uint64_t>(ol)));
      if (!line) return abandon(txn, kTxnStockLevel, line.reason());
      items.insert(static_cast<uint64_t>(get(*line, order_line::kItemId)));
    }
  }
  uint64_t low = 0;
  for (uint64_t i : items) {
    auto st = txn.read(kStock, keys_.stock(w, i));
    if (!st) return abandon(txn, kTxnStockLevel, st.reason());
    if (get(*st, stock::kQuantity) < threshold) ++low;
  }
  const CommitOutcome out = txn.commit();
  if (out.committed && low_stock) *low_stock = low;
  return TxnOutcome{out, kTxnStockLevel, 0};
}

}  // namespace pandora::workloads
