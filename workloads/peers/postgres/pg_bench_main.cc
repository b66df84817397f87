// pandora-pg-bench: see pg_bench_config.cc (--help) and README.md here.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "workloads/peers/postgres/pg_bench_config.h"
#include "workloads/peers/postgres/pg_report.h"
#include "workloads/peers/postgres/pg_runner.h"

namespace pandora::workloads::pg {
namespace {

using Clock = std::chrono::steady_clock;

void fail(std::string_view what) { fmt::print(stderr, "pandora-pg-bench: {}\n", what); }

// The server's version and the settings that decide what a commit means.
nlohmann::json server_info(PgConn& c) {
  nlohmann::json settings = nlohmann::json::object();
  for (const char* name : {"fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers",
                           "max_connections", "default_transaction_isolation"}) {
    settings[name] = std::string(c.exec(fmt::format("SHOW {}", name)).text(0, 0));
  }
  return {{"version", std::string(c.exec("SHOW server_version").text(0, 0))}, {"settings", settings}};
}

// SIGTERM/SIGINT end the run after the current transactions (the summary,
// report and check still happen): both are blocked in every thread and one
// thread waits for them, so no handler and no global flag are needed.
class StopSignals {
 public:
  explicit StopSignals(std::atomic<bool>* flag) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::thread([this, flag] {
      const timespec tick{0, 100'000'000};
      while (!done_.load()) {
        if (sigtimedwait(&set_, nullptr, &tick) > 0) flag->store(true);
      }
    });
  }
  ~StopSignals() {
    done_.store(true);
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  sigset_t set_{}, old_{};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

int run(const PgBenchConfig& cfg) {
  Result<std::unique_ptr<PgWorkload>> made = make_pg_workload(cfg);
  if (!made) {
    fail(made.status().message());
    return 2;
  }
  const PgWorkload& w = **made;
  Result<std::unique_ptr<PgConn>> conn = PgConn::connect(cfg.conninfo);
  if (!conn) {
    fail(conn.status().message());
    return 1;
  }
  PgConn& c = **conn;
  PgSummary summary;
  summary.config = &cfg;
  summary.workload = &w;
  try {
    summary.server = server_info(c);
    if (cfg.load) {
      const Clock::time_point t0 = Clock::now();
      Clock::time_point next = t0 + std::chrono::seconds(1);
      summary.rows_loaded = w.load(c, [&](uint64_t rows) {
        if (Clock::now() < next) return;
        next += std::chrono::seconds(1);
        fmt::print("loading: {} rows\n", rows);
        std::fflush(stdout);
      });
      summary.load_seconds = std::max(1e-6, std::chrono::duration<double>(Clock::now() - t0).count());
      fmt::print("loaded {} rows in {:.2f} s ({:.0f} rows/s)\n", summary.rows_loaded, summary.load_seconds,
                 static_cast<double>(summary.rows_loaded) / summary.load_seconds);
    }
    if (cfg.check) summary.invariant_before = w.invariant(c);
  } catch (const PgError& e) {
    fail(fmt::format("{}{}", cfg.load ? "load failed: " : "reading the tables (load them with --load): ", e.what()));
    return 1;
  }
  if (cfg.seconds > 0) {
    std::atomic<bool> stop{false};
    const StopSignals signals(&stop);
    PgRunOptions o;
    o.threads = static_cast<uint32_t>(cfg.threads);
    o.warmup = std::chrono::seconds(cfg.warmup_seconds);
    o.measure = std::chrono::seconds(cfg.seconds);
    o.seed = cfg.seed;
    o.stop = &stop;
    o.on_progress = [](double t, bool warm, uint64_t commits, double cps) {
      fmt::print("[{:6.1f} s] {}{:.0f} commits/s ({} commits so far)\n", t, warm ? "warm-up " : "", cps, commits);
      std::fflush(stdout);
    };
    Result<PgRunStats> st = run_pg_workload(cfg.conninfo, w, o);
    if (!st) {
      fail(fmt::format("run failed: {}", st.status().message()));
      return 1;
    }
    summary.stats = std::move(*st);
    if (stop.load()) fmt::print("stopped by a signal: the run ended early\n");
  }
  if (cfg.check) {
    try {
      summary.check = w.check(c, *summary.invariant_before, summary.stats ? summary.stats->committed_delta : 0);
    } catch (const PgError& e) {
      summary.check = PgCheck{false, fmt::format("check FAILED: {}", e.what())};
    }
  }
  fmt::print("{}", format_pg_text(summary));
  std::fflush(stdout);
  if (!cfg.report_path.empty()) {
    std::ofstream f(cfg.report_path);
    f << format_pg_json(summary).dump(2) << "\n";
    if (!f.flush()) {
      fail(fmt::format("could not write the report to {}", cfg.report_path));
      return 1;
    }
  }
  return summary.check && !summary.check->passed ? 1 : 0;
}

}  // namespace
}  // namespace pandora::workloads::pg

int main(int argc, char** argv) {
  using pandora::workloads::pg::PgBenchArgs;
  PgBenchArgs args = pandora::workloads::pg::parse_pg_bench_args(argc, argv);
  switch (args.outcome) {
    case PgBenchArgs::Outcome::kHelp:
      fmt::print("{}", args.message);
      return 0;
    case PgBenchArgs::Outcome::kError:
      fmt::print(stderr, "pandora-pg-bench: {}\npandora-pg-bench: run with --help for the options\n", args.message);
      return 2;
    case PgBenchArgs::Outcome::kRun:
      break;
  }
  return pandora::workloads::pg::run(args.config);
}
