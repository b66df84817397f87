#include "deploy/ctl/fd_replica_stats.h"

#include <fmt/format.h>

#include <algorithm>

namespace pandora::ctl {

std::string render_fd_text(const std::vector<fd::ReplicaStatsAnswer>& answers) {
  if (answers.empty()) return "no failure-detector replica is registered (is pandora-fd running?)\n";
  std::string out;
  for (const fd::ReplicaStatsAnswer& a : answers) {
    const std::string where = fmt::format("detector replica {} at {}", a.replica_id, a.endpoint.to_string());
    if (!a.answered) {
      out += fmt::format("{}: UNREACHABLE: {}\n", where, a.error);
      continue;
    }
    const wire::ReplicaStats& s = a.stats;
    out += fmt::format("{}{}: process {:#x}, up {:.1f} s, following cluster record epoch {}\n", where,
                       s.leader ? " (leader)" : "", a.incarnation, static_cast<double>(s.uptime_ms) / 1000.0,
                       s.record_epoch);
    out += fmt::format("  watching {} compute node(s) and {} memory node(s); {} suspected now, {} failed by a "
                       "majority and not yet handled ({} in all)\n",
                       s.watched_compute, s.watched_memory, s.suspected, s.failed_latched, s.failed_detected);
    out += fmt::format("  {} datagrams: {} heartbeats of watched nodes, {} of unwatched ones, {} refused as not the "
                       "bound daemon's\n",
                       s.datagrams, s.heartbeats, s.heartbeats_unwatched, s.heartbeats_foreign);
    out += fmt::format("  suspicion reports {} received ({} under an older record), {} sent; {} failed-pid "
                       "push(es); {} send error(s)\n",
                       s.reports_received, s.reports_stale, s.reports_sent, s.pushes_sent, s.send_errors);
    out += fmt::format("  refused {} malformed, {} unauthenticated, {} replayed and {} unexpected datagram(s); "
                       "stats queries {} answered, {} over the rate limit\n",
                       s.rejected_malformed, s.rejected_auth, s.rejected_replay, s.rejected_unexpected,
                       s.queries_answered, s.queries_refused);
    if (a.fields < wire::kReplicaStatsFields.size()) {
      out += fmt::format("  (an older pandora-fd: {} of {} values answered)\n", a.fields,
                         wire::kReplicaStatsFields.size());
      continue;
    }
    std::string watch;
    if (s.leader) {
      watch = "leads";
    } else if (s.leader_replica == 0) {
      watch = "knows no leader";
    } else {
      watch = fmt::format("follows replica {}, last heard {} ms ago{}", s.leader_replica, s.leader_silence_ms,
                          s.successor ? "; next in line (deposes it if silent too long)" : "");
    }
    out += fmt::format("  {}; {} leader(s) deposed; peer heartbeats {} received, {} sent\n", watch, s.depositions,
                       s.peer_heartbeats, s.peer_heartbeats_sent);
  }
  return out;
}

nlohmann::json fd_replicas_json(const std::vector<fd::ReplicaStatsAnswer>& answers) {
  nlohmann::json out = nlohmann::json::array();
  for (const fd::ReplicaStatsAnswer& a : answers) {
    nlohmann::json r;
    r["replica_id"] = a.replica_id;
    r["endpoint"] = a.endpoint.to_string();
    r["answered"] = a.answered;
    r["error"] = a.error;
    if (a.answered) {
      r["incarnation"] = fmt::format("{:#x}", a.incarnation);
      nlohmann::json s = nlohmann::json::object();
      // Only what the replica answered (an older one knows fewer fields).
      for (size_t i = 0; i < std::min(a.fields, wire::kReplicaStatsFields.size()); ++i) {
        const wire::ReplicaStatsField& f = wire::kReplicaStatsFields[i];
        s[std::string(f.name)] = a.stats.*f.member;
      }
      r["stats"] = std::move(s);
    }
    out.push_back(std::move(r));
  }
  return out;
}

size_t unanswered(const std::vector<fd::ReplicaStatsAnswer>& answers) {
  size_t n = 0;
  for (const fd::ReplicaStatsAnswer& a : answers) n += a.answered ? 0 : 1;
  return n;
}

}  // namespace pandora::ctl
