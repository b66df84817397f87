#include "workloads/peers/postgres/tpcc_pg.h"

#include <algorithm>

#include <fmt/format.h>

#include "workloads/peers/postgres/tpcc_params.h"

namespace pandora::workloads::pg {

namespace {

using namespace tpcc;  // NOLINT: the parameter vocabulary of this file
std::string s(uint64_t v) { return std::to_string(v); }
std::string money(int64_t cents) { return fmt::format("{}{}.{:02}", cents < 0 ? "-" : "", std::abs(cents) / 100, std::abs(cents) % 100); }
std::string astring(Rng& rng, uint64_t lo, uint64_t hi) { return random_letters(rng, between(rng, lo, hi)); }
std::string nstring(Rng& rng, uint64_t lo, uint64_t hi) { return random_digits(rng, between(rng, lo, hi)); }
// i_data / s_data: 26..50 letters, 10% with "ORIGINAL" somewhere.
std::string data_string(Rng& rng) {
  std::string d = astring(rng, 26, 50);
  if (rng.uniform(10) == 0) d.replace(rng.uniform(d.size() - 8), 8, "ORIGINAL");
  return d;
}

const char* kSchema[] = {
    "CREATE TABLE warehouse (w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), "
    "w_city varchar(20), w_state char(2), w_zip char(9), w_tax numeric(4,4), w_ytd numeric(12,2))",
    "CREATE TABLE district (d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20), "
    "d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9), d_tax numeric(4,4), d_ytd "
    "numeric(12,2), d_next_o_id int)",
    "CREATE TABLE customer (c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16), "
    "c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), "
    "c_state char(2), c_zip char(9), c_phone char(16), c_since timestamp, c_credit char(2), c_credit_lim "
    "numeric(12,2), c_discount numeric(4,4), c_balance numeric(12,2), c_ytd_payment numeric(12,2), c_payment_cnt "
    "int, c_delivery_cnt int, c_data varchar(500))",
    "CREATE TABLE history (h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int, h_date timestamp, "
    "h_amount numeric(6,2), h_data varchar(24))",
    "CREATE TABLE orders (o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int, o_entry_d "
    "timestamp, o_carrier_id int, o_ol_cnt int, o_all_local int)",
    "CREATE TABLE new_order (no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL)",
    "CREATE TABLE order_line (ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL, ol_number int NOT "
    "NULL, ol_i_id int, ol_supply_w_id int, ol_delivery_d timestamp, ol_quantity int, ol_amount numeric(6,2), "
    "ol_dist_info char(24))",
    "CREATE TABLE item (i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price numeric(5,2), i_data "
    "varchar(50))",
    "CREATE TABLE stock (s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int, s_dist_01 char(24), s_dist_02 "
    "char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), "
    "s_dist_08 char(24), s_dist_09 char(24), s_dist_10 char(24), s_ytd int, s_order_cnt int, s_remote_cnt int, "
    "s_data varchar(50))",
};

const char* kKeys[] = {
    "ALTER TABLE warehouse ADD PRIMARY KEY (w_id)",
    "ALTER TABLE district ADD PRIMARY KEY (d_w_id, d_id)",
    "ALTER TABLE customer ADD PRIMARY KEY (c_w_id, c_d_id, c_id)",
    "CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "ALTER TABLE orders ADD PRIMARY KEY (o_w_id, o_d_id, o_id)",
    "CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
    "ALTER TABLE new_order ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
    "ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    "ALTER TABLE item ADD PRIMARY KEY (i_id)",
    "ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id)",
};

// COPY of `count` generated rows; `row(i, rng, buf)` appends row i.
uint64_t copy_rows(PgConn& c, const char* table, uint64_t count, uint64_t* done,
                   const std::function<void(uint64_t)>& progress,
                   const std::function<void(uint64_t, Rng&, std::string&)>& row) {
  Rng rng(std::hash<std::string>{}(table));
  uint64_t i = 0;
  const uint64_t n = c.copy_in(fmt::format("COPY {} FROM STDIN", table), [&](std::string& b) {
    for (int k = 0; k < 1024 && i < count; ++k, ++i) row(i, rng, b);
    progress(*done + i);
    return i < count;
  });
  *done += n;
  return n;
}

// Customer by id, or by last name: the middle one (rounded up) ordered by
// c_first (2.5.2.2). 0 when nobody has that name.
uint64_t resolve_customer(PgConn& c, uint64_t w, uint64_t d, const CustomerPick& p) {
  if (!p.by_name) return p.c_id;
  PgResult r = c.run("tpcc_cust_by_name", {s(w), s(d), p.c_last});
  if (r.rows() == 0) return 0;
  return static_cast<uint64_t>(r.i64((r.rows() - 1) / 2, 0));
}

PgBodyResult new_order(PgConn& c, const NewOrderParams& p) {
  c.run("tpcc_w_tax", {s(p.w)});
  PgResult d = c.run("tpcc_next_o_id", {s(p.w), s(p.d)});
  const std::string o_id(d.text(0, 0));
  c.run("tpcc_cust_discount", {s(p.w), s(p.d), s(p.c)});
  c.run("tpcc_ins_order", {o_id, s(p.d), s(p.w), s(p.c), s(p.lines.size()), p.all_local ? "1" : "0"});
  c.run("tpcc_ins_new_order", {o_id, s(p.d), s(p.w)});
  for (size_t n = 0; n < p.lines.size(); ++n) {
    const OrderLine& l = p.lines[n];
    PgResult item = c.run("tpcc_item", {s(l.i_id)});
    if (item.rows() == 0) return {PgEnd::kUser, 0};  // the 1% unused item: roll back (2.4.2.3)
    PgResult st = c.run("tpcc_upd_stock", {s(l.supply_w), s(l.i_id), s(l.quantity), l.supply_w == p.w ? "0" : "1",
                                            s(p.d)});
    c.run("tpcc_ins_ol", {o_id, s(p.d), s(p.w), s(n + 1), s(l.i_id), s(l.supply_w), s(l.quantity),
                          std::string(item.text(0, 0)), std::string(st.text(0, 0))});
  }
  return {PgEnd::kCommit, 0};
}

PgBodyResult payment(PgConn& c, const PaymentParams& p) {
  const std::string amt = money(p.amount_cents);
  c.run("tpcc_pay_w", {s(p.w), amt});
  c.run("tpcc_pay_d", {s(p.w), s(p.d), amt});
  const uint64_t cid = resolve_customer(c, p.c_w, p.c_d, p.customer);
  if (cid == 0) return {PgEnd::kNotFound, 0};
  c.run("tpcc_pay_c", {s(p.c_w), s(p.c_d), s(cid), amt,
                       fmt::format("{} {} {} {} {} {}", cid, p.c_d, p.c_w, p.d, p.w, amt)});
  c.run("tpcc_ins_hist", {s(cid), s(p.c_d), s(p.c_w), s(p.d), s(p.w), amt});
  return {PgEnd::kCommit, p.amount_cents};
}

PgBodyResult order_status(PgConn& c, uint64_t w, uint64_t d, const CustomerPick& p) {
  const uint64_t cid = resolve_customer(c, w, d, p);
  if (cid == 0) return {PgEnd::kNotFound, 0};
  c.run("tpcc_cust_balance", {s(w), s(d), s(cid)});
  PgResult o = c.run("tpcc_last_order", {s(w), s(d), s(cid)});
  if (o.rows() == 1) c.run("tpcc_order_lines", {s(w), s(d), std::string(o.text(0, 0))});
  return {PgEnd::kCommit, 0};
}

PgBodyResult delivery(PgConn& c, uint64_t w, uint64_t carrier) {
  for (uint64_t d = 1; d <= kDistricts; ++d) {
    PgResult no = c.run("tpcc_oldest_new_order", {s(w), s(d)});
    if (no.rows() == 0) continue;  // nothing to deliver in this district (2.7.4.2)
    const std::string o_id(no.text(0, 0));
    c.run("tpcc_del_new_order", {s(w), s(d), o_id});
    PgResult o = c.run("tpcc_set_carrier", {s(w), s(d), o_id, s(carrier)});
    PgResult sum = c.run("tpcc_deliver_lines", {s(w), s(d), o_id});
    c.run("tpcc_credit_customer", {s(w), s(d), std::string(o.text(0, 0)), std::string(sum.text(0, 0))});
  }
  return {PgEnd::kCommit, 0};
}

PgBodyResult stock_level(PgConn& c, uint64_t w, uint64_t d, uint64_t threshold) {
  c.run("tpcc_stock_level", {s(w), s(d), s(threshold)});
  return {PgEnd::kCommit, 0};
}

}  // namespace

std::string TpccPg::options_text() const {
  return fmt::format("{} warehouse(s), {} items, {} customers per district", o_.warehouses, o_.items,
                     o_.customers_per_district);
}

uint64_t TpccPg::load(PgConn& c, const std::function<void(uint64_t)>& progress) const {
  const uint64_t W = o_.warehouses;
  const uint64_t items = o_.items, customers = o_.customers_per_district, orders = o_.orders();
  const uint64_t first_new_order = o_.first_new_order();
  // Loaded amounts as Pandora's loader has them (tpcc_random.h).
  const std::string d_ytd = money(initial_district_ytd_cents(customers)),
                    w_ytd = money(initial_district_ytd_cents(customers) * kDistricts);
  const std::string payment = money(kInitialPaymentCents), balance = money(-kInitialPaymentCents);
  uint64_t done = 0;
  c.exec("BEGIN");
  c.exec("DROP TABLE IF EXISTS warehouse, district, customer, history, orders, new_order, order_line, item, stock");
  for (const char* sql : kSchema) c.exec(sql);
  const auto put = [](std::string& b, auto&&... f) {
    std::string sep;
    ((b += sep, fmt::format_to(std::back_inserter(b), "{}", f), sep = "\t"), ...);
    b += '\n';
  };
  copy_rows(c, "item", items, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    put(b, i + 1, between(r, 1, 10000), astring(r, 14, 24), money(static_cast<int64_t>(between(r, 100, 10000))),
        data_string(r));
  });
  copy_rows(c, "warehouse", W, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    put(b, i + 1, astring(r, 6, 10), astring(r, 10, 20), astring(r, 10, 20), astring(r, 10, 20), random_letters(r, 2),
        nstring(r, 4, 4) + "11111", fmt::format("0.{:04}", between(r, 0, 2000)), w_ytd);
  });
  copy_rows(c, "stock", W * items, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    b += fmt::format("{}\t{}\t{}", i % items + 1, i / items + 1, between(r, 10, 100));
    for (int d = 0; d < 10; ++d) b += "\t" + random_letters(r, 24);
    b += "\t0\t0\t0\t" + data_string(r) + "\n";
  });
  copy_rows(c, "district", W * kDistricts, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    put(b, i % kDistricts + 1, i / kDistricts + 1, astring(r, 6, 10), astring(r, 10, 20), astring(r, 10, 20),
        astring(r, 10, 20), random_letters(r, 2), nstring(r, 4, 4) + "11111",
        fmt::format("0.{:04}", between(r, 0, 2000)), d_ytd, orders + 1);
  });
  const uint64_t per_w = kDistricts * customers;
  copy_rows(c, "customer", W * per_w, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    const uint64_t cid = i % customers + 1;
    const uint64_t last =
        cid <= Scale::kLastNames ? cid - 1 : nurand(r, 255, 0, Scale::kLastNames - 1, kLoadConstants.last_name);
    put(b, cid, (i / customers) % kDistricts + 1, i / per_w + 1, astring(r, 8, 16), "OE", last_name(static_cast<uint32_t>(last)),
        astring(r, 10, 20), astring(r, 10, 20), astring(r, 10, 20), random_letters(r, 2),
        nstring(r, 4, 4) + "11111", random_digits(r, 16), "2024-01-01 00:00:00", r.uniform(10) == 0 ? "BC" : "GC",
        "50000.00", fmt::format("0.{:04}", between(r, 0, 5000)), balance, payment, 1, 0, astring(r, 300, 500));
  });
  copy_rows(c, "history", W * per_w, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    const uint64_t d = (i / customers) % kDistricts + 1, w = i / per_w + 1;
    put(b, i % customers + 1, d, w, d, w, "2024-01-01 00:00:00", payment, astring(r, 12, 24));
  });
  // Orders: o_c_id a random permutation of the customers per district;
  // ol_cnt drawn from a stream seeded by the order so order_line agrees.
  const auto ol_cnt = [](uint64_t order) {
    Rng r(order * 0x9e3779b97f4a7c15ull + 5);
    return between(r, 5, 15);
  };
  std::vector<uint64_t> perm(customers);
  copy_rows(c, "orders", W * kDistricts * orders, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    const uint64_t o = i % orders + 1, d = (i / orders) % kDistricts + 1, w = i / (kDistricts * orders) + 1;
    if (o == 1) {
      for (uint64_t k = 0; k < customers; ++k) perm[k] = k + 1;
      for (uint64_t k = 0; k + 1 < customers; ++k) std::swap(perm[k], perm[k + r.uniform(customers - k)]);
    }
    const std::string carrier = o < first_new_order ? s(between(r, 1, 10)) : "\\N";
    put(b, o, d, w, perm[o - 1], "2024-01-01 00:00:00", carrier, ol_cnt(i), 1);
  });
  const uint64_t per_d = o_.new_orders();  // orders first_new_order .. orders of each district
  copy_rows(c, "new_order", W * kDistricts * per_d, &done, progress, [&](uint64_t i, Rng&, std::string& b) {
    put(b, first_new_order + i % per_d, (i / per_d) % kDistricts + 1, i / (per_d * kDistricts) + 1);
  });
  copy_rows(c, "order_line", W * kDistricts * orders, &done, progress, [&](uint64_t i, Rng& r, std::string& b) {
    const uint64_t o = i % orders + 1, d = (i / orders) % kDistricts + 1, w = i / (kDistricts * orders) + 1;
    for (uint64_t n = 1; n <= ol_cnt(i); ++n) {
      const bool delivered = o < first_new_order;
      put(b, o, d, w, n, between(r, 1, items), w, delivered ? "2024-01-01 00:00:00" : "\\N", 5,
          delivered ? "0.00" : money(static_cast<int64_t>(between(r, 1, 999999))), random_letters(r, 24));
    }
  });
  for (const char* sql : kKeys) c.exec(sql);
  c.exec("COMMIT");
  c.exec("VACUUM ANALYZE");
  return done;
}

void TpccPg::prepare(PgConn& c) const {
  const std::pair<const char*, const char*> statements[] = {
      {"tpcc_w_tax", "SELECT w_tax FROM warehouse WHERE w_id = $1"},
      {"tpcc_next_o_id",
       "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id - 1, "
       "d_tax"},
      {"tpcc_cust_discount", "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND "
                             "c_id = $3"},
      {"tpcc_ins_order", "INSERT INTO orders VALUES ($1, $2, $3, $4, now(), NULL, $5, $6)"},
      {"tpcc_ins_new_order", "INSERT INTO new_order VALUES ($1, $2, $3)"},
      {"tpcc_item", "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1"},
      {"tpcc_upd_stock",
       "UPDATE stock SET s_quantity = CASE WHEN s_quantity - $3 >= 10 THEN s_quantity - $3 ELSE s_quantity - $3 + 91 "
       "END, s_ytd = s_ytd + $3, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $4 WHERE s_w_id = $1 "
       "AND s_i_id = $2 RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, "
       "s_dist_07, s_dist_08, s_dist_09, s_dist_10])[$5::int]"},
      {"tpcc_ins_ol", "INSERT INTO order_line VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $7::int * $8::numeric, $9)"},
      {"tpcc_pay_w", "UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1 RETURNING w_name"},
      {"tpcc_pay_d", "UPDATE district SET d_ytd = d_ytd + $3 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_name"},
      {"tpcc_cust_by_name",
       "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first"},
      {"tpcc_pay_c",
       "UPDATE customer SET c_balance = c_balance - $4, c_ytd_payment = c_ytd_payment + $4, c_payment_cnt = "
       "c_payment_cnt + 1, c_data = CASE WHEN c_credit = 'BC' THEN left($5 || ' ' || c_data, 500) ELSE c_data END "
       "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"},
      {"tpcc_ins_hist", "INSERT INTO history VALUES ($1, $2, $3, $4, $5, now(), $6, 'payment')"},
      {"tpcc_cust_balance",
       "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"},
      {"tpcc_last_order",
       "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY "
       "o_id DESC LIMIT 1"},
      {"tpcc_order_lines",
       "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = $1 AND "
       "ol_d_id = $2 AND ol_o_id = $3"},
      {"tpcc_oldest_new_order",
       "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1"},
      {"tpcc_del_new_order", "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3"},
      {"tpcc_set_carrier",
       "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 RETURNING o_c_id"},
      {"tpcc_deliver_lines",
       "WITH l AS (UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 "
       "RETURNING ol_amount) SELECT coalesce(sum(ol_amount), 0) FROM l"},
      {"tpcc_credit_customer",
       "UPDATE customer SET c_balance = c_balance + $4, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $1 AND "
       "c_d_id = $2 AND c_id = $3"},
      {"tpcc_stock_level",
       "SELECT count(DISTINCT s_i_id) FROM district, order_line, stock WHERE d_w_id = $1 AND d_id = $2 AND ol_w_id = "
       "$1 AND ol_d_id = $2 AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20 AND s_w_id = $1 AND s_i_id = "
       "ol_i_id AND s_quantity < $3"},
  };
  for (const auto& [name, sql] : statements) c.prepare(name, sql);
}

PgTxn TpccPg::draw(Rng& rng) const {
  const uint64_t w = between(rng, 1, o_.warehouses);
  switch (pick_type(rng)) {
    case kTxnNewOrder:
      return {kTxnNewOrder, false, [p = new_order_params(rng, w, o_)](PgConn& c) { return new_order(c, p); }};
    case kTxnPayment:
      return {kTxnPayment, false, [p = payment_params(rng, w, o_)](PgConn& c) { return payment(c, p); }};
    case kTxnOrderStatus: {
      const uint64_t d = between(rng, 1, kDistricts);
      return {kTxnOrderStatus, true,
              [w, d, p = pick_customer(rng, o_)](PgConn& c) { return order_status(c, w, d, p); }};
    }
    case kTxnDelivery: {
      const uint64_t carrier = between(rng, 1, 10);
      return {kTxnDelivery, false, [w, carrier](PgConn& c) { return delivery(c, w, carrier); }};
    }
    case kTxnStockLevel: {
      const uint64_t d = between(rng, 1, kDistricts), threshold = between(rng, 10, 20);
      return {kTxnStockLevel, true, [=](PgConn& c) { return stock_level(c, w, d, threshold); }};
    }
  }
  return {};
}

int64_t TpccPg::invariant(PgConn& c) const {
  return c.exec("SELECT (sum(w_ytd) * 100)::bigint FROM warehouse").i64(0, 0);
}

namespace {

// Joins for conditions 10 and 12: per customer, the amount of its delivered
// order lines (dl.amount) and of its payments (h.amount); NULL when none.
constexpr const char* kDeliveredPerCustomer =
    "LEFT JOIN (SELECT o_w_id, o_d_id, o_c_id, sum(ol_amount) AS amount FROM orders JOIN order_line ON ol_w_id = "
    "o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE ol_delivery_d IS NOT NULL GROUP BY o_w_id, o_d_id, o_c_id) "
    "dl ON dl.o_w_id = c.c_w_id AND dl.o_d_id = c.c_d_id AND dl.o_c_id = c.c_id";
constexpr const char* kPaidPerCustomer =
    "LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) AS amount FROM history GROUP BY h_c_w_id, h_c_d_id, "
    "h_c_id) h ON h.h_c_w_id = c.c_w_id AND h.h_c_d_id = c.c_d_id AND h.h_c_id = c.c_id";

}  // namespace

PgCheck TpccPg::check(PgConn& c, int64_t before, int64_t committed_delta) const {
  // Each query counts the warehouses, districts, customers, orders or order
  // lines violating one condition.
  const std::vector<std::pair<std::string, std::string>> rules = {
      {"condition 1 (W_YTD = sum(D_YTD)): warehouses violating it",
       "SELECT count(*) FROM warehouse w WHERE w.w_ytd <> (SELECT sum(d_ytd) FROM district WHERE d_w_id = w.w_id)"},
      {"condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)): districts violating it",
       "SELECT count(*) FROM district d WHERE d.d_next_o_id - 1 <> (SELECT max(o_id) FROM orders WHERE o_w_id = "
       "d.d_w_id AND o_d_id = d.d_id) OR d.d_next_o_id - 1 <> (SELECT max(no_o_id) FROM new_order WHERE no_w_id = "
       "d.d_w_id AND no_d_id = d.d_id)"},
      {"condition 3 (max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER): districts violating it",
       "SELECT count(*) FROM (SELECT max(no_o_id) - min(no_o_id) + 1 AS span, count(*) AS n FROM new_order GROUP BY "
       "no_w_id, no_d_id) x WHERE span <> n"},
      {"condition 4 (sum(O_OL_CNT) = rows in ORDER-LINE): districts violating it",
       "SELECT count(*) FROM (SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS n FROM orders GROUP BY o_w_id, o_d_id) o FULL "
       "JOIN (SELECT ol_w_id, ol_d_id, count(*) AS n FROM order_line GROUP BY ol_w_id, ol_d_id) l ON l.ol_w_id = "
       "o.o_w_id AND l.ol_d_id = o.o_d_id WHERE o.n IS DISTINCT FROM l.n"},
      // 5-7 per order / order line, null as the schema has it: O_CARRIER_ID
      // and OL_DELIVERY_D are SQL NULL until Delivery sets them (loaded \N
      // for the undelivered orders, inserted NULL by NewOrder).
      {"condition 5 (O_CARRIER_ID null iff a NEW-ORDER row exists): orders violating it",
       "SELECT count(*) FROM orders LEFT JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id "
       "WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)"},
      // A FULL JOIN as in 4: the lines of an order that does not exist count as
      // one more violator.
      {"condition 6 (O_OL_CNT = rows in ORDER-LINE of the order): orders violating it",
       "SELECT count(*) FROM orders o FULL JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) AS n FROM order_line "
       "GROUP BY ol_w_id, ol_d_id, ol_o_id) l ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id "
       "WHERE o.o_id IS NULL OR o.o_ol_cnt IS DISTINCT FROM coalesce(l.n, 0)"},
      {"condition 7 (OL_DELIVERY_D null iff O_CARRIER_ID null): order lines violating it",
       "SELECT count(*) FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id "
       "WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL)"},
      {"condition 8 (W_YTD = sum(H_AMOUNT) of its history): warehouses violating it",
       "SELECT count(*) FROM warehouse w WHERE w.w_ytd <> (SELECT coalesce(sum(h_amount), 0) FROM history WHERE "
       "h_w_id = w.w_id)"},
      {"condition 9 (D_YTD = sum(H_AMOUNT) of its history): districts violating it",
       "SELECT count(*) FROM district d WHERE d.d_ytd <> (SELECT coalesce(sum(h_amount), 0) FROM history WHERE "
       "h_w_id = d.d_w_id AND h_d_id = d.d_id)"},
      {"condition 10 (C_BALANCE = sum(OL_AMOUNT delivered) - sum(H_AMOUNT)): customers violating it",
       fmt::format("SELECT count(*) FROM customer c {} {} WHERE c.c_balance <> coalesce(dl.amount, 0) - "
                   "coalesce(h.amount, 0)",
                   kDeliveredPerCustomer, kPaidPerCustomer)},
      {"condition 11 (count(ORDER) - count(NEW-ORDER) = initially delivered + sum(C_DELIVERY_CNT)): districts "
       "violating it",
       fmt::format("SELECT count(*) FROM district d WHERE (SELECT count(*) FROM orders WHERE o_w_id = d.d_w_id AND "
                   "o_d_id = d.d_id) - (SELECT count(*) FROM new_order WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) "
                   "<> {} + (SELECT coalesce(sum(c_delivery_cnt), 0) FROM customer WHERE c_w_id = d.d_w_id AND "
                   "c_d_id = d.d_id)",
                   o_.orders() - o_.new_orders())},
      {"condition 12 (C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT delivered)): customers violating it",
       fmt::format("SELECT count(*) FROM customer c {} WHERE c.c_balance + c.c_ytd_payment <> coalesce(dl.amount, 0)",
                   kDeliveredPerCustomer)},
      {"districts missing or extra",
       fmt::format("SELECT abs(count(*) - {}) FROM district", o_.warehouses * kDistricts)},
  };
  std::vector<std::string> problems;
  count_violations(c, rules, &problems);
  const int64_t after = invariant(c);
  if (after != before + committed_delta) {
    problems.push_back(fmt::format("sum(W_YTD) {} cents != {} before + {} committed payments (off by {})", after,
                                   before, committed_delta, after - before - committed_delta));
  }
  return check_verdict(problems, fmt::format("check passed: TPC-C consistency conditions 1-12 hold on {} warehouse(s); sum(W_YTD) {} "
                              "cents = {} before + {} committed payments",
                              o_.warehouses, after, before, committed_delta));
}

}  // namespace pandora::workloads::pg
