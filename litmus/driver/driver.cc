// The litmus driver (driver.h): setup, the compute processes, the main loop,
// the final asserts and the report. Recovery of crashed processes is in
// recovery.cc.
#include "litmus/driver/driver.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "compute/blocking_client.h"
#include "compute/loader.h"
#include "compute/scheduler.h"
#include "compute/trace/history.h"

namespace pandora::litmus {

// Crash points a run of `mode` can reach at all (coverage accounting).
bool applicable(CrashPoint p, ProtocolMode mode, bool recovery) {
  switch (p) {
    case CrashPoint::kAfterLatchIntent:
      return mode == ProtocolMode::kLogALatch;
    case CrashPoint::kAfterFordUndo:
      return mode == ProtocolMode::kFord;
    case CrashPoint::kAfterLogWrite:
      return mode != ProtocolMode::kFord;  // ford has no logging phase
    case CrashPoint::kMemoryFailoverPaused:
    case CrashPoint::kMemoryReplacePaused:
      return false;  // no memory node fails in a litmus run
    default:
      return !is_recovery_point(p) || recovery;
  }
}

namespace {

// The daemons a run starts when no --memory-nodes are given (regions on
// /dev/shm, see testing/local_memd.h).
LocalMemdOptions local_memd_options(const std::string& binary, uint64_t log_size) {
  LocalMemdOptions o;
  o.binary = binary;
  o.cluster_id = 0x11775;
  o.size = std::to_string((log_size >> 20) + 64) + "M";
  o.log_size = std::to_string(log_size >> 20) + "M";
  return o;
}

}  // namespace

Status Driver::setup() {
  if (o_.memory_nodes.empty()) {
    memds_.emplace(o_.nodes, local_memd_options(o_.memd_binary, o_.log_size));
    if (Status s = memds_->start(); !s) return s;
    base_.memory_nodes = memds_->endpoints();
    base_.cluster_id = memds_->cluster_id();
    base_.secret = memds_->secret();
  }
  ComputeConfig cfg = base_;
  cfg.compute_id = kDriverPid;
  if (o_.detector == "real") {
    // ZooKeeper, Registry::init, the driver's own pid and lane slot.
    RealDetectorOptions ro;
    ro.zookeeper = o_.zookeeper;
    ro.fd_binary = o_.fd_binary;
    ro.fd_timeout_us = o_.fd_timeout_us;
    ro.backend = o_.backend;
    ro.cluster_id = base_.cluster_id;
    ro.secret = base_.secret;
    ro.protocol = o_.protocol;
    ro.verbose = o_.verbose;
    ro.fd_logs = o_.fd_logs;
    real_ = std::make_unique<RealDetector>(std::move(ro));
    if (Status s = real_->start_registry(cfg); !s) return s;
  }
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
  std::vector<history::KeyRange> loaded;
  for (uint32_t i = 0; i < o_.instances; ++i) {
    if (!initially_present(spec_of(i).kind)) continue;
    for (uint32_t v = 0; v < spec_of(i).vars; ++v) {
      if (Status s = loader.add(kTable, key_of(i, v), zero); !s) return s;
    }
    loaded.push_back({kTable, key_of(i, 0), key_of(i, spec_of(i).vars - 1)});
  }
  if (Status s = loader.finish(); !s) return s;
  // The loader writes every row with version 1 into fresh tables: exactly
  // these keys were present when the first transaction began.
  loaded_ = history::InitialState::loaded(1, std::move(loaded));
  max_pid_ = static_cast<uint16_t>(std::min<uint32_t>(cluster_->lanes().max_fixed_pid(), 65535));
  // The replicas' leader needs the table directory: started once it exists.
  if (real_) return real_->start_detectors();
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
  // --detector real: the registry assigns the pid and lane slot; heartbeats,
  // failed-ids by watch and push, ford pauses (Membership). Niced so that
  // busy-polling coordinators leave the control plane (ZooKeeper, the
  // detector replicas) room on a small machine.
  std::unique_ptr<Membership> member;
  if (real_) {
    (void)setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0) + 5);
    const Logger member_log("litmus.member", o_.verbose ? LogLevel::kInfo : LogLevel::kWarn);
    auto m = real_->join(cfg, slot, member_log);
    if (!m) {
      fprintf(stderr, "compute process %zu: joining the cluster: %s\n", slot, m.status().to_string().c_str());
      return 14;
    }
    member = std::move(*m);
    pid = cfg.compute_id;
  }
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
  DetachGuard detach_before_cluster_goes(member.get());  // `c` owns the failed-ids
  if (member) {
    if (Status s = member->attach(cluster.failed_ids()); !s) {
      fprintf(stderr, "pid %u: failed-ids: %s\n", pid, s.to_string().c_str());
      return 15;
    }
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
    auto w = history::HistoryWriter::create(fmt::format("{}.{}", o_.history, pid), loaded_);
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
      worker.coordinator(k).engine().set_step_hook(&inj);
      worker.coordinator(k).engine().set_observer(observer);
    }
  }
  auto flush_history = [&] {
    if (writer) (void)writer->flush();
  };
  // Stop-the-world (ford recovery): a coordinator between transactions
  // parks while a pause is requested; the process acknowledges the pause
  // once all of its coordinators are parked, so none holds a latch.
  // --detector real: the pause is the FD leader's (<root>/pause, through
  // the Membership) and is acknowledged through ZooKeeper, once per epoch.
  int parked = 0;
  const int coordinators = static_cast<int>(o_.coordinators);
  uint64_t acked = 0;
  auto pause_epoch = [&]() -> uint64_t {
    return member ? member->pause_requested() : sp.pause_epoch.load(std::memory_order_acquire);
  };
  auto park = [&](Coordinator& co) {
    ++parked;
    for (uint64_t epoch; (epoch = pause_epoch()) != 0;) {
      if (parked == coordinators) {
        if (!member) {
          sp.children[slot].parked_epoch.store(static_cast<uint32_t>(epoch), std::memory_order_release);
        } else if (acked != epoch) {
          member->ack_pause(epoch);
          acked = epoch;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      co.yield();  // let the others finish their transactions
    }
    --parked;
  };
  // A false positive of the detector fenced this node: stop (its
  // transactions were recovered by the FD leader).
  auto fenced = [&] { return member && member->fenced(); };
  // One worker thread: the coordinators share `seen` and `parked` without a race.
  (*sched)->run([&](Coordinator& co) {
    Rng rng(seed ^ (uint64_t{co.id()} << 32));
    uint64_t counter = 0;
    while (sp.stop.load(std::memory_order_acquire) == 0 && !fenced()) {
      if (pause_epoch() != 0) {
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
  if (member) {
    if (member->fenced()) return kChildFencedExit;
    // Every coordinator is done (the data plane idle for good): leave
    // cleanly (published, lease released), so the detector does not take
    // the exit for a crash. (Heartbeats stop first: a detector faster than
    // the retire may still recover the pid; on shm its fence then kills
    // this process, which the driver reports at the end with --verbose.)
    flush_history();
    if (Status s = member->leave(); !s) {
      fprintf(stderr, "pid %u: leaving the cluster: %s\n", pid, s.to_string().c_str());
      return 16;
    }
  }
  return 0;
}

bool Driver::spawn_child(size_t slot) {
  // --detector real: the child registers and learns its pid (0 until then).
  auto pid = real_ ? std::optional<uint16_t>(0) : next_pid();
  if (real_) {
    real_->clear_slot(slot);
    real_->before_fork();  // no ZooKeeper client threads across the fork
  }
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
    if (real_) c.pid = real_->pid_of(c.slot);  // assigned by the registry in the child
    const int32_t note = sp->children[c.slot].crash_note.load(std::memory_order_acquire);
    const bool crashed = WIFSIGNALED(status) && note >= 0;
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const bool fenced = real_ && WIFEXITED(status) && WEXITSTATUS(status) == kChildFencedExit;
    c.os_pid = -1;
    if (crashed) {
      if (real_ && o_.verbose) {
        fprintf(stderr, "pandora-litmus: compute pid %u crashed at %s\n", c.pid,
                std::string(crash_point_name(static_cast<CrashPoint>(note))).c_str());
      }
      ++crashes_;
      ++fired_[static_cast<size_t>(note)];
      sp->last_crash.store(note, std::memory_order_release);
      sp->last_crash_ns.store(mono_ns(), std::memory_order_release);
    } else if (fenced || (real_ && !clean && !stopping && c.pid != 0 && real_->recovery_started(c.pid))) {
      // Exit 30, or on shm SIGKILLed by the fence (memd kills a fenced id's
      // live shm clients): the detector declared it failed while it ran.
      real_->false_positive();
      fprintf(stderr, "pandora-litmus: compute pid %u was declared failed by the detector while alive (fenced; "
                      "status %#x)\n",
              c.pid, status);
    } else if (!clean && !stopping) {
      ++child_errors_;
      fprintf(stderr, "pandora-litmus: compute pid %u ended unexpectedly (status %#x)\n", c.pid, status);
    }
    if (!clean && real_) {
      if (stopping && WIFEXITED(status) && !fenced) {
        ++child_errors_;
        fprintf(stderr, "pandora-litmus: compute pid %u failed at the end (exit %d)\n", c.pid, WEXITSTATUS(status));
      } else if (stopping && !crashed && o_.verbose) {
        fprintf(stderr, "pandora-litmus: compute pid %u did not leave cleanly at the end (status %#x)\n", c.pid,
                status);
      }
      // The failure detector recovers it; the main loop waits for its record.
      real_->expect_recovery(c.pid, crashed);
    } else if (!clean) {
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
    if (real_) {
      auto n = real_->poll(cluster_->failed_ids(), *sp);
      if (!n) {
        fprintf(stderr, "pandora-litmus: %s\n", n.status().to_string().c_str());
        rc = kExitError;
        break;
      }
      recoveries_ += *n;
    }
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
      if (real_) {
        // Recoveries go on (and ford pauses are acknowledged) meanwhile.
        if (auto n = real_->poll(cluster_->failed_ids(), *sp)) recoveries_ += *n;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!handle_exit(c, status, true)) rc = kExitError;
  }
  const double seconds = static_cast<double>(mono_ns() - start_ns_) / 1e9;
  if (real_ && rc == 0) {
    // Every dead pid recovered by the detector before the final asserts.
    auto n = real_->wait_all(cluster_->failed_ids(), *sp);
    if (!n) {
      fprintf(stderr, "pandora-litmus: %s\n", n.status().to_string().c_str());
      rc = kExitError;
    } else {
      recoveries_ += *n;
    }
  }
  if (rc == 0) rc = final_asserts();
  if (real_) {
    if (Status s = real_->stop(); !s) fprintf(stderr, "pandora-litmus: stopping ZooKeeper: %s\n", s.to_string().c_str());
  }
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
  if (real_) real_->report();
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
  // --detector real: the FD leader's recovery points are not injected (nor counted).
  const bool recovery_expected = crashes_ > 0 && !real_;
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
  const uint64_t recovered = real_ ? real_->crash_recoveries() : recoveries_;
  if (recovered < o_.min_recoveries) {
    printf("coverage: %llu crashed processes recovered%s, fewer than --min-recoveries %llu\n",
           static_cast<unsigned long long>(recovered), real_ ? " by the failure detector" : "",
           static_cast<unsigned long long>(o_.min_recoveries));
    fflush(stdout);
    return kExitCoverage;
  }
  return 0;
}

}  // namespace pandora::litmus
