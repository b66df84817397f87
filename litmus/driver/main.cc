// pandora-litmus: DART litmus tests (seed chapter 5) with crash injection.
//
// The driver starts its own pandora-memd daemons (or attaches to
// --memory-nodes), creates one table and loads every instance's keys, then
// forks --processes compute processes. Each runs --coordinators coroutine
// coordinators that pick a random instance and run its litmus transaction,
// or (every --assert-every-th transaction) its assert as a read-only
// transaction. Crash points (compute/crash_points.h) are armed in every
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
// records and scans every latch away: compute/ford_recovery.h). At the end
// every process is stopped (and recovered if it had to
// be killed) and the driver runs every instance's assert once more on the
// quiescent store. Exit 0: no violation; 1: violation; 2: error; 3: a
// crash point the run had to cover was never hit (--require-coverage).
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/logger.h"
#include "common/options.h"
#include "common/transport/client.h"
#include "compute/blocking_client.h"
#include "compute/cluster.h"
#include "compute/compute_config.h"
#include "compute/crash_points.h"
#include "compute/loader.h"
#include "compute/op_batch.h"
#include "compute/ford_recovery.h"
#include "compute/log_recovery.h"
#include "compute/scheduler.h"
#include "litmus/driver/litmus_spec.h"
#include "litmus/driver/memd_launcher.h"
#include "litmus/driver/shared_page.h"
#include "litmus/history/history.h"

namespace pandora::litmus {
namespace {

constexpr uint16_t kDriverPid = 1;
constexpr int kExitViolation = 1;
constexpr int kExitError = 2;
constexpr int kExitCoverage = 3;

uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

struct Options {
  std::string test = "litmus1";
  std::string protocol = "pandora";
  std::string backend = "shm";
  std::string bug = "none";
  std::string crash = "random";  // random | none | POINT
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
  uint64_t nodes = 3;
  uint64_t replicas = 2;
  bool keep_going = false;
  bool require_coverage = false;
  bool verbose = false;
};

std::optional<double> parse_probability(const std::string& s) {
  try {
    size_t used = 0;
    const double p = std::stod(s, &used);
    if (used != s.size() || p < 0 || p > 1) return std::nullopt;
    return p;
  } catch (...) {
    return std::nullopt;
  }
}

// Crash points a run of `mode` can reach at all (coverage accounting).
bool applicable(CrashPoint p, ProtocolMode mode, bool recovery) {
  switch (p) {
    case CrashPoint::kAfterLatchIntent:
      return mode == ProtocolMode::kLogALatch;
    case CrashPoint::kAfterFordUndo:
      return mode == ProtocolMode::kFord;
    case CrashPoint::kAfterLogWrite:
      return mode != ProtocolMode::kFord;  // ford has no logging phase
    default:
      return !is_recovery_point(p) || recovery;
  }
}

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
  bool crash_armed() const { return p_crash_ > 0 || point_.has_value() || cycle_; }

  Options o_;
  std::vector<InstanceSpec> kinds_;
  ComputeConfig base_;
  Logger logger_;
  std::optional<LocalMemds> memds_;
  std::unique_ptr<Cluster> cluster_;
  SharedMapping shared_;
  std::vector<Child> children_;
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

Status Driver::setup() {
  if (o_.memory_nodes.empty()) {
    memds_.emplace(LocalMemdOptions{o_.memd_binary, o_.nodes});
    if (Status s = memds_->start(); !s) return s;
    base_.memory_nodes = memds_->endpoints();
    base_.cluster_id = memds_->cluster_id();
    base_.secret = memds_->secret();
  }
  ComputeConfig cfg = base_;
  cfg.compute_id = kDriverPid;
  auto c = Cluster::connect(cfg, logger_);
  if (!c) return c.status();
  cluster_ = std::move(*c);
  uint64_t rows = 0;
  for (uint32_t i = 0; i < o_.instances; ++i) rows += spec_of(i).vars;
  const std::vector<TableSpec> specs = {{kTable, "litmus", kValueSize, std::max<uint64_t>(rows * 4, 256)}};
  CreateTablesOptions cto;
  cto.replace_existing = !o_.memory_nodes.empty();  // attached: the litmus run owns the cluster
  if (Status s = create_tables(*cluster_, specs, cto); !s) return s;
  TableLoader loader(*cluster_);
  const std::array<uint8_t, kValueSize> zero{};
  for (uint32_t i = 0; i < o_.instances; ++i) {
    if (!initially_present(spec_of(i).kind)) continue;
    for (uint32_t v = 0; v < spec_of(i).vars; ++v) {
      if (Status s = loader.add(kTable, key_of(i, v), zero); !s) return s;
    }
  }
  if (Status s = loader.finish(); !s) return s;
  max_pid_ = static_cast<uint16_t>(std::min<uint32_t>(cluster_->lanes().max_pid(), 65535));
  return Status();
}

void Driver::record_violation(SharedPage& sp, uint32_t inst, uint16_t pid,
                              std::span<const std::optional<uint64_t>> v) {
  const uint32_t idx = sp.violations.fetch_add(1, std::memory_order_acq_rel);
  if (idx >= kMaxViolationRecords) return;
  ViolationRecord& r = sp.records[idx];
  r.instance = inst;
  r.pid = pid;
  r.at_ns = mono_ns();
  r.last_crash = sp.last_crash.load(std::memory_order_acquire);
  const uint64_t lc = sp.last_crash_ns.load(std::memory_order_acquire);
  r.since_crash_ns = lc && r.at_ns > lc ? r.at_ns - lc : 0;
  for (size_t i = 0; i < v.size() && i < 8; ++i) {
    r.present[i] = v[i].has_value();
    r.values[i] = v[i].value_or(0);
  }
  r.ready.store(1, std::memory_order_release);
}

// ---- compute process -------------------------------------------------------

int Driver::child_main(size_t slot, uint16_t pid) {
  SharedPage& sp = *shared_.get();
  ComputeConfig cfg = base_;
  cfg.compute_id = pid;
  cfg.threads = 1;
  cfg.coordinators = static_cast<uint32_t>(o_.coordinators);
  Logger quiet("litmus.child", LogLevel::kError);
  auto c = Cluster::connect(cfg, quiet);
  if (!c) {
    fprintf(stderr, "pid %u: connect: %s\n", pid, c.status().to_string().c_str());
    return 10;
  }
  Cluster& cluster = **c;
  if (Status s = cluster.load_directory(); !s) {
    fprintf(stderr, "pid %u: directory: %s\n", pid, s.to_string().c_str());
    return 11;
  }
  uint64_t seen = 0;
  sp.merge_failed(cluster.failed_ids(), &seen);
  auto sched = Scheduler::create(cluster);
  if (!sched) {
    fprintf(stderr, "pid %u: scheduler: %s\n", pid, sched.status().to_string().c_str());
    return 12;
  }
  CrashInjector inj(CrashInjector::Counters(sp.hits, kCrashPointCount));
  inj.set_note(&sp.children[slot].crash_note);
  const uint64_t seed = o_.seed * 0x9e3779b97f4a7c15ULL + pid;
  if (cycle_) {
    inj.arm_point(compute_cycle_[children_started_ % compute_cycle_.size()], 1 + seed % 20, 0, seed);
  } else if (point_ && !is_recovery_point(*point_)) {
    inj.arm_point(*point_, o_.crash_nth, p_crash_, seed);
  } else if (p_crash_ > 0) {
    // --crash random, or a recovery point: compute processes crash at random
    // points so that there are recoveries (whose leaders then crash at it).
    inj.arm_random(p_crash_, seed, CrashInjector::Scope::kCompute);
  }
  TxnObserver* observer = nullptr;
  // One history file per compute process (FILE.<pid>), flushed after every
  // transaction so that a crash loses only the transaction it interrupted
  // (whose outcome recovery decides).
  std::unique_ptr<history::HistoryWriter> writer;
  if (!o_.history.empty()) {
    auto w = history::HistoryWriter::create(fmt::format("{}.{}", o_.history, pid));
    if (!w) {
      fprintf(stderr, "pid %u: history: %s\n", pid, w.status().to_string().c_str());
      return 13;
    }
    writer = std::move(*w);
    observer = writer.get();
  }
  for (size_t w = 0; w < (*sched)->thread_count(); ++w) {
    Worker& worker = (*sched)->worker(w);
    for (size_t k = 0; k < worker.coordinator_count(); ++k) {
      worker.coordinator(k).engine().set_crash_injector(&inj);
      worker.coordinator(k).engine().set_observer(observer);
    }
  }
  auto flush_history = [&] {
    if (writer) (void)writer->flush();
  };
  // Stop-the-world (ford recovery): a coordinator between transactions
  // parks while a pause is requested; the process acknowledges the pause
  // once all of its coordinators are parked, so none holds a latch.
  int parked = 0;
  const int coordinators = static_cast<int>(o_.coordinators);
  auto park = [&](Coordinator& co) {
    ++parked;
    for (uint32_t epoch; (epoch = sp.pause_epoch.load(std::memory_order_acquire)) != 0;) {
      if (parked == coordinators) {
        sp.children[slot].parked_epoch.store(epoch, std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      co.yield();  // let the others finish their transactions
    }
    --parked;
  };
  // One worker thread: the coordinators share `seen` and `parked` without a race.
  (*sched)->run([&](Coordinator& co) {
    Rng rng(seed ^ (uint64_t{co.id()} << 32));
    uint64_t counter = 0;
    while (sp.stop.load(std::memory_order_acquire) == 0) {
      if (sp.pause_epoch.load(std::memory_order_acquire) != 0) {
        park(co);
        continue;
      }
      sp.merge_failed(cluster.failed_ids(), &seen);
      const uint32_t inst = static_cast<uint32_t>(rng() % o_.instances);
      const InstanceSpec& spec = spec_of(inst);
      Txn& t = co.txn();
      if (o_.assert_every && rng() % o_.assert_every == 0) {
        bool absent = false;
        auto vals = run_assert_txn(t, spec, inst, &absent);
        if (!vals) {
          sp.asserts_inconclusive.fetch_add(1, std::memory_order_relaxed);
          if (absent) {
            if (auto evidence = probe_mixed_presence(t, spec, inst)) record_violation(sp, inst, pid, *evidence);
          }
          continue;
        }
        sp.asserts.fetch_add(1, std::memory_order_relaxed);
        std::vector<std::optional<uint64_t>> v(vals->begin(), vals->end());
        if (check_assert(spec, v)) record_violation(sp, inst, pid, v);
        continue;
      }
      // Unique, non-zero tag: pid | coordinator | counter.
      const uint64_t tag = (uint64_t{pid} << 48) | (uint64_t{co.id()} << 40) | (++counter & ((1ULL << 40) - 1));
      const CommitOutcome out = run_litmus_txn(t, spec, inst, rng, tag);
      flush_history();
      (out.committed ? sp.commits : sp.aborts).fetch_add(1, std::memory_order_relaxed);
      if (o_.max_txns && sp.commits.load(std::memory_order_relaxed) + sp.aborts.load(std::memory_order_relaxed) >=
                             o_.max_txns) {
        sp.stop.store(1, std::memory_order_release);
      }
      if (!o_.keep_going && sp.violations.load(std::memory_order_relaxed) > 0) break;
    }
  });
  return 0;
}

bool Driver::spawn_child(size_t slot) {
  auto pid = next_pid();
  if (!pid) {
    pids_exhausted_ = true;
    return false;
  }
  shared_.get()->children[slot].crash_note.store(-1, std::memory_order_relaxed);
  fflush(stdout);
  fflush(stderr);
  const pid_t os = fork();
  if (os == 0) _exit(child_main(slot, *pid));
  if (os < 0) return false;
  children_[slot] = Child{os, *pid, slot};
  ++children_started_;
  return true;
}

// ---- recovery ----------------------------------------------------------------

Status Driver::fence_everywhere(uint16_t pid) {
  ClientIdentity admin;
  admin.cluster_id = base_.cluster_id;
  admin.secret = base_.secret;
  admin.role = wire::Role::kAdmin;
  admin.compute_id = 0;
  for (const Endpoint& ep : base_.memory_nodes) {
    auto ctl = ControlClient::connect(ep, admin, std::chrono::seconds(5));
    if (!ctl) return ctl.status();
    if (Status s = (*ctl)->fence(pid); !s) return s;
  }
  return Status();
}

// The recovery leader: a separate process so that it can be crashed at the
// recovery crash points; ARCHITECTURE.md 5 steps 2-5 for `dead`.
int Driver::leader_main(uint16_t dead, uint16_t leader_pid, bool armed) {
  SharedPage& sp = *shared_.get();
  if (Status s = fence_everywhere(dead); !s) {
    fprintf(stderr, "leader: fence %u: %s\n", dead, s.to_string().c_str());
    return 20;
  }
  ComputeConfig cfg = base_;
  cfg.compute_id = leader_pid;
  Logger quiet("litmus.recovery", LogLevel::kError);
  auto c = Cluster::connect(cfg, quiet);
  if (!c || !(*c)->load_directory()) return 21;
  Cluster& cluster = **c;
  CrashInjector inj(CrashInjector::Counters(sp.hits, kCrashPointCount));
  arm_leader(inj, leader_pid, armed);
  const auto conns = cluster.bootstrap_connections();
  auto report = recover_logs(cluster, conns, dead, quiet, &inj);
  if (!report) {
    fprintf(stderr, "leader: recover_logs %u: %s\n", dead, report.status().to_string().c_str());
    return 22;
  }
  if (Status s = truncate_lanes(cluster, conns, dead, &inj); !s) return 23;
  // Post-recovery asserts on the instances the dead node's logs named, after
  // truncation and BEFORE publishing: the leader already treats the dead
  // pid's latches as free (recovery of its logs is complete), while every
  // compute process still sees them as live and keeps off these objects. A
  // wrong roll-back (lost-decision, logging-without-latching) would
  // otherwise be repaired by the next commit on the instance before any
  // assert saw it.
  {
    std::vector<uint64_t> keys(report->latch_sites.size(), 0);
    OpBatch batch(conns, std::chrono::seconds(5));
    for (size_t i = 0; i < keys.size(); ++i) {
      batch.read(report->latch_sites[i].node, report->latch_sites[i].slot, &keys[i], sizeof(uint64_t));
    }
    if (!keys.empty() && batch.run()) {
      std::vector<uint32_t> instances;
      for (uint64_t k : keys) instances.push_back(static_cast<uint32_t>(k / kMaxVars));
      uint64_t seen = 0;
      sp.merge_failed(cluster.failed_ids(), &seen);
      cluster.failed_ids().add(dead);
      assert_instances(cluster, std::move(instances), leader_pid);
    }
  }
  sp.publish_failed(dead);
  auto swept = sweep_stray_latches(cluster, conns, dead, report->latch_sites, &inj);
  if (!swept) return 24;
  sp.rec_records.fetch_add(report->records);
  sp.rec_rolled_back.fetch_add(report->rolled_back);
  sp.rec_rolled_forward.fetch_add(report->rolled_forward);
  sp.rec_swept.fetch_add(*swept);
  if (o_.verbose) {
    fprintf(stderr, "recovered pid %u: %u records, %u rolled back, %u rolled forward, %u latches swept\n", dead,
            report->records, report->rolled_back, report->rolled_forward, *swept);
  }
  return 0;
}

void Driver::arm_leader(CrashInjector& inj, uint16_t leader_pid, bool armed) const {
  SharedPage& sp = *shared_.get();
  inj.set_note(&sp.recovery_note);
  if (!armed) return;
  const uint64_t seed = o_.seed * 0x2545f4914f6cdd1dULL + leader_pid;
  if (cycle_) inj.arm_point(recovery_cycle_[leader_index_ % recovery_cycle_.size()], 1, 0, seed);
  else if (point_ && is_recovery_point(*point_)) inj.arm_point(*point_, 1, 0, seed);
  else if (!point_ && p_recovery_ > 0) inj.arm_random(p_recovery_, seed, CrashInjector::Scope::kRecovery);
}

// Each instance's assert as a read-only transaction of `who` (retried while
// inconclusive, up to 20 times); violations are recorded.
void Driver::assert_instances(Cluster& cluster, std::vector<uint32_t> instances, uint16_t who) {
  SharedPage& sp = *shared_.get();
  std::sort(instances.begin(), instances.end());
  instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
  auto client = BlockingClient::create(cluster, 0);
  if (!client) return;
  for (uint32_t inst : instances) {
    if (inst >= o_.instances) continue;
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::optional<std::vector<uint64_t>> vals;
      std::optional<std::vector<std::optional<uint64_t>>> evidence;
      (*client)->run([&](Txn& t) {
        bool absent = false;
        vals = run_assert_txn(t, spec_of(inst), inst, &absent);
        if (!vals && absent) evidence = probe_mixed_presence(t, spec_of(inst), inst);
      });
      if (evidence) {
        record_violation(sp, inst, who, *evidence);
        break;
      }
      if (!vals) continue;
      sp.asserts.fetch_add(1, std::memory_order_relaxed);
      std::vector<std::optional<uint64_t>> v(vals->begin(), vals->end());
      if (check_assert(spec_of(inst), v)) record_violation(sp, inst, who, v);
      break;
    }
  }
}

// The ford recovery leader (ford_recovery.h), run while every live compute
// process is parked: fence, repair from undo records, truncate, scan and
// release every latch, then assert every instance on the quiescent store.
int Driver::ford_leader_main(const std::vector<uint16_t>& dead, uint16_t leader_pid, bool armed) {
  SharedPage& sp = *shared_.get();
  for (uint16_t d : dead) {
    if (Status s = fence_everywhere(d); !s) {
      fprintf(stderr, "leader: fence %u: %s\n", d, s.to_string().c_str());
      return 20;
    }
  }
  ComputeConfig cfg = base_;
  cfg.compute_id = leader_pid;
  Logger quiet("litmus.recovery", LogLevel::kError);
  auto c = Cluster::connect(cfg, quiet);
  if (!c || !(*c)->load_directory()) return 21;
  Cluster& cluster = **c;
  CrashInjector inj(CrashInjector::Counters(sp.hits, kCrashPointCount));
  arm_leader(inj, leader_pid, armed);
  const auto conns = cluster.bootstrap_connections();
  LogRecoveryReport total;
  for (uint16_t d : dead) {
    auto report = recover_ford_logs(cluster, conns, d, quiet, &inj);
    if (!report) {
      fprintf(stderr, "leader: recover_ford_logs %u: %s\n", d, report.status().to_string().c_str());
      return 22;
    }
    total.records += report->records;
    total.rolled_back += report->rolled_back;
    total.rolled_forward += report->rolled_forward;
  }
  for (uint16_t d : dead) {
    if (Status s = truncate_ford_lanes(cluster, conns, d, &inj); !s) return 23;
  }
  auto scan = release_all_latches(cluster, conns, quiet, &inj);
  if (!scan) {
    fprintf(stderr, "leader: latch scan: %s\n", scan.status().to_string().c_str());
    return 24;
  }
  std::vector<uint32_t> all(o_.instances);
  for (uint32_t i = 0; i < o_.instances; ++i) all[i] = i;
  assert_instances(cluster, std::move(all), leader_pid);
  sp.rec_records.fetch_add(total.records);
  sp.rec_rolled_back.fetch_add(total.rolled_back);
  sp.rec_rolled_forward.fetch_add(total.rolled_forward);
  sp.rec_swept.fetch_add(scan->released);
  if (o_.verbose) {
    fprintf(stderr, "recovered %zu pid(s) with the world stopped: %u records, %u rolled back, %u latches released "
                    "(%llu slots scanned)\n",
            dead.size(), total.records, total.rolled_back, scan->released,
            static_cast<unsigned long long>(scan->slots));
  }
  return 0;
}

Status Driver::run_leaders(const std::function<int(uint16_t, bool)>& body, const std::string& what) {
  SharedPage& sp = *shared_.get();
  for (int attempt = 0;; ++attempt) {
    auto leader = next_pid();
    if (!leader) {
      pids_exhausted_ = true;
      return Status(Errc::kInvalidArgument, "no pid left for a recovery leader (raise the memory nodes' --log-size)");
    }
    sp.recovery_note.store(-1, std::memory_order_relaxed);
    fflush(stdout);
    fflush(stderr);
    // A leader that crashed three times is replaced by an unarmed one, so
    // recovery always terminates.
    const bool armed = attempt < 3;
    leader_index_ = leaders_started_++;
    const pid_t os = fork();
    if (os == 0) _exit(body(*leader, armed));
    if (os < 0) return Status(Errc::kIo, "fork failed");
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (waitpid(os, &status, WNOHANG) != os) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(os, SIGKILL);
        waitpid(os, &status, 0);
        return Status(Errc::kTimeout, fmt::format("recovery of {} took over 120 s", what));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status();
    const int32_t note = sp.recovery_note.load(std::memory_order_acquire);
    if (WIFSIGNALED(status) && note >= 0) {
      ++leader_crashes_;
      ++fired_[static_cast<size_t>(note)];
      sp.last_crash.store(note, std::memory_order_release);
      sp.last_crash_ns.store(mono_ns(), std::memory_order_release);
      // The dead leader's in-flight writes must not land later: fence it too.
      if (Status s = fence_everywhere(*leader); !s) return s;
      continue;
    }
    return Status(Errc::kIo, fmt::format("recovery leader for {} failed (status {:#x})", what, status));
  }
}

Status Driver::recover(uint16_t dead) {
  if (base_.protocol == ProtocolMode::kFord) return recover_stopped_world(dead);
  if (Status s = run_leaders([&](uint16_t leader, bool armed) { return leader_main(dead, leader, armed); },
                             fmt::format("pid {}", dead));
      !s) {
    return s;
  }
  cluster_->failed_ids().add(dead);
  failed_.push_back(dead);
  ++recoveries_;
  return Status();
}

// ford: park every live compute process between transactions (a process
// that dies meanwhile is recovered in the same pause: its latches must not
// be released by the scan before its records are decided), run the ford
// leader, resume.
Status Driver::recover_stopped_world(uint16_t dead) {
  if (std::find(recovered_in_pause_.begin(), recovered_in_pause_.end(), dead) != recovered_in_pause_.end()) {
    return Status();  // died while the world was stopping for another pid; recovered then
  }
  SharedPage& sp = *shared_.get();
  const auto start = std::chrono::steady_clock::now();
  const uint32_t epoch = ++pause_epoch_;
  sp.pause_epoch.store(epoch, std::memory_order_release);
  std::vector<uint16_t> batch{dead};
  const auto deadline = start + std::chrono::seconds(60);
  for (;;) {
    bool all = true;
    for (const Child& c : children_) {
      if (c.os_pid <= 0 || std::find(batch.begin(), batch.end(), c.pid) != batch.end()) continue;
      if (sp.children[c.slot].parked_epoch.load(std::memory_order_acquire) == epoch) continue;
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(c.os_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == c.os_pid) {
        // Ended without parking: left to the main loop; a crash is recovered now.
        if (!(info.si_code == CLD_EXITED && info.si_status == 0)) batch.push_back(c.pid);
        continue;
      }
      all = false;
    }
    if (all) break;
    if (std::chrono::steady_clock::now() > deadline) {
      sp.pause_epoch.store(0, std::memory_order_release);
      return Status(Errc::kTimeout, "compute processes did not park within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  Status s = run_leaders([&](uint16_t leader, bool armed) { return ford_leader_main(batch, leader, armed); },
                         fmt::format("pid {} (world stopped)", dead));
  sp.pause_epoch.store(0, std::memory_order_release);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ++pauses_;
  pause_ms_total_ += ms;
  pause_ms_max_ = std::max(pause_ms_max_, ms);
  if (!s) return s;
  for (uint16_t pid : batch) {
    cluster_->failed_ids().add(pid);
    failed_.push_back(pid);
    recovered_in_pause_.push_back(pid);
    ++recoveries_;
  }
  return Status();
}

// ---- end of run --------------------------------------------------------------

int Driver::final_asserts() {
  SharedPage& sp = *shared_.get();
  uint64_t seen = 0;
  sp.merge_failed(cluster_->failed_ids(), &seen);
  auto client = BlockingClient::create(*cluster_, 0);
  if (!client) {
    fprintf(stderr, "pandora-litmus: final assert client: %s\n", client.status().to_string().c_str());
    return kExitError;
  }
  for (uint32_t inst = 0; inst < o_.instances; ++inst) {
    const InstanceSpec& spec = spec_of(inst);
    std::vector<std::optional<uint64_t>> v;
    for (uint32_t var = 0; var < spec.vars; ++var) {
      std::optional<uint64_t> value;
      bool absent = false;
      CommitOutcome out = (*client)->transact_retry([&](Txn& t) {
        auto r = t.read(kTable, key_of(inst, var));
        if (r.reason() == AbortReason::kNotFound) {
          absent = true;
          return AbortReason::kNone;
        }
        if (!r) return r.reason();
        uint64_t x = 0;
        std::memcpy(&x, (*r).data(), sizeof x);
        value = x;
        return AbortReason::kNone;
      });
      if (!out.committed && !absent) {
        fprintf(stderr, "pandora-litmus: final read of instance %u var %u: %s\n", inst, var,
                std::string(abort_reason_name(out.reason)).c_str());
        return kExitError;
      }
      v.push_back(absent ? std::nullopt : value);
    }
    if (check_assert(spec, v)) record_violation(sp, inst, 0, v);
  }
  return 0;
}

int Driver::run(double p_crash, std::optional<CrashPoint> point, double p_recovery, bool cycle) {
  p_crash_ = p_crash;
  point_ = point;
  p_recovery_ = p_recovery;
  cycle_ = cycle_mode_ = cycle;
  for (size_t i = 0; i < kCrashPointCount; ++i) {
    const auto p = static_cast<CrashPoint>(i);
    if (!applicable(p, base_.protocol, true)) continue;
    (is_recovery_point(p) ? recovery_cycle_ : compute_cycle_).push_back(p);
  }
  SharedPage* sp = shared_.get();
  if (!sp) {
    fprintf(stderr, "pandora-litmus: mmap of the shared page failed\n");
    return kExitError;
  }
  if (Status s = setup(); !s) {
    fprintf(stderr, "pandora-litmus: setup: %s\n", s.to_string().c_str());
    return kExitError;
  }
  children_.assign(o_.processes, Child{});
  start_ns_ = mono_ns();
  for (size_t i = 0; i < o_.processes; ++i) {
    if (!spawn_child(i)) {
      fprintf(stderr, "pandora-litmus: cannot start compute process %zu\n", i);
      return kExitError;
    }
  }
  const uint64_t end_ns = start_ns_ + o_.seconds * 1'000'000'000ULL;
  int rc = 0;
  auto handle_exit = [&](Child& c, int status, bool stopping) -> bool {
    const int32_t note = sp->children[c.slot].crash_note.load(std::memory_order_acquire);
    const bool crashed = WIFSIGNALED(status) && note >= 0;
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    c.os_pid = -1;
    if (crashed) {
      ++crashes_;
      ++fired_[static_cast<size_t>(note)];
      sp->last_crash.store(note, std::memory_order_release);
      sp->last_crash_ns.store(mono_ns(), std::memory_order_release);
    } else if (!clean && !stopping) {
      ++child_errors_;
      fprintf(stderr, "pandora-litmus: compute pid %u ended unexpectedly (status %#x)\n", c.pid, status);
    }
    if (!clean) {
      if (Status s = recover(c.pid); !s) {
        fprintf(stderr, "pandora-litmus: recovery of pid %u: %s\n", c.pid, s.to_string().c_str());
        return false;
      }
    }
    // Replacements start unarmed once the crash budget or the pid space
    // (a crash costs a replacement and up to four recovery leaders) runs low.
    const uint32_t reserve = static_cast<uint32_t>(8 * o_.processes + 16);
    if (!stopping && (crashes_ >= o_.max_crashes || uint32_t{max_pid_} < next_pid_ + reserve)) {
      p_crash_ = 0;
      point_.reset();
      cycle_ = false;
    }
    return true;
  };
  while (true) {
    const bool stop = sp->stop.load(std::memory_order_acquire) != 0 || mono_ns() >= end_ns ||
                      (!o_.keep_going && sp->violations.load(std::memory_order_acquire) > 0);
    if (stop) break;
    for (Child& c : children_) {
      if (c.os_pid <= 0) continue;
      int status = 0;
      if (waitpid(c.os_pid, &status, WNOHANG) != c.os_pid) continue;
      if (!handle_exit(c, status, false)) {
        rc = kExitError;
        break;
      }
      if (child_errors_ > 8) {
        fprintf(stderr, "pandora-litmus: too many compute processes failed\n");
        rc = kExitError;
        break;
      }
      if (!spawn_child(c.slot) && !pids_exhausted_) {
        rc = kExitError;
        break;
      }
    }
    if (rc) break;
    if (pids_exhausted_ && std::none_of(children_.begin(), children_.end(), [](const Child& c) { return c.os_pid > 0; })) {
      break;  // every pid used and every process gone: end early
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Stop: children finish their transaction and exit; stragglers are killed
  // (and then recovered like any crashed node).
  sp->stop.store(1, std::memory_order_release);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (Child& c : children_) {
    if (c.os_pid <= 0) continue;
    int status = 0;
    while (waitpid(c.os_pid, &status, WNOHANG) != c.os_pid) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(c.os_pid, SIGKILL);
        waitpid(c.os_pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!handle_exit(c, status, true)) rc = kExitError;
  }
  const double seconds = static_cast<double>(mono_ns() - start_ns_) / 1e9;
  if (rc == 0) rc = final_asserts();
  return report(seconds, rc);
}

int Driver::report(double seconds, int rc) {
  SharedPage& sp = *shared_.get();
  const uint64_t commits = sp.commits.load(), aborts = sp.aborts.load();
  printf("pandora-litmus: test=%s protocol=%s backend=%s bug=%s crash=%s\n", o_.test.c_str(), o_.protocol.c_str(),
         o_.backend.c_str(), o_.bug.c_str(), o_.crash.c_str());
  printf("run: %.2f s, %llu instances x %llu processes x %llu coordinators\n", seconds,
         static_cast<unsigned long long>(o_.instances), static_cast<unsigned long long>(o_.processes),
         static_cast<unsigned long long>(o_.coordinators));
  printf("transactions: %llu committed, %llu aborted; asserts: %llu committed, %llu inconclusive\n",
         static_cast<unsigned long long>(commits), static_cast<unsigned long long>(aborts),
         static_cast<unsigned long long>(sp.asserts.load()),
         static_cast<unsigned long long>(sp.asserts_inconclusive.load()));
  printf("processes: %llu started, %llu crashed, %llu failed; recoveries: %llu (%llu recovery leaders crashed)%s\n",
         static_cast<unsigned long long>(children_started_), static_cast<unsigned long long>(crashes_),
         static_cast<unsigned long long>(child_errors_), static_cast<unsigned long long>(recoveries_),
         static_cast<unsigned long long>(leader_crashes_), pids_exhausted_ ? " [pid space exhausted]" : "");
  if (pauses_ > 0) {
    printf("stop-the-world pauses: %llu, %.1f ms in total, longest %.1f ms\n", static_cast<unsigned long long>(pauses_),
           pause_ms_total_, pause_ms_max_);
  }
  printf("log recovery: %llu records, %llu rolled back, %llu rolled forward, %llu latches swept\n",
         static_cast<unsigned long long>(sp.rec_records.load()),
         static_cast<unsigned long long>(sp.rec_rolled_back.load()),
         static_cast<unsigned long long>(sp.rec_rolled_forward.load()),
         static_cast<unsigned long long>(sp.rec_swept.load()));
  const ProtocolMode mode = base_.protocol;
  const bool recovery_expected = crashes_ > 0;
  std::vector<std::string> missing;
  printf("crash points (hits / crashes injected):\n");
  for (size_t i = 0; i < kCrashPointCount; ++i) {
    const auto p = static_cast<CrashPoint>(i);
    const uint64_t h = sp.hits[i].load();
    const bool app = applicable(p, mode, recovery_expected);
    printf("  %-26s %10llu / %llu%s\n", std::string(crash_point_name(p)).c_str(), static_cast<unsigned long long>(h),
           static_cast<unsigned long long>(fired_[i]), app ? "" : "  (n/a)");
    if (app && (cycle_mode_ ? fired_[i] : h) == 0) missing.emplace_back(crash_point_name(p));
  }
  if (!missing.empty()) {
    std::string m;
    for (const auto& s : missing) m += (m.empty() ? "" : ", ") + s;
    printf("coverage: %zu applicable crash points never %s: %s\n", missing.size(),
           cycle_mode_ ? "crashed at" : "hit", m.c_str());
  } else {
    printf("coverage: every applicable crash point %s\n", cycle_mode_ ? "crashed at least once" : "hit");
  }
  const uint32_t nviol = sp.violations.load();
  printf("violations: %u\n", nviol);
  for (uint32_t i = 0; i < nviol && i < kMaxViolationRecords; ++i) {
    const ViolationRecord& r = sp.records[i];
    if (!r.ready.load(std::memory_order_acquire)) continue;
    const InstanceSpec& spec = spec_of(r.instance);
    std::vector<std::optional<uint64_t>> v;
    for (uint32_t k = 0; k < spec.vars && k < 8; ++k) {
      v.push_back(r.present[k] ? std::optional<uint64_t>(r.values[k]) : std::nullopt);
    }
    const auto why = check_assert(spec, v).value_or("?");
    const std::string last =
        r.last_crash >= 0
            ? fmt::format("{} ({:.1f} ms before)", crash_point_name(static_cast<CrashPoint>(r.last_crash)),
                          static_cast<double>(r.since_crash_ns) / 1e6)
            : std::string("none");
    printf("VIOLATION %s instance %u at %.3f s (%s): %s: %s; last crash point: %s\n", instance_name(spec).c_str(),
           r.instance, static_cast<double>(r.at_ns - start_ns_) / 1e9,
           r.pid ? fmt::format("assert txn of pid {}", r.pid).c_str() : "final assert", why.c_str(),
           format_values(spec, v).c_str(), last.c_str());
  }
  if (nviol > 0) {
    const double first = static_cast<double>(sp.records[0].at_ns - start_ns_) / 1e9;
    printf("first violation after %.3f s\n", first);
  }
  fflush(stdout);
  if (rc != 0) return rc;
  if (nviol > 0) return kExitViolation;
  if (o_.require_coverage && !missing.empty()) return kExitCoverage;
  return 0;
}

int litmus_main(int argc, char** argv) {
  Options o;
  OptionSet opts("pandora-litmus",
                 "DART litmus tests with crash injection against pandora-memd daemons (exit 0: no violation, 1: "
                 "violation, 2: error, 3: coverage not reached)");
  opts.add_choice("test", &o.test, {"litmus1", "litmus1-insert", "litmus1-delete", "litmus2", "litmus3", "extended", "all"},
                  "which litmus test(s) the instances run");
  opts.add_choice("protocol", &o.protocol, {"pandora", "ford", "log-a-latch"}, "transaction protocol");
  opts.add_choice("backend", &o.backend, {"shm", "tcp"}, "data-plane transport");
  opts.add_string("bug", &o.bug, "test-only bug switches, comma separated (Debug builds): complicit-abort, "
                                 "missing-insert-log, covert-latches, relaxed-latches, lost-decision, "
                                 "logging-without-latching");
  opts.add_string("crash", &o.crash,
                  "random | cycle | none | a crash point name (see --list-crash-points). cycle: each new compute "
                  "process is armed at the next applicable compute point, each recovery leader at the next recovery "
                  "point, so every point crashes (--require-coverage then counts crashes, not hits). A recovery "
                  "point crashes every recovery leader there (up to 3 per recovery) while compute processes crash "
                  "at random points");
  opts.add_string("crash-probability", &o.crash_probability,
                  "probability that a hit of an armed compute crash point crashes the process");
  opts.add_u64("crash-nth", &o.crash_nth, "with --crash POINT: crash at this hit of POINT in each process (0: only "
                                          "--crash-probability)");
  opts.add_string("recovery-crash-probability", &o.recovery_crash_probability,
                  "with --crash random: probability per hit of a recovery crash point in a recovery leader");
  opts.add_u64("seconds", &o.seconds, "run length bound", 1, 86400);
  opts.add_u64("max-txns", &o.max_txns, "stop after this many litmus transactions (0: no bound)");
  opts.add_u64("instances", &o.instances, "litmus instances (each with its own keys)", 1, 1u << 20);
  opts.add_u64("processes", &o.processes, "compute processes running concurrently", 1, kMaxChildren);
  opts.add_u64("coordinators", &o.coordinators, "coordinators per compute process", 1, 64);
  opts.add_u64("seed", &o.seed, "seed of every random choice");
  opts.add_u64("assert-every", &o.assert_every, "one transaction in N is an assert (0: asserts at the end only)");
  opts.add_u64("max-crashes", &o.max_crashes, "stop injecting after this many compute crashes");
  opts.add_string("history", &o.history,
                  "record the compute processes' transactions (JSON lines, litmus/history) to FILE.<pid>, one file "
                  "per process; check with pandora-history-check FILE.*");
  opts.add_string("memory-nodes", &o.memory_nodes, "attach to these daemons (HOST:PORT,...) instead of starting some");
  opts.add_u64("cluster-id", &o.cluster_id, "with --memory-nodes: their cluster id");
  opts.add_string("secret-file", &o.secret_file, "with --memory-nodes: the cluster secret");
  opts.add_string("memd-binary", &o.memd_binary, "pandora-memd to start");
  opts.add_u64("nodes", &o.nodes, "memory daemons to start", 1, 16);
  opts.add_u64("replicas", &o.replicas, "replicas per object (f+1)", 1, 16);
  opts.add_flag("keep-going", &o.keep_going, "do not stop at the first violation");
  opts.add_flag("require-coverage", &o.require_coverage, "exit 3 if an applicable crash point was never hit");
  opts.add_flag("verbose", &o.verbose, "log every recovery");
  bool list_points = false;
  opts.add_flag("list-crash-points", &list_points, "print the crash point names and exit");
  std::string msg;
  switch (opts.parse(argc, argv, &msg)) {
    case OptionSet::Outcome::kHelp:
      printf("%s", msg.c_str());
      return 0;
    case OptionSet::Outcome::kError:
      fprintf(stderr, "pandora-litmus: %s\n", msg.c_str());
      return kExitError;
    case OptionSet::Outcome::kRun:
      break;
  }
  if (list_points) {
    for (size_t i = 0; i < kCrashPointCount; ++i) printf("%s\n", std::string(crash_point_name(static_cast<CrashPoint>(i))).c_str());
    return 0;
  }
  auto fail = [](const std::string& m) {
    fprintf(stderr, "pandora-litmus: %s\n", m.c_str());
    return kExitError;
  };
  auto kinds = parse_test(o.test);
  if (!kinds) return fail(kinds.status().message());
  ComputeConfig base;
  auto mode = parse_protocol(o.protocol);
  if (!mode) return fail(mode.status().message());
  base.protocol = *mode;
  auto backend = parse_backend(o.backend);
  if (!backend) return fail(backend.status().message());
  base.backend = *backend;
  auto bugs = parse_bug_switches(o.bug);
  if (!bugs) return fail(bugs.status().message());
  base.bugs = *bugs;
  base.replicas = static_cast<uint32_t>(o.replicas);
  base.threads = 1;
  base.coordinators = static_cast<uint32_t>(o.coordinators);
  base.lane_bytes = 2048;
  base.shards = 64;
  if (!o.memory_nodes.empty()) {
    ComputeFlags f;
    f.memory_nodes = o.memory_nodes;
    f.cluster_id = o.cluster_id;
    f.secret_file = o.secret_file;
    f.compute_id = kDriverPid;
    f.backend = o.backend;
    f.replicas = o.replicas;
    f.protocol = o.protocol;
    f.bug = o.bug;
    f.coordinators = o.coordinators;
    f.lane_bytes = base.lane_bytes;
    f.shards = base.shards;
    auto cfg = f.resolve();
    if (!cfg) return fail(cfg.status().message());
    base = *cfg;
  } else if (o.replicas > o.nodes) {
    return fail("--replicas exceeds --nodes");
  }
  auto p = parse_probability(o.crash_probability);
  auto pr = parse_probability(o.recovery_crash_probability);
  if (!p || !pr) return fail("probabilities must be numbers in [0, 1]");
  std::optional<CrashPoint> point;
  double p_crash = 0, p_recovery = 0;
  const bool cycle = o.crash == "cycle";
  if (o.crash == "random") {
    p_crash = *p;
    p_recovery = *pr;
  } else if (o.crash != "none" && !cycle) {
    point = parse_crash_point(o.crash);
    if (!point) return fail(fmt::format("unknown crash point '{}' (--list-crash-points)", o.crash));
    p_crash = *p;
    if (o.crash_nth == 0 && p_crash == 0) return fail("--crash POINT needs --crash-nth or --crash-probability > 0");
  }
  Driver d(o, std::move(*kinds), base);
  return d.run(p_crash, point, p_recovery, cycle);
}

}  // namespace
}  // namespace pandora::litmus

int main(int argc, char** argv) { return pandora::litmus::litmus_main(argc, argv); }
