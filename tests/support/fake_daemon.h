// A fake memory daemon for authentication tests: it listens on loopback and
// speaks the control protocol, but does not know the cluster secret (or
// knows another one). A client must refuse it before sending it anything
// beyond its Hello; the fake counts what it receives after answering, so a
// test can show that nothing was.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/socket_util.h"
#include "common/wire/control.h"

namespace pandora::testing {

class FakeDaemon {
 public:
  enum class Mode {
    kNoSecret,     // answers every Hello with HelloOk and a MAC of zeros
    kWrongSecret,  // a correct HelloOk MAC, but under `secret` (not the cluster's)
    kReflect,      // HelloOk carries the client's own Hello MAC (a reflection)
    kOldVersion,   // speaks control protocol version 1, then closes
  };

  // Listens on 127.0.0.1 (port chosen by the kernel) and serves connections
  // one at a time on its own thread until destroyed. HelloOk describes a
  // 64 MiB region of `cluster_id`, so only the MAC can give it away.
  FakeDaemon(Mode mode, uint64_t cluster_id, std::string secret = "the-fake-daemon-secret");
  ~FakeDaemon();
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  bool ok() const { return listen_.valid(); }
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_}; }
  // Hellos answered whose connection has ended since (bytes_after_login()
  // is final for them).
  size_t logins() const { return logins_.load(); }
  // Bytes clients sent after the fake's answer to their Hello (a client that
  // refuses the fake sends none).
  size_t bytes_after_login() const { return bytes_after_login_.load(); }

 private:
  void serve();
  void serve_one(int fd);

  Mode mode_;
  uint64_t cluster_id_;
  std::string secret_;
  net::UniqueFd listen_;
  net::UniqueFd stop_read_, stop_write_;
  uint16_t port_ = 0;
  std::atomic<size_t> logins_{0};
  std::atomic<size_t> bytes_after_login_{0};
  std::thread thread_;
};

}  // namespace pandora::testing
