// Asking the failure-detector replicas for their counters and state
// (pandora-ctl stats): one authenticated StatsQuery datagram to each
// (common/wire/heartbeat.h), answers matched by the query's incarnation.
//
// A replica's counters live in its process and were visible nowhere while
// it ran: whether it hears the nodes it watches, refuses forged or foreign
// heartbeats, sees stale reports, leads. UDP may lose a query or its
// answer, and a replica's replay guard refuses a query that reaches it
// after a newer one of another tool; unanswered replicas are asked again
// (a fresh seq and send time) until the timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/endpoint.h"
#include "common/wire/heartbeat.h"

namespace pandora::fd {

struct ReplicaStatsAnswer {
  uint32_t replica_id = 0;
  Endpoint endpoint;
  bool answered = false;
  std::string error;         // why not (answered == false)
  uint64_t incarnation = 0;  // the answering process's (a restarted replica has a new one)
  wire::ReplicaStats stats;
  // The first `fields` of wire::kReplicaStatsFields were answered (an older
  // replica knows fewer); the others are zero.
  size_t fields = 0;
};

// One answer per replica of `replicas` (id -> its UDP endpoint), in id order.
// Never fails as a whole; a bad endpoint or no answer within `timeout` is that
// replica's error. Answers are accepted only when authentic (secret, cluster),
// from the replica id asked at that endpoint, and to this call's query.
std::vector<ReplicaStatsAnswer> query_replica_stats(const std::map<uint32_t, Endpoint>& replicas,
                                                    uint64_t cluster_id, const std::string& secret,
                                                    std::chrono::milliseconds timeout);

}  // namespace pandora::fd
