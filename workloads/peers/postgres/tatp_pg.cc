#include "workloads/peers/postgres/tatp_pg.h"

#include <fmt/format.h>

#include "workloads/peers/postgres/tatp_params.h"

namespace pandora::workloads::pg {

namespace {

using namespace tatp;  // NOLINT: the parameter vocabulary of this file
std::string s(uint64_t v) { return std::to_string(v); }

// One subscriber's rows of the three child tables, generated from a stream
// seeded by its id, so each COPY pass regenerates the same rows.
struct Children {
  std::vector<uint64_t> ai_types, sf_types;
  std::vector<std::pair<uint64_t, uint64_t>> cf;  // (sf_type, start_time)
};

// 1..4 distinct values of {1, 2, 3, 4}, in increasing order.
std::vector<uint64_t> some_types(Rng& rng) {
  const uint64_t n = between(rng, 1, 4);
  std::vector<uint64_t> all{1, 2, 3, 4};
  for (uint64_t i = 0; i < 4; ++i) std::swap(all[i], all[i + rng.uniform(4 - i)]);
  all.resize(n);
  std::sort(all.begin(), all.end());
  return all;
}

Children children(uint64_t s_id) {
  Rng rng(s_id * 0x9e3779b97f4a7c15ull + 17);
  Children c;
  c.ai_types = some_types(rng);
  c.sf_types = some_types(rng);
  for (uint64_t sf : c.sf_types) {
    const uint64_t n = rng.uniform(4);  // 0..3 call forwardings, distinct start times
    for (uint64_t st = 0; st < 3; ++st) {
      if (st < n) c.cf.emplace_back(sf, st * 8);
    }
  }
  return c;
}

// Copies `rows(s_id, rng, buf)` for every subscriber into `table`.
uint64_t copy_table(PgConn& c, const char* table, uint64_t subscribers, uint64_t* done,
                    const std::function<void(uint64_t)>& progress,
                    const std::function<void(uint64_t, Rng&, std::string&)>& rows) {
  uint64_t id = 1;
  Rng rng(std::hash<std::string>{}(table));
  const uint64_t n = c.copy_in(fmt::format("COPY {} FROM STDIN", table), [&](std::string& buf) {
    for (int i = 0; i < 1024 && id <= subscribers; ++i, ++id) rows(id, rng, buf);
    progress(*done + id);
    return id <= subscribers;
  });
  *done += n;
  return n;
}

PgBodyResult get_subscriber_data(PgConn& c, uint64_t sid) {
  return {c.run("tatp_get_sub", {s(sid)}).rows() == 1 ? PgEnd::kCommit : PgEnd::kNotFound, 0};
}

PgBodyResult get_new_destination(PgConn& c, uint64_t sid, uint64_t sf, uint64_t start, uint64_t end) {
  return {c.run("tatp_get_dest", {s(sid), s(sf), s(start), s(end)}).rows() > 0 ? PgEnd::kCommit : PgEnd::kNotFound, 0};
}

PgBodyResult get_access_data(PgConn& c, uint64_t sid, uint64_t ai) {
  return {c.run("tatp_get_ai", {s(sid), s(ai)}).rows() == 1 ? PgEnd::kCommit : PgEnd::kNotFound, 0};
}

PgBodyResult update_subscriber_data(PgConn& c, uint64_t sid, uint64_t bit, uint64_t sf, uint64_t data_a) {
  if (c.run("tatp_upd_bit", {s(sid), s(bit)}).affected() != 1) return {PgEnd::kNotFound, 0};
  if (c.run("tatp_upd_sf", {s(sid), s(sf), s(data_a)}).affected() != 1) return {PgEnd::kNotFound, 0};
  return {PgEnd::kCommit, 0};
}

PgBodyResult update_location(PgConn& c, const std::string& nbr, uint64_t vlr) {
  return {c.run("tatp_upd_loc", {nbr, s(vlr)}).affected() == 1 ? PgEnd::kCommit : PgEnd::kNotFound, 0};
}

PgBodyResult insert_call_forwarding(PgConn& c, const std::string& nbr, uint64_t sf, uint64_t start, uint64_t end,
                                    const std::string& numberx) {
  PgResult sub = c.run("tatp_sid_of", {nbr});
  if (sub.rows() != 1) return {PgEnd::kNotFound, 0};
  const std::string sid(sub.text(0, 0));
  PgResult sfs = c.run("tatp_sf_types", {sid});
  bool has = false;
  for (int i = 0; i < sfs.rows(); ++i) has = has || sfs.i64(i, 0) == static_cast<int64_t>(sf);
  if (!has) return {PgEnd::kNotFound, 0};
  if (c.run("tatp_ins_cf", {sid, s(sf), s(start), s(end), numberx}).affected() != 1) return {PgEnd::kDuplicate, 0};
  return {PgEnd::kCommit, +1};
}

PgBodyResult delete_call_forwarding(PgConn& c, const std::string& nbr, uint64_t sf, uint64_t start) {
  PgResult sub = c.run("tatp_sid_of", {nbr});
  if (sub.rows() != 1) return {PgEnd::kNotFound, 0};
  if (c.run("tatp_del_cf", {std::string(sub.text(0, 0)), s(sf), s(start)}).affected() != 1) {
    return {PgEnd::kNotFound, 0};
  }
  return {PgEnd::kCommit, -1};
}

}  // namespace

std::string TatpPg::options_text() const { return fmt::format("{} subscribers", o_.subscribers); }

uint64_t TatpPg::load(PgConn& c, const std::function<void(uint64_t)>& progress) const {
  std::string sub_cols = "s_id integer NOT NULL, sub_nbr varchar(15) NOT NULL";
  for (const char* p : {"bit", "hex", "byte2"}) {
    for (int i = 1; i <= 10; ++i) sub_cols += fmt::format(", {}_{} smallint NOT NULL", p, i);
  }
  sub_cols += ", msc_location integer NOT NULL, vlr_location integer NOT NULL";
  c.exec("BEGIN");
  c.exec("DROP TABLE IF EXISTS subscriber, access_info, special_facility, call_forwarding");
  c.exec(fmt::format("CREATE TABLE subscriber ({})", sub_cols));
  c.exec("CREATE TABLE access_info (s_id integer NOT NULL, ai_type smallint NOT NULL, data1 smallint NOT NULL, "
         "data2 smallint NOT NULL, data3 char(3) NOT NULL, data4 char(5) NOT NULL)");
  c.exec("CREATE TABLE special_facility (s_id integer NOT NULL, sf_type smallint NOT NULL, is_active smallint NOT "
         "NULL, error_cntrl smallint NOT NULL, data_a smallint NOT NULL, data_b char(5) NOT NULL)");
  c.exec("CREATE TABLE call_forwarding (s_id integer NOT NULL, sf_type smallint NOT NULL, start_time smallint NOT "
         "NULL, end_time smallint NOT NULL, numberx char(15) NOT NULL)");
  const uint64_t P = o_.subscribers;
  uint64_t done = 0;
  copy_table(c, "subscriber", P, &done, progress, [](uint64_t id, Rng& rng, std::string& b) {
    fmt::format_to(std::back_inserter(b), "{}\t{}", id, sub_nbr_of(id));
    for (int i = 0; i < 10; ++i) fmt::format_to(std::back_inserter(b), "\t{}", rng.uniform(2));
    for (int i = 0; i < 10; ++i) fmt::format_to(std::back_inserter(b), "\t{}", rng.uniform(16));
    for (int i = 0; i < 10; ++i) fmt::format_to(std::back_inserter(b), "\t{}", rng.uniform(256));
    fmt::format_to(std::back_inserter(b), "\t{}\t{}\n", rng.uniform(1u << 31), rng.uniform(1u << 31));
  });
  copy_table(c, "access_info", P, &done, progress, [](uint64_t id, Rng& rng, std::string& b) {
    for (uint64_t t : children(id).ai_types) {
      fmt::format_to(std::back_inserter(b), "{}\t{}\t{}\t{}\t{}\t{}\n", id, t, rng.uniform(256), rng.uniform(256),
                     random_letters(rng, 3), random_letters(rng, 5));
    }
  });
  copy_table(c, "special_facility", P, &done, progress, [](uint64_t id, Rng& rng, std::string& b) {
    for (uint64_t t : children(id).sf_types) {
      fmt::format_to(std::back_inserter(b), "{}\t{}\t{}\t{}\t{}\t{}\n", id, t, rng.chance(0.85) ? 1 : 0,
                     rng.uniform(256), rng.uniform(256), random_letters(rng, 5));
    }
  });
  copy_table(c, "call_forwarding", P, &done, progress, [](uint64_t id, Rng& rng, std::string& b) {
    for (const auto& [sf, start] : children(id).cf) {
      fmt::format_to(std::back_inserter(b), "{}\t{}\t{}\t{}\t{}\n", id, sf, start, start + between(rng, 1, 8),
                     random_digits(rng, 15));
    }
  });
  c.exec("ALTER TABLE subscriber ADD PRIMARY KEY (s_id)");
  c.exec("CREATE UNIQUE INDEX subscriber_sub_nbr ON subscriber (sub_nbr)");
  c.exec("ALTER TABLE access_info ADD PRIMARY KEY (s_id, ai_type)");
  c.exec("ALTER TABLE special_facility ADD PRIMARY KEY (s_id, sf_type)");
  c.exec("ALTER TABLE call_forwarding ADD PRIMARY KEY (s_id, sf_type, start_time)");
  c.exec("COMMIT");
  c.exec("VACUUM ANALYZE subscriber, access_info, special_facility, call_forwarding");
  return done;
}

void TatpPg::prepare(PgConn& c) const {
  c.prepare("tatp_get_sub", "SELECT * FROM subscriber WHERE s_id = $1");
  c.prepare("tatp_get_dest",
            "SELECT cf.numberx FROM special_facility sf, call_forwarding cf WHERE sf.s_id = $1 AND sf.sf_type = $2 "
            "AND sf.is_active = 1 AND cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type AND cf.start_time <= $3 AND "
            "$4 < cf.end_time");
  c.prepare("tatp_get_ai", "SELECT data1, data2, data3, data4 FROM access_info WHERE s_id = $1 AND ai_type = $2");
  c.prepare("tatp_upd_bit", "UPDATE subscriber SET bit_1 = $2 WHERE s_id = $1");
  c.prepare("tatp_upd_sf", "UPDATE special_facility SET data_a = $3 WHERE s_id = $1 AND sf_type = $2");
  c.prepare("tatp_upd_loc", "UPDATE subscriber SET vlr_location = $2 WHERE sub_nbr = $1");
  c.prepare("tatp_sid_of", "SELECT s_id FROM subscriber WHERE sub_nbr = $1");
  c.prepare("tatp_sf_types", "SELECT sf_type FROM special_facility WHERE s_id = $1");
  c.prepare("tatp_ins_cf", "INSERT INTO call_forwarding VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING");
  c.prepare("tatp_del_cf", "DELETE FROM call_forwarding WHERE s_id = $1 AND sf_type = $2 AND start_time = $3");
}

PgTxn TatpPg::draw(Rng& rng) const {
  const uint64_t P = o_.subscribers;
  const Type t = pick_type(rng);
  const uint64_t sid = pick_subscriber(rng, P, nurand_a(P));
  switch (t) {
    case kGetSubscriberData:
      return {t, true, [sid](PgConn& c) { return get_subscriber_data(c, sid); }};
    case kGetNewDestination: {
      const uint64_t sf = pick_sf_type(rng), start = pick_start_time(rng), end = between(rng, 1, 24);
      return {t, true, [=](PgConn& c) { return get_new_destination(c, sid, sf, start, end); }};
    }
    case kGetAccessData: {
      const uint64_t ai = pick_ai_type(rng);
      return {t, true, [=](PgConn& c) { return get_access_data(c, sid, ai); }};
    }
    case kUpdateSubscriberData: {
      const uint64_t bit = rng.uniform(2), sf = pick_sf_type(rng), data_a = rng.uniform(256);
      return {t, false, [=](PgConn& c) { return update_subscriber_data(c, sid, bit, sf, data_a); }};
    }
    case kUpdateLocation: {
      const uint64_t vlr = rng.uniform(1u << 31);
      return {t, false, [nbr = sub_nbr_of(sid), vlr](PgConn& c) { return update_location(c, nbr, vlr); }};
    }
    case kInsertCallForwarding: {
      const uint64_t sf = pick_sf_type(rng), start = pick_start_time(rng), end = between(rng, 1, 24);
      return {t, false, [nbr = sub_nbr_of(sid), sf, start, end, numberx = random_digits(rng, 15)](PgConn& c) {
                return insert_call_forwarding(c, nbr, sf, start, end, numberx);
              }};
    }
    case kDeleteCallForwarding: {
      const uint64_t sf = pick_sf_type(rng), start = pick_start_time(rng);
      return {t, false, [nbr = sub_nbr_of(sid), sf, start](PgConn& c) { return delete_call_forwarding(c, nbr, sf, start); }};
    }
  }
  return {};
}

int64_t TatpPg::invariant(PgConn& c) const { return c.exec("SELECT count(*) FROM call_forwarding").i64(0, 0); }

PgCheck TatpPg::check(PgConn& c, int64_t before, int64_t committed_delta) const {
  const int64_t P = static_cast<int64_t>(o_.subscribers);
  // Each query counts violations of one rule; all must be 0.
  const std::vector<std::pair<std::string, std::string>> rules = {
      {"subscribers missing or extra",
       fmt::format("SELECT abs(count(*) - {0}) + count(*) FILTER (WHERE s_id < 1 OR s_id > {0}) FROM subscriber", P)},
      {"sub_nbr not the 15-digit s_id", "SELECT count(*) FROM subscriber WHERE sub_nbr <> lpad(s_id::text, 15, '0')"},
      {"access_info rows without a subscriber",
       "SELECT count(*) FROM access_info a WHERE NOT EXISTS (SELECT 1 FROM subscriber s WHERE s.s_id = a.s_id)"},
      {"special_facility rows without a subscriber",
       "SELECT count(*) FROM special_facility f WHERE NOT EXISTS (SELECT 1 FROM subscriber s WHERE s.s_id = f.s_id)"},
      {"call_forwarding rows without a special_facility",
       "SELECT count(*) FROM call_forwarding cf WHERE NOT EXISTS (SELECT 1 FROM special_facility f WHERE f.s_id = "
       "cf.s_id AND f.sf_type = cf.sf_type)"},
      {"subscribers without 1..4 access_info rows",
       "SELECT count(*) FROM subscriber s WHERE (SELECT count(*) FROM access_info a WHERE a.s_id = s.s_id) NOT "
       "BETWEEN 1 AND 4"},
      {"subscribers without 1..4 special_facility rows",
       "SELECT count(*) FROM subscriber s WHERE (SELECT count(*) FROM special_facility f WHERE f.s_id = s.s_id) NOT "
       "BETWEEN 1 AND 4"},
      {"types or start times out of range",
       "SELECT (SELECT count(*) FROM access_info WHERE ai_type NOT BETWEEN 1 AND 4) + (SELECT count(*) FROM "
       "special_facility WHERE sf_type NOT BETWEEN 1 AND 4) + (SELECT count(*) FROM call_forwarding WHERE start_time "
       "NOT IN (0, 8, 16))"},
  };
  std::vector<std::string> problems;
  count_violations(c, rules, &problems);
  const int64_t after = invariant(c);
  if (after != before + committed_delta) {
    problems.push_back(fmt::format("call_forwarding has {} rows != {} before + {} committed inserts-deletes (off by {})",
                                   after, before, committed_delta, after - before - committed_delta));
  }
  return check_verdict(problems, fmt::format("check passed: {} subscribers, every reference resolves; call_forwarding {} rows = {} "
                              "before + {} committed inserts-deletes",
                              P, after, before, committed_delta));
}

}  // namespace pandora::workloads::pg
