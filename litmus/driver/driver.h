// The litmus driver of pandora-litmus (DART litmus tests, seed chapter 5,
// with crash injection).
//
// The driver starts its own pandora-memd daemons (or attaches to
// --memory-nodes), creates one table and loads every instance's keys, then
// forks --processes compute processes. Each runs --coordinators coroutine
// coordinators that pick a random instance and run its litmus transaction,
// or (every --assert-every-th transaction) its assert as a read-only
// transaction. Crash points (compute/crash_injector.h) are armed in every
// compute process: when one fires, the process records the point in the
// shared page and SIGKILLs itself. The driver then recovers the dead pid
// exactly as tests/compute/crash_test.cc does - fence on every memory node,
// recover_logs, truncate_lanes, publish the pid in failed-ids, sweep - in a
// forked recovery leader (which may itself be crashed at the recovery crash
// points and is then fenced and replaced: every step is idempotent), pushes
// the pid to the surviving processes through the shared page
// (litmus/driver/shared_page.h) and starts a replacement process with a
// fresh pid. --protocol ford recovers stop-the-world instead (every live
// process parks between transactions while a ford leader repairs from undo
// records and scans every latch away: recovery/ford_recovery.h). At the end
// every process is stopped (and recovered if it had to be killed) and the
// driver runs every instance's assert once more on the quiescent store. Exit 0: no violation; 1: violation; 2: error; 3: a
// crash point the run had to cover was never hit (--require-coverage).
//
// --detector real replaces the recovery leaders and the shared page's
// failed-ids with the real failure detector (ZooKeeper, Registry, pandora-fd
// replicas, Membership in every compute process): real_detector.h.
//
// Driver::run is the whole run; the driver lives in driver.cc (setup,
// compute processes, the main loop, final asserts, report) and
// recovery.cc (recovery leaders, pandora's per-pid recovery and ford's
// stop-the-world recovery); main.cc parses the command line into Options.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/logger.h"
#include "common/status.h"
#include "compute/cluster.h"
#include "compute/compute_config.h"
#include "compute/crash_injector.h"
#include "litmus/driver/litmus_spec.h"
#include "compute/trace/initial_state.h"
#include "litmus/driver/real_detector.h"
#include "litmus/driver/shared_page.h"
#include "testing/local_memd.h"

namespace pandora::litmus {

inline constexpr uint16_t kDriverPid = 1;
inline constexpr int kExitViolation = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitCoverage = 3;

inline uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

struct Options {
  std::string test = "litmus1";
  std::string protocol = "pandora";
  std::string backend = "shm";
  std::string bug = "none";
  std::string crash = "random";  // random | cycle | none | POINT
  std::string crash_probability = "0.002";
  uint64_t crash_nth = 0;
  std::string recovery_crash_probability = "0.05";
  uint64_t seconds = 10;
  uint64_t max_txns = 0;
  uint64_t instances = 8;
  uint64_t processes = 2;
  uint64_t coordinators = 4;
  uint64_t seed = 1;
  uint64_t assert_every = 8;
  uint64_t max_crashes = 1000;
  std::string history;
  std::string memory_nodes;
  uint64_t cluster_id = 0;
  std::string secret_file;
  std::string memd_binary = PANDORA_LITMUS_MEMD_PATH;
  // Log area of each daemon it starts (the region is 64 MiB more): 1 GiB
  // holds 8192 pids' lanes at 2 KiB x 64, enough for long runs with many
  // crashes (pids are never reused). Smaller suits a short run in a small
  // VM (the Soft-RoCE VM's /dev/shm is 1 GiB).
  uint64_t log_size = 1ull << 30;
  uint64_t nodes = 3;
  uint64_t replicas = 2;
  bool keep_going = false;
  bool require_coverage = false;
  bool verbose = false;
  // shared-page: the driver recovers crashed pids itself and publishes them
  // through the shared page (the fast stand-in, mutation runs); real: the
  // real failure detector and recovery coordinator (real_detector.h).
  std::string detector = "shared-page";
  std::string zookeeper;  // --detector real: this ensemble instead of starting one
  std::string fd_binary = PANDORA_LITMUS_FD_PATH;
  uint64_t fd_timeout_us = 200000;
  std::string fd_logs;  // --detector real: copy the replicas' logs into this directory at the end
  // Exit 3 unless at least this many crashed pids were recovered (by the
  // failure detector with --detector real).
  uint64_t min_recoveries = 0;
};

// Crash points a run of `mode` can reach at all (coverage accounting).
bool applicable(CrashPoint p, ProtocolMode mode, bool recovery);

class Driver {
 public:
  Driver(Options o, std::vector<InstanceSpec> kinds, ComputeConfig base)
      : o_(std::move(o)), kinds_(std::move(kinds)), base_(std::move(base)), logger_("litmus", LogLevel::kWarn) {}

  int run(double p_crash, std::optional<CrashPoint> point, double p_recovery, bool cycle);

 private:
  struct Child {
    pid_t os_pid = -1;
    uint16_t pid = 0;
    size_t slot = 0;
  };

  const InstanceSpec& spec_of(uint32_t inst) const { return kinds_[inst % kinds_.size()]; }
  std::optional<uint16_t> next_pid() {
    if (next_pid_ > max_pid_) return std::nullopt;
    return static_cast<uint16_t>(next_pid_++);
  }
  Status setup();
  bool spawn_child(size_t slot);
  int child_main(size_t slot, uint16_t pid);
  int leader_main(uint16_t dead, uint16_t leader_pid, bool armed);
  int ford_leader_main(const std::vector<uint16_t>& dead, uint16_t leader_pid, bool armed);
  std::unique_ptr<Cluster> leader_connect(const std::vector<uint16_t>& dead, uint16_t leader_pid, const Logger& log,
                                          int* rc);
  void arm_leader(CrashInjector& inj, uint16_t leader_pid, bool armed) const;
  void assert_instances(Cluster& cluster, std::vector<uint32_t> instances, uint16_t who);
  Status fence_everywhere(uint16_t pid);
  Status recover(uint16_t dead);
  Status recover_stopped_world(uint16_t dead);
  // Forks recovery leaders running body(leader pid, armed) until one
  // succeeds; a crashed leader is fenced and replaced (unarmed after three).
  Status run_leaders(const std::function<int(uint16_t, bool)>& body, const std::string& what);
  void record_violation(SharedPage& sp, uint32_t inst, uint16_t pid, std::span<const std::optional<uint64_t>> v);
  int final_asserts();
  int report(double seconds, int final_rc);

  Options o_;
  std::vector<InstanceSpec> kinds_;
  ComputeConfig base_;
  Logger logger_;
  std::optional<LocalMemdCluster> memds_;  // the daemons of a run without --memory-nodes
  std::unique_ptr<Cluster> cluster_;
  // --detector real (declared after cluster_: stopped before it goes).
  std::unique_ptr<RealDetector> real_;
  SharedMapping shared_;
  std::vector<Child> children_;
  // What setup() loaded (key ranges at version 1), for --history's header.
  history::InitialState loaded_;
  uint32_t next_pid_ = kDriverPid + 1;
  uint16_t max_pid_ = 0;
  double p_crash_ = 0;
  std::optional<CrashPoint> point_;
  double p_recovery_ = 0;
  // --crash cycle: process k is armed at compute_cycle_[k % size] (a random
  // hit between the 1st and the 20th), recovery leader k at
  // recovery_cycle_[k % size], so every applicable point gets crashes.
  bool cycle_ = false;       // still arming (cleared when the budget runs low)
  bool cycle_mode_ = false;  // the run asked for it (coverage counts crashes)
  std::vector<CrashPoint> compute_cycle_, recovery_cycle_;
  uint64_t leaders_started_ = 0;
  uint64_t leader_index_ = 0;  // the forked leader's own index
  uint64_t start_ns_ = 0;
  uint64_t children_started_ = 0;
  uint64_t crashes_ = 0;
  uint64_t child_errors_ = 0;
  uint64_t leader_crashes_ = 0;
  uint64_t recoveries_ = 0;
  std::array<uint64_t, kCrashPointCount> fired_{};
  bool pids_exhausted_ = false;
  std::vector<uint16_t> failed_;
  // ford: pids recovered in a stop-the-world pause (some died while the
  // others were parking and were recovered with the one that caused it).
  std::vector<uint16_t> recovered_in_pause_;
  uint32_t pause_epoch_ = 0;
  uint64_t pauses_ = 0;
  double pause_ms_total_ = 0, pause_ms_max_ = 0;
};

}  // namespace pandora::litmus
