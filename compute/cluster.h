// A compute node's view of the cluster, built at start (bootstrap):
//
//   auto cluster = Cluster::connect(config, logger);   // control sessions, RegionInfo, node ids
//   create_tables(**cluster, specs, ...);               // loader only (compute/loader.h)
//   (*cluster)->load_directory();                       // every node's directory, checked identical
//
// Memory nodes are addressed by *node index* (position in --memory-nodes)
// everywhere in compute/; placement speaks node ids, so the cluster keeps
// both maps and precomputes, per shard, the node indexes of its replicas.
// The cluster also owns this node's failed-ids and one "bootstrap" data
// connection per node for code running on the starting thread (loader,
// directory reads, recovery tools). Worker threads open their own
// connections with open_connections().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/time_source.h"
#include "common/failed_ids.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/table_directory.h"
#include "common/transport/client.h"
#include "compute/compute_config.h"
#include "common/lane_map.h"
#include "compute/placement.h"

namespace pandora {

struct MemoryNodeInfo {
  Endpoint endpoint;
  wire::RegionInfo region;
};

class Cluster {
 public:
  // Connects the control plane of every memory node, checks cluster ids and
  // distinct node ids, builds placement from config.replicas/config.shards
  // and opens the bootstrap data connections.
  static Result<std::unique_ptr<Cluster>> connect(const ComputeConfig& config, const Logger& logger);

  // A cluster whose memory nodes are known without asking them and whose
  // data connections come from `open` (one call per node index, in order):
  // the deterministic simulation's in-process memory nodes (testing/sim).
  // Checks the nodes as connect() does; `time` (not owned) is the time
  // the engine reads.
  using ConnectionFactory = std::function<Result<std::unique_ptr<Connection>>(size_t node_index)>;
  static Result<std::unique_ptr<Cluster>> attach(const ComputeConfig& config, const Logger& logger,
                                                 std::vector<MemoryNodeInfo> nodes, ConnectionFactory open,
                                                 const TimeSource& time);

  const ComputeConfig& config() const { return config_; }
  const Logger& logger() const { return logger_; }
  size_t node_count() const { return nodes_.size(); }
  const MemoryNodeInfo& node(size_t index) const { return nodes_[index]; }
  std::optional<size_t> index_of(uint32_t node_id) const;

  // The table area every node offers: [table_begin, table_limit), i.e. the
  // common table offset and the smallest log offset.
  uint64_t table_begin() const { return table_begin_; }
  uint64_t table_limit() const { return table_limit_; }
  // Lanes of `lane_bytes` that fit every node's log area.
  uint32_t lanes_that_fit(uint32_t lane_bytes) const;

  // Reads the table directory from every node; they must be identical
  // (kMismatch naming the nodes otherwise) and match this cluster id. Adopts
  // its shards, replicas and lane geometry (placement is rebuilt from them)
  // and checks this node's lanes fit.
  Status load_directory();
  bool has_directory() const { return directory_.has_value(); }
  const TableDirectory& directory() const { return *directory_; }
  const Placement& placement() const { return *placement_; }
  const LaneMap& lanes() const { return lanes_; }
  // This node's log lanes (ComputeConfig::effective_lane_slot).
  LaneSlot lane_slot() const { return config_.effective_lane_slot(); }

  // Node indexes of the live replicas of `shard` in the applied memory
  // configuration, preference order ([0] = primary): f+1 of them until a
  // memory node fails (see apply_memory_failures()).
  std::span<const uint16_t> replica_indexes(uint32_t shard) const {
    return {&live_replicas_[size_t{shard} * replicas_], live_counts_[shard]};
  }
  uint32_t replicas() const { return replicas_; }
  // Node indexes of `pid`'s live log nodes (applied configuration).
  std::vector<size_t> log_node_indexes(uint16_t pid) const;

  // Memory-node fail-over (ARCHITECTURE.md 5; seed 4.3.2.5), in two steps:
  //
  //  * declare_memory_failed(index): the failure detector says the node is
  //    gone. Any thread, any time. A coordinator whose operation failed on
  //    a declared node may give up on that node (compute/txn/failover.h):
  //    decide its transaction by the live replicas instead of halting.
  //  * apply_memory_failures(): primaries and log nodes switch to the live
  //    replicas. Only while no transaction of this compute node is in
  //    flight (every coordinator parked for the fail-over's pause): a
  //    transaction that latched on the dead primary must be decided before
  //    anyone may latch the object on its new primary. kUnavailable (and
  //    nothing changes) when some shard or log would have no live replica.
  //
  // Indexes are below kMaxMemoryNodes; a declaration is withdrawn only by
  // restore_memory_node().
  static constexpr size_t kMaxMemoryNodes = 64;
  void declare_memory_failed(size_t index) {
    declared_failed_.fetch_or(uint64_t{1} << index, std::memory_order_acq_rel);
  }
  bool memory_failed(size_t index) const {
    return (declared_failed_.load(std::memory_order_acquire) >> index) & 1;
  }
  uint64_t declared_failed_mask() const { return declared_failed_.load(std::memory_order_acquire); }
  // Nodes a coordinator waited for (ComputeConfig::memory_failover_wait)
  // and that were not declared failed: a broken link, not a fail-over. Once
  // any is, no coordinator of this process waits for a declaration again
  // (compute/txn/failover.h). note_waited_out logs each node once.
  uint64_t waited_out_mask() const { return waited_out_.load(std::memory_order_acquire); }
  void note_waited_out(uint64_t nodes, std::chrono::milliseconds waited);
  Status apply_memory_failures();
  // The inverse, once the node is filled again (re-replication,
  // recovery/replica_rebuild.h): node `index`, failed over, is back at
  // `endpoint`. Logs in there (the region must carry the node's id, this
  // cluster's id and the other nodes' layout), takes a bootstrap
  // connection to it, and puts it back into placement: primaries and log
  // nodes switch back and memory_config_version() moves, so each worker
  // opens its data connection to the node before its next transaction
  // (Worker::refresh_connections). Only while no transaction of this
  // compute node is in flight (parked for the pause). Ok and nothing done
  // for a node already live at `endpoint`. A non-zero `incarnation` (the
  // cluster record's binding: the daemon that was filled) must be the
  // daemon's there: kMismatch otherwise (it restarted, maybe empty).
  Status restore_memory_node(size_t index, const Endpoint& endpoint, uint64_t incarnation);
  // The checks restore_memory_node() makes of the daemon at `endpoint` for
  // failed-over node `index`, and a data connection to it; changes nothing
  // here (the re-replication writes through it before the node is back).
  Result<std::unique_ptr<Connection>> connect_replacement(size_t index, const Endpoint& endpoint,
                                                          wire::RegionInfo* region = nullptr) const;
  // A fresh data connection to live node `index`.
  Result<std::unique_ptr<Connection>> open_connection(size_t index) const;
  // The nodes excluded from placement by the last apply, and how many
  // applies changed it (a coordinator re-reads its log nodes when it moves).
  uint64_t applied_failed_mask() const { return applied_failed_.load(std::memory_order_acquire); }
  // Node `index` is out of the applied configuration (failed over).
  bool failed_over(size_t index) const { return (applied_failed_mask() >> index) & 1; }
  uint64_t memory_config_version() const { return config_version_.load(std::memory_order_acquire); }
  // Region offset of lane `lane` on node `index`.
  uint64_t lane_address(size_t index, uint32_t lane) const {
    return lanes_.lane_offset(nodes_[index].region.log_offset, lane);
  }

  // One data connection per node for the bootstrap thread (not thread-safe).
  std::span<Connection* const> bootstrap_connections() const { return bootstrap_raw_; }
  // A fresh data connection per node, for a worker thread.
  Result<std::vector<std::unique_ptr<Connection>>> open_connections() const;

  // The time the engine reads (system_time() unless attached with another).
  const TimeSource& time() const { return *time_; }

  FailedIds& failed_ids() { return failed_ids_; }
  const FailedIds& failed_ids() const { return failed_ids_; }

 private:
  Cluster(ComputeConfig config, const Logger& logger) : config_(std::move(config)), logger_(logger) {}
  Status rebuild_placement(uint32_t replicas, uint32_t shards);
  // The checks and set-up shared by connect() and attach(), once nodes_ is set.
  Status adopt_nodes();

  ComputeConfig config_;
  Logger logger_;
  std::vector<MemoryNodeInfo> nodes_;
  uint64_t table_begin_ = 0;
  uint64_t table_limit_ = 0;
  std::optional<TableDirectory> directory_;
  std::optional<Placement> placement_;
  LaneMap lanes_;
  // Rebuilds live_replicas_/live_counts_ for `failed` (kUnavailable when a
  // shard would have none; then nothing changes).
  Status build_live_replicas(uint64_t failed);

  uint32_t replicas_ = 0;
  std::vector<uint16_t> shard_replicas_;  // every replica, shards x replicas_
  std::vector<uint16_t> live_replicas_;   // the live ones first, same stride
  std::vector<uint32_t> live_counts_;     // per shard
  std::atomic<uint64_t> declared_failed_{0};
  std::atomic<uint64_t> waited_out_{0};
  std::atomic<uint64_t> applied_failed_{0};
  std::atomic<uint64_t> config_version_{0};
  std::vector<std::unique_ptr<Connection>> bootstrap_;
  std::vector<Connection*> bootstrap_raw_;
  FailedIds failed_ids_;
  ConnectionFactory open_;  // attach() only
  const TimeSource* time_ = &system_time();
};

}  // namespace pandora
