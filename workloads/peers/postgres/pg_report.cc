#include "workloads/peers/postgres/pg_report.h"

#include <fmt/format.h>

namespace pandora::workloads::pg {

namespace {

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }
double per(uint64_t n, uint64_t d) { return d == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(d); }

nlohmann::json latency_json(const LatencyHistogram& h) {
  return {{"p50", us(h.percentile(0.5))}, {"p99", us(h.percentile(0.99))}, {"p999", us(h.percentile(0.999))},
          {"mean", h.mean() / 1000.0}, {"max", us(h.max())}};
}

}  // namespace

std::string format_pg_text(const PgSummary& s) {
  const PgBenchConfig& c = *s.config;
  std::string out = fmt::format("workload {} ({}); PostgreSQL {}, SERIALIZABLE, {} thread(s) (one connection each)\n",
                                c.workload, s.workload->options_text(), s.server.value("version", "?"), c.threads);
  if (s.load_seconds > 0) {
    out += fmt::format("loaded {} rows in {:.2f} s ({:.0f} rows/s)\n", s.rows_loaded, s.load_seconds,
                       static_cast<double>(s.rows_loaded) / s.load_seconds);
  }
  if (s.stats) {
    const PgRunStats& r = *s.stats;
    out += fmt::format("throughput: {:.0f} commits/s ({} commits of {} attempts in {:.1f} s after {} s warm-up)\n",
                       r.commits_per_second(), r.commits, r.attempts, r.measured_seconds, c.warmup_seconds);
    out += fmt::format("aborts: {:.2f}% of attempts", 100.0 * per(r.attempts - r.commits, r.attempts));
    for (size_t i = 0; i < kPgAborts; ++i) {
      if (r.aborts[i] == 0) continue;
      out += fmt::format(", {} {:.2f}%", pg_abort_name(static_cast<PgAbort>(i)), 100.0 * per(r.aborts[i], r.attempts));
    }
    out += fmt::format("; retries {} ({:.2f}% of attempts)\n", r.retries, 100.0 * per(r.retries, r.attempts));
    out += fmt::format("latency of committed transactions: p50 {:.1f} us, p99 {:.1f} us, p99.9 {:.1f} us (mean {:.1f}, "
                       "max {:.1f}); with retries p50 {:.1f} us, p99 {:.1f} us\n",
                       us(r.latency.percentile(0.5)), us(r.latency.percentile(0.99)),
                       us(r.latency.percentile(0.999)), r.latency.mean() / 1000.0, us(r.latency.max()),
                       us(r.latency_with_retries.percentile(0.5)), us(r.latency_with_retries.percentile(0.99)));
    out += "by type:";
    const auto& types = s.workload->txn_types();
    for (size_t i = 0; i < types.size() && i < r.commits_by_type.size(); ++i) {
      out += fmt::format(" {} {} commits ({:.1f}% aborted);", types[i], r.commits_by_type[i],
                         100.0 * per(r.aborts_by_type[i], r.commits_by_type[i] + r.aborts_by_type[i]));
    }
    out += "\n";
  }
  out += s.check ? s.check->message + "\n" : std::string("check skipped (--no-check)\n");
  return out;
}

nlohmann::json format_pg_json(const PgSummary& s) {
  const PgBenchConfig& c = *s.config;
  nlohmann::json j;
  j["system"] = "postgresql";
  j["isolation"] = "serializable";
  j["workload"] = c.workload;
  j["workload_options"] = s.workload->options_json();
  j["threads"] = c.threads;
  j["connections"] = c.threads;
  j["seed"] = c.seed;
  j["server"] = s.server;
  j["load_seconds"] = s.load_seconds;
  j["rows_loaded"] = s.rows_loaded;
  j["load_rows_per_second"] = s.load_seconds > 0 ? static_cast<double>(s.rows_loaded) / s.load_seconds : 0.0;
  if (s.stats) {
    const PgRunStats& r = *s.stats;
    j["seconds"] = r.measured_seconds;
    j["warmup_seconds"] = c.warmup_seconds;
    j["attempts"] = r.attempts;
    j["commits"] = r.commits;
    j["commits_per_second"] = r.commits_per_second();
    j["abort_rate"] = per(r.attempts - r.commits, r.attempts);
    j["retries"] = r.retries;
    j["retry_rate"] = per(r.retries, r.attempts);
    nlohmann::json aborts = nlohmann::json::object();
    for (size_t i = 0; i < kPgAborts; ++i) aborts[std::string(pg_abort_name(static_cast<PgAbort>(i)))] = r.aborts[i];
    j["aborts"] = aborts;
    j["latency_us"] = latency_json(r.latency);
    j["latency_with_retries_us"] = latency_json(r.latency_with_retries);
    nlohmann::json types = nlohmann::json::array();
    const auto& names = s.workload->txn_types();
    for (size_t i = 0; i < names.size() && i < r.commits_by_type.size(); ++i) {
      types.push_back({{"name", names[i]}, {"commits", r.commits_by_type[i]}, {"aborts", r.aborts_by_type[i]}});
    }
    j["types"] = types;
    j["committed_delta"] = r.committed_delta;
    j["total_commits"] = r.total_commits;
  }
  if (s.invariant_before) j["invariant_before"] = *s.invariant_before;
  if (s.check) {
    j["check"] = {{"ran", true}, {"passed", s.check->passed}, {"message", s.check->message}};
  } else {
    j["check"] = {{"ran", false}};
  }
  return j;
}

}  // namespace pandora::workloads::pg
