// The tcp data plane: the memory daemon acting as a software one-sided NIC.
//
// After a compute node's control session sends SetupTcp, the control server
// hands the socket to one of N data-plane threads (least loaded). Each thread
// runs an epoll loop over its connections:
//
//   read what is available -> decode every complete request frame
//   (common/wire/frame.h) -> execute them in order inside one batch -> persist
//   the batch (one pmem_drain) -> send the responses.
//
// Rules, modelled on an RDMA RC queue pair:
//  * Requests on one connection execute in order and are answered in order.
//  * A WRITE, CAS or FAA is persistent before its response is sent.
//  * A request outside [data_offset, region_size), or a misaligned CAS/FAA,
//    gets a response with kOutOfBounds / kMisaligned, and then the
//    connection is closed (the queue pair "goes to error"). A malformed
//    frame closes the connection without a response (no tag to answer). In
//    both cases memory is not touched by the bad request; requests before it
//    in the stream were executed normally.
//  * A fenced compute node gets kFenced for every request; the connection
//    stays open so the client learns why (see memory/fence_table.h for the
//    quiescence protocol that makes fence() synchronous).
//  * Frame MACs (SetupTcp.frame_mac): every request must carry a valid MAC
//    (wire::FrameMac) and every response gets one. A request whose MAC is
//    wrong is not executed: the connection is closed without a response
//    (like a malformed frame) and counted in bad_frame_macs.
//  * Back-pressure: a client whose unsent responses exceed kMaxPendingOutput
//    is not read from until they drain, so a client that never reads cannot
//    make the daemon buffer without bound. One slow client never blocks the
//    others (all sockets are non-blocking).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/logger.h"
#include "common/status.h"
#include "common/wire/control.h"
#include "memory/fence_table.h"
#include "memory/region.h"
#include "memory/session_table.h"

namespace pandora::memd {

// A compute session handed from the control plane to the data plane.
struct TcpSession {
  int fd = -1;                    // connected, non-blocking; owned from now on
  uint16_t compute_id = 0;
  uint32_t fence_generation = 0;  // FenceTable::generation at login
  std::string peer;               // for the log
  std::string pending_input;      // bytes the client sent after SetupTcp, already read
  std::optional<wire::FrameMacKeys> frame_mac;  // when SetupTcp asked for frame MACs
  SessionTable::Lease lease;      // the session's claim on compute_id, released at close
};

class TcpDataPlane {
 public:
  // Stop reading from a client above this many bytes of unsent responses
  // (must exceed one maximal READ response).
  static constexpr size_t kMaxPendingOutput = 8u << 20;
  // Bytes read from one socket per wake-up (more when a large frame needs it).
  static constexpr size_t kReadChunk = 256u << 10;
  // How long a connection being closed (after an error or at the peer's
  // EOF) may take to drain its last responses before it is cut.
  static constexpr int kCloseLingerMs = 2000;
  static constexpr size_t kMaxThreads = 64;

  // `fences` must have at least `threads` quiescence slots. `busy_poll`:
  // how long a thread keeps polling without sleeping after its last event
  // (0: it sleeps in epoll_wait at once) - trades a core per thread for the
  // wake-up latency.
  TcpDataPlane(Region& region, FenceTable& fences, size_t threads, Logger log,
               std::chrono::microseconds busy_poll = std::chrono::microseconds(0));
  ~TcpDataPlane();  // stop()
  TcpDataPlane(const TcpDataPlane&) = delete;
  TcpDataPlane& operator=(const TcpDataPlane&) = delete;

  // Creates the threads. kIo when epoll/eventfd/threads cannot be created.
  Status start();

  // Asks every thread to stop after its current batch, closes every
  // connection (after one best-effort attempt to send pending responses) and
  // joins. Idempotent.
  void stop();

  // Takes ownership of the session's socket (its control session has ended
  // with SetupTcp). `pending_input` is processed first; requests are refused
  // once the id's fence generation moves past `fence_generation`.
  // Thread-safe.
  void adopt(TcpSession session);

  // Adds this plane's counters (reads, writes, cas, faa, bytes, fenced_ops,
  // malformed_frames, bad_frame_macs, connections_current) to `out`.
  // Thread-safe.
  void add_stats(wire::StatsReply& out) const;

  size_t threads() const { return workers_.size(); }

  class Worker;  // one epoll loop; defined in the .cc

 private:
  Region& region_;
  FenceTable& fences_;
  Logger log_;
  std::vector<std::unique_ptr<Worker>> workers_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace pandora::memd
