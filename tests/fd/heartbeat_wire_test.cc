// The failure detector's datagrams (common/wire/heartbeat.h): round trips,
// strict refusal of every corruption and truncation, authentication, and the
// replay guard.
#include "common/wire/heartbeat.h"

#include "common/checksum.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace pandora::wire {
namespace {

constexpr uint64_t kCluster = 0x5eed;
constexpr std::string_view kSecret = "fd-test-secret";
constexpr uint64_t kNow = 1'700'000'000'000'000'000ull;  // a plausible CLOCK_REALTIME

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

HeartbeatMessage message(HeartbeatType type, SenderKind kind, std::vector<uint16_t> pids = {}) {
  HeartbeatMessage m;
  m.header = HeartbeatHeader{type, kind, kCluster, 42, 0x1122334455667788ull, 9, kNow};
  m.pids = std::move(pids);
  return m;
}

std::string encoded(const HeartbeatMessage& m, std::string_view secret = kSecret) {
  std::string out;
  Status s = encode_heartbeat(out, m, secret);
  EXPECT_TRUE(s) << s.to_string();
  return out;
}

bool is_stats_type(HeartbeatType t) { return t == HeartbeatType::kStatsQuery || t == HeartbeatType::kStats; }

void expect_same(const HeartbeatMessage& a, const HeartbeatMessage& b) {
  EXPECT_EQ(a.header.type, b.header.type);
  EXPECT_EQ(a.header.kind, b.header.kind);
  EXPECT_EQ(a.header.cluster_id, b.header.cluster_id);
  EXPECT_EQ(a.header.sender, b.header.sender);
  EXPECT_EQ(a.header.incarnation, b.header.incarnation);
  EXPECT_EQ(a.header.seq, b.header.seq);
  EXPECT_EQ(a.header.sent_ns, b.header.sent_ns);
  EXPECT_EQ(a.pids, b.pids);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.query_incarnation, b.query_incarnation);
  EXPECT_EQ(a.query_seq, b.query_seq);
  EXPECT_EQ(a.stats, b.stats);
  if (is_stats_type(a.header.type)) EXPECT_EQ(a.stats_fields, b.stats_fields);
}

HeartbeatMessage memory_suspects(std::vector<uint16_t> ids, uint64_t epoch) {
  HeartbeatMessage m = message(HeartbeatType::kMemorySuspects, SenderKind::kReplica, std::move(ids));
  m.epoch = epoch;
  return m;
}

// An answer whose every value differs (a field encoded twice or skipped
// would not round-trip).
HeartbeatMessage stats_answer() {
  HeartbeatMessage m = message(HeartbeatType::kStats, SenderKind::kReplica);
  m.query_incarnation = 0xa1a2a3a4a5a6a7a8;
  m.query_seq = 77;
  uint64_t v = 0x0100000000000001;
  for (const ReplicaStatsField& f : kReplicaStatsFields) m.stats.*f.member = v++ * 3;
  return m;
}

// As a tool or replica that knows only the first kMinStatsFields sends them.
HeartbeatMessage older_stats(HeartbeatType type) {
  HeartbeatMessage m = type == HeartbeatType::kStats ? stats_answer() : message(type, SenderKind::kAdmin);
  m.stats_fields = kMinStatsFields;
  for (size_t i = kMinStatsFields; i < kReplicaStatsFields.size(); ++i) m.stats.*kReplicaStatsFields[i].member = 0;
  return m;
}

std::vector<HeartbeatMessage> samples() {
  std::vector<uint16_t> many;
  for (size_t i = 0; i < kMaxPidsPerMessage; ++i) many.push_back(static_cast<uint16_t>(65535 - i));
  return {message(HeartbeatType::kHeartbeat, SenderKind::kCompute),
          message(HeartbeatType::kHeartbeat, SenderKind::kMemory),
          message(HeartbeatType::kSuspects, SenderKind::kReplica, {}),
          message(HeartbeatType::kSuspects, SenderKind::kReplica, {1, 7, 65535}),
          memory_suspects({3}, 0xfedcba9876543210),
          memory_suspects({}, 0),
          message(HeartbeatType::kFailedPush, SenderKind::kReplica, many),
          message(HeartbeatType::kStatsQuery, SenderKind::kAdmin),
          stats_answer(),
          older_stats(HeartbeatType::kStatsQuery),
          older_stats(HeartbeatType::kStats)};
}

size_t body_bytes(const HeartbeatMessage& m) {
  switch (m.header.type) {
    case HeartbeatType::kHeartbeat: return 0;
    case HeartbeatType::kStatsQuery:
    case HeartbeatType::kStats: return stats_body_bytes(m.stats_fields);
    case HeartbeatType::kMemorySuspects: return 8 + 2 + 2 * m.pids.size();
    default: return 2 + 2 * m.pids.size();
  }
}

// Signs `d` again after a test changed bytes before the mac.
std::string resigned(std::string d, std::string_view secret = kSecret) {
  d.resize(d.size() - kHeartbeatMacBytes);
  const Digest256 mac = hmac_sha256(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(secret.data()), secret.size()), bytes(d));
  d.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return d;
}

TEST(HeartbeatWire, RoundTripsEveryType) {
  for (const HeartbeatMessage& m : samples()) {
    const std::string d = encoded(m);
    EXPECT_EQ(d.size(), kHeartbeatHeaderBytes + kHeartbeatMacBytes + body_bytes(m));
    EXPECT_LE(d.size(), kMaxDatagram);
    Result<HeartbeatMessage> back = decode_heartbeat(bytes(d), kSecret, kCluster);
    ASSERT_TRUE(back) << back.status().to_string();
    expect_same(*back, m);
  }
}

// A keyed mac (one HmacSha256 reused for every datagram, as senders and
// receivers hold one) gives the very bytes of the one-off form, datagram
// after datagram, and verifies them; keyed with another secret it refuses
// them, and a refusal leaves it fit for the next datagram.
TEST(HeartbeatWire, AKeyedMacEncodesAndVerifiesAsTheSecretDoes) {
  HmacSha256 sender(bytes(std::string(kSecret)));
  HmacSha256 receiver(bytes(std::string(kSecret)));
  HmacSha256 stranger(bytes(std::string("another-secret")));
  for (int round = 0; round < 2; ++round) {
    for (const HeartbeatMessage& m : samples()) {
      std::string d;
      ASSERT_TRUE(encode_heartbeat(d, m, sender));
      EXPECT_EQ(d, encoded(m));
      EXPECT_EQ(decode_heartbeat(bytes(d), stranger, kCluster).status().code(), Errc::kAuthFailed);
      Result<HeartbeatMessage> back = decode_heartbeat(bytes(d), receiver, kCluster);
      ASSERT_TRUE(back) << back.status().to_string();
      expect_same(*back, m);
      std::string bad = d;
      bad[bad.size() - 1] ^= 1;
      EXPECT_EQ(decode_heartbeat(bytes(bad), receiver, kCluster).status().code(), Errc::kAuthFailed);
    }
  }
}

TEST(HeartbeatWire, LayoutIsLittleEndianAsDocumented) {
  const std::string d = encoded(message(HeartbeatType::kHeartbeat, SenderKind::kCompute));
  ASSERT_EQ(d.size(), 78u);
  EXPECT_EQ(d.substr(0, 4), "PHBT");
  EXPECT_EQ(static_cast<uint8_t>(d[4]), 2);  // version
  EXPECT_EQ(static_cast<uint8_t>(d[6]), 1);  // type heartbeat
  EXPECT_EQ(static_cast<uint8_t>(d[7]), 1);  // kind compute
  EXPECT_EQ(static_cast<uint8_t>(d[16]), 42);  // sender id
  EXPECT_EQ(static_cast<uint8_t>(d[20]), 0x88);  // incarnation, low byte first
}

TEST(HeartbeatWire, EncoderRefusesWhatDoesNotFit) {
  std::string out;
  EXPECT_EQ(encode_heartbeat(out, message(HeartbeatType::kHeartbeat, SenderKind::kCompute, {1}), kSecret).code(),
            Errc::kInvalidArgument);
  std::vector<uint16_t> too_many(kMaxPidsPerMessage + 1, 5);
  EXPECT_EQ(encode_heartbeat(out, message(HeartbeatType::kFailedPush, SenderKind::kReplica, too_many), kSecret).code(),
            Errc::kInvalidArgument);
  // The epoch takes room in a memory suspicion report, and only there.
  std::vector<uint16_t> full(kMaxPidsPerMessage, 5);
  EXPECT_EQ(encode_heartbeat(out, memory_suspects(full, 1), kSecret).code(), Errc::kInvalidArgument);
  std::string fits;
  EXPECT_TRUE(encode_heartbeat(
      fits, memory_suspects(std::vector<uint16_t>(max_ids_per_message(HeartbeatType::kMemorySuspects), 5), 1), kSecret));
  HeartbeatMessage suspects = message(HeartbeatType::kSuspects, SenderKind::kReplica, {1});
  suspects.epoch = 3;
  EXPECT_EQ(encode_heartbeat(out, suspects, kSecret).code(), Errc::kInvalidArgument);
  EXPECT_TRUE(out.empty());
}

TEST(HeartbeatWire, EverySingleByteCorruptionIsRefused) {
  for (const HeartbeatMessage& m : samples()) {
    const std::string d = encoded(m);
    for (size_t i = 0; i < d.size(); ++i) {
      for (uint8_t flip : {0x01, 0x80, 0xff}) {
        std::string bad = d;
        bad[i] = static_cast<char>(bad[i] ^ flip);
        Result<HeartbeatMessage> r = decode_heartbeat(bytes(bad), kSecret, kCluster);
        ASSERT_FALSE(r) << "byte " << i << " ^ " << int(flip) << " accepted";
        EXPECT_TRUE(r.status().code() == Errc::kProtocol || r.status().code() == Errc::kAuthFailed);
      }
    }
  }
}

TEST(HeartbeatWire, EveryTruncationAndExtensionIsRefused) {
  for (const HeartbeatMessage& m : samples()) {
    const std::string d = encoded(m);
    for (size_t n = 0; n < d.size(); ++n) {
      Result<HeartbeatMessage> r = decode_heartbeat(bytes(d).first(n), kSecret, kCluster);
      ASSERT_FALSE(r) << "truncated to " << n << " of " << d.size() << " accepted";
      EXPECT_TRUE(r.status().code() == Errc::kProtocol || r.status().code() == Errc::kAuthFailed);
    }
    EXPECT_EQ(decode_heartbeat(bytes(d + '\0'), kSecret, kCluster).status().code(), Errc::kProtocol);
  }
}

TEST(HeartbeatWire, WrongSecretOrClusterIsAuthFailed) {
  const std::string d = encoded(message(HeartbeatType::kSuspects, SenderKind::kReplica, {5}));
  EXPECT_EQ(decode_heartbeat(bytes(d), "another-secret", kCluster).status().code(), Errc::kAuthFailed);
  EXPECT_EQ(decode_heartbeat(bytes(d), "", kCluster).status().code(), Errc::kAuthFailed);
  EXPECT_EQ(decode_heartbeat(bytes(d), kSecret, kCluster + 1).status().code(), Errc::kAuthFailed);
  // Signed with another secret but otherwise identical.
  const std::string forged = encoded(message(HeartbeatType::kSuspects, SenderKind::kReplica, {5}), "guess");
  EXPECT_EQ(decode_heartbeat(bytes(forged), kSecret, kCluster).status().code(), Errc::kAuthFailed);
}

TEST(HeartbeatWire, MalformedMessagesSayWhy) {
  // A properly signed datagram whose body contradicts its type: the mac is
  // right, the structure is not.
  std::string d = encoded(message(HeartbeatType::kSuspects, SenderKind::kReplica, {5, 6}));
  d[6] = static_cast<char>(HeartbeatType::kHeartbeat);
  Result<HeartbeatMessage> r = decode_heartbeat(bytes(d), kSecret, kCluster);
  EXPECT_EQ(r.status().code(), Errc::kProtocol);
  EXPECT_NE(r.status().message().find("body"), std::string::npos) << r.status().message();
  std::string big(kMaxDatagram + 1, 'x');
  EXPECT_EQ(decode_heartbeat(bytes(big), kSecret, kCluster).status().code(), Errc::kProtocol);
  // A compute suspicion report relabelled as a memory one: no room for the
  // epoch its body must start with.
  d = encoded(message(HeartbeatType::kSuspects, SenderKind::kReplica, {}));
  d[6] = static_cast<char>(HeartbeatType::kMemorySuspects);
  r = decode_heartbeat(bytes(d), kSecret, kCluster);
  EXPECT_EQ(r.status().code(), Errc::kProtocol);
  EXPECT_NE(r.status().message().find("epoch"), std::string::npos) << r.status().message();
  // An answer relabelled as a query: a query's body is padding only.
  d = encoded(stats_answer());
  d[6] = static_cast<char>(HeartbeatType::kStatsQuery);
  r = decode_heartbeat(bytes(resigned(d)), kSecret, kCluster);
  EXPECT_EQ(r.status().code(), Errc::kProtocol);
  EXPECT_NE(r.status().message().find("non-zero"), std::string::npos) << r.status().message();
  // An answer with one value fewer than this version has (a count that
  // does not match) or a body cut short.
  d = encoded(stats_answer());
  d[kHeartbeatHeaderBytes + 16] = static_cast<char>(kReplicaStatsFields.size() - 1);
  r = decode_heartbeat(bytes(resigned(d)), kSecret, kCluster);
  EXPECT_EQ(r.status().code(), Errc::kProtocol);
  EXPECT_NE(r.status().message().find("values"), std::string::npos) << r.status().message();
}

// A query must be at least as long as its answer: a replayed query with a
// forged source address would otherwise make a replica an amplifier.
TEST(HeartbeatWire, AStatsQueryIsAsLongAsItsAnswer) {
  const std::string query = encoded(message(HeartbeatType::kStatsQuery, SenderKind::kAdmin));
  const std::string answer = encoded(stats_answer());
  EXPECT_EQ(query.size(), answer.size());
  HeartbeatMessage with_pids = message(HeartbeatType::kStatsQuery, SenderKind::kAdmin, {1});
  std::string out;
  EXPECT_EQ(encode_heartbeat(out, with_pids, kSecret).code(), Errc::kInvalidArgument);
}

// Stats fields are appended over time, and tools and replicas of one wire
// version may know different numbers of them: a query says how many values
// its answer may carry, an answer how many it carries (at least the first
// kMinStatsFields). Values past what the receiver knows are skipped.
TEST(HeartbeatWire, StatsQueriesAndAnswersCarryTheFieldsBothEndsKnow) {
  // Encoding: a query from kMinStatsFields to kMaxStatsFields values' room,
  // an answer up to this build's fields.
  std::string out;
  HeartbeatMessage q = message(HeartbeatType::kStatsQuery, SenderKind::kAdmin);
  q.stats_fields = kMaxStatsFields;
  ASSERT_TRUE(encode_heartbeat(out, q, kSecret));
  EXPECT_LE(out.size(), kMaxDatagram);
  Result<HeartbeatMessage> back = decode_heartbeat(bytes(out), kSecret, kCluster);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->stats_fields, kMaxStatsFields);
  for (size_t n : {kMinStatsFields - 1, kMaxStatsFields + 1}) {
    q.stats_fields = n;
    out.clear();
    EXPECT_EQ(encode_heartbeat(out, q, kSecret).code(), Errc::kInvalidArgument) << n;
  }
  HeartbeatMessage a = stats_answer();
  a.stats_fields = kReplicaStatsFields.size() + 1;
  out.clear();
  EXPECT_EQ(encode_heartbeat(out, a, kSecret).code(), Errc::kInvalidArgument) << "values this build does not have";

  // An answer of a later build, two values more: the known ones decode.
  std::string later = encoded(stats_answer());
  later.resize(later.size() - kHeartbeatMacBytes);
  const size_t count = kReplicaStatsFields.size() + 2;
  later[kHeartbeatHeaderBytes + 16] = static_cast<char>(count & 0xff);
  later[kHeartbeatHeaderBytes + 17] = static_cast<char>(count >> 8);
  later.append(16, '\x7f');
  const size_t body = stats_body_bytes(count);
  later[kHeartbeatHeaderBytes - 2] = static_cast<char>(body & 0xff);
  later[kHeartbeatHeaderBytes - 1] = static_cast<char>(body >> 8);
  later.append(kHeartbeatMacBytes, '\0');
  back = decode_heartbeat(bytes(resigned(later)), kSecret, kCluster);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->stats_fields, count);
  EXPECT_EQ(back->stats, stats_answer().stats);

  // Bodies that are not 18 + 8 x n bytes for n >= kMinStatsFields.
  for (const size_t n : {stats_body_bytes(kMinStatsFields - 1), stats_body_bytes(kMinStatsFields) + 3}) {
    std::string d = encoded(message(HeartbeatType::kStatsQuery, SenderKind::kAdmin));
    d.resize(kHeartbeatHeaderBytes);
    d[kHeartbeatHeaderBytes - 2] = static_cast<char>(n & 0xff);
    d[kHeartbeatHeaderBytes - 1] = static_cast<char>(n >> 8);
    d.append(n, '\0');
    d.append(kHeartbeatMacBytes, '\0');
    Result<HeartbeatMessage> r = decode_heartbeat(bytes(resigned(d)), kSecret, kCluster);
    EXPECT_EQ(r.status().code(), Errc::kProtocol) << n;
    EXPECT_NE(r.status().message().find("18 + 8 x n"), std::string::npos) << r.status().message();
  }
}

HeartbeatHeader header(uint64_t incarnation, uint64_t seq, uint64_t sent_ns, uint32_t sender = 42,
                       SenderKind kind = SenderKind::kCompute) {
  return HeartbeatHeader{HeartbeatType::kHeartbeat, kind, kCluster, sender, incarnation, seq, sent_ns};
}

TEST(ReplayGuard, RefusesReplayedAndReorderedSeq) {
  ReplayGuard g;
  EXPECT_TRUE(g.accept(header(1, 10, kNow), kNow));
  Status replay = g.accept(header(1, 10, kNow), kNow);
  EXPECT_EQ(replay.code(), Errc::kProtocol);
  EXPECT_NE(replay.message().find("replayed"), std::string::npos) << replay.message();
  EXPECT_FALSE(g.accept(header(1, 9, kNow), kNow));
  EXPECT_TRUE(g.accept(header(1, 12, kNow), kNow));
  EXPECT_FALSE(g.accept(header(1, 11, kNow), kNow));  // reordered: 11 after 12
  EXPECT_TRUE(g.accept(header(1, 13, kNow), kNow));
  // Other senders and kinds have their own sequence.
  EXPECT_TRUE(g.accept(header(1, 1, kNow, 43), kNow));
  EXPECT_TRUE(g.accept(header(1, 1, kNow, 42, SenderKind::kMemory), kNow));
}

TEST(ReplayGuard, RefusesStaleAndFutureMessages) {
  ReplayGuard g(std::chrono::milliseconds(2000));
  const uint64_t s = 1'000'000'000;
  Status stale = g.accept(header(1, 1, kNow - 3 * s), kNow);
  EXPECT_EQ(stale.code(), Errc::kProtocol);
  EXPECT_NE(stale.message().find("stale"), std::string::npos) << stale.message();
  Status future = g.accept(header(1, 2, kNow + 3 * s), kNow);
  EXPECT_NE(future.message().find("future"), std::string::npos) << future.message();
  EXPECT_FALSE(g.accept(header(1, 3, 0), kNow));
  EXPECT_FALSE(g.accept(header(1, 4, UINT64_MAX), kNow));  // no overflow into "fresh"
  // Within the skew either way.
  EXPECT_TRUE(g.accept(header(1, 5, kNow - s), kNow));
  EXPECT_TRUE(g.accept(header(1, 6, kNow + s), kNow));
}

TEST(ReplayGuard, NewIncarnationIsAcceptedAndOldOneCannotComeBack) {
  ReplayGuard g;
  EXPECT_TRUE(g.accept(header(111, 500, kNow), kNow));
  // The process restarted: new random incarnation, seq from 1.
  EXPECT_TRUE(g.accept(header(222, 1, kNow + 1000), kNow + 1000));
  EXPECT_TRUE(g.accept(header(222, 2, kNow + 2000), kNow + 2000));
  // A recorded message of the old incarnation, replayed after the restart.
  EXPECT_FALSE(g.accept(header(111, 501, kNow + 500), kNow + 3000));
  EXPECT_TRUE(g.accept(header(222, 3, kNow + 4000), kNow + 4000));
}

// The fuzz seeds are written by make_seeds.py with Python's hmac, struct
// and hashlib, independently of this codec: decoding them cross-checks the
// layout and the mac against a second implementation.
TEST(HeartbeatWire, DecodesTheIndependentlyWrittenSeeds) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(PANDORA_FUZZ_SEED_DIR "/heartbeat")) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Result<HeartbeatMessage> m = decode_heartbeat(bytes(d), "fuzz-secret", 7);
    ASSERT_TRUE(m) << entry.path() << ": " << m.status().to_string();
    EXPECT_EQ(m->header.seq >= 1, true);
    std::string again;
    ASSERT_TRUE(encode_heartbeat(again, *m, "fuzz-secret"));
    EXPECT_EQ(again, d) << entry.path();
    ++n;
  }
  EXPECT_GE(n, 9u);
}

}  // namespace
}  // namespace pandora::wire
