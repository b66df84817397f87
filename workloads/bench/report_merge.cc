// merge_reports (report.h): several compute processes' reports of one run
// as one report.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "workloads/bench/report.h"

namespace pandora::workloads {

namespace {

std::string name_of(const BenchReport& r) {
  return r.source.empty() ? fmt::format("the report of compute id {}", r.compute_id) : r.source;
}

Status mismatch(const BenchReport& a, const BenchReport& b, std::string_view what, const std::string& va,
                const std::string& vb) {
  return Status(Errc::kInvalidArgument,
                fmt::format("{} and {} are not of one run: {} {} vs {}", name_of(a), name_of(b), what, va, vb));
}

// The measured window of one process on CLOCK_REALTIME, in ns.
struct Window {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

Window window_of(const ReportRun& run) {
  const uint64_t lo = run.timeline.start_realtime_ns + run.timeline.warmup_ms * 1'000'000;
  return {lo, lo + static_cast<uint64_t>(std::llround(run.seconds * 1e9))};
}

// Commits per second of one process over the timeline buckets that lie
// entirely inside [w.lo, w.hi); nullopt when no whole bucket does.
std::optional<double> rate_within(const ReportTimeline& tl, Window w) {
  const uint64_t width = tl.bucket_ms * 1'000'000;
  uint64_t commits = 0;
  uint64_t buckets = 0;
  for (size_t b = 0; b < tl.commits.size(); ++b) {
    const uint64_t start = tl.start_realtime_ns + b * width;
    if (start < w.lo || start + width > w.hi) continue;
    commits += tl.commits[b];
    ++buckets;
  }
  if (buckets == 0) return std::nullopt;
  return static_cast<double>(commits) / (static_cast<double>(buckets * width) / 1e9);
}

Status check_fit(const BenchReport& first, const BenchReport& r, std::set<uint32_t>& ids) {
  if (!r.run) return Status(Errc::kInvalidArgument, fmt::format("{}: no run to merge (--seconds 0)", name_of(r)));
  if (!r.processes.empty()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: already a merged report; merge the processes' own reports", name_of(r)));
  }
  if (r.workload != first.workload) return mismatch(first, r, "workload", first.workload, r.workload);
  if (r.workload_options != first.workload_options) {
    return mismatch(first, r, "workload options", first.workload_options.dump(), r.workload_options.dump());
  }
  if (r.protocol != first.protocol) return mismatch(first, r, "protocol", first.protocol, r.protocol);
  if (r.backend != first.backend) return mismatch(first, r, "backend", first.backend, r.backend);
  const uint64_t w0 = first.run->timeline.bucket_ms;
  const uint64_t w1 = r.run->timeline.bucket_ms;
  if (w0 != w1) return mismatch(first, r, "timeline bucket (ms)", std::to_string(w0), std::to_string(w1));
  std::vector<std::string> t0, t1;
  for (const TxnTypeCount& t : first.run->types) t0.push_back(t.name);
  for (const TxnTypeCount& t : r.run->types) t1.push_back(t.name);
  if (t0 != t1) {
    return mismatch(first, r, "transaction types", fmt::format("{}", fmt::join(t0, ",")),
                    fmt::format("{}", fmt::join(t1, ",")));
  }
  if (!ids.insert(r.compute_id).second) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: compute id {} appears in two reports (one process merged twice?)", name_of(r),
                              r.compute_id));
  }
  return Status::ok();
}

}  // namespace

Result<BenchReport> merge_reports(const std::vector<BenchReport>& reports) {
  if (reports.empty()) return Status(Errc::kInvalidArgument, "no reports to merge");
  const BenchReport& first = reports.front();
  std::set<uint32_t> ids;
  for (const BenchReport& r : reports) {
    if (Status s = check_fit(first, r, ids); !s) return s;
  }

  // The configuration is the first process's (the others differ in their
  // compute ids and output files); per-process facts go.
  BenchReport m = first;
  m.source.clear();
  m.compute_id = 0;
  m.load_seconds = 0;
  m.rows_loaded = 0;
  m.invariant_before.reset();
  m.check = {false, false, "not run yet (the merge runs it once for every process)"};

  ReportRun run;
  run.warmup_seconds = first.run->warmup_seconds;
  run.timeline.bucket_ms = first.run->timeline.bucket_ms;
  run.timeline.warmup_ms = first.run->timeline.warmup_ms;
  for (const TxnTypeCount& t : first.run->types) run.types.push_back({t.name, 0, 0, {}});
  uint64_t start = UINT64_MAX;
  Window common{0, UINT64_MAX};
  for (const BenchReport& r : reports) {
    const ReportRun& in = *r.run;
    run.attempts += in.attempts;
    run.commits += in.commits;
    for (const auto& [reason, n] : in.aborts) run.aborts[reason] += n;
    for (size_t i = 0; i < in.types.size(); ++i) {
      run.types[i].commits += in.types[i].commits;
      run.types[i].aborts += in.types[i].aborts;
      ReportOps& to = run.types[i].ops;
      const ReportOps& from = in.types[i].ops;
      to.commits += from.commits, to.reads += from.reads, to.writes += from.writes, to.cas += from.cas,
          to.faa += from.faa;
    }
    run.latency.merge(in.latency);
    run.ops.commits += in.ops.commits;
    run.ops.reads += in.ops.reads;
    run.ops.writes += in.ops.writes;
    run.ops.cas += in.ops.cas;
    run.ops.faa += in.ops.faa;
    run.committed_delta += in.committed_delta;
    run.uncertain += in.uncertain;
    run.total_commits += in.total_commits;
    start = std::min(start, in.timeline.start_realtime_ns);
    const Window w = window_of(in);
    common.lo = std::max(common.lo, w.lo);
    common.hi = std::min(common.hi, w.hi);
    m.processes.push_back({r.source, r.compute_id, in.commits, in.commits_per_second, r.git_commit});
  }
  if (common.hi <= common.lo) {
    return Status(Errc::kInvalidArgument,
                  "the processes' measured windows do not overlap (start them together: pandora-bench --start-at, "
                  "or deploy/bench/run.sh)");
  }
  // Throughput: each process's rate over the whole buckets inside the
  // common window, summed (the processes' buckets are not aligned, so their
  // counts are not added bucket by bucket here).
  for (const BenchReport& r : reports) {
    const std::optional<double> rate = rate_within(r.run->timeline, common);
    if (!rate) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("the common measured window ({:.3f} s) holds no whole {} ms timeline bucket of {}; "
                                "run longer or with a smaller --timeline-ms",
                                static_cast<double>(common.hi - common.lo) / 1e9, r.run->timeline.bucket_ms,
                                name_of(r)));
    }
    run.commits_per_second += *rate;
  }
  run.seconds = static_cast<double>(common.hi - common.lo) / 1e9;

  // The timeline: every process's buckets moved onto one grid starting at
  // the earliest start (offsets rounded to a bucket), summed.
  const uint64_t width = run.timeline.bucket_ms * 1'000'000;
  run.timeline.start_realtime_ns = start;
  for (const BenchReport& r : reports) {
    const ReportTimeline& tl = r.run->timeline;
    const auto offset = static_cast<size_t>((tl.start_realtime_ns - start + width / 2) / width);
    const size_t need = offset + tl.commits.size();
    if (run.timeline.commits.size() < need) {
      run.timeline.commits.resize(need, 0);
      run.timeline.aborts.resize(need, 0);
    }
    for (size_t b = 0; b < tl.commits.size(); ++b) {
      run.timeline.commits[offset + b] += tl.commits[b];
      run.timeline.aborts[offset + b] += b < tl.aborts.size() ? tl.aborts[b] : 0;
    }
  }
  m.run = std::move(run);
  m.common_window_start_ns = common.lo;
  return m;
}

}  // namespace pandora::workloads
