#include "deploy/ctl/memory_node_stats.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pandora::ctl {
namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }
std::string hex(uint64_t v) { return fmt::format("{:#x}", v); }

std::string name_of(const MemoryNodeReport& r) {
  const uint32_t id = r.target.node_id.value_or(r.region.node_id);
  return r.target.node_id || r.answered ? fmt::format("memory node {}", id) : "memory daemon";
}

}  // namespace

std::vector<MemoryNodeReport> collect_memory_node_stats(const std::vector<MemoryNodeTarget>& targets,
                                                        const ClientIdentity& admin,
                                                        std::chrono::milliseconds timeout) {
  std::vector<MemoryNodeReport> out;
  for (const MemoryNodeTarget& t : targets) {
    MemoryNodeReport r;
    r.target = t;
    auto ctl = ControlClient::connect(t.endpoint, admin, timeout);
    if (!ctl) {
      r.error = ctl.status().to_string();
      out.push_back(std::move(r));
      continue;
    }
    r.region = (*ctl)->region();
    auto st = (*ctl)->stats();
    if (!st) {
      r.error = "stats: " + st.status().to_string();
      out.push_back(std::move(r));
      continue;
    }
    r.answered = true;
    r.stats = *st;
    if (t.failed_over) {
      r.old_daemon_answers = !t.node_id || r.region.node_id == *t.node_id;
    } else if (t.node_id && r.region.node_id != *t.node_id) {
      r.problem = fmt::format("the daemon at {} serves memory node {}, not {}", t.endpoint.to_string(),
                              r.region.node_id, *t.node_id);
    } else if (t.bound && r.region.daemon_incarnation != *t.bound) {
      r.problem = fmt::format("daemon {} is not the one the cluster record binds the node to ({}): it started "
                              "after the record was written, and the failure detector does not hear it as the "
                              "node (pandora-ctl set-memory-nodes records it)",
                              hex(r.region.daemon_incarnation), hex(*t.bound));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string render_text(const std::vector<MemoryNodeReport>& reports) {
  std::string out;
  for (const MemoryNodeReport& r : reports) {
    const std::string state = r.target.failed_over ? " (failed over)" : "";
    if (!r.answered) {
      out += fmt::format("{} at {}{}: {}{}\n", name_of(r), r.target.endpoint.to_string(), state,
                         r.target.failed_over ? "no daemon answers, as expected: " : "UNREACHABLE: ", r.error);
      continue;
    }
    std::string who = fmt::format("daemon {}", hex(r.region.daemon_incarnation));
    if (r.target.failed_over) {
      who += r.old_daemon_answers ? " - its old daemon still answers: stop it before the node is replaced"
                                  : fmt::format(" - serves node {}, not this failed-over one", r.region.node_id);
    } else if (!r.problem.empty()) {
      who += " - PROBLEM: " + r.problem;
    } else if (r.target.bound) {
      who += ", the one the record binds";
    }
    const wire::StatsReply& s = r.stats;
    out += fmt::format("{} at {}{}: {}\n", name_of(r), r.target.endpoint.to_string(), state, who);
    out += fmt::format("  region {}, log area {}\n", mib(r.region.region_size), mib(r.region.log_size));
    out += fmt::format("  served {} reads, {} writes, {} cas, {} faa; {} read, {} written\n", s.reads, s.writes,
                       s.cas, s.faa, mib(s.bytes_read), mib(s.bytes_written));
    out += fmt::format("  connections {} open (this one included), {} in all; {} compute id(s) fenced ({} fence "
                       "request(s) served), {} operation(s) refused as fenced\n",
                       s.connections_current, s.connections_total, s.fenced_nodes, s.fence_requests, s.fenced_ops);
    out += fmt::format("  refused {} login(s), {} malformed frame(s), {} frame(s) with a bad MAC\n", s.auth_failures,
                       s.malformed_frames, s.bad_frame_macs);
  }
  return out;
}

nlohmann::json memory_nodes_json(const std::vector<MemoryNodeReport>& reports) {
  nlohmann::json nodes = nlohmann::json::array();
  uint64_t problems = 0, unreachable = 0;
  for (const MemoryNodeReport& r : reports) {
    nlohmann::json n;
    n["endpoint"] = r.target.endpoint.to_string();
    n["node_id"] = r.target.node_id ? nlohmann::json(*r.target.node_id)
                                    : (r.answered ? nlohmann::json(r.region.node_id) : nlohmann::json(nullptr));
    n["state"] = r.target.failed_over ? "failed-over" : "live";
    n["bound_incarnation"] = r.target.bound ? nlohmann::json(hex(*r.target.bound)) : nlohmann::json(nullptr);
    n["answered"] = r.answered;
    n["error"] = r.error;
    n["problem"] = r.problem;
    n["old_daemon_answers"] = r.old_daemon_answers;
    if (!r.problem.empty()) ++problems;
    if (r.unreachable()) ++unreachable;
    if (r.answered) {
      const wire::StatsReply& s = r.stats;
      n["daemon_incarnation"] = hex(r.region.daemon_incarnation);
      n["served_node_id"] = r.region.node_id;
      n["region_size"] = r.region.region_size;
      n["log_size"] = r.region.log_size;
      n["stats"] = {{"reads", s.reads},
                    {"writes", s.writes},
                    {"cas", s.cas},
                    {"faa", s.faa},
                    {"bytes_read", s.bytes_read},
                    {"bytes_written", s.bytes_written},
                    {"fenced_ops", s.fenced_ops},
                    {"malformed_frames", s.malformed_frames},
                    {"auth_failures", s.auth_failures},
                    {"connections_current", s.connections_current},
                    {"connections_total", s.connections_total},
                    {"fenced_nodes", s.fenced_nodes},
                    {"bad_frame_macs", s.bad_frame_macs},
                    {"fence_requests", s.fence_requests}};
    }
    nodes.push_back(std::move(n));
  }
  nlohmann::json doc;
  doc["memory_nodes"] = std::move(nodes);
  doc["problems"] = problems;
  doc["unreachable"] = unreachable;
  return doc;
}

int stats_exit_code(const std::vector<MemoryNodeReport>& reports) {
  bool problem = false, unreachable = false;
  for (const MemoryNodeReport& r : reports) {
    problem |= !r.problem.empty();
    unreachable |= r.unreachable();
  }
  return problem ? 1 : unreachable ? 4 : 0;
}

}  // namespace pandora::ctl
