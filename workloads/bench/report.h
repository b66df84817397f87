// pandora-bench's results as data: what one process ran (or the merge of
// several processes' runs), the human-readable summary, the JSON report
// and the CSV timeline.
//
//   BenchReport r = make_report(summary);              // after a run
//   write_report_files(r, "run.json", "run.csv");       // JSON (nlohmann-json) + CSV timeline
//   Result<BenchReport> back = read_report("run.json"); // validated; a foreign or damaged file is refused
//   Result<BenchReport> all = merge_reports({a, b, c}); // several processes of one run, one window
//
// A report carries everything needed to merge it with others exactly: the
// latency histogram's buckets (percentiles of several processes cannot be
// averaged), raw counts rather than rates, and a timeline anchored on
// CLOCK_REALTIME. Keys are documented in workloads/bench/README.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/latency_histogram.h"
#include "common/status.h"
#include "workloads/bench/bench_config.h"
#include "workloads/bench/runner.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

// What bench_app gathers during a run; make_report() turns it into a report.
struct BenchSummary {
  const BenchConfig* config = nullptr;
  std::vector<std::string> txn_types;
  std::optional<RunStats> stats;    // absent when nothing ran (--seconds 0)
  std::optional<CheckResult> check; // absent with --no-check, or when the run stopped early
  std::string check_skipped = "--no-check";  // why check is absent (the text summary says it)
  std::optional<int64_t> invariant_before;
  double load_seconds = 0;          // 0 without --load
  uint64_t rows_loaded = 0;
};

struct ReportOps {
  uint64_t commits = 0;
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t cas = 0;
  uint64_t faa = 0;
  uint64_t total() const { return reads + writes + cas + faa; }
  bool operator==(const ReportOps&) const = default;
};

struct TxnTypeCount {
  std::string name;
  uint64_t commits = 0;
  uint64_t aborts = 0;
  ReportOps ops;  // remote operations of its committed transactions (ops.commits = commits)
  bool operator==(const TxnTypeCount&) const = default;
};

struct ReportTimeline {
  uint64_t bucket_ms = 100;
  uint64_t warmup_ms = 0;
  uint64_t start_realtime_ns = 0;  // CLOCK_REALTIME of bucket 0's start
  std::vector<uint64_t> commits;   // committed transactions per bucket (by completion time)
  std::vector<uint64_t> aborts;    // aborted attempts per bucket
  bool operator==(const ReportTimeline&) const = default;
};

// Engine counters summed over the measured transactions (TxnCounters):
// committed transactions and their remote operations by type.
// The measured part of a report; absent with --seconds 0.
struct ReportRun {
  double seconds = 0;         // measured window (merged: the window common to every process)
  double warmup_seconds = 0;
  uint64_t attempts = 0;
  uint64_t commits = 0;       // in the measured window (merged: every process's window)
  double commits_per_second = 0;  // merged: summed over the common window
  std::map<std::string, uint64_t> aborts;  // aborted attempts by reason name
  std::vector<TxnTypeCount> types;
  LatencyHistogram latency;   // committed transactions, ns
  ReportOps ops;
  ReportTimeline timeline;
  // Whole run (warm-up included), for the end-of-run check.
  int64_t committed_delta = 0;
  uint64_t uncertain = 0;
  uint64_t total_commits = 0;
};

struct ReportCheck {
  bool ran = false;
  bool passed = false;
  std::string message;  // the verdict, or why the check was skipped
  bool operator==(const ReportCheck&) const = default;
};

// One input of a merged report.
struct ReportProcess {
  std::string report;  // the file it was read from
  uint32_t compute_id = 0;
  uint64_t commits = 0;
  double commits_per_second = 0;  // its own, over its own window
  std::string git_commit;
  bool operator==(const ReportProcess&) const = default;
};

struct BenchReport {
  std::string source;      // the file read_report() read it from (not part of the JSON)
  std::string git_commit;  // of the build that ran (build_info.h)
  // Every flag of the run as resolved (name without "--", value as text);
  // compute-id and replicas hold what the run actually used.
  std::vector<std::pair<std::string, std::string>> config;
  std::string workload;
  nlohmann::ordered_json workload_options = nlohmann::ordered_json::object();
  std::string protocol;
  std::string backend;
  uint32_t memory_nodes = 0;
  uint32_t replicas = 0;
  uint32_t threads = 0;
  uint32_t coordinators = 0;  // per thread
  uint32_t compute_id = 0;    // 0 in a merged report (see processes)
  uint64_t seed = 0;
  double load_seconds = 0;
  uint64_t rows_loaded = 0;
  std::optional<ReportRun> run;
  std::optional<int64_t> invariant_before;
  ReportCheck check;
  // Merged reports only: the inputs, and the window they all measured.
  std::vector<ReportProcess> processes;
  uint64_t common_window_start_ns = 0;
};

// The report of one run.
BenchReport make_report(const BenchSummary& s);

// The end-of-run summary (several lines, ends with a newline).
std::string format_text(const BenchReport& r);

// The JSON report (one object, keys in README order) and back. parse_report
// refuses anything that is not a complete, self-consistent report of this
// format with a message naming `origin` and what is wrong.
nlohmann::ordered_json report_to_json(const BenchReport& r);
std::string format_json(const BenchReport& r);
Result<BenchReport> parse_report(std::string_view text, std::string_view origin);
Result<BenchReport> read_report(const std::string& path);

// The timeline as CSV: '#' comment lines naming the commit and the
// configuration, a header line, then `bucket_start_ms,commits,aborts` per
// bucket (from the timeline's start).
std::string format_timeline_csv(const BenchReport& r);

// Writes the JSON report and/or the CSV timeline (empty path: not written),
// each atomically. kIo naming the file.
Status write_report_files(const BenchReport& r, const std::string& json_path, const std::string& csv_path);

// Several processes' reports of one run (same workload, options, protocol,
// backend and timeline bucket; distinct compute ids; overlapping measured
// windows) as one: counts, abort reasons, types and latency histograms
// summed bucket by bucket, timelines summed on CLOCK_REALTIME, throughput
// summed over the window every process measured. invariant_before and the
// check are left for the caller (it runs the check once for all).
// kInvalidArgument naming the reports that do not fit together.
Result<BenchReport> merge_reports(const std::vector<BenchReport>& reports);

}  // namespace pandora::workloads
