#include "recovery/fd/detector.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/bytes.h"
#include "common/heartbeat_sender.h"

namespace pandora::fd {
namespace {

// Datagrams handled per wakeup before the tick is checked again: a flood of
// garbage must not starve the suspicion reports.
constexpr int kReceiveBatch = 256;
// Read before every tick: more than a full default socket buffer of small
// datagrams (212 KiB of buffer, 700-1300 bytes of it per datagram), still
// few enough that a flood of garbage delays a tick by well under a
// millisecond.
constexpr int kDrainBeforeTick = 512;

uint64_t ns_of(std::chrono::microseconds d) { return static_cast<uint64_t>(d.count()) * 1000; }

const char* kind_name(wire::SenderKind k) {
  switch (k) {
    case wire::SenderKind::kCompute: return "compute node";
    case wire::SenderKind::kMemory: return "memory node";
    case wire::SenderKind::kReplica: return "replica";
    case wire::SenderKind::kAdmin: return "operator tool";
  }
  return "node";
}

// Nanoseconds from `then` to `now` (both CLOCK_MONOTONIC); 0 when `then`
// was stamped after `now` was read (by another thread).
uint64_t elapsed_ns(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

std::chrono::microseconds elapsed_us(uint64_t now, uint64_t then) {
  return std::chrono::microseconds(elapsed_ns(now, then) / 1000);
}

MonitorOptions monitor_options(const DetectorOptions& o) {
  MonitorOptions m;
  m.self = o.replica_id;
  m.replicas = o.replicas;
  m.timeout_ns = ns_of(o.timeout);
  m.memory_timeout_ns = ns_of(o.memory_timeout);
  m.report_ttl_ns = o.report_ttl.count() > 0 ? ns_of(o.report_ttl) : 3 * ns_of(o.tick);
  return m;
}

}  // namespace

Detector::Detector(DetectorOptions options, const Logger& log)
    : options_(std::move(options)),
      log_(log),
      incarnation_(random_incarnation()),
      started_mono_ns_(monotonic_ns()),
      last_drain_ns_(started_mono_ns_),
      receiver_(options_.cluster_id, options_.secret, options_.max_skew, log),
      monitor_(monitor_options(options_)) {}

Result<std::unique_ptr<Detector>> Detector::start(DetectorOptions options, const Logger& log) {
  if (options.replicas == 0 || options.replica_id == 0 || options.replica_id > options.replicas) {
    return Status(Errc::kInvalidArgument, fmt::format("replica id {} is not within 1..{} (the replica count)",
                                                      options.replica_id, options.replicas));
  }
  if (options.tick.count() <= 0 || options.tick >= options.timeout) {
    return Status(Errc::kInvalidArgument, fmt::format("tick ({} us) must be positive and below the timeout ({} us)",
                                                      options.tick.count(), options.timeout.count()));
  }
  if (options.secret.empty()) return Status(Errc::kInvalidArgument, "the cluster secret is empty");
  if (options.peer_heartbeat.count() < 0) {
    return Status(Errc::kInvalidArgument, fmt::format("peer heartbeat interval {} us is negative",
                                                      options.peer_heartbeat.count()));
  }
  std::unique_ptr<Detector> d(new Detector(std::move(options), log));
  Result<net::UniqueFd> sock = net::bind_udp(d->options_.bind, &d->port_);
  if (!sock) return sock.status();
  d->sock_ = std::move(sock.value());
  Result<net::UniqueFd> wakeup = net::open_wakeup();
  if (!wakeup) return wakeup.status();
  d->wakeup_ = std::move(wakeup.value());
  d->thread_ = std::thread([p = d.get()] { p->run(); });
  d->log_.info("replica {} of {} listening on {}:{} (timeout {} us, tick {} us)", d->options_.replica_id,
               d->options_.replicas, d->options_.bind.host, d->port_, d->options_.timeout.count(),
               d->options_.tick.count());
  return d;
}

Detector::~Detector() {
  stopping_.store(true);
  if (wakeup_.valid()) net::wake(wakeup_.get());
  if (thread_.joinable()) thread_.join();
  failed_cv_.notify_all();
}

Status Detector::set_peers(std::map<uint32_t, Endpoint> peers) {
  std::map<uint32_t, Peer> resolved;
  for (auto& [id, ep] : peers) {
    if (id == 0 || id > options_.replicas || id == options_.replica_id) {
      return Status(Errc::kInvalidArgument, fmt::format("peer replica id {} is not another replica of 1..{}", id,
                                                        options_.replicas));
    }
    Result<net::UdpAddress> a = net::udp_address(ep);
    if (!a) return Status(Errc::kInvalidArgument, fmt::format("peer replica {}: {}", id, a.status().message()));
    resolved.emplace(id, Peer{std::move(ep), *a, nullptr, 0});
  }
  // A peer at the address it had keeps its socket and refusals; one at a
  // new address (a restarted replica) gets a new socket, refusals forgotten.
  {
    std::lock_guard lock(mu_);
    for (auto& [id, peer] : resolved) {
      const auto before = peers_.find(id);
      if (before != peers_.end() && before->second.endpoint == peer.endpoint) peer = before->second;
    }
  }
  for (auto& [id, peer] : resolved) {
    if (peer.socket) continue;
    Result<net::UniqueFd> s = net::open_connected_udp(peer.address);
    if (s) {
      peer.socket = std::make_shared<net::UniqueFd>(std::move(*s));
    } else {
      log_.warn("peer replica {}: {} (sent to unconnected; a dead one is found by its silence only)", id,
                s.status().message());
    }
  }
  std::lock_guard lock(mu_);
  peers_ = std::move(resolved);
  std::erase_if(peer_heard_ns_, [this](const auto& e) { return !peers_.contains(e.first); });
  return Status::ok();
}

void Detector::watch(wire::SenderKind kind, uint32_t id) {
  std::lock_guard lock(mu_);
  monitor_.watch(NodeKey{kind, id}, monotonic_ns());
}

void Detector::follow_memory_record(const std::set<uint32_t>& ids, const std::map<uint32_t, uint64_t>& incarnations,
                                    uint64_t epoch) {
  std::lock_guard lock(mu_);
  if (epoch < retired_epoch_) return;
  const uint64_t now = monotonic_ns();
  if (epoch > retired_epoch_) {
    // Peers' memory reports judged under an older record stop counting at
    // once; fresh ones arrive within a tick, tagged with their epoch.
    for (const auto& [peer, ep] : peers_) monitor_.report(peer, wire::SenderKind::kMemory, {}, now);
  }
  retired_epoch_ = epoch;
  // A node bound to another daemon than before (replaced, readdressed) is
  // watched anew from now: silence of the daemon it was bound to says
  // nothing about the one it is bound to now.
  for (const auto& [id, inc] : incarnations) {
    const auto before = memory_incarnations_.find(id);
    const NodeKey key{wire::SenderKind::kMemory, id};
    if (before != memory_incarnations_.end() && before->second != inc && monitor_.watching(key)) {
      monitor_.unwatch(key);
      monitor_.watch(key, now);
      failed_.erase(key);
    }
  }
  memory_incarnations_ = incarnations;
  // A node no longer listed was just brought back, alive: watched from now
  // (waiting for its next heartbeat would never suspect one that died
  // before sending it).
  for (uint32_t id : retired_memory_) {
    if (!ids.contains(id)) monitor_.watch(NodeKey{wire::SenderKind::kMemory, id}, now);
  }
  retired_memory_ = ids;
  for (uint32_t id : ids) {
    monitor_.unwatch(NodeKey{wire::SenderKind::kMemory, id});
    failed_.erase(NodeKey{wire::SenderKind::kMemory, id});
  }
}

void Detector::unwatch(wire::SenderKind kind, uint32_t id) {
  std::lock_guard lock(mu_);
  monitor_.unwatch(NodeKey{kind, id});
  failed_.erase(NodeKey{kind, id});
}

std::vector<FailedNode> Detector::wait_failed(std::chrono::milliseconds max_wait) {
  std::unique_lock lock(mu_);
  failed_cv_.wait_for(lock, max_wait, [this] { return !failed_.empty() || stopping_.load(); });
  return failed_locked();
}

std::vector<FailedNode> Detector::failed_locked() const {
  std::vector<FailedNode> out;
  out.reserve(failed_.size());
  for (const auto& [key, node] : failed_) out.push_back(node);
  return out;
}

std::vector<FailedNode> Detector::gather_failed(std::chrono::microseconds window) {
  const uint64_t window_ns = ns_of(window);
  const uint64_t deadline = monotonic_ns() + window_ns;
  std::unique_lock lock(mu_);
  for (;;) {
    const uint64_t now = monotonic_ns();
    bool pending = false;
    for (const NodeKey& k : monitor_.suspected_within(now, window_ns, wire::SenderKind::kCompute)) {
      if (!failed_.contains(k)) pending = true;
    }
    if (!pending || now >= deadline || stopping_.load()) break;
    // Woken by the next failure latched; a tick at most otherwise.
    failed_cv_.wait_for(lock, std::chrono::nanoseconds(std::min(deadline - now, ns_of(options_.tick))));
  }
  return failed_locked();
}

DetectorStats Detector::stats() const {
  DetectorStats s;
  {
    std::lock_guard lock(mu_);
    s = stats_;
  }
  s.rejected = receiver_.counts();
  return s;
}

wire::ReplicaStats Detector::replica_stats() const {
  const uint64_t now = monotonic_ns();
  const DetectorStats d = stats();
  wire::ReplicaStats r;
  r.leader = leader_.load(std::memory_order_relaxed) ? 1 : 0;
  r.uptime_ms = (now - started_mono_ns_) / 1'000'000;
  r.leader_replica = r.leader ? options_.replica_id : watched_leader_.load(std::memory_order_relaxed);
  r.successor = !r.leader && successor_.load(std::memory_order_relaxed) ? 1 : 0;
  r.depositions = depositions_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    if (!r.leader && r.leader_replica != 0) {
      const auto heard = peer_heard_ns_.find(r.leader_replica);
      r.leader_silence_ms = (heard != peer_heard_ns_.end() ? elapsed_ns(now, heard->second)
                                                           : elapsed_ns(now, started_mono_ns_)) / 1'000'000;
    }
    r.record_epoch = retired_epoch_;
    r.watched_compute = monitor_.watched_count(wire::SenderKind::kCompute);
    r.watched_memory = monitor_.watched_count(wire::SenderKind::kMemory);
    r.suspected = monitor_.local_suspects(now).size();
    r.failed_latched = failed_.size();
  }
  r.datagrams = d.datagrams;
  r.heartbeats = d.heartbeats;
  r.heartbeats_unwatched = d.heartbeats_unwatched;
  r.heartbeats_foreign = d.heartbeats_foreign;
  r.reports_received = d.reports_received;
  r.reports_stale = d.reports_stale;
  r.reports_sent = d.reports_sent;
  r.pushes_sent = d.pushes_sent;
  r.send_errors = d.send_errors;
  r.failed_detected = d.failed_detected;
  r.ticks = d.ticks;
  r.rejected_malformed = d.rejected.malformed;
  r.rejected_auth = d.rejected.auth;
  r.rejected_replay = d.rejected.replay;
  r.rejected_unexpected = d.rejected.unexpected;
  r.queries_answered = d.queries_answered;
  r.queries_refused = d.queries_refused;
  r.peer_heartbeats = d.peer_heartbeats;
  r.peer_heartbeats_sent = d.peer_heartbeats_sent;
  return r;
}

void Detector::answer_stats_query(const wire::HeartbeatMessage& query, const sockaddr_storage& from,
                                  socklen_t from_len, uint64_t now) {
  if (now - answer_window_ns_ >= 1'000'000'000ull) {
    answer_window_ns_ = now;
    answers_in_window_ = 0;
  }
  if (answers_in_window_ >= kStatsAnswersPerSecond) {
    {
      std::lock_guard lock(mu_);
      ++stats_.queries_refused;
    }
    receiver_.reject(RejectReason::kUnexpected,
                     fmt::format("stats query over the limit of {} answers a second", kStatsAnswersPerSecond), from,
                     from_len);
    return;
  }
  ++answers_in_window_;
  {
    // Counted before the snapshot, so the answer includes itself.
    std::lock_guard lock(mu_);
    ++stats_.queries_answered;
  }
  wire::HeartbeatMessage m = own_message(wire::HeartbeatType::kStats);
  m.query_incarnation = query.header.incarnation;
  m.query_seq = query.header.seq;
  m.stats = replica_stats();
  // No longer than the query (an older tool's has room for fewer values).
  m.stats_fields = std::min(query.stats_fields, wire::kReplicaStatsFields.size());
  std::string datagram;
  if (Status s = wire::encode_heartbeat(datagram, m, options_.secret); !s) {
    log_.error("cannot encode a stats answer: {}", s.to_string());
    return;
  }
  net::UdpAddress to;
  std::memcpy(&to.ss, &from, sizeof from);
  to.len = from_len;
  if (Status s = send_to(to, datagram); !s) {
    std::lock_guard lock(mu_);
    ++stats_.send_errors;
  }
}

wire::HeartbeatMessage Detector::own_message(wire::HeartbeatType type) {
  wire::HeartbeatMessage m;
  m.header.type = type;
  m.header.kind = wire::SenderKind::kReplica;
  m.header.cluster_id = options_.cluster_id;
  m.header.sender = options_.replica_id;
  m.header.incarnation = incarnation_;
  m.header.seq = seq_.fetch_add(1) + 1;
  m.header.sent_ns = realtime_ns();
  return m;
}

Status Detector::encode(std::string& out, wire::HeartbeatType type, std::span<const uint16_t> pids,
                        uint64_t epoch) {
  wire::HeartbeatMessage m = own_message(type);
  m.pids.assign(pids.begin(), pids.end());
  m.epoch = epoch;
  out.clear();
  return wire::encode_heartbeat(out, m, options_.secret);
}

Status Detector::send_to(const net::UdpAddress& to, const std::string& datagram) {
  return net::send_datagram(sock_.get(), to, bytes_of(datagram));
}

Status Detector::push_failed(std::span<const Endpoint> to, std::span<const uint16_t> pids) {
  std::vector<net::UdpAddress> targets;
  for (const Endpoint& ep : to) {
    Result<net::UdpAddress> a = net::udp_address(ep);
    if (!a) {
      return Status(Errc::kInvalidArgument, fmt::format("push target {}: {}", ep.to_string(), a.status().message()));
    }
    targets.push_back(*a);
  }
  std::lock_guard push_lock(push_mu_);
  Status first_error;
  uint64_t sent = 0, errors = 0;
  std::string datagram;
  for (size_t at = 0; at < pids.size(); at += wire::kMaxPidsPerMessage) {
    const auto chunk = pids.subspan(at, std::min(wire::kMaxPidsPerMessage, pids.size() - at));
    if (Status s = encode(datagram, wire::HeartbeatType::kFailedPush, chunk, 0); !s) return s;
    for (const net::UdpAddress& a : targets) {
      if (Status s = send_to(a, datagram); s) {
        ++sent;
      } else {
        ++errors;
        if (first_error.is_ok()) first_error = Status(Errc::kIo, fmt::format("failed-pid push to {}: {}",
                                                                     net::describe_address(a.ss, a.len), s.message()));
      }
    }
  }
  std::lock_guard lock(mu_);
  stats_.pushes_sent += sent;
  stats_.send_errors += errors;
  return first_error;
}

void Detector::run() {
  uint64_t next_tick = monotonic_ns() + ns_of(options_.tick);
  pollfd fds[2] = {{sock_.get(), POLLIN, 0}, {wakeup_.get(), POLLIN, 0}};
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (options_.loop_hook) options_.loop_hook();
    const uint64_t now = monotonic_ns();
    if (now >= next_tick) {
      // Heartbeats that arrived while this thread was not running (a
      // loaded machine deschedules it for longer than the timeout) prove
      // their senders alive: read them before judging anyone, or every
      // node would look silent for as long as this thread was.
      receive_all(kDrainBeforeTick);
      next_tick = tick(monotonic_ns());
      continue;
    }
    const uint64_t wait = next_tick - now;
    timespec ts{static_cast<time_t>(wait / 1'000'000'000ull), static_cast<long>(wait % 1'000'000'000ull)};
    fds[0].revents = fds[1].revents = 0;
    const int rc = ::ppoll(fds, 2, &ts, nullptr);
    if (rc > 0 && fds[0].revents != 0) receive_all(kReceiveBatch);
  }
}

void Detector::receive_all(int max) {
  // One byte more than the largest valid datagram, so an oversized one is
  // seen as such by the decoder rather than cut to a valid length.
  std::array<uint8_t, wire::kMaxDatagram + 1> buf;
  uint64_t received = 0;
  for (int i = 0; i < max; ++i) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    const ssize_t n = net::recv_datagram(sock_.get(), buf, &from, &from_len);
    if (n < 0) break;
    ++received;
    std::optional<wire::HeartbeatMessage> m =
        receiver_.accept(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), from, from_len);
    if (m) handle(*m, from, from_len, monotonic_ns());
  }
  last_drain_ns_.store(monotonic_ns(), std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  stats_.datagrams += received;
}

std::string_view leader_verdict_name(LeaderVerdict v) {
  switch (v) {
    case LeaderVerdict::kHeard: return "heard";
    case LeaderVerdict::kNeverHeard: return "never heard";
    case LeaderVerdict::kSelfBehind: return "this replica behind";
    case LeaderVerdict::kNoMajority: return "no majority without it";
    case LeaderVerdict::kDepose: return "depose";
  }
  return "unknown";
}

LeaderJudgement Detector::judge_leader(uint32_t leader, std::chrono::microseconds timeout,
                                       std::chrono::microseconds refused_timeout) const {
  const uint64_t now = monotonic_ns();
  const uint64_t timeout_ns = ns_of(timeout);
  LeaderJudgement j;
  std::lock_guard lock(mu_);
  const auto it = peer_heard_ns_.find(leader);
  if (it == peer_heard_ns_.end()) return j;  // kNeverHeard
  j.silence = elapsed_us(now, it->second);
  const auto peer = peers_.find(leader);
  j.refused = peer != peers_.end() && peer->second.refused_ns > it->second;
  const uint64_t limit_ns = j.refused ? std::min(timeout_ns, ns_of(refused_timeout)) : timeout_ns;
  j.heard = 1;
  for (const auto& [id, t] : peer_heard_ns_) {
    if (id != leader && elapsed_ns(now, t) < timeout_ns) ++j.heard;
  }
  if (elapsed_ns(now, it->second) < limit_ns) {
    j.verdict = LeaderVerdict::kHeard;
  } else if (elapsed_ns(now, last_drain_ns_.load(std::memory_order_relaxed)) > limit_ns / 4) {
    j.verdict = LeaderVerdict::kSelfBehind;
  } else if (j.heard < options_.replicas / 2 + 1) {
    j.verdict = LeaderVerdict::kNoMajority;
  } else {
    j.verdict = LeaderVerdict::kDepose;
  }
  return j;
}

std::chrono::microseconds Detector::since_last_drain() const {
  return elapsed_us(monotonic_ns(), last_drain_ns_.load(std::memory_order_relaxed));
}

void Detector::handle(const wire::HeartbeatMessage& m, const sockaddr_storage& from, socklen_t from_len,
                      uint64_t now) {
  const wire::HeartbeatHeader& h = m.header;
  switch (h.type) {
    case wire::HeartbeatType::kHeartbeat: {
      if (h.kind == wire::SenderKind::kAdmin) break;
      if (h.kind == wire::SenderKind::kReplica) {
        // Authentic, but not (yet) a peer: replicas learn of each other
        // from ZooKeeper at different moments. Dropped like a node's that
        // is not watched; it tells nothing.
        std::lock_guard lock(mu_);
        if (!peers_.contains(h.sender)) {
          ++stats_.heartbeats_unwatched;
          return;
        }
        peer_heard_ns_[h.sender] = now;
        ++stats_.peer_heartbeats;
        return;
      }
      std::unique_lock lock(mu_);
      const NodeKey key{h.kind, h.sender};
      if (h.kind == wire::SenderKind::kMemory) {
        const auto bound = memory_incarnations_.find(h.sender);
        if (bound != memory_incarnations_.end() && bound->second != h.incarnation) {
          ++stats_.heartbeats_foreign;
          const uint64_t expected = bound->second;
          lock.unlock();
          receiver_.reject(RejectReason::kUnexpected,
                           fmt::format("heartbeat of memory node {} from daemon incarnation {:#x}, but the cluster "
                                       "record binds the node to {:#x}: not the node's (an old daemon of a replaced "
                                       "node that still runs? stop it)",
                                       h.sender, h.incarnation, expected),
                           from, from_len);
          return;
        }
      }
      if (h.kind == wire::SenderKind::kMemory && !monitor_.watching(key) && !retired_memory_.contains(h.sender)) {
        monitor_.watch(key, now);
      }
      if (monitor_.heard(key, now)) {
        ++stats_.heartbeats;
      } else {
        ++stats_.heartbeats_unwatched;
      }
      return;
    }
    case wire::HeartbeatType::kSuspects:
    case wire::HeartbeatType::kMemorySuspects: {
      if (h.kind != wire::SenderKind::kReplica) break;
      std::unique_lock lock(mu_);
      if (!peers_.contains(h.sender)) {
        lock.unlock();
        receiver_.reject(RejectReason::kUnexpected,
                         fmt::format("suspicion report from replica {}, which is not a peer of replica {}", h.sender,
                                     options_.replica_id),
                         from, from_len);
        return;
      }
      peer_heard_ns_[h.sender] = now;
      const bool memory = h.type == wire::HeartbeatType::kMemorySuspects;
      if (memory && m.epoch < retired_epoch_) {
        // Judged under an older cluster record (the peer has not read the
        // latest yet): not a vote. Its previous report is dropped too.
        monitor_.report(h.sender, wire::SenderKind::kMemory, {}, now);
        ++stats_.reports_stale;
        return;
      }
      const std::vector<uint32_t> ids(m.pids.begin(), m.pids.end());
      monitor_.report(h.sender, memory ? wire::SenderKind::kMemory : wire::SenderKind::kCompute, ids, now);
      ++stats_.reports_received;
      evaluate_locked(now);
      return;
    }
    case wire::HeartbeatType::kStatsQuery:
      if (h.kind != wire::SenderKind::kAdmin) break;
      answer_stats_query(m, from, from_len, now);
      return;
    case wire::HeartbeatType::kFailedPush:
    case wire::HeartbeatType::kStats:
      break;
  }
  receiver_.reject(RejectReason::kUnexpected,
                   fmt::format("message type {} from a {} is not for a replica", static_cast<int>(h.type),
                               kind_name(h.kind)),
                   from, from_len);
}

uint64_t Detector::tick(uint64_t now) {
  const uint64_t tick_ns = ns_of(options_.tick);
  std::vector<uint16_t> compute, memory;
  struct PeerTarget {
    uint32_t id;
    net::UdpAddress address;
    std::shared_ptr<net::UniqueFd> socket;  // connected to it (null: send unconnected)
  };
  std::vector<PeerTarget> targets;
  size_t dropped = 0;
  uint64_t next_suspicion = UINT64_MAX;
  uint64_t memory_epoch = 0;  // the record the memory view follows
  {
    std::lock_guard lock(mu_);
    ++stats_.ticks;
    memory_epoch = retired_epoch_;
    next_suspicion = monitor_.next_suspicion(now);
    for (const NodeKey& k : monitor_.local_suspects(now)) {
      std::vector<uint16_t>& ids = k.kind == wire::SenderKind::kMemory ? memory : compute;
      const size_t room = wire::max_ids_per_message(k.kind == wire::SenderKind::kMemory
                                                        ? wire::HeartbeatType::kMemorySuspects
                                                        : wire::HeartbeatType::kSuspects);
      // Ids beyond u16 are not compute pids or memory node ids: watch() was
      // given a bad id; a report cannot name it.
      if (k.kind == wire::SenderKind::kReplica || k.id > 0xffff || ids.size() == room) {
        ++dropped;
        continue;
      }
      ids.push_back(static_cast<uint16_t>(k.id));
    }
    evaluate_locked(now);
    for (const auto& [id, peer] : peers_) targets.push_back({id, peer.address, peer.socket});
  }
  if (dropped != 0) log_.debug("{} suspects left out of this tick's reports", dropped);

  std::string datagram;
  uint64_t sent = 0, errors = 0;
  // Sends `datagram` to every peer, each on the socket connected to it
  // (one flow per peer, so its replay guard sees this replica's seqs in
  // order); returns how many went. A refusal (the peer's process is gone)
  // is noted in `refused`, other failures count as send errors.
  std::vector<uint32_t> refused;
  auto send_to_peers = [&] {
    uint64_t n = 0;
    for (const PeerTarget& t : targets) {
      const Status s =
          t.socket ? net::send_connected(t.socket->get(), bytes_of(datagram)) : send_to(t.address, datagram);
      if (s) {
        ++n;
      } else if (s.code() == Errc::kDisconnected) {
        refused.push_back(t.id);
      } else {
        ++errors;
      }
    }
    return n;
  };
  for (auto [type, ids, reported] : {std::tuple{wire::HeartbeatType::kSuspects, &compute, &reported_compute_},
                                     std::tuple{wire::HeartbeatType::kMemorySuspects, &memory, &reported_memory_}}) {
    // Also the first empty set after a non-empty one, so peers stop counting
    // this replica's vote at once instead of after the report ttl.
    if (ids->empty() && !*reported) continue;
    *reported = !ids->empty();
    if (targets.empty()) continue;
    if (Status s = encode(datagram, type, *ids, type == wire::HeartbeatType::kMemorySuspects ? memory_epoch : 0);
        !s) {
      log_.error("cannot encode a suspicion report: {}", s.to_string());
      continue;
    }
    sent += send_to_peers();
  }
  uint64_t peer_sent = 0;
  const bool peer_heartbeats = options_.peer_heartbeat.count() > 0;
  if (peer_heartbeats && now >= next_peer_heartbeat_ns_) {
    next_peer_heartbeat_ns_ = now + ns_of(options_.peer_heartbeat);
    if (!targets.empty()) {
      if (Status s = encode(datagram, wire::HeartbeatType::kHeartbeat, {}, 0); !s) {
        log_.error("cannot encode a heartbeat: {}", s.to_string());
      } else {
        peer_sent = send_to_peers();
      }
    }
  }
  if (sent != 0 || errors != 0 || peer_sent != 0 || !refused.empty()) {
    std::lock_guard lock(mu_);
    stats_.reports_sent += sent;
    stats_.peer_heartbeats_sent += peer_sent;
    stats_.send_errors += errors;
    stats_.peer_refusals += refused.size();
    for (uint32_t id : refused) {
      if (auto p = peers_.find(id); p != peers_.end()) p->second.refused_ns = now;
    }
  }
  // Reporting (or about to send the final empty report): every tick.
  // Otherwise nothing changes before the earliest node could time out (a
  // node watched meanwhile times out no earlier than a timeout from now)
  // or the next heartbeat to the peers is due.
  if (reported_compute_ || reported_memory_) return now + tick_ns;
  uint64_t next = std::min(next_suspicion, now + ns_of(options_.timeout));
  if (peer_heartbeats) next = std::min(next, next_peer_heartbeat_ns_);
  return std::max(now + tick_ns, next);
}

std::optional<std::chrono::microseconds> Detector::peer_silence(uint32_t replica_id) const {
  const uint64_t now = monotonic_ns();
  std::lock_guard lock(mu_);
  const auto it = peer_heard_ns_.find(replica_id);
  if (it == peer_heard_ns_.end()) return std::nullopt;
  return elapsed_us(now, it->second);
}

void Detector::evaluate_locked(uint64_t now) {
  bool any = false;
  for (const NodeKey& k : monitor_.failed(now)) {
    if (failed_.contains(k)) continue;
    const uint64_t last = monitor_.last_heard(k).value_or(0);
    failed_.emplace(k, FailedNode{k.kind, k.id, now, last});
    ++stats_.failed_detected;
    any = true;
    log_.info("{} {} failed: suspected by {} of {} replicas, last heard here {} us ago", kind_name(k.kind), k.id,
              monitor_.votes(k, now), options_.replicas, (now - last) / 1000);
  }
  if (any) failed_cv_.notify_all();
}

}  // namespace pandora::fd
