#include "common/heartbeat_sender.h"

#include <pthread.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/bytes.h"

namespace pandora {
namespace {

uint64_t clock_ns(clockid_t c) {
  timespec ts{};
  ::clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }
uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

uint64_t random_incarnation() {
  uint64_t v = 0;
  size_t got = 0;
  while (got < sizeof(v)) {
    const ssize_t n = ::getrandom(reinterpret_cast<char*>(&v) + got, sizeof(v) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      // No entropy source at all (getrandom is in every kernel we support):
      // time and address still differ between process starts.
      v = monotonic_ns() ^ realtime_ns() ^ reinterpret_cast<uintptr_t>(&v);
      break;
    }
  }
  return v == 0 ? 1 : v;
}

HeartbeatSender::HeartbeatSender(HeartbeatSenderOptions options, const Logger& log)
    : options_(std::move(options)),
      log_(log),
      incarnation_(options_.incarnation != 0 ? options_.incarnation : random_incarnation()),
      mac_(bytes_of(options_.secret)) {}

HeartbeatSender::~HeartbeatSender() { stop(); }

Status HeartbeatSender::start() {
  if (options_.period.count() <= 0) return Status(Errc::kInvalidArgument, "heartbeat period must be positive");
  if (options_.nice < -20 || options_.nice > 19) {
    return Status(Errc::kInvalidArgument, fmt::format("heartbeat thread nice {} is outside -20..19", options_.nice));
  }
  if (options_.kind != wire::SenderKind::kReplica && options_.id > 0xffff) {
    return Status(Errc::kInvalidArgument, fmt::format("heartbeat sender id {} exceeds 65535", options_.id));
  }
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return Status::ok();
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void HeartbeatSender::stop() {
  std::thread t;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

Status HeartbeatSender::set_targets(std::vector<Endpoint> targets) {
  std::vector<std::pair<Endpoint, net::UdpAddress>> resolved;
  resolved.reserve(targets.size());
  bool need_v4 = false, need_v6 = false;
  for (Endpoint& ep : targets) {
    Result<net::UdpAddress> a = net::udp_address(ep);
    if (!a) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("heartbeat target {}: {}", ep.to_string(), a.status().message()));
    }
    (a->family() == AF_INET ? need_v4 : need_v6) = true;
    resolved.emplace_back(std::move(ep), *a);
  }
  std::lock_guard lock(mu_);
  for (auto [need, family, sock] :
       {std::tuple{need_v4, AF_INET, &sock_v4_}, std::tuple{need_v6, AF_INET6, &sock_v6_}}) {
    if (!need || sock->valid()) continue;
    Result<net::UniqueFd> fd = net::open_udp(family);
    if (!fd) return fd.status();
    *sock = std::move(fd.value());
  }
  targets_ = std::move(resolved);
  return Status::ok();
}

HeartbeatSenderStats HeartbeatSender::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void HeartbeatSender::run() {
  using Clock = std::chrono::steady_clock;
  bool realtime = false;
  if (options_.realtime) {
    sched_param p{};
    p.sched_priority = ::sched_get_priority_min(SCHED_FIFO);
    const int rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p);
    realtime = rc == 0;
    if (!realtime) log_.debug("heartbeat thread not real-time (SCHED_FIFO refused: {})", std::strerror(rc));
  }
  // On Linux a thread's nice value is per thread (its tid names it).
  const bool raised = realtime || ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), options_.nice) == 0;
  if (!raised) {
    log_.debug("heartbeat thread keeps its priority (nice {} refused: {})", options_.nice, std::strerror(errno));
  }
  std::unique_lock lock(mu_);
  stats_.priority_raised = raised;
  stats_.realtime = realtime;
  Clock::time_point next = Clock::now();
  Clock::time_point last_round{};
  while (!stopping_) {
    const Clock::time_point round = Clock::now();
    if (stats_.rounds > 0) {
      const auto gap = std::chrono::duration_cast<std::chrono::microseconds>(round - last_round).count();
      stats_.longest_gap_us = std::max<uint64_t>(stats_.longest_gap_us, static_cast<uint64_t>(gap));
    }
    last_round = round;
    send_round();
    next += options_.period;
    const Clock::time_point now = Clock::now();
    // Behind by more than a period (descheduled, suspended): resynchronise
    // instead of sending a burst, which would only look like liveness that
    // was not there.
    if (next < now) next = now + options_.period;
    cv_.wait_until(lock, next, [this] { return stopping_; });
  }
}

// Called with mu_ held: set_targets waits at most one round (a few sendto
// calls), and no copy of the target list is made per round.
void HeartbeatSender::send_round() {
  if (targets_.empty()) return;
  wire::HeartbeatMessage m;
  m.header.type = wire::HeartbeatType::kHeartbeat;
  m.header.kind = options_.kind;
  m.header.cluster_id = options_.cluster_id;
  m.header.sender = options_.id;
  m.header.incarnation = incarnation_;
  m.header.seq = ++seq_;
  m.header.sent_ns = realtime_ns();
  datagram_.clear();
  if (Status s = wire::encode_heartbeat(datagram_, m, mac_); !s) {
    log_.error("cannot encode a heartbeat: {}", s.to_string());  // unreachable: a heartbeat has no body
    return;
  }
  ++stats_.rounds;
  for (const auto& [ep, addr] : targets_) {
    const net::UniqueFd& sock = addr.family() == AF_INET ? sock_v4_ : sock_v6_;
    Status s = net::send_datagram(sock.get(), addr, bytes_of(datagram_));
    if (s) {
      ++stats_.sent;
      continue;
    }
    ++stats_.send_errors;
    // At most one line a second: a replica that is down would otherwise log
    // a thousand lines a second.
    const uint64_t now = monotonic_ns();
    if (now - last_error_log_ns_ >= 1'000'000'000ull || last_error_log_ns_ == 0) {
      log_.warn("heartbeat to {} failed: {} ({} more send errors since the previous such line, not logged)",
                ep.to_string(), s.message(), errors_unlogged_);
      last_error_log_ns_ = now;
      errors_unlogged_ = 0;
    } else {
      ++errors_unlogged_;
    }
  }
}

}  // namespace pandora
