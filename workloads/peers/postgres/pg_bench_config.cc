#include "workloads/peers/postgres/pg_bench_config.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/options.h"
#include "workloads/peers/postgres/smallbank_pg.h"

namespace pandora::workloads::pg {

namespace {

constexpr std::string_view kSummary =
    "Runs SmallBank, TATP or TPC-C against PostgreSQL at SERIALIZABLE, the peer Pandora is compared with "
    "(deploy/compare/compare.sh). --threads client threads, one connection each; a transaction that fails with "
    "a serialization failure (SQLSTATE 40001) or a deadlock (40P01) is rolled back and run again with the same "
    "parameters. --load drops, creates and loads the tables first (COPY). Prints progress once per second, then "
    "throughput, abort and retry rates, commit latency percentiles and commits per transaction type, and runs the "
    "workload's end-of-run consistency check (exit status 1 if it fails). The check assumes this process is the "
    "only writer during the run.\n"
    "Exit status: 0 success, 1 connection, load, run or check failure, 2 bad command line.";

Result<std::string> read_conninfo(const std::string& dir) {
  const std::string path = dir + "/conninfo";
  std::ifstream f(path);
  if (!f) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--pg-dir: cannot read {} (start the server with deploy/postgres/postgres.sh start "
                              "--dir {})",
                              path, dir));
  }
  std::string line;
  std::getline(f, line);
  if (line.empty()) return Status(Errc::kInvalidArgument, fmt::format("--pg-dir: {} is empty", path));
  return line;
}

}  // namespace

const std::vector<std::string>& pg_workload_names() {
  static const std::vector<std::string> kNames{"smallbank", "tatp", "tpcc"};
  return kNames;
}

PgBenchArgs parse_pg_bench_args(int argc, const char* const* argv) {
  PgBenchArgs out;
  PgBenchConfig& cfg = out.config;
  std::string pg_dir;
  bool no_check = false;
  SmallBankFlags smallbank;

  OptionSet opts("pandora-pg-bench", std::string(kSummary));
  opts.add_string("conninfo", &cfg.conninfo,
                  "libpq connection string, e.g. 'host=/tmp/pg/sock port=5432 user=pandora dbname=postgres "
                  "passfile=/tmp/pg/pgpass' (or --pg-dir)");
  opts.add_string("pg-dir", &pg_dir, "state directory of deploy/postgres/postgres.sh: connect with DIR/conninfo");
  opts.add_choice("workload", &cfg.workload, pg_workload_names(), "workload to run");
  opts.add_flag("load", &cfg.load, "drop, create and load the workload's tables before running");
  opts.add_u64("threads", &cfg.threads, "client threads, one connection (one transaction in flight) each", 1, 1024);
  opts.add_u64("seconds", &cfg.seconds, "measured run time in seconds (0: load and/or check only)", 0, 86400);
  opts.add_u64("warmup-seconds", &cfg.warmup_seconds, "run time before measuring starts", 0, 3600);
  opts.add_u64("seed", &cfg.seed, "seed of every thread's random stream");
  opts.add_string("report", &cfg.report_path, "write a JSON report of the run to this file");
  opts.add_flag("no-check", &no_check, "skip the end-of-run consistency check");
  smallbank.declare(opts);
  opts.add_u64("subscribers", &cfg.tatp.subscribers, "tatp: number of subscribers (rows in subscriber)", 1,
               uint64_t{1} << 31);
  opts.add_u64("warehouses", &cfg.tpcc.warehouses,
               "tpcc: number of warehouses (about 500k rows each at the spec's sizes)", 1, 10000);
  // pandora-bench's flags of the same names (workloads/tpcc/tpcc.cc), with its defaults and bounds.
  opts.add_u64("tpcc-items", &cfg.tpcc.items,
               "tpcc: rows in the item table and stock rows per warehouse (the spec's 100000; smaller for tests)",
               tpcc::Scale::kMinItems, tpcc::Scale::kMaxItems);
  opts.add_u64("tpcc-customers-per-district", &cfg.tpcc.customers_per_district,
               "tpcc: customers per district, also the initial orders per district (the spec's 3000; smaller for "
               "tests); the last 30% of the initial orders are undelivered",
               tpcc::Scale::kMinCustomers, tpcc::Scale::kMaxCustomers);

  switch (opts.parse(argc, argv, &out.message)) {
    case OptionSet::Outcome::kHelp: out.outcome = PgBenchArgs::Outcome::kHelp; return out;
    case OptionSet::Outcome::kError: out.outcome = PgBenchArgs::Outcome::kError; return out;
    case OptionSet::Outcome::kRun: break;
  }
  cfg.check = !no_check;
  if (cfg.conninfo.empty() == pg_dir.empty()) {
    out.message = "give exactly one of --conninfo and --pg-dir";
    return out;
  }
  if (!pg_dir.empty()) {
    Result<std::string> ci = read_conninfo(pg_dir);
    if (!ci) {
      out.message = ci.status().message();
      return out;
    }
    cfg.conninfo = *ci;
  }
  if (Result<SmallBankOptions> sb = smallbank.resolve(); !sb) {
    out.message = sb.status().message();
    return out;
  } else {
    cfg.smallbank = *sb;
  }
  if (Result<std::unique_ptr<PgWorkload>> w = make_pg_workload(cfg); !w) {
    out.message = w.status().message();
    return out;
  }
  out.outcome = PgBenchArgs::Outcome::kRun;
  return out;
}

Result<std::unique_ptr<PgWorkload>> make_pg_workload(const PgBenchConfig& cfg) {
  if (cfg.workload == "smallbank") {
    Result<std::unique_ptr<SmallBankWorkload>> sb = SmallBankWorkload::create(cfg.smallbank);
    if (!sb) return sb.status();
    return std::unique_ptr<PgWorkload>(new SmallBankPg(std::move(*sb)));
  }
  if (cfg.workload == "tatp") return std::unique_ptr<PgWorkload>(new TatpPg(cfg.tatp));
  if (cfg.workload == "tpcc") {
    if (Status st = tpcc::check_scale(cfg.tpcc); !st) return st;
    return std::unique_ptr<PgWorkload>(new TpccPg(cfg.tpcc));
  }
  return Status(Errc::kInvalidArgument, fmt::format("--workload '{}' is not known", cfg.workload));
}

}  // namespace pandora::workloads::pg
