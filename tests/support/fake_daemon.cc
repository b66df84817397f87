#include "tests/support/fake_daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>

#include "common/checksum.h"

namespace pandora::testing {
namespace {

using namespace std::chrono_literals;

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

FakeDaemon::FakeDaemon(Mode mode, uint64_t cluster_id, std::string secret)
    : mode_(mode), cluster_id_(cluster_id), secret_(std::move(secret)) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  net::UniqueFd sock(fd);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return;
  stop_read_ = net::UniqueFd(p[0]);
  stop_write_ = net::UniqueFd(p[1]);
  port_ = ntohs(a.sin_port);
  listen_ = std::move(sock);
  thread_ = std::thread([this] { serve(); });
}

FakeDaemon::~FakeDaemon() {
  if (stop_write_.valid()) {
    const char x = 'x';
    [[maybe_unused]] ssize_t n = ::write(stop_write_.get(), &x, 1);
  }
  if (thread_.joinable()) thread_.join();
}

void FakeDaemon::serve() {
  for (;;) {
    pollfd p[2] = {{listen_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    serve_one(fd);
  }
}

void FakeDaemon::serve_one(int raw_fd) {
  net::UniqueFd fd(raw_fd);
  const net::Deadline deadline = net::deadline_after(5s);
  wire::ServerHello sh;
  sh.nonce.fill(0x42);  // a fixed nonce: the fake does not even try
  std::string out;
  wire::encode_control(out, sh);
  if (mode_ == Mode::kOldVersion) {
    out[4] = 1;   // header version
    out[12] = 1;  // ServerHello.protocol_version
    (void)net::send_all(fd.get(), bytes_of(out), deadline);
    return;
  }
  if (!net::send_all(fd.get(), bytes_of(out), deadline)) return;
  Result<wire::ControlMessage> m = net::recv_control(fd.get(), deadline);
  if (!m) return;
  const auto* hello = std::get_if<wire::Hello>(&*m);
  if (hello == nullptr) return;
  wire::HelloOk ok;
  ok.region.cluster_id = cluster_id_;
  ok.region.node_id = 1;
  ok.region.layout_version = 1;
  ok.region.region_size = 64u << 20;
  ok.region.data_offset = 1u << 20;
  ok.region.table_offset = 1u << 20;
  ok.region.log_offset = 48u << 20;
  ok.region.log_size = 16u << 20;
  switch (mode_) {
    case Mode::kNoSecret:
      break;  // mac stays all zero
    case Mode::kWrongSecret:
      ok.mac = hmac_sha256(bytes_of(secret_), bytes_of(wire::hello_ok_mac_input(sh.nonce, *hello, ok.region)));
      break;
    case Mode::kReflect:
      ok.mac = hello->mac;
      break;
    case Mode::kOldVersion:
      break;
  }
  out.clear();
  wire::encode_control(out, ok);
  if (!net::send_all(fd.get(), bytes_of(out), deadline)) return;
  // Whatever the client sends now (SetupTcp, requests, data) is what a fake
  // daemon would steal; count it until the client closes.
  std::array<uint8_t, 4096> buf;
  for (;;) {
    pollfd p{fd.get(), POLLIN, 0};
    const int ms = net::poll_timeout_ms(deadline);
    if (ms == 0 || ::poll(&p, 1, ms) <= 0) break;
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n <= 0) break;
    bytes_after_login_ += static_cast<size_t>(n);
  }
  ++logins_;
}

}  // namespace pandora::testing
