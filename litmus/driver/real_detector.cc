// pandora-litmus --detector real (real_detector.h): ZooKeeper, the registry,
// the pandora-fd replicas, and the driver's wait for their recoveries.
#include "litmus/driver/real_detector.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/transport/client.h"
#include "recovery/registry.h"

namespace pandora::litmus {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string tail_of(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(std::move(l));
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "    " + all[i] + "\n";
  return out;
}

Status write_private(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status(Errc::kIo, fmt::format("{}: {}", path, std::strerror(errno)));
  const bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  ::close(fd);
  return ok ? Status() : Status(Errc::kIo, fmt::format("writing {}", path));
}

std::string percentiles(std::vector<double> v) {
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  return fmt::format("p50 {:.0f} ms, max {:.0f} ms", v[v.size() / 2], v.back());
}

}  // namespace

RealDetector::SlotMapping::SlotMapping() {
  void* p = mmap(nullptr, sizeof(Slots), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  page_ = new (p) Slots();
  for (auto& s : page_->pid) s.store(0, std::memory_order_relaxed);
}

RealDetector::SlotMapping::~SlotMapping() {
  if (page_) munmap(page_, sizeof(Slots));
}

RealDetector::RealDetector(RealDetectorOptions o)
    : o_(std::move(o)), logger_("litmus.detector", o_.verbose ? LogLevel::kInfo : LogLevel::kWarn), owner_(getpid()) {}

RealDetector::~RealDetector() {
  if (getpid() == owner_) (void)stop();
}

Status RealDetector::fail_with_logs(Status s) const {
  return Status(s.code(), s.message() + "\n  pandora-fd logs (tails):\n" + replica_logs());
}

std::string RealDetector::replica_logs(size_t lines) const {
  std::string out;
  for (size_t i = 0; i < replica_log_paths_.size(); ++i) {
    out += fmt::format("  {}:\n{}", replica_log_paths_[i], tail_of(replica_log_paths_[i], lines));
  }
  return out;
}

Status RealDetector::start_registry(ComputeConfig& cfg) {
  if (!slots_.get()) return Status(Errc::kIo, "mmap of the detector's shared page failed");
  if (!dir_.ok()) return dir_.status();
  const auto t0 = Clock::now();
  if (o_.zookeeper.empty()) {
    testing::ZkEnsembleOptions zo;
    zo.servers = 3;
    zo.tick_ms = 500;
    ensemble_ = std::make_unique<testing::ZkEnsemble>(dir_.path() + "/zk", zo);
    if (Status s = ensemble_->start(); !s) return Status(s.code(), "starting ZooKeeper: " + s.message());
    hosts_ = ensemble_->hosts();
    own_ensemble_ = true;
  } else {
    hosts_ = o_.zookeeper;
  }
  zk_start_s_ = seconds_since(t0);
  root_ = fmt::format("/pandora-litmus-{}-{}", getpid(), realtime_ns() / 1'000'000);
  secret_file_ = dir_.path() + "/secret";
  if (Status s = write_private(secret_file_, o_.secret + "\n"); !s) return s;

  ClusterRecord rec;
  rec.cluster_id = o_.cluster_id;
  rec.memory_nodes = cfg.memory_nodes;
  rec.lane_bytes = cfg.lane_bytes;
  rec.protocol = o_.protocol;
  // The log area's lanes, as `pandora-ctl init` computes them.
  ClientIdentity admin;
  admin.cluster_id = o_.cluster_id;
  admin.secret = o_.secret;
  admin.role = wire::Role::kAdmin;
  uint64_t lanes = UINT64_MAX;
  for (const Endpoint& ep : cfg.memory_nodes) {
    auto ctl = ControlClient::connect(ep, admin, std::chrono::seconds(5));
    if (!ctl) return Status(ctl.status().code(), fmt::format("{}: {}", ep.to_string(), ctl.status().message()));
    lanes = std::min<uint64_t>(lanes, (*ctl)->region().log_size / cfg.lane_bytes);
  }
  // The driver's lanes are the last ones: the registry leases none of them.
  const uint32_t mine = cfg.lanes_needed();
  lanes = std::min<uint64_t>(lanes, UINT32_MAX);
  if (lanes <= mine) return Status(Errc::kInvalidArgument, "the memory nodes' log area is too small");
  rec.lanes = static_cast<uint32_t>(lanes) - mine;
  zk_.hosts = hosts_;
  zk_.auth = registry_auth(o_.secret);
  // Patient: a loaded 2-core machine (3 JVMs that just started) can take
  // seconds to accept a session.
  zk_.connect_timeout = std::chrono::seconds(30);
  zk_.op_timeout = std::chrono::seconds(15);
  // pid_limit 65534: the registry never issues the driver's pid 65535.
  if (Status s = Registry::init(zk_, root_, rec, logger_, kDriverRegistryPid - 1); !s) {
    return Status(s.code(), "Registry::init: " + s.message());
  }
  cfg.compute_id = kDriverRegistryPid;
  cfg.lane_slot = LaneSlot{rec.lanes, mine};
  return cfg.validate();
}

Result<Registry*> RealDetector::registry() {
  if (!registry_) {
    auto r = Registry::open(zk_, root_, o_.cluster_id, logger_);
    if (!r) return r.status();
    registry_ = std::move(*r);
  }
  return registry_.get();
}

Status RealDetector::start_detectors() {
  const auto t0 = Clock::now();
  const std::string owner = std::to_string(getpid());
  for (int i = 1; i <= 3; ++i) {
    const std::string log = fmt::format("{}/fd{}.log", dir_.path(), i);
    std::vector<std::string> args = {o_.fd_binary,
                                     "--zookeeper", hosts_,
                                     "--zk-root", root_,
                                     // Sessions that survive a loaded 2-core machine (clamped to 2..20 ticks).
                                     "--zk-session-ms", "4000",
                                     "--cluster-id", std::to_string(o_.cluster_id),
                                     "--secret-file", secret_file_,
                                     "--replica-id", std::to_string(i),
                                     "--replicas", "3",
                                     "--timeout-us", std::to_string(o_.fd_timeout_us),
                                     "--backend", o_.backend,
                                     "--exit-with-pid", owner,
                                     "--log-level", "info"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) return Status(Errc::kIo, fmt::format("{}: {}", log, std::strerror(errno)));
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
      const int in = ::open("/dev/null", O_RDONLY);
      if (in >= 0) ::dup2(in, 0);
      ::close_range(3, ~0U, 0);
      ::execv(argv[0], argv.data());
      _exit(127);
    }
    ::close(out);
    if (pid < 0) return Status(Errc::kIo, fmt::format("fork: {}", std::strerror(errno)));
    replicas_.push_back(pid);
    replica_log_paths_.push_back(log);
  }
  // Ready: every replica announced, and the leader's data plane up (it
  // registers a kFd member right before connecting to the memory nodes).
  auto opened = registry();
  if (!opened) return opened.status();
  Registry& reg = **opened;
  const auto deadline = t0 + std::chrono::seconds(60);
  for (;;) {
    for (pid_t p : replicas_) {
      int status = 0;
      if (waitpid(p, &status, WNOHANG) == p) {
        return fail_with_logs(Status(Errc::kIo, fmt::format("pandora-fd (process {}) exited (status {:#x})", p, status)));
      }
    }
    auto reps = reg.replicas();
    auto members = reg.members();
    bool leader = false;
    if (members) {
      for (const MemberRecord& m : *members) leader |= m.role == MemberRole::kFd;
    }
    if (reps && reps->size() == 3 && leader) break;
    if (Clock::now() > deadline) {
      return fail_with_logs(Status(Errc::kTimeout, "the pandora-fd replicas were not ready (3 announced, a leader "
                                                   "with its data plane) within 60 s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fd_start_s_ = seconds_since(t0);
  return Status();
}

Result<std::unique_ptr<Membership>> RealDetector::join(ComputeConfig& cfg, size_t slot, const Logger& logger) {
  cfg.zookeeper = hosts_;
  cfg.zk_root = root_;
  cfg.lane_slot = LaneSlot{};
  auto m = join_as_compute_node(cfg, logger);
  if (!m) return m.status();
  slots_.get()->pid[slot].store((*m)->pid(), std::memory_order_release);
  return m;
}

void RealDetector::expect_recovery(uint16_t pid, bool crashed) {
  if (pid == 0) return;  // died before registering: nothing to recover
  pending_.push_back(Pending{pid, crashed, Clock::now(), realtime_ns()});
}

bool RealDetector::recovery_started(uint16_t pid) {
  if (pid == 0) return false;
  auto reg = registry();
  if (!reg) return false;
  auto r = (*reg)->recovery(pid);
  return r && r->has_value();
}

Result<uint64_t> RealDetector::poll(FailedIds& ids, SharedPage& sp) {
  if (pending_.empty() || Clock::now() < next_poll_) return uint64_t{0};
  next_poll_ = Clock::now() + std::chrono::milliseconds(5);
  auto opened = registry();
  if (!opened) {
    if (!pending_.empty() && Clock::now() - pending_.front().seen > o_.recovery_bound) {
      return Status(opened.status().code(), "ZooKeeper: " + opened.status().message());
    }
    return uint64_t{0};  // retried on the next poll
  }
  Registry& reg = **opened;
  uint64_t done = 0;
  for (size_t i = 0; i < pending_.size();) {
    const Pending p = pending_[i];
    auto r = reg.recovery(p.pid);
    if (r && *r && (*r)->step == RecoveryStep::kDone) {
      const RecoveryRecord& rec = **r;
      ids.add(p.pid);
      sp.rec_records.fetch_add(rec.records);
      sp.rec_rolled_back.fetch_add(rec.rolled_back);
      sp.rec_rolled_forward.fetch_add(rec.rolled_forward);
      sp.rec_swept.fetch_add(rec.swept);
      if (rec.pause_us) {
        ++pauses_;
        pause_us_total_ += rec.pause_us;
        pause_us_max_ = std::max(pause_us_max_, rec.pause_us);
      }
      if (rec.detected_ns) {
        detect_ms_.push_back(rec.detected_ns > p.seen_realtime_ns
                                 ? static_cast<double>(rec.detected_ns - p.seen_realtime_ns) / 1e6
                                 : 0.0);
      }
      done_ms_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - p.seen).count());
      ++recovered_;
      if (p.crashed) ++crash_recoveries_;
      ++done;
      if (o_.verbose) {
        fprintf(stderr, "pid %u recovered by the failure detector (replica %u): %u records, %u rolled back, %u "
                        "rolled forward, %u latches swept; fence %llu us, log recovery %llu us, publish %llu us\n",
                p.pid, rec.leader_replica, rec.records, rec.rolled_back, rec.rolled_forward, rec.swept,
                static_cast<unsigned long long>(rec.fence_us), static_cast<unsigned long long>(rec.log_recovery_us),
                static_cast<unsigned long long>(rec.publish_us));
      }
      pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    if (Clock::now() - p.seen > o_.recovery_bound) {
      std::string state = "no recovery record";
      if (!r) state = "reading its record: " + r.status().to_string();
      else if (*r) state = fmt::format("record at step {}", recovery_step_name((*r)->step));
      return fail_with_logs(Status(Errc::kTimeout,
                                   fmt::format("pid {} was not recovered by the failure detector within {} s ({})",
                                               p.pid, o_.recovery_bound.count(), state)));
    }
    ++i;
  }
  return done;
}

Result<uint64_t> RealDetector::wait_all(FailedIds& ids, SharedPage& sp) {
  uint64_t total = 0;
  while (!pending_.empty()) {
    auto n = poll(ids, sp);
    if (!n) return n.status();
    total += *n;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Then quiet: no compute member, every recovery record done, no pause
  // (a process that left cleanly stopped heartbeating before it retired
  // itself, so the detector may still be recovering it), and every
  // published pid in the driver's failed-ids for its final asserts.
  const auto deadline = Clock::now() + o_.recovery_bound;
  for (;;) {
    std::string busy;
    auto opened = registry();
    if (!opened) {
      busy = " ZooKeeper: " + opened.status().to_string();
    } else {
      Registry& reg = **opened;
      auto members = reg.members();
      auto records = reg.recoveries();
      auto pause = reg.zk().exists(reg.path("pause"));
      auto failed = reg.failed();
      if (!members || !records || !pause || !failed) {
        busy = " ZooKeeper unreachable";
      } else {
        for (const MemberRecord& m : *members) {
          if (m.role == MemberRole::kCompute) busy += fmt::format(" member {}", m.pid);
        }
        for (const RecoveryRecord& r : *records) {
          if (r.step != RecoveryStep::kDone) {
            busy += fmt::format(" recovery of {} at {}", r.pid, recovery_step_name(r.step));
          }
        }
        if (*pause) busy += " pause";
        if (busy.empty()) {
          for (uint16_t p : *failed) ids.add(p);
        }
      }
    }
    if (busy.empty()) break;
    if (Clock::now() > deadline) {
      return fail_with_logs(Status(Errc::kTimeout, fmt::format("the cluster did not settle within {} s:{}",
                                                               o_.recovery_bound.count(), busy)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return total;
}

void RealDetector::report() const {
  printf("detector: real (ZooKeeper %s%s in %.1f s, 3 pandora-fd replicas ready in %.1f s, timeout %.0f ms): %llu "
         "dead pids recovered by the FD leader (%llu crashed at a crash point), %llu false positives\n",
         own_ensemble_ ? "3 servers started" : "at ", own_ensemble_ ? "" : hosts_.c_str(), zk_start_s_, fd_start_s_,
         static_cast<double>(o_.fd_timeout_us) / 1e3, static_cast<unsigned long long>(recovered_),
         static_cast<unsigned long long>(crash_recoveries_), static_cast<unsigned long long>(false_positives_));
  printf("detector: death seen -> detected %s; -> recovery record done %s\n", percentiles(detect_ms_).c_str(),
         percentiles(done_ms_).c_str());
  if (pauses_ > 0) {
    printf("stop-the-world pauses (FD leader): %llu pids recovered in pauses, %.1f ms per pid on average, longest "
           "%.1f ms\n",
           static_cast<unsigned long long>(pauses_), static_cast<double>(pause_us_total_) / 1e3 / pauses_,
           static_cast<double>(pause_us_max_) / 1e3);
  }
}

Status RealDetector::stop() {
  if (getpid() != owner_) return Status();
  for (pid_t p : replicas_) ::kill(p, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (pid_t p : replicas_) {
    int status = 0;
    while (waitpid(p, &status, WNOHANG) != p) {
      if (Clock::now() > deadline) {
        ::kill(p, SIGKILL);
        waitpid(p, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  replicas_.clear();
  if (!o_.fd_logs.empty()) {
    for (const std::string& path : replica_log_paths_) {
      std::ifstream in(path, std::ios::binary);
      std::ofstream out(o_.fd_logs + path.substr(path.rfind('/')), std::ios::binary | std::ios::trunc);
      out << in.rdbuf();
    }
    replica_log_paths_.clear();
  }
  registry_.reset();  // its ZooKeeper session, before the servers go
  Status s;
  if (ensemble_) {
    s = ensemble_->stop();
    ensemble_.reset();
  }
  return s;
}

}  // namespace pandora::litmus
