// UDP messages of the failure detector (ARCHITECTURE.md 5, step 1 and 5):
//
//   compute node / memory daemon -> every FD replica   Heartbeat (every ~1 ms)
//   FD replica -> every other FD replica               Suspects, MemorySuspects (its view)
//   FD leader  -> every compute node                   FailedPush (pids just published)
//   operator (pandora-ctl stats) -> an FD replica      StatsQuery
//   FD replica -> the query's source address           Stats (its counters and state)
//
// Every datagram is authenticated with the cluster secret, so a stranger
// can neither keep a dead node "alive" (forged heartbeats) nor get a live one
// fenced (forged suspicions), nor make a compute node treat a live pid's
// latches as stray (forged pushes):
//
//   u32 magic "PHBT" | u16 version | u8 type | u8 sender kind |
//   u64 cluster id | u32 sender id | u64 incarnation | u64 seq |
//   u64 sent_ns (sender's CLOCK_REALTIME) | u16 body len | body |
//   mac[32] = HMAC-SHA256(secret, every byte before the mac)
//
// little-endian, one datagram per message, at most kMaxDatagram bytes.
// Decoding is strict (bad magic/version/type/kind, a body that does not
// match its type, trailing bytes, a wrong mac: all refused with a reason).
//
// Replays: a receiver keeps, per (kind, sender id), the incarnation and the
// highest seq it accepted (ReplayGuard); a message whose seq is not higher is
// refused, and so is one whose sent_ns is further than max_skew from the
// receiver's clock (bounds replays to a receiver that lost its state).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/checksum.h"
#include "common/status.h"

namespace pandora::wire {

inline constexpr uint32_t kHeartbeatMagic = 0x54424850;  // bytes "PHBT"
// 2: MemorySuspects carries the cluster record epoch of the sender's view.
inline constexpr uint16_t kHeartbeatVersion = 2;
inline constexpr size_t kMaxDatagram = 1400;  // below any loopback / Ethernet MTU
inline constexpr size_t kHeartbeatHeaderBytes = 4 + 2 + 1 + 1 + 8 + 4 + 8 + 8 + 8 + 2;  // 46
inline constexpr size_t kHeartbeatMacBytes = 32;
// Pids one Suspects or FailedPush message can carry.
inline constexpr size_t kMaxPidsPerMessage = (kMaxDatagram - kHeartbeatHeaderBytes - kHeartbeatMacBytes - 2) / 2;

enum class SenderKind : uint8_t {
  kCompute = 1,   // sender id = compute pid (1..65535)
  kMemory = 2,    // sender id = memory node id
  kReplica = 3,   // sender id = FD replica id (1..N)
  kAdmin = 4,     // sender id = kAdminSender; an operator's tool (a fresh incarnation per process)
};
// One id for every operator tool: a replica's replay guard keeps one entry
// per (kind, sender), so a monitoring loop cannot grow it without bound.
// Two tools querying at once may see one query refused as reordered; they
// ask again.
inline constexpr uint32_t kAdminSender = 1;

enum class HeartbeatType : uint8_t {
  kHeartbeat = 1,   // no body
  kSuspects = 2,    // body: u16 count | u16 pids[count]: compute pids this replica has missed for the timeout
  kFailedPush = 3,  // body: u16 count | u16 pids[count]: pids whose recovery was just published
  // body: u64 epoch | u16 count | u16 ids[count]: memory node ids this
  // replica has missed, judged under the cluster record of `epoch` (which
  // node ids are retired, which daemon each is bound to). A receiver that
  // follows a newer record does not count it: a replica that has not yet
  // read a replacement's record refuses the new daemon's heartbeats (bound
  // to the old one) and would vote a live node failed.
  kMemorySuspects = 4,
  // From an operator (kAdmin) to one replica: a body of
  // stats_body_bytes(n) zero bytes, n >= kMinStatsFields: the room for an
  // answer of n values. A replica answers with at most n, so no answer is
  // longer than its query and a replayed query with a forged source
  // address cannot amplify.
  kStatsQuery = 5,
  // The replica's answer, to the query's source address: body u64 query
  // incarnation | u64 query seq (the asker matches answers) | u16 count |
  // u64 values[count]: the first `count` of kReplicaStatsFields, in that
  // order. count >= kMinStatsFields; an asker ignores values past the
  // fields it knows, and a field past `count` was not sent (an older
  // replica, or a query with less room).
  kStats = 6,
};

// What an FD replica tells an operator (recovery/fd/detector.h has what each
// counter counts). Every field a u64 on the wire, in kReplicaStatsFields
// order; names are the ones pandora-ctl prints and writes as JSON keys.
struct ReplicaStats {
  uint64_t leader = 0;               // 1: this replica leads (runs the recoveries)
  uint64_t uptime_ms = 0;            // since its detector started
  uint64_t record_epoch = 0;         // the cluster record its memory view follows
  uint64_t watched_compute = 0;      // compute pids it watches now
  uint64_t watched_memory = 0;       // memory node ids it watches now
  uint64_t suspected = 0;            // nodes it has missed for their timeout, now
  uint64_t failed_latched = 0;       // nodes failed by a majority and not yet handled
  uint64_t datagrams = 0;
  uint64_t heartbeats = 0;
  uint64_t heartbeats_unwatched = 0;
  uint64_t heartbeats_foreign = 0;
  uint64_t reports_received = 0;
  uint64_t reports_stale = 0;
  uint64_t reports_sent = 0;
  uint64_t pushes_sent = 0;
  uint64_t send_errors = 0;
  uint64_t failed_detected = 0;
  uint64_t ticks = 0;
  uint64_t rejected_malformed = 0;
  uint64_t rejected_auth = 0;
  uint64_t rejected_replay = 0;
  uint64_t rejected_unexpected = 0;
  uint64_t queries_answered = 0;
  uint64_t queries_refused = 0;      // over the answer rate limit
  // Since the first 24 (kMinStatsFields): the replicas' watch on their
  // leader (recovery/fd_replica.cc deposes a silent one).
  uint64_t peer_heartbeats = 0;      // authentic heartbeats of peer replicas received
  uint64_t peer_heartbeats_sent = 0;
  uint64_t leader_replica = 0;       // the replica it takes for the leader (itself when it leads; 0: none known)
  uint64_t leader_silence_ms = 0;    // since it last heard that leader (since its start if never; 0 when it leads)
  uint64_t successor = 0;            // 1: next in line, it deposes that leader when silent too long
  uint64_t depositions = 0;          // leaders it deposed

  bool operator==(const ReplicaStats&) const = default;
};

struct ReplicaStatsField {
  std::string_view name;
  uint64_t ReplicaStats::*member;
};

inline constexpr std::array<ReplicaStatsField, 30> kReplicaStatsFields = {{
    {"leader", &ReplicaStats::leader},
    {"uptime_ms", &ReplicaStats::uptime_ms},
    {"record_epoch", &ReplicaStats::record_epoch},
    {"watched_compute", &ReplicaStats::watched_compute},
    {"watched_memory", &ReplicaStats::watched_memory},
    {"suspected", &ReplicaStats::suspected},
    {"failed_latched", &ReplicaStats::failed_latched},
    {"datagrams", &ReplicaStats::datagrams},
    {"heartbeats", &ReplicaStats::heartbeats},
    {"heartbeats_unwatched", &ReplicaStats::heartbeats_unwatched},
    {"heartbeats_foreign", &ReplicaStats::heartbeats_foreign},
    {"reports_received", &ReplicaStats::reports_received},
    {"reports_stale", &ReplicaStats::reports_stale},
    {"reports_sent", &ReplicaStats::reports_sent},
    {"pushes_sent", &ReplicaStats::pushes_sent},
    {"send_errors", &ReplicaStats::send_errors},
    {"failed_detected", &ReplicaStats::failed_detected},
    {"ticks", &ReplicaStats::ticks},
    {"rejected_malformed", &ReplicaStats::rejected_malformed},
    {"rejected_auth", &ReplicaStats::rejected_auth},
    {"rejected_replay", &ReplicaStats::rejected_replay},
    {"rejected_unexpected", &ReplicaStats::rejected_unexpected},
    {"queries_answered", &ReplicaStats::queries_answered},
    {"queries_refused", &ReplicaStats::queries_refused},
    {"peer_heartbeats", &ReplicaStats::peer_heartbeats},
    {"peer_heartbeats_sent", &ReplicaStats::peer_heartbeats_sent},
    {"leader_replica", &ReplicaStats::leader_replica},
    {"leader_silence_ms", &ReplicaStats::leader_silence_ms},
    {"successor", &ReplicaStats::successor},
    {"depositions", &ReplicaStats::depositions},
}};
static_assert(kReplicaStatsFields.size() * sizeof(uint64_t) == sizeof(ReplicaStats),
              "every ReplicaStats field is on the wire, once");
// Fields are only ever appended. The first kMinStatsFields are what every
// replica and tool of this wire version knows (the fields of the first
// answers): queries and answers carry at least these.
inline constexpr size_t kMinStatsFields = 24;
constexpr size_t stats_body_bytes(size_t fields) { return 8 + 8 + 2 + 8 * fields; }
// A query or answer of this build's fields.
inline constexpr size_t kStatsBodyBytes = stats_body_bytes(kReplicaStatsFields.size());
// The most values one datagram holds (room for fields appended later).
inline constexpr size_t kMaxStatsFields = (kMaxDatagram - kHeartbeatHeaderBytes - kHeartbeatMacBytes - 18) / 8;

// The ids one message of `type` can carry: a MemorySuspects report's epoch
// takes four ids' room.
constexpr size_t max_ids_per_message(HeartbeatType type) {
  return type == HeartbeatType::kMemorySuspects ? kMaxPidsPerMessage - 4 : kMaxPidsPerMessage;
}

struct HeartbeatHeader {
  HeartbeatType type = HeartbeatType::kHeartbeat;
  SenderKind kind = SenderKind::kCompute;
  uint64_t cluster_id = 0;
  uint32_t sender = 0;
  uint64_t incarnation = 0;  // random per process start
  uint64_t seq = 0;          // strictly increasing per (kind, sender, incarnation)
  uint64_t sent_ns = 0;      // CLOCK_REALTIME at the sender
};

struct HeartbeatMessage {
  HeartbeatHeader header;
  std::vector<uint16_t> pids;  // kSuspects, kFailedPush, kMemorySuspects; empty for the others
  uint64_t epoch = 0;          // kMemorySuspects only
  // kStats only: the query answered (its header's incarnation and seq) and
  // the replica's state.
  uint64_t query_incarnation = 0;
  uint64_t query_seq = 0;
  ReplicaStats stats;
  // kStatsQuery: the values an answer may carry (kMinStatsFields ..
  // kMaxStatsFields). kStats: the values it carries (the first
  // stats_fields of kReplicaStatsFields; at most this build's when
  // encoding, any count in range when decoding).
  size_t stats_fields = kReplicaStatsFields.size();
};

// Appends the authenticated datagram for `m` to `out`. kInvalidArgument when
// the pids do not fit one datagram (split them) or a heartbeat carries pids.
Status encode_heartbeat(std::string& out, const HeartbeatMessage& m, std::string_view secret);
// The same with `mac` keyed with the secret (HmacSha256(secret)), for
// senders and receivers of a datagram every millisecond: the key is
// processed once instead of per datagram (about 6x cheaper here).
Status encode_heartbeat(std::string& out, const HeartbeatMessage& m, HmacSha256& mac);

// Checks structure, cluster id and mac (constant time). Errors: kProtocol
// (malformed, with what is wrong), kAuthFailed (mac or cluster id).
Result<HeartbeatMessage> decode_heartbeat(std::span<const uint8_t> datagram, std::string_view secret,
                                          uint64_t cluster_id);
Result<HeartbeatMessage> decode_heartbeat(std::span<const uint8_t> datagram, HmacSha256& mac, uint64_t cluster_id);

// Per-receiver replay filter (not thread-safe: one per receiving thread).
//
// A new incarnation must also be newer in time than the last accepted message
// of the sender (its sent_ns is higher): otherwise a recorded message of an
// old incarnation could be replayed after the restart and flip the guard back
// to it, and the two incarnations would then both be "new" alternately.
class ReplayGuard {
 public:
  explicit ReplayGuard(std::chrono::milliseconds max_skew = std::chrono::milliseconds(2000)) : max_skew_(max_skew) {}

  // Accepts `h` (and remembers its seq) or says why not: kProtocol "replayed
  // or reordered (seq N <= last M)", "stale (sent X ms ago)", "from the
  // future". A new incarnation of a known sender is accepted and replaces
  // the old one (a restarted replica or daemon; compute pids are never
  // re-issued).
  Status accept(const HeartbeatHeader& h, uint64_t now_realtime_ns);

 private:
  struct Last {
    uint64_t incarnation = 0;
    uint64_t seq = 0;
    uint64_t sent_ns = 0;
  };
  std::chrono::milliseconds max_skew_;
  std::map<std::pair<SenderKind, uint32_t>, Last> last_;
};

}  // namespace pandora::wire
