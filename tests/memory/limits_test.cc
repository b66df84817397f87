// A live pandora-memd flooded with connections that never log in (issue 9,
// item 4): thousands of idle sockets from several addresses, and from the
// real client's own address. A real client must still log in at once, the
// pending handshakes must stay within their limits, and the daemon's log must
// stay small (rate-limited lines plus a count of the suppressed ones).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/transport/client.h"
#include "common/transport/socket_util.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The daemon's defaults (memory/control_server.h ControlLimits), which this
// test exercises as shipped.
constexpr size_t kMaxHandshakes = 1024;
constexpr size_t kMaxPerPeer = 128;

// Raises the soft RLIMIT_NOFILE to at least `want` descriptors if the hard
// limit allows; returns what is available afterwards.
rlim_t ensure_descriptors(rlim_t want) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < want) {
    rl.rlim_cur = std::min(want, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

// Idle sockets that connect from a chosen loopback address (all of
// 127.0.0.0/8 reaches the daemon on 127.0.0.1, so each address is a
// different peer to it) and never send a byte.
class IdleFlood {
 public:
  // Opens `count` connections from `source` to 127.0.0.1:port in batches
  // small enough for the listen backlog, and waits (bounded) until the
  // daemon has handled every one: it sent its ServerHello or closed it.
  // Returns false (with *why) if a socket could not be opened or a batch was
  // not handled within the deadline.
  bool open(const std::string& source, uint16_t port, size_t count, std::string* why) {
    constexpr size_t kBatch = 128;
    for (size_t done = 0; done < count;) {
      const size_t first = socks_.size();
      const size_t n = std::min(kBatch, count - done);
      for (size_t i = 0; i < n; ++i) {
        net::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!fd.valid()) return fail(why, "socket");
        sockaddr_in src{};
        src.sin_family = AF_INET;
        ::inet_pton(AF_INET, source.c_str(), &src.sin_addr);
        if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) return fail(why, "bind " + source);
        sockaddr_in dst{};
        dst.sin_family = AF_INET;
        dst.sin_port = htons(port);
        ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
        if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0 && errno != EINPROGRESS) {
          return fail(why, "connect");
        }
        socks_.push_back({std::move(fd), source, false});
      }
      if (!wait_handled(first, 60s)) {
        *why = "the daemon did not answer a batch of connections from " + source + " within 60 s";
        return false;
      }
      done += n;
    }
    return true;
  }

  // Connections of `source` (all if empty) the daemon has not closed.
  size_t still_open(const std::string& source = {}) {
    size_t open = 0;
    for (Sock& s : socks_) {
      if (!s.closed) drain(s);
      if (!s.closed && (source.empty() || s.source == source)) ++open;
    }
    return open;
  }
  size_t size() const { return socks_.size(); }

 private:
  struct Sock {
    net::UniqueFd fd;
    std::string source;
    bool closed = false;
  };

  static bool fail(std::string* why, const std::string& what) {
    *why = what + ": " + std::strerror(errno);
    return false;
  }

  // Reads whatever arrived; notes EOF or reset.
  static void drain(Sock& s) {
    char buf[512];
    for (;;) {
      ssize_t n = ::recv(s.fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      s.closed = true;  // EOF, reset or any other error: the daemon is done with it
      return;
    }
  }

  // Until every socket from index `first` has been readable once.
  bool wait_handled(size_t first, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    std::vector<size_t> waiting;
    for (size_t i = first; i < socks_.size(); ++i) waiting.push_back(i);
    while (!waiting.empty()) {
      if (Clock::now() >= deadline) return false;
      std::vector<pollfd> p;
      for (size_t i : waiting) p.push_back({socks_[i].fd.get(), POLLIN, 0});
      if (::poll(p.data(), p.size(), 200) < 0 && errno != EINTR) return false;
      std::vector<size_t> left;
      for (size_t k = 0; k < waiting.size(); ++k) {
        if (p[k].revents == 0) left.push_back(waiting[k]);
        else drain(socks_[waiting[k]]);
      }
      waiting.swap(left);
    }
    return true;
  }

  std::vector<Sock> socks_;
};

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

class HandshakeFloodTest : public ::testing::Test {
 protected:
  HandshakeFloodTest() : memd_(dir_.path()) {}
  void SetUp() override {
    started_ = Clock::now();
    ASSERT_TRUE(memd_.start()) << memd_.last_error();
  }
  void TearDown() override {
    if (HasFailure() || getenv("MEMD_SHOW_LOG")) std::cerr << "---- pandora-memd log ----\n" << memd_.stderr_text() << "----\n";
  }

  // A real client: an admin session that reads the stats, and a compute
  // node's tcp data plane. Returns how long the logins took; fails the test
  // if one did not succeed.
  Clock::duration real_client_logs_in(uint16_t compute_id) {
    const auto t0 = Clock::now();
    auto admin = ControlClient::connect(memd_.endpoint(), memd_.identity(0), 10s);
    EXPECT_TRUE(admin) << admin.status().to_string();
    if (admin) EXPECT_TRUE((*admin)->stats());
    ConnectOptions o;
    o.backend = Backend::kTcp;
    auto conn = open_connection(memd_.endpoint(), memd_.identity(compute_id), o);
    EXPECT_TRUE(conn) << conn.status().to_string();
    return Clock::now() - t0;
  }

  // What a rate-limited daemon may have logged by now: its start-up lines,
  // then per second at most 5 lines + 1 count for each kind of connection
  // event (evicted, timed out, closed during the handshake, protocol error).
  // A daemon logging once per connection writes thousands.
  size_t log_line_budget() const {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count() + 1;
    return 30 + 4 * 6 * static_cast<size_t>(seconds);
  }

  Clock::time_point started_;
  TempDir dir_;
  MemdProcess memd_;
};

TEST_F(HandshakeFloodTest, IdleSocketsFromManyAddressesNeverLockARealClientOut) {
  // 12 flooding addresses x 300 idle sockets: more than the table holds in
  // total (1024) and per address (128).
  constexpr size_t kAddresses = 12, kPerAddress = 300;
  const rlim_t need = kAddresses * kPerAddress + 256;
  if (ensure_descriptors(need) < need) GTEST_SKIP() << "RLIMIT_NOFILE hard limit below " << need;

  IdleFlood flood;
  std::vector<std::string> sources;
  for (size_t a = 0; a < kAddresses; ++a) {
    sources.push_back("127.0.0." + std::to_string(2 + a));
    std::string why;
    ASSERT_TRUE(flood.open(sources.back(), memd_.endpoint().port, kPerAddress, &why)) << why;
  }
  // The flooders hold no more than the limits allow; the rest were evicted,
  // not refused to newcomers.
  for (const std::string& s : sources) EXPECT_LE(flood.still_open(s), kMaxPerPeer) << s;
  EXPECT_LE(flood.still_open(), kMaxHandshakes);

  // A client from another address gets in at once, with every flooding
  // socket still connected on our side.
  const auto took = real_client_logs_in(3);
  EXPECT_LT(took, 5s);

  // The log stays small: thousands of evictions, a handful of lines, and the
  // count of what was suppressed appears (within about a second).
  const auto deadline = Clock::now() + 20s;
  while (memd_.stderr_text().find("\"handshake-evicted\" line(s) suppressed") == std::string::npos &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  const std::string log = memd_.stderr_text();
  EXPECT_NE(log.find("\"handshake-evicted\" line(s) suppressed"), std::string::npos);
  EXPECT_LE(count_lines(log), log_line_budget()) << "for " << flood.size() << " connections";
}

TEST_F(HandshakeFloodTest, IdleSocketsFromTheClientsOwnAddressGiveWayToIt) {
  const rlim_t need = 1500 + 256;
  if (ensure_descriptors(need) < need) GTEST_SKIP() << "RLIMIT_NOFILE hard limit below " << need;
  IdleFlood flood;
  std::string why;
  ASSERT_TRUE(flood.open("127.0.0.1", memd_.endpoint().port, 1500, &why)) << why;
  EXPECT_LE(flood.still_open("127.0.0.1"), kMaxPerPeer);

  // The client's connections evict the oldest idle ones of their address.
  const auto took = real_client_logs_in(4);
  EXPECT_LT(took, 5s);
  EXPECT_LE(count_lines(memd_.stderr_text()), log_line_budget()) << "for " << flood.size() << " connections";
}

TEST(HandshakeDeadline, IsConfigurable) {
  // A 300 ms deadline: an idle socket is dropped after it, and the drop is
  // logged.
  TempDir dir;
  MemdProcess quick(dir.path(), MemdOptions{.extra_args = {"--handshake-timeout-ms", "300"}});
  ASSERT_TRUE(quick.start()) << quick.last_error();
  auto fd = net::connect_tcp(quick.endpoint(), 5s);
  ASSERT_TRUE(fd);
  const auto t0 = Clock::now();
  // EOF (after the ServerHello) within a generous bound, well before the
  // 3 s default.
  bool closed = false;
  char buf[256];
  while (!closed && Clock::now() - t0 < 10s) {
    pollfd p{fd->get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::recv(fd->get(), buf, sizeof(buf), 0);
    closed = n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - t0, 2500ms);
  EXPECT_NE(quick.stderr_text().find("no valid Hello within 300 ms"), std::string::npos) << quick.stderr_text();
}

}  // namespace
}  // namespace pandora::testing
