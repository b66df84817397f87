// One replica of the failure detector, `pandora-fd` (ARCHITECTURE.md 1, 5;
// seed 4.3.2.4). N replicas run (3 in every script and test); all durable
// state is in ZooKeeper (recovery/registry.h), so any replica can die.
//
// Every replica: receives the authenticated UDP heartbeats of every
// registered compute node (recovery/fd/detector.h), watches the registered
// pids in ZooKeeper, and tells the other replicas whom it suspects. The
// leader (lowest ephemeral sequential node under <root>/fd/election) also
// runs the recovery coordinator: for each compute pid that a MAJORITY of
// replicas have missed for the timeout, fence -> log recovery -> truncate
// -> publish -> push -> sweep (recovery/recovery_coordinator.h). A new
// leader first re-runs every recovery not marked done and recovers the
// data-plane identity of the leader it replaces.
//
// A leader is replaced when its ZooKeeper session expires (it died, or
// lost ZooKeeper) or sooner, when it is deposed: the replicas heartbeat
// each other, and the leader's successor (the next election node) that has
// not heard the leader for `leader_timeout` while it hears a majority of
// the replicas without it, and its own detector thread is not behind
// (fd::Detector::judge_leader), deletes the leader's election node and
// leads.
// The old leader may be alive (stopped, starved or cut off, its session
// intact): every ZooKeeper write of a leader is guarded by its election
// node (zk::ZkClient::guard_writes), so none lands once it is deposed, and
// its data-plane identity is recovered (fenced) by the new leader first,
// so none of its memory operations lands either. A deposed leader finds
// out by a watch on its node (or a refused write) and rejoins as a
// follower with a new session.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/endpoint.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/transport/client.h"
#include "common/zk/zk_client.h"
#include "compute/step_hook.h"

namespace pandora {

struct FdReplicaOptions {
  zk::ZkOptions zk;
  std::string root = "/pandora";
  uint64_t cluster_id = 0;
  std::string secret;
  uint32_t replica_id = 1;   // 1..replicas
  uint32_t replicas = 3;     // N: a node fails when floor(N/2)+1 replicas miss it
  Endpoint listen{"127.0.0.1", 0};
  std::chrono::microseconds timeout{5000};         // compute nodes
  std::chrono::microseconds memory_timeout{100000};  // memory nodes (fd::DetectorOptions)
  std::chrono::microseconds tick{250};
  // A leader not heard this long by its successor is deposed (see above);
  // 0: never (a successor leads once the leader's session expires). The
  // replicas heartbeat each other every leader_timeout / 20 (1..25 ms);
  // with 0 they do not.
  std::chrono::milliseconds leader_timeout{500};
  Backend backend = Backend::kTcp;      // the leader's data plane to the memory nodes
  std::chrono::milliseconds op_timeout{2000};
  // Told of each step of the leader's recoveries (may be null). pandora-fd's
  // test-only --crash-at passes a CrashInjector (Debug builds only: test
  // machinery is never compiled into a release binary).
  StepHook* step_hook = nullptr;
  // Test only: once a member refresh has found a compute node to watch,
  // every later one stands still until the replica stops (as if ZooKeeper
  // never answered those reads): shows that detection and recovery do not
  // wait for them.
  bool stall_member_refreshes = false;
};

// Runs until `stop` turns true; returns the process exit code (0 = clean).
int run_fd_replica(const FdReplicaOptions& options, const Logger& logger, const std::atomic<bool>& stop);

}  // namespace pandora
