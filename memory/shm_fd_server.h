// The daemon's end of the shm hand-off (protocol: common/wire/shm_handoff.h):
// hands the open region file descriptor to same-host compute processes over
// a Unix socket, and registers the receiving process for fencing.
//
//   ShmFdServer shm(region, fences, log);
//   shm.start(region.real_path() + ".shm.XXXXXX");   // mkdtemp template
//   token = shm.issue(session, compute_id, generation)  // on SetupShm (control thread)
//   shm.revoke(session)                                 // when that session ends
//
// Why it is safe:
//  * The socket lives in a directory the daemon creates with mkdtemp (an
//    unpredictable name, owned by the daemon's user, mode 0711: nobody else
//    can add, rename or remove anything in it); the socket itself is 0666,
//    because the token, not the file mode, authenticates the hand-off.
//  * A token is 32 bytes from getrandom(2), issued only on an authenticated
//    compute session, good for one hand-off within kTokenLifetime and only
//    while that session lasts (revoke()), compared in constant time.
//  * The process registered for fencing is the socket's peer as the kernel
//    reports it: SO_PEERPIDFD (a pidfd for the process that connected,
//    immune to pid reuse; Linux >= 6.5), else SO_PEERCRED's pid opened with
//    pidfd_open at once. The pid in the client's Hello is never used.
//  * The descriptor sent is the region's own inode (Region::client_fd), so
//    renaming files in the region's directory cannot make a client map
//    another file; clients check device and inode anyway.
//
// One thread serves the socket with poll(2); every hand-off connection is
// non-blocking, has kPeerTimeout to send its request, and at most kMaxPeers
// are open at once (beyond, the oldest is dropped), so local users cannot
// stall it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/logger.h"
#include "common/status.h"
#include "memory/fence_table.h"
#include "memory/region.h"

namespace pandora::memd {

class ShmFdServer {
 public:
  static constexpr std::chrono::milliseconds kTokenLifetime{30000};
  static constexpr std::chrono::milliseconds kPeerTimeout{2000};
  static constexpr size_t kMaxPeers = 64;
  static constexpr size_t kMaxTokens = 4096;
  // The name of the socket inside the private directory.
  static constexpr const char* kSocketName = "sock";

  ShmFdServer(Region& region, FenceTable& fences, Logger log);
  // stop(), then removes the socket and its directory.
  ~ShmFdServer();
  ShmFdServer(const ShmFdServer&) = delete;
  ShmFdServer& operator=(const ShmFdServer&) = delete;

  // Creates the private directory from `dir_template` (mkdtemp: it must end
  // in XXXXXX), listens on <dir>/sock and starts the serving thread. kIo or
  // kInvalidArgument (path too long for a Unix socket) with the reason.
  Status start(const std::string& dir_template);
  // Removes directories `<region path>.shm.XXXXXX` that killed daemons left
  // behind. Call only while holding the region's lock (no live daemon can
  // own them then). Returns how many were removed.
  static size_t remove_stale_dirs(const std::string& region_path, const Logger& log);

  const std::string& socket_path() const { return socket_path_; }

  // A fresh single-use token for control session `session` of compute node
  // `compute_id`, which logged in at fence generation `generation`. kIo when
  // kMaxTokens are outstanding or getrandom fails.
  Result<std::array<uint8_t, 32>> issue(uint64_t session, uint16_t compute_id, uint32_t generation);
  // Withdraws every token of `session` (its control session ended).
  void revoke(uint64_t session);

  // Stops the thread and closes every hand-off connection (idempotent).
  void stop();

 private:
  struct Token {
    std::array<uint8_t, 32> value;
    uint64_t session;
    uint16_t compute_id;
    uint32_t generation;
    std::chrono::steady_clock::time_point expires;
  };
  struct Peer {
    int fd;
    std::chrono::steady_clock::time_point deadline;
  };

  void run();
  void accept_peers();
  // Reads the request of `fd`, answers it, and closes `fd`.
  void serve_peer(int fd);
  // Takes the token out of the table (single use). False if unknown/expired.
  bool redeem(const std::array<uint8_t, 32>& value, Token* out);
  void reply(int fd, Errc code, const std::string& message, int pass_fd);

  Region& region_;
  FenceTable& fences_;
  Logger log_;
  std::string dir_;
  std::string socket_path_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  std::thread thread_;
  std::vector<Peer> peers_;  // serving thread only
  std::mutex mu_;            // guards tokens_
  std::vector<Token> tokens_;
};

}  // namespace pandora::memd
