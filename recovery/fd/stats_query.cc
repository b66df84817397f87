#include "recovery/fd/stats_query.h"

#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/bytes.h"
#include "common/heartbeat_sender.h"
#include "common/udp_socket.h"

namespace pandora::fd {
namespace {

// Asked again this often while unanswered (a lost datagram, or a query
// refused as reordered behind another tool's).
constexpr std::chrono::milliseconds kRetry{250};

bool same_address(const sockaddr_storage& a, socklen_t a_len, const net::UdpAddress& b) {
  if (a.ss_family != b.ss.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b.ss);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b.ss);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
  }
  return a_len == b.len && std::memcmp(&a, &b.ss, a_len) == 0;
}

}  // namespace

std::vector<ReplicaStatsAnswer> query_replica_stats(const std::map<uint32_t, Endpoint>& replicas,
                                                    uint64_t cluster_id, const std::string& secret,
                                                    std::chrono::milliseconds timeout) {
  struct Target {
    ReplicaStatsAnswer answer;
    std::optional<net::UdpAddress> address;
    int fd = -1;
    int tries = 0;
  };
  std::vector<Target> targets;
  std::map<int, net::UniqueFd> sockets;  // one per address family
  for (const auto& [id, ep] : replicas) {
    Target t;
    t.answer.replica_id = id;
    t.answer.endpoint = ep;
    Result<net::UdpAddress> a = net::udp_address(ep);
    if (!a) {
      t.answer.error = a.status().message();
    } else {
      auto it = sockets.find(a->family());
      if (it == sockets.end()) {
        Result<net::UniqueFd> s = net::open_udp(a->family());
        if (s) it = sockets.emplace(a->family(), std::move(*s)).first;
        else t.answer.error = s.status().message();
      }
      if (it != sockets.end()) {
        t.address = *a;
        t.fd = it->second.get();
      }
    }
    targets.push_back(std::move(t));
  }

  const uint64_t incarnation = random_incarnation();
  uint64_t seq = 0;
  auto ask_unanswered = [&] {
    for (Target& t : targets) {
      if (!t.address || t.answer.answered) continue;
      wire::HeartbeatMessage q;
      q.header = wire::HeartbeatHeader{wire::HeartbeatType::kStatsQuery, wire::SenderKind::kAdmin, cluster_id,
                                       wire::kAdminSender, incarnation, ++seq, realtime_ns()};
      // Room for every field this build knows; from the third try on, every
      // other query has room for the first kMinStatsFields only: a replica
      // older than this tool refuses a query with more room than it knows.
      q.stats_fields = t.tries >= 2 && t.tries % 2 == 1 ? wire::kMinStatsFields : wire::kReplicaStatsFields.size();
      ++t.tries;
      std::string d;
      if (Status s = wire::encode_heartbeat(d, q, secret); !s) {
        t.answer.error = s.message();
        continue;
      }
      if (Status s = net::send_datagram(t.fd, *t.address, bytes_of(d)); !s) {
        t.answer.error = s.message();  // kept only if no answer comes
      }
    }
  };
  auto all_answered = [&] {
    return std::all_of(targets.begin(), targets.end(),
                       [](const Target& t) { return !t.address || t.answer.answered; });
  };

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  auto next_ask = start;
  std::vector<pollfd> fds;
  for (const auto& [family, fd] : sockets) fds.push_back(pollfd{fd.get(), POLLIN, 0});
  std::array<uint8_t, wire::kMaxDatagram + 1> buf;
  while (!all_answered()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    if (now >= next_ask) {
      ask_unanswered();
      next_ask = now + kRetry;
    }
    const auto wait = std::min(deadline, next_ask) - now;
    const int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
    for (pollfd& p : fds) p.revents = 0;
    if (::poll(fds.data(), fds.size(), std::max(ms, 1)) <= 0) continue;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      for (;;) {
        sockaddr_storage from{};
        socklen_t from_len = 0;
        const ssize_t n = net::recv_datagram(p.fd, buf, &from, &from_len);
        if (n < 0) break;
        Result<wire::HeartbeatMessage> m =
            wire::decode_heartbeat(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), secret, cluster_id);
        if (!m || m->header.type != wire::HeartbeatType::kStats || m->header.kind != wire::SenderKind::kReplica ||
            m->query_incarnation != incarnation) {
          continue;  // not an answer to this call: someone else's, or forged
        }
        for (Target& t : targets) {
          if (t.answer.answered || !t.address || t.answer.replica_id != m->header.sender ||
              !same_address(from, from_len, *t.address)) {
            continue;
          }
          t.answer.answered = true;
          t.answer.error.clear();
          t.answer.incarnation = m->header.incarnation;
          t.answer.stats = m->stats;
          t.answer.fields = std::min(m->stats_fields, wire::kReplicaStatsFields.size());
        }
      }
    }
  }
  std::vector<ReplicaStatsAnswer> out;
  for (Target& t : targets) {
    if (t.address && !t.answer.answered) {
      t.answer.error = fmt::format("no answer within {} ms{}", timeout.count(),
                                   t.answer.error.empty() ? "" : " (last send error: " + t.answer.error + ")");
    }
    out.push_back(std::move(t.answer));
  }
  return out;
}

}  // namespace pandora::fd
