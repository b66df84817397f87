// Configuration of a compute node (the compute library inside an
// application), validated once at start.
//
// Binaries share flag names by declaring them through ComputeFlags:
//
//   ComputeFlags flags;
//   OptionSet opts("pandora-bench", "...");
//   flags.declare(opts);                       // --memory-nodes, --cluster-id, ...
//   opts.parse(argc, argv, &msg);
//   Result<ComputeConfig> cfg = flags.resolve(); // reads the secret file, validates
//
// Tests build a ComputeConfig directly and call validate().
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/endpoint.h"
#include "common/lane_map.h"
#include "common/options.h"
#include "common/status.h"
#include "common/transport/client.h"

namespace pandora {

// Which transaction protocol the coordinators run (chosen at run time; the
// same binary carries all three).
enum class ProtocolMode : uint8_t {
  kPandora = 1,     // ARCHITECTURE.md 4: pid-carrying latches, logging phase after validation
  kFord = 2,        // owner-less latches, per-object undo logs written during execution
  kLogALatch = 3,   // pandora + one extra log WRITE (f+1 log nodes) before every latch CAS
};

std::string_view protocol_name(ProtocolMode m);
Result<ProtocolMode> parse_protocol(std::string_view text);  // "pandora" | "ford" | "log-a-latch"

// Test-only switches, each re-creating one FORD bug of seed Table 5.1 in the
// pandora path so the litmus suite can prove it catches it. Accepted only by
// builds that define PANDORA_BUG_SWITCHES (Debug builds, see
// compute/CMakeLists.txt); a release binary refuses --bug.
struct BugSwitches {
  bool complicit_abort = false;           // abort releases every write-set latch, acquired or not
  bool missing_insert_log = false;        // inserts are not logged
  bool covert_latches = false;            // validation ignores latches of read objects
  bool relaxed_latches = false;           // validation READs posted before latch CASes complete
  bool lost_decision = false;             // record logged before validation (a logged txn can abort)
  bool logging_without_latching = false;  // record logged concurrently with the latch CASes

  bool any() const {
    return complicit_abort || missing_insert_log || covert_latches || relaxed_latches || lost_decision ||
           logging_without_latching;
  }
  std::string to_string() const;  // "complicit-abort,covert-latches" or "none"
};

// Whether this build accepts bug switches.
constexpr bool bug_switches_available() {
#ifdef PANDORA_BUG_SWITCHES
  return true;
#else
  return false;
#endif
}

// Parses a comma-separated list of switch names ("" or "none" = no switch).
Result<BugSwitches> parse_bug_switches(std::string_view text);

struct ComputeConfig {
  uint64_t cluster_id = 0;
  std::string secret;                      // the cluster secret itself (from --secret-file)
  uint16_t compute_id = 0;                 // this node's pid, 1..65535
  std::vector<Endpoint> memory_nodes;      // control endpoints of every memory daemon
  // Memory nodes of memory_nodes that the failure detector declared failed
  // (the cluster record's failed_memory): not contacted, out of placement
  // from the start (Cluster::connect).
  std::vector<FailedMemoryNode> failed_memory_nodes;
  Backend backend = Backend::kTcp;
  uint32_t replicas = 1;                   // f+1
  uint32_t threads = 1;                    // worker threads
  uint32_t coordinators = 4;               // coroutines per worker thread
  ProtocolMode protocol = ProtocolMode::kPandora;
  BugSwitches bugs;
  std::chrono::milliseconds op_timeout{5000};
  std::chrono::milliseconds connect_timeout{5000};
  // How long a coordinator whose operations failed on a memory node waits
  // for the failure detector to declare that node failed before it halts
  // (compute/txn/failover.h). 0 (no failure detector): it halts at once.
  std::chrono::milliseconds memory_failover_wait{0};
  // tcp: a MAC on every data-plane frame (ConnectOptions::frame_mac).
  bool frame_mac = false;
  // verbs: the RDMA device, port, GID and MTU (ConnectOptions::verbs).
  VerbsOptions verbs;
  // This compute process's incarnation (ClientIdentity::incarnation): drawn
  // when the config is made and shared by its copies, so every connection
  // of the process carries the same one.
  uint64_t incarnation = new_incarnation();
  uint32_t shards = 1024;                  // placement shards (fixed for the cluster's life)
  uint32_t lane_bytes = 16 * 1024;         // one log lane (must hold a transaction's record)
  // This node's log lanes (common/lane_map.h). Empty: the fixed slot of
  // compute_id (no registry); a registry (recovery/registry.h) leases one of
  // lanes_needed() lanes and sets it here.
  LaneSlot lane_slot;
  // Membership in a cluster run by the failure detector (recovery/membership.h):
  // with `zookeeper` set, the registry assigns compute_id and lane_slot,
  // and memory_nodes may come from the cluster record.
  std::string zookeeper;                   // "HOST:PORT,..." or empty
  std::string zk_root = "/pandora";
  std::chrono::microseconds fd_heartbeat{1000};
  // Where this node listens for the FD leader's failed-pid pushes (numeric
  // address; the registry records it for the leader).
  std::string push_host = "127.0.0.1";

  // Every coordinator of the node, across threads. Also the coordinator
  // field of this node's latch words, so it must fit the lane map.
  uint32_t total_coordinators() const { return threads * coordinators; }
  // Lanes a leased slot must hold: one per coordinator plus one for a
  // blocking client (the bench's check, tools) that runs beside them.
  uint32_t lanes_needed() const { return total_coordinators() + 1; }
  // lane_slot, or the fixed slot of compute_id when none was leased.
  LaneSlot effective_lane_slot() const;

  // kInvalidArgument with a message naming the option and what is allowed.
  Status validate() const;

  ClientIdentity identity() const;
  ConnectOptions connect_options() const;
};

// kInvalidArgument (naming --lane-bytes) unless `lane_bytes` is a size a log
// lane may have.
Status validate_lane_bytes(uint64_t lane_bytes);

// The flag form of ComputeConfig: what OptionSet binds to.
struct ComputeFlags {
  std::string memory_nodes;  // "HOST:PORT,HOST:PORT"
  uint64_t cluster_id = 0;
  std::string secret_file;
  uint64_t compute_id = 0;
  std::string backend = "tcp";
  uint64_t replicas = 0;  // 0: min(2, number of memory nodes)
  uint64_t threads = 1;
  uint64_t coordinators = 4;
  std::string protocol = "pandora";
  std::string bug = "none";
  uint64_t op_timeout_ms = 5000;
  uint64_t memory_failover_wait_ms = 10000;
  uint64_t shards = 1024;
  uint64_t lane_bytes = 16 * 1024;
  std::string zookeeper;
  std::string zk_root = "/pandora";
  uint64_t fd_heartbeat_us = 1000;
  std::string push_listen = "127.0.0.1";
  bool frame_mac = false;
  VerbsFlags rdma;

  // Declares --memory-nodes, --cluster-id, --secret-file, --compute-id,
  // --backend, --replicas, --threads, --coordinators, --protocol, --bug,
  // --op-timeout-ms, --memory-failover-wait-ms, --shards, --lane-bytes, --zookeeper, --zk-root,
  // --fd-heartbeat-us, --push-listen, --frame-mac and the --rdma-* flags of
  // verbs.
  void declare(OptionSet& opts);
  // Parses the lists, reads the secret file, validates. With --zookeeper,
  // compute_id and lane_slot are left for the registry to assign (and
  // memory_nodes may be empty): validate() again once they are set.
  Result<ComputeConfig> resolve() const;
};

}  // namespace pandora
