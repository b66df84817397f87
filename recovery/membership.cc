#include "recovery/membership.h"

#include <sys/random.h>

#include <algorithm>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "compute/compute_config.h"
#include "compute/fd_link.h"
#include "recovery/recovery_coordinator.h"

namespace pandora {

Result<std::unique_ptr<Membership>> Membership::join(const MembershipOptions& given, const Logger& logger) {
  // The registry's ZooKeeper identity comes from the cluster secret.
  MembershipOptions o = given;
  if (!o.zk.auth) o.zk.auth = registry_auth(o.secret);
  std::unique_ptr<Membership> m(new Membership(logger));
  m->options_ = o;
  auto reg = Registry::open(o.zk, o.root, o.cluster_id, logger);
  if (!reg) return reg.status();
  m->registry_ = std::move(*reg);
  m->secret_ = o.secret;

  MemberRecord want;
  want.role = o.role;
  want.os_pid = getpid();
  if (getrandom(&want.incarnation, sizeof want.incarnation, 0) != sizeof want.incarnation) {
    return Status(Errc::kIo, "getrandom failed");
  }
  // A registration whose answer was lost (connection loss: applied or
  // not) is found again by its incarnation instead of registering twice.
  Result<MemberRecord> rec = Status(Errc::kUnavailable, "not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    rec = m->registry_->register_member(want, o.lanes);
    if (rec || rec.status().code() != Errc::kUnavailable) break;
    logger.warn("registering: {} (retrying)", rec.status().to_string());
    std::this_thread::sleep_for(std::chrono::milliseconds(200 * (attempt + 1)));
    if (m->registry_->zk().expired()) {
      auto again = Registry::open(o.zk, o.root, o.cluster_id, logger);
      if (again) m->registry_ = std::move(*again);
    }
    if (auto members = m->registry_->members()) {
      auto mine = std::find_if(members->begin(), members->end(),
                               [&](const MemberRecord& r) { return r.incarnation == want.incarnation; });
      if (mine != members->end()) {
        rec = *mine;
        break;
      }
    }
  }
  if (!rec) return rec.status();
  m->record_ = *rec;

  if (o.heartbeats) {
    FdLinkOptions lo;
    lo.cluster_id = o.cluster_id;
    lo.secret = o.secret;
    lo.pid = m->record_.pid;
    lo.heartbeat_period = o.heartbeat_period;
    lo.push_bind = Endpoint{o.push_host, 0};
    // Heartbeat every replica from the first moment: replicas start
    // watching this pid as soon as its record names a push endpoint.
    if (auto reps = m->registry_->replicas()) {
      for (const auto& [id, ep] : *reps) lo.replicas.push_back(ep);
    }
    Membership* self = m.get();
    auto link = FdLink::start(lo, [self](uint16_t pid) { self->learn(pid, true); }, logger.child("fd-link"));
    if (!link) return link.status();
    m->link_ = std::move(*link);
    // Where the leader pushes failed pids: recorded after the link chose
    // its port (one more ZooKeeper write at start-up, none later).
    m->record_.push = Endpoint{o.push_host, m->link_->push_port()};
    Status s;
    for (int attempt = 0; attempt < 5; ++attempt) {
      s = m->registry_->zk().set(m->registry_->path(fmt::format("compute/{}", m->record_.pid)),
                                 encode_member_record(m->record_));
      if (s || s.code() != Errc::kUnavailable) break;
      logger.warn("recording the push endpoint: {} (retrying)", s.to_string());
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * (attempt + 1)));
      if (m->registry_->zk().expired()) {
        auto again = Registry::open(o.zk, o.root, o.cluster_id, logger);
        if (again) m->registry_ = std::move(*again);
      }
    }
    if (!s) return s;
  }
  m->watcher_ = std::thread([self = m.get()] { self->watch_loop(); });
  logger.info("registered as pid {} with {}", m->record_.pid, m->record_.slot.to_string());
  return m;
}

Membership::~Membership() { stop_threads(); }

void Membership::stop_threads() {
  {
    std::lock_guard<std::mutex> g(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  std::lock_guard<std::mutex> g(link_mu_);
  link_.reset();
}

void Membership::detach() {
  {
    std::lock_guard<std::mutex> g(ids_mu_);
    ids_.store(nullptr, std::memory_order_release);
  }
  {
    std::lock_guard<std::mutex> g(callbacks_mu_);
    on_memory_failure_ = nullptr;
    on_pause_ = nullptr;
  }
  std::lock_guard<std::mutex> g(cluster_mu_);
  cluster_ = nullptr;
}

Status Membership::attach(Cluster& cluster) {
  on_memory_failure([&cluster](uint32_t node_id) {
    if (const std::optional<size_t> i = cluster.index_of(node_id)) cluster.declare_memory_failed(*i);
  });
  {
    std::lock_guard<std::mutex> g(cluster_mu_);
    cluster_ = &cluster;
  }
  return attach(cluster.failed_ids());
}

Status Membership::leave() {
  // Published while the heartbeats still flow: stopping them first would
  // let a fast detector take the exit for a crash (and, on shm, fence and
  // kill this process). Our own pid turning up in failed-ids is expected.
  leaving_.store(true, std::memory_order_release);
  detach();  // the caller's failed-ids (its cluster) may be gone already
  Status s;
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    if (registry_->zk().expired()) {
      auto reg = Registry::open(options_.zk, options_.root, options_.cluster_id, logger_);
      if (reg) registry_ = std::move(*reg);
    }
    s = retire_member(*registry_, secret_, record_.pid, 0, std::chrono::milliseconds(2000), /*fence=*/false);
  }
  stop_threads();
  return s;
}

Status Membership::attach(FailedIds& ids) {
  // ZooKeeper may be briefly unreachable (a server restarting, a stalled
  // host): retry for a while before giving up on the start.
  Status last;
  for (int attempt = 0; attempt < 10; ++attempt) {
    last = attach_once(ids);
    if (last || last.code() != Errc::kUnavailable) return last;
    logger_.warn("reading failed-ids: {} (retrying)", last.to_string());
    std::this_thread::sleep_for(std::chrono::milliseconds(250 * (attempt + 1)));
    std::lock_guard<std::mutex> g(reg_mu_);
    if (registry_->zk().expired()) {
      auto reg = Registry::open(options_.zk, options_.root, options_.cluster_id, logger_);
      if (reg) registry_ = std::move(*reg);
    }
  }
  return last;
}

Status Membership::attach_once(FailedIds& ids) {
  std::lock_guard<std::mutex> reg_guard(reg_mu_);
  // Synchronously, so transactions start knowing every failed pid: the
  // recycle state first (pids being recycled are not added), then failed/.
  // A recycle that starts after this read is handled by the watcher, which
  // drops its pids and acknowledges.
  auto rec = registry_->watch_recycle(raiser(&recycle_changed_));
  if (!rec) return rec.status();
  auto failed = registry_->failed();
  if (!failed) return failed.status();
  for (uint16_t p : *failed) {
    if (std::find(rec->pids.begin(), rec->pids.end(), p) == rec->pids.end()) ids.add(p);
  }
  ids_.store(&ids, std::memory_order_release);
  // The recycle state first (its pids are not to be added), then failed/.
  {
    std::lock_guard<std::mutex> g(mu_);
    recycle_changed_ = true;
    failed_changed_ = true;
  }
  cv_.notify_all();
  return Status::ok();
}

void Membership::on_fenced(std::function<void()> f) {
  std::lock_guard<std::mutex> g(mu_);
  on_fenced_ = std::move(f);
}

void Membership::learn(uint16_t pid, bool by_push) {
  if (by_push) pushes_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(ids_mu_);  // leave() may detach the set
    if (FailedIds* ids = ids_.load(std::memory_order_acquire)) ids->add(pid);
  }
  if (pid == record_.pid && !leaving_.load(std::memory_order_acquire) &&
      !fenced_.exchange(true, std::memory_order_acq_rel)) {
    if (record_.role == MemberRole::kFd) {
      // A detector leader's data-plane identity, recovered by the leader
      // that replaced it (pandora-fd rejoins as a follower): expected.
      logger_.warn("this FD leader's data-plane identity (pid {}) was recovered by the leader that replaced it", pid);
    } else {
      logger_.error("this node (pid {}) was declared failed and fenced by the failure detector", pid);
    }
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> g(mu_);
      f = on_fenced_;
    }
    if (f) f();
  }
}

std::function<void()> Membership::raiser(bool* flag) {
  return [this, flag] {
    {
      std::lock_guard<std::mutex> g(mu_);
      *flag = true;
    }
    cv_.notify_all();
  };
}

void Membership::refresh_recycle() {
  auto r = registry_->watch_recycle(raiser(&recycle_changed_));
  if (!r) {
    logger_.warn("reading the pid recycling state: {}", r.status().to_string());
    std::lock_guard<std::mutex> g(mu_);
    recycle_changed_ = true;
    return;
  }
  if (r->generation == 0) {
    recycling_.clear();  // over: failed/ no longer lists them
    return;
  }
  // Drop the pids before acknowledging: once every member has, they may be
  // issued again, and a latch of the new owner must not look stray here.
  recycling_ = r->pids;
  {
    std::lock_guard<std::mutex> g(ids_mu_);
    if (FailedIds* ids = ids_.load(std::memory_order_acquire)) {
      for (uint16_t p : r->pids) ids->remove(p);
    }
  }
  if (Status s = registry_->ack_recycle(record_.pid, r->generation); !s) {
    logger_.warn("acknowledging pid recycling {}: {} (retrying)", r->generation, s.to_string());
    std::lock_guard<std::mutex> g(mu_);
    recycle_changed_ = true;
    return;
  }
  recycles_acked_.fetch_add(1, std::memory_order_relaxed);
  logger_.info("dropped {} recycled pid(s) from failed-ids (generation {})", r->pids.size(), r->generation);
}

void Membership::refresh_failed() {
  auto failed = registry_->watch_failed(raiser(&failed_changed_));
  if (!failed) {
    logger_.warn("reading failed-ids from ZooKeeper: {} (pushes still arrive)", failed.status().to_string());
    std::lock_guard<std::mutex> g(mu_);
    failed_changed_ = true;  // retry on the next wake-up
    return;
  }
  for (uint16_t p : *failed) {
    if (std::find(recycling_.begin(), recycling_.end(), p) != recycling_.end()) continue;
    learn(p, false);
  }
}

void Membership::refresh_replicas() {
  {
    std::lock_guard<std::mutex> g(link_mu_);
    if (!link_) return;
  }
  auto reps = registry_->watch_replicas(raiser(&replicas_changed_));
  if (!reps) {
    logger_.warn("reading the FD replicas from ZooKeeper: {}", reps.status().to_string());
    std::lock_guard<std::mutex> g(mu_);
    replicas_changed_ = true;
    return;
  }
  std::vector<Endpoint> to;
  for (const auto& [id, ep] : *reps) to.push_back(ep);
  std::lock_guard<std::mutex> g(link_mu_);
  if (!link_) return;  // stopped meanwhile
  if (Status s = link_->set_replicas(std::move(to)); !s) logger_.warn("FD replicas: {}", s.to_string());
}

void Membership::ack_pause(uint64_t epoch) {
  {
    std::lock_guard<std::mutex> g(cluster_mu_);
    if (cluster_) {
      if (Status s = cluster_->apply_memory_failures(); !s) {
        logger_.error("pause {}: {}; not acknowledging it", epoch, s.to_string());
        return;
      }
    }
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    ack_wanted_ = epoch;
  }
  cv_.notify_all();
}

void Membership::refresh_pause() {
  auto epoch = registry_->watch_pause(raiser(&pause_changed_));
  if (!epoch) {
    logger_.warn("reading the pause state from ZooKeeper: {}", epoch.status().to_string());
    std::lock_guard<std::mutex> g(mu_);
    pause_changed_ = true;
    return;
  }
  if (*epoch != 0 && *epoch != pause_epoch_.load(std::memory_order_acquire)) {
    // A pause may be a memory node's fail-over: declare the failed memory
    // nodes before anyone parks, so coordinators waiting on one inside a
    // transaction can decide it and park too (compute/txn/failover.h).
    auto cr = registry_->read_cluster();
    if (!cr) {
      logger_.warn("reading the cluster record for pause {}: {} (retrying)", *epoch, cr.status().to_string());
      std::lock_guard<std::mutex> g(mu_);
      pause_changed_ = true;
      return;
    }
    std::lock_guard<std::mutex> g(callbacks_mu_);  // detach() waits for the callback's end
    for (const FailedMemoryNode& f : cr->failed_memory) {
      if (on_memory_failure_) on_memory_failure_(f.node_id);
    }
  }
  if (*epoch == 0 && !restore_replaced_memory_nodes()) {
    // Not resumed: paced retry (a replacement daemon not reachable yet).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> g(mu_);
    pause_changed_ = true;
    return;
  }
  const uint64_t before = pause_epoch_.exchange(*epoch, std::memory_order_acq_rel);
  if (before != *epoch) {
    if (*epoch) logger_.info("stop-the-world pause {} requested: parking", *epoch);
    else logger_.info("pause over: resuming");
  }
  std::lock_guard<std::mutex> g(callbacks_mu_);  // detach() waits for the callback's end
  if (on_pause_) on_pause_(*epoch);
}

bool Membership::restore_replaced_memory_nodes() {
  std::lock_guard<std::mutex> cb(callbacks_mu_);
  if (!on_pause_) return true;  // a node that does not park (the FD leader) is not switched under its feet
  std::lock_guard<std::mutex> g(cluster_mu_);
  if (!cluster_ || cluster_->applied_failed_mask() == 0) return true;
  auto cr = registry_->read_cluster();
  if (!cr) {
    logger_.warn("reading the cluster record at the end of a pause: {} (retrying)", cr.status().to_string());
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < cluster_->node_count(); ++i) {
    if (!cluster_->failed_over(i)) continue;
    const uint32_t id = cluster_->node(i).region.node_id;
    if (failed_over(*cr, id)) continue;
    const auto at = std::find(cr->memory_node_ids.begin(), cr->memory_node_ids.end(), id);
    if (at == cr->memory_node_ids.end() || cr->memory_node_ids.size() != cr->memory_nodes.size()) continue;
    const Endpoint& ep = cr->memory_nodes[static_cast<size_t>(at - cr->memory_node_ids.begin())];
    const auto bound = cr->memory_incarnations.find(id);
    const uint64_t incarnation = bound == cr->memory_incarnations.end() ? 0 : bound->second;
    if (Status s = cluster_->restore_memory_node(i, ep, incarnation); !s) {
      logger_.error("memory node {} is back at {}, but this node cannot reach it: {} (staying parked, retrying)", id,
                    ep.to_string(), s.to_string());
      ok = false;
    }
  }
  return ok;
}

void Membership::on_pause(std::function<void(uint64_t)> f) {
  {
    std::lock_guard<std::mutex> g(callbacks_mu_);
    on_pause_ = std::move(f);
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    pause_changed_ = true;  // deliver the current epoch
  }
  cv_.notify_all();
}

void Membership::on_memory_failure(std::function<void(uint32_t)> f) {
  std::lock_guard<std::mutex> g(callbacks_mu_);
  on_memory_failure_ = std::move(f);
}

std::optional<HeartbeatSenderStats> Membership::heartbeat_stats() const {
  std::lock_guard<std::mutex> g(link_mu_);
  if (!link_) return std::nullopt;
  return link_->stats().heartbeats;
}

void Membership::stop_heartbeats() {
  std::lock_guard<std::mutex> g(link_mu_);
  if (link_) logger_.error("stopping heartbeats: this node (pid {}) must be recovered", record_.pid);
  link_.reset();
}

void Membership::reopen_registry() {
  auto reg = Registry::open(options_.zk, options_.root, options_.cluster_id, logger_);
  if (!reg) {
    logger_.warn("reconnecting to ZooKeeper after the session expired: {} (retrying)", reg.status().to_string());
    return;
  }
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    registry_ = std::move(*reg);
  }
  logger_.info("ZooKeeper session expired: reconnected; watches re-armed");
  std::lock_guard<std::mutex> g(mu_);
  failed_changed_ = replicas_changed_ = pause_changed_ = recycle_changed_ = true;
  acked_ = 0;  // ephemeral acknowledgements went with the old session
}

void Membership::watch_loop() {
  for (;;) {
    if (registry_->zk().expired()) reopen_registry();
    bool failed = false, replicas = false, pause = false, recycle = false;
    uint64_t ack = 0;
    {
      std::unique_lock<std::mutex> g(mu_);
      // Wakes on a watch; the timeout retries reads that failed (no quorum).
      cv_.wait_for(g, std::chrono::milliseconds(500), [&] {
        return closing_ || failed_changed_ || replicas_changed_ || pause_changed_ || recycle_changed_ ||
               ack_wanted_ != acked_;
      });
      if (closing_) return;
      failed = std::exchange(failed_changed_, false);
      replicas = std::exchange(replicas_changed_, false);
      pause = std::exchange(pause_changed_, false);
      recycle = std::exchange(recycle_changed_, false);
      ack = ack_wanted_;
    }
    if (pause) refresh_pause();
    // Before failed-ids are re-read: a pid being recycled must not come back.
    if (recycle && ids_.load(std::memory_order_acquire)) refresh_recycle();
    else if (recycle) {
      std::lock_guard<std::mutex> g(mu_);
      recycle_changed_ = false;  // attach() raises it again
    }
    if (ack != 0 && ack != acked_ && ack == pause_epoch_.load(std::memory_order_acquire)) {
      if (Status s = registry_->ack_pause(record_.pid, ack); s) acked_ = ack;
      else {
        logger_.warn("acknowledging pause {}: {} (retrying)", ack, s.to_string());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } else if (ack != 0 && ack != pause_epoch_.load(std::memory_order_acquire)) {
      acked_ = ack;  // a pause already over: nothing to acknowledge
    }
    if (replicas) refresh_replicas();
    // Before attach() nothing is merged; attach() reads and raises the flag.
    if (failed && ids_.load(std::memory_order_acquire)) refresh_failed();
  }
}

Result<std::unique_ptr<Membership>> join_as_compute_node(ComputeConfig& c, const Logger& logger) {
  if (c.zookeeper.empty()) return Status(Errc::kInvalidArgument, "no --zookeeper to join");
  MembershipOptions o;
  o.zk.hosts = c.zookeeper;
  o.root = c.zk_root;
  o.cluster_id = c.cluster_id;
  o.secret = c.secret;
  o.role = MemberRole::kCompute;
  o.lanes = c.lanes_needed();
  o.heartbeat_period = c.fd_heartbeat;
  o.push_host = c.push_host;
  auto m = Membership::join(o, logger);
  if (!m) return m.status();
  const ClusterRecord& cr = (*m)->registry().cluster();
  if (protocol_name(c.protocol) != cr.protocol) {
    return Status(Errc::kMismatch, fmt::format("this cluster runs protocol {} (pandora-ctl init --protocol); "
                                               "--protocol {} would mix latch and log formats",
                                               cr.protocol, protocol_name(c.protocol)));
  }
  if (c.memory_nodes.empty()) c.memory_nodes = cr.memory_nodes;
  c.failed_memory_nodes = cr.failed_memory;
  if (c.replicas == 0) c.replicas = static_cast<uint32_t>(std::min<size_t>(2, c.memory_nodes.size()));
  if (cr.lane_bytes != 0) c.lane_bytes = cr.lane_bytes;
  c.compute_id = (*m)->pid();
  c.lane_slot = (*m)->slot();
  if (Status s = c.validate(); !s) return s;
  return m;
}

}  // namespace pandora
