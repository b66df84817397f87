// Unit tests of the tcp client against a scripted fake daemon on a
// socketpair: the misbehaviours a correct daemon never shows (wrong tags,
// bad payload lengths, byte-by-byte delivery, silence) and the error
// transitions of transport.h.
#include "common/transport/tcp_connection.h"

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/transport/socket_util.h"
#include "common/wire/frame.h"

namespace pandora {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kLo = 64 * 1024;
constexpr uint64_t kSize = 16 * 1024 * 1024;

// The daemon side of the stream: decodes requests, executes them on a local
// byte array, answers in order. Hooks let a test tamper with the answers.
class FakePeer {
 public:
  explicit FakePeer(int fd) : fd_(fd), mem_(kSize, 0) { EXPECT_TRUE(net::set_nonblocking(fd)); }

  // Reads what is there, answers complete requests, sends what fits.
  void pump() {
    std::array<uint8_t, 65536> buf;
    for (;;) {
      Errc err = Errc::kOk;
      ssize_t n = net::recv_some(fd_.get(), buf, &err);
      if (n <= 0) break;
      in_.insert(in_.end(), buf.begin(), buf.begin() + n);
    }
    size_t pos = 0;
    while (answering) {
      wire::DecodedRequest r;
      std::string why;
      const std::span<const uint8_t> avail(in_.data() + pos, in_.size() - pos);
      auto res = wire::decode_request(avail, r, &why);
      if (res == wire::DecodeResult::kNeedMore) break;
      ASSERT_EQ(res, wire::DecodeResult::kOk) << why;
      size_t consumed = r.consumed;
      if (mac_in) {
        if (avail.size() - consumed < wire::kFrameMacBytes) break;
        ASSERT_TRUE(mac_in->check(avail.first(consumed), avail.subspan(consumed, wire::kFrameMacBytes)))
            << "the client sent a request with a wrong MAC";
        consumed += wire::kFrameMacBytes;
      }
      execute(r);
      pos += consumed;
      ++requests;
    }
    in_.erase(in_.begin(), in_.begin() + static_cast<long>(pos));
    while (sent_ < out_.size()) {
      size_t chunk = std::min(out_.size() - sent_, max_chunk);
      Errc err = Errc::kOk;
      ssize_t n = net::send_some(fd_.get(), std::span(reinterpret_cast<const uint8_t*>(out_.data()) + sent_, chunk),
                                 &err);
      if (n <= 0) break;
      sent_ += static_cast<size_t>(n);
      if (max_chunk < 16) break;  // dribble: one piece per pump
    }
  }

  void close() { fd_.reset(); }

  std::vector<uint8_t>& mem() { return mem_; }

  bool answering = true;
  size_t max_chunk = SIZE_MAX;
  int requests = 0;
  // Called with each response before it is encoded.
  std::function<void(const wire::RequestHeader&, wire::ResponseHeader&)> tamper;
  // Replaces a successful READ's payload length (for a bad-length test).
  int read_payload_delta = 0;
  // Frame MACs: requests are checked with mac_in, responses sealed with
  // mac_out; flip_after_seal changes the last byte of the next response
  // before it goes out (what a tampering network would do).
  std::optional<wire::FrameMac> mac_in, mac_out;
  bool flip_after_seal = false;

 private:
  void execute(const wire::DecodedRequest& r) {
    const auto& h = r.header;
    wire::ResponseHeader resp{};
    resp.magic = wire::kFrameMagic;
    resp.op = h.op;
    resp.tag = h.tag;
    resp.status = static_cast<uint8_t>(wire::check_access(h, kLo, kSize));
    std::span<const uint8_t> payload;
    if (resp.status == 0) {
      uint8_t* at = mem_.data() + h.addr;
      switch (static_cast<wire::Op>(h.op)) {
        case wire::Op::kRead:
          payload = std::span(at, h.len);
          break;
        case wire::Op::kWrite:
          std::memcpy(at, r.payload.data(), h.len);
          break;
        case wire::Op::kCas: {
          uint64_t w;
          std::memcpy(&w, at, 8);
          resp.value = w;
          if (w == h.compare) std::memcpy(at, &h.swap, 8);
          break;
        }
        case wire::Op::kFaa: {
          uint64_t w;
          std::memcpy(&w, at, 8);
          resp.value = w;
          w += h.compare;
          std::memcpy(at, &w, 8);
          break;
        }
      }
    }
    if (tamper) tamper(h, resp);
    if (resp.status != 0) payload = {};
    if (!payload.empty() && read_payload_delta != 0) {
      payload = std::span(payload.data(), payload.size() + static_cast<size_t>(read_payload_delta));
    }
    resp.len = static_cast<uint32_t>(payload.size());
    const size_t begin = out_.size();
    wire::encode_response(out_, resp, payload);
    if (mac_out) mac_out->seal(out_, begin);
    if (flip_after_seal) {
      out_[out_.size() - 1 - (mac_out ? wire::kFrameMacBytes : 0)] ^= 1;
      flip_after_seal = false;
    }
  }

  net::UniqueFd fd_;
  std::vector<uint8_t> mem_;
  std::vector<uint8_t> in_;
  std::string out_;
  size_t sent_ = 0;
};

class TcpConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override { make(5s); }

  void make(std::chrono::milliseconds op_timeout, const std::optional<wire::FrameMacKeys>& keys = std::nullopt) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ASSERT_TRUE(net::set_nonblocking(sv[0]));
    wire::RegionInfo region;
    region.region_size = kSize;
    region.data_offset = kLo;
    conn_ = std::make_unique<TcpConnection>(net::UniqueFd(sv[0]), region, op_timeout, keys);
    peer_ = std::make_unique<FakePeer>(sv[1]);
    if (keys) {
      peer_->mac_in.emplace(keys->client_to_daemon);
      peer_->mac_out.emplace(keys->daemon_to_client);
    }
  }

  // Pumps both sides until `n` completions arrived or `limit` passed.
  std::vector<Completion> run(size_t n, std::chrono::milliseconds limit = 5s) {
    std::vector<Completion> out;
    std::array<Completion, 16> buf;
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      if (peer_) peer_->pump();
      size_t k = conn_->poll(buf);
      out.insert(out.end(), buf.begin(), buf.begin() + static_cast<long>(k));
    }
    return out;
  }

  // Posts two FAAs; the first response the client cannot accept must break
  // the connection and complete both with kDisconnected.
  void expect_two_faas_break() {
    conn_->post_faa(kLo, 1, 1);
    conn_->post_faa(kLo, 1, 2);
    conn_->flush();
    auto got = run(2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].status, Errc::kDisconnected);
    EXPECT_EQ(got[1].status, Errc::kDisconnected);
    EXPECT_EQ(conn_->health(), Errc::kDisconnected);
  }

  std::unique_ptr<TcpConnection> conn_;
  std::unique_ptr<FakePeer> peer_;
};

TEST_F(TcpConnectionTest, AllOpsRoundTrip) {
  uint64_t v = 0x0102030405060708ull, back = 0;
  conn_->post_write(kLo, &v, 8, 1);
  conn_->post_read(kLo, &back, 8, 2);
  conn_->post_cas(kLo, v, 9, 3);
  conn_->post_faa(kLo, 1, 4);
  EXPECT_EQ(conn_->outstanding(), 4u);
  conn_->flush();
  auto got = run(4);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].wr_id, i + 1);
    EXPECT_EQ(got[i].status, Errc::kOk);
  }
  EXPECT_EQ(back, v);
  EXPECT_EQ(got[2].value, v);
  EXPECT_EQ(got[3].value, 9u);
  EXPECT_EQ(conn_->outstanding(), 0u);
}

TEST_F(TcpConnectionTest, NothingLeavesBeforeTheDoorbell) {
  conn_->post_faa(kLo, 1, 1);
  std::array<Completion, 4> buf;
  EXPECT_EQ(conn_->wait(buf, 50ms), 0u);
  peer_->pump();
  EXPECT_EQ(peer_->requests, 0);
  conn_->flush();
  auto got = run(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(peer_->requests, 1);
}

TEST_F(TcpConnectionTest, MaximalFramesSurvivePartialSendsAndReceives) {
  std::vector<uint8_t> data(wire::kMaxIoBytes), back(wire::kMaxIoBytes, 0);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  conn_->post_write(kLo + 3, data.data(), wire::kMaxIoBytes, 1);
  conn_->post_read(kLo + 3, back.data(), wire::kMaxIoBytes, 2);
  conn_->flush();
  auto got = run(2, 20s);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, Errc::kOk);
  EXPECT_EQ(got[1].status, Errc::kOk);
  EXPECT_TRUE(back == data);
}

TEST_F(TcpConnectionTest, ResponsesDeliveredByteByByte) {
  peer_->max_chunk = 1;
  std::array<uint64_t, 8> words{};
  for (int i = 0; i < 8; ++i) conn_->post_faa(kLo + 8 * static_cast<uint64_t>(i), 5, static_cast<uint64_t>(i));
  for (int i = 0; i < 8; ++i) conn_->post_read(kLo + 8 * static_cast<uint64_t>(i), &words[i], 8, 100);
  conn_->flush();
  auto got = run(16, 10s);
  ASSERT_EQ(got.size(), 16u);
  for (const auto& c : got) EXPECT_EQ(c.status, Errc::kOk);
  for (auto w : words) EXPECT_EQ(w, 5u);
}

TEST_F(TcpConnectionTest, WrongTagBreaksTheConnection) {
  peer_->tamper = [](const wire::RequestHeader&, wire::ResponseHeader& r) { r.tag += 1; };
  expect_two_faas_break();
  conn_->post_faa(kLo, 1, 3);
  conn_->flush();
  auto got = run(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, Errc::kDisconnected);
}

TEST_F(TcpConnectionTest, WrongOpBreaksTheConnection) {
  peer_->tamper = [](const wire::RequestHeader&, wire::ResponseHeader& r) { r.op = 4; };
  conn_->post_cas(kLo, 0, 1, 1);
  conn_->flush();
  auto got = run(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, Errc::kDisconnected);
}

TEST_F(TcpConnectionTest, ReadPayloadOfWrongLengthBreaksTheConnection) {
  peer_->read_payload_delta = -1;
  std::array<uint8_t, 64> buf{};
  conn_->post_read(kLo, buf.data(), 64, 1);
  conn_->flush();
  auto got = run(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, Errc::kDisconnected);
}

TEST_F(TcpConnectionTest, PeerCloseFailsOutstandingAndLaterOps) {
  peer_->answering = false;
  conn_->post_faa(kLo, 1, 1);
  conn_->post_faa(kLo, 1, 2);
  conn_->flush();
  peer_->pump();
  peer_->close();
  std::array<Completion, 4> buf;
  size_t n = 0;
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (n < 2 && std::chrono::steady_clock::now() < deadline) n += conn_->wait(std::span(buf).subspan(n), 100ms);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(buf[0].status, Errc::kDisconnected);
  EXPECT_EQ(buf[1].status, Errc::kDisconnected);
  EXPECT_EQ(conn_->health(), Errc::kDisconnected);
}

TEST_F(TcpConnectionTest, SilenceTimesOut) {
  make(150ms);
  peer_->answering = false;
  conn_->post_faa(kLo, 1, 1);
  conn_->post_faa(kLo, 1, 2);
  auto start = std::chrono::steady_clock::now();
  conn_->flush();
  std::array<Completion, 4> buf;
  size_t n = conn_->wait(buf, 5s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(buf[0].status, Errc::kTimeout);
  EXPECT_EQ(buf[1].status, Errc::kTimeout);
  EXPECT_GE(elapsed, 140ms);
  EXPECT_LT(elapsed, 1s);
  EXPECT_EQ(conn_->health(), Errc::kTimeout);
  conn_->post_read(kLo, buf.data(), 8, 3);
  conn_->flush();
  ASSERT_EQ(conn_->poll(buf), 1u);
  EXPECT_EQ(buf[0].status, Errc::kTimeout);
}

TEST_F(TcpConnectionTest, WaitReturnsAtItsOwnDeadline) {
  peer_->answering = false;
  conn_->post_faa(kLo, 1, 1);
  conn_->flush();
  std::array<Completion, 4> buf;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(conn_->wait(buf, 100ms), 0u);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 95ms);
  EXPECT_LT(elapsed, 1s);
  EXPECT_EQ(conn_->health(), Errc::kOk);
}

TEST_F(TcpConnectionTest, FencedResponseFencesEverythingAfter) {
  int seen = 0;
  peer_->tamper = [&seen](const wire::RequestHeader&, wire::ResponseHeader& r) {
    if (++seen >= 2) {
      r.status = static_cast<uint8_t>(Errc::kFenced);
      r.value = 0;
    }
  };
  for (int i = 0; i < 4; ++i) conn_->post_faa(kLo, 1, static_cast<uint64_t>(i));
  conn_->flush();
  auto got = run(4);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].status, Errc::kOk);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(got[i].status, Errc::kFenced) << i;
  EXPECT_EQ(conn_->health(), Errc::kFenced);
  int before = peer_->requests;
  conn_->post_faa(kLo, 1, 9);
  conn_->flush();
  got = run(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, Errc::kFenced);
  EXPECT_EQ(peer_->requests, before) << "a fenced connection must not send";
}

TEST_F(TcpConnectionTest, DaemonSideErrorCompletesThatOpOnly) {
  peer_->tamper = [](const wire::RequestHeader& h, wire::ResponseHeader& r) {
    if (h.tag == 2) r.status = static_cast<uint8_t>(Errc::kOutOfBounds);
  };
  for (int i = 0; i < 3; ++i) conn_->post_faa(kLo, 1, static_cast<uint64_t>(i));
  conn_->flush();
  auto got = run(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].status, Errc::kOk);
  EXPECT_EQ(got[1].status, Errc::kOutOfBounds);
  EXPECT_EQ(got[1].value, 0u);
  EXPECT_EQ(got[2].status, Errc::kOk);
  EXPECT_EQ(conn_->health(), Errc::kOk);
}

TEST_F(TcpConnectionTest, LocallyRejectedOpsAreNeverSent) {
  std::array<uint8_t, 8> buf{};
  conn_->post_read(kLo - 8, buf.data(), 8, 1);
  conn_->post_faa(kLo + 1, 1, 2);
  conn_->post_write(kLo, buf.data(), 0, 3);
  conn_->flush();
  auto got = run(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].status, Errc::kOutOfBounds);
  EXPECT_EQ(got[1].status, Errc::kMisaligned);
  EXPECT_EQ(got[2].status, Errc::kInvalidArgument);
  peer_->pump();
  EXPECT_EQ(peer_->requests, 0);
}

TEST_F(TcpConnectionTest, ManyBatchesReuseBuffers) {
  // Exercises ring wrap-around and buffer compaction over many cycles.
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 37; ++i) conn_->post_faa(kLo + 8, 1, static_cast<uint64_t>(i));
    conn_->flush();
    auto got = run(37);
    ASSERT_EQ(got.size(), 37u);
    for (int i = 0; i < 37; ++i) {
      ASSERT_EQ(got[i].wr_id, static_cast<uint64_t>(i));
      ASSERT_EQ(got[i].value, static_cast<uint64_t>(round * 37 + i));
    }
  }
}

// Frame MACs on the client: requests are sealed, responses checked before
// they complete anything.
wire::FrameMacKeys test_keys() {
  wire::FrameMacKeys k;
  k.client_to_daemon.fill(0x11);
  k.daemon_to_client.fill(0x22);
  return k;
}

TEST_F(TcpConnectionTest, FrameMacRoundTripsEveryOp) {
  make(5s, test_keys());
  std::vector<uint8_t> data(300000), back(300000, 0);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 1);
  conn_->post_write(kLo, data.data(), static_cast<uint32_t>(data.size()), 1);
  conn_->post_read(kLo, back.data(), static_cast<uint32_t>(back.size()), 2);
  conn_->post_faa(kLo + 400000, 3, 3);
  conn_->post_cas(kLo + 400000, 3, 4, 4);
  conn_->flush();
  peer_->max_chunk = 7;  // dribbled: MACs split across reads
  auto got = run(4, 20s);
  ASSERT_EQ(got.size(), 4u);
  for (const Completion& c : got) EXPECT_EQ(c.status, Errc::kOk) << c.wr_id;
  EXPECT_EQ(back, data);
  EXPECT_EQ(got[3].value, 3u);
  EXPECT_EQ(conn_->health(), Errc::kOk);
}

TEST_F(TcpConnectionTest, FrameMacRefusesAChangedResponseBeforeItsPayloadLands) {
  make(5s, test_keys());
  uint64_t v = 0x1122334455667788ull;
  conn_->post_write(kLo, &v, 8, 1);
  conn_->flush();
  ASSERT_EQ(run(1).size(), 1u);
  uint64_t back = 0;
  peer_->flip_after_seal = true;  // the READ's last payload byte changes in transit
  conn_->post_read(kLo, &back, 8, 2);
  conn_->post_faa(kLo + 8, 1, 3);
  conn_->flush();
  auto got = run(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, Errc::kDisconnected);
  EXPECT_EQ(got[1].status, Errc::kDisconnected);
  EXPECT_EQ(back, 0u) << "a response with a wrong MAC reached the caller's buffer";
  EXPECT_EQ(conn_->health(), Errc::kDisconnected);
}

TEST_F(TcpConnectionTest, FrameMacRefusesAnUnsealedDaemon) {
  make(5s, test_keys());
  peer_->mac_out.reset();  // a daemon that does not seal: every response fails
  expect_two_faas_break();
}

}  // namespace
}  // namespace pandora
