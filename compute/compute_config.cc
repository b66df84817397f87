#include "compute/compute_config.h"

#include <arpa/inet.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/secret.h"
#include "common/lane_map.h"

namespace pandora {

namespace {

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

struct BugName {
  std::string_view name;
  bool BugSwitches::*field;
};

constexpr BugName kBugNames[] = {
    {"complicit-abort", &BugSwitches::complicit_abort},
    {"missing-insert-log", &BugSwitches::missing_insert_log},
    {"covert-latches", &BugSwitches::covert_latches},
    {"relaxed-latches", &BugSwitches::relaxed_latches},
    {"lost-decision", &BugSwitches::lost_decision},
    {"logging-without-latching", &BugSwitches::logging_without_latching},
};

}  // namespace

std::string_view protocol_name(ProtocolMode m) {
  switch (m) {
    case ProtocolMode::kPandora: return "pandora";
    case ProtocolMode::kFord: return "ford";
    case ProtocolMode::kLogALatch: return "log-a-latch";
  }
  return "unknown";
}

Result<ProtocolMode> parse_protocol(std::string_view text) {
  if (text == "pandora") return ProtocolMode::kPandora;
  if (text == "ford") return ProtocolMode::kFord;
  if (text == "log-a-latch") return ProtocolMode::kLogALatch;
  return Status(Errc::kInvalidArgument,
                fmt::format("unknown --protocol '{}' (expected pandora, ford or log-a-latch)", text));
}

std::string BugSwitches::to_string() const {
  std::string out;
  for (const auto& b : kBugNames) {
    if (this->*b.field) {
      if (!out.empty()) out += ',';
      out += b.name;
    }
  }
  return out.empty() ? "none" : out;
}

Result<BugSwitches> parse_bug_switches(std::string_view text) {
  BugSwitches bugs;
  if (text.empty() || text == "none") return bugs;
  for (std::string_view item : split_commas(text)) {
    bool found = false;
    for (const auto& b : kBugNames) {
      if (item == b.name) {
        bugs.*b.field = true;
        found = true;
      }
    }
    if (!found) {
      std::string names;
      for (const auto& b : kBugNames) names += fmt::format("{}{}", names.empty() ? "" : ", ", b.name);
      return Status(Errc::kInvalidArgument, fmt::format("unknown --bug '{}' (expected none or any of: {})", item, names));
    }
  }
  return bugs;
}

LaneSlot ComputeConfig::effective_lane_slot() const {
  return lane_slot.empty() ? LaneMap::fixed_slot(compute_id) : lane_slot;
}

Status validate_lane_bytes(uint64_t lane_bytes) {
  if (lane_bytes < kMinLaneBytes || lane_bytes > (64u << 20) || lane_bytes % kLaneAlign != 0) {
    return Status(Errc::kInvalidArgument, fmt::format("--lane-bytes {} must be a multiple of {} in {}..{}",
                                                      lane_bytes, kLaneAlign, kMinLaneBytes, 64u << 20));
  }
  return Status::ok();
}

Status ComputeConfig::validate() const {
  auto bad = [](std::string m) { return Status(Errc::kInvalidArgument, std::move(m)); };
  if (cluster_id == 0) return bad("--cluster-id must be set (non-zero; the memory daemons' cluster id)");
  if (secret.empty()) return bad("the cluster secret is empty (--secret-file)");
  if (compute_id == 0) return bad("--compute-id must be in 1..65535 (0 is never issued: a latch word of 0 means free)");
  if (memory_nodes.empty()) return bad("--memory-nodes needs at least one HOST:PORT");
  for (size_t i = 0; i < memory_nodes.size(); ++i) {
    for (size_t j = i + 1; j < memory_nodes.size(); ++j) {
      if (memory_nodes[i].host == memory_nodes[j].host && memory_nodes[i].port == memory_nodes[j].port) {
        return bad(fmt::format("--memory-nodes lists {} twice", memory_nodes[i].to_string()));
      }
    }
  }
  if (replicas == 0 || replicas > memory_nodes.size()) {
    return bad(fmt::format("--replicas {} must be between 1 and the number of memory nodes ({})", replicas,
                           memory_nodes.size()));
  }
  if (threads == 0 || threads > 256) return bad(fmt::format("--threads {} must be in 1..256", threads));
  if (coordinators == 0 || coordinators > kMaxCoordinatorsPerCompute) {
    return bad(fmt::format("--coordinators {} must be in 1..{}", coordinators, kMaxCoordinatorsPerCompute));
  }
  if (total_coordinators() > kMaxCoordinatorsPerCompute) {
    return bad(fmt::format("--threads {} x --coordinators {} = {} coordinators; a compute node runs at most {}",
                           threads, coordinators, total_coordinators(), kMaxCoordinatorsPerCompute));
  }
  if (lane_slot.empty() && total_coordinators() > kFixedSlotLanes) {
    return bad(fmt::format("--threads {} x --coordinators {} = {} coordinators need a leased lane slot: without a "
                           "registry (--zookeeper) a compute node has the {} lanes of its fixed slot",
                           threads, coordinators, total_coordinators(), kFixedSlotLanes));
  }
  if (!lane_slot.empty() && lane_slot.count < total_coordinators()) {
    return bad(fmt::format("lane slot {} is too small for {} coordinators", lane_slot.to_string(),
                           total_coordinators()));
  }
  if (shards == 0 || shards > (1u << 24)) return bad(fmt::format("--shards {} must be in 1..{}", shards, 1u << 24));
  if (Status s = validate_lane_bytes(lane_bytes); !s) return s;
  if (op_timeout.count() <= 0) return bad("--op-timeout-ms must be positive");
  if (bugs.any() && !bug_switches_available()) {
    return bad(fmt::format("--bug {} needs a build with PANDORA_BUG_SWITCHES (a Debug build); this build refuses "
                           "bug switches",
                           bugs.to_string()));
  }
  if (bugs.any() && protocol != ProtocolMode::kPandora) {
    return bad("--bug switches apply to --protocol pandora only");
  }
  return Status::ok();
}

ClientIdentity ComputeConfig::identity() const {
  ClientIdentity id;
  id.cluster_id = cluster_id;
  id.secret = secret;
  id.role = wire::Role::kCompute;
  id.compute_id = compute_id;
  id.incarnation = incarnation;
  return id;
}

ConnectOptions ComputeConfig::connect_options() const {
  ConnectOptions o;
  o.backend = backend;
  o.connect_timeout = connect_timeout;
  o.op_timeout = op_timeout;
  o.frame_mac = frame_mac;
  o.verbs = verbs;
  return o;
}

void ComputeFlags::declare(OptionSet& opts) {
  opts.add_string("memory-nodes", &memory_nodes,
                  "control endpoints of the memory daemons, HOST:PORT[,HOST:PORT...] (required without --zookeeper, "
                  "which records them)");
  opts.add_u64("cluster-id", &cluster_id, "cluster id (must match the memory daemons)", 1, UINT64_MAX, true);
  opts.add_string("secret-file", &secret_file, "file holding the cluster secret", true);
  opts.add_u64("compute-id", &compute_id,
               "this compute node's pid (1..65535, never reused); required without --zookeeper, whose registry "
               "assigns it",
               1, 65535);
  opts.add_choice("backend", &backend, {"shm", "tcp", "verbs"},
                  "data-plane transport: shm (memory daemons on this host), tcp, verbs (RDMA; see --rdma-*)");
  opts.add_u64("replicas", &replicas,
               "copies of every row (f+1); also the number of log nodes; 0 = min(2, number of memory nodes)", 0,
               64);
  opts.add_u64("threads", &threads, "worker threads", 1, 256);
  opts.add_u64("coordinators", &coordinators, "coordinator coroutines per worker thread", 1, kMaxCoordinatorsPerCompute);
  opts.add_choice("protocol", &protocol, {"pandora", "ford", "log-a-latch"}, "transaction protocol");
  opts.add_string("bug", &bug,
                  "test-only FORD bug switches (Debug builds): none or a comma list of complicit-abort, "
                  "missing-insert-log, covert-latches, relaxed-latches, lost-decision, logging-without-latching");
  opts.add_u64("op-timeout-ms", &op_timeout_ms, "a remote operation unanswered this long fails the connection", 1,
               3600 * 1000);
  opts.add_u64("memory-failover-wait-ms", &memory_failover_wait_ms,
               "with --zookeeper: how long a coordinator whose memory node stopped answering waits for the failure "
               "detector to declare it failed (then its transaction is decided by the live replicas) before it halts",
               0, 3600 * 1000);
  opts.add_u64("shards", &shards, "placement shards (loader only; compute nodes read it from the table directory)", 1,
               1u << 24);
  opts.add_size("lane-bytes", &lane_bytes, "bytes of one log lane (loader only; read from the directory)",
                kMinLaneBytes, 64u << 20);
  opts.add_string("zookeeper", &zookeeper,
                  "join a cluster run by the failure detector: ZooKeeper HOST:PORT,... (the registry assigns the "
                  "pid and lane slot; heartbeats go to every pandora-fd replica; failed pids are learnt by watch "
                  "and push)");
  opts.add_string("zk-root", &zk_root, "with --zookeeper: the cluster's ZooKeeper path");
  opts.add_u64("fd-heartbeat-us", &fd_heartbeat_us, "with --zookeeper: heartbeat period in microseconds", 100,
               1000000);
  opts.add_string("push-listen", &push_listen,
                  "with --zookeeper: the numeric address this node receives the failure detector's failed-pid "
                  "pushes on (the registry records it for the leader); loopback suits one host, give the node's "
                  "own address when pandora-fd runs on another host or network namespace");
  opts.add_flag("frame-mac", &frame_mac,
                "tcp: put a MAC (HMAC-SHA256, per-connection key) on every data-plane frame, so frames changed on "
                "the network are detected; costs throughput (README, Security)");
  rdma.declare(opts);
}

Result<ComputeConfig> ComputeFlags::resolve() const {
  ComputeConfig c;
  c.cluster_id = cluster_id;
  for (std::string_view item : split_commas(memory_nodes)) {
    Result<Endpoint> ep = parse_endpoint(item);
    if (!ep) return Status(Errc::kInvalidArgument, fmt::format("--memory-nodes: {}", ep.status().message()));
    c.memory_nodes.push_back(*ep);
  }
  if (secret_file.empty()) return Status(Errc::kInvalidArgument, "--secret-file is required");
  Result<std::string> secret = read_secret_file(secret_file);
  if (!secret) return secret.status();
  c.secret = *secret;
  c.zookeeper = zookeeper;
  c.zk_root = zk_root;
  c.fd_heartbeat = std::chrono::microseconds(fd_heartbeat_us);
  {
    in6_addr probe6{};
    in_addr probe4{};
    if (::inet_pton(AF_INET, push_listen.c_str(), &probe4) != 1 &&
        ::inet_pton(AF_INET6, push_listen.c_str(), &probe6) != 1) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("--push-listen '{}' must be a numeric IPv4 or IPv6 address", push_listen));
    }
    c.push_host = push_listen;
  }
  if (zookeeper.empty()) {
    if (c.memory_nodes.empty()) return Status(Errc::kInvalidArgument, "--memory-nodes is required (or --zookeeper)");
    if (compute_id == 0 || compute_id > 65535) {
      return Status(Errc::kInvalidArgument, "--compute-id is required (1..65535) without --zookeeper");
    }
    c.compute_id = static_cast<uint16_t>(compute_id);
  } else if (compute_id != 0) {
    return Status(Errc::kInvalidArgument,
                  "--compute-id cannot be chosen with --zookeeper: the registry assigns pids (never re-issued)");
  }
  Result<Backend> b = parse_backend(backend);
  if (!b) return b.status();
  c.backend = *b;
  // Two copies survive one memory-node failure; fewer nodes allow fewer.
  c.replicas = replicas != 0 ? static_cast<uint32_t>(replicas)
                             : static_cast<uint32_t>(std::min<size_t>(2, c.memory_nodes.size()));
  c.threads = static_cast<uint32_t>(threads);
  c.coordinators = static_cast<uint32_t>(coordinators);
  Result<ProtocolMode> p = parse_protocol(protocol);
  if (!p) return p.status();
  c.protocol = *p;
  Result<BugSwitches> bugs = parse_bug_switches(bug);
  if (!bugs) return bugs.status();
  c.bugs = *bugs;
  c.op_timeout = std::chrono::milliseconds(op_timeout_ms);
  // Without a failure detector nobody declares a memory node failed.
  c.memory_failover_wait = std::chrono::milliseconds(zookeeper.empty() ? 0 : memory_failover_wait_ms);
  c.frame_mac = frame_mac;
  Result<VerbsOptions> vo = rdma.to_options();
  if (!vo) return vo.status();
  c.verbs = *vo;
  c.shards = static_cast<uint32_t>(shards);
  c.lane_bytes = static_cast<uint32_t>(lane_bytes);
  if (!c.zookeeper.empty()) {
    // What the registry fills in later; everything else is checked now.
    ComputeConfig probe = c;
    probe.compute_id = 1;
    probe.lane_slot = LaneSlot{0, c.lanes_needed()};
    if (probe.replicas == 0) probe.replicas = 1;
    // The memory nodes may come from the cluster record: as many stand-ins
    // as --replicas asks for (the real count is checked after joining).
    for (uint16_t port = 1; probe.memory_nodes.size() < probe.replicas; ++port) {
      probe.memory_nodes.push_back(Endpoint{"127.0.0.1", port});
    }
    if (Status s = probe.validate(); !s) return s;
    return c;
  }
  if (Status s = c.validate(); !s) return s;
  return c;
}

}  // namespace pandora
