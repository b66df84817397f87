// The failure detector's decision logic (ARCHITECTURE.md 5, step 1; seed
// 4.3.2.4): pure, no sockets and no clock reads, so it is tested with a fake
// clock. Times are CLOCK_MONOTONIC nanoseconds passed in by the caller.
//
// Each replica watches nodes (compute pids, memory node ids) and hears their
// heartbeats; it suspects a node it has not heard for longer than `timeout`.
// Replicas exchange their suspect sets; a node is *failed* when a majority of
// the N replicas suspect it, this replica's own view included. A peer's
// report counts only while it is fresh (at most `report_ttl` old): a replica
// that stops reporting (it heard the node again, or it is gone) stops
// counting. So a node that reaches a majority of replicas is never failed,
// and one that reaches none is failed once a majority is up to see it.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "common/wire/heartbeat.h"

namespace pandora::fd {

struct NodeKey {
  wire::SenderKind kind = wire::SenderKind::kCompute;
  uint32_t id = 0;
  auto operator<=>(const NodeKey&) const = default;
};

struct MonitorOptions {
  uint32_t self = 1;                      // this replica's id, 1..replicas
  uint32_t replicas = 3;                  // N: a majority is more than N/2
  uint64_t timeout_ns = 5'000'000;        // silence after which this replica suspects a compute node
  // ... a memory node: longer, since failing one over is costly and final
  // (a replica lost for good, a stop-the-world pause). 0: timeout_ns.
  uint64_t memory_timeout_ns = 0;
  uint64_t report_ttl_ns = 750'000;       // how long a peer's report counts (3 x the 250 us tick)
};

class FailureMonitor {
 public:
  explicit FailureMonitor(MonitorOptions options) : options_(options) {}

  const MonitorOptions& options() const { return options_; }

  // Starts watching `key`; it counts as heard at `now`, so a node is given a
  // full timeout to send its first heartbeat. Watching a watched node
  // changes nothing.
  void watch(NodeKey key, uint64_t now);
  // Forgets the node, in this view and in every peer's report.
  void unwatch(NodeKey key);
  bool watching(NodeKey key) const { return watched_.contains(key); }
  size_t watched_count() const { return watched_.size(); }
  size_t watched_count(wire::SenderKind kind) const {
    size_t n = 0;
    for (const auto& [key, last] : watched_) n += key.kind == kind ? 1 : 0;
    return n;
  }

  // A heartbeat of `key` at `now`. False (and ignored) when not watched.
  bool heard(NodeKey key, uint64_t now);
  std::optional<uint64_t> last_heard(NodeKey key) const;

  // Watched nodes not heard for more than the timeout, in key order.
  std::vector<NodeKey> local_suspects(uint64_t now) const;
  // Watched nodes of `kind` that will be suspected within `within_ns`
  // unless heard again (suspected already included), in key order.
  std::vector<NodeKey> suspected_within(uint64_t now, uint64_t within_ns, wire::SenderKind kind) const;

  // The earliest time after `now` at which a watched node not suspected at
  // `now` becomes suspected unless heard again (UINT64_MAX: none). Lets the
  // caller sleep until then instead of evaluating every tick: heartbeats
  // only move this later, and peers' reports are evaluated as they arrive.
  uint64_t next_suspicion(uint64_t now) const;

  // The latest suspect set of replica `replica_id` for nodes of `kind`
  // (replaces its previous one for that kind; an empty set clears it).
  // Ignored for this replica's own id and ids outside 1..N, so no report can
  // stand for more than one vote. Ids that are not watched are kept (the
  // report may arrive before watch()) but never make a node failed.
  void report(uint32_t replica_id, wire::SenderKind kind, std::span<const uint32_t> ids, uint64_t now);

  // Watched nodes suspected by a majority of the N replicas at `now`.
  std::vector<NodeKey> failed(uint64_t now) const;

  // How many replicas (own view included, fresh reports only) suspect `key`.
  uint32_t votes(NodeKey key, uint64_t now) const;

 private:
  struct Report {
    std::set<uint32_t> ids;
    uint64_t at = 0;
  };
  uint64_t timeout_of(const NodeKey& key) const {
    return key.kind == wire::SenderKind::kMemory && options_.memory_timeout_ns != 0 ? options_.memory_timeout_ns
                                                                                     : options_.timeout_ns;
  }
  bool suspected_here(const NodeKey& key, uint64_t last_heard, uint64_t now) const {
    return now > last_heard && now - last_heard > timeout_of(key);
  }
  bool fresh(const Report& r, uint64_t now) const { return now <= r.at || now - r.at <= options_.report_ttl_ns; }

  MonitorOptions options_;
  std::map<NodeKey, uint64_t> watched_;  // -> last heard
  std::map<std::pair<uint32_t, wire::SenderKind>, Report> reports_;  // (replica, kind) -> its latest set
};

}  // namespace pandora::fd
