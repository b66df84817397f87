// Deterministic simulation of the whole store (issue 12): the real engine,
// recovery and litmus programs, run on in-process memory nodes
// (testing/sim/sim_network.h) by one seeded scheduler on one thread. One
// seed replays one run exactly, failures included.
//
//   SimOptions o;                   // litmus1, pandora, 2 compute nodes x 3 coordinators
//   o.seed = 42;
//   SimResult r = simulate(o);
//   if (!r.ok()) puts(r.failure.c_str());   // replay: the same options and seed
//
// What a run is:
//  * 3 memory nodes (2 replicas), a loader that creates the litmus table and
//    loads every instance (litmus/driver/litmus_spec.h), then
//    `compute_nodes` simulated compute nodes (each a Worker with
//    `coordinators` coroutines, its own Cluster, failed-ids and pid) running
//    litmus transactions and asserts until `txns` transactions ended.
//  * Every step of the run is one event chosen by the seeded scheduler:
//    resume one compute node for a round (Worker::step) or land one
//    in-flight operation of one connection. Between events the scheduler
//    may crash a compute node (with `crash_probability` per event), break
//    one of its connections (`disconnect_probability`; the node is then
//    crashed a little later, as a node whose link broke must be restarted),
//    crash the recovery leader (`leader_crash_probability`), or declare a
//    live node failed (`false_positive_probability`: fenced and recovered
//    while it runs; it stops once it finds itself fenced). Crashes fall
//    between any two operations, so a batch sent to several memory nodes
//    lands in part. Nodes also crash at completed protocol steps
//    (`step_crash_probability`, through compute/step_hook.h).
//  * A crashed pid is detected after a random delay; a recovery leader (a
//    simulated node with its own pid) fences it everywhere, runs
//    recover_logs and truncate_lanes, asserts the instances its logs named,
//    publishes the pid to every live node's failed-ids and sweeps its stray
//    latches (ARCHITECTURE.md 5), while the others keep running. A leader
//    that crashes is fenced and replaced; the new one starts over. Then a
//    replacement compute node joins with a fresh pid.
//  * At the end (every compute node finished, every crash recovered) a
//    checker node asserts every instance on the quiescent store, and the
//    history of every transaction that reported an outcome is checked for
//    strict-serializability anomalies (litmus/history/checker.h).
// A run fails on the first assert violation, anomaly, recovery error or an
// exception from any simulated node, and when it does not end within
// `max_events` (a livelock).
//
// Protocols: pandora and log-a-latch as above; ford recovers
// stop-the-world (recovery/ford_recovery.h): once a crash is detected every
// live coordinator parks between transactions, and when all have, a leader
// fences every dead pid, repairs from the undo records, truncates, scans
// every latch away and asserts every instance; then the world resumes. Bug
// switches (compute_config.h) need a build with PANDORA_BUG_SWITCHES and
// the pandora protocol.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "compute/compute_config.h"

namespace pandora::sim {

struct SimOptions {
  std::string test = "litmus1";  // litmus/driver/litmus_spec.h parse_test names
  ProtocolMode protocol = ProtocolMode::kPandora;
  BugSwitches bugs;
  uint64_t seed = 1;
  uint32_t memory_nodes = 3;
  uint32_t replicas = 2;
  uint32_t compute_nodes = 2;
  uint32_t coordinators = 3;
  uint32_t instances = 8;
  uint64_t txns = 300;           // litmus transactions (and asserts) to end, over all nodes
  uint32_t assert_every = 6;     // 1 in N transactions is an assert
  double crash_probability = 1.0 / 4000;
  double disconnect_probability = 1.0 / 20000;
  double leader_crash_probability = 1.0 / 300;
  // Per completed step (compute/step_hook.h: after a latch CAS, a log
  // WRITE, validation, ...) of a compute node or leader: crash it right
  // there. Complements the per-event crashes with the protocol's own
  // boundaries, the way the litmus driver's crash points do.
  double step_crash_probability = 1.0 / 2000;
  // The detector declares a live compute node failed (a false positive)
  // with this probability per event: it is fenced and recovered while it
  // runs, and stops when it finds itself fenced. 0 (the default) draws no
  // random number, so the runs of other options are unchanged.
  double false_positive_probability = 0;
  uint32_t max_crashes = 6;      // compute-node crashes and disconnects per run
  uint32_t detect_delay = 400;   // events until a crash is detected: uniform in [1, N]
  uint64_t max_events = 5'000'000;
  bool check_history = true;
};

struct SimResult {
  Status error;          // set up failed, or an option is not supported (not a violation)
  std::string failure;   // empty when the run held every check; else what broke, first
  uint64_t events = 0;
  uint64_t ops_landed = 0;
  uint64_t ops_at_failure = 0;   // operations landed when the failure was found
  uint64_t commits = 0, aborts = 0, asserts = 0;
  uint64_t crashes = 0;          // compute nodes crashed (by the scheduler or after a broken link)
  uint64_t crashes_in_flight = 0;  // ... with operations sent and not landed
  uint64_t crashes_mid_batch = 0;  // ... with operations in flight to two or more memory nodes
  uint64_t step_crashes = 0;     // ... at a completed protocol step (step_crash_probability)
  uint64_t disconnects = 0;
  uint64_t false_positives = 0;  // live nodes declared failed, fenced and recovered while running
  uint64_t halts = 0;            // coordinators that halted (their node needs recovery)
  uint64_t recoveries = 0;       // pids recovered
  uint64_t leader_crashes = 0;
  uint64_t pauses = 0;           // ford: stop-the-world pauses
  uint64_t rolled_forward = 0, rolled_back = 0, swept = 0;
  uint64_t traces = 0;           // transactions in the checked history
  uint64_t digest = 0;           // of the history and the final memory: equal runs, equal digests
  double sim_ms = 0;             // simulated time

  bool ok() const { return error.is_ok() && failure.empty(); }
};

SimResult simulate(const SimOptions& options);

}  // namespace pandora::sim
