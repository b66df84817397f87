#include "workloads/bench/bench_app.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <thread>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "compute/blocking_client.h"
#include "compute/pause_gate.h"
#include "compute/cluster.h"
#include "common/lane_map.h"
#include "compute/loader.h"
#include "compute/scheduler.h"
#include "compute/trace/history.h"
#include "recovery/membership.h"
#include "workloads/bench/load_plan.h"
#include "workloads/bench/registry.h"
#include "workloads/bench/report.h"
#include "workloads/bench/runner.h"

namespace pandora::workloads {

namespace {

using Clock = std::chrono::steady_clock;

void fail(std::string_view what) { fmt::print(stderr, "pandora-bench: {}\n", what); }

// Turns SIGTERM and SIGINT into a flag for the length of a run (a
// signalfd watched by one thread), so stopping a bench is not a crash.
// Blocks both signals in the calling thread before any worker starts, so
// every thread inherits the mask.
class StopSignals {
 public:
  explicit StopSignals(std::atomic<bool>* flag) : flag_(flag) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    fd_ = signalfd(-1, &set_, SFD_CLOEXEC);
    if (fd_ < 0) return;
    thread_ = std::thread([this] {
      pollfd p{fd_, POLLIN, 0};
      while (!done_.load(std::memory_order_acquire)) {
        if (::poll(&p, 1, 100) <= 0) continue;
        signalfd_siginfo si{};
        if (::read(fd_, &si, sizeof si) != sizeof si) continue;
        signal_.store(static_cast<int>(si.ssi_signo), std::memory_order_release);
        flag_->store(true, std::memory_order_release);
      }
    });
  }
  ~StopSignals() {
    done_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  bool received() const { return signal_.load(std::memory_order_acquire) != 0; }
  const char* received_name() const { return signal_.load() == SIGINT ? "SIGINT" : "SIGTERM"; }

 private:
  std::atomic<bool>* flag_;
  sigset_t set_{}, old_{};
  int fd_ = -1;
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{0};
  std::thread thread_;
};

// Creates the tables of every workload in one directory and loads their rows.
Status load_tables(Cluster& cluster, const std::vector<std::unique_ptr<Workload>>& workloads, bool replace,
                   uint64_t* rows) {
  std::vector<TableSpec> specs;
  for (const auto& w : workloads) {
    for (TableSpec& t : w->tables()) specs.push_back(std::move(t));
  }
  CreateTablesOptions opts;
  opts.replace_existing = replace;
  if (Status s = create_tables(cluster, specs, opts); !s) return s;
  Clock::time_point next_print = Clock::now() + std::chrono::seconds(1);
  TableLoader loader(cluster, [&](const LoadProgress& p) {
    if (Clock::now() < next_print) return;
    next_print += std::chrono::seconds(1);
    fmt::print("loading: {} rows\n", p.rows_total);
    std::fflush(stdout);
  });
  for (const auto& w : workloads) {
    if (Status s = w->load(loader); !s) return Status(s.code(), fmt::format("loading {}: {}", w->name(), s.message()));
  }
  if (Status s = loader.finish(); !s) return s;
  *rows = loader.rows_loaded();
  return Status::ok();
}

// On every way out, leave the cluster cleanly (declared before the
// cluster and clients, so it runs after their connections closed) - unless
// a transaction may be undecided (a coordinator halted on a transport
// failure, or this node was fenced): then the detector's recovery must
// decide it from the log.
struct Leaver {
  Membership* membership = nullptr;
  bool safe = true;
  const Logger* log = nullptr;
  Leaver() = default;
  Leaver(const Leaver&) = delete;
  Leaver& operator=(const Leaver&) = delete;
  ~Leaver() {
    if (!membership || !safe || membership->fenced()) return;
    if (Status s = membership->leave(); !s) log->warn("leaving the cluster: {}", s.to_string());
  }
};

// Whether log lanes of `lane_bytes` hold `workload`'s largest log record;
// prints why not and the remedy (`lanes_were` says where the size came from).
bool lanes_hold(const Workload& workload, uint32_t lane_bytes, const BenchConfig& cfg, std::string_view lanes_were) {
  const uint32_t need = workload.min_log_lane_bytes();
  if (lane_bytes >= need) return true;
  // With --zookeeper the cluster record fixes the lane size for every load.
  const std::string remedy =
      cfg.compute.zookeeper.empty()
          ? fmt::format("--load again with --lane-bytes {} (or without --lane-bytes) and a daemon --log-size "
                        "that holds the lanes of every compute node",
                        need)
          : fmt::format("this cluster's lanes come from its ZooKeeper record: create the cluster with "
                        "pandora-ctl init --lane-bytes {}",
                        need);
  fail(fmt::format("{} needs log lanes of at least {} bytes (its largest log record); {} {}: {}", workload.name(),
                   need, lanes_were, lane_bytes, remedy));
  return false;
}

// This process as a compute node: with --zookeeper its membership
// (registered pid and lane slot, heartbeats to the detector, failed pids
// learnt by watch), and its connections. Members go in reverse order:
// failed-ids detached, connections closed, then the cluster left.
struct BenchNode {
  // Stop-the-world pauses (ford's recovery, a memory node's fail-over)
  // outside the run, whose coordinators park themselves: the check's
  // transactions and the load are stretches it waits for. First, so it
  // outlives the membership's thread that feeds it.
  std::unique_ptr<PauseGate> gate;
  std::unique_ptr<Membership> membership;
  Leaver leaver;
  std::unique_ptr<Cluster> cluster;
  // After the cluster: a fenced node skips leave(), and its watcher thread
  // then added a pid to the freed cluster's failed-ids (seen by ASan).
  DetachGuard detach_before_cluster_goes;
};

// Joins (with --zookeeper: fills in cfg's pid, lane slot and memory nodes)
// and connects; false after printing why. A fence seen by the membership
// raises *fenced and *stop_run.
bool join_and_connect(BenchConfig& cfg, const Logger& logger, std::atomic<bool>* fenced, std::atomic<bool>* stop_run,
                      BenchNode* node) {
  node->leaver.log = &logger;
  if (!cfg.compute.zookeeper.empty()) {
    auto m = join_as_compute_node(cfg.compute, logger);
    if (!m) {
      fail(fmt::format("joining the cluster through ZooKeeper {}: {}", cfg.compute.zookeeper, m.status().to_string()));
      return false;
    }
    node->membership = std::move(*m);
    node->membership->on_fenced([fenced, stop_run] {
      fenced->store(true, std::memory_order_release);
      stop_run->store(true, std::memory_order_release);
    });
    node->leaver.membership = node->membership.get();
    fmt::print("joined the cluster as pid {} ({})\n", node->membership->pid(), node->membership->slot().to_string());
    std::fflush(stdout);
  }
  Result<std::unique_ptr<Cluster>> cluster = Cluster::connect(cfg.compute, logger);
  if (!cluster) {
    fail(fmt::format("connecting to the memory nodes: {}", cluster.status().to_string()));
    return false;
  }
  node->cluster = std::move(*cluster);
  if (node->membership) {
    node->detach_before_cluster_goes.reset(node->membership.get());
    if (Status s = node->membership->attach(*node->cluster); !s) {
      fail(fmt::format("reading failed-ids: {}", s.to_string()));
      return false;
    }
    node->gate = std::make_unique<PauseGate>(
        [node](uint64_t epoch) { node->membership->ack_pause(epoch); },
        [node, &logger](uint64_t epoch) {
          logger.error("refusing stop-the-world pause {}: a coordinator halted with a transaction left to recovery; "
                       "this node stops heartbeating to be recovered itself",
                       epoch);
          node->membership->stop_heartbeats();
        });
    // Cleared by detach(), i.e. before the cluster goes.
    node->membership->on_pause([gate = node->gate.get()](uint64_t epoch) { gate->set_epoch(epoch); });
  }
  return true;
}


// The table directory (unless a --load just wrote it), the workload
// attached to it, and the check's blocking client; nullptr after printing
// why.
std::unique_ptr<BlockingClient> open_check_client(const BenchConfig& cfg, Cluster& cluster, const Workload& workload) {
  if (!cfg.load) {
    if (Status s = cluster.load_directory(); !s) {
      fail(fmt::format("reading the table directory: {} (load the tables first with --load)", s.to_string()));
      return nullptr;
    }
  }
  if (Status s = workload.attach(table_specs(cluster.directory())); !s) {
    fail(s.message());
    return nullptr;
  }
  if (!lanes_hold(workload, cluster.directory().lane_bytes, cfg, "the tables were loaded with")) return nullptr;
  // The check's own coordinator: an id no scheduler coordinator uses when
  // one is left; otherwise 0, which is idle whenever the check runs (the
  // check only reads, so it never writes that coordinator's log lane).
  const uint32_t total = cfg.compute.total_coordinators();
  const auto check_id = static_cast<uint16_t>(total < cluster.lane_slot().count ? total : 0);
  Result<std::unique_ptr<BlockingClient>> client = BlockingClient::create(cluster, check_id);
  if (!client) {
    fail(fmt::format("opening the check's connections: {}", client.status().to_string()));
    return nullptr;
  }
  return std::move(*client);
}

// --start-at: waits until that wall-clock time (ms since the epoch), so
// processes started apart (ssh, slow connects) begin their runs together.
// A time already past is a start too late for a common window: said on
// stderr (the merge then measures only the overlap). Stops early on SIGTERM.
void wait_for_start(uint64_t start_at_ms, const std::atomic<bool>& stop) {
  if (start_at_ms == 0) return;
  using Wall = std::chrono::system_clock;
  const Wall::time_point at{std::chrono::milliseconds(start_at_ms)};
  const Wall::time_point now = Wall::now();
  if (now > at) {
    fail(fmt::format("ready {} ms after --start-at {}: starting late (start the processes earlier or with a "
                     "later --start-at)",
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - at).count(), start_at_ms));
    return;
  }
  while (Wall::now() < at && !stop.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::min<Wall::duration>(at - Wall::now(), std::chrono::milliseconds(50)));
  }
}

// Prints the summary and writes --report / --timeline-csv; false after
// printing why a file could not be written.
bool publish(const BenchReport& report, const BenchConfig& cfg) {
  fmt::print("{}", format_text(report));
  std::fflush(stdout);
  if (Status s = write_report_files(report, cfg.report_path, cfg.timeline_csv_path); !s) {
    fail(fmt::format("writing the results: {}", s.to_string()));
    return false;
  }
  return true;
}

// --merge: the processes' reports as one, and the end-of-run check once for
// all of them against the baseline taken before any of them started.
int run_merge(BenchConfig& cfg) {
  std::vector<BenchReport> inputs;
  for (const std::string& path : cfg.merge_paths) {
    Result<BenchReport> r = read_report(path);
    if (!r) {
      fail(fmt::format("--merge: {}", r.status().message()));
      return 1;
    }
    inputs.push_back(std::move(*r));
  }
  Result<BenchReport> merged = merge_reports(inputs);
  if (!merged) {
    fail(fmt::format("--merge: {}", merged.status().message()));
    return 1;
  }
  if (!cfg.check) {
    merged->check.message = "--no-check";
    return publish(*merged, cfg) ? 0 : 1;
  }
  Result<BenchReport> base = read_report(cfg.baseline_report);
  if (!base) {
    fail(fmt::format("--baseline-report: {}", base.status().message()));
    return 1;
  }
  if (!base->invariant_before) {
    fail(fmt::format("--baseline-report: {} has no invariant_before (it ran with --no-check)", cfg.baseline_report));
    return 1;
  }
  // The check runs this process's workload: it must be the one the reports ran.
  BenchSummary mine;
  mine.config = &cfg;
  const BenchReport expected = make_report(mine);
  for (const BenchReport* r : {&*merged, &*base}) {
    if (r->workload != expected.workload || r->workload_options != expected.workload_options) {
      fail(fmt::format("--merge: {} ran {} ({}) but this merge was given --workload {} ({}): pass the runs' "
                       "workload flags",
                       r == &*base ? cfg.baseline_report : std::string("the reports"), r->workload,
                       r->workload_options.dump(), expected.workload, expected.workload_options.dump()));
      return 2;
    }
  }
  Result<std::unique_ptr<Workload>> workload = make_workload(cfg.workload, cfg);
  if (!workload) {
    fail(workload.status().message());
    return 2;
  }
  const Logger logger("pandora-bench", cfg.log_level);
  std::atomic<bool> fenced{false}, stop{false};
  BenchNode node;
  if (!join_and_connect(cfg, logger, &fenced, &stop, &node)) return 1;
  std::unique_ptr<BlockingClient> client = open_check_client(cfg, *node.cluster, **workload);
  if (!client) return 1;
  CheckInput in;
  in.baseline = *base->invariant_before;
  in.committed_delta = merged->run->committed_delta;
  in.uncertain = merged->run->uncertain;
  std::optional<GatedSession> gated_client;
  if (node.gate) gated_client.emplace(*client, *node.gate, [&client] { return client->engine().halted(); });
  const CheckResult check =
      (*workload)->check(gated_client ? static_cast<Session&>(*gated_client) : *client, in);
  merged->invariant_before = in.baseline;
  merged->check = {true, check.passed, check.message};
  if (!publish(*merged, cfg)) return 1;
  return check.passed ? 0 : 1;
}

// The workloads a --load (or --plan) covers, and their plan; nullopt after
// printing why.
std::optional<LoadPlan> plan_for(const BenchConfig& cfg, std::vector<std::unique_ptr<Workload>>* workloads) {
  for (const std::string& name : cfg.load_workloads) {
    Result<std::unique_ptr<Workload>> w = make_workload(name, cfg);
    if (!w) {
      fail(w.status().message());
      return std::nullopt;
    }
    workloads->push_back(std::move(*w));
  }
  Result<LoadPlan> plan = plan_load(*workloads, cfg.compute.lane_bytes, cfg.lane_bytes_given);
  if (!plan) {
    fail(plan.status().message());
    return std::nullopt;
  }
  return std::move(*plan);
}

// --plan: what a --load of the workloads needs, printed; connects to nothing.
int run_plan(const BenchConfig& cfg) {
  std::vector<std::unique_ptr<Workload>> workloads;
  const std::optional<LoadPlan> plan = plan_for(cfg, &workloads);
  if (!plan) return 2;
  fmt::print("{}", format_load_plan(*plan, cfg.plan_log_size));
  return 0;
}

}  // namespace

int run_bench(const BenchConfig& cfg_in) {
  BenchConfig cfg = cfg_in;  // --zookeeper fills in the pid, lane slot and memory nodes
  if (cfg.plan) return run_plan(cfg);
  if (!cfg.merge_paths.empty()) return run_merge(cfg);
  Result<std::unique_ptr<Workload>> made = make_workload(cfg.workload, cfg);
  if (!made) {
    fail(made.status().message());
    return 2;
  }
  const Workload& workload = **made;
  std::vector<std::unique_ptr<Workload>> to_load;
  if (cfg.load) {
    const std::optional<LoadPlan> plan = plan_for(cfg, &to_load);
    if (!plan) return 2;
    if (!plan->lanes_sized_for.empty()) {
      fmt::print("log lanes of {} bytes ({}'s largest log record; --lane-bytes chooses)\n", plan->lane_bytes,
                 plan->lanes_sized_for);
      cfg.compute.lane_bytes = plan->lane_bytes;
    }
  }

  const Logger logger("pandora-bench", cfg.log_level);
  std::atomic<bool> fenced{false};
  // SIGTERM / SIGINT end the run cleanly: coordinators stop after their
  // transaction, the report and check run, and the node leaves the cluster.
  std::atomic<bool> stop_run{false};
  StopSignals signals(&stop_run);
  BenchNode node;
  if (!join_and_connect(cfg, logger, &fenced, &stop_run, &node)) return 1;
  Cluster& cluster = *node.cluster;
  BenchSummary summary;
  summary.config = &cfg;
  summary.txn_types = workload.txn_types();
  if (cfg.load) {
    for (const auto& w : to_load) {
      if (!lanes_hold(*w, cfg.compute.lane_bytes, cfg, "this cluster's lanes are")) return 1;
    }
    const Clock::time_point t0 = Clock::now();
    const PauseGateHold hold(node.gate.get());  // a pause waits for the load
    if (Status s = load_tables(cluster, to_load, cfg.replace, &summary.rows_loaded); !s) {
      fail(fmt::format("load failed: {}", s.to_string()));
      return 1;
    }
    summary.load_seconds = std::max(1e-6, std::chrono::duration<double>(Clock::now() - t0).count());
    fmt::print("loaded {} rows in {:.2f} s\n", summary.rows_loaded, summary.load_seconds);
  }

  std::unique_ptr<BlockingClient> client = open_check_client(cfg, cluster, workload);
  if (!client) return 1;
  // With a membership the check's transactions are stretches the pause
  // gate waits for (a pause while they run is acknowledged between them).
  std::optional<GatedSession> gated_client;
  if (node.gate) gated_client.emplace(*client, *node.gate, [&client] { return client->engine().halted(); });
  Session& check_session = gated_client ? static_cast<Session&>(*gated_client) : *client;

  int64_t baseline = 0;
  if (cfg.check) {
    Result<Audit> before = workload.audit(check_session);
    if (!before) {
      fail(fmt::format("pre-run audit: {}", before.status().to_string()));
      return 1;
    }
    if (!before->clean()) {
      std::string m = fmt::format("the data is inconsistent before the run ({} problem(s)):", before->problem_count);
      for (const std::string& p : before->problems) m += "\n  " + p;
      fail(m);
      return 1;
    }
    baseline = before->value;
    summary.invariant_before = baseline;
  }

  if (cfg.seconds > 0) {
    Result<std::unique_ptr<Scheduler>> sched = Scheduler::create(cluster);
    if (!sched) {
      fail(fmt::format("starting the worker threads: {}", sched.status().to_string()));
      return 1;
    }
    // One recorder for every coordinator: it serialises whole lines, so
    // concurrent coordinators never interleave.
    std::unique_ptr<history::HistoryWriter> recorder;
    if (!cfg.history_path.empty()) {
      // Rows this run loaded (into fresh tables) start at version 1; after
      // an earlier run the versions are unknown.
      auto w = history::HistoryWriter::create(cfg.history_path, cfg.load ? history::InitialState::loaded(1)
                                                                          : history::InitialState::unknown());
      if (!w) {
        fail(fmt::format("--history: {}", w.status().to_string()));
        return 1;
      }
      recorder = std::move(*w);
      for (size_t i = 0; i < (*sched)->thread_count(); ++i) {
        Worker& worker = (*sched)->worker(i);
        for (size_t k = 0; k < worker.coordinator_count(); ++k) worker.coordinator(k).engine().set_observer(recorder.get());
      }
    }
    RunOptions ro;
    ro.warmup = std::chrono::seconds(cfg.warmup_seconds);
    ro.measure = std::chrono::seconds(cfg.seconds);
    ro.timeline = std::chrono::milliseconds(cfg.timeline_ms);
    ro.seed = cfg.seed;
    ro.stop = &stop_run;
    if (node.membership) {
      Membership* m = node.membership.get();
      ro.pause_requested = [m] { return m->pause_requested(); };
      ro.ack_pause = [m](uint64_t epoch) { m->ack_pause(epoch); };
    }
    ro.on_progress = [](const Progress& p) {
      fmt::print("[{:6.1f} s] {}{:.0f} commits/s ({} commits so far)\n", p.elapsed_s, p.warming_up ? "warm-up " : "",
                 p.last_commits_per_s, p.commits);
      std::fflush(stdout);
    };
    wait_for_start(cfg.start_at_ms, stop_run);
    // The run's coordinators park and acknowledge pauses themselves; the
    // gate acknowledges none while they run.
    std::optional<PauseGateHold> run_hold(std::in_place, node.gate.get());
    Result<RunStats> stats = run_workload(**sched, workload, cfg.compute.compute_id, ro);
    if (stats && (stats->halted_coordinators > 0 || stats->pause_refused)) run_hold->set_needs_recovery();
    run_hold.reset();
    if (!stats) {
      fail(stats.status().message());
      return 1;
    }
    if (recorder) {
      if (Status st = recorder->close(); !st) {
        fail(fmt::format("--history: writing {} failed: {}", cfg.history_path, st.to_string()));
        return 1;
      }
      fmt::print("history: {} transactions recorded in {}\n", recorder->written(), cfg.history_path);
    }
    if (stats->pauses > 0) {
      fmt::print("stop-the-world pauses: {} ({:.3f} s parked)\n", stats->pauses, stats->paused_seconds);
    }
    if (const uint64_t decided = (*sched)->totals().memory_failovers; decided > 0) {
      fmt::print("memory-node fail-over: {} transaction(s) decided by the live replicas ({} of {} memory nodes "
                 "live)\n",
                 decided, cluster.node_count() - static_cast<size_t>(std::popcount(cluster.applied_failed_mask())),
                 cluster.node_count());
    }
    if (stats->halted_coordinators > 0 || stats->uncertain > 0 || stats->pause_refused) node.leaver.safe = false;
    if (stats->pause_refused) {
      fmt::print("a stop-the-world pause was refused: this node needs recovery itself (a halted coordinator or a "
                 "broken link), so it stopped without leaving; the recovery coordinator recovers it as failed\n");
    }
    if (stats->fenced) fenced.store(true, std::memory_order_release);
    if (stats->halted_coordinators > 0) {
      fmt::print("{} coordinator(s) stopped after leaving a logged transaction to recovery\n",
                 stats->halted_coordinators);
    }
    summary.stats = std::move(*stats);
  }
  if (signals.received()) fmt::print("stopped by {}: the run ended early\n", signals.received_name());
  const bool was_fenced = fenced.load(std::memory_order_acquire);
  // "memory node 2 (127.0.0.1:7001): connection lost (disconnected)" when the run stopped for it.
  std::string lost;
  if (summary.stats && summary.stats->lost_node && !was_fenced) {
    const uint32_t n = *summary.stats->lost_node;
    lost = fmt::format("memory node {} ({}): connection lost ({})", cluster.node(n).region.node_id,
                       cluster.node(n).endpoint.to_string(), errc_name(summary.stats->lost_node_error));
  }

  if (was_fenced) {
    summary.check_skipped = "this node was fenced";
  } else if (!lost.empty()) {
    summary.check_skipped = "a memory node is unreachable";
  } else if (cfg.check) {
    CheckInput in;
    in.baseline = baseline;
    if (summary.stats) {
      in.committed_delta = summary.stats->committed_delta;
      in.uncertain = summary.stats->uncertain;
    }
    summary.check = workload.check(check_session, in);
  }

  // The summary and the report cover what ran, also when the run stopped
  // early (how many attempts failed, how many are uncertain).
  if (!publish(make_report(summary), cfg)) return 1;
  const uint32_t halted = summary.stats ? summary.stats->halted_coordinators : 0;
  const std::string recover_how = node.membership ? "the failure detector does it once this process is gone"
                                             : "run the cluster with the failure detector (--zookeeper), or "
                                               "pandora-ctl recover on such a cluster";
  if (was_fenced) {
    if (node.membership) {
      // Where the stall was: here (a long pause between this process's
      // heartbeats) or on the way (replicas or network missed them).
      std::string pause;
      if (auto hb = node.membership->heartbeat_stats()) {
        pause = fmt::format(" The longest pause between two of its heartbeats was {:.1f} ms (heartbeat thread {}).",
                            static_cast<double>(hb->longest_gap_us) / 1000.0,
                            hb->realtime ? "real-time" : (hb->priority_raised ? "at raised priority" : "not raised"));
      }
      fail(fmt::format("this compute node (pid {}) was declared failed by the failure detector and fenced (a "
                       "stall longer than its timeout, e.g. SIGSTOP or an overloaded host); its unfinished "
                       "transactions were recovered by the cluster.{} Stopped; start it again to join under a new "
                       "pid.",
                       cfg.compute.compute_id, pause));
    } else {
      fail(fmt::format("this compute node (pid {}) was fenced by a memory node (pandora-ctl fence, or a recovery "
                       "of this pid); it stopped. Its unfinished transactions must be recovered (pandora-ctl "
                       "recover); a fenced pid never logs in again: use another --compute-id.",
                       cfg.compute.compute_id));
    }
    return kExitFenced;
  }
  if (!lost.empty()) {
    fail(fmt::format("{}; its daemon is gone or the link failed, so no transaction could commit any more and every "
                     "coordinator stopped (connections are never re-opened during a run).{} Restart that memory "
                     "node (its region keeps the data) and run again.",
                     lost,
                     halted == 0 ? std::string()
                                 : fmt::format(" {} coordinator(s) left a logged transaction undecided: this node "
                                               "(pid {}) must be recovered ({}).",
                                               halted, cfg.compute.compute_id, recover_how)));
    return kExitMemoryNodeLost;
  }
  if (summary.check && !summary.check->passed) return 1;
  if (halted > 0) {
    fail(fmt::format("{} coordinator(s) left a logged transaction undecided after a transport failure: this node "
                     "(pid {}) must be recovered before its pid's latches are released ({})",
                     halted, cfg.compute.compute_id, recover_how));
    return kExitNeedsRecovery;
  }
  return 0;
}

}  // namespace pandora::workloads
