// pandora-pg-bench's parseable parts: SQLSTATE retry classification, the
// command line, SmallBank's draw (the same mix and picking rule as
// workloads/smallbank), and TPC-C's scale and parameters (the same bounds
// and rules as workloads/tpcc).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "workloads/peers/postgres/pg_bench_config.h"
#include "workloads/peers/postgres/smallbank_pg.h"
#include "workloads/peers/postgres/sqlstate.h"
#include "workloads/peers/postgres/tpcc_params.h"
#include "workloads/tpcc/tpcc.h"

namespace pandora::workloads::pg {
namespace {

TEST(SqlState, RetriesSerializationFailuresAndDeadlocksOnly) {
  EXPECT_EQ(classify_sqlstate("40001"), PgFailure::kSerialization);
  EXPECT_EQ(classify_sqlstate("40P01"), PgFailure::kDeadlock);
  EXPECT_TRUE(is_retryable("40001"));
  EXPECT_TRUE(is_retryable("40P01"));
  // Other class-40 codes, constraint violations, connection loss (no code).
  for (const char* s : {"40002", "40003", "23505", "23503", "57P01", "08006", "42P01", "", "4000"}) {
    EXPECT_FALSE(is_retryable(s)) << s;
  }
}

PgBenchArgs parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pandora-pg-bench");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_pg_bench_args(static_cast<int>(argv.size()), argv.data());
}

TEST(PgBenchArgs, DefaultsAndValues) {
  PgBenchArgs a = parse({"--conninfo", "host=/x port=1", "--threads", "8", "--seconds", "3", "--accounts", "500",
                         "--hot-fraction", "0.1", "--report", "r.json", "--no-check", "--load"});
  ASSERT_EQ(a.outcome, PgBenchArgs::Outcome::kRun) << a.message;
  EXPECT_EQ(a.config.conninfo, "host=/x port=1");
  EXPECT_EQ(a.config.threads, 8u);
  EXPECT_EQ(a.config.seconds, 3u);
  EXPECT_EQ(a.config.warmup_seconds, 1u);
  EXPECT_EQ(a.config.smallbank.accounts, 500u);
  EXPECT_DOUBLE_EQ(a.config.smallbank.hot_fraction, 0.1);
  EXPECT_EQ(a.config.report_path, "r.json");
  EXPECT_FALSE(a.config.check);
  EXPECT_TRUE(a.config.load);
  EXPECT_EQ(a.config.workload, "smallbank");
}

TEST(PgBenchArgs, HelpListsEveryFlag) {
  PgBenchArgs a = parse({"--help"});
  ASSERT_EQ(a.outcome, PgBenchArgs::Outcome::kHelp);
  for (const char* f : {"--conninfo", "--pg-dir", "--workload", "--threads", "--seconds", "--report", "--load",
                        "--warehouses", "--tpcc-items", "--tpcc-customers-per-district"}) {
    EXPECT_NE(a.message.find(f), std::string::npos) << f;
  }
}

TEST(PgBenchArgs, RejectsBadInputNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"--threads", "4"}, "--conninfo"},                                    // neither
      {{"--conninfo", "x", "--pg-dir", "/tmp"}, "exactly one"},              // both
      {{"--conninfo", "x", "--threads", "0"}, "threads"},
      {{"--conninfo", "x", "--threads", "many"}, "threads"},
      {{"--conninfo", "x", "--workload", "tpch"}, "workload"},
      {{"--conninfo", "x", "--accounts", "1"}, "accounts"},
      {{"--conninfo", "x", "--hot-fraction", "1.5"}, "hot-fraction"},
      {{"--conninfo", "x", "--hot-probability", "x"}, "hot-probability"},
      {{"--conninfo", "x", "--mix", "all"}, "mix"},
      {{"--conninfo", "x", "--seconds", "-1"}, "seconds"},
      {{"--conninfo", "x", "--bogus"}, "bogus"},
      {{"--pg-dir", "/nonexistent/pandora-pg"}, "/nonexistent/pandora-pg/conninfo"},
      {{"--conninfo", "x", "--workload", "tpcc", "--tpcc-items", "0"}, "--tpcc-items: must be between 1 and 1048574"},
      {{"--conninfo", "x", "--workload", "tpcc", "--tpcc-items", "1048575"}, "--tpcc-items: must be between 1 and 1048574"},
      {{"--conninfo", "x", "--tpcc-items", "many"}, "--tpcc-items"},
      {{"--conninfo", "x", "--workload", "tpcc", "--tpcc-customers-per-district", "9"},
       "--tpcc-customers-per-district: must be between 10 and 4095"},
      {{"--conninfo", "x", "--workload", "tpcc", "--tpcc-customers-per-district", "4096"},
       "--tpcc-customers-per-district: must be between 10 and 4095"},
      {{"--conninfo", "x", "--tpcc-customers-per-district", "-3"}, "--tpcc-customers-per-district"},
  };
  for (const Case& c : cases) {
    PgBenchArgs a = parse(c.args);
    EXPECT_EQ(a.outcome, PgBenchArgs::Outcome::kError) << c.args[0];
    EXPECT_NE(a.message.find(c.expect), std::string::npos) << a.message;
  }
}

TEST(PgBenchArgs, PgDirReadsConninfo) {
  char tmpl[] = "/tmp/pg-bench-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/conninfo") << "host=" << dir << "/sock port=5 user=pandora\n";
  PgBenchArgs a = parse({"--pg-dir", dir});
  EXPECT_EQ(a.outcome, PgBenchArgs::Outcome::kRun) << a.message;
  EXPECT_EQ(a.config.conninfo, "host=" + dir + "/sock port=5 user=pandora");
  std::ofstream(dir + "/conninfo", std::ios::trunc);  // empty
  a = parse({"--pg-dir", dir});
  EXPECT_EQ(a.outcome, PgBenchArgs::Outcome::kError);
  EXPECT_NE(a.message.find("empty"), std::string::npos) << a.message;
  std::remove((dir + "/conninfo").c_str());
  rmdir(dir.c_str());
}

TEST(PgBenchArgs, TpccScaleDefaultsAreTheSpecsAndFlagsSetThem) {
  PgBenchArgs a = parse({"--conninfo", "x", "--workload", "tpcc"});
  ASSERT_EQ(a.outcome, PgBenchArgs::Outcome::kRun) << a.message;
  EXPECT_EQ(a.config.tpcc.warehouses, 1u);
  EXPECT_EQ(a.config.tpcc.items, 100000u);                   // clause 4.3.3.1
  EXPECT_EQ(a.config.tpcc.customers_per_district, 3000u);
  EXPECT_EQ(a.config.tpcc.orders(), 3000u);
  EXPECT_EQ(a.config.tpcc.new_orders(), 900u);
  EXPECT_EQ(a.config.tpcc.first_new_order(), 2101u);
  EXPECT_EQ(a.config.tpcc.last_names(), 1000u);

  a = parse({"--conninfo", "x", "--workload", "tpcc", "--warehouses", "2", "--tpcc-items", "5000",
             "--tpcc-customers-per-district", "300"});
  ASSERT_EQ(a.outcome, PgBenchArgs::Outcome::kRun) << a.message;
  EXPECT_EQ(a.config.tpcc.warehouses, 2u);
  EXPECT_EQ(a.config.tpcc.items, 5000u);
  EXPECT_EQ(a.config.tpcc.customers_per_district, 300u);
  EXPECT_EQ(a.config.tpcc.new_orders(), 90u);
  EXPECT_EQ(a.config.tpcc.first_new_order(), 211u);
  EXPECT_EQ(a.config.tpcc.last_names(), 300u);
  Result<std::unique_ptr<PgWorkload>> w = make_pg_workload(a.config);
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  EXPECT_EQ((*w)->options_json(),
            (nlohmann::json{{"warehouses", 2}, {"items", 5000}, {"customers_per_district", 300}}));

  // The bounds themselves are accepted.
  for (const char* v : {"1", "1048574"}) {
    EXPECT_EQ(parse({"--conninfo", "x", "--workload", "tpcc", "--tpcc-items", v}).outcome,
              PgBenchArgs::Outcome::kRun) << v;
  }
  for (const char* v : {"10", "4095"}) {
    EXPECT_EQ(parse({"--conninfo", "x", "--workload", "tpcc", "--tpcc-customers-per-district", v}).outcome,
              PgBenchArgs::Outcome::kRun) << v;
  }
}

TEST(PgBenchArgs, TpccScaleOutOfBoundsIsRefusedWithoutTheCommandLineToo) {
  PgBenchConfig cfg;
  cfg.workload = "tpcc";
  cfg.tpcc.items = 0;
  Result<std::unique_ptr<PgWorkload>> w = make_pg_workload(cfg);
  ASSERT_FALSE(w.is_ok());
  EXPECT_EQ(w.status().message(), "--tpcc-items 0 must be in 1..1048574");
  cfg.tpcc.items = 100;
  cfg.tpcc.customers_per_district = 4096;
  w = make_pg_workload(cfg);
  ASSERT_FALSE(w.is_ok());
  EXPECT_EQ(w.status().message(), "--tpcc-customers-per-district 4096 must be in 10..4095");
}

// The scale's bounds and derived counts are pandora-bench's, value by value.
TEST(TpccScale, SameBoundsAndUndeliveredOrdersAsPandora) {
  for (uint64_t items : {uint64_t{0}, uint64_t{1}, uint64_t{5000}, uint64_t{100000}, uint64_t{1048574},
                         uint64_t{1048575}}) {
    for (uint64_t customers : {uint64_t{9}, uint64_t{10}, uint64_t{11}, uint64_t{99}, uint64_t{300},
                               uint64_t{1000}, uint64_t{3000}, uint64_t{4095}, uint64_t{4096}}) {
      tpcc::Scale mine;
      mine.items = items;
      mine.customers_per_district = customers;
      workloads::TpccOptions theirs;
      theirs.items = items;
      theirs.customers_per_district = customers;
      auto pandora = TpccWorkload::create(theirs);
      const Status ok = tpcc::check_scale(mine);
      ASSERT_EQ(ok.is_ok(), pandora.is_ok()) << items << " items, " << customers << " customers: " << ok.message();
      if (!ok.is_ok()) {
        EXPECT_EQ(ok.message(), pandora.status().message());
        continue;
      }
      EXPECT_EQ(mine.new_orders(), (*pandora)->initial_new_orders()) << customers;
      EXPECT_EQ(mine.first_new_order(), (*pandora)->first_undelivered()) << customers;
    }
  }
}

// Every drawn input refers to rows the smaller load has.
TEST(TpccScale, GenerationStaysWithinASmallerScale) {
  for (const std::pair<uint64_t, uint64_t>& size :
       {std::pair<uint64_t, uint64_t>{50, 12}, {5000, 300}, {100000, 3000}}) {
    const uint64_t items = size.first, customers = size.second;
    tpcc::Scale sc;
    sc.warehouses = 3;
    sc.items = items;
    sc.customers_per_district = customers;
    std::set<std::string> names;  // the last names the load gives out
    for (uint32_t n = 0; n < sc.last_names(); ++n) names.insert(tpcc::last_name(n));
    Rng rng(items + customers);
    uint64_t max_item = 0, max_customer = 0, rollbacks = 0;
    std::set<std::string> drawn_names;
    auto check_customer = [&](const tpcc::CustomerPick& p) {
      if (p.by_name) {
        ASSERT_EQ(names.count(p.c_last), 1u) << p.c_last << " at " << customers << " customers";
        drawn_names.insert(p.c_last);
      } else {
        ASSERT_GE(p.c_id, 1u);
        ASSERT_LE(p.c_id, customers);
        max_customer = std::max(max_customer, p.c_id);
      }
    };
    for (int k = 0; k < 20000; ++k) {
      const uint64_t w = between(rng, 1, sc.warehouses);
      const tpcc::NewOrderParams no = tpcc::new_order_params(rng, w, sc);
      ASSERT_GE(no.d, 1u);
      ASSERT_LE(no.d, tpcc::kDistricts);
      ASSERT_GE(no.c, 1u);
      ASSERT_LE(no.c, customers);
      max_customer = std::max(max_customer, no.c);
      ASSERT_GE(no.lines.size(), 5u);
      ASSERT_LE(no.lines.size(), 15u);
      for (size_t n = 0; n < no.lines.size(); ++n) {
        const tpcc::OrderLine& l = no.lines[n];
        if (no.rollback && n + 1 == no.lines.size()) {
          ASSERT_EQ(l.i_id, items + 1);  // the unused id, one past the loaded items
          ++rollbacks;
        } else {
          ASSERT_GE(l.i_id, 1u);
          ASSERT_LE(l.i_id, items);
          max_item = std::max(max_item, l.i_id);
        }
        ASSERT_GE(l.supply_w, 1u);
        ASSERT_LE(l.supply_w, sc.warehouses);
      }
      const tpcc::PaymentParams pay = tpcc::payment_params(rng, w, sc);
      ASSERT_GE(pay.c_w, 1u);
      ASSERT_LE(pay.c_w, sc.warehouses);
      ASSERT_GE(pay.c_d, 1u);
      ASSERT_LE(pay.c_d, tpcc::kDistricts);
      check_customer(pay.customer);
      check_customer(tpcc::pick_customer(rng, sc));
    }
    EXPECT_GT(rollbacks, 0u);
    // NURand reaches up to the scale's bound, not only a corner of it.
    EXPECT_GT(max_item, items * 9 / 10) << items;
    EXPECT_GT(max_customer, customers * 9 / 10) << customers;
    EXPECT_GT(drawn_names.size(), names.size() * 9 / 10) << customers;
  }
}

std::unique_ptr<SmallBankPg> smallbank(SmallBankOptions o) {
  auto sb = SmallBankWorkload::create(o);
  EXPECT_TRUE(sb.is_ok());
  return std::make_unique<SmallBankPg>(std::move(*sb));
}

TEST(SmallBankPg, DrawFollowsTheStandardMix) {
  auto w = smallbank(SmallBankOptions{});
  Rng rng(7);
  std::vector<uint64_t> n(6, 0);
  const int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    PgTxn t = w->draw(rng);
    ASSERT_LT(t.type, 6u);
    ++n[t.type];
    // Only Balance is read-only.
    EXPECT_EQ(t.read_only, t.type == SmallBankWorkload::kBalance);
  }
  const double want[6] = {0.15, 0.15, 0.15, 0.25, 0.15, 0.15};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(static_cast<double>(n[i]) / kDraws, want[i], 0.01) << i;
}

TEST(SmallBankPg, TransfersMixDrawsOnlyNetZeroTransactions) {
  SmallBankOptions o;
  o.mix = SmallBankMix::kTransfers;
  auto w = smallbank(o);
  Rng rng(3);
  std::vector<uint64_t> n(6, 0);
  const int kDraws = 110000;
  for (int i = 0; i < kDraws; ++i) ++n[w->draw(rng).type];
  EXPECT_EQ(n[SmallBankWorkload::kDepositChecking] + n[SmallBankWorkload::kTransactSavings] +
                n[SmallBankWorkload::kWriteCheck],
            0u);
  EXPECT_NEAR(static_cast<double>(n[SmallBankWorkload::kSendPayment]) / kDraws, 25.0 / 55, 0.01);
}

TEST(SmallBankPg, PicksHotAccountsWithTheHotProbabilityAndTwoDistinct) {
  SmallBankOptions o;
  o.accounts = 10000;
  o.hot_fraction = 0.01;   // 100 hot accounts
  o.hot_probability = 0.9;
  auto w = smallbank(o);
  auto sb = SmallBankWorkload::create(o);
  ASSERT_TRUE(sb.is_ok());
  // The peer draws exactly what Pandora's SmallBank draws.
  Rng mine(11), peers(11);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(w->draw(peers).type, (*sb)->draw(mine).type);
  Rng rng(11);
  int hot = 0;
  const int kPicks = 100000;
  for (int i = 0; i < kPicks; ++i) {
    const SmallBankWorkload::Draw d = (*sb)->draw(rng);
    ASSERT_LT(d.a0, o.accounts);
    hot += d.a0 < 100 ? 1 : 0;
    if (d.type == SmallBankWorkload::kAmalgamate || d.type == SmallBankWorkload::kSendPayment) {
      ASSERT_NE(d.a0, d.a1);
      ASSERT_LT(d.a1, o.accounts);
    }
  }
  // 0.9 from the hot set + 0.1 x 1% of the uniform picks.
  EXPECT_NEAR(static_cast<double>(hot) / kPicks, 0.9 + 0.1 * 0.01, 0.01);
}

}  // namespace
}  // namespace pandora::workloads::pg
