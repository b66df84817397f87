#include "workloads/bench/bench_config.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/options.h"

namespace pandora::workloads {

namespace {

constexpr std::string_view kSummary =
    "Runs a transactional workload (micro, SmallBank, TATP or TPC-C) on the Pandora compute library against "
    "running memory daemons, for --seconds after --warmup-seconds, with --threads x --coordinators coordinators. "
    "Prints progress once per second, then throughput, abort rates by reason, commit latency percentiles, remote "
    "operations per committed transaction and a throughput timeline, and runs an end-of-run consistency check "
    "(exit status 1 if it fails). --load creates the tables and loads the rows first; without it the run attaches "
    "to a previous load (pass the same --keys/--value-size/--accounts/--subscribers/--warehouses). The check "
    "assumes this process is the only one writing these tables during the run; several concurrent processes pass "
    "--no-check and --start-at, and one --merge of their reports checks them all (deploy/bench/run.sh does this).\n"
    "Exit status: 0 success, 1 run or check failure, 2 bad command line, 6 this node was fenced, 7 a transaction "
    "was left undecided for recovery, 8 a memory node was lost during the run (6 and 8 stop the run at once).";

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Flags of results as files and multi-process runs, kept apart from the
// workload flags.
void declare_results_flags(OptionSet& opts, BenchConfig* cfg, std::string* merge) {
  opts.add_string("timeline-csv", &cfg->timeline_csv_path,
                  "write the throughput timeline as CSV to this file (bucket_start_ms,commits,aborts; '#' lines "
                  "name the build and the configuration)");
  opts.add_u64("start-at", &cfg->start_at_ms,
               "start the run (warm-up included) at this wall-clock time, in milliseconds since the Unix epoch, "
               "after connecting and starting the workers, so that several processes measure the same window "
               "(0: at once; a time already past starts at once and is reported as late)");
  opts.add_string("merge", merge,
                  "comma list of --report files of processes that ran together: merge them (counts and latency "
                  "histograms summed, throughput over the common window) and run the end-of-run check once for "
                  "all of them instead of running; needs --baseline-report unless --no-check");
  opts.add_string("baseline-report", &cfg->baseline_report,
                  "with --merge: the report of a --seconds 0 run made before the processes started; its "
                  "invariant_before is the check's baseline");
}

// "" or the error.
std::string resolve_results_flags(const OptionSet& opts, const std::string& merge, BenchConfig* cfg) {
  cfg->merge_paths = split_list(merge);
  if (cfg->merge_paths.empty()) {
    if (opts.was_set("merge")) return "--merge: empty list of reports";
    if (!cfg->baseline_report.empty()) return "--baseline-report needs --merge";
    return "";
  }
  if (cfg->load) return "--merge reads reports and checks; it cannot --load";
  if (cfg->start_at_ms != 0) return "--start-at applies to a run, not to --merge";
  if (!cfg->history_path.empty()) return "--history applies to a run, not to --merge";
  if (cfg->check && cfg->baseline_report.empty()) {
    return "--merge needs --baseline-report (the invariant before the processes started) for the check, or "
           "--no-check";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& bench_workload_names() {
  static const std::vector<std::string> kNames{"micro", "smallbank", "tatp", "tpcc"};
  return kNames;
}

BenchArgs parse_bench_args(int argc, const char* const* argv) {
  BenchArgs out;
  BenchConfig& cfg = out.config;
  ComputeFlags compute;
  MicroFlags micro;
  SmallBankFlags smallbank;
  TatpFlags tatp;
  TpccFlags tpcc;
  std::string load_workloads;
  std::string log_level = "warn";
  bool no_check = false;

  OptionSet opts("pandora-bench", std::string(kSummary));
  compute.declare(opts);
  opts.add_choice("workload", &cfg.workload, bench_workload_names(), "workload to run");
  opts.add_flag("load", &cfg.load, "create the tables and load their rows before running");
  opts.add_string("load-workloads", &load_workloads,
                  "with --load: comma list of workloads whose tables to create together (default: --workload), "
                  "so one load serves several later runs");
  opts.add_flag("replace", &cfg.replace, "with --load: replace tables the memory nodes already carry");
  opts.add_flag("plan", &cfg.plan,
                "print what a --load of these workloads (--load-workloads, or --workload) with these flags needs "
                "from each memory daemon - table bytes, log-lane size, pandora-memd --size - and exit; connects "
                "to nothing and needs none of the cluster options");
  opts.add_size("plan-log-size", &cfg.plan_log_size, "with --plan: the memory daemons' --log-size", 1u << 20,
                uint64_t{1} << 40);
  opts.waive_required_with("plan");
  opts.add_u64("seconds", &cfg.seconds, "measured run time in seconds (0: load and/or check only)", 0, 86400);
  opts.add_u64("warmup-seconds", &cfg.warmup_seconds, "run time before measuring starts", 0, 3600);
  opts.add_string("report", &cfg.report_path, "write a JSON report of the run to this file");
  opts.add_string("history", &cfg.history_path,
                  "record every transaction of the run (versions read and installed, JSON lines) to this file; "
                  "check it with pandora-history-check");
  opts.add_u64("timeline-ms", &cfg.timeline_ms, "width of one throughput-timeline bucket in milliseconds", 1,
               60000);
  opts.add_u64("seed", &cfg.seed, "seed of every coordinator's random stream (runs are reproducible per seed)");
  opts.add_flag("no-check", &no_check, "skip the end-of-run consistency check");
  opts.add_choice("log-level", &log_level, {"debug", "info", "warn", "error", "off"}, "library log level");
  micro.declare(opts);
  smallbank.declare(opts);
  tatp.declare(opts);
  tpcc.declare(opts);
  std::string merge;
  declare_results_flags(opts, &cfg, &merge);

  std::string message;
  switch (opts.parse(argc, argv, &message)) {
    case OptionSet::Outcome::kHelp:
      out.outcome = BenchArgs::Outcome::kHelp;
      out.message = std::move(message);
      return out;
    case OptionSet::Outcome::kError:
      out.message = std::move(message);
      return out;
    case OptionSet::Outcome::kRun:
      break;
  }
  auto error = [&out](std::string m) {
    out.outcome = BenchArgs::Outcome::kError;
    out.message = std::move(m);
    return out;
  };

  cfg.check = !no_check;
  parse_log_level(log_level, &cfg.log_level);
  cfg.flag_values = opts.values();
  if (std::string e = resolve_results_flags(opts, merge, &cfg); !e.empty()) return error(e);

  // Which workloads this invocation touches: flags of any other are mistakes.
  if (!cfg.load && !cfg.plan && opts.was_set("load-workloads")) return error("--load-workloads needs --load or --plan");
  if (!cfg.load && cfg.replace) return error("--replace needs --load");
  if (!cfg.plan && opts.was_set("plan-log-size")) return error("--plan-log-size needs --plan");
  if (cfg.plan && cfg.plan_log_size % 4096 != 0) {
    return error(fmt::format("--plan-log-size {} must be a multiple of 4K, as pandora-memd's --log-size",
                             cfg.plan_log_size));
  }
  cfg.load_workloads = split_list(load_workloads);
  for (const std::string& w : cfg.load_workloads) {
    if (!contains(bench_workload_names(), w)) {
      return error(fmt::format("--load-workloads: unknown workload '{}' (expected {})", w,
                               fmt::join(bench_workload_names(), ", ")));
    }
  }
  if (opts.was_set("load-workloads") && cfg.load_workloads.empty()) {
    return error(fmt::format("--load-workloads: empty list (expected some of {})",
                             fmt::join(bench_workload_names(), ", ")));
  }
  if (!contains(cfg.load_workloads, cfg.workload)) {
    if (opts.was_set("load-workloads") && cfg.seconds > 0 && !cfg.plan) {
      return error(fmt::format("--load-workloads {} does not include --workload {}, which is to run", load_workloads,
                               cfg.workload));
    }
    cfg.load_workloads.insert(cfg.load_workloads.begin(), cfg.workload);
  }
  auto check_flags = [&](const std::string& workload, const std::vector<std::string>& names) -> bool {
    if (contains(cfg.load_workloads, workload)) return true;
    for (const std::string& n : names) {
      if (opts.was_set(n)) {
        error(fmt::format("--{} is a {} option, but this run uses --workload {}", n, workload, cfg.workload));
        return false;
      }
    }
    return true;
  };
  if (!check_flags("micro", MicroFlags::names())) return out;
  if (!check_flags("smallbank", SmallBankFlags::names())) return out;
  if (!check_flags("tatp", TatpFlags::names())) return out;
  if (!check_flags("tpcc", TpccFlags::names())) return out;

  Result<MicroOptions> mo = micro.resolve();
  if (!mo) return error(mo.status().message());
  cfg.micro = *mo;
  if (opts.was_set("zipf-theta") && cfg.micro.zipf == false) {
    return error("--zipf-theta applies to --skew zipf only");
  }
  Result<SmallBankOptions> so = smallbank.resolve();
  if (!so) return error(so.status().message());
  cfg.smallbank = *so;
  Result<TatpOptions> ta = tatp.resolve();
  if (!ta) return error(ta.status().message());
  cfg.tatp = *ta;
  Result<TpccOptions> tc = tpcc.resolve();
  if (!tc) return error(tc.status().message());
  cfg.tpcc = *tc;

  cfg.lane_bytes_given = opts.was_set("lane-bytes");
  if (cfg.plan) {
    // Only what the plan reads: the cluster options may be absent.
    if (Status s = validate_lane_bytes(compute.lane_bytes); !s) return error(s.message());
    cfg.compute.lane_bytes = static_cast<uint32_t>(compute.lane_bytes);
    out.outcome = BenchArgs::Outcome::kRun;
    return out;
  }
  Result<ComputeConfig> cc = compute.resolve();
  if (!cc) return error(cc.status().message());
  cfg.compute = std::move(*cc);
  out.outcome = BenchArgs::Outcome::kRun;
  return out;
}

}  // namespace pandora::workloads
