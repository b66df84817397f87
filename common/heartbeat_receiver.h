// The receiving half shared by the FD replicas (recovery/fd/detector.h) and
// the compute nodes' push listener (compute/fd_link.h): decode, authenticate
// and replay-check one datagram, and account for refusals.
//
// Anyone who can reach the port can send garbage, so refusals are counted per
// reason and logged at most once per second per reason (the line says how
// many were suppressed): a flood cannot flood the log too.
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/checksum.h"
#include "common/logger.h"
#include "common/wire/heartbeat.h"

namespace pandora {

enum class RejectReason : uint8_t {
  kMalformed = 0,   // decode_heartbeat: kProtocol
  kAuth = 1,        // wrong mac or cluster id
  kReplay = 2,      // ReplayGuard: replayed, reordered, stale or from the future
  kUnexpected = 3,  // authentic, but not something this receiver takes (type, kind, unknown replica)
};
inline constexpr size_t kRejectReasons = 4;

std::string_view reject_reason_name(RejectReason r);

struct RejectCounts {
  uint64_t malformed = 0;
  uint64_t auth = 0;
  uint64_t replay = 0;
  uint64_t unexpected = 0;
};

class HeartbeatReceiver {
 public:
  HeartbeatReceiver(uint64_t cluster_id, std::string secret, std::chrono::milliseconds max_skew, const Logger& log);

  // The message, or nullopt when refused (counted and maybe logged). Only
  // the receiving thread calls accept and reject.
  std::optional<wire::HeartbeatMessage> accept(std::span<const uint8_t> datagram, const sockaddr_storage& from,
                                               socklen_t from_len);

  // A refusal the caller decided on an authentic message.
  void reject(RejectReason reason, std::string_view why, const sockaddr_storage& from, socklen_t from_len);

  // Safe from any thread.
  RejectCounts counts() const;

 private:
  struct PerReason {
    std::atomic<uint64_t> count{0};
    uint64_t last_log_ns = 0;  // receiving thread only
    uint64_t suppressed = 0;   // receiving thread only
  };

  const uint64_t cluster_id_;
  HmacSha256 mac_;  // keyed with the secret; the receiving thread's
  const Logger log_;
  wire::ReplayGuard guard_;
  std::array<PerReason, kRejectReasons> reasons_;
};

}  // namespace pandora
