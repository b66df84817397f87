#include "workloads/bench/report.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "compute/txn.h"
#include "workloads/bench/build_info.h"

namespace pandora::workloads {

namespace {

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

double per(uint64_t n, uint64_t d) { return d == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(d); }

nlohmann::ordered_json workload_options(const BenchConfig& c) {
  if (c.workload == "micro") {
    const MicroOptions& m = c.micro;
    return {{"keys", m.keys},          {"value_size", m.value_size},        {"write_ratio", m.write_ratio},
            {"ops_per_txn", m.ops_per_txn}, {"skew", m.zipf ? "zipf" : "uniform"}, {"zipf_theta", m.zipf_theta}};
  }
  if (c.workload == "tpcc") {
    const TpccOptions& t = c.tpcc;
    return {{"warehouses", t.warehouses},
            {"items", t.items},
            {"customers_per_district", t.customers_per_district},
            {"max_orders_per_district", t.max_orders_per_district}};
  }
  if (c.workload == "tatp") return {{"subscribers", c.tatp.subscribers}};
  const SmallBankOptions& b = c.smallbank;
  return {{"accounts", b.accounts}, {"hot_fraction", b.hot_fraction}, {"hot_probability", b.hot_probability}};
}

// "keys 10000, value_size 48, ..." from the report's options object.
std::string workload_options_text(const nlohmann::ordered_json& o) {
  std::string out;
  for (const auto& [k, v] : o.items()) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

}  // namespace


BenchReport make_report(const BenchSummary& s) {
  const BenchConfig& c = *s.config;
  BenchReport r;
  r.git_commit = build_git_commit();
  r.config = c.flag_values;
  // What the run used where the flag left it open: --zookeeper assigns the
  // pid, --replicas 0 means min(2, memory nodes).
  for (auto& [name, value] : r.config) {
    if (name == "compute-id") value = std::to_string(c.compute.compute_id);
    if (name == "replicas") value = std::to_string(c.compute.replicas);
  }
  r.workload = c.workload;
  r.workload_options = workload_options(c);
  r.protocol = std::string(protocol_name(c.compute.protocol));
  r.backend = std::string(backend_name(c.compute.backend));
  r.memory_nodes = static_cast<uint32_t>(c.compute.memory_nodes.size());
  r.replicas = c.compute.replicas;
  r.threads = c.compute.threads;
  r.coordinators = c.compute.coordinators;
  r.compute_id = c.compute.compute_id;
  r.seed = c.seed;
  r.load_seconds = s.load_seconds;
  r.rows_loaded = s.rows_loaded;
  r.invariant_before = s.invariant_before;
  if (s.check) {
    r.check = {true, s.check->passed, s.check->message};
  } else {
    r.check = {false, false, s.check_skipped};
  }
  if (!s.stats) return r;
  const RunStats& st = *s.stats;
  ReportRun run;
  run.seconds = st.measured_seconds;
  run.warmup_seconds = std::chrono::duration<double>(st.warmup).count();
  run.attempts = st.attempts;
  run.commits = st.commits;
  run.commits_per_second = st.commits_per_second();
  for (size_t i = 1; i < kAbortReasons; ++i) {
    run.aborts[std::string(abort_reason_name(static_cast<AbortReason>(i)))] = st.aborts[i];
  }
  for (size_t i = 0; i < s.txn_types.size() && i < st.commits_by_type.size(); ++i) {
    const OpCounters& t = st.ops_by_type[i];
    run.types.push_back({s.txn_types[i], st.commits_by_type[i], st.aborts_by_type[i],
                         ReportOps{st.commits_by_type[i], t.reads, t.writes, t.cas, t.faa}});
  }
  run.latency = st.latency;
  const OpCounters& o = st.engine.committed_ops;
  run.ops = {st.engine.commits, o.reads, o.writes, o.cas, o.faa};
  run.timeline.bucket_ms = static_cast<uint64_t>(st.timeline_width.count());
  run.timeline.warmup_ms = static_cast<uint64_t>(st.warmup.count());
  run.timeline.start_realtime_ns = st.timeline_start_realtime_ns;
  run.timeline.commits = st.timeline;
  run.timeline.aborts = st.timeline_aborts;
  run.committed_delta = st.committed_delta;
  run.uncertain = st.uncertain;
  run.total_commits = st.total_commits;
  r.run = std::move(run);
  return r;
}

std::string format_text(const BenchReport& r) {
  std::string out;
  out += fmt::format("workload {} ({}); protocol {}, backend {}, {} memory node(s), {} replica(s), {} thread(s) x {} "
                     "coordinators, {}; build {}\n",
                     r.workload, workload_options_text(r.workload_options), r.protocol, r.backend, r.memory_nodes,
                     r.replicas, r.threads, r.coordinators,
                     r.processes.empty() ? fmt::format("compute id {}", r.compute_id)
                                         : fmt::format("{} processes merged", r.processes.size()),
                     r.git_commit);
  for (const ReportProcess& p : r.processes) {
    out += fmt::format("  {} (compute id {}, build {}): {} commits, {:.0f} commits/s over its own window\n", p.report,
                       p.compute_id, p.git_commit, p.commits, p.commits_per_second);
  }
  if (r.load_seconds > 0) out += fmt::format("loaded {} rows in {:.2f} s\n", r.rows_loaded, r.load_seconds);
  if (r.run) {
    const ReportRun& run = *r.run;
    out += fmt::format("throughput: {:.0f} commits/s ({} commits of {} attempts in {:.1f} s{} after {:.1f} s warm-up)\n",
                       run.commits_per_second, run.commits, run.attempts, run.seconds,
                       r.processes.empty() ? "" : " common to every process", run.warmup_seconds);
    const uint64_t aborted = run.attempts - run.commits;
    out += fmt::format("aborts: {:.2f}% of attempts", 100.0 * per(aborted, run.attempts));
    for (const auto& [reason, n] : run.aborts) {
      if (n > 0) out += fmt::format(", {} {:.2f}%", reason, 100.0 * per(n, run.attempts));
    }
    out += "\n";
    const LatencyHistogram& h = run.latency;
    out += fmt::format("latency of committed transactions: p50 {:.1f} us, p99 {:.1f} us, p99.9 {:.1f} us (mean {:.1f}, "
                       "max {:.1f})\n",
                       us(h.percentile(0.5)), us(h.percentile(0.99)), us(h.percentile(0.999)), h.mean() / 1000.0,
                       us(h.max()));
    const ReportOps& o = run.ops;
    out += fmt::format("remote ops per committed transaction: {:.2f} (reads {:.2f}, writes {:.2f}, CAS {:.2f}, FAA "
                       "{:.2f})\n",
                       per(o.total(), o.commits), per(o.reads, o.commits), per(o.writes, o.commits),
                       per(o.cas, o.commits), per(o.faa, o.commits));
    out += "by type:";
    for (const TxnTypeCount& t : run.types) {
      out += fmt::format(" {} {} commits ({:.1f}% aborted);", t.name, t.commits,
                         100.0 * per(t.aborts, t.commits + t.aborts));
    }
    out += "\nremote ops per commit by type:";
    for (const TxnTypeCount& t : run.types) {
      const ReportOps& to = t.ops;
      out += fmt::format(" {} {:.1f} (R {:.1f}, W {:.1f}, CAS {:.1f}, FAA {:.1f});", t.name, per(to.total(), t.commits),
                         per(to.reads, t.commits), per(to.writes, t.commits), per(to.cas, t.commits),
                         per(to.faa, t.commits));
    }
    out += "\n";
    const ReportTimeline& tl = run.timeline;
    const double w = static_cast<double>(tl.bucket_ms) / 1000.0;
    out += fmt::format("timeline ({} ms buckets, commits/s; warm-up ends at {} ms):", tl.bucket_ms, tl.warmup_ms);
    for (size_t b = 0; b < tl.commits.size(); ++b) {
      out += (b % 10 == 0) ? fmt::format("\n  {:>7} ms:", b * tl.bucket_ms) : std::string();
      out += fmt::format(" {:.0f}", static_cast<double>(tl.commits[b]) / w);
    }
    out += "\n";
    if (o.commits != run.commits) {
      out += fmt::format("note: the engine counted {} commits in the window, the driver {}\n", o.commits, run.commits);
    }
  }
  if (r.check.ran) out += r.check.message + "\n";
  else out += fmt::format("check skipped ({})\n", r.check.message);
  return out;
}

}  // namespace pandora::workloads
