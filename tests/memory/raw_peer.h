// A deliberately low-level client for attacking pandora-memd in tests: raw
// bytes, hand-built frames, and a way to tell whether the daemon closed the
// connection. Everything waits with a deadline; nothing blocks forever.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/transport/socket_util.h"
#include "common/wire/control.h"
#include "common/wire/frame.h"

namespace pandora::testing {

// The incarnation raw compute peers claim unless told otherwise (all raw
// peers of a test stand for one process).
inline constexpr uint64_t kRawPeerIncarnation = 0x7e57'0000'0001;

class RawPeer {
 public:
  // Connects to 127.0.0.1:port (fails the calling test on error: check ok()).
  explicit RawPeer(uint16_t port);

  bool ok() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }

  // Sends raw bytes.
  Status send(std::string_view bytes);
  // Closes our sending side (the daemon sees EOF).
  void shutdown_write();

  Result<wire::ControlMessage> recv_control(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Reads the ServerHello and answers with a Hello for this identity (a
  // fresh client nonce; `incarnation` for kCompute, 0 for kAdmin); returns
  // the daemon's reply (HelloOk or Error), not checking HelloOk's MAC.
  // `claimed_pid` goes into Hello.pid (default: our own pid), to show that
  // the daemon never acts on it.
  Result<wire::ControlMessage> handshake(uint64_t cluster_id, const std::string& secret, wire::Role role,
                                         uint16_t compute_id, uint64_t incarnation = kRawPeerIncarnation,
                                         uint32_t claimed_pid = 0);
  // Gives up ownership of the socket.
  int release() { return fd_.release(); }
  // handshake() as a compute node, then SetupTcp; true once the daemon said
  // Ok. With `frame_mac`, frames must then carry MACs (frame_mac_keys()).
  bool open_data_plane(uint64_t cluster_id, const std::string& secret, uint16_t compute_id,
                       uint64_t incarnation = kRawPeerIncarnation, bool frame_mac = false);
  // The frame MAC keys of the last handshake().
  wire::FrameMacKeys frame_mac_keys(const std::string& secret) const;

  // Reads one data-plane response (header + payload).
  struct Response {
    wire::ResponseHeader header{};
    std::string payload;
  };
  std::optional<Response> recv_response(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Waits until the daemon closes the connection (EOF or reset), discarding
  // anything it still sends. False if still open after `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout = std::chrono::seconds(5), std::string* rest = nullptr);

 private:
  net::UniqueFd fd_;
  wire::Nonce server_nonce_{}, client_nonce_{};
};

// Hand-built request frames.
std::string request_frame(wire::Op op, uint64_t addr, uint32_t len, uint64_t tag, uint64_t compare = 0,
                          uint64_t swap = 0, std::string_view payload = {});

}  // namespace pandora::testing
