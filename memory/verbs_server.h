// The memory daemon's side of the verbs data plane: the RDMA device, and per
// compute node a protection domain, a registration of the region's data
// range and one responder queue pair per session.
//
//   auto vs = VerbsServer::open(options, region, fences, log);  // at start
//   info = vs->setup(session, compute_id, generation, request);  // SetupVerbs (control thread)
//   vs->close(session);                                       // that session ended
//   vs->revoke(compute_id);                                   // FenceTable::fence, after the bit
//
// Fencing (FenceTable's guarantee for verbs): revoke() deregisters the
// compute node's registration. ibv_dereg_mr returns only once the device
// will not use it again, so after revoke() no operation of that node, in
// flight or later, can touch memory: the device answers each with a remote
// access error (the client reports kFenced). Each compute node gets its own
// protection domain, so its queue pairs cannot use another node's rkey even
// if they learned it, and a registration made after an unfence (a new
// domain) is unusable by the queue pairs of the fenced sessions. setup()
// checks the fence bit and generation under the same lock revoke() takes,
// so a SetupVerbs racing a fence either completes first (and is revoked) or
// sees the bit.
//
// The queue pairs of revoked sessions stay until their sessions end, so
// their clients get a prompt remote access error rather than a transport
// timeout.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/logger.h"
#include "common/status.h"
#include "common/transport/verbs_device.h"
#include "common/wire/control.h"
#include "memory/fence_table.h"
#include "memory/region.h"

namespace pandora::memd {

class VerbsServer {
 public:
  // Most queue pairs at once (sessions of all compute nodes together).
  static constexpr size_t kMaxSessions = 4096;

  // Opens the device (VerbsDevice::open's errors).
  static Result<std::unique_ptr<VerbsServer>> open(const VerbsOptions& options, Region& region, FenceTable& fences,
                                                   Logger log);
  ~VerbsServer();
  VerbsServer(const VerbsServer&) = delete;
  VerbsServer& operator=(const VerbsServer&) = delete;

  // Creates and connects the responder queue pair of control session
  // `session` (compute node `compute_id`, logged in at fence generation
  // `generation`). Errors: kFenced, kInvalidArgument (a second SetupVerbs on
  // one session, incompatible link layer), kUnavailable (too many
  // sessions), kIo (a verbs call failed).
  Result<wire::VerbsInfo> setup(uint64_t session, uint16_t compute_id, uint32_t generation,
                                const wire::SetupVerbs& request);
  // Destroys `session`'s queue pair, if it has one; the compute node's
  // registration goes with its last session.
  void close(uint64_t session);
  // See the file comment. Idempotent.
  void revoke(uint16_t compute_id);

  const VerbsDevice& device() const { return *dev_; }

 private:
  // One compute node's access: its own domain and registration. Sessions
  // hold it; the registration is dropped at revoke(), the domain when the
  // last session of that access has gone.
  struct Access;
  struct Session;

  VerbsServer(std::unique_ptr<VerbsDevice> dev, Region& region, FenceTable& fences, Logger log);

  std::unique_ptr<VerbsDevice> dev_;
  Region& region_;
  FenceTable& fences_;
  Logger log_;
  mutable std::mutex mu_;
  VerbsPtr<ibv_cq> cq_;  // shared by every responder queue pair; never gets work
  std::map<uint16_t, std::shared_ptr<Access>> access_;
  std::map<uint64_t, std::unique_ptr<Session>> sessions_;
};

}  // namespace pandora::memd
