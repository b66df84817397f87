// Recovery of crashed processes (ARCHITECTURE.md 5), in forked recovery
// leaders that may themselves be crashed at the recovery crash points (and
// are then fenced and replaced: run_leaders). Two paths:
//   - pandora, log-a-latch (recover): one leader per dead pid fences it,
//     recovers its logs, truncates its lanes, asserts the instances its logs
//     named, publishes the pid in failed-ids and sweeps its stray latches,
//     while the other compute processes keep running.
//   - ford (recover_stopped_world): every live compute process parks
//     between transactions; a ford leader repairs every dead pid from its
//     undo records, truncates, scans every latch away and asserts every
//     instance on the quiescent store; then the world resumes.
#include "litmus/driver/driver.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "common/transport/client.h"
#include "compute/blocking_client.h"
#include "recovery/ford_recovery.h"
#include "recovery/log_recovery.h"
#include "compute/op_batch.h"

namespace pandora::litmus {

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

// A recovery leader's start: fence every dead pid (nothing they sent may
// land later), then connect as `leader_pid`. Null with *rc set to the
// leader's exit code on failure.
std::unique_ptr<Cluster> Driver::leader_connect(const std::vector<uint16_t>& dead, uint16_t leader_pid,
                                                const Logger& log, int* rc) {
  for (uint16_t d : dead) {
    if (Status s = fence_everywhere(d); !s) {
      fprintf(stderr, "leader: fence %u: %s\n", d, s.to_string().c_str());
      *rc = 20;
      return nullptr;
    }
  }
  ComputeConfig cfg = base_;
  cfg.compute_id = leader_pid;
  auto c = Cluster::connect(cfg, log);
  if (!c || !(*c)->load_directory()) {
    *rc = 21;
    return nullptr;
  }
  return std::move(*c);
}

// The recovery leader: a separate process so that it can be crashed at the
// recovery crash points; ARCHITECTURE.md 5 steps 2-5 for `dead`.
int Driver::leader_main(uint16_t dead, uint16_t leader_pid, bool armed) {
  SharedPage& sp = *shared_.get();
  Logger quiet("litmus.recovery", LogLevel::kError);
  int rc = 0;
  std::unique_ptr<Cluster> c = leader_connect(std::vector<uint16_t>{dead}, leader_pid, quiet, &rc);
  if (!c) return rc;
  Cluster& cluster = *c;
  CrashInjector inj(CrashInjector::Counters(sp.hits, kCrashPointCount));
  arm_leader(inj, leader_pid, armed);
  const auto conns = cluster.bootstrap_connections();
  auto report = recover_logs(cluster, conns, dead, LaneMap::fixed_slot(dead), quiet, &inj);
  if (!report) {
    fprintf(stderr, "leader: recover_logs %u: %s\n", dead, report.status().to_string().c_str());
    return 22;
  }
  if (Status s = truncate_lanes(cluster, conns, dead, LaneMap::fixed_slot(dead), &inj); !s) return 23;
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
  Logger quiet("litmus.recovery", LogLevel::kError);
  int rc = 0;
  std::unique_ptr<Cluster> c = leader_connect(dead, leader_pid, quiet, &rc);
  if (!c) return rc;
  Cluster& cluster = *c;
  CrashInjector inj(CrashInjector::Counters(sp.hits, kCrashPointCount));
  arm_leader(inj, leader_pid, armed);
  const auto conns = cluster.bootstrap_connections();
  LogRecoveryReport total;
  for (uint16_t d : dead) {
    auto report = recover_ford_logs(cluster, conns, d, LaneMap::fixed_slot(d), quiet, &inj);
    if (!report) {
      fprintf(stderr, "leader: recover_ford_logs %u: %s\n", d, report.status().to_string().c_str());
      return 22;
    }
    total.records += report->records;
    total.rolled_back += report->rolled_back;
    total.rolled_forward += report->rolled_forward;
  }
  for (uint16_t d : dead) {
    if (Status s = truncate_ford_lanes(cluster, conns, LaneMap::fixed_slot(d), &inj); !s) return 23;
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

}  // namespace pandora::litmus
