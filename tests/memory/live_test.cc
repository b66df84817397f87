// A live pandora-memd under attack and under normal use: bad input before and
// after the handshake, wrong secrets, idle and slow clients, fencing (tcp and
// shm), restart and crash recovery of the region's data.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include <gtest/gtest.h>

#include "common/region_layout.h"
#include "common/transport/client.h"
#include "common/transport/shm_connection.h"
#include "memory/exit_codes.h"
#include "tests/memory/raw_peer.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Runs one posted operation to completion (bounded).
Completion complete_one(Connection& c) {
  c.flush();
  Completion out[1];
  auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    if (c.wait(out, 1000ms) == 1) return out[0];
  }
  ADD_FAILURE() << "operation did not complete within 10 s";
  return Completion{0, OpType::kRead, Errc::kTimeout, 0};
}

Errc write_bytes(Connection& c, uint64_t addr, const std::string& data) {
  c.post_write(addr, data.data(), static_cast<uint32_t>(data.size()), 1);
  return complete_one(c).status;
}

std::string read_bytes(Connection& c, uint64_t addr, uint32_t len, Errc* status = nullptr) {
  std::string buf(len, '\0');
  c.post_read(addr, buf.data(), len, 2);
  Completion done = complete_one(c);
  if (status) *status = done.status;
  return done.status == Errc::kOk ? buf : std::string();
}

Completion faa(Connection& c, uint64_t addr, uint64_t add) {
  c.post_faa(addr, add, 3);
  return complete_one(c);
}

Completion cas(Connection& c, uint64_t addr, uint64_t expected, uint64_t desired) {
  c.post_cas(addr, expected, desired, 4);
  return complete_one(c);
}

std::string control_frame(uint16_t type, uint32_t body_len, std::string_view body = {}) {
  std::string out(12, '\0');
  uint32_t magic = wire::kControlMagic;
  uint16_t version = wire::kControlVersion;
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &type, 2);
  std::memcpy(out.data() + 8, &body_len, 4);
  out.append(body);
  return out;
}

std::string encode(const wire::ControlMessage& m) {
  std::string out;
  wire::encode_control(out, m);
  return out;
}

class LiveTest : public ::testing::Test {
 protected:
  explicit LiveTest(uint32_t threads = 1) : LiveTest(MemdOptions{.threads = threads}) {}
  explicit LiveTest(MemdOptions options) : memd_(dir_.path(), std::move(options)) {}

  void SetUp() override { ASSERT_TRUE(memd_.start()) << memd_.last_error(); }
  // A failing test shows what the daemon said.
  void TearDown() override {
    if (HasFailure() || getenv("MEMD_SHOW_LOG")) std::cerr << "---- pandora-memd log ----\n" << memd_.stderr_text() << "----\n";
  }

  std::unique_ptr<ControlClient> admin() {
    auto c = ControlClient::connect(memd_.endpoint(), memd_.identity(0), 5s);
    EXPECT_TRUE(c) << c.status().to_string();
    return c ? std::move(*c) : nullptr;
  }

  Result<std::unique_ptr<Connection>> connect(uint16_t compute_id, Backend b = Backend::kTcp) {
    ConnectOptions o;
    o.backend = b;
    return open_connection(memd_.endpoint(), memd_.identity(compute_id), o);
  }

  std::unique_ptr<Connection> tcp(uint16_t compute_id) {
    auto c = connect(compute_id);
    EXPECT_TRUE(c) << c.status().to_string();
    return c ? std::move(*c) : nullptr;
  }

  wire::StatsReply stats() {
    auto a = admin();
    if (!a) return {};
    auto s = a->stats();
    EXPECT_TRUE(s) << s.status().to_string();
    return s ? *s : wire::StatsReply{};
  }

  uint64_t cluster() const { return memd_.options().cluster_id; }
  const std::string& secret() const { return memd_.options().secret; }

  TempDir dir_;
  MemdProcess memd_;
};

TEST_F(LiveTest, ServesAllOperationsAndStats) {
  auto a = admin();
  ASSERT_TRUE(a);
  wire::RegionInfo info = a->region();
  EXPECT_EQ(info.cluster_id, cluster());
  EXPECT_EQ(info.node_id, 1u);
  EXPECT_EQ(info.region_size, 16u << 20);
  EXPECT_EQ(info.data_offset, kDataOffset);
  EXPECT_EQ(info.log_size, 1u << 20);
  auto again = a->region_info();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->log_offset, info.log_offset);

  auto c = tcp(5);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data_begin(), kDataOffset);
  EXPECT_EQ(c->data_end(), 16u << 20);
  const uint64_t addr = kDataOffset + 4096;
  EXPECT_EQ(write_bytes(*c, addr, "0123456789abcdef"), Errc::kOk);
  EXPECT_EQ(read_bytes(*c, addr, 16), "0123456789abcdef");
  Completion f = faa(*c, addr + 64, 5);
  EXPECT_EQ(f.status, Errc::kOk);
  EXPECT_EQ(f.value, 0u);
  Completion ok = cas(*c, addr + 64, 5, 42);
  EXPECT_EQ(ok.status, Errc::kOk);
  EXPECT_EQ(ok.value, 5u);
  Completion miss = cas(*c, addr + 64, 5, 7);
  EXPECT_EQ(miss.value, 42u);
  // The last byte of the region is accessible.
  EXPECT_EQ(write_bytes(*c, (16u << 20) - 1, "z"), Errc::kOk);

  auto s = a->stats();
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(s->writes, 2u);
  EXPECT_EQ(s->reads, 1u);
  EXPECT_EQ(s->faa, 1u);
  EXPECT_EQ(s->cas, 2u);
  EXPECT_EQ(s->bytes_written, 17u);
  EXPECT_EQ(s->bytes_read, 16u);
  EXPECT_EQ(s->connections_current, 2u);
  EXPECT_GE(s->connections_total, 2u);
  EXPECT_EQ(s->fenced_nodes, 0u);
  EXPECT_EQ(s->auth_failures, 0u);
}

TEST_F(LiveTest, GarbageBeforeHandshakeIsRefused) {
  auto good = admin();
  ASSERT_TRUE(good);

  RawPeer raw(memd_.endpoint().port);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.send(std::string(64, '\xab')));
  auto hello = raw.recv_control();
  ASSERT_TRUE(hello) << hello.status().to_string();
  EXPECT_TRUE(std::holds_alternative<wire::ServerHello>(*hello));
  auto err = raw.recv_control();
  ASSERT_TRUE(err) << err.status().to_string();
  ASSERT_TRUE(std::holds_alternative<wire::Error>(*err));
  EXPECT_EQ(std::get<wire::Error>(*err).code, Errc::kProtocol);
  EXPECT_TRUE(raw.wait_closed());

  // A well-framed message that is not a Hello.
  RawPeer wrong_type(memd_.endpoint().port);
  ASSERT_TRUE(wrong_type.recv_control());
  ASSERT_TRUE(wrong_type.send(encode(wire::StatsRequest{})));
  err = wrong_type.recv_control();
  ASSERT_TRUE(err && std::holds_alternative<wire::Error>(*err));
  EXPECT_EQ(std::get<wire::Error>(*err).code, Errc::kProtocol);
  EXPECT_TRUE(wrong_type.wait_closed());

  // Oversized body and unknown type are refused from their header alone.
  for (const std::string& frame : {control_frame(2, wire::kMaxControlBody + 1), control_frame(999, 0)}) {
    RawPeer p(memd_.endpoint().port);
    ASSERT_TRUE(p.recv_control());
    ASSERT_TRUE(p.send(frame));
    auto e = p.recv_control();
    ASSERT_TRUE(e && std::holds_alternative<wire::Error>(*e)) << (e ? "" : e.status().to_string());
    EXPECT_EQ(std::get<wire::Error>(*e).code, Errc::kProtocol);
    EXPECT_TRUE(p.wait_closed());
  }

  auto s = good->stats();
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_NE(memd_.stderr_text().find("protocol error"), std::string::npos);
}

TEST_F(LiveTest, WrongSecretOrClusterIsRefusedLoggedAndCounted) {
  ClientIdentity bad = memd_.identity(0);
  bad.secret = "not-the-secret";
  auto c = ControlClient::connect(memd_.endpoint(), bad, 5s);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), Errc::kAuthFailed) << c.status().to_string();

  ClientIdentity other_cluster = memd_.identity(3);
  other_cluster.cluster_id = cluster() + 1;
  auto d = connect(3);
  ASSERT_TRUE(d);  // the right identity works
  auto e = open_connection(memd_.endpoint(), other_cluster, ConnectOptions{});
  ASSERT_FALSE(e);
  EXPECT_EQ(e.status().code(), Errc::kAuthFailed) << e.status().to_string();

  std::string log = memd_.stderr_text();
  EXPECT_NE(log.find("authentication failed for 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong secret"), std::string::npos) << log;
  EXPECT_EQ(stats().auth_failures, 2u);
}

TEST_F(LiveTest, HelloRulesForRolesAndIds) {
  {
    RawPeer p(memd_.endpoint().port);
    auto r = p.handshake(cluster(), secret(), wire::Role::kCompute, 0);
    ASSERT_TRUE(r && std::holds_alternative<wire::Error>(*r));
    EXPECT_EQ(std::get<wire::Error>(*r).code, Errc::kInvalidArgument);
    EXPECT_TRUE(p.wait_closed());
  }
  {
    RawPeer p(memd_.endpoint().port);
    auto r = p.handshake(cluster(), secret(), wire::Role::kAdmin, 4);
    ASSERT_TRUE(r && std::holds_alternative<wire::Error>(*r));
    EXPECT_TRUE(p.wait_closed());
  }
  {
    // A compute session may not fence, and an admin session gets no data
    // plane; both are request errors that keep the session usable.
    RawPeer p(memd_.endpoint().port);
    auto r = p.handshake(cluster(), secret(), wire::Role::kCompute, 4);
    ASSERT_TRUE(r && std::holds_alternative<wire::HelloOk>(*r));
    ASSERT_TRUE(p.send(encode(wire::Fence{{4}})));
    auto e = p.recv_control();
    ASSERT_TRUE(e && std::holds_alternative<wire::Error>(*e));
    EXPECT_EQ(std::get<wire::Error>(*e).code, Errc::kInvalidArgument);
    ASSERT_TRUE(p.send(encode(wire::StatsRequest{})));
    auto s = p.recv_control();
    ASSERT_TRUE(s && std::holds_alternative<wire::StatsReply>(*s));
  }
  {
    RawPeer p(memd_.endpoint().port);
    auto r = p.handshake(cluster(), secret(), wire::Role::kAdmin, 0);
    ASSERT_TRUE(r && std::holds_alternative<wire::HelloOk>(*r));
    ASSERT_TRUE(p.send(encode(wire::SetupTcp{})));
    auto e = p.recv_control();
    ASSERT_TRUE(e && std::holds_alternative<wire::Error>(*e));
    EXPECT_EQ(std::get<wire::Error>(*e).code, Errc::kInvalidArgument);
    // A second Hello inside a session is a protocol error.
    wire::Hello h;
    ASSERT_TRUE(p.send(encode(h)));
    e = p.recv_control();
    ASSERT_TRUE(e && std::holds_alternative<wire::Error>(*e));
    EXPECT_EQ(std::get<wire::Error>(*e).code, Errc::kProtocol);
    EXPECT_TRUE(p.wait_closed());
  }
  EXPECT_EQ(stats().fenced_nodes, 0u);
}

// One attack on the data plane after a valid handshake + SetupTcp.
struct Attack {
  const char* name;
  std::string bytes;
  bool half_close = false;                 // shut our side after sending
  std::optional<Errc> response;            // the status the daemon answers with
  bool malformed = false;                  // counts in malformed_frames
};

TEST_F(LiveTest, BadDataPlaneFramesCloseOnlyThatConnection) {
  auto good = tcp(2);  // opened before the attacks; must survive all of them
  ASSERT_TRUE(good);
  const uint64_t region_size = 16u << 20;
  const uint64_t a = kDataOffset + 8192;
  const std::string pattern(64, 'P');
  ASSERT_EQ(write_bytes(*good, a, pattern), Errc::kOk);
  const std::string evil(64, 'E');

  std::string write_a = request_frame(wire::Op::kWrite, a, 64, 1, 0, 0, evil);
  std::string bad_magic = write_a;
  bad_magic[0] = 'X';
  std::string bad_op = write_a;
  bad_op[2] = 9;
  std::string bad_flags = write_a;
  bad_flags[3] = 1;
  std::string valid_then_bad = request_frame(wire::Op::kWrite, a + 1024, 2, 7, 0, 0, "ok") + bad_magic;

  std::vector<Attack> attacks = {
      {"truncated header", write_a.substr(0, 20), true, std::nullopt, false},
      {"truncated payload", write_a.substr(0, 40 + 32), true, std::nullopt, false},
      {"oversized read", request_frame(wire::Op::kRead, a, wire::kMaxIoBytes + 1, 1), false, std::nullopt, true},
      {"oversized write", request_frame(wire::Op::kWrite, a, 0xffffffffu, 1), false, std::nullopt, true},
      {"unknown op", bad_op, false, std::nullopt, true},
      {"bad magic", bad_magic, false, std::nullopt, true},
      {"nonzero flags", bad_flags, false, std::nullopt, true},
      {"cas of 4 bytes", request_frame(wire::Op::kCas, a, 4, 1, 0, 1), false, std::nullopt, true},
      {"write past the end", request_frame(wire::Op::kWrite, region_size - 8, 16, 1, 0, 0, std::string(16, 'E')),
       false, Errc::kOutOfBounds, false},
      {"write to the fence bitmap", request_frame(wire::Op::kWrite, kFenceBitmapOffset, 8, 1, 0, 0,
                                                  std::string(8, '\xff')), false, Errc::kOutOfBounds, false},
      {"faa on the region header", request_frame(wire::Op::kFaa, 0, 8, 1, 1), false, Errc::kOutOfBounds, false},
      {"address overflow", request_frame(wire::Op::kRead, UINT64_MAX - 3, 8, 1), false, Errc::kOutOfBounds, false},
      {"misaligned cas", request_frame(wire::Op::kCas, a + 4, 8, 1, 0x5050505050505050ull, 1), false,
       Errc::kMisaligned, false},
      {"misaligned faa", request_frame(wire::Op::kFaa, a + 1, 8, 1, 1), false, Errc::kMisaligned, false},
      {"valid then bad", valid_then_bad, false, Errc::kOk, true},
  };

  uint64_t malformed = 0;
  for (const Attack& at : attacks) {
    SCOPED_TRACE(at.name);
    RawPeer p(memd_.endpoint().port);
    ASSERT_TRUE(p.open_data_plane(cluster(), secret(), 9));
    ASSERT_TRUE(p.send(at.bytes));
    if (at.half_close) p.shutdown_write();
    if (at.response) {
      auto r = p.recv_response();
      ASSERT_TRUE(r);
      EXPECT_EQ(r->header.status, static_cast<uint8_t>(*at.response));
      EXPECT_EQ(r->header.tag, at.response == Errc::kOk ? 7u : 1u);
    }
    std::string rest;
    EXPECT_TRUE(p.wait_closed(5s, &rest)) << "the daemon kept the connection open";
    EXPECT_TRUE(rest.empty()) << "unexpected bytes after the error: " << rest.size();
    if (at.malformed) ++malformed;

    // Memory is untouched and the other connection is unaffected.
    EXPECT_EQ(read_bytes(*good, a, 64), pattern);
    EXPECT_EQ(read_bytes(*good, region_size - 8, 8), std::string(8, '\0'));
    EXPECT_EQ(faa(*good, a + 512, 1).status, Errc::kOk);
    ASSERT_EQ(good->health(), Errc::kOk);
  }
  // The request before the bad frame was executed, in order.
  EXPECT_EQ(read_bytes(*good, a + 1024, 2), "ok");

  wire::StatsReply s = stats();
  EXPECT_EQ(s.malformed_frames, malformed);
  EXPECT_EQ(s.fenced_nodes, 0u);
  EXPECT_EQ(s.faa, attacks.size());
  std::string log = memd_.stderr_text();
  EXPECT_NE(log.find("malformed data-plane frame"), std::string::npos) << log;
  EXPECT_NE(log.find("refused (out-of-bounds"), std::string::npos) << log;
  EXPECT_NE(log.find("refused (misaligned"), std::string::npos) << log;
  EXPECT_NE(log.find("in the middle of a frame"), std::string::npos) << log;
}

TEST_F(LiveTest, DataFramesPipelinedBehindSetupTcpAreServed) {
  RawPeer p(memd_.endpoint().port);
  auto r = p.handshake(cluster(), secret(), wire::Role::kCompute, 6);
  ASSERT_TRUE(r && std::holds_alternative<wire::HelloOk>(*r));
  const uint64_t a = kDataOffset + 64;
  ASSERT_TRUE(p.send(encode(wire::SetupTcp{}) + request_frame(wire::Op::kWrite, a, 3, 11, 0, 0, "abc") +
                     request_frame(wire::Op::kRead, a, 3, 12)));
  auto ok = p.recv_control();
  ASSERT_TRUE(ok && std::holds_alternative<wire::Ok>(*ok));
  auto w = p.recv_response();
  ASSERT_TRUE(w);
  EXPECT_EQ(w->header.tag, 11u);
  EXPECT_EQ(w->header.status, 0);
  auto rd = p.recv_response();
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->header.tag, 12u);
  EXPECT_EQ(rd->payload, "abc");
}

TEST_F(LiveTest, IdleAndStalledClientsDoNotBlockOthers) {
  RawPeer idle(memd_.endpoint().port);
  ASSERT_TRUE(idle.ok());
  RawPeer partial(memd_.endpoint().port);
  ASSERT_TRUE(partial.ok());
  ASSERT_TRUE(partial.send(encode(wire::Hello{}).substr(0, 5)));

  auto start = Clock::now();
  auto a = admin();
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->stats());
  auto c = tcp(3);
  ASSERT_TRUE(c);
  EXPECT_EQ(faa(*c, kDataOffset, 1).status, Errc::kOk);
  EXPECT_LT(Clock::now() - start, 3s);

  // Neither ever completes the handshake: both are dropped after 5 s.
  EXPECT_TRUE(idle.wait_closed(15s));
  EXPECT_TRUE(partial.wait_closed(15s));
  EXPECT_NE(memd_.stderr_text().find("no valid Hello within"), std::string::npos);
  EXPECT_EQ(faa(*c, kDataOffset, 1).value, 1u);
}

TEST_F(LiveTest, ClientThatNeverReadsIsThrottledNotServedForever) {
  auto good = tcp(2);
  ASSERT_TRUE(good);
  RawPeer hog(memd_.endpoint().port);
  ASSERT_TRUE(hog.open_data_plane(cluster(), secret(), 4));
  // 64 MiB of READ responses requested; the hog reads none of them yet.
  const uint32_t len = 1u << 20;
  std::string reqs;
  for (uint64_t i = 0; i < 64; ++i) reqs += request_frame(wire::Op::kRead, kDataOffset, len, i);
  ASSERT_TRUE(hog.send(reqs));
  // The same data-plane thread keeps serving the good connection.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(faa(*good, kDataOffset + 8, 1).status, Errc::kOk);
  // The hog gets everything, in order, once it reads.
  for (uint64_t i = 0; i < 64; ++i) {
    auto r = hog.recv_response(10s);
    ASSERT_TRUE(r) << "response " << i;
    EXPECT_EQ(r->header.tag, i);
    EXPECT_EQ(r->payload.size(), len);
  }
}

TEST_F(LiveTest, PipelinedRequestsAllExecuteWhenTheClientReadsAsFastAsTheyCome) {
  // All 256 requests arrive in one send (10 KiB), so after the first read
  // the daemon gets no further EPOLLIN; the 256 MiB of responses exceed what
  // one pump() may produce before yielding to other connections. Every
  // request must still be executed (a daemon that waits for more input
  // before resuming its backlog stalls here).
  RawPeer peer(memd_.endpoint().port);
  ASSERT_TRUE(peer.open_data_plane(cluster(), secret(), 5));
  const uint32_t len = 1u << 20;
  std::string reqs;
  for (uint64_t i = 0; i < 256; ++i) reqs += request_frame(wire::Op::kRead, kDataOffset, len, i);
  ASSERT_TRUE(peer.send(reqs));
  for (uint64_t i = 0; i < 256; ++i) {
    auto r = peer.recv_response(10s);
    ASSERT_TRUE(r) << "response " << i << " never came";
    ASSERT_EQ(r->header.tag, i);
    ASSERT_EQ(r->payload.size(), len);
  }
}

TEST_F(LiveTest, FenceStopsTcpClientAndSurvivesRestart) {
  auto victim = tcp(7);
  auto bystander = tcp(8);
  ASSERT_TRUE(victim && bystander);
  const uint64_t a = kDataOffset + 4096;
  ASSERT_EQ(write_bytes(*victim, a, "before"), Errc::kOk);
  RawPeer raw_victim(memd_.endpoint().port);
  ASSERT_TRUE(raw_victim.open_data_plane(cluster(), secret(), 7, memd_.identity(7).incarnation));

  auto adm = admin();
  ASSERT_TRUE(adm);
  EXPECT_EQ(adm->fence(0).code(), Errc::kInvalidArgument);
  Status f = adm->fence(7);
  ASSERT_TRUE(f) << f.to_string();

  // Existing connections of 7: every operation is refused, memory untouched.
  EXPECT_EQ(write_bytes(*victim, a, "after!"), Errc::kFenced);
  EXPECT_EQ(victim->health(), Errc::kFenced);
  for (uint64_t tag = 1; tag <= 2; ++tag) {
    ASSERT_TRUE(raw_victim.send(request_frame(wire::Op::kWrite, a, 6, tag, 0, 0, "after!")));
    auto r = raw_victim.recv_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header.status, static_cast<uint8_t>(Errc::kFenced));
    EXPECT_EQ(r->header.tag, tag);
  }
  EXPECT_EQ(read_bytes(*bystander, a, 6), "before");
  // New sessions of 7 are refused; 8 is unaffected.
  auto again = connect(7);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), Errc::kFenced) << again.status().to_string();
  EXPECT_EQ(faa(*bystander, a + 64, 1).status, Errc::kOk);
  auto s = adm->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->fenced_nodes, 1u);
  EXPECT_EQ(s->fenced_ops, 3u);
  // Fencing again is harmless.
  EXPECT_TRUE(adm->fence(7));

  adm.reset();
  victim.reset();
  bystander.reset();
  ASSERT_EQ(memd_.stop(), memd::kExitOk);
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  EXPECT_NE(memd_.stderr_text().find("1 compute node(s) are fenced"), std::string::npos);
  again = connect(7);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), Errc::kFenced);
  auto b = tcp(8);
  ASSERT_TRUE(b);
  EXPECT_EQ(read_bytes(*b, a, 6), "before");
}

// Pid recycling: an unfenced id may log in again, but every session it had
// before the fence - an open data plane, or a control session that could
// still ask for one - stays refused.
TEST_F(LiveTest, UnfenceLetsTheIdInAgainButNotItsOldSessions) {
  auto victim = tcp(7);
  ASSERT_TRUE(victim);
  const uint64_t a = kDataOffset + 8192;
  ASSERT_EQ(write_bytes(*victim, a, "before"), Errc::kOk);
  RawPeer old_raw(memd_.endpoint().port);
  ASSERT_TRUE(old_raw.open_data_plane(cluster(), secret(), 7, memd_.identity(7).incarnation));
  // A compute control session with no data plane yet.
  auto old_control = ControlClient::connect(memd_.endpoint(), memd_.identity(7), 5s);
  ASSERT_TRUE(old_control) << old_control.status().to_string();

  auto adm = admin();
  ASSERT_TRUE(adm);
  ASSERT_TRUE(adm->fence(7));
  // Only an admin may unfence, and never id 0.
  auto compute = ControlClient::connect(memd_.endpoint(), memd_.identity(8), 5s);
  ASSERT_TRUE(compute) << compute.status().to_string();
  EXPECT_EQ((*compute)->unfence(7).code(), Errc::kInvalidArgument);
  EXPECT_EQ(adm->unfence(0).code(), Errc::kInvalidArgument);
  ASSERT_TRUE(adm->unfence(7));

  // Old sessions: still refused, memory untouched.
  EXPECT_EQ(write_bytes(*victim, a, "after!"), Errc::kFenced);
  ASSERT_TRUE(old_raw.send(request_frame(wire::Op::kWrite, a, 6, 1, 0, 0, "after!")));
  auto r = old_raw.recv_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header.status, static_cast<uint8_t>(Errc::kFenced));
  auto old_setup = (*old_control)->call(wire::SetupTcp{});
  ASSERT_FALSE(old_setup);
  EXPECT_EQ(old_setup.status().code(), Errc::kFenced);

  // A new session of the recycled id works.
  auto fresh = tcp(7);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(read_bytes(*fresh, a, 6), "before");
  EXPECT_EQ(write_bytes(*fresh, a, "reborn"), Errc::kOk);
  EXPECT_EQ(read_bytes(*fresh, a, 6), "reborn");
  auto st = adm->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->fenced_nodes, 0u);
  // Unfencing an id that is not fenced changes nothing: its live session
  // goes on (a replacement unfences every id that must log in there,
  // its filler's own included).
  ASSERT_TRUE(adm->unfence(7));
  EXPECT_EQ(write_bytes(*fresh, a, "still!"), Errc::kOk);
  EXPECT_EQ(read_bytes(*fresh, a, 6), "still!");
}

// Reaps a forked child in every case, so a failing test leaves nothing behind.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// The byte a forked shm child reports on the pipe `fd` ('r': connected), or
// 0 when it says nothing within 20 s; closes `fd`.
char ready_byte(int fd) {
  pollfd p{fd, POLLIN, 0};
  char byte = 0;
  if (::poll(&p, 1, 20'000) != 1 || ::read(fd, &byte, 1) != 1) byte = 0;
  ::close(fd);
  return byte;
}

TEST_F(LiveTest, FenceKillsShmClient) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const Endpoint ep = memd_.endpoint();
  const ClientIdentity id = memd_.identity(9);
  ChildGuard child;
  child.pid = ::fork();
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    // Child: map the region as compute node 9 and wait to be killed.
    ::close(ready[0]);
    ConnectOptions o;
    o.backend = Backend::kShm;
    auto conn = open_connection(ep, id, o);
    char byte = conn ? 'r' : 'x';
    [[maybe_unused]] ssize_t n = ::write(ready[1], &byte, 1);
    for (int i = 0; i < 600; ++i) ::usleep(100'000);  // at most 60 s
    ::_exit(3);
  }
  ::close(ready[1]);
  ASSERT_EQ(ready_byte(ready[0]), 'r') << "shm child could not open its connection";

  auto adm = admin();
  ASSERT_TRUE(adm);
  Status f = adm->fence(9);
  ASSERT_TRUE(f) << f.to_string();
  // By the time fence() returned, the child must be dead (not just signalled).
  int status = 0;
  pid_t r = ::waitpid(child.pid, &status, WNOHANG);
  ASSERT_EQ(r, child.pid) << "fence returned before the shm client exited";
  child.pid = -1;
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_NE(memd_.stderr_text().find("killed and exited"), std::string::npos);
  auto again = connect(9, Backend::kShm);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), Errc::kFenced);
}

// Issue 9, item 5: the shm set-up used to register (and a fence SIGKILLed)
// whatever pid the client claimed in its Hello.
TEST_F(LiveTest, FenceKillsTheKernelNamedPeerNotTheClaimedPid) {
  // The would-be victim: an innocent process of ours.
  ChildGuard victim;
  victim.pid = ::fork();
  ASSERT_GE(victim.pid, 0);
  if (victim.pid == 0) {
    for (int i = 0; i < 600; ++i) ::usleep(100'000);  // at most 60 s
    ::_exit(0);
  }
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const uint16_t port = memd_.endpoint().port;
  const uint64_t cluster_id = cluster();
  const std::string key = secret();
  const pid_t claimed = victim.pid;
  ChildGuard liar;
  liar.pid = ::fork();
  ASSERT_GE(liar.pid, 0);
  if (liar.pid == 0) {
    // Logs in as compute node 11 claiming the victim's pid, then maps the
    // region through the hand-off.
    ::close(ready[0]);
    char byte = 'x';
    RawPeer peer(port);
    auto hello =
        peer.handshake(cluster_id, key, wire::Role::kCompute, 11, kRawPeerIncarnation, static_cast<uint32_t>(claimed));
    std::string out;
    wire::encode_control(out, wire::SetupShm{});
    if (hello && std::holds_alternative<wire::HelloOk>(*hello) && peer.send(out)) {
      auto info = peer.recv_control();
      if (info && std::holds_alternative<wire::ShmInfo>(*info)) {
        const auto& shm = std::get<wire::ShmInfo>(*info);
        auto fd = ShmConnection::fetch_region_fd(shm, 5s);
        if (fd) {
          auto conn = ShmConnection::open(net::UniqueFd(peer.release()), std::get<wire::HelloOk>(*hello).region, shm,
                                          std::move(fd.value()), 11);
          if (conn) byte = 'r';
        }
      }
    }
    [[maybe_unused]] ssize_t n = ::write(ready[1], &byte, 1);
    for (int i = 0; i < 600; ++i) ::usleep(100'000);
    ::_exit(3);
  }
  ::close(ready[1]);
  ASSERT_EQ(ready_byte(ready[0]), 'r') << "shm child could not open its connection";

  auto adm = admin();
  ASSERT_TRUE(adm);
  Status f = adm->fence(11);
  ASSERT_TRUE(f) << f.to_string();
  int status = 0;
  ASSERT_EQ(::waitpid(liar.pid, &status, WNOHANG), liar.pid) << "the process that mapped the region survived";
  liar.pid = -1;
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(::waitpid(victim.pid, &status, WNOHANG), 0) << "the fence killed the pid the client claimed";
}

// Issue 9, item 2: clients used to map whatever file the region's path named.
TEST_F(LiveTest, ShmClientMapsTheDaemonsRegionNotALookAlikeAtItsPath) {
  const uint64_t a = kDataOffset + 40960;
  const std::string path = memd_.region_path();
  // A byte-identical look-alike swapped in at the path while the daemon runs.
  const std::string moved = path + ".real";
  ASSERT_EQ(::rename(path.c_str(), moved.c_str()), 0);
  {
    std::ifstream in(moved, std::ios::binary);
    std::ofstream out(path, std::ios::binary);
    out << in.rdbuf();
  }
  auto shm = connect(12, Backend::kShm);
  ASSERT_TRUE(shm) << shm.status().to_string();
  ASSERT_EQ(write_bytes(**shm, a, "through-shm"), Errc::kOk);
  // The daemon (over tcp) sees the write: the client mapped the real region.
  auto t = tcp(13);
  ASSERT_TRUE(t);
  EXPECT_EQ(read_bytes(*t, a, 11), "through-shm");
  std::ifstream fake(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(fake)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), a + 11);
  EXPECT_EQ(bytes.find("through-shm"), std::string::npos) << "the look-alike at the path was mapped";
  ASSERT_EQ(::rename(moved.c_str(), path.c_str()), 0);
}

// A hand-off token is single use and only for the session that asked.
TEST_F(LiveTest, ShmTokensAreSingleUse) {
  RawPeer peer(memd_.endpoint().port);
  auto hello = peer.handshake(cluster(), secret(), wire::Role::kCompute, 14);
  ASSERT_TRUE(hello && std::holds_alternative<wire::HelloOk>(*hello));
  ASSERT_TRUE(peer.send(encode(wire::SetupShm{})));
  auto info = peer.recv_control();
  ASSERT_TRUE(info && std::holds_alternative<wire::ShmInfo>(*info));
  wire::ShmInfo shm = std::get<wire::ShmInfo>(*info);
  auto first = ShmConnection::fetch_region_fd(shm, 5s);
  ASSERT_TRUE(first) << first.status().to_string();
  auto second = ShmConnection::fetch_region_fd(shm, 5s);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.status().code(), Errc::kAuthFailed) << second.status().to_string();
  wire::ShmInfo guessed = shm;
  guessed.token[0] ^= 1;
  auto third = ShmConnection::fetch_region_fd(guessed, 5s);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.status().code(), Errc::kAuthFailed);
}

TEST_F(LiveTest, DataSurvivesCleanRestartAndKill9) {
  const uint64_t a = kDataOffset + 12288;
  {
    auto c = tcp(5);
    ASSERT_TRUE(c);
    ASSERT_EQ(write_bytes(*c, a, "clean-restart"), Errc::kOk);
  }
  ASSERT_EQ(memd_.stop(), memd::kExitOk);
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  EXPECT_NE(memd_.stderr_text().find("start #2 after a clean shutdown (unclean starts: 0)"), std::string::npos)
      << memd_.stderr_text();
  {
    auto c = tcp(5);
    ASSERT_TRUE(c);
    EXPECT_EQ(read_bytes(*c, a, 13), "clean-restart");
    ASSERT_EQ(write_bytes(*c, a + 4096, "acked-then-crash"), Errc::kOk);
    ASSERT_EQ(faa(*c, a + 8192, 41).status, Errc::kOk);
    ASSERT_EQ(cas(*c, a + 8200, 0, 0xfeed).value, 0u);
    // kill -9 right after the acknowledgements.
    memd_.kill9();
  }
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  EXPECT_NE(memd_.stderr_text().find("did not shut down cleanly (unclean starts: 1)"), std::string::npos)
      << memd_.stderr_text();
  auto c = tcp(5);
  ASSERT_TRUE(c);
  EXPECT_EQ(read_bytes(*c, a, 13), "clean-restart");
  EXPECT_EQ(read_bytes(*c, a + 4096, 16), "acked-then-crash");
  EXPECT_EQ(faa(*c, a + 8192, 0).value, 41u);
  EXPECT_EQ(cas(*c, a + 8200, 0, 1).value, 0xfeedu);
}

TEST_F(LiveTest, SigtermWithClientsConnectedExitsCleanly) {
  auto c = tcp(5);
  auto a = admin();
  RawPeer idle(memd_.endpoint().port);
  ASSERT_TRUE(c && a && idle.ok());
  ASSERT_EQ(faa(*c, kDataOffset, 1).status, Errc::kOk);
  auto start = Clock::now();
  EXPECT_EQ(memd_.stop(), memd::kExitOk);
  EXPECT_LT(Clock::now() - start, 5s);
  std::string log = memd_.stderr_text();
  EXPECT_NE(log.find("SIGTERM received"), std::string::npos) << log;
  EXPECT_NE(log.find("served 0 reads, 0 writes, 0 cas, 1 faa"), std::string::npos) << log;
  // The client learns the connection is gone.
  c->post_faa(kDataOffset, 1, 9);
  Completion done = complete_one(*c);
  EXPECT_NE(done.status, Errc::kOk);
}

// --busy-poll-us: data-plane threads poll without sleeping for a while
// after each event. Requests are served as before, and a thread that is
// spinning still stops at SIGTERM.
class LiveBusyPollTest : public LiveTest {
 protected:
  LiveBusyPollTest() : LiveTest(MemdOptions{.threads = 2, .extra_args = {"--busy-poll-us", "100000"}}) {}
};

TEST_F(LiveBusyPollTest, ServesRequestsAndStopsWhileSpinning) {
  const uint64_t word = kDataOffset + 2048;
  auto c = tcp(5);
  ASSERT_TRUE(c);
  for (uint64_t i = 0; i < 200; ++i) ASSERT_EQ(faa(*c, word, 1).value, i);
  // The thread that served the last request spins for 100 ms from now on.
  const auto t0 = Clock::now();
  EXPECT_EQ(memd_.stop(), memd::kExitOk) << memd_.stderr_text();
  EXPECT_LT(Clock::now() - t0, 10s) << "a spinning data-plane thread delayed the shutdown";
  EXPECT_NE(memd_.stderr_text().find("served 0 reads, 0 writes, 0 cas, 200 faa"), std::string::npos)
      << memd_.stderr_text();
}

class LiveMultiThreadTest : public LiveTest {
 protected:
  LiveMultiThreadTest() : LiveTest(4) {}
};

TEST_F(LiveMultiThreadTest, ConcurrentAtomicsAcrossDataPlaneThreads) {
  const uint64_t counter = kDataOffset + 256;
  const uint64_t lock_word = kDataOffset + 512;
  constexpr int kClients = 8, kOps = 300;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::atomic<uint64_t> cas_wins{0};
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto c = open_connection(memd_.endpoint(), memd_.identity(static_cast<uint16_t>(10 + t)), ConnectOptions{});
      if (!c) {
        ++failures;
        return;
      }
      Connection& conn = **c;
      for (int i = 0; i < kOps; ++i) {
        conn.post_faa(counter, 1, static_cast<uint64_t>(i));
        // Everyone tries to move the word from i*kClients+t's view; exactly
        // one CAS per observed value can win.
        conn.post_cas(lock_word, static_cast<uint64_t>(i), static_cast<uint64_t>(i + 1), 1u << 20);
        conn.flush();
        Completion out[2];
        size_t got = 0;
        auto deadline = Clock::now() + 10s;
        while (got < 2 && Clock::now() < deadline) got += conn.wait(std::span(out).subspan(got), 1000ms);
        if (got != 2 || out[0].status != Errc::kOk || out[1].status != Errc::kOk) {
          ++failures;
          return;
        }
        if (out[1].value == static_cast<uint64_t>(i)) ++cas_wins;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  auto c = tcp(30);
  ASSERT_TRUE(c);
  EXPECT_EQ(faa(*c, counter, 0).value, static_cast<uint64_t>(kClients * kOps));
  // Every successful CAS advanced the word by one.
  EXPECT_EQ(faa(*c, lock_word, 0).value, cas_wins.load());
  wire::StatsReply s = stats();
  EXPECT_EQ(s.faa, static_cast<uint64_t>(kClients * kOps) + 2);
  EXPECT_EQ(s.cas, static_cast<uint64_t>(kClients * kOps));
}

TEST_F(LiveMultiThreadTest, FenceIsSynchronousUnderLoad) {
  // Four connections of compute node 7 (spread over the data-plane threads)
  // pipeline FAAs as fast as they can while node 7 is fenced. When fence()
  // returns, the word must hold exactly the FAAs acknowledged as ok: none
  // executed later, none lost.
  const uint64_t word = kDataOffset + 1024;
  constexpr int kConns = 4, kWindow = 32;
  std::vector<std::unique_ptr<Connection>> victims;
  for (int i = 0; i < kConns; ++i) {
    victims.push_back(tcp(7));
    ASSERT_TRUE(victims.back());
  }
  std::atomic<uint64_t> acked{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (auto& v : victims) {
    threads.emplace_back([&, conn = v.get()] {
      size_t in_flight = 0;
      auto deadline = Clock::now() + 30s;
      while (Clock::now() < deadline) {
        while (in_flight < kWindow) {
          conn->post_faa(word, 1, 0);
          ++in_flight;
        }
        conn->flush();
        Completion out[kWindow];
        size_t n = conn->wait(out, 1000ms);
        for (size_t i = 0; i < n; ++i) {
          --in_flight;
          if (out[i].status == Errc::kOk) {
            acked.fetch_add(1);
          } else if (out[i].status != Errc::kFenced) {
            errors.fetch_add(1);
          }
        }
        if (conn->health() != Errc::kOk) return;
      }
      errors.fetch_add(1);  // never saw the fence
    });
  }
  auto bystander = tcp(8);
  ASSERT_TRUE(bystander);
  auto adm = admin();
  ASSERT_TRUE(adm);
  auto deadline = Clock::now() + 20s;
  while (acked.load() < 2000 && Clock::now() < deadline) std::this_thread::yield();
  Status f = adm->fence(7);
  uint64_t at_fence = faa(*bystander, word, 0).value;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(f) << f.to_string();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(at_fence, 2000u);
  EXPECT_EQ(faa(*bystander, word, 0).value, at_fence) << "memory changed after fence() returned";
  EXPECT_EQ(at_fence, acked.load()) << "executed FAAs and acknowledged FAAs differ";
}

}  // namespace
}  // namespace pandora::testing
