// Failure-detector datagram codec. Receivers decode bytes from anyone who can
// reach their UDP port, so decoding is strict and bounded: the length is
// checked before any field is read, every enum against its known values, the
// body against its type, and the mac over everything before it.
#include "common/wire/heartbeat.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/bytes.h"
#include "common/checksum.h"

namespace pandora::wire {
namespace {

static_assert(kHeartbeatHeaderBytes == 46, "wire layout: header is 46 bytes");
static_assert(kHeartbeatMacBytes == sizeof(Digest256));
static_assert(kMaxPidsPerMessage == 660);
static_assert(kHeartbeatHeaderBytes + 2 + 2 * kMaxPidsPerMessage + kHeartbeatMacBytes <= kMaxDatagram);
static_assert(kHeartbeatHeaderBytes + 8 + 2 + 2 * max_ids_per_message(HeartbeatType::kMemorySuspects) +
                  kHeartbeatMacBytes <=
              kMaxDatagram);
static_assert(stats_body_bytes(kMinStatsFields) == 210, "wire layout: stats body is 2 x u64, u16 count, 24 x u64");
static_assert(kStatsBodyBytes == 258, "this build's stats: 30 fields");
static_assert(kMaxStatsFields == 163);
static_assert(kHeartbeatHeaderBytes + stats_body_bytes(kMaxStatsFields) + kHeartbeatMacBytes <= kMaxDatagram);

constexpr size_t kOffType = 6;
constexpr size_t kOffKind = 7;
constexpr size_t kOffCluster = 8;
constexpr size_t kOffBodyLen = 44;

uint64_t load(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

void put(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool known_type(uint8_t t) { return t >= 1 && t <= static_cast<uint8_t>(HeartbeatType::kStats); }
bool known_kind(uint8_t k) { return k >= 1 && k <= static_cast<uint8_t>(SenderKind::kAdmin); }
bool carries_pids(HeartbeatType t) {
  return t == HeartbeatType::kSuspects || t == HeartbeatType::kFailedPush || t == HeartbeatType::kMemorySuspects;
}
bool is_stats(HeartbeatType t) { return t == HeartbeatType::kStatsQuery || t == HeartbeatType::kStats; }
// Bytes of the body before the pid list.
size_t epoch_bytes(HeartbeatType t) { return t == HeartbeatType::kMemorySuspects ? 8 : 0; }

Status malformed(std::string why) { return Status(Errc::kProtocol, "malformed failure-detector datagram: " + why); }

// The encoder and decoder, with the mac computed by `mac_of(bytes)`: a one-off
// HMAC of the secret, or a keyed HmacSha256 its owner reuses (the key is
// processed once: about 0.2 us a datagram against 1.2-1.9 us, and no
// libcrypto algorithm fetch, with its shared locks, per datagram).
template <typename Mac>
Status encode_with(std::string& out, const HeartbeatMessage& m, Mac&& mac_of) {
  const HeartbeatHeader& h = m.header;
  if (!known_type(static_cast<uint8_t>(h.type)) || !known_kind(static_cast<uint8_t>(h.kind))) {
    return Status(Errc::kInvalidArgument, "unknown message type or sender kind");
  }
  if (!carries_pids(h.type) && !m.pids.empty()) {
    return Status(Errc::kInvalidArgument, "a heartbeat carries no pids");
  }
  if (m.epoch != 0 && h.type != HeartbeatType::kMemorySuspects) {
    return Status(Errc::kInvalidArgument, "only a memory suspicion report carries an epoch");
  }
  if (is_stats(h.type)) {
    const size_t most = h.type == HeartbeatType::kStats ? kReplicaStatsFields.size() : kMaxStatsFields;
    if (m.stats_fields < kMinStatsFields || m.stats_fields > most) {
      return Status(Errc::kInvalidArgument, fmt::format("a stats {} of {} values (from {} to {})",
                                                        h.type == HeartbeatType::kStats ? "answer" : "query",
                                                        m.stats_fields, kMinStatsFields, most));
    }
  }
  if (m.pids.size() > max_ids_per_message(h.type)) {
    return Status(Errc::kInvalidArgument, fmt::format("{} pids do not fit one datagram (at most {}): split them",
                                                      m.pids.size(), max_ids_per_message(h.type)));
  }
  const size_t start = out.size();
  put(out, kHeartbeatMagic, 4);
  put(out, kHeartbeatVersion, 2);
  put(out, static_cast<uint8_t>(h.type), 1);
  put(out, static_cast<uint8_t>(h.kind), 1);
  put(out, h.cluster_id, 8);
  put(out, h.sender, 4);
  put(out, h.incarnation, 8);
  put(out, h.seq, 8);
  put(out, h.sent_ns, 8);
  const size_t body_len = carries_pids(h.type) ? epoch_bytes(h.type) + 2 + 2 * m.pids.size()
                          : is_stats(h.type)  ? stats_body_bytes(m.stats_fields)
                                              : 0;
  put(out, body_len, 2);
  if (carries_pids(h.type)) {
    put(out, m.epoch, static_cast<int>(epoch_bytes(h.type)));
    put(out, m.pids.size(), 2);
    for (uint16_t pid : m.pids) put(out, pid, 2);
  } else if (h.type == HeartbeatType::kStatsQuery) {
    out.append(body_len, '\0');
  } else if (h.type == HeartbeatType::kStats) {
    put(out, m.query_incarnation, 8);
    put(out, m.query_seq, 8);
    put(out, m.stats_fields, 2);
    for (size_t i = 0; i < m.stats_fields; ++i) put(out, m.stats.*kReplicaStatsFields[i].member, 8);
  }
  const Digest256 mac = mac_of(bytes_of(std::string_view(out).substr(start)));
  out.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return Status::ok();
}

template <typename Mac>
Result<HeartbeatMessage> decode_with(std::span<const uint8_t> d, uint64_t cluster_id, Mac&& mac_of) {
  // Structure first (cheap, and says what is wrong), then who sent it.
  if (d.size() < kHeartbeatHeaderBytes + kHeartbeatMacBytes) {
    return malformed(fmt::format("{} bytes, shorter than header and mac ({})", d.size(),
                                 kHeartbeatHeaderBytes + kHeartbeatMacBytes));
  }
  if (d.size() > kMaxDatagram) return malformed(fmt::format("{} bytes, longer than {}", d.size(), kMaxDatagram));
  const uint8_t* p = d.data();
  if (load(p, 4) != kHeartbeatMagic) return malformed(fmt::format("bad magic {:#x}", load(p, 4)));
  if (load(p + 4, 2) != kHeartbeatVersion) return malformed(fmt::format("unsupported version {}", load(p + 4, 2)));
  if (!known_type(p[kOffType])) return malformed(fmt::format("unknown type {}", p[kOffType]));
  if (!known_kind(p[kOffKind])) return malformed(fmt::format("unknown sender kind {}", p[kOffKind]));
  const size_t body_len = load(p + kOffBodyLen, 2);
  const size_t actual = d.size() - kHeartbeatHeaderBytes - kHeartbeatMacBytes;
  if (body_len != actual) {
    return malformed(fmt::format("body length {} but {} bytes between header and mac", body_len, actual));
  }
  HeartbeatMessage m;
  HeartbeatHeader& h = m.header;
  h.type = static_cast<HeartbeatType>(p[kOffType]);
  h.kind = static_cast<SenderKind>(p[kOffKind]);
  const uint8_t* body = p + kHeartbeatHeaderBytes;
  if (is_stats(h.type)) {
    const std::string_view what = h.type == HeartbeatType::kStats ? "answer" : "query";
    if (body_len < stats_body_bytes(kMinStatsFields) || (body_len - stats_body_bytes(0)) % 8 != 0) {
      return malformed(fmt::format("stats {} with a {}-byte body, not 18 + 8 x n bytes for at least {} values", what,
                                   body_len, kMinStatsFields));
    }
    // Bounded by kMaxDatagram, checked above: at most kMaxStatsFields.
    m.stats_fields = (body_len - stats_body_bytes(0)) / 8;
    if (h.type == HeartbeatType::kStatsQuery) {
      for (size_t i = 0; i < body_len; ++i) {
        if (body[i] != 0) return malformed(fmt::format("stats query with a non-zero byte at body offset {}", i));
      }
    } else {
      m.query_incarnation = load(body, 8);
      m.query_seq = load(body + 8, 8);
      const size_t count = load(body + 16, 2);
      if (count != m.stats_fields) {
        return malformed(fmt::format("stats answer with {} values in a body of {}", count, m.stats_fields));
      }
      // Values of fields appended after this build are skipped.
      for (size_t i = 0; i < std::min(count, kReplicaStatsFields.size()); ++i) {
        m.stats.*kReplicaStatsFields[i].member = load(body + 18 + 8 * i, 8);
      }
    }
  } else if (!carries_pids(h.type)) {
    if (body_len != 0) return malformed(fmt::format("heartbeat with a {}-byte body", body_len));
  } else {
    const size_t head = epoch_bytes(h.type);
    if (body_len < head + 2) return malformed(head != 0 ? "memory suspicion report without its epoch and count"
                                                        : "pid list without its count");
    m.epoch = head != 0 ? load(body, 8) : 0;
    body += head;
    const size_t count = load(body, 2);
    if (count > max_ids_per_message(h.type) || body_len != head + 2 + 2 * count) {
      return malformed(fmt::format("pid count {} does not match a {}-byte body", count, body_len));
    }
    m.pids.reserve(count);
    for (size_t i = 0; i < count; ++i) m.pids.push_back(static_cast<uint16_t>(load(body + 2 + 2 * i, 2)));
  }

  h.cluster_id = load(p + kOffCluster, 8);
  // Compared before the mac only to give a clearer error; both are kAuthFailed
  // and neither tells a stranger anything about the secret.
  if (h.cluster_id != cluster_id) {
    return Status(Errc::kAuthFailed, fmt::format("datagram for cluster {:#x}, this is cluster {:#x}", h.cluster_id,
                                                 cluster_id));
  }
  const size_t covered = d.size() - kHeartbeatMacBytes;
  const Digest256 mac = mac_of(d.first(covered));
  if (!constant_time_equal(mac, d.subspan(covered))) {
    return Status(Errc::kAuthFailed, "datagram mac does not verify (wrong secret or altered in transit)");
  }
  h.sender = static_cast<uint32_t>(load(p + 16, 4));
  h.incarnation = load(p + 20, 8);
  h.seq = load(p + 28, 8);
  h.sent_ns = load(p + 36, 8);
  return m;
}

Digest256 keyed(HmacSha256& mac, std::span<const uint8_t> bytes) {
  mac.update(bytes);
  return mac.finish();
}

}  // namespace

Status encode_heartbeat(std::string& out, const HeartbeatMessage& m, std::string_view secret) {
  return encode_with(out, m, [&](std::span<const uint8_t> b) { return hmac_sha256(bytes_of(secret), b); });
}

Status encode_heartbeat(std::string& out, const HeartbeatMessage& m, HmacSha256& mac) {
  return encode_with(out, m, [&](std::span<const uint8_t> b) { return keyed(mac, b); });
}

Result<HeartbeatMessage> decode_heartbeat(std::span<const uint8_t> datagram, std::string_view secret,
                                          uint64_t cluster_id) {
  return decode_with(datagram, cluster_id, [&](std::span<const uint8_t> b) { return hmac_sha256(bytes_of(secret), b); });
}

Result<HeartbeatMessage> decode_heartbeat(std::span<const uint8_t> datagram, HmacSha256& mac, uint64_t cluster_id) {
  return decode_with(datagram, cluster_id, [&](std::span<const uint8_t> b) { return keyed(mac, b); });
}

Status ReplayGuard::accept(const HeartbeatHeader& h, uint64_t now_realtime_ns) {
  const uint64_t skew_ns = static_cast<uint64_t>(max_skew_.count()) * 1'000'000;
  // Differences, not sums: sent_ns comes from the wire and may be anything.
  if (h.sent_ns < now_realtime_ns && now_realtime_ns - h.sent_ns > skew_ns) {
    return Status(Errc::kProtocol, fmt::format("stale (sent {} ms ago)", (now_realtime_ns - h.sent_ns) / 1'000'000));
  }
  if (h.sent_ns > now_realtime_ns && h.sent_ns - now_realtime_ns > skew_ns) {
    return Status(Errc::kProtocol,
                  fmt::format("from the future (sent {} ms ahead of this clock)",
                              (h.sent_ns - now_realtime_ns) / 1'000'000));
  }
  auto [it, inserted] = last_.try_emplace({h.kind, h.sender});
  Last& last = it->second;
  if (!inserted) {
    if (h.incarnation == last.incarnation) {
      if (h.seq <= last.seq) {
        return Status(Errc::kProtocol, fmt::format("replayed or reordered (seq {} <= last {})", h.seq, last.seq));
      }
    } else if (h.sent_ns <= last.sent_ns) {
      return Status(Errc::kProtocol,
                    fmt::format("replayed or reordered (incarnation {:#x} sent before the last accepted message of "
                                "incarnation {:#x})",
                                h.incarnation, last.incarnation));
    }
  }
  last = Last{h.incarnation, h.seq, h.sent_ns};
  return Status::ok();
}

}  // namespace pandora::wire
