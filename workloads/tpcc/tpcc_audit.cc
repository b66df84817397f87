// The TPC-C audit: everything read through read-only transactions
// (a Session), nothing below the transaction API.
//
// Per warehouse, the consistency conditions of clause 3.3.2:
//   1  W_YTD = sum(D_YTD)
//   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
//   3  max(NO_O_ID) - min(NO_O_ID) + 1 = new-order rows of the district
//   4  sum(O_OL_CNT) = order-line rows of the district
//   5  O_CARRIER_ID is null iff the order has a new-order row
//   6  O_OL_CNT = order-line rows of the order
//   7  OL_DELIVERY_D is null iff the order's O_CARRIER_ID is
// A key-value store cannot list a table, so "the rows of the district" are
// the rows of the keys the district can hold: orders and new-orders 1 ..
// D_NEXT_O_ID (the one at D_NEXT_O_ID must be absent), order lines 1 ..
// O_OL_CNT + 1 of each order (the one past the count must be absent).
// New-order rows must be exactly [delivery cursor, D_NEXT_O_ID), which
// gives conditions 2 and 3. Rows and order lines must also repeat their
// key's ids. Cost: one read per row of those tables plus one absent-key
// probe per order (a transaction each), about 400k reads per loaded
// warehouse.
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
  // Whether `key` exists: true, false, or nullopt when the read aborted for
  // another reason (stored in *why).
  std::optional<bool> exists(uint32_t table, uint64_t key, AbortReason* why) {
    const AbortReason r = run([&](Txn& t) {
      auto v = t.read(table, key);
      return v ? AbortReason::kNone : v.reason();
    });
    *why = r;
    if (r == AbortReason::kNone) return true;
    if (r == AbortReason::kNotFound) return false;
    return std::nullopt;
  }
  const std::string& error() const { return error_; }

 private:
  Session& client_;
  std::string error_;
};

struct DistrictState {
  int64_t ytd = 0;
  uint64_t next = 0;    // D_NEXT_O_ID
  uint64_t cursor = 0;  // oldest undelivered order
};

// Condition text for problems.
constexpr const char* kCond[] = {"",
                                 "condition 1 (W_YTD = sum(D_YTD))",
                                 "condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID))",
                                 "condition 3 (new-order rows = max(NO_O_ID) - min(NO_O_ID) + 1)",
                                 "condition 4 (sum(O_OL_CNT) = order-line rows)",
                                 "condition 5 (O_CARRIER_ID null iff a new-order row exists)",
                                 "condition 6 (O_OL_CNT = order lines of the order)",
                                 "condition 7 (OL_DELIVERY_D null iff O_CARRIER_ID null)"};

}  // namespace

Result<Audit> TpccWorkload::audit(Session& client) const {
  Audit a;
  Reader reader(client);
  const uint64_t max_orders = options_.max_orders_per_district;
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
      continue;
    }
    a.rows += 1 + 2 * kDistrictsPerWarehouse;
    total += w_ytd;
    int64_t d_sum = 0;
    for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) d_sum += ds[d].ytd;
    if (d_sum != w_ytd) {
      a.problem(fmt::format("warehouse {}: {} fails: W_YTD {} but the districts' D_YTD add up to {}", w, kCond[1],
                            w_ytd, d_sum));
    }

    for (uint64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      const DistrictState& s = ds[d];
      const std::string where = fmt::format("warehouse {} district {}", w, d);
      if (s.next < 2 || s.next - 1 > max_orders || s.cursor < 1 || s.cursor > s.next) {
        a.problem(fmt::format("{}: D_NEXT_O_ID {} and delivery cursor {} are out of range (1 <= cursor <= "
                              "D_NEXT_O_ID <= {})",
                              where, s.next, s.cursor, max_orders + 1));
        continue;
      }
      AbortReason why = AbortReason::kNone;
      auto expect_absent = [&](uint32_t table, uint64_t key, const std::string& what, int cond) {
        std::optional<bool> e = reader.exists(table, key, &why);
        if (!e) {
          a.problem(fmt::format("{}: reading {} aborted ({})", where, what, abort_reason_name(why)));
        } else if (*e) {
          a.problem(fmt::format("{}: {} fails: {} exists", where, kCond[cond], what));
        }
      };
      expect_absent(kOrder, order_key(w, d, s.next), fmt::format("order {} (= D_NEXT_O_ID)", s.next), 2);
      expect_absent(kNewOrder, new_order_key(w, d, s.next), fmt::format("new-order {} (= D_NEXT_O_ID)", s.next), 2);

      uint64_t ol_cnt_sum = 0, ol_rows = 0;
      for (uint64_t o = 1; o < s.next; ++o) {
        const bool undelivered = o >= s.cursor;
        int64_t lines = 0, carrier = 0;
        uint64_t found_lines = 0;
        std::string missing;
        std::vector<std::string> bad;
        const AbortReason r = reader.run([&](Txn& t) {
          found_lines = 0;
          bad.clear();
          missing = fmt::format("order {}", o);
          auto ord = t.read(kOrder, order_key(w, d, o));
          if (!ord) return ord.reason();
          lines = get(*ord, order::kLineCount);
          carrier = get(*ord, order::kCarrierId);
          if (get(*ord, order::kOrderId) != static_cast<int64_t>(o) ||
              get(*ord, order::kDistrict) != static_cast<int64_t>(d) ||
              get(*ord, order::kWarehouse) != static_cast<int64_t>(w)) {
            bad.push_back(fmt::format("order {} carries another order's ids", o));
          }
          if (undelivered) {
            missing = fmt::format("new-order {} (delivery cursor {}: {} fails)", o, s.cursor, kCond[3]);
            auto no = t.read(kNewOrder, new_order_key(w, d, o));
            if (!no) return no.reason();
          }
          for (int64_t ol = 1; ol <= lines && ol <= static_cast<int64_t>(kMaxOrderLines); ++ol) {
            missing = fmt::format("order line {} of order {} ({} fails)", ol, o, kCond[6]);
            auto line = t.read(kOrderLine, order_line_key(w, d, o, static_cast<uint64_t>(ol)));
            if (!line) return line.reason();
            ++found_lines;
            if (get(*line, order_line::kOrderId) != static_cast<int64_t>(o) ||
                get(*line, order_line::kNumber) != ol) {
              bad.push_back(fmt::format("order line {} of order {} carries another line's ids", ol, o));
            }
            if ((get(*line, order_line::kDeliveryDate) == 0) != (carrier == 0)) {
              bad.push_back(fmt::format("order {} line {}: {} fails", o, ol, kCond[7]));
            }
          }
          return AbortReason::kNone;
        });
        if (!reader.error().empty()) return Status(Errc::kIo, reader.error());
        if (r == AbortReason::kNotFound) {
          a.problem(fmt::format("{}: {} is missing", where, missing));
          continue;
        }
        if (r != AbortReason::kNone) {
          a.problem(fmt::format("{}: reading {} aborted ({})", where, missing, abort_reason_name(r)));
          continue;
        }
        for (std::string& b : bad) a.problem(fmt::format("{}: {}", where, b));
        a.rows += 1 + found_lines + (undelivered ? 1 : 0);
        ol_cnt_sum += static_cast<uint64_t>(lines);
        ol_rows += found_lines;
        if (lines < 5 || lines > static_cast<int64_t>(kMaxOrderLines)) {
          a.problem(fmt::format("{}: order {} has O_OL_CNT {} (5..15)", where, o, lines));
        }
        if ((carrier == 0) != undelivered) {
          a.problem(fmt::format("{}: order {}: {} fails: carrier {}, delivery cursor {}", where, o, kCond[5],
                                carrier, s.cursor));
        }
        if (!undelivered) {
          expect_absent(kNewOrder, new_order_key(w, d, o),
                        fmt::format("new-order {} (below the delivery cursor {})", o, s.cursor), 3);
        }
        if (lines >= 1 && lines < static_cast<int64_t>(kMaxOrderLines)) {
          const auto past = static_cast<uint64_t>(lines) + 1;
          std::optional<bool> e = reader.exists(kOrderLine, order_line_key(w, d, o, past), &why);
          if (!e) {
            a.problem(fmt::format("{}: reading order line {} of order {} aborted ({})", where, past, o,
                                  abort_reason_name(why)));
          } else if (*e) {
            ++ol_rows;
            a.problem(fmt::format("{}: {} fails: order {} has a line {} past its O_OL_CNT {}", where, kCond[6], o,
                                  past, lines));
          }
        }
      }
      if (ol_cnt_sum != ol_rows) {
        a.problem(fmt::format("{}: {} fails: sum(O_OL_CNT) {} but {} order-line rows", where, kCond[4], ol_cnt_sum,
                              ol_rows));
      }
    }
  }
  a.value = total;
  return a;
}

}  // namespace pandora::workloads
