// pandora-pg-bench's parseable parts: SQLSTATE retry classification, the
// command line, and SmallBank's draw (the same mix and picking rule as
// workloads/smallbank).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "workloads/peers/postgres/pg_bench_config.h"
#include "workloads/peers/postgres/smallbank_pg.h"
#include "workloads/peers/postgres/sqlstate.h"

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
  for (const char* f : {"--conninfo", "--pg-dir", "--workload", "--threads", "--seconds", "--report", "--load"}) {
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
