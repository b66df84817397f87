// The sending half of the failure detector's heartbeats (ARCHITECTURE.md 5,
// step 1): a thread that sends one authenticated Heartbeat
// (common/wire/heartbeat.h) to every FD replica each period.
//
// Compute nodes run one with kind kCompute and id = their pid (compute/
// fd_link.h), memory daemons one with kind kMemory and id = their node id.
// The incarnation is random per sender object (unless given), so a
// restarted process is told from a replay of its predecessor; seq grows by
// one per round (every target gets the same seq in a round: the replicas'
// replay guards are independent).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/checksum.h"
#include "common/endpoint.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/udp_socket.h"
#include "common/wire/heartbeat.h"

namespace pandora {

struct HeartbeatSenderOptions {
  uint64_t cluster_id = 0;
  std::string secret;
  wire::SenderKind kind = wire::SenderKind::kCompute;
  uint32_t id = 0;                             // compute pid or memory node id
  std::chrono::microseconds period{1000};      // well below the replicas' timeout (5 ms)
  // A heartbeat that queues behind busy-polling workers, or behind other
  // sessions' time slices on a shared host, looks like a crash. So the
  // sending thread first asks for the real-time policy SCHED_FIFO at its
  // lowest priority (`realtime`; needs CAP_SYS_NICE or an RLIMIT_RTPRIO),
  // and if that is refused (or not asked) for `nice` (setpriority on its
  // own thread; a negative value needs CAP_SYS_NICE too, else the thread
  // keeps the process's). A nice value orders threads only within one
  // scheduler autogroup (a session): a waking heartbeat thread at nice -10
  // still waited for other sessions' slices, several milliseconds on two
  // loaded cores, as long as the detector's timeout. The thread works
  // about 10 us per period and sleeps otherwise, so either costs the
  // workers nothing.
  bool realtime = true;
  int nice = -10;
  // The sender's incarnation; 0 draws a random one. A memory daemon passes
  // the one it also tells clients at login (wire::RegionInfo), so the
  // cluster record can bind its node id to exactly this daemon.
  uint64_t incarnation = 0;
};

struct HeartbeatSenderStats {
  uint64_t rounds = 0;       // periods in which a heartbeat was built and sent
  uint64_t sent = 0;         // datagrams handed to the kernel
  uint64_t send_errors = 0;  // datagrams the kernel refused (buffer full, unreachable, ...)
  bool priority_raised = false;  // the sending thread runs at options.nice (or real-time)
  bool realtime = false;         // the sending thread runs under SCHED_FIFO
  // The longest interval between two rounds: how long this thread stood
  // still (descheduled, the process stopped). The first thing to compare
  // with the detector's timeout when a live node was declared failed.
  uint64_t longest_gap_us = 0;
};

class HeartbeatSender {
 public:
  // Nothing is sent before start(). kInvalidArgument from start() when the
  // period is 0 or the id does not fit its kind.
  HeartbeatSender(HeartbeatSenderOptions options, const Logger& log);
  ~HeartbeatSender();  // stop()
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

  // Starts the sending thread (no-op when running). The first heartbeat
  // leaves at once, so a new node is heard before any replica times it out.
  Status start();
  // Stops and joins the thread; returns within microseconds (not a period).
  // Idempotent; start() may be called again and continues the same
  // incarnation and seq.
  void stop();

  // Replaces the replica list; thread-safe, effective from the next round.
  // kInvalidArgument (and the list unchanged) when an address is not numeric
  // or localhost; kIo when no socket of its family can be opened.
  Status set_targets(std::vector<Endpoint> targets);

  HeartbeatSenderStats stats() const;
  uint64_t incarnation() const { return incarnation_; }

 private:
  void run();
  void send_round();

  const HeartbeatSenderOptions options_;
  const Logger log_;
  const uint64_t incarnation_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
  net::UniqueFd sock_v4_, sock_v6_;  // opened on demand by set_targets
  std::vector<std::pair<Endpoint, net::UdpAddress>> targets_;
  uint64_t seq_ = 0;
  HeartbeatSenderStats stats_;
  uint64_t last_error_log_ns_ = 0;
  uint64_t errors_unlogged_ = 0;
  std::string datagram_;  // reused buffer
  HmacSha256 mac_;        // keyed with options_.secret once (the sending thread's)
};

// A random 64-bit value from getrandom(2) (incarnations). Never 0.
uint64_t random_incarnation();

// CLOCK_REALTIME (the wire's sent_ns) and CLOCK_MONOTONIC (local timeouts),
// in nanoseconds.
uint64_t realtime_ns();
uint64_t monotonic_ns();

}  // namespace pandora
