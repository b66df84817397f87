#include "compute/fd_link.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pandora {
namespace {

HeartbeatSenderOptions sender_options(const FdLinkOptions& o) {
  HeartbeatSenderOptions s;
  s.cluster_id = o.cluster_id;
  s.secret = o.secret;
  s.kind = wire::SenderKind::kCompute;
  s.id = o.pid;
  s.period = o.heartbeat_period;
  return s;
}

}  // namespace

FdLink::FdLink(FdLinkOptions options, std::function<void(uint16_t)> on_failed, const Logger& log)
    : options_(std::move(options)),
      on_failed_(std::move(on_failed)),
      log_(log),
      sender_(sender_options(options_), log.child("heartbeat")),
      receiver_(options_.cluster_id, options_.secret, options_.max_skew, log.child("push")) {}

Result<std::unique_ptr<FdLink>> FdLink::start(FdLinkOptions options, std::function<void(uint16_t)> on_failed,
                                              const Logger& log) {
  if (options.pid == 0) return Status(Errc::kInvalidArgument, "compute pid 0 is not a pid");
  if (options.secret.empty()) return Status(Errc::kInvalidArgument, "the cluster secret is empty");
  if (!on_failed) return Status(Errc::kInvalidArgument, "no on_failed callback");
  std::unique_ptr<FdLink> link(new FdLink(std::move(options), std::move(on_failed), log));
  if (Status s = link->sender_.set_targets(link->options_.replicas); !s) return s;
  Result<net::UniqueFd> sock = net::bind_udp(link->options_.push_bind, &link->push_port_);
  if (!sock) return sock.status();
  link->sock_ = std::move(sock.value());
  Result<net::UniqueFd> wakeup = net::open_wakeup();
  if (!wakeup) return wakeup.status();
  link->wakeup_ = std::move(wakeup.value());
  link->listener_ = std::thread([p = link.get()] { p->listen(); });
  if (Status s = link->sender_.start(); !s) return s;  // the destructor joins the listener
  return link;
}

FdLink::~FdLink() { stop(); }

void FdLink::stop() {
  sender_.stop();
  stopping_.store(true);
  if (wakeup_.valid()) net::wake(wakeup_.get());
  if (listener_.joinable()) listener_.join();
}

Status FdLink::set_replicas(std::vector<Endpoint> replicas) { return sender_.set_targets(std::move(replicas)); }

FdLinkStats FdLink::stats() const {
  FdLinkStats s;
  s.heartbeats = sender_.stats();
  s.pushes = pushes_.load(std::memory_order_relaxed);
  s.pids_delivered = pids_delivered_.load(std::memory_order_relaxed);
  s.rejected = receiver_.counts();
  return s;
}

void FdLink::listen() {
  std::array<uint8_t, wire::kMaxDatagram + 1> buf;
  pollfd fds[2] = {{sock_.get(), POLLIN, 0}, {wakeup_.get(), POLLIN, 0}};
  while (!stopping_.load()) {
    fds[0].revents = fds[1].revents = 0;
    if (::poll(fds, 2, -1) <= 0 || fds[0].revents == 0) continue;
    for (;;) {
      sockaddr_storage from{};
      socklen_t from_len = 0;
      const ssize_t n = net::recv_datagram(sock_.get(), buf, &from, &from_len);
      if (n < 0) break;
      std::optional<wire::HeartbeatMessage> m =
          receiver_.accept(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), from, from_len);
      if (!m) continue;
      if (m->header.type != wire::HeartbeatType::kFailedPush || m->header.kind != wire::SenderKind::kReplica) {
        receiver_.reject(RejectReason::kUnexpected,
                         fmt::format("message type {} from sender kind {} is not a failed-pid push",
                                     static_cast<int>(m->header.type), static_cast<int>(m->header.kind)),
                         from, from_len);
        continue;
      }
      pushes_.fetch_add(1, std::memory_order_relaxed);
      for (uint16_t pid : m->pids) {
        on_failed_(pid);
        pids_delivered_.fetch_add(1, std::memory_order_relaxed);
      }
      // The pids named (a push carries up to a datagram's worth; the
      // first few tell which failure this is).
      constexpr size_t kNamed = 16;
      const std::span<const uint16_t> named(m->pids.data(), std::min(m->pids.size(), kNamed));
      log_.info("replica {} announced {} recovered pid(s): {}{}", m->header.sender, m->pids.size(),
                fmt::join(named, " "), m->pids.size() > kNamed ? " ..." : "");
    }
  }
}

}  // namespace pandora
