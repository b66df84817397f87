// Unix-domain sockets that carry file descriptors (SCM_RIGHTS), for the shm
// hand-off (common/wire/shm_handoff.h). Datagram-style: the sockets are
// SOCK_SEQPACKET, so one send is one message and a message is never split.
//
// Every socket made here is non-blocking and close-on-exec; received
// descriptors are close-on-exec too (MSG_CMSG_CLOEXEC), and anything beyond
// the one descriptor a message may carry is closed, never leaked.
#pragma once

#include <span>
#include <string>

#include "common/status.h"
#include "common/transport/socket_util.h"

namespace pandora::net {

// Longest path a sockaddr_un can hold (without the terminating NUL).
size_t max_unix_path();

// Connects a SOCK_SEQPACKET socket to the Unix socket at `path`, waiting at
// most until `deadline`. kInvalidArgument for a path too long for
// sockaddr_un, kDisconnected when nobody listens there.
Result<UniqueFd> connect_unix(const std::string& path, Deadline deadline);

// Sends `data` as one message, with `fd` attached when fd >= 0.
Status send_message(int sock, std::span<const uint8_t> data, int fd, Deadline deadline);

// Receives one message into `buf` (a longer message is an error: kProtocol).
// A descriptor attached to it goes to *fd (left invalid when none). Returns
// the message length; kDisconnected on EOF.
Result<size_t> recv_message(int sock, std::span<uint8_t> buf, UniqueFd* fd, Deadline deadline);

}  // namespace pandora::net
