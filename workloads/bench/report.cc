#include "workloads/bench/report.h"

#include <cmath>

#include <fmt/format.h>

#include "compute/txn.h"

namespace pandora::workloads {

namespace {

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

double per(uint64_t n, uint64_t d) { return d == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(d); }

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;
    }
  }
  return out + "\"";
}

// JSON has no NaN/inf; every number we print is finite, but be safe.
std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

std::string workload_options_json(const BenchConfig& c) {
  if (c.workload == "micro") {
    const MicroOptions& m = c.micro;
    return fmt::format(R"({{"keys": {}, "value_size": {}, "write_ratio": {}, "ops_per_txn": {}, "skew": "{}", )"
                       R"("zipf_theta": {}}})",
                       m.keys, m.value_size, num(m.write_ratio), m.ops_per_txn, m.zipf ? "zipf" : "uniform",
                       num(m.zipf_theta));
  }
  if (c.workload == "tatp") return fmt::format(R"({{"subscribers": {}}})", c.tatp.subscribers);
  const SmallBankOptions& b = c.smallbank;
  return fmt::format(R"({{"accounts": {}, "hot_fraction": {}, "hot_probability": {}}})", b.accounts,
                     num(b.hot_fraction), num(b.hot_probability));
}

std::string workload_options_text(const BenchConfig& c) {
  if (c.workload == "micro") {
    const MicroOptions& m = c.micro;
    return fmt::format("keys {}, value {} B, write ratio {}, {} ops/txn, {}", m.keys, m.value_size, m.write_ratio,
                       m.ops_per_txn, m.zipf ? fmt::format("zipf theta {}", m.zipf_theta) : "uniform");
  }
  if (c.workload == "tatp") return fmt::format("{} subscribers", c.tatp.subscribers);
  const SmallBankOptions& b = c.smallbank;
  return fmt::format("{} accounts, hot fraction {}, hot probability {}", b.accounts, b.hot_fraction,
                     b.hot_probability);
}

}  // namespace

std::string format_text(const BenchSummary& s) {
  const BenchConfig& c = *s.config;
  std::string out;
  out += fmt::format("workload {} ({}); protocol {}, backend {}, {} memory node(s), {} replica(s), {} thread(s) x {} "
                     "coordinators, compute id {}\n",
                     c.workload, workload_options_text(c), protocol_name(c.compute.protocol),
                     backend_name(c.compute.backend), c.compute.memory_nodes.size(), c.compute.replicas,
                     c.compute.threads, c.compute.coordinators, c.compute.compute_id);
  if (s.load_seconds > 0) out += fmt::format("loaded {} rows in {:.2f} s\n", s.rows_loaded, s.load_seconds);
  if (s.stats) {
    const RunStats& r = *s.stats;
    out += fmt::format("throughput: {:.0f} commits/s ({} commits of {} attempts in {:.1f} s after {:.1f} s warm-up)\n",
                       r.commits_per_second(), r.commits, r.attempts, r.measured_seconds,
                       std::chrono::duration<double>(r.warmup).count());
    const uint64_t aborted = r.attempts - r.commits;
    out += fmt::format("aborts: {:.2f}% of attempts", 100.0 * per(aborted, r.attempts));
    for (size_t i = 0; i < kAbortReasons; ++i) {
      if (r.aborts[i] == 0) continue;
      out += fmt::format(", {} {:.2f}%", abort_reason_name(static_cast<AbortReason>(i)),
                         100.0 * per(r.aborts[i], r.attempts));
    }
    out += "\n";
    out += fmt::format("latency of committed transactions: p50 {:.1f} us, p99 {:.1f} us, p99.9 {:.1f} us (mean {:.1f}, "
                       "max {:.1f})\n",
                       us(r.latency.percentile(0.5)), us(r.latency.percentile(0.99)),
                       us(r.latency.percentile(0.999)), r.latency.mean() / 1000.0, us(r.latency.max()));
    const OpCounters& o = r.engine.committed_ops;
    const uint64_t n = r.engine.commits;
    out += fmt::format("remote ops per committed transaction: {:.2f} (reads {:.2f}, writes {:.2f}, CAS {:.2f}, FAA "
                       "{:.2f})\n",
                       per(o.total(), n), per(o.reads, n), per(o.writes, n), per(o.cas, n), per(o.faa, n));
    out += "by type:";
    for (size_t i = 0; i < s.txn_types.size() && i < r.commits_by_type.size(); ++i) {
      const uint64_t att = r.commits_by_type[i] + r.aborts_by_type[i];
      out += fmt::format(" {} {} commits ({:.1f}% aborted);", s.txn_types[i], r.commits_by_type[i],
                         100.0 * per(r.aborts_by_type[i], att));
    }
    out += "\n";
    const double w = std::chrono::duration<double>(r.timeline_width).count();
    out += fmt::format("timeline ({} ms buckets, commits/s; warm-up ends at {} ms):", r.timeline_width.count(),
                       r.warmup.count());
    for (size_t b = 0; b < r.timeline.size(); ++b) {
      out += (b % 10 == 0) ? fmt::format("\n  {:>7} ms:", b * r.timeline_width.count()) : std::string();
      out += fmt::format(" {:.0f}", static_cast<double>(r.timeline[b]) / w);
    }
    out += "\n";
    if (r.engine.commits != r.commits) {
      out += fmt::format("note: the engine counted {} commits in the window, the driver {}\n", r.engine.commits,
                         r.commits);
    }
  }
  if (s.check) out += s.check->message + "\n";
  else out += fmt::format("check skipped ({})\n", s.check_skipped);
  return out;
}

std::string format_json(const BenchSummary& s) {
  const BenchConfig& c = *s.config;
  std::string out = "{\n";
  out += fmt::format(R"(  "workload": {}, "workload_options": {},)"
                     "\n",
                     json_string(c.workload), workload_options_json(c));
  out += fmt::format(R"(  "protocol": {}, "backend": {}, "memory_nodes": {}, "replicas": {}, "threads": {}, )"
                     R"("coordinators": {}, "compute_id": {}, "seed": {},)"
                     "\n",
                     json_string(protocol_name(c.compute.protocol)), json_string(backend_name(c.compute.backend)),
                     c.compute.memory_nodes.size(), c.compute.replicas, c.compute.threads, c.compute.coordinators,
                     c.compute.compute_id, c.seed);
  out += fmt::format(R"(  "load_seconds": {}, "rows_loaded": {},)"
                     "\n",
                     num(s.load_seconds), s.rows_loaded);
  if (s.stats) {
    const RunStats& r = *s.stats;
    out += fmt::format(R"(  "seconds": {}, "warmup_seconds": {}, "attempts": {}, "commits": {}, )"
                       R"("commits_per_second": {}, "abort_rate": {},)"
                       "\n",
                       num(r.measured_seconds), num(std::chrono::duration<double>(r.warmup).count()), r.attempts,
                       r.commits, num(r.commits_per_second()), num(per(r.attempts - r.commits, r.attempts)));
    out += "  \"aborts\": {";
    for (size_t i = 1; i < kAbortReasons; ++i) {
      out += fmt::format("{}{}: {}", i == 1 ? "" : ", ", json_string(abort_reason_name(static_cast<AbortReason>(i))),
                         r.aborts[i]);
    }
    out += "},\n";
    out += fmt::format(R"(  "latency_us": {{"p50": {}, "p99": {}, "p999": {}, "mean": {}, "max": {}}},)"
                       "\n",
                       num(us(r.latency.percentile(0.5))), num(us(r.latency.percentile(0.99))),
                       num(us(r.latency.percentile(0.999))), num(r.latency.mean() / 1000.0), num(us(r.latency.max())));
    const OpCounters& o = r.engine.committed_ops;
    const uint64_t n = r.engine.commits;
    out += fmt::format(R"(  "ops_per_commit": {{"reads": {}, "writes": {}, "cas": {}, "faa": {}, "total": {}}},)"
                       "\n",
                       num(per(o.reads, n)), num(per(o.writes, n)), num(per(o.cas, n)), num(per(o.faa, n)),
                       num(per(o.total(), n)));
    out += "  \"types\": [";
    for (size_t i = 0; i < s.txn_types.size() && i < r.commits_by_type.size(); ++i) {
      out += fmt::format(R"({}{{"name": {}, "commits": {}, "aborts": {}}})", i == 0 ? "" : ", ",
                         json_string(s.txn_types[i]), r.commits_by_type[i], r.aborts_by_type[i]);
    }
    out += "],\n";
    const double w = std::chrono::duration<double>(r.timeline_width).count();
    out += fmt::format(R"(  "timeline": {{"bucket_ms": {}, "warmup_ms": {}, "start_realtime_ns": {}, )"
                       R"("commits_per_second": [)",
                       r.timeline_width.count(), r.warmup.count(), r.timeline_start_realtime_ns);
    for (size_t b = 0; b < r.timeline.size(); ++b) {
      out += fmt::format("{}{}", b == 0 ? "" : ", ", num(static_cast<double>(r.timeline[b]) / w));
    }
    out += "]},\n";
    out += fmt::format(R"(  "committed_delta": {}, "uncertain": {}, "total_commits": {},)"
                       "\n",
                       r.committed_delta, r.uncertain, r.total_commits);
  }
  if (s.invariant_before) out += fmt::format("  \"invariant_before\": {},\n", *s.invariant_before);
  if (s.check) {
    out += fmt::format(R"(  "check": {{"ran": true, "passed": {}, "message": {}}})",
                       s.check->passed ? "true" : "false", json_string(s.check->message));
  } else {
    out += R"(  "check": {"ran": false})";
  }
  out += "\n}\n";
  return out;
}

}  // namespace pandora::workloads
