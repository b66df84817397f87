// pandora-ctl: cluster administration over ZooKeeper and the memory
// daemons' control plane.
//
//   pandora-ctl init     --memory-nodes A,B [--lane-bytes 16K]   create the cluster's ZooKeeper tree
//   pandora-ctl set-memory-nodes --memory-nodes A,B             record where the daemons listen after a restart
//   pandora-ctl replace-memory-node ID --endpoint HOST:PORT     fill a replacement daemon for failed-over node ID
//   pandora-ctl status                                          epoch, memory nodes, members, failed-ids, recoveries
//   pandora-ctl stats [--json]                                  what each memory daemon and FD replica saw
//   pandora-ctl stats --memory-nodes A,B [--json]               the same at the given daemons, without ZooKeeper
//   pandora-ctl recover PID                                     run the recovery coordinator for PID by hand
//   pandora-ctl fence PID                                       fence PID at every memory node
//   pandora-ctl fence PID --memory-nodes A,B                    the same at the given daemons, without ZooKeeper
//   pandora-ctl crash PID                                       SIGKILL the registered process of PID (this host)
//   pandora-ctl verify                                          audit every table's storage (quiet cluster)
//   pandora-ctl verify --memory-nodes A,B --compute-id ID       the same without ZooKeeper
//
// Common flags: --zookeeper --zk-root --cluster-id --secret-file.
// Exit codes (scripts rely on them): 0 done, 1 the operation failed,
// 2 usage, 3 no such cluster/pid (or another cluster's tree), 4 ZooKeeper
// or a memory node unavailable.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/options.h"
#include "common/secret.h"
#include "common/transport/client.h"
#include "compute/cluster.h"
#include "deploy/ctl/fd_replica_stats.h"
#include "deploy/ctl/memory_node_stats.h"
#include "recovery/membership.h"
#include "recovery/recovery_coordinator.h"
#include "recovery/registry.h"
#include "recovery/table_audit.h"

namespace {

using namespace pandora;

constexpr int kExitFailed = 1, kExitUsage = 2, kExitNotFound = 3, kExitUnavailable = 4;

struct Flags {
  std::string zookeeper;
  std::string zk_root = "/pandora";
  uint64_t cluster_id = 0;
  std::string secret_file;
  std::string memory_nodes;
  uint64_t lane_bytes = 16 * 1024;
  std::string backend = "tcp";
  std::string protocol = "pandora";
  uint64_t pid_limit = 65535;
  std::string log_level = "warn";
  uint64_t compute_id = 0;
  uint64_t replicas = 0;
  std::string endpoint;
  uint64_t wait_s = 600;
  bool json = false;
};

int exit_for(const Status& s) {
  switch (s.code()) {
    case Errc::kNotFound:
    case Errc::kMismatch: return kExitNotFound;
    case Errc::kUnavailable:
    case Errc::kDisconnected:
    case Errc::kTimeout: return kExitUnavailable;
    default: return kExitFailed;
  }
}

int fail(const Status& s) {
  fmt::print(stderr, "pandora-ctl: {}\n", s.to_string());
  return exit_for(s);
}

std::string ns_ago(uint64_t realtime_ns) {
  if (realtime_ns == 0) return "-";
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  return fmt::format("{:.1f} s ago", (static_cast<double>(now) - static_cast<double>(realtime_ns)) / 1e9);
}

class Ctl {
 public:
  Ctl(Flags f, Logger log) : f_(std::move(f)), log_(std::move(log)) {}

  Status load_secret() {
    auto s = read_secret_file(f_.secret_file);
    if (!s) return s.status();
    secret_ = *s;
    return Status::ok();
  }

  zk::ZkOptions zk_options() const {
    zk::ZkOptions o;
    o.hosts = f_.zookeeper;
    o.auth = registry_auth(secret_);
    return o;
  }

  ClientIdentity admin() const {
    ClientIdentity id;
    id.cluster_id = f_.cluster_id;
    id.secret = secret_;
    id.role = wire::Role::kAdmin;
    return id;
  }

  // Parses --memory-nodes into rec->memory_nodes; false (after a usage
  // message) when one is not HOST:PORT.
  bool parse_memory_nodes(ClusterRecord* rec) {
    size_t pos = 0;
    while (pos <= f_.memory_nodes.size()) {
      size_t c = f_.memory_nodes.find(',', pos);
      if (c == std::string::npos) c = f_.memory_nodes.size();
      auto ep = parse_endpoint(std::string_view(f_.memory_nodes).substr(pos, c - pos));
      if (!ep) {
        usage("--memory-nodes: " + ep.status().message());
        return false;
      }
      rec->memory_nodes.push_back(*ep);
      pos = c + 1;
    }
    return true;
  }

  int init() {
    if (f_.memory_nodes.empty()) return usage("init needs --memory-nodes");
    ClusterRecord rec;
    rec.cluster_id = f_.cluster_id;
    rec.lane_bytes = static_cast<uint32_t>(f_.lane_bytes);
    rec.protocol = f_.protocol;
    if (!parse_memory_nodes(&rec)) return kExitUsage;
    // The log area's lanes: what every node's log area holds.
    uint64_t lanes = UINT64_MAX;
    auto found = probe(rec.memory_nodes);
    if (!found) return fail(found.status());
    for (const Probed& p : *found) {
      for (uint32_t id : rec.memory_node_ids) {
        if (id == p.node_id) {
          return fail(Status(Errc::kMismatch, fmt::format("two of the --memory-nodes serve memory node {}", id)));
        }
      }
      rec.memory_node_ids.push_back(p.node_id);
      if (p.incarnation != 0) rec.memory_incarnations[p.node_id] = p.incarnation;
      lanes = std::min<uint64_t>(lanes, p.log_size / f_.lane_bytes);
    }
    rec.lanes = static_cast<uint32_t>(std::min<uint64_t>(lanes, UINT32_MAX));
    if (Status s = Registry::init(zk_options(), f_.zk_root, rec, log_, static_cast<uint32_t>(f_.pid_limit)); !s) {
      return fail(s);
    }
    fmt::print("cluster {:#x} initialised in ZooKeeper at {}: {} memory node(s), {} log lanes of {} bytes\n",
               rec.cluster_id, f_.zk_root, rec.memory_nodes.size(), rec.lanes, rec.lane_bytes);
    return 0;
  }

  // After a whole-cluster restart the daemons listen on new ports: record
  // them. Each one proves the secret (and we prove it to them) and names its
  // region's node id; readdressed() checks they are exactly the cluster's
  // live nodes. A failed-over node's daemon is left out with a note.
  int set_memory_nodes() {
    if (f_.memory_nodes.empty()) return usage("set-memory-nodes needs --memory-nodes");
    ClusterRecord given;
    if (!parse_memory_nodes(&given)) return kExitUsage;
    auto reg = open();
    if (!reg) return fail(reg.status());
    Registry& r = **reg;
    const ClusterRecord old = r.cluster();
    auto found = probe(given.memory_nodes);
    if (!found) return fail(found.status());
    std::vector<MemoryNodeAddress> live;
    for (const Probed& p : *found) {
      if (failed_over(old, p.node_id)) {
        fmt::print("memory node {} at {} was failed over: it stays out of the configuration (stop its daemon)\n",
                   p.node_id, p.endpoint.to_string());
        continue;
      }
      if (Status s = holds_the_lanes(p, old); !s) return fail(s);
      live.push_back(MemoryNodeAddress{p.node_id, p.endpoint, p.incarnation});
    }
    auto rec = r.readdress_memory_nodes(live);
    if (!rec) return fail(rec.status());
    fmt::print("cluster {:#x}: {} live memory node(s) recorded at their addresses, epoch {}:", rec->cluster_id,
               live.size(), rec->epoch);
    for (const MemoryNodeAddress& a : live) fmt::print(" {}@{}", a.node_id, a.endpoint.to_string());
    fmt::print("\n");
    return 0;
  }

  // A failed-over node comes back: the daemon at --endpoint (a fresh
  // region, or its old one: every byte it owns is rewritten) proves the
  // secret and names the node's id; the FD leader fills it from the live
  // replicas in a pause and brings it back
  // (RecoveryCoordinator::replace_memory_node). Waits for the outcome.
  int replace_memory_node(uint32_t id) {
    auto ep = parse_endpoint(f_.endpoint);
    if (!ep) return usage("replace-memory-node needs --endpoint HOST:PORT (the replacement daemon): " +
                          ep.status().message());
    auto reg = open();
    if (!reg) return fail(reg.status());
    Registry& r = **reg;
    const ClusterRecord old = r.cluster();
    if (auto check = restored(old, id, *ep, 0); !check) return fail(check.status());
    // The node's old daemon must be gone: one failed over while it ran (cut
    // off, not dead) heartbeats under the same node id, and once the id is
    // watched again it would keep a dead replacement looking alive.
    for (const FailedMemoryNode& f : old.failed_memory) {
      if (f.node_id != id || f.endpoint == *ep) continue;
      auto still = ControlClient::connect(f.endpoint, admin(), std::chrono::seconds(2));
      if (still && (*still)->region().node_id == id) {
        return fail(Status(Errc::kConflict, fmt::format("memory node {}'s old daemon still answers at {} (it was "
                                                        "failed over while it ran: cut off, not dead); stop it "
                                                        "first - its heartbeats would speak for the replacement",
                                                        id, f.endpoint.to_string())));
      }
    }
    auto found = probe({*ep});
    if (!found) return fail(found.status());
    if (found->at(0).node_id != id) {
      return fail(Status(Errc::kMismatch, fmt::format("the daemon at {} serves memory node {}, not {} (start it with "
                                                      "--node-id {})", ep->to_string(), found->at(0).node_id, id, id)));
    }
    if (Status s = holds_the_lanes(found->at(0), old); !s) return fail(s);
    if (Status s = r.request_replacement(ReplaceRequest{id, *ep, {}}); !s) return fail(s);
    fmt::print("asked the failure detector's leader to fill memory node {} at {} from the live replicas (every "
               "compute node pauses while the rows are copied)\n", id, ep->to_string());
    std::fflush(stdout);
    const auto start = std::chrono::steady_clock::now();
    auto next_note = start + std::chrono::seconds(5);
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto req = r.replacement_request();
      if (!req) {
        log_.warn("reading the request: {}", req.status().to_string());
      } else if (!*req) {
        auto now = r.refresh_cluster();
        if (!now) return fail(now.status());
        if (auto back = restored(*now, id, *ep, 0); back) {
          return fail(Status(Errc::kConflict, "the request was withdrawn before the node was brought back"));
        }
        fmt::print("memory node {} is back at {}: configuration epoch {}, {} failed-over node(s) left\n", id,
                   ep->to_string(), now->epoch, now->failed_memory.size());
        return 0;
      } else if (!(*req)->error.empty()) {
        const std::string error = (*req)->error;
        if (Status s = r.withdraw_replacement(); !s) log_.warn("removing the failed request: {}", s.to_string());
        fmt::print(stderr, "pandora-ctl: the leader could not replace memory node {}: {}\n", id, error);
        return kExitFailed;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - start > std::chrono::seconds(f_.wait_s)) {
        fmt::print(stderr, "pandora-ctl: memory node {}'s replacement is still pending after {} s (is a pandora-fd "
                           "running?); the request stays: the leader finishes it when it can\n", id, f_.wait_s);
        return kExitUnavailable;
      }
      if (now >= next_note) {
        next_note = now + std::chrono::seconds(5);
        fmt::print("still waiting for the leader ({} s)\n",
                   std::chrono::duration_cast<std::chrono::seconds>(now - start).count());
        std::fflush(stdout);
      }
    }
  }

  int status() {
    auto reg = open();
    if (!reg) return fail(reg.status());
    Registry& r = **reg;
    const ClusterRecord& c = r.cluster();
    fmt::print("cluster {:#x} at {}{}\n", c.cluster_id, f_.zookeeper, r.root());
    fmt::print("epoch {}\n", c.epoch);
    fmt::print("memory nodes ({}):", c.memory_nodes.size());
    for (const Endpoint& e : c.memory_nodes) fmt::print(" {}", e.to_string());
    if (!c.failed_memory.empty()) {
      fmt::print("\nfailed over (out of the configuration):");
      for (const FailedMemoryNode& f : c.failed_memory) fmt::print(" node {} at {}", f.node_id, f.endpoint.to_string());
    }
    if (!c.memory_incarnations.empty()) {
      // What each daemon logs at start ("incarnation 0x..."): the detector
      // hears a node only from that daemon.
      fmt::print("\nbound to daemon incarnations:");
      for (const auto& [id, inc] : c.memory_incarnations) fmt::print(" node {} {:#x}", id, inc);
    }
    fmt::print("\nlog area: {} lanes of {} bytes\nprotocol: {}\n", c.lanes, c.lane_bytes, c.protocol);
    if (auto req = r.replacement_request(); !req) {
      return fail(req.status());
    } else if (*req) {
      fmt::print("replacement requested: memory node {} by the daemon at {}{}\n", (*req)->node_id,
                 (*req)->endpoint.to_string(), (*req)->error.empty() ? "" : " - failed: " + (*req)->error);
    }
    auto reps = r.replicas();
    if (!reps) return fail(reps.status());
    fmt::print("fd replicas ({}):", reps->size());
    for (const auto& [id, ep] : *reps) fmt::print(" {}@{}", id, ep.to_string());
    fmt::print("\n");
    auto members = r.members();
    if (!members) return fail(members.status());
    fmt::print("members ({}):\n", members->size());
    for (const MemberRecord& m : *members) {
      fmt::print("  pid {:5} {:8} {:16} os-pid {:7} push {} registered {}\n", m.pid, member_role_name(m.role),
                 m.slot.to_string(), m.os_pid, m.push ? m.push->to_string() : "-", ns_ago(m.registered_ns));
    }
    auto failed = r.failed();
    if (!failed) return fail(failed.status());
    fmt::print("failed-ids ({}):", failed->size());
    for (uint16_t p : *failed) fmt::print(" {}", p);
    fmt::print("\n");
    auto recs = r.recoveries();
    if (!recs) return fail(recs.status());
    fmt::print("recoveries ({}):\n", recs->size());
    for (const RecoveryRecord& x : *recs) {
      // Only ford's stop-the-world recovery writes a start record; the
      // others read the record (beside the fence: RecoveryRecord).
      fmt::print("  pid {:5} {:9} by replica {} detected {}: {} {} us, fence {} us, log recovery {} us "
                 "({} records: {} rolled back, {} forward), truncate {} us, publish {} us, sweep {} us ({} latches)\n",
                 x.pid, recovery_step_name(x.step), x.leader_replica, ns_ago(x.detected_ns),
                 x.pause_us ? "start record" : "record read", x.start_record_us,
                 x.fence_us, x.log_recovery_us, x.records, x.rolled_back, x.rolled_forward, x.truncate_us,
                 x.publish_us, x.sweep_us, x.swept);
      if (x.pause_us) fmt::print("           stop-the-world pause {} us (latch scan {} us)\n", x.pause_us, x.scan_us);
      if (x.together > 1) fmt::print("           recovered together with {} other pid(s)\n", x.together - 1);
    }
    auto alloc = r.alloc();
    if (!alloc) return fail(alloc.status());
    fmt::print("pids: next {}, limit {}, {} in use, {} recycled awaiting reuse; {} lane lease(s)\n", alloc->next_pid,
               alloc->pid_limit, alloc->in_use(), alloc->reuse.size(), alloc->leases.size());
    return 0;
  }

  // Each memory daemon's counters and identity (deploy/ctl/
  // memory_node_stats.h): the record's nodes, live and failed over, or the
  // daemons given without ZooKeeper; with ZooKeeper also each registered
  // failure-detector replica's (deploy/ctl/fd_replica_stats.h).
  int stats() {
    std::vector<ctl::MemoryNodeTarget> targets;
    std::vector<fd::ReplicaStatsAnswer> replicas;
    if (f_.zookeeper.empty()) {
      ClusterRecord given;
      if (!parse_memory_nodes(&given)) return kExitUsage;
      for (const Endpoint& e : given.memory_nodes) targets.push_back(ctl::MemoryNodeTarget{std::nullopt, e, false, {}});
    } else {
      auto reg = open();
      if (!reg) return fail(reg.status());
      const ClusterRecord& c = (*reg)->cluster();
      for (size_t i = 0; i < c.memory_nodes.size(); ++i) {
        ctl::MemoryNodeTarget t;
        t.endpoint = c.memory_nodes[i];
        if (c.memory_node_ids.size() == c.memory_nodes.size()) t.node_id = c.memory_node_ids[i];
        t.failed_over = failed_over_at(c, t.endpoint);
        if (t.node_id) {
          if (auto b = c.memory_incarnations.find(*t.node_id); b != c.memory_incarnations.end()) t.bound = b->second;
        }
        targets.push_back(std::move(t));
      }
      auto announced = (*reg)->replicas();
      if (!announced) return fail(announced.status());
      replicas = fd::query_replica_stats(*announced, f_.cluster_id, secret_, std::chrono::seconds(2));
    }
    const auto reports = ctl::collect_memory_node_stats(targets, admin(), std::chrono::seconds(3));
    if (f_.json) {
      nlohmann::json doc = ctl::memory_nodes_json(reports);
      doc["cluster_id"] = fmt::format("{:#x}", f_.cluster_id);
      doc["detector_replicas"] = ctl::fd_replicas_json(replicas);
      doc["detector_replicas_unreachable"] = ctl::unanswered(replicas);
      fmt::print("{}\n", doc.dump(2));
    } else {
      fmt::print("{}", ctl::render_text(reports));
      if (!f_.zookeeper.empty()) fmt::print("{}", ctl::render_fd_text(replicas));
    }
    // A registered replica that does not answer is as unreachable as a
    // live memory node that does not (4), unless something is wrong (1).
    const int rc = ctl::stats_exit_code(reports);
    return rc == 0 && ctl::unanswered(replicas) != 0 ? 4 : rc;
  }

  int fence(uint16_t pid) {
    ClusterRecord direct;
    std::unique_ptr<Registry> registry;
    if (f_.zookeeper.empty()) {
      // No registry (a cluster run without the failure detector): fence at
      // the daemons named on the command line.
      direct.cluster_id = f_.cluster_id;
      if (!parse_memory_nodes(&direct)) return kExitUsage;
    } else {
      auto reg = open();
      if (!reg) return fail(reg.status());
      registry = std::move(*reg);
    }
    const ClusterRecord& cluster = registry ? registry->cluster() : direct;
    if (Status s = fence_at_every_memory_node(cluster, secret_, pid, std::chrono::seconds(5)); !s) {
      return fail(s);
    }
    fmt::print("pid {} fenced at {} memory node(s)\n", pid, cluster.memory_nodes.size());
    return 0;
  }

  int crash(uint16_t pid) {
    auto reg = open();
    if (!reg) return fail(reg.status());
    auto m = (*reg)->member(pid);
    if (!m) return fail(m.status());
    if (!*m) return fail(Status(Errc::kNotFound, fmt::format("pid {} is not a registered member", pid)));
    const int64_t os = (*m)->os_pid;
    // Only a pandora process on this host: an os pid may have been reused.
    std::ifstream cmd(fmt::format("/proc/{}/cmdline", os));
    std::stringstream ss;
    ss << cmd.rdbuf();
    if (os <= 1 || ss.str().find("pandora") == std::string::npos) {
      return fail(Status(Errc::kNotFound, fmt::format("pid {}'s process {} is not a pandora process on this host",
                                                      pid, os)));
    }
    if (::kill(static_cast<pid_t>(os), SIGKILL) != 0) {
      return fail(Status(Errc::kIo, fmt::format("kill {}: {}", os, strerror(errno))));
    }
    fmt::print("sent SIGKILL to process {} (pid {})\n", os, pid);
    return 0;
  }

  int recover(uint16_t pid) {
    return as_member([&](Cluster&, RecoveryCoordinator& coord) {
      auto rec = coord.recover(pid, 0);
      if (!rec) return fail(rec.status());
      fmt::print("pid {} recovered: {} records ({} rolled back, {} rolled forward), {} latches swept; fence {} us, "
                 "log recovery {} us, truncate {} us, publish {} us\n",
                 pid, rec->records, rec->rolled_back, rec->rolled_forward, rec->swept, rec->fence_us,
                 rec->log_recovery_us, rec->truncate_us, rec->publish_us);
      return 0;
    });
  }

  // Runs `fn` on a data plane of this tool's own: it joins as a kFd member
  // (a pid and lanes from the registry, failed-ids kept current, the memory
  // nodes and failed-over ones from the cluster record), and afterwards
  // recovers that identity too (nothing to undo: it logs nothing), so no
  // lease or pid is left behind.
  int as_member(const std::function<int(Cluster&, RecoveryCoordinator&)>& fn) {
    auto reg = open();
    if (!reg) return fail(reg.status());
    const ClusterRecord& cr = (*reg)->cluster();
    MembershipOptions mo;
    mo.zk = zk_options();
    mo.root = f_.zk_root;
    mo.cluster_id = f_.cluster_id;
    mo.secret = secret_;
    mo.role = MemberRole::kFd;
    mo.lanes = 2;
    mo.heartbeats = false;
    auto me = Membership::join(mo, log_);
    if (!me) return fail(me.status());
    ComputeConfig c;
    c.cluster_id = f_.cluster_id;
    c.secret = secret_;
    c.compute_id = (*me)->pid();
    c.lane_slot = (*me)->slot();
    c.memory_nodes = cr.memory_nodes;
    c.failed_memory_nodes = cr.failed_memory;
    c.backend = f_.backend == "shm" ? Backend::kShm : Backend::kTcp;
    c.replicas = static_cast<uint32_t>(std::min<size_t>(2, cr.memory_nodes.size()));
    c.threads = 1;
    c.coordinators = 1;
    if (cr.lane_bytes) c.lane_bytes = cr.lane_bytes;
    RecoveryCoordinatorOptions ro;
    ro.cluster_id = f_.cluster_id;
    ro.secret = secret_;
    auto cl = Cluster::connect(c, log_);
    if (!cl) return fail(cl.status());
    if (Status s = (*cl)->load_directory(); !s) return fail(s);
    if (Status s = (*me)->attach((*cl)->failed_ids()); !s) return fail(s);
    RecoveryCoordinator coord(**reg, **cl, ro, log_, {});
    const int rc = fn(**cl, coord);
    // This tool's own identity: its data plane is idle, so retire it
    // (publish, release the lease) instead of leaving it to the next FD
    // leader.
    const uint16_t my_pid = (*me)->pid();
    (*me).reset();  // stop watching before our own pid is published
    // Not fenced: our own data plane is idle, and a shm fence would kill
    // this very process.
    if (Status s = coord.retire(my_pid, /*fence=*/false); !s) {
      log_.warn("retiring this tool's own pid {}: {}", my_pid, s.to_string());
    }
    return rc;
  }

  // Reads every slot of every table on every memory node (through
  // recovery/table_audit.h): rows on the wrong node or twice, replicas that
  // disagree, latches held by live pids, bad lengths. Run it on a quiet
  // cluster (nothing writing); stray latches of recovered pids are counted,
  // not problems. Static: --memory-nodes and a --compute-id nobody else
  // uses (it only reads, so it takes no latch and writes no log).
  int verify() {
    // With the registry: as a member of its own (memory nodes, failed-over
    // ones and failed-ids from the registry, so stray latches of recovered
    // pids are told from leaks).
    if (!f_.zookeeper.empty()) return as_member([&](Cluster& cl, RecoveryCoordinator&) { return audit(cl); });
    if (f_.memory_nodes.empty() || f_.compute_id == 0) {
      return usage("verify needs --zookeeper, or --memory-nodes and a --compute-id no live compute node uses");
    }
    ComputeFlags cf;
    cf.memory_nodes = f_.memory_nodes;
    cf.cluster_id = f_.cluster_id;
    cf.secret_file = f_.secret_file;
    cf.compute_id = f_.compute_id;
    cf.backend = f_.backend;
    cf.replicas = f_.replicas;
    cf.threads = 1;
    cf.coordinators = 1;
    auto c = cf.resolve();
    if (!c) return usage(c.status().message());
    auto cl = Cluster::connect(*c, log_);
    if (!cl) return fail(cl.status());
    if (Status s = (*cl)->load_directory(); !s) return fail(s);
    return audit(**cl);
  }

  int audit(Cluster& cl) {
    uint64_t problems = 0;
    for (const TableEntry& t : cl.directory().tables) {
      const std::string name = table_name(t);
      auto a = audit_table(cl, t.table_id);
      if (!a) return fail(a.status());
      fmt::print("table {} (id {}): {} rows, {} stray latch(es) of recovered pids, {}\n", name, t.table_id, a->rows,
                 a->stray_latches, a->clean() ? "ok" : fmt::format("{} PROBLEM(S)", a->problem_count));
      for (const std::string& p : a->problems) fmt::print("  {}\n", p);
      if (a->problem_count > a->problems.size()) fmt::print("  ... {} more\n", a->problem_count - a->problems.size());
      problems += a->problem_count;
    }
    fmt::print("{}\n", problems == 0 ? "verify: every table is consistent"
                                     : fmt::format("verify: {} problem(s) found", problems));
    return problems == 0 ? 0 : kExitFailed;
  }

  int usage(const std::string& m) {
    fmt::print(stderr, "pandora-ctl: {}\n(see pandora-ctl --help)\n", m);
    return kExitUsage;
  }

 private:
  struct Probed {
    Endpoint endpoint;
    uint32_t node_id = 0;
    uint64_t log_size = 0;
    uint64_t incarnation = 0;  // the daemon's (wire::RegionInfo::daemon_incarnation)
  };

  // kMismatch when the daemon's log area is too small for the cluster's lanes.
  static Status holds_the_lanes(const Probed& p, const ClusterRecord& c) {
    if (p.log_size / c.lane_bytes >= c.lanes) return Status::ok();
    return Status(Errc::kMismatch, fmt::format("memory node {} at {} has a log area of {} bytes, smaller than the "
                                               "cluster's {} lanes of {} bytes",
                                               p.node_id, p.endpoint.to_string(), p.log_size, c.lanes, c.lane_bytes));
  }

  // Logs in to each daemon as the admin (both ends prove the secret) and
  // reads its region's identity; one of another cluster is refused.
  Result<std::vector<Probed>> probe(const std::vector<Endpoint>& endpoints) {
    std::vector<Probed> out;
    for (const Endpoint& ep : endpoints) {
      auto ctl = ControlClient::connect(ep, admin(), std::chrono::seconds(5));
      if (!ctl) return Status(ctl.status().code(), fmt::format("{}: {}", ep.to_string(), ctl.status().message()));
      const wire::RegionInfo& region = (*ctl)->region();
      if (region.cluster_id != f_.cluster_id) {
        return Status(Errc::kMismatch, fmt::format("{} serves a region of cluster {:#x}, not {:#x}", ep.to_string(),
                                                   region.cluster_id, f_.cluster_id));
      }
      out.push_back(Probed{ep, region.node_id, region.log_size, region.daemon_incarnation});
    }
    return out;
  }

  Result<std::unique_ptr<Registry>> open() { return Registry::open(zk_options(), f_.zk_root, f_.cluster_id, log_); }

  Flags f_;
  Logger log_;
  std::string secret_;
};

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  OptionSet opts("pandora-ctl",
                 "Usage: pandora-ctl COMMAND [ARG] [options]\n"
                 "Commands: init (create the cluster's ZooKeeper tree; needs --memory-nodes), set-memory-nodes (record "
                 "where the live memory daemons listen after a whole-cluster restart; needs --memory-nodes), status, "
                 "replace-memory-node ID (with --endpoint: fill a replacement daemon for a failed-over memory node "
                 "from the live replicas and bring the node back; a pandora-fd leader does the work), recover PID, "
                 "fence PID (with --memory-nodes and no --zookeeper: at those daemons), crash PID, verify (audit "
                 "every table's storage; without --zookeeper needs --memory-nodes and --compute-id; exit 1 when a "
                 "problem is found), stats (what each memory daemon served and refused, and whether it is the daemon "
                 "the cluster record binds its node to; with --zookeeper also what each pandora-fd replica hears, "
                 "refuses and suspects; --json; without --zookeeper at the --memory-nodes; exit 1 when a daemon is "
                 "not the bound one, 4 when a live one or a registered replica does not answer).\n"
                 "Exit codes: 0 done, 1 failed, 2 usage, 3 no such cluster or pid (or the tree belongs to another "
                 "cluster id), 4 ZooKeeper or a memory node unavailable.");
  opts.add_string("zookeeper", &f.zookeeper,
                  "ZooKeeper ensemble HOST:PORT,HOST:PORT,... (required, except by fence with --memory-nodes)");
  opts.add_string("zk-root", &f.zk_root, "the cluster's ZooKeeper path");
  opts.add_u64("cluster-id", &f.cluster_id, "cluster id (decimal or 0x hex)", 1, UINT64_MAX, true);
  opts.add_string("secret-file", &f.secret_file, "file holding the cluster secret", true);
  opts.add_string("memory-nodes", &f.memory_nodes,
                  "init, set-memory-nodes: HOST:PORT,HOST:PORT of every memory daemon; fence, stats without "
                  "--zookeeper: the daemons to fence at, to ask");
  opts.add_size("lane-bytes", &f.lane_bytes, "init: bytes of one log lane (must match the loader's --lane-bytes)",
                kMinLaneBytes, 64u << 20);
  opts.add_choice("backend", &f.backend, {"tcp", "shm"}, "recover, verify: data plane to the memory nodes");
  opts.add_u64("pid-limit", &f.pid_limit,
               "init: compute pids 1..N exist (recycled by the FD leader at 95% use; small values for tests)", 4,
               65535);
  opts.add_choice("protocol", &f.protocol, {"pandora", "ford", "log-a-latch"},
                  "init: the protocol every compute node of the cluster runs (recovery follows it)");
  opts.add_choice("log-level", &f.log_level, {"debug", "info", "warn", "error"}, "log verbosity");
  opts.add_u64("compute-id", &f.compute_id, "verify without --zookeeper: a compute pid no live compute node uses", 1,
               65535);
  opts.add_u64("replicas", &f.replicas, "verify: copies of every row (0: as the tables were created)", 0, 64);
  opts.add_string("endpoint", &f.endpoint,
                  "replace-memory-node: HOST:PORT of the replacement daemon (started with the failed node's --node-id)");
  opts.add_u64("wait-s", &f.wait_s, "replace-memory-node: seconds to wait for the leader to finish", 1, 86400);
  opts.add_flag("json", &f.json, "stats: one JSON document instead of text");

  // The command and its argument come first; the rest are options.
  if (argc >= 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    fmt::print("{}", opts.help());
    return 0;
  }
  if (argc < 2 || argv[1][0] == '-') {
    fmt::print(stderr, "pandora-ctl: missing command\n{}", opts.help());
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  int first_opt = 2;
  std::optional<uint16_t> pid;
  std::optional<uint32_t> node_id;
  if (cmd == "replace-memory-node") {
    auto v = parse_u64(argc >= 3 ? argv[2] : "");
    if (!v || *v > 65535) {
      fmt::print(stderr, "pandora-ctl: replace-memory-node needs the failed-over node's id (0..65535)\n");
      return kExitUsage;
    }
    node_id = static_cast<uint32_t>(*v);
    first_opt = 3;
  } else if (cmd == "recover" || cmd == "fence" || cmd == "crash") {
    if (argc < 3) {
      fmt::print(stderr, "pandora-ctl: {} needs a PID\n", cmd);
      return kExitUsage;
    }
    auto v = parse_u64(argv[2]);
    if (!v || *v == 0 || *v > 65535) {
      fmt::print(stderr, "pandora-ctl: '{}' is not a compute pid (1..65535)\n", argv[2]);
      return kExitUsage;
    }
    pid = static_cast<uint16_t>(*v);
    first_opt = 3;
  } else if (cmd != "init" && cmd != "set-memory-nodes" && cmd != "status" && cmd != "verify" && cmd != "stats") {
    fmt::print(stderr,
               "pandora-ctl: unknown command '{}' (init, set-memory-nodes, replace-memory-node, status, stats, "
               "recover, fence, crash, verify)\n",
               cmd);
    return kExitUsage;
  }
  std::vector<const char*> rest = {argv[0]};
  for (int i = first_opt; i < argc; ++i) rest.push_back(argv[i]);
  std::string msg;
  switch (opts.parse(static_cast<int>(rest.size()), rest.data(), &msg)) {
    case OptionSet::Outcome::kHelp: fmt::print("{}", msg); return 0;
    case OptionSet::Outcome::kError: fmt::print(stderr, "pandora-ctl: {}\n", msg); return kExitUsage;
    case OptionSet::Outcome::kRun: break;
  }
  if (f.zookeeper.empty() && !((cmd == "fence" || cmd == "stats") && !f.memory_nodes.empty()) && cmd != "verify") {
    fmt::print(stderr, "pandora-ctl: missing required option: --zookeeper{}\n",
               cmd == "fence"   ? " (or --memory-nodes: fence at those daemons without ZooKeeper)"
               : cmd == "stats" ? " (or --memory-nodes: ask those daemons without ZooKeeper)"
                                : "");
    return kExitUsage;
  }
  LogLevel level = LogLevel::kWarn;
  parse_log_level(f.log_level, &level);
  Ctl ctl(f, Logger("pandora-ctl", level));
  if (Status s = ctl.load_secret(); !s) return ctl.usage("--secret-file: " + s.message());
  if (cmd == "init") return ctl.init();
  if (cmd == "set-memory-nodes") return ctl.set_memory_nodes();
  if (cmd == "replace-memory-node") return ctl.replace_memory_node(*node_id);
  if (cmd == "verify") return ctl.verify();
  if (cmd == "status") return ctl.status();
  if (cmd == "stats") return ctl.stats();
  if (cmd == "fence") return ctl.fence(*pid);
  if (cmd == "crash") return ctl.crash(*pid);
  return ctl.recover(*pid);
}
