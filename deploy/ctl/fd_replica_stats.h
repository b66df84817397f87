// `pandora-ctl stats`, the failure detector's part: each registered
// pandora-fd replica's counters and state, as it answered a StatsQuery
// (recovery/fd/stats_query.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recovery/fd/stats_query.h"

namespace pandora::ctl {

// Human-readable, a few lines per replica; a line saying none is registered
// when `answers` is empty.
std::string render_fd_text(const std::vector<fd::ReplicaStatsAnswer>& answers);
// [{"replica_id": 1, "endpoint": ..., "answered": true, "error": "",
//   "incarnation": "0x...", "stats": {<wire::kReplicaStatsFields names>}}, ...]
nlohmann::json fd_replicas_json(const std::vector<fd::ReplicaStatsAnswer>& answers);
// Registered replicas that did not answer.
size_t unanswered(const std::vector<fd::ReplicaStatsAnswer>& answers);

}  // namespace pandora::ctl
