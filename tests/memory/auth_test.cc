// Authentication of both ends (issue 9, items 1 and 8): a client refuses a
// daemon that cannot prove it knows the cluster secret, a failed login
// learns nothing about the cluster, a compute id is served to one live
// process at a time, and the optional tcp frame MAC refuses changed frames.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "common/region_layout.h"
#include "common/transport/client.h"
#include "tests/memory/raw_peer.h"
#include "tests/support/fake_daemon.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {
namespace {

// What a peer of protocol version 1 is told (names both versions).
std::string version_mismatch_text() {
  return "version 1, this build speaks " + std::to_string(wire::kControlVersion);
}

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Mode = FakeDaemon::Mode;

constexpr uint64_t kCluster = 0x5eed;  // MemdOptions' default

ClientIdentity compute_identity(uint16_t compute_id, const std::string& secret) {
  return ClientIdentity{kCluster, secret, wire::Role::kCompute, compute_id, new_incarnation()};
}

// ------------------------------------------------------------ fake daemons

class FakeDaemonTest : public ::testing::TestWithParam<Mode> {};

TEST_P(FakeDaemonTest, ClientRefusesADaemonWithoutTheSecretAndSendsItNothing) {
  FakeDaemon fake(GetParam(), kCluster);
  ASSERT_TRUE(fake.ok());
  const ClientIdentity me = compute_identity(3, "test-secret-0123456789");

  auto control = ControlClient::connect(fake.endpoint(), me, 5s);
  ASSERT_FALSE(control) << "the client accepted a daemon that does not know the secret";
  EXPECT_EQ(control.status().code(), Errc::kAuthFailed) << control.status().to_string();
  const std::string want = "the memory daemon at " + fake.endpoint().to_string() +
                           " did not prove knowledge of the cluster secret: not our daemon, or a different secret";
  EXPECT_NE(control.status().message().find(want), std::string::npos) << control.status().message();

  for (Backend b : {Backend::kTcp, Backend::kShm}) {
    ConnectOptions o;
    o.backend = b;
    o.frame_mac = b == Backend::kTcp;
    auto conn = open_connection(fake.endpoint(), me, o);
    ASSERT_FALSE(conn) << backend_name(b);
    EXPECT_EQ(conn.status().code(), Errc::kAuthFailed) << conn.status().to_string();
  }
  // The admin role (fences, recovery) refuses it as well.
  ClientIdentity admin{kCluster, me.secret, wire::Role::kAdmin, 0, 0};
  auto a = ControlClient::connect(fake.endpoint(), admin, 5s);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.status().code(), Errc::kAuthFailed);

  // No SetupTcp, SetupShm or request ever reached the fake. The fake reads
  // each connection until the client's EOF, so its count is final once all
  // four have ended (bounded wait for its thread).
  const auto until = Clock::now() + 10s;
  while (fake.logins() < 4 && Clock::now() < until) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(fake.logins(), 4u);
  EXPECT_EQ(fake.bytes_after_login(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, FakeDaemonTest, ::testing::Values(Mode::kNoSecret, Mode::kWrongSecret, Mode::kReflect),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           switch (info.param) {
                             case Mode::kNoSecret: return "NoSecret";
                             case Mode::kWrongSecret: return "WrongSecret";
                             case Mode::kReflect: return "Reflect";
                             case Mode::kOldVersion: return "OldVersion";
                           }
                           return "unknown";
                         });

TEST(FakeDaemon, OldProtocolVersionGetsAClearError) {
  FakeDaemon fake(Mode::kOldVersion, kCluster);
  ASSERT_TRUE(fake.ok());
  auto c = ControlClient::connect(fake.endpoint(), compute_identity(3, "test-secret-0123456789"), 5s);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), Errc::kProtocol);
  EXPECT_NE(c.status().message().find("memory daemon at " + fake.endpoint().to_string()), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find(version_mismatch_text()), std::string::npos) << c.status().message();
}

// ------------------------------------------------------------- real daemon

class AuthLiveTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(memd_.start()) << memd_.last_error(); }
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- pandora-memd log ----\n" << memd_.stderr_text() << "----\n";
  }

  std::unique_ptr<ControlClient> admin() {
    auto c = ControlClient::connect(memd_.endpoint(), memd_.identity(0), 5s);
    EXPECT_TRUE(c) << c.status().to_string();
    return c ? std::move(*c) : nullptr;
  }
  wire::StatsReply stats() {
    auto a = admin();
    auto s = a ? a->stats() : Result<wire::StatsReply>(Errc::kIo, "no admin session");
    EXPECT_TRUE(s) << s.status().to_string();
    return s ? *s : wire::StatsReply{};
  }
  Result<std::unique_ptr<Connection>> tcp(const ClientIdentity& id, bool frame_mac = false) {
    ConnectOptions o;
    o.backend = Backend::kTcp;
    o.frame_mac = frame_mac;
    return open_connection(memd_.endpoint(), id, o);
  }
  uint64_t cluster() const { return memd_.options().cluster_id; }
  const std::string& secret() const { return memd_.options().secret; }

  TempDir dir_;
  MemdProcess memd_{dir_.path()};
};

TEST_F(AuthLiveTest, TheRealDaemonProvesItselfAndIsAccepted) {
  auto c = ControlClient::connect(memd_.endpoint(), memd_.identity(4), 5s);
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ((*c)->region().cluster_id, cluster());
  EXPECT_EQ(stats().auth_failures, 0u);
}

// A daemon of another cluster (another secret) refuses the client's login; a
// client that gets this far learns only that the login failed - not the
// daemon's cluster id, not which of id or secret was wrong.
TEST_F(AuthLiveTest, FailedLoginsLearnNothingAboutTheCluster) {
  ClientIdentity wrong_secret = memd_.identity(4);
  wrong_secret.secret = "another-cluster-secret-0123";
  ClientIdentity wrong_cluster = memd_.identity(5);
  wrong_cluster.cluster_id = cluster() + 1;
  for (const ClientIdentity& id : {wrong_secret, wrong_cluster}) {
    auto c = ControlClient::connect(memd_.endpoint(), id, 5s);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.status().code(), Errc::kAuthFailed);
    const std::string m = c.status().message();
    EXPECT_NE(m.find("login failed"), std::string::npos) << m;
    EXPECT_EQ(m.find("5eed"), std::string::npos) << "the daemon's cluster id leaked: " << m;
    EXPECT_EQ(m.find("5eee"), std::string::npos) << m;
    EXPECT_EQ(m.find("secret (HMAC"), std::string::npos) << m;
  }
  // The daemon's own log keeps the reason for its operator.
  const std::string log = memd_.stderr_text();
  EXPECT_NE(log.find("wrong secret (HMAC mismatch)"), std::string::npos) << log;
  EXPECT_NE(log.find("cluster id 0x5eee (this node serves cluster 0x5eed)"), std::string::npos) << log;
  EXPECT_EQ(stats().auth_failures, 2u);
}

// A client of the previous protocol version gets an Error and a log line
// naming both versions, not a silent close.
TEST_F(AuthLiveTest, OldProtocolClientIsToldAndLogged) {
  RawPeer p(memd_.endpoint().port);
  ASSERT_TRUE(p.ok());
  auto sh = p.recv_control();
  ASSERT_TRUE(sh && std::holds_alternative<wire::ServerHello>(*sh));
  std::string hello;
  wire::encode_control(hello, wire::Hello{});
  hello[4] = 1;  // version 1 header
  ASSERT_TRUE(p.send(hello));
  auto r = p.recv_control();
  ASSERT_TRUE(r && std::holds_alternative<wire::Error>(*r)) << (r ? "not an Error" : r.status().to_string());
  EXPECT_NE(std::get<wire::Error>(*r).message.find(version_mismatch_text()), std::string::npos);
  EXPECT_TRUE(p.wait_closed());
  EXPECT_NE(memd_.stderr_text().find(version_mismatch_text()), std::string::npos);
}

// ------------------------------------------------ one process per compute id

TEST_F(AuthLiveTest, ASecondProcessWithTheSameComputeIdIsRefused) {
  const ClientIdentity first = compute_identity(7, secret());
  const ClientIdentity second = compute_identity(7, secret());  // another incarnation: another process
  ASSERT_NE(first.incarnation, second.incarnation);

  // One process may hold many sessions of its id (control, data, several).
  auto data = tcp(first);
  ASSERT_TRUE(data) << data.status().to_string();
  auto data2 = tcp(first);
  ASSERT_TRUE(data2) << data2.status().to_string();
  auto control = ControlClient::connect(memd_.endpoint(), first, 5s);
  ASSERT_TRUE(control) << control.status().to_string();

  // Another process is refused on the control plane and the data plane,
  // with a message that says what to fix.
  auto c = ControlClient::connect(memd_.endpoint(), second, 5s);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(c.status().message().find("compute id 7 is in use by another live compute process"), std::string::npos)
      << c.status().message();
  auto d = tcp(second);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status().code(), Errc::kInvalidArgument);
  // Other ids are not affected.
  ASSERT_TRUE(tcp(compute_identity(8, secret())));

  // Once every session of the first process has ended (it exited), the id
  // is free. The daemon sees the closed sockets at once (no timeout); the
  // loop only bounds the wait for the kernel to deliver the FINs.
  data->reset();
  data2->reset();
  control->reset();
  Result<std::unique_ptr<Connection>> again(Errc::kTimeout, "not tried");
  for (auto until = Clock::now() + 10s; Clock::now() < until;) {
    again = tcp(second);
    if (again || again.status().code() != Errc::kInvalidArgument) break;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_NE(memd_.stderr_text().find("refused Hello of compute node 7"), std::string::npos);
}

// A fenced id stays refused whoever asks; after pid recycling (Unfence) a new
// process gets the id although the fenced process still has its (refused)
// data connection open.
TEST_F(AuthLiveTest, FencedIdsStayRefusedAndUnfenceHandsTheIdOn) {
  const ClientIdentity old_process = compute_identity(9, secret());
  auto old_conn = tcp(old_process);
  ASSERT_TRUE(old_conn) << old_conn.status().to_string();
  auto adm = admin();
  ASSERT_TRUE(adm);
  ASSERT_TRUE(adm->fence(9));

  const ClientIdentity new_process = compute_identity(9, secret());
  auto refused = tcp(new_process);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), Errc::kFenced) << refused.status().to_string();
  EXPECT_EQ(tcp(old_process).status().code(), Errc::kFenced);

  ASSERT_TRUE(adm->unfence(9));
  auto fresh = tcp(new_process);
  ASSERT_TRUE(fresh) << fresh.status().to_string();
  // The old process, though alive, is not let back in under the new owner.
  auto old_again = tcp(old_process);
  ASSERT_FALSE(old_again);
  EXPECT_EQ(old_again.status().code(), Errc::kInvalidArgument) << old_again.status().to_string();
}

// ---------------------------------------------------------- frame MAC (tcp)

// One request frame sealed with `mac`.
std::string sealed(wire::FrameMac& mac, wire::Op op, uint64_t addr, uint32_t len, uint64_t tag,
                   std::string_view payload = {}) {
  std::string out = request_frame(op, addr, len, tag, 0, 0, payload);
  mac.seal(out, 0);
  return out;
}

// Reads one response and its MAC, checked with `mac`.
std::optional<RawPeer::Response> recv_sealed(RawPeer& p, wire::FrameMac& mac) {
  auto r = p.recv_response();
  if (!r) return std::nullopt;
  std::array<uint8_t, wire::kFrameMacBytes> tag{};
  if (!net::recv_exact(p.fd(), tag, net::deadline_after(5s))) return std::nullopt;
  std::string frame;
  wire::encode_response(frame, r->header, {reinterpret_cast<const uint8_t*>(r->payload.data()), r->payload.size()});
  if (!mac.check({reinterpret_cast<const uint8_t*>(frame.data()), frame.size()}, tag)) return std::nullopt;
  return r;
}

TEST_F(AuthLiveTest, FrameMacRefusesChangedReplayedAndUnsealedFrames) {
  const uint64_t a = kDataOffset + 4096;
  auto plain = tcp(compute_identity(2, secret()));  // to look at memory without MACs
  ASSERT_TRUE(plain) << plain.status().to_string();

  struct Case {
    const char* name;
    // Builds the bad bytes from a frame that would be valid next.
    std::function<std::string(std::string valid)> spoil;
  };
  const std::vector<Case> cases = {
      {"payload byte changed", [](std::string f) { f[sizeof(wire::RequestHeader)] ^= 1; return f; }},
      {"address changed", [](std::string f) { f[16] ^= 8; return f; }},
      {"MAC changed", [](std::string f) { f.back() ^= 0x80; return f; }},
      {"MAC missing (an unsealed frame followed by another)",
       [](std::string f) {
         std::string plain_frame = f.substr(0, f.size() - wire::kFrameMacBytes);
         return plain_frame + plain_frame;
       }},
  };
  uint64_t refused = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawPeer p(memd_.endpoint().port);
    ASSERT_TRUE(p.open_data_plane(cluster(), secret(), 3, kRawPeerIncarnation, /*frame_mac=*/true));
    const wire::FrameMacKeys keys = p.frame_mac_keys(secret());
    wire::FrameMac to_daemon(keys.client_to_daemon), from_daemon(keys.daemon_to_client);

    // A correctly sealed WRITE and READ work, and their answers are sealed.
    ASSERT_TRUE(p.send(sealed(to_daemon, wire::Op::kWrite, a, 6, 1, "sealed")));
    auto w = recv_sealed(p, from_daemon);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->header.status, static_cast<uint8_t>(Errc::kOk));
    ASSERT_TRUE(p.send(sealed(to_daemon, wire::Op::kRead, a, 6, 2)));
    auto r = recv_sealed(p, from_daemon);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->payload, "sealed");

    // The spoilt frame is not executed; the connection is closed.
    ASSERT_TRUE(p.send(c.spoil(sealed(to_daemon, wire::Op::kWrite, a, 6, 3, "forged"))));
    EXPECT_TRUE(p.wait_closed());
    ++refused;
    std::string now(6, '\0');
    (*plain)->post_read(a, now.data(), 6, 1);
    (*plain)->flush();
    Completion done[1];
    ASSERT_EQ((*plain)->wait(done, 10s), 1u);
    EXPECT_EQ(done[0].status, Errc::kOk);
    EXPECT_EQ(now, "sealed") << "a refused frame changed memory";
  }
  {
    // A replayed frame (valid once) is refused the second time: the MAC
    // covers the frame's sequence number.
    RawPeer p(memd_.endpoint().port);
    ASSERT_TRUE(p.open_data_plane(cluster(), secret(), 3, kRawPeerIncarnation, true));
    const wire::FrameMacKeys keys = p.frame_mac_keys(secret());
    wire::FrameMac to_daemon(keys.client_to_daemon), from_daemon(keys.daemon_to_client);
    const std::string once = sealed(to_daemon, wire::Op::kFaa, a + 64, 8, 1);
    ASSERT_TRUE(p.send(once));
    ASSERT_TRUE(recv_sealed(p, from_daemon));
    ASSERT_TRUE(p.send(once));
    EXPECT_TRUE(p.wait_closed());
    ++refused;
  }
  EXPECT_EQ(stats().bad_frame_macs, refused);
  EXPECT_NE(memd_.stderr_text().find("data-plane frame with a wrong MAC"), std::string::npos);
}

// The client library end to end with frame MACs, next to a plain connection
// of the same process.
TEST_F(AuthLiveTest, FrameMacConnectionsServeEveryOperation) {
  const ClientIdentity me = compute_identity(4, secret());
  auto sealed_conn = tcp(me, true);
  ASSERT_TRUE(sealed_conn) << sealed_conn.status().to_string();
  auto plain = tcp(me, false);
  ASSERT_TRUE(plain) << plain.status().to_string();
  const uint64_t a = kDataOffset + 8192;
  Connection& c = **sealed_conn;
  std::string big(100000, 'b');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  std::string back(big.size(), '\0');
  uint64_t word = 0;
  c.post_write(a, big.data(), static_cast<uint32_t>(big.size()), 1);
  c.post_read(a, back.data(), static_cast<uint32_t>(back.size()), 2);
  c.post_faa(a + 200000, 5, 3);
  c.post_cas(a + 200000, 5, 9, 4);
  c.post_read(a + 200000, &word, 8, 5);
  c.flush();
  std::vector<Completion> got;
  Completion buf[8];
  for (auto until = Clock::now() + 20s; got.size() < 5 && Clock::now() < until;) {
    const size_t n = c.wait(buf, 1000ms);
    got.insert(got.end(), buf, buf + n);
  }
  ASSERT_EQ(got.size(), 5u);
  for (const Completion& d : got) EXPECT_EQ(d.status, Errc::kOk) << d.wr_id;
  EXPECT_EQ(back, big);
  EXPECT_EQ(got[3].value, 5u);
  EXPECT_EQ(word, 9u);
  EXPECT_EQ(c.health(), Errc::kOk);
  EXPECT_EQ(stats().bad_frame_macs, 0u);
}

}  // namespace
}  // namespace pandora::testing
