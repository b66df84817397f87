// `pandora-ctl stats`: what each memory daemon has served and refused, and
// whether it is the daemon the cluster record names.
//
// A daemon's counters live in its process (wire::StatsReply over an admin
// login) and were visible only in its shutdown line; an operator of a
// running cluster needs them while it runs, and, since the record binds each
// live node id to one daemon (ClusterRecord::memory_incarnations), to see
// at once a daemon that is not the bound one (it restarted since the record
// was written: the failure detector does not hear it as the node) or the
// old daemon of a failed-over node that still answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/endpoint.h"
#include "common/transport/client.h"
#include "common/wire/control.h"

namespace pandora::ctl {

// One memory node as the caller knows it: from the cluster record, or (no
// ZooKeeper) an address given on the command line.
struct MemoryNodeTarget {
  std::optional<uint32_t> node_id;  // the record's; nullopt: whatever the daemon serves
  Endpoint endpoint;
  bool failed_over = false;         // the record lists it failed over (no daemon expected)
  std::optional<uint64_t> bound;    // the record's binding (memory_incarnations)
};

struct MemoryNodeReport {
  MemoryNodeTarget target;
  bool answered = false;  // an authentic daemon of this cluster logged us in
  std::string error;      // why not (answered == false)
  wire::RegionInfo region;
  wire::StatsReply stats;
  // What is wrong with this node, for a live one: the daemon serves another
  // node id, or is not the bound one. Empty when fine.
  std::string problem;
  // A failed-over node whose daemon still answers with its node id: it
  // must be stopped before the node is replaced.
  bool old_daemon_answers = false;

  // A live node whose daemon did not answer.
  bool unreachable() const { return !answered && !target.failed_over; }
};

// Logs in (admin) at every target, at most `timeout` each, and reads its
// region and counters. Never fails as a whole: each node's outcome is in
// its report.
std::vector<MemoryNodeReport> collect_memory_node_stats(const std::vector<MemoryNodeTarget>& targets,
                                                        const ClientIdentity& admin,
                                                        std::chrono::milliseconds timeout);

// Human-readable, a few lines per node.
std::string render_text(const std::vector<MemoryNodeReport>& reports);
// The memory nodes' part of the JSON document: {"memory_nodes": [...],
// "problems": N, "unreachable": N}. Incarnations are hex strings (JSON
// numbers lose 64-bit precision in many readers).
nlohmann::json memory_nodes_json(const std::vector<MemoryNodeReport>& reports);

// The command's exit code: 1 when some node has a problem, else 4 when a
// live node did not answer, else 0 (pandora-ctl's codes).
int stats_exit_code(const std::vector<MemoryNodeReport>& reports);

}  // namespace pandora::ctl
