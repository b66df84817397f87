// Which compute process is logged in under each compute id, so that two
// processes using the same compute id (a misconfiguration that would corrupt
// latches and logs: both would write as the same pid) are not both served.
//
// Every compute session (a control session after HelloOk, then the tcp data
// connection it may become) holds a Lease. A login of compute id N with
// incarnation I is refused while N has a session of another incarnation
// that is
//  * of the id's current fence generation (sessions from before an Unfence
//    are refused on their next request anyway, so they do not block the
//    id's new owner after pid recycling), and
//  * still connected: its socket shows no hang-up from the peer. A process
//    that exited has closed its sockets, so a restarted compute node is
//    never refused because the daemon has not yet processed the old
//    connection's EOF.
// Sessions of one incarnation (every connection of one process) coexist.
//
// Thread-safe: the control server acquires leases, data-plane threads
// release them. A Lease must be released (or destroyed) before its socket is
// closed: the table probes the sockets of live leases under its lock, so a
// descriptor is never probed after it was closed and reused.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace pandora::memd {

class SessionTable {
  struct State;

 public:
  SessionTable();

  // A session's claim on its compute id; move-only, released on
  // destruction. A default-constructed Lease holds nothing.
  class Lease {
   public:
    Lease() = default;
    ~Lease() { release(); }
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    void release();
    bool held() const { return state_ != nullptr; }

   private:
    friend class SessionTable;
    // The table's state is shared, so a lease that outlives the table (a
    // connection still owned by a data-plane thread at shutdown) is safe.
    std::shared_ptr<State> state_;
    uint16_t compute_id_ = 0;
    uint64_t id_ = 0;
  };

  // Registers a session of `compute_id` for `incarnation` on socket `fd`,
  // logged in at fence generation `generation`. kInvalidArgument, with a
  // message for the client, when another live incarnation holds the id.
  Result<Lease> acquire(uint16_t compute_id, uint64_t incarnation, uint32_t generation, int fd);

  // Sessions currently registered for `compute_id` (tests, stats).
  size_t sessions(uint16_t compute_id) const;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace pandora::memd
