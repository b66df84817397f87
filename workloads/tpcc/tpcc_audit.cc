// The TPC-C audit: everything read through read-only transactions
// (a Session), nothing below the transaction API.
//
// The consistency conditions of clause 3.3.2 (money in integer cents,
// compared exactly):
//   1  W_YTD = sum(D_YTD)
//   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
//   3  max(NO_O_ID) - min(NO_O_ID) + 1 = new-order rows of the district
//   4  sum(O_OL_CNT) = order-line rows of the district
//   5  O_CARRIER_ID is null iff the order has a new-order row
//   6  O_OL_CNT = order-line rows of the order
//   7  OL_DELIVERY_D is null iff the order's O_CARRIER_ID is
//   8  W_YTD = sum(H_AMOUNT) of the history rows with H_W_ID = W_ID
//   9  D_YTD = sum(H_AMOUNT) of the history rows with (H_W_ID, H_D_ID) = (W_ID, D_ID)
//  10  C_BALANCE = sum(OL_AMOUNT) of the customer's delivered order lines
//                  (OL_DELIVERY_D not null) - sum(H_AMOUNT) of its history rows
//  11  count(orders) - count(new-orders) of a district = its initially
//      delivered orders + sum(C_DELIVERY_CNT) of its customers (see below)
//  12  C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT) of the customer's delivered
//      order lines
// A key-value store cannot list a table, so "the rows of the district" are
// the rows of the keys the district can hold: orders and new-orders 1 ..
// D_NEXT_O_ID (the one at D_NEXT_O_ID must be absent), order lines 1 ..
// O_OL_CNT + 1 of each order (the one past the count must be absent),
// customers 1 .. --tpcc-customers-per-district and history rows 1 ..
// C_PAYMENT_CNT + 1 of each (history is keyed by the customer and its
// payment count; the one past the count must be absent). Rows under other
// keys are not seen. New-order rows must be exactly [delivery cursor,
// D_NEXT_O_ID), which gives conditions 2 and 3. Rows must also repeat their
// key's ids. Keys are probed with read_if_present, so a missing row hides
// none of its neighbours: counts and sums are over the rows that exist, as
// the specification's queries would compute them, and a missing row is
// reported both by itself and through each condition it breaks.
//
// Conditions 8 and 9 select history by H_W_ID / H_D_ID, the warehouse and
// district paid, but a key names the customer who paid, and a remote
// payment (15% when warehouses > 1) pays warehouse W through a customer of
// another. So the audit adds each row's H_AMOUNT to the district its row
// names while it reads every customer of every warehouse, and compares W_YTD
// and D_YTD after the last warehouse. Condition 10 attributes history rows
// to customers by key (the row's H_C_* must match it).
//
// The loader (tpcc_load.cc) gives each customer one payment of 10.00 (a
// history row, C_YTD_PAYMENT 10.00, C_BALANCE -10.00), delivered order lines
// OL_AMOUNT 0, and D_YTD = the district's customers x 10.00 (W_YTD the sum):
// the specification's 30,000.00 and 300,000.00 at its 3000 customers, and
// conditions 8-12 hold on a fresh load at any --tpcc-customers-per-district.
//
// Condition 11 as the specification writes it, count(orders) -
// count(new-orders) = 2100 (the orders loaded delivered), holds only until
// the first Delivery, which removes new-order rows but no order. Delivery
// adds 1 to the customer's C_DELIVERY_CNT (loaded 0) in the same
// transaction, so the audit checks count(orders) - count(new-orders) =
// (customers - initial new-orders) + sum(C_DELIVERY_CNT): the specification's
// equation (2100 at its scale) while no Delivery has run, and the one the
// transactions keep after.
//
// Cost: per order one transaction (the order, its lines, the line past
// O_OL_CNT, its new-order row), per customer one (the customer, up to 64
// history rows, the one past C_PAYMENT_CNT); about 480k reads in 60k
// transactions per loaded warehouse.
#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "workloads/tpcc/tpcc.h"
#include "workloads/tpcc/tpcc_schema.h"

namespace pandora::workloads {

using namespace tpcc;

namespace {

// Read-only transactions for the audit, retried a few times over a
// transient conflict (nothing else should run while it does).
class Reader {
 public:
  explicit Reader(Session& client) : client_(client) {}

  // Runs `body`; kNone when it committed, else the abort reason. A
  // transport failure is an error of the audit itself (error() says which).
  AbortReason run(const std::function<AbortReason(Txn&)>& body) {
    const CommitOutcome o = client_.transact_retry(body, 5);
    if (o.committed) return AbortReason::kNone;
    if (o.reason == AbortReason::kTransport && error_.empty()) error_ = o.detail.to_string();
    return o.reason;
  }
  const std::string& error() const { return error_; }

 private:
  Session& client_;
  std::string error_;
};

// History rows one transaction reads at most: a customer's payments are
// unbounded (up to 65535), a transaction's read set should not be.
constexpr uint64_t kHistoryBatch = 64;

struct DistrictState {
  int64_t ytd = 0;
  uint64_t next = 0;    // D_NEXT_O_ID
  uint64_t cursor = 0;  // oldest undelivered order
};

// What one district's orders add up to.
struct OrderTally {
  // Every order key was read: the counts and sums below are complete.
  bool complete = true;
  uint64_t orders = 0, new_orders = 0;  // rows found
  // By O_C_ID (1..customers): sum(OL_AMOUNT) of the lines with OL_DELIVERY_D set.
  std::vector<int64_t> delivered;
};

// H_AMOUNT by the district paid (H_W_ID, H_D_ID), for conditions 8 and 9.
class Payments {
 public:
  explicit Payments(uint64_t warehouses) : warehouses_(warehouses), paid_((warehouses + 1) * kStride, 0) {}
  // False when (w, d) is no district of the database.
  bool add(int64_t w, int64_t d, int64_t amount) {
    if (w < 1 || static_cast<uint64_t>(w) > warehouses_ || d < 1 || d > int64_t{kDistrictsPerWarehouse}) return false;
    paid_[at(static_cast<uint64_t>(w), 0)] += amount;
    paid_[at(static_cast<uint64_t>(w), static_cast<uint64_t>(d))] += amount;
    return true;
  }
  // d 0: the whole warehouse.
  int64_t paid(uint64_t w, uint64_t d) const { return paid_[at(w, d)]; }

 private:
  static constexpr uint64_t kStride = kDistrictsPerWarehouse + 1;
  static uint64_t at(uint64_t w, uint64_t d) { return w * kStride + d; }
  uint64_t warehouses_;
  std::vector<int64_t> paid_;
};

// Condition text for problems.
constexpr const char* kCond[] = {
    "",
    "condition 1 (W_YTD = sum(D_YTD))",
    "condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID))",
    "condition 3 (new-order rows = max(NO_O_ID) - min(NO_O_ID) + 1)",
    "condition 4 (sum(O_OL_CNT) = order-line rows)",
    "condition 5 (O_CARRIER_ID null iff a new-order row exists)",
    "condition 6 (O_OL_CNT = order lines of the order)",
    "condition 7 (OL_DELIVERY_D null iff O_CARRIER_ID null)",
    "condition 8 (W_YTD = sum(H_AMOUNT) paid to the warehouse)",
    "condition 9 (D_YTD = sum(H_AMOUNT) paid to the district)",
    "condition 10 (C_BALANCE = sum(OL_AMOUNT) delivered - sum(H_AMOUNT))",
    "condition 11 (count(ORDER) - count(NEW-ORDER) = orders loaded delivered + sum(C_DELIVERY_CNT))",
    "condition 12 (C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT) delivered)"};

// Reads district (w, d)'s orders, lines and new-orders (conditions 2-7)
// into `tally`. An error only when the audit itself failed.
Status audit_orders(Reader& reader, Audit& a, uint64_t w, uint64_t d, const DistrictState& s, OrderTally& tally) {
  const std::string where = fmt::format("warehouse {} district {}", w, d);
  const auto customers = static_cast<int64_t>(tally.delivered.size()) - 1;
  bool order_at_next = false, new_order_at_next = false;
  AbortReason r = reader.run([&](Txn& t) {
    auto ord = t.read_if_present(kOrder, order_key(w, d, s.next));
    if (!ord) return ord.reason();
    auto no = t.read_if_present(kNewOrder, new_order_key(w, d, s.next));
    if (!no) return no.reason();
    order_at_next = (*ord).has_value();
    new_order_at_next = (*no).has_value();
    return AbortReason::kNone;
  });
  if (!reader.error().empty()) return Status(Errc::kIo, reader.error());
  if (r != AbortReason::kNone) {
    a.problem(fmt::format("{}: reading order {} (= D_NEXT_O_ID) aborted ({})", where, s.next, abort_reason_name(r)));
    tally.complete = false;
  }
  if (order_at_next) {
    ++tally.orders;
    a.problem(fmt::format("{}: {} fails: order {} (= D_NEXT_O_ID) exists", where, kCond[2], s.next));
  }
  if (new_order_at_next) {
    ++tally.new_orders;
    a.problem(fmt::format("{}: {} fails: new-order {} (= D_NEXT_O_ID) exists", where, kCond[2], s.next));
  }

  uint64_t ol_cnt_sum = 0, ol_rows = 0;
  for (uint64_t o = 1; o < s.next; ++o) {
    const bool undelivered = o >= s.cursor;
    bool found = false, new_order = false, past_line = false;
    int64_t lines = 0, carrier = 0, customer = 0, delivered = 0;
    uint64_t found_lines = 0;
    std::vector<std::string> bad;
    r = reader.run([&](Txn& t) {
      found = new_order = past_line = false;
      found_lines = 0;
      delivered = 0;
      bad.clear();
      auto no = t.read_if_present(kNewOrder, new_order_key(w, d, o));
      if (!no) return no.reason();
      new_order = (*no).has_value();
      auto ord = t.read_if_present(kOrder, order_key(w, d, o));
      if (!ord) return ord.reason();
      if (!*ord) return AbortReason::kNone;
      found = true;
      lines = get(**ord, order::kLineCount);
      carrier = get(**ord, order::kCarrierId);
      customer = get(**ord, order::kCustomerId);
      if (get(**ord, order::kOrderId) != static_cast<int64_t>(o) ||
          get(**ord, order::kDistrict) != static_cast<int64_t>(d) ||
          get(**ord, order::kWarehouse) != static_cast<int64_t>(w)) {
        bad.push_back(fmt::format("order {} carries another order's ids", o));
      }
      // The line past O_OL_CNT is read like the others: if it exists it is
      // an order line of the order, and the spec's sums would include it.
      const int64_t probe = std::min<int64_t>(lines + 1, kMaxOrderLines);
      for (int64_t ol = 1; ol <= probe; ++ol) {
        auto line = t.read_if_present(kOrderLine, order_line_key(w, d, o, static_cast<uint64_t>(ol)));
        if (!line) return line.reason();
        const bool counted = ol <= lines;
        if (!*line) {
          if (counted) bad.push_back(fmt::format("order line {} of order {} ({} fails) is missing", ol, o, kCond[6]));
          continue;
        }
        if (!counted) past_line = true;
        ++found_lines;
        if (get(**line, order_line::kOrderId) != static_cast<int64_t>(o) || get(**line, order_line::kNumber) != ol) {
          bad.push_back(fmt::format("order line {} of order {} carries another line's ids", ol, o));
        }
        const bool line_delivered = get(**line, order_line::kDeliveryDate) != 0;
        if (counted && line_delivered != (carrier != 0)) {
          bad.push_back(fmt::format("order {} line {}: {} fails", o, ol, kCond[7]));
        }
        if (line_delivered) delivered += get(**line, order_line::kAmount);
      }
      return AbortReason::kNone;
    });
    if (!reader.error().empty()) return Status(Errc::kIo, reader.error());
    if (r != AbortReason::kNone) {
      a.problem(fmt::format("{}: reading order {} aborted ({})", where, o, abort_reason_name(r)));
      tally.complete = false;
      continue;
    }
    if (new_order) {
      ++a.rows;
      ++tally.new_orders;
      if (!undelivered) {
        a.problem(fmt::format("{}: {} fails: new-order {} (below the delivery cursor {}) exists", where, kCond[3], o,
                              s.cursor));
      }
    } else if (undelivered) {
      a.problem(fmt::format("{}: new-order {} (delivery cursor {}: {} fails) is missing", where, o, s.cursor,
                            kCond[3]));
    }
    if (!found) {
      a.problem(fmt::format("{}: order {} is missing", where, o));
      continue;
    }
    ++tally.orders;
    for (std::string& b : bad) a.problem(fmt::format("{}: {}", where, b));
    a.rows += 1 + found_lines;
    ol_cnt_sum += static_cast<uint64_t>(std::max<int64_t>(lines, 0));
    ol_rows += found_lines;
    if (lines < 5 || lines > static_cast<int64_t>(kMaxOrderLines)) {
      a.problem(fmt::format("{}: order {} has O_OL_CNT {} (5..15)", where, o, lines));
    }
    if ((carrier == 0) != undelivered) {
      a.problem(fmt::format("{}: order {}: {} fails: carrier {}, delivery cursor {}", where, o, kCond[5], carrier,
                            s.cursor));
    }
    if (past_line) {
      a.problem(fmt::format("{}: {} fails: order {} has a line {} past its O_OL_CNT {}", where, kCond[6], o,
                            lines + 1, lines));
    }
    if (customer >= 1 && customer <= customers) {
      tally.delivered[static_cast<size_t>(customer)] += delivered;
    } else {
      // Like an SQL join, its lines then belong to no customer.
      a.problem(fmt::format("{}: order {} names customer {}, not one of the district's 1..{}", where, o, customer,
                            customers));
    }
  }
  if (ol_cnt_sum != ol_rows) {
    a.problem(fmt::format("{}: {} fails: sum(O_OL_CNT) {} but {} order-line rows", where, kCond[4], ol_cnt_sum,
                          ol_rows));
  }
  return Status::ok();
}

// Reads the customers of district (w, d) and their history rows: checks
// conditions 10 and 12 per customer and 11 for the district against
// `orders`, and adds the history to `payments`. *all_history is cleared
// when some customer's history could not be read. An error only when the
// audit itself failed.
Status audit_customers(Reader& reader, Audit& a, const StaticKeys& keys, uint64_t w, uint64_t d,
                       uint64_t initially_delivered, const OrderTally& orders, Payments& payments,
                       bool* all_history) {
  const std::string where = fmt::format("warehouse {} district {}", w, d);
  const uint64_t customers = orders.delivered.size() - 1;
  bool all_customers = true;
  int64_t deliveries = 0;
  for (uint64_t c = 1; c <= customers; ++c) {
    const std::string who = fmt::format("{} customer {}", where, c);
    struct History {
      int64_t customer, customer_district, customer_warehouse, district, warehouse, amount;
    };
    // History rows `from`, from + 1, ... of one transaction; nullopt where absent.
    std::vector<std::optional<History>> batch;
    auto read_history = [&](Txn& t, uint64_t from, uint64_t to) {
      batch.clear();
      for (uint64_t seq = from; seq <= to; ++seq) {
        auto h = t.read_if_present(kHistory, history_key(w, d, c, seq));
        if (!h) return h.reason();
        if (!*h) {
          batch.emplace_back();
          continue;
        }
        batch.push_back(History{get(**h, history::kCustomerId), get(**h, history::kCustomerDistrict),
                                get(**h, history::kCustomerWarehouse), get(**h, history::kDistrict),
                                get(**h, history::kWarehouse), get(**h, history::kAmount)});
      }
      return AbortReason::kNone;
    };
    bool found = false;
    int64_t balance = 0, ytd_payment = 0, payment_count = 0, delivery_count = 0;
    uint64_t last = 0;  // the last history key to read: C_PAYMENT_CNT + 1, which must be absent
    AbortReason r = reader.run([&](Txn& t) {
      batch.clear();
      last = 0;
      auto cu = t.read_if_present(kCustomer, keys.customer(w, d, c));
      if (!cu) return cu.reason();
      found = (*cu).has_value();
      if (!found) return AbortReason::kNone;
      balance = get(**cu, customer::kBalance);
      ytd_payment = get(**cu, customer::kYtdPayment);
      payment_count = get(**cu, customer::kPaymentCount);
      delivery_count = get(**cu, customer::kDeliveryCount);
      if (payment_count < 0 || static_cast<uint64_t>(payment_count) > kMaxHistorySeq) return AbortReason::kNone;
      // At 65535 payments the key has no room for one more.
      last = std::min<uint64_t>(static_cast<uint64_t>(payment_count) + 1, kMaxHistorySeq);
      return read_history(t, 1, std::min(last, kHistoryBatch));
    });
    if (!reader.error().empty()) return Status(Errc::kIo, reader.error());
    if (r != AbortReason::kNone || !found) {
      a.problem(r != AbortReason::kNone
                    ? fmt::format("{}: reading it aborted ({})", who, abort_reason_name(r))
                    : fmt::format("{} is missing", who));
      all_customers = false;
      *all_history = false;
      continue;
    }
    ++a.rows;
    deliveries += delivery_count;
    bool history_read = true;
    if (last == 0) {
      a.problem(fmt::format("{}: C_PAYMENT_CNT {} is out of range (0..{})", who, payment_count, kMaxHistorySeq));
      history_read = false;
    }
    int64_t paid = 0;
    for (uint64_t from = 1; history_read && from <= last; from += kHistoryBatch) {
      if (from > 1) {
        r = reader.run([&](Txn& t) { return read_history(t, from, std::min(last, from + kHistoryBatch - 1)); });
        if (!reader.error().empty()) return Status(Errc::kIo, reader.error());
        if (r != AbortReason::kNone) {
          a.problem(fmt::format("{}: reading history rows {}.. aborted ({})", who, from, abort_reason_name(r)));
          history_read = false;
          break;
        }
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        const uint64_t seq = from + i;
        const bool paid_for = seq <= static_cast<uint64_t>(payment_count);
        const std::optional<History>& h = batch[i];
        if (!h) {
          if (paid_for) {
            a.problem(fmt::format("{}: history row {} is missing (C_PAYMENT_CNT {})", who, seq, payment_count));
          }
          continue;
        }
        ++a.rows;
        // Counted all the same, as the specification's sums count every row.
        if (!paid_for) {
          a.problem(fmt::format("{}: history row {} exists past its C_PAYMENT_CNT {}", who, seq, payment_count));
        }
        if (h->customer != static_cast<int64_t>(c) || h->customer_district != static_cast<int64_t>(d) ||
            h->customer_warehouse != static_cast<int64_t>(w)) {
          a.problem(fmt::format("{}: history row {} carries another customer's ids", who, seq));
        }
        paid += h->amount;
        if (!payments.add(h->warehouse, h->district, h->amount)) {
          a.problem(fmt::format("{}: history row {} pays warehouse {} district {}, which does not exist", who, seq,
                                h->warehouse, h->district));
        }
      }
    }
    if (!history_read) *all_history = false;
    // Conditions 10 and 12 need every order of the district: a customer's
    // delivered lines may be in any of them.
    if (!orders.complete) continue;
    const int64_t delivered = orders.delivered[c];
    if (history_read && balance != delivered - paid) {
      a.problem(fmt::format("{}: {} fails: C_BALANCE {} but delivered OL_AMOUNT {} - H_AMOUNT {} = {}", who,
                            kCond[10], balance, delivered, paid, delivered - paid));
    }
    if (balance + ytd_payment != delivered) {
      a.problem(fmt::format("{}: {} fails: C_BALANCE {} + C_YTD_PAYMENT {} = {} but delivered OL_AMOUNT {}", who,
                            kCond[12], balance, ytd_payment, balance + ytd_payment, delivered));
    }
  }
  if (orders.complete && all_customers) {
    const auto expected = static_cast<int64_t>(initially_delivered) + deliveries;
    const int64_t got = static_cast<int64_t>(orders.orders) - static_cast<int64_t>(orders.new_orders);
    if (got != expected) {
      a.problem(fmt::format("{}: {} fails: {} orders - {} new-orders = {} but {} + C_DELIVERY_CNT {} = {}", where,
                            kCond[11], orders.orders, orders.new_orders, got, initially_delivered, deliveries,
                            expected));
    }
  }
  return Status::ok();
}

}  // namespace

Result<Audit> TpccWorkload::audit(Session& client) const {
  Audit a;
  Reader reader(client);
  const uint64_t max_orders = options_.max_orders_per_district;
  const uint64_t customers = options_.customers_per_district;
  const uint64_t initially_delivered = customers - initial_new_orders();
  // Conditions 8 and 9 wait for every warehouse's history (see the top).
  Payments payments(options_.warehouses);
  std::vector<std::optional<std::array<int64_t, kDistrictsPerWarehouse + 1>>> ytd(options_.warehouses + 1);
  bool all_history = true;
  int64_t total = 0;
  for (uint64_t w = 1; w <= options_.warehouses; ++w) {
    int64_t w_ytd = 0;
    std::vector<DistrictState> ds(kDistrictsPerWarehouse + 1);
    const AbortReason head = reader.run([&](Txn& t) {
      auto wh = t.read(kWarehouse, keys_.warehouse(w));
      if (!wh) return wh.reason();
      w_ytd = get(*wh, warehouse::kYtd);
      for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
        auto di = t.read(kDistrict, keys_.district(w, d));
        if (!di) return di.reason();
        auto cur = t.read(kDeliveryCursor, keys_.delivery_cursor(w, d));
        if (!cur) return cur.reason();
        ds[d] = {get(*di, district::kYtd), static_cast<uint64_t>(get(*di, district::kNextOrderId)),
                 static_cast<uint64_t>(get(*cur, delivery_cursor::kOrderId))};
      }
      return AbortReason::kNone;
    });
    if (!reader.error().empty()) return Status(Errc::kIo, reader.error());
    if (head != AbortReason::kNone) {
      a.problem(fmt::format("warehouse {}: reading the warehouse, district and delivery-cursor rows aborted ({})", w,
                            abort_reason_name(head)));
      all_history = false;  // its customers go unread
      continue;
    }
    a.rows += 1 + 2 * kDistrictsPerWarehouse;
    total += w_ytd;
    ytd[w].emplace();
    (*ytd[w])[0] = w_ytd;
    int64_t d_sum = 0;
    for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      d_sum += ds[d].ytd;
      (*ytd[w])[d] = ds[d].ytd;
    }
    if (d_sum != w_ytd) {
      a.problem(fmt::format("warehouse {}: {} fails: W_YTD {} but the districts' D_YTD add up to {}", w, kCond[1],
                            w_ytd, d_sum));
    }

    for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      const DistrictState& s = ds[d];
      OrderTally orders;
      orders.delivered.assign(customers + 1, 0);
      if (s.next < 2 || s.next - 1 > max_orders || s.cursor < 1 || s.cursor > s.next) {
        a.problem(fmt::format("warehouse {} district {}: D_NEXT_O_ID {} and delivery cursor {} are out of range (1 "
                              "<= cursor <= D_NEXT_O_ID <= {})",
                              w, d, s.next, s.cursor, max_orders + 1));
        orders.complete = false;
      } else if (Status st = audit_orders(reader, a, w, d, s, orders); !st) {
        return st;
      }
      if (Status st = audit_customers(reader, a, keys_, w, d, initially_delivered, orders, payments, &all_history);
          !st) {
        return st;
      }
    }
  }

  if (!all_history) {
    a.problem("conditions 8 and 9 (YTD = sum(H_AMOUNT)) not checked: some customer's history could not be read");
  } else {
    for (uint64_t w = 1; w <= options_.warehouses; ++w) {
      if (!ytd[w]) continue;
      const std::array<int64_t, kDistrictsPerWarehouse + 1>& y = *ytd[w];
      if (y[0] != payments.paid(w, 0)) {
        a.problem(fmt::format("warehouse {}: {} fails: W_YTD {} but its history rows' H_AMOUNT add up to {}", w,
                              kCond[8], y[0], payments.paid(w, 0)));
      }
      for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
        if (y[d] != payments.paid(w, d)) {
          a.problem(fmt::format("warehouse {} district {}: {} fails: D_YTD {} but its history rows' H_AMOUNT add up "
                                "to {}",
                                w, d, kCond[9], y[d], payments.paid(w, d)));
        }
      }
    }
  }
  a.value = total;
  return a;
}

}  // namespace pandora::workloads
