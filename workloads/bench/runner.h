// Runs a workload on every coordinator of a Scheduler until a deadline and
// collects what pandora-bench reports.
//
//   RunOptions o{.warmup = 1s, .measure = 10s, .timeline = 100ms, .seed = 1};
//   o.on_progress = [](const Progress& p) { ... };     // ~once per second, caller's thread
//   Result<RunStats> s = run_workload(*sched, workload, compute_id, o);
//
// Each coordinator loops: draw and run one transaction (Workload::run_one),
// time it, account it in its own slot (no sharing between coordinators, so
// no locks on the hot path; only the live commit counter the progress line
// reads is atomic). Transactions that *start* in [warmup end, deadline) are
// measured; the committed deltas and transport failures are summed over the
// whole run (warm-up included), since the consistency check covers
// everything that ran.
//
// A run ends early, for every coordinator at once, when one of them finds
// that nothing can commit any more: this node was fenced by a memory node,
// or its connection to a memory node broke (the daemon died, the link
// failed); connections never recover (common/transport/transport.h), so
// retrying would only spin. RunStats says which (fenced, lost_node). Engine
// counters (TxnCounters) are snapshotted at each
// coordinator's first measured transaction and after its last one, so the
// remote-operation counts cover exactly the measured transactions.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/status.h"
#include "compute/scheduler.h"
#include "compute/txn_engine.h"
#include "common/latency_histogram.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

struct Progress {
  double elapsed_s = 0;          // since the run started (warm-up included)
  bool warming_up = false;
  uint64_t commits = 0;          // committed so far (warm-up included)
  double last_commits_per_s = 0; // over the last interval
};

struct RunOptions {
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds measure{10000};
  std::chrono::milliseconds timeline{100};
  uint64_t seed = 1;
  std::function<void(const Progress&)> on_progress;  // may be empty
  // When set and true, every coordinator stops after its current
  // transaction (SIGTERM, or the detector fenced this node).
  const std::atomic<bool>* stop = nullptr;
  // Stop-the-world pauses (ford's recovery): when pause_requested() returns
  // a non-zero epoch, every coordinator parks between transactions; once
  // all are parked ack_pause(epoch) is called (once per epoch), and they
  // resume when pause_requested() returns something else. A node that
  // needs recovery never acknowledges (RunStats::pause_refused). Both optional.
  std::function<uint64_t()> pause_requested;
  std::function<void(uint64_t)> ack_pause;
};

struct RunStats {
  double measured_seconds = 0;
  // Measured window.
  uint64_t attempts = 0;
  uint64_t commits = 0;
  std::array<uint64_t, kAbortReasons> aborts{};  // by AbortReason
  std::vector<uint64_t> commits_by_type;         // by Workload::txn_types()
  std::vector<uint64_t> aborts_by_type;
  std::vector<OpCounters> ops_by_type;           // remote ops of committed transactions, by type
  LatencyHistogram latency;                      // committed transactions, ns
  TxnCounters engine;                            // engine counters over the window
  // Whole run.
  int64_t committed_delta = 0;
  // Transactions whose outcome is unknown: a transport failure hit them
  // after they were logged (or during their commit WRITEs), so recovery
  // decides them. At most one per coordinator (it halts). A transport
  // failure before that aborts with nothing written and is only an abort.
  uint64_t uncertain = 0;
  uint32_t halted_coordinators = 0;              // stopped after leaving a transaction to recovery
  bool fenced = false;                           // a memory node refused this node as fenced
  // Index (in the cluster's memory nodes) of a memory node whose connection
  // broke, and how (kDisconnected, kTimeout, ...); the run stopped then.
  std::optional<uint32_t> lost_node;
  Errc lost_node_error = Errc::kOk;
  // A stop-the-world pause came while this node needed recovery (a
  // halted coordinator, a broken link): it did not acknowledge, every
  // coordinator stopped, and the node must be recovered as failed.
  bool pause_refused = false;
  uint32_t pauses = 0;                           // stop-the-world pauses this node parked for
  double paused_seconds = 0;                     // wall time spent parked (all coordinators)
  uint64_t total_commits = 0;
  // Commits (and aborted attempts) per timeline bucket, by completion
  // time, from the start of the run (warm-up included).
  std::chrono::milliseconds timeline_width{100};
  // CLOCK_REALTIME of the timeline's bucket 0, so plots from several
  // processes share one clock (the first transaction's begin may come much
  // later: worker start-up, connections).
  uint64_t timeline_start_realtime_ns = 0;
  std::chrono::milliseconds warmup{0};
  std::vector<uint64_t> timeline;
  std::vector<uint64_t> timeline_aborts;

  double commits_per_second() const {
    return measured_seconds > 0 ? static_cast<double>(commits) / measured_seconds : 0.0;
  }
};

// Engine counters `later - earlier` (both cumulative of one coordinator).
TxnCounters counters_between(const TxnCounters& earlier, const TxnCounters& later);

// Runs until warmup + measure has passed. Fails only when a coordinator
// threw (the message says what).
Result<RunStats> run_workload(Scheduler& scheduler, const Workload& workload, uint16_t compute_id,
                              const RunOptions& options);

}  // namespace pandora::workloads
