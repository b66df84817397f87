#include "common/heartbeat_receiver.h"

#include "common/bytes.h"
#include "common/heartbeat_sender.h"
#include "common/udp_socket.h"

namespace pandora {

std::string_view reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kMalformed: return "malformed";
    case RejectReason::kAuth: return "unauthenticated";
    case RejectReason::kReplay: return "replayed";
    case RejectReason::kUnexpected: return "unexpected";
  }
  return "unknown";
}

HeartbeatReceiver::HeartbeatReceiver(uint64_t cluster_id, std::string secret, std::chrono::milliseconds max_skew,
                                     const Logger& log)
    : cluster_id_(cluster_id),
      mac_(bytes_of(secret)),
      log_(log),
      guard_(max_skew) {}

std::optional<wire::HeartbeatMessage> HeartbeatReceiver::accept(std::span<const uint8_t> datagram,
                                                                const sockaddr_storage& from, socklen_t from_len) {
  Result<wire::HeartbeatMessage> m = wire::decode_heartbeat(datagram, mac_, cluster_id_);
  if (!m) {
    reject(m.status().code() == Errc::kAuthFailed ? RejectReason::kAuth : RejectReason::kMalformed,
           m.status().message(), from, from_len);
    return std::nullopt;
  }
  if (Status s = guard_.accept(m->header, realtime_ns()); !s) {
    reject(RejectReason::kReplay, s.message(), from, from_len);
    return std::nullopt;
  }
  return std::move(m.value());
}

void HeartbeatReceiver::reject(RejectReason reason, std::string_view why, const sockaddr_storage& from,
                               socklen_t from_len) {
  PerReason& r = reasons_[static_cast<size_t>(reason)];
  r.count.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now = monotonic_ns();
  if (r.last_log_ns != 0 && now - r.last_log_ns < 1'000'000'000ull) {
    ++r.suppressed;
    return;
  }
  log_.warn("refused a datagram from {} ({}): {} ({} more refused for this reason since the previous such line, "
            "not logged)",
            net::describe_address(from, from_len), reject_reason_name(reason), why, r.suppressed);
  r.last_log_ns = now;
  r.suppressed = 0;
}

RejectCounts HeartbeatReceiver::counts() const {
  auto get = [this](RejectReason r) { return reasons_[static_cast<size_t>(r)].count.load(std::memory_order_relaxed); };
  return RejectCounts{get(RejectReason::kMalformed), get(RejectReason::kAuth), get(RejectReason::kReplay),
                      get(RejectReason::kUnexpected)};
}

}  // namespace pandora
