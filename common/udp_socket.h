// UDP sockets for the failure detector (heartbeats, suspicion reports,
// failed-pid pushes). Same rules as the tcp helpers in
// common/transport/socket_util.h: numeric addresses or "localhost" only (no
// resolver), every socket non-blocking and close-on-exec.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <string>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/socket_util.h"

namespace pandora::net {

// A socket address made from an Endpoint.
struct UdpAddress {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family() const { return ss.ss_family; }
};

// kInvalidArgument unless `ep.host` is a numeric IPv4/IPv6 address or
// "localhost" (taken as 127.0.0.1).
Result<UdpAddress> udp_address(const Endpoint& ep);

// "127.0.0.1:7000" for a received-from address (for log lines).
std::string describe_address(const sockaddr_storage& ss, socklen_t len);

// An unbound UDP socket of `family` (AF_INET / AF_INET6) for sending.
Result<UniqueFd> open_udp(int family);

// A UDP socket bound on `ep` (port 0 picks one); *port receives the bound
// port. kIo with the reason when the address is taken or not local.
Result<UniqueFd> bind_udp(const Endpoint& ep, uint16_t* port);

// One sendto without blocking. Fails (kIo, with errno's text) when the
// datagram was not handed to the kernel: the socket buffer is full, or the
// target refused an earlier datagram (ECONNREFUSED reported late on UDP).
Status send_datagram(int fd, const UdpAddress& to, std::span<const uint8_t> data);

// A UDP socket connected to `to`. The kernel reports an ICMP port
// unreachable for it (nothing listens at `to` any more: the process that
// did is gone) as ECONNREFUSED on a later send, which an unconnected
// socket never sees.
Result<UniqueFd> open_connected_udp(const UdpAddress& to);
// One send without blocking on a connected socket. kDisconnected when `to`
// refused an earlier datagram (ECONNREFUSED; this one was not sent), kIo
// for any other failure.
Status send_connected(int fd, std::span<const uint8_t> data);

// One recvfrom without blocking: the datagram's length (a datagram longer
// than `buf` is cut to buf.size(); pass one byte more than the largest valid
// datagram so that the decoder sees it is too long), or -1 when nothing is
// waiting (or the socket failed: the caller polls again).
ssize_t recv_datagram(int fd, std::span<uint8_t> buf, sockaddr_storage* from, socklen_t* from_len);

// An eventfd that wakes a thread blocked in poll (POLLIN on it), so stop()
// does not wait for a poll timeout. kIo when the kernel refuses one.
Result<UniqueFd> open_wakeup();
void wake(int eventfd);

}  // namespace pandora::net
