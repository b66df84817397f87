// The shm hand-off: how a same-host compute process obtains the region's
// file descriptor from pandora-memd, never opening the region by path.
//
//   client -> daemon (control, authenticated)   SetupShm
//   daemon -> client                            ShmInfo {socket_path, token, device, inode, ...}
//   client connects to socket_path (AF_UNIX, SOCK_SEQPACKET)
//   client -> daemon  ShmFdRequest {magic, version, token}           one datagram
//   daemon -> client  ShmFdReply {magic, version, status, message}   one datagram,
//                     with the region's fd attached (SCM_RIGHTS) when status is 0
//   daemon closes the hand-off connection
//
// Why a separate socket: the kernel tells the daemon who is at the other end
// of a Unix socket (SO_PEERPIDFD / SO_PEERCRED), so the process the daemon
// will SIGKILL when it fences the compute node is the one that really holds
// the descriptor, never a pid some message claims. The token (single use,
// bound to the control session that asked for it) is what authenticates the
// hand-off; the socket itself may be reachable by any local user.
//
// Layouts are fixed-size, little-endian host structures (both ends run on
// one host), defined here once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace pandora::wire {

inline constexpr uint32_t kShmHandoffMagic = 0x46485350;  // "PSHF"
inline constexpr uint16_t kShmHandoffVersion = 1;

struct ShmFdRequest {
  uint32_t magic = kShmHandoffMagic;
  uint16_t version = kShmHandoffVersion;
  uint16_t reserved = 0;
  std::array<uint8_t, 32> token{};
};
static_assert(sizeof(ShmFdRequest) == 40);
static_assert(offsetof(ShmFdRequest, token) == 8);

// status: 0 (the fd is attached) or a pandora::Errc value; message says why
// when not 0 (NUL-padded, not necessarily NUL-terminated).
struct ShmFdReply {
  uint32_t magic = kShmHandoffMagic;
  uint16_t version = kShmHandoffVersion;
  uint8_t status = 0;
  uint8_t reserved = 0;
  std::array<char, 240> message{};

  void set_message(std::string_view m) {
    message.fill('\0');
    std::memcpy(message.data(), m.data(), std::min(m.size(), message.size()));
  }
  std::string message_text() const { return std::string(message.data(), strnlen(message.data(), message.size())); }
};
static_assert(sizeof(ShmFdReply) == 248);
static_assert(offsetof(ShmFdReply, message) == 8);

}  // namespace pandora::wire
