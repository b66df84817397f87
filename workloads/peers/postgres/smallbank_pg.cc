#include "workloads/peers/postgres/smallbank_pg.h"

#include <fmt/format.h>

namespace pandora::workloads::pg {

namespace {

using SB = SmallBankWorkload;
std::string s(uint64_t v) { return std::to_string(v); }
std::string s(int64_t v) { return std::to_string(v); }

PgBodyResult amalgamate(PgConn& c, uint64_t a0, uint64_t a1) {
  // Lock a0's two rows and a1's checking (as Pandora's three update()s).
  PgResult r = c.run("sb_lock_both", {s(a0)});
  if (r.rows() != 1) return {PgEnd::kNotFound, 0};
  const int64_t total = r.i64(0, 0) + r.i64(0, 1);
  if (c.run("sb_lock_checking", {s(a1)}).rows() != 1) return {PgEnd::kNotFound, 0};
  c.run("sb_set_savings", {s(a0), "0"});
  c.run("sb_set_checking", {s(a0), "0"});
  c.run("sb_add_checking", {s(a1), s(total)});
  return {PgEnd::kCommit, 0};
}

PgBodyResult balance(PgConn& c, uint64_t a) {
  if (c.run("sb_read_both", {s(a)}).rows() != 1) return {PgEnd::kNotFound, 0};
  return {PgEnd::kCommit, 0};
}

PgBodyResult deposit_checking(PgConn& c, uint64_t a) {
  if (c.run("sb_add_checking", {s(a), s(SB::kDepositAmount)}).affected() != 1) return {PgEnd::kNotFound, 0};
  return {PgEnd::kCommit, SB::kDepositAmount};
}

PgBodyResult send_payment(PgConn& c, uint64_t a0, uint64_t a1) {
  // Both checking rows locked first, in key order (one statement), as
  // Pandora latches both before it looks at the balance.
  PgResult r = c.run("sb_lock_two_checking", {s(a0), s(a1)});
  if (r.rows() != 2) return {PgEnd::kNotFound, 0};
  const int64_t from = r.i64(0, 0) == static_cast<int64_t>(a0) ? r.i64(0, 1) : r.i64(1, 1);
  if (from < SB::kPaymentAmount) return {PgEnd::kUser, 0};  // insufficient funds
  c.run("sb_add_checking", {s(a0), s(-SB::kPaymentAmount)});
  c.run("sb_add_checking", {s(a1), s(SB::kPaymentAmount)});
  return {PgEnd::kCommit, 0};
}

PgBodyResult transact_savings(PgConn& c, uint64_t a) {
  PgResult r = c.run("sb_lock_savings", {s(a)});
  if (r.rows() != 1) return {PgEnd::kNotFound, 0};
  if (r.i64(0, 0) + SB::kTransactAmount < 0) return {PgEnd::kUser, 0};  // a withdrawal beyond the balance
  c.run("sb_add_savings", {s(a), s(SB::kTransactAmount)});
  return {PgEnd::kCommit, SB::kTransactAmount};
}

PgBodyResult write_check(PgConn& c, uint64_t a) {
  // Savings read, checking locked (Pandora: read + update).
  PgResult r = c.run("sb_read_savings_lock_checking", {s(a)});
  if (r.rows() != 1) return {PgEnd::kNotFound, 0};
  const int64_t funds = r.i64(0, 0) + r.i64(0, 1);
  const int64_t debit = funds < SB::kCheckAmount ? SB::kCheckAmount + SB::kOverdraftPenalty : SB::kCheckAmount;
  c.run("sb_add_checking", {s(a), s(-debit)});
  return {PgEnd::kCommit, -debit};
}

}  // namespace

nlohmann::json SmallBankPg::options_json() const {
  const SmallBankOptions& o = sb_->options();
  return {{"accounts", o.accounts},
          {"hot_fraction", o.hot_fraction},
          {"hot_probability", o.hot_probability},
          {"mix", std::string(smallbank_mix_name(o.mix))}};
}

std::string SmallBankPg::options_text() const {
  const SmallBankOptions& o = sb_->options();
  return fmt::format("{} accounts, hot fraction {}, hot probability {}, mix {}", o.accounts, o.hot_fraction,
                     o.hot_probability, smallbank_mix_name(o.mix));
}

uint64_t SmallBankPg::load(PgConn& c, const std::function<void(uint64_t)>& progress) const {
  const uint64_t n = sb_->options().accounts;
  uint64_t rows = 0;
  // Created and filled in one transaction: with wal_level=minimal the COPY
  // writes no WAL; the primary keys are built once at the end.
  c.exec("BEGIN");
  c.exec("DROP TABLE IF EXISTS savings, checking");
  for (const auto& t : {std::pair{"savings", SB::kSavings}, std::pair{"checking", SB::kChecking}}) {
    const char* table = t.first;
    const uint32_t id = t.second;
    c.exec(fmt::format("CREATE TABLE {} (id bigint NOT NULL, bal bigint NOT NULL)", table));
    uint64_t a = 0;
    rows += c.copy_in(fmt::format("COPY {} FROM STDIN", table), [&](std::string& buf) {
      for (int i = 0; i < 4096 && a < n; ++i, ++a) fmt::format_to(std::back_inserter(buf), "{}\t{}\n", a,
                                                                  SB::initial_balance(id, a));
      progress(rows + a);
      return a < n;
    });
    c.exec(fmt::format("ALTER TABLE {} ADD PRIMARY KEY (id)", table));
  }
  c.exec("COMMIT");
  c.exec("VACUUM ANALYZE savings, checking");
  return rows;
}

void SmallBankPg::prepare(PgConn& c) const {
  c.prepare("sb_read_both", "SELECT s.bal, c.bal FROM savings s, checking c WHERE s.id = $1 AND c.id = $1");
  c.prepare("sb_lock_both",
            "SELECT s.bal, c.bal FROM savings s, checking c WHERE s.id = $1 AND c.id = $1 FOR UPDATE");
  c.prepare("sb_read_savings_lock_checking",
            "SELECT s.bal, c.bal FROM savings s, checking c WHERE s.id = $1 AND c.id = $1 FOR UPDATE OF c");
  c.prepare("sb_lock_checking", "SELECT bal FROM checking WHERE id = $1 FOR UPDATE");
  c.prepare("sb_lock_savings", "SELECT bal FROM savings WHERE id = $1 FOR UPDATE");
  c.prepare("sb_lock_two_checking", "SELECT id, bal FROM checking WHERE id IN ($1, $2) ORDER BY id FOR UPDATE");
  c.prepare("sb_set_savings", "UPDATE savings SET bal = $2 WHERE id = $1");
  c.prepare("sb_set_checking", "UPDATE checking SET bal = $2 WHERE id = $1");
  c.prepare("sb_add_savings", "UPDATE savings SET bal = bal + $2 WHERE id = $1");
  c.prepare("sb_add_checking", "UPDATE checking SET bal = bal + $2 WHERE id = $1");
}

PgTxn SmallBankPg::draw(Rng& rng) const {
  // SmallBankWorkload's own draw: the same mix, hot set and accounts.
  using T = SmallBankWorkload::Type;
  const SmallBankWorkload::Draw d = sb_->draw(rng);
  const uint64_t a0 = d.a0, a1 = d.a1;
  switch (d.type) {
    case T::kAmalgamate: return {d.type, false, [a0, a1](PgConn& c) { return amalgamate(c, a0, a1); }};
    case T::kBalance: return {d.type, true, [a0](PgConn& c) { return balance(c, a0); }};
    case T::kDepositChecking: return {d.type, false, [a0](PgConn& c) { return deposit_checking(c, a0); }};
    case T::kSendPayment: return {d.type, false, [a0, a1](PgConn& c) { return send_payment(c, a0, a1); }};
    case T::kTransactSavings: return {d.type, false, [a0](PgConn& c) { return transact_savings(c, a0); }};
    case T::kWriteCheck: break;
  }
  return {T::kWriteCheck, false, [a0](PgConn& c) { return write_check(c, a0); }};
}

int64_t SmallBankPg::invariant(PgConn& c) const {
  return c.exec("SELECT (SELECT coalesce(sum(bal), 0) FROM savings) + (SELECT coalesce(sum(bal), 0) FROM checking)")
      .i64(0, 0);
}

PgCheck SmallBankPg::check(PgConn& c, int64_t before, int64_t committed_delta) const {
  const uint64_t n = sb_->options().accounts;
  PgResult r = c.exec(
      "SELECT (SELECT count(*) FROM savings), (SELECT count(*) FROM checking), "
      "(SELECT count(*) FROM savings WHERE id < 0 OR id >= " + std::to_string(n) + "), "
      "(SELECT count(*) FROM checking WHERE id < 0 OR id >= " + std::to_string(n) + ")");
  std::vector<std::string> problems;
  if (r.i64(0, 0) != static_cast<int64_t>(n) || r.i64(0, 1) != static_cast<int64_t>(n)) {
    problems.push_back(fmt::format("{} savings and {} checking rows, {} loaded", r.i64(0, 0), r.i64(0, 1), n));
  }
  if (r.i64(0, 2) + r.i64(0, 3) != 0) problems.push_back("rows with account ids outside the loaded range");
  const int64_t after = invariant(c);
  if (after != before + committed_delta) {
    problems.push_back(fmt::format("total money {} != {} before + {} committed nets (off by {})", after, before,
                                   committed_delta, after - before - committed_delta));
  }
  return check_verdict(problems, fmt::format("check passed: total money (cents) {} = {} before + {} committed nets; {} accounts",
                              after, before, committed_delta, n));
}

}  // namespace pandora::workloads::pg
