#include "recovery/registry.h"

#include "common/bytes.h"
#include "common/checksum.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include <fmt/format.h>

namespace pandora {

namespace {

using zk::CreateMode;
using zk::Op;

// ---- "key=value" lines --------------------------------------------------------

using Fields = std::vector<std::pair<std::string, std::string>>;

Result<Fields> parse_fields(std::string_view text, std::string_view what) {
  Fields out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Status(Errc::kCorrupt, fmt::format("{}: malformed line '{}' (expected key=value)", what, line));
    }
    out.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return out;
}

Result<uint64_t> parse_u64(std::string_view v, std::string_view key, uint64_t max = UINT64_MAX) {
  uint64_t x = 0;
  int base = 10;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    v.remove_prefix(2);
    base = 16;
  }
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x, base);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || x > max) {
    return Status(Errc::kCorrupt, fmt::format("field {}: '{}' is not a number in 0..{}", key, v, max));
  }
  return x;
}

Result<LaneSlot> parse_slot(std::string_view v) {
  const size_t c = v.find(',');
  if (c == std::string_view::npos) return Status(Errc::kCorrupt, fmt::format("slot '{}': expected FIRST,COUNT", v));
  auto a = parse_u64(v.substr(0, c), "slot", UINT32_MAX);
  auto b = parse_u64(v.substr(c + 1), "slot", UINT32_MAX);
  if (!a) return a.status();
  if (!b) return b.status();
  return LaneSlot{static_cast<uint32_t>(*a), static_cast<uint32_t>(*b)};
}

std::string slot_text(const LaneSlot& s) { return fmt::format("{},{}", s.first, s.count); }

uint64_t now_realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

Result<uint16_t> parse_pid_name(std::string_view name) {
  auto v = parse_u64(name, "pid", 65535);
  if (!v || *v == 0) return Status(Errc::kCorrupt, fmt::format("'{}' is not a pid", name));
  return static_cast<uint16_t>(*v);
}

// "3,17,42" <-> pids (every pid in 1..65535).
std::string pid_list(const std::vector<uint16_t>& pids) {
  std::string s;
  for (uint16_t p : pids) s += (s.empty() ? "" : ",") + std::to_string(p);
  return s;
}

// Calls `item` for each entry of the comma list `v` ("" has none); the
// first failure stops it.
Status for_each_listed(std::string_view v, const std::function<Status(std::string_view)>& item) {
  size_t pos = 0;
  while (pos < v.size()) {
    size_t c = v.find(',', pos);
    if (c == std::string_view::npos) c = v.size();
    if (Status s = item(v.substr(pos, c - pos)); !s) return s;
    pos = c + 1;
  }
  return Status::ok();
}

Result<std::vector<uint16_t>> parse_pid_list(std::string_view v) {
  std::vector<uint16_t> out;
  Status s = for_each_listed(v, [&out](std::string_view name) {
    auto pid = parse_pid_name(name);
    if (!pid) return pid.status();
    out.push_back(*pid);
    return Status::ok();
  });
  if (!s) return s;
  return out;
}

}  // namespace

std::string_view member_role_name(MemberRole r) { return r == MemberRole::kFd ? "fd" : "compute"; }

std::string_view recovery_step_name(RecoveryStep s) {
  switch (s) {
    case RecoveryStep::kStarted: return "started";
    case RecoveryStep::kPublished: return "published";
    case RecoveryStep::kDone: return "done";
  }
  return "unknown";
}

// ---- records --------------------------------------------------------------------

bool failed_over(const ClusterRecord& r, uint32_t node_id) {
  return std::any_of(r.failed_memory.begin(), r.failed_memory.end(),
                     [&](const FailedMemoryNode& f) { return f.node_id == node_id; });
}

bool failed_over_at(const ClusterRecord& r, const Endpoint& endpoint) {
  return std::any_of(r.failed_memory.begin(), r.failed_memory.end(),
                     [&](const FailedMemoryNode& f) { return f.endpoint == endpoint; });
}

std::vector<Endpoint> live_memory_nodes(const ClusterRecord& r) {
  std::vector<Endpoint> out;
  for (const Endpoint& e : r.memory_nodes) {
    if (!failed_over_at(r, e)) out.push_back(e);
  }
  return out;
}

std::string encode_cluster_record(const ClusterRecord& r) {
  std::string nodes;
  for (const Endpoint& e : r.memory_nodes) nodes += (nodes.empty() ? "" : ",") + e.to_string();
  std::string failed;
  for (const FailedMemoryNode& f : r.failed_memory) {
    failed += fmt::format("{}{}@{}", failed.empty() ? "" : ",", f.node_id, f.endpoint.to_string());
  }
  std::string incarnations;
  for (const auto& [id, inc] : r.memory_incarnations) {
    incarnations += fmt::format("{}{}:{:#x}", incarnations.empty() ? "" : ",", id, inc);
  }
  return fmt::format(
      "cluster_id={:#x}\nepoch={}\nmemory_nodes={}\nmemory_node_ids={}\nlane_bytes={}\nlanes={}\nprotocol={}\n"
      "failed_memory={}\nmemory_incarnations={}\n",
      r.cluster_id, r.epoch, nodes, fmt::join(r.memory_node_ids, ","), r.lane_bytes, r.lanes, r.protocol, failed,
      incarnations);
}

Result<ClusterRecord> decode_cluster_record(std::string_view text) {
  auto f = parse_fields(text, "cluster record");
  if (!f) return f.status();
  ClusterRecord r;
  bool have_id = false;
  for (const auto& [k, v] : *f) {
    if (k == "cluster_id") {
      auto x = parse_u64(v, k);
      if (!x) return x.status();
      r.cluster_id = *x;
      have_id = true;
    } else if (k == "epoch") {
      auto x = parse_u64(v, k);
      if (!x) return x.status();
      r.epoch = *x;
    } else if (k == "memory_nodes") {
      Status s = for_each_listed(v, [&r](std::string_view item) {
        auto ep = parse_endpoint(item);
        if (!ep) return Status(Errc::kCorrupt, "cluster record: " + ep.status().message());
        r.memory_nodes.push_back(*ep);
        return Status::ok();
      });
      if (!s) return s;
    } else if (k == "memory_node_ids") {
      Status s = for_each_listed(v, [&r](std::string_view item) {
        auto id = parse_u64(item, "memory_node_ids entry", UINT32_MAX);
        if (!id) return id.status();
        r.memory_node_ids.push_back(static_cast<uint32_t>(*id));
        return Status::ok();
      });
      if (!s) return s;
    } else if (k == "failed_memory") {
      Status s = for_each_listed(v, [&r](std::string_view item) {
        const size_t at = item.find('@');
        if (at == std::string_view::npos) {
          return Status(Errc::kCorrupt, fmt::format("cluster record: failed_memory entry '{}' is not ID@HOST:PORT", item));
        }
        auto id = parse_u64(item.substr(0, at), "failed_memory node id", UINT32_MAX);
        if (!id) return id.status();
        auto ep = parse_endpoint(item.substr(at + 1));
        if (!ep) return Status(Errc::kCorrupt, "cluster record: " + ep.status().message());
        r.failed_memory.push_back(FailedMemoryNode{static_cast<uint32_t>(*id), *ep});
        return Status::ok();
      });
      if (!s) return s;
    } else if (k == "memory_incarnations") {
      Status s = for_each_listed(v, [&r](std::string_view item) {
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos) {
          return Status(Errc::kCorrupt,
                        fmt::format("cluster record: memory_incarnations entry '{}' is not ID:INCARNATION", item));
        }
        auto id = parse_u64(item.substr(0, colon), "memory_incarnations node id", UINT32_MAX);
        if (!id) return id.status();
        auto inc = parse_u64(item.substr(colon + 1), "memory_incarnations incarnation");
        if (!inc) return inc.status();
        if (*inc == 0 || !r.memory_incarnations.emplace(static_cast<uint32_t>(*id), *inc).second) {
          return Status(Errc::kCorrupt,
                        fmt::format("cluster record: memory_incarnations entry '{}' is 0 or a second one", item));
        }
        return Status::ok();
      });
      if (!s) return s;
    } else if (k == "protocol") {
      if (v != "pandora" && v != "ford" && v != "log-a-latch") {
        return Status(Errc::kCorrupt, fmt::format("cluster record: unknown protocol '{}'", v));
      }
      r.protocol = v;
    } else if (k == "lane_bytes" || k == "lanes") {
      auto x = parse_u64(v, k, UINT32_MAX);
      if (!x) return x.status();
      (k == "lanes" ? r.lanes : r.lane_bytes) = static_cast<uint32_t>(*x);
    }
  }
  if (!have_id || r.cluster_id == 0) return Status(Errc::kCorrupt, "cluster record has no cluster_id");
  if (!r.memory_node_ids.empty() && r.memory_node_ids.size() != r.memory_nodes.size()) {
    return Status(Errc::kCorrupt, fmt::format("cluster record: {} memory_node_ids for {} memory_nodes",
                                              r.memory_node_ids.size(), r.memory_nodes.size()));
  }
  for (const auto& [id, inc] : r.memory_incarnations) {
    const bool known = std::find(r.memory_node_ids.begin(), r.memory_node_ids.end(), id) != r.memory_node_ids.end();
    if (!known || failed_over(r, id)) {
      return Status(Errc::kCorrupt, fmt::format("cluster record: memory_incarnations names node {}, which is not a "
                                                "live memory node of the record", id));
    }
  }
  return r;
}

Result<ClusterRecord> readdressed(const ClusterRecord& old, const std::vector<MemoryNodeAddress>& live) {
  // The live entries' ids, when the record knows them.
  std::vector<uint32_t> expected;
  for (size_t i = 0; i < old.memory_node_ids.size(); ++i) {
    if (!failed_over_at(old, old.memory_nodes[i])) expected.push_back(old.memory_node_ids[i]);
  }
  const size_t live_count = live_memory_nodes(old).size();
  for (size_t i = 0; i < live.size(); ++i) {
    const MemoryNodeAddress& a = live[i];
    if (failed_over(old, a.node_id)) {
      return Status(Errc::kMismatch, fmt::format("memory node {} at {} was failed over and stays out of the "
                                                 "configuration (its data is stale): leave it out",
                                                 a.node_id, a.endpoint.to_string()));
    }
    if (failed_over_at(old, a.endpoint)) {
      return Status(Errc::kConflict, fmt::format("memory node {} now listens at {}, the recorded address of a "
                                                 "failed-over node: restart it on another port",
                                                 a.node_id, a.endpoint.to_string()));
    }
    if (!expected.empty() && std::find(expected.begin(), expected.end(), a.node_id) == expected.end()) {
      return Status(Errc::kMismatch, fmt::format("memory node {} at {} is not one of this cluster's live memory "
                                                 "nodes ({})",
                                                 a.node_id, a.endpoint.to_string(), fmt::join(expected, ", ")));
    }
    for (size_t j = 0; j < i; ++j) {
      if (live[j].node_id == a.node_id) {
        return Status(Errc::kMismatch, fmt::format("{} and {} both serve memory node {}", live[j].endpoint.to_string(),
                                                   a.endpoint.to_string(), a.node_id));
      }
      if (live[j].endpoint == a.endpoint) {
        return Status(Errc::kMismatch, fmt::format("{} is listed twice", a.endpoint.to_string()));
      }
    }
  }
  if (live.size() != live_count) {
    return Status(Errc::kMismatch, fmt::format("the cluster has {} live memory node(s){}{}, {} given: every one "
                                               "must be running before the cluster is",
                                               live_count, expected.empty() ? "" : " with ids ",
                                               fmt::join(expected, ", "), live.size()));
  }
  ClusterRecord rec = old;
  rec.memory_nodes.clear();
  rec.memory_node_ids.clear();
  // Failed-over entries first, under the address compute nodes recognise
  // them by; then the live ones where they are now.
  for (const FailedMemoryNode& f : old.failed_memory) {
    rec.memory_nodes.push_back(f.endpoint);
    rec.memory_node_ids.push_back(f.node_id);
  }
  rec.memory_incarnations.clear();
  for (const MemoryNodeAddress& a : live) {
    rec.memory_nodes.push_back(a.endpoint);
    rec.memory_node_ids.push_back(a.node_id);
    if (a.incarnation != 0) rec.memory_incarnations[a.node_id] = a.incarnation;
  }
  rec.epoch += 1;
  return rec;
}

std::string encode_member_record(const MemberRecord& r) {
  return fmt::format("pid={}\nrole={}\nslot={}\npush={}\nincarnation={:#x}\nos_pid={}\nregistered_ns={}\n", r.pid,
                     member_role_name(r.role), slot_text(r.slot), r.push ? r.push->to_string() : "",
                     r.incarnation, r.os_pid, r.registered_ns);
}

Result<MemberRecord> decode_member_record(std::string_view text) {
  auto f = parse_fields(text, "member record");
  if (!f) return f.status();
  MemberRecord r;
  for (const auto& [k, v] : *f) {
    if (k == "pid") {
      auto x = parse_u64(v, k, 65535);
      if (!x) return x.status();
      r.pid = static_cast<uint16_t>(*x);
    } else if (k == "role") {
      if (v == "compute") r.role = MemberRole::kCompute;
      else if (v == "fd") r.role = MemberRole::kFd;
      else return Status(Errc::kCorrupt, fmt::format("member record: unknown role '{}'", v));
    } else if (k == "slot") {
      auto s = parse_slot(v);
      if (!s) return s.status();
      r.slot = *s;
    } else if (k == "push") {
      if (!v.empty()) {
        auto ep = parse_endpoint(v);
        if (!ep) return Status(Errc::kCorrupt, "member record: " + ep.status().message());
        r.push = *ep;
      }
    } else if (k == "incarnation" || k == "os_pid" || k == "registered_ns") {
      auto x = parse_u64(v, k);
      if (!x) return x.status();
      if (k == "incarnation") r.incarnation = *x;
      else if (k == "os_pid") r.os_pid = static_cast<int64_t>(*x);
      else r.registered_ns = *x;
    }
  }
  if (r.pid == 0) return Status(Errc::kCorrupt, "member record has no pid");
  return r;
}

std::string encode_recovery_record(const RecoveryRecord& r) {
  return fmt::format(
      "pid={}\nstep={}\nslot={}\nleader_replica={}\ndetected_ns={}\nstart_record_us={}\nfence_us={}\n"
      "log_recovery_us={}\ntruncate_us={}\npublish_us={}\nsweep_us={}\nrecords={}\nrolled_back={}\n"
      "rolled_forward={}\nswept={}\npause_us={}\nscan_us={}\ntogether={}\n",
      r.pid, recovery_step_name(r.step), slot_text(r.slot), r.leader_replica, r.detected_ns, r.start_record_us,
      r.fence_us, r.log_recovery_us, r.truncate_us, r.publish_us, r.sweep_us, r.records, r.rolled_back,
      r.rolled_forward, r.swept, r.pause_us, r.scan_us, r.together);
}

Result<RecoveryRecord> decode_recovery_record(std::string_view text) {
  auto f = parse_fields(text, "recovery record");
  if (!f) return f.status();
  RecoveryRecord r;
  const std::map<std::string, uint64_t*> u64s = {
      {"detected_ns", &r.detected_ns},   {"start_record_us", &r.start_record_us},
      {"fence_us", &r.fence_us},         {"log_recovery_us", &r.log_recovery_us},
      {"truncate_us", &r.truncate_us},   {"publish_us", &r.publish_us},
      {"sweep_us", &r.sweep_us},         {"pause_us", &r.pause_us},
      {"scan_us", &r.scan_us}};
  const std::map<std::string, uint32_t*> u32s = {{"leader_replica", &r.leader_replica},
                                                 {"records", &r.records},
                                                 {"rolled_back", &r.rolled_back},
                                                 {"rolled_forward", &r.rolled_forward},
                                                 {"swept", &r.swept},
                                                 {"together", &r.together}};
  for (const auto& [k, v] : *f) {
    if (k == "pid") {
      auto x = parse_u64(v, k, 65535);
      if (!x) return x.status();
      r.pid = static_cast<uint16_t>(*x);
    } else if (k == "step") {
      if (v == "started") r.step = RecoveryStep::kStarted;
      else if (v == "published") r.step = RecoveryStep::kPublished;
      else if (v == "done") r.step = RecoveryStep::kDone;
      else return Status(Errc::kCorrupt, fmt::format("recovery record: unknown step '{}'", v));
    } else if (k == "slot") {
      auto s = parse_slot(v);
      if (!s) return s.status();
      r.slot = *s;
    } else if (auto it = u64s.find(k); it != u64s.end()) {
      auto x = parse_u64(v, k);
      if (!x) return x.status();
      *it->second = *x;
    } else if (auto jt = u32s.find(k); jt != u32s.end()) {
      auto x = parse_u64(v, k, UINT32_MAX);
      if (!x) return x.status();
      *jt->second = static_cast<uint32_t>(*x);
    }
  }
  if (r.pid == 0) return Status(Errc::kCorrupt, "recovery record has no pid");
  return r;
}

std::string encode_alloc_record(const AllocRecord& r) {
  std::string s = fmt::format("next_pid={}\npid_limit={}\n", r.next_pid, r.pid_limit);
  if (!r.reuse.empty()) s += "reuse=" + pid_list(r.reuse) + "\n";
  for (const Lease& l : r.leases) s += fmt::format("lease={},{}\n", slot_text(l.slot), l.pid);
  return s;
}

Result<AllocRecord> decode_alloc_record(std::string_view text) {
  auto f = parse_fields(text, "alloc record");
  if (!f) return f.status();
  AllocRecord r;
  for (const auto& [k, v] : *f) {
    if (k == "next_pid") {
      auto x = parse_u64(v, k, 65536);
      if (!x || *x == 0) return Status(Errc::kCorrupt, "alloc record: bad next_pid");
      r.next_pid = static_cast<uint32_t>(*x);
    } else if (k == "pid_limit") {
      auto x = parse_u64(v, k, 65535);
      if (!x || *x == 0) return Status(Errc::kCorrupt, "alloc record: bad pid_limit");
      r.pid_limit = static_cast<uint32_t>(*x);
    } else if (k == "reuse") {
      auto pids = parse_pid_list(v);
      if (!pids) return Status(Errc::kCorrupt, "alloc record: bad reuse list: " + pids.status().message());
      r.reuse = std::move(*pids);
    } else if (k == "lease") {
      const size_t c = v.rfind(',');
      if (c == std::string::npos) return Status(Errc::kCorrupt, fmt::format("alloc record: bad lease '{}'", v));
      auto slot = parse_slot(std::string_view(v).substr(0, c));
      auto pid = parse_u64(std::string_view(v).substr(c + 1), "lease pid", 65535);
      if (!slot) return slot.status();
      if (!pid) return pid.status();
      r.leases.push_back(Lease{*slot, static_cast<uint16_t>(*pid)});
    }
  }
  std::sort(r.leases.begin(), r.leases.end(), [](const Lease& a, const Lease& b) { return a.slot.first < b.slot.first; });
  return r;
}

std::optional<LaneSlot> find_free_slot(const AllocRecord& a, uint32_t count, uint32_t lanes) {
  if (count == 0) return std::nullopt;
  uint64_t at = 0;
  for (const Lease& l : a.leases) {  // sorted by first lane
    if (uint64_t{l.slot.first} >= at + count) break;
    at = std::max<uint64_t>(at, l.slot.end());
  }
  if (at + count > lanes) return std::nullopt;
  return LaneSlot{static_cast<uint32_t>(at), count};
}

// ---- Registry -------------------------------------------------------------------

zk::DigestAuth registry_auth(std::string_view secret) {
  static constexpr std::string_view kLabel = "pandora zookeeper digest v1";
  const Digest256 d = hmac_sha256(bytes_of(secret), bytes_of(kLabel));
  std::string hex;
  for (uint8_t b : d) hex += fmt::format("{:02x}", b);
  return zk::DigestAuth{"pandora", std::move(hex)};
}

namespace {

Status need_auth(const zk::ZkOptions& zo) {
  if (zo.auth) return Status::ok();
  return Status(Errc::kInvalidArgument,
                "the registry needs the ZooKeeper identity derived from the cluster secret (ZkOptions::auth = "
                "registry_auth(secret))");
}

}  // namespace

Status Registry::init(const zk::ZkOptions& zo, const std::string& root, const ClusterRecord& record,
                      const Logger& logger, uint32_t pid_limit) {
  if (Status s = need_auth(zo); !s) return s;
  auto zk = zk::ZkClient::connect(zo, logger);
  if (!zk) return zk.status();
  if (Status s = (*zk)->ensure_path(root); !s) return s;
  auto open_to_others = (*zk)->writable_by_others(root);
  if (!open_to_others) return open_to_others.status();
  if (*open_to_others) {
    return Status(Errc::kAuthFailed,
                  fmt::format("the ZooKeeper node {} on {} may be changed by others than this cluster's secret "
                              "holders (created by someone else, or by a Pandora before ZooKeeper ACLs): remove it "
                              "or pick another --zk-root",
                              root, zo.hosts));
  }
  const std::string cpath = root + "/cluster";
  auto existing = (*zk)->get(cpath);
  if (existing) {
    auto rec = decode_cluster_record(existing->data);
    if (!rec) return rec.status();
    if (rec->cluster_id != record.cluster_id) {
      return Status(Errc::kMismatch,
                    fmt::format("the ZooKeeper tree at {} belongs to cluster {:#x}, not {:#x}: pick another --zk-root "
                                "or remove the old tree",
                                root, rec->cluster_id, record.cluster_id));
    }
    return Status::ok();  // initialised before: keep its state
  }
  if (existing.status().code() != Errc::kNotFound) return existing.status();
  std::vector<Op> ops = {Op::create(cpath, encode_cluster_record(record)),
                         Op::create(root + "/alloc", encode_alloc_record(AllocRecord{.pid_limit = pid_limit})),
                         Op::create(root + "/compute", ""),
                         Op::create(root + "/failed", ""),
                         Op::create(root + "/recoveries", ""),
                         Op::create(root + "/fd", ""),
                         Op::create(root + "/fd/replicas", ""),
                         Op::create(root + "/fd/election", "")};
  Status s = (*zk)->multi(ops);
  if (s.code() == Errc::kAlreadyExists) return init(zo, root, record, logger, pid_limit);  // raced with another init
  return s;
}

Result<std::unique_ptr<Registry>> Registry::open(const zk::ZkOptions& zo, std::string root, uint64_t cluster_id,
                                                 const Logger& logger) {
  if (Status s = need_auth(zo); !s) return s;
  auto zk = zk::ZkClient::connect(zo, logger);
  if (!zk) return zk.status();
  auto node = (*zk)->get(root + "/cluster");
  if (!node) {
    if (node.status().code() == Errc::kNotFound) {
      return Status(Errc::kNotFound, fmt::format("no Pandora cluster in ZooKeeper at {}{}: run `pandora-ctl init` "
                                                 "(deploy/local/cluster.sh does) first",
                                                 zo.hosts, root));
    }
    return node.status();
  }
  auto rec = decode_cluster_record(node->data);
  if (!rec) return rec.status();
  if (rec->cluster_id != cluster_id) {
    return Status(Errc::kMismatch, fmt::format("the ZooKeeper tree at {} belongs to cluster {:#x}, not {:#x}", root,
                                               rec->cluster_id, cluster_id));
  }
  return std::unique_ptr<Registry>(new Registry(std::move(*zk), std::move(root), std::move(*rec), logger));
}

Result<ClusterRecord> Registry::read_cluster() {
  auto node = zk_->get(path("cluster"));
  if (!node) return node.status();
  return decode_cluster_record(node->data);
}

Result<ClusterRecord> Registry::refresh_cluster() {
  auto rec = read_cluster();
  if (rec) cluster_ = *rec;
  return rec;
}

Result<ClusterRecord> Registry::readdress_memory_nodes(const std::vector<MemoryNodeAddress>& live) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto node = zk_->get(path("cluster"));
    if (!node) return node.status();
    auto rec = decode_cluster_record(node->data);
    if (!rec) return rec.status();
    auto moved = readdressed(*rec, live);
    if (!moved) return moved.status();
    Status s = zk_->set(path("cluster"), encode_cluster_record(*moved), node->stat.version);
    if (s) {
      cluster_ = *moved;
      return moved;
    }
    if (s.code() != Errc::kConflict) return s;  // else the record moved meanwhile: again
  }
  return Status(Errc::kConflict, "the cluster record kept changing while the memory nodes' addresses were written");
}

Result<ClusterRecord> restored(const ClusterRecord& old, uint32_t node_id, const Endpoint& endpoint,
                               uint64_t incarnation) {
  const auto f = std::find_if(old.failed_memory.begin(), old.failed_memory.end(),
                              [&](const FailedMemoryNode& n) { return n.node_id == node_id; });
  if (f == old.failed_memory.end()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("memory node {} is not failed over: only a failed-over node is replaced", node_id));
  }
  if (old.memory_node_ids.size() != old.memory_nodes.size()) {
    return Status(Errc::kUnsupported, "the cluster record predates memory node ids: run pandora-ctl "
                                      "set-memory-nodes once (it records them), then replace the node");
  }
  size_t index = old.memory_nodes.size();
  for (size_t i = 0; i < old.memory_nodes.size(); ++i) {
    if (old.memory_node_ids[i] == node_id) {
      index = i;
    } else if (old.memory_nodes[i] == endpoint) {
      return Status(Errc::kConflict, fmt::format("{} is memory node {}'s address in the cluster record: the "
                                                 "replacement must listen elsewhere",
                                                 endpoint.to_string(), old.memory_node_ids[i]));
    }
  }
  for (const FailedMemoryNode& other : old.failed_memory) {
    if (other.node_id != node_id && other.endpoint == endpoint) {
      return Status(Errc::kConflict, fmt::format("{} is failed-over memory node {}'s recorded address: the "
                                                 "replacement must listen elsewhere",
                                                 endpoint.to_string(), other.node_id));
    }
  }
  if (index == old.memory_nodes.size()) {
    return Status(Errc::kCorrupt, fmt::format("cluster record: failed memory node {} has no entry", node_id));
  }
  ClusterRecord rec = old;
  rec.memory_nodes[index] = endpoint;
  rec.failed_memory.erase(rec.failed_memory.begin() + (f - old.failed_memory.begin()));
  rec.memory_incarnations.erase(node_id);
  if (incarnation != 0) rec.memory_incarnations[node_id] = incarnation;
  rec.epoch += 1;
  return rec;
}

std::string encode_replace_request(const ReplaceRequest& r) {
  std::string out = fmt::format("node={}\nendpoint={}\n", r.node_id, r.endpoint.to_string());
  // One line: an error message never spans lines here.
  if (!r.error.empty()) {
    std::string e = r.error;
    std::replace(e.begin(), e.end(), '\n', ' ');
    out += fmt::format("error={}\n", e);
  }
  return out;
}

Result<ReplaceRequest> decode_replace_request(std::string_view text) {
  auto f = parse_fields(text, "replace request");
  if (!f) return f.status();
  ReplaceRequest r;
  bool have_node = false, have_endpoint = false;
  for (const auto& [k, v] : *f) {
    if (k == "node") {
      auto id = parse_u64(v, k, UINT32_MAX);
      if (!id) return id.status();
      r.node_id = static_cast<uint32_t>(*id);
      have_node = true;
    } else if (k == "endpoint") {
      auto ep = parse_endpoint(v);
      if (!ep) return Status(Errc::kCorrupt, fmt::format("replace request: endpoint '{}': {}", v, ep.status().message()));
      r.endpoint = *ep;
      have_endpoint = true;
    } else if (k == "error") {
      r.error = v;
    }
  }
  if (!have_node || !have_endpoint) return Status(Errc::kCorrupt, "replace request without node and endpoint");
  return r;
}

Status Registry::request_replacement(const ReplaceRequest& r) {
  auto created = zk_->create(path("replace"), encode_replace_request(r));
  if (created) return Status::ok();
  if (created.status().code() != Errc::kAlreadyExists) return created.status();
  auto pending = replacement_request();
  if (pending && *pending) {
    return Status(Errc::kAlreadyExists, fmt::format("a replacement of memory node {} by {} is pending{}",
                                                    (*pending)->node_id, (*pending)->endpoint.to_string(),
                                                    (*pending)->error.empty() ? "" : " (failed: " + (*pending)->error + ")"));
  }
  return created.status();
}

Result<std::optional<ReplaceRequest>> Registry::replacement_request(std::function<void()> on_change) {
  if (on_change) {
    auto exists = zk_->watch_exists(path("replace"), std::move(on_change));
    if (!exists) return exists.status();
    if (!*exists) return std::optional<ReplaceRequest>{};
  }
  auto node = zk_->get(path("replace"));
  if (!node) {
    if (node.status().code() == Errc::kNotFound) return std::optional<ReplaceRequest>{};
    return node.status();
  }
  auto r = decode_replace_request(node->data);
  if (!r) return r.status();
  return std::optional<ReplaceRequest>{*r};
}

Status Registry::fail_replacement(const std::string& error) {
  auto r = replacement_request();
  if (!r) return r.status();
  if (!*r) return Status::ok();  // withdrawn meanwhile
  (*r)->error = error;
  return zk_->set(path("replace"), encode_replace_request(**r));
}

Status Registry::withdraw_replacement() {
  Status s = zk_->remove(path("replace"));
  return s.code() == Errc::kNotFound ? Status::ok() : s;
}

namespace {

// <root>/relocations: the rebuild's moves, as encode_relocations() text.
class ZkRelocationJournal final : public RelocationJournal {
 public:
  ZkRelocationJournal(zk::ZkClient& zk, std::string path) : zk_(zk), path_(std::move(path)) {}
  Result<std::vector<Relocation>> read() override {
    auto node = zk_.get(path_);
    if (!node) {
      if (node.status().code() == Errc::kNotFound) return std::vector<Relocation>{};
      return node.status();
    }
    return decode_relocations(node->data);
  }
  Status write(const std::vector<Relocation>& moves) override {
    const std::string text = encode_relocations(moves);
    auto created = zk_.create(path_, text);
    if (created) return Status::ok();
    if (created.status().code() != Errc::kAlreadyExists) return created.status();
    return zk_.set(path_, text);
  }
  Status clear() override {
    Status s = zk_.remove(path_);
    return s.code() == Errc::kNotFound ? Status::ok() : s;
  }

 private:
  zk::ZkClient& zk_;
  std::string path_;
};

}  // namespace

std::unique_ptr<RelocationJournal> Registry::relocation_journal() {
  return std::make_unique<ZkRelocationJournal>(*zk_, path("relocations"));
}

Result<ClusterRecord> Registry::restore_memory_node(uint32_t node_id, const Endpoint& endpoint,
                                                   uint64_t incarnation) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto node = zk_->get(path("cluster"));
    if (!node) return node.status();
    auto rec = decode_cluster_record(node->data);
    if (!rec) return rec.status();
    auto back = restored(*rec, node_id, endpoint, incarnation);
    if (!back) return back.status();
    std::vector<Op> ops = {Op::set(path("cluster"), encode_cluster_record(*back), node->stat.version)};
    if (Status s = add_end_pause(&ops); !s) return s;
    for (const char* extra : {"replace", "relocations"}) {
      auto there = zk_->exists(path(extra));
      if (!there) return there.status();
      if (*there) ops.push_back(Op::remove(path(extra)));
    }
    Status s = zk_->multi(ops);
    if (s) {
      cluster_ = *back;
      return back;
    }
    // The record moved, or an acknowledgement vanished (its node died) or
    // appeared meanwhile (ZooKeeper's "not empty", reported as an invalid
    // argument): again.
    if (s.code() != Errc::kConflict && s.code() != Errc::kNotFound && s.code() != Errc::kInvalidArgument) return s;
  }
  return Status(Errc::kConflict, "the cluster record kept changing while a memory node was restored");
}

Result<ClusterRecord> Registry::fail_memory_node(const FailedMemoryNode& failed, uint64_t pause_epoch) {
  const std::string pause = fmt::format("epoch={}\nfailed=\n", pause_epoch);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto node = zk_->get(path("cluster"));
    if (!node) return node.status();
    auto rec = decode_cluster_record(node->data);
    if (!rec) return rec.status();
    if (failed_over(*rec, failed.node_id)) {
      if (Status s = begin_pause(pause_epoch, {}); !s) return s;
      cluster_ = *rec;
      return rec;
    }
    rec->failed_memory.push_back(failed);
    rec->memory_incarnations.erase(failed.node_id);  // a replacement binds its own daemon
    rec->epoch += 1;
    auto paused = zk_->exists(path("pause"));
    if (!paused) return paused.status();
    const std::vector<Op> ops = {Op::set(path("cluster"), encode_cluster_record(*rec), node->stat.version),
                                 *paused ? Op::set(path("pause"), pause) : Op::create(path("pause"), pause)};
    Status s = zk_->multi(ops);
    if (s) {
      cluster_ = *rec;
      return rec;
    }
    // The record moved, or the pause appeared or vanished meanwhile: again.
    if (s.code() != Errc::kConflict && s.code() != Errc::kAlreadyExists && s.code() != Errc::kNotFound) return s;
  }
  return Status(Errc::kConflict, "the cluster record kept changing while a failed memory node was added");
}

Result<bool> Registry::pause_in_progress() { return zk_->exists(path("pause")); }

Result<bool> Registry::paused_for_memory() {
  auto node = zk_->get(path("pause"));
  if (!node) {
    if (node.status().code() == Errc::kNotFound) return false;
    return node.status();
  }
  auto f = parse_fields(node->data, "pause record");
  if (!f) return f.status();
  for (const auto& [k, v] : *f) {
    if (k == "failed") return v.empty();
  }
  return true;
}

Result<AllocRecord> Registry::alloc() {
  auto node = zk_->get(path("alloc"));
  if (!node) return node.status();
  return decode_alloc_record(node->data);
}

Result<MemberRecord> Registry::register_member(MemberRecord record, uint32_t lanes) {
  if (cluster_.lanes == 0) {
    return Status(Errc::kInvalidArgument, "the cluster record has no log lanes (re-run pandora-ctl init)");
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto node = zk_->get(path("alloc"));
    if (!node) return node.status();
    auto a = decode_alloc_record(node->data);
    if (!a) return a.status();
    uint16_t pid = 0;
    if (a->next_pid <= a->pid_limit) {
      pid = static_cast<uint16_t>(a->next_pid);
      a->next_pid += 1;
    } else if (!a->reuse.empty()) {
      pid = a->reuse.front();
      a->reuse.erase(a->reuse.begin());
    } else {
      return Status(Errc::kUnavailable,
                    fmt::format("every compute pid (1..{}) is in use and none is recycled yet: the failure "
                                "detector's leader recycles failed pids once 95% are used",
                                a->pid_limit));
    }
    auto slot = find_free_slot(*a, lanes, cluster_.lanes);
    if (!slot) {
      uint64_t leased = 0;
      for (const Lease& l : a->leases) leased += l.slot.count;
      return Status(Errc::kUnavailable,
                    fmt::format("no run of {} free log lanes: {} of the log area's {} lanes are leased by {} "
                                "node(s); start the memory daemons with a larger --log-size or run fewer coordinators",
                                lanes, leased, cluster_.lanes, a->leases.size()));
    }
    record.pid = pid;
    record.slot = *slot;
    if (record.registered_ns == 0) record.registered_ns = now_realtime_ns();
    a->leases.push_back(Lease{*slot, record.pid});
    std::sort(a->leases.begin(), a->leases.end(),
              [](const Lease& x, const Lease& y) { return x.slot.first < y.slot.first; });
    std::vector<Op> ops = {Op::set(path("alloc"), encode_alloc_record(*a), node->stat.version),
                           Op::create(path(fmt::format("compute/{}", record.pid)), encode_member_record(record))};
    Status s = zk_->multi(ops);
    if (s) return record;
    if (s.code() == Errc::kConflict) continue;  // another node registered meanwhile
    if (s.code() == Errc::kAlreadyExists) {
      return Status(Errc::kAlreadyExists,
                    fmt::format("pid {} is registered already: the alloc record and {} disagree", record.pid,
                                path("compute")));
    }
    return s;
  }
  return Status(Errc::kUnavailable, "registration lost 100 races in a row");
}

Result<std::optional<MemberRecord>> Registry::member(uint16_t pid) {
  auto node = zk_->get(path(fmt::format("compute/{}", pid)));
  if (!node) {
    if (node.status().code() == Errc::kNotFound) return std::optional<MemberRecord>();
    return node.status();
  }
  auto r = decode_member_record(node->data);
  if (!r) return r.status();
  return std::optional<MemberRecord>(*r);
}

Result<std::vector<MemberRecord>> Registry::members() {
  auto names = zk_->children(path("compute"));
  if (!names) return names.status();
  std::vector<MemberRecord> out;
  for (const std::string& n : *names) {
    auto pid = parse_pid_name(n);
    if (!pid) continue;
    auto m = member(*pid);
    if (!m) return m.status();
    if (*m) out.push_back(**m);
  }
  return out;
}

Result<std::vector<uint16_t>> Registry::pid_children(std::string_view rel, std::function<void()> on_change) {
  auto names = on_change ? zk_->watch_children(path(rel), std::move(on_change)) : zk_->children(path(rel));
  if (!names) return names.status();
  std::vector<uint16_t> out;
  for (const std::string& n : *names) {
    if (auto pid = parse_pid_name(n)) out.push_back(*pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<uint16_t>> Registry::failed() { return pid_children("failed", {}); }
Result<std::vector<uint16_t>> Registry::watch_failed(std::function<void()> on_change) {
  return pid_children("failed", std::move(on_change));
}
Result<std::vector<uint16_t>> Registry::watch_members(std::function<void()> on_change) {
  return pid_children("compute", std::move(on_change));
}

namespace {

// A recovery record as read: none when the node does not exist.
Result<std::optional<RecoveryRecord>> recovery_record_of(const Result<zk::Node>& node) {
  if (!node) {
    if (node.status().code() == Errc::kNotFound) return std::optional<RecoveryRecord>();
    return node.status();
  }
  auto r = decode_recovery_record(node->data);
  if (!r) return r.status();
  return std::optional<RecoveryRecord>(*r);
}

}  // namespace

Result<std::optional<RecoveryRecord>> Registry::recovery(uint16_t pid) {
  return recovery_record_of(zk_->get(path(fmt::format("recoveries/{}", pid))));
}

Result<std::vector<std::optional<RecoveryRecord>>> Registry::recoveries_of(std::span<const uint16_t> pids,
                                                                           const std::function<void()>& meanwhile) {
  std::vector<std::string> paths;
  paths.reserve(pids.size());
  for (uint16_t pid : pids) paths.push_back(path(fmt::format("recoveries/{}", pid)));
  std::vector<std::optional<RecoveryRecord>> out;
  out.reserve(pids.size());
  for (const Result<zk::Node>& node : zk_->get_many(paths, meanwhile)) {
    auto r = recovery_record_of(node);
    if (!r) return r.status();
    out.push_back(std::move(*r));
  }
  return out;
}

Result<std::vector<RecoveryRecord>> Registry::recoveries() {
  auto pids = pid_children("recoveries", {});
  if (!pids) return pids.status();
  std::vector<RecoveryRecord> out;
  for (uint16_t p : *pids) {
    auto r = recovery(p);
    if (!r) return r.status();
    if (*r) out.push_back(**r);
  }
  return out;
}

Status Registry::start_recovery(const RecoveryRecord& r) { return create_recovery(r).status(); }

Result<bool> Registry::create_recovery(const RecoveryRecord& r) {
  RecoveryRecord started = r;
  started.step = RecoveryStep::kStarted;
  auto created = zk_->create(path(fmt::format("recoveries/{}", r.pid)), encode_recovery_record(started));
  if (created) return true;
  if (created.status().code() == Errc::kAlreadyExists) return false;
  return created.status();
}

namespace {

// One pid's publishing operations (Registry::publish_failed): failed/<pid>
// stamped with the publish time, the record at published (set when
// `record_there`, else created), compute/<pid> removed when `member_there`.
void append_publish_ops(const Registry& reg, std::vector<Op>& ops, const RecoveryRecord& r, bool record_there,
                        bool member_there, const std::string& stamp) {
  RecoveryRecord published = r;
  published.step = RecoveryStep::kPublished;
  const std::string record_path = reg.path(fmt::format("recoveries/{}", r.pid));
  const std::string data = encode_recovery_record(published);
  ops.push_back(Op::create(reg.path(fmt::format("failed/{}", r.pid)), stamp));
  ops.push_back(record_there ? Op::set(record_path, data) : Op::create(record_path, data));
  if (member_there) ops.push_back(Op::remove(reg.path(fmt::format("compute/{}", r.pid))));
}

std::string publish_stamp() { return fmt::format("published_ns={}\n", now_realtime_ns()); }

}  // namespace

Status Registry::publish_failed(const RecoveryRecord& r, bool record_exists) {
  const std::string record_path = path(fmt::format("recoveries/{}", r.pid));
  const std::string member_path = path(fmt::format("compute/{}", r.pid));
  bool record_there = record_exists, member_there = true;
  Status s;
  // At most three tries: each failure on a missing node drops that
  // assumption, and nothing of ours creates either node again meanwhile.
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<Op> ops;
    append_publish_ops(*this, ops, r, record_there, member_there, publish_stamp());
    s = zk_->multi(ops);
    if (s.code() == Errc::kAlreadyExists) {
      // failed/<pid>: published by an earlier run. Else the record,
      // created here because it was thought missing, exists.
      auto failed_there = zk_->exists(path(fmt::format("failed/{}", r.pid)));
      if (!failed_there) return failed_there.status();
      if (*failed_there) return Status::ok();
      record_there = true;
      continue;
    }
    if (s.code() != Errc::kNotFound) return s;
    // The member node is gone (a pid retired without one, or an earlier
    // publish whose answer was lost), or the record is not there.
    auto rec = zk_->exists(record_path);
    if (!rec) return rec.status();
    auto member = zk_->exists(member_path);
    if (!member) return member.status();
    record_there = *rec;
    member_there = *member;
  }
  return s;
}

// A multi is one ZooKeeper request, bounded by the server's jute.maxbuffer
// (1 MB); 128 pids' nodes (three each at most, plus the alloc record) stay
// far below it.
constexpr size_t kPidsPerMulti = 128;

Status Registry::publish_failed_together(std::span<const ToPublish> pids) {
  constexpr size_t kPerMulti = kPidsPerMulti;
  if (pids.size() > kPerMulti) {
    for (size_t at = 0; at < pids.size(); at += kPerMulti) {
      if (Status s = publish_failed_together(pids.subspan(at, std::min(kPerMulti, pids.size() - at))); !s) return s;
    }
    return Status::ok();
  }
  std::vector<Op> ops;
  const std::string stamp = publish_stamp();
  for (const ToPublish& p : pids) append_publish_ops(*this, ops, p.record, p.record_exists, true, stamp);
  Status s = zk_->multi(ops);
  if (s || (s.code() != Errc::kAlreadyExists && s.code() != Errc::kNotFound)) return s;
  // Some pid is not as expected (and nothing was written): one at a time.
  for (const ToPublish& p : pids) {
    if (Status one = publish_failed(p.record, p.record_exists); !one) return one;
  }
  return Status::ok();
}

Status Registry::finish_recovery(const RecoveryRecord& r) {
  return finish_recoveries(std::span<const RecoveryRecord>(&r, 1));
}

Status Registry::finish_recoveries(std::span<const RecoveryRecord> rs) {
  if (rs.size() > kPidsPerMulti) {
    for (size_t at = 0; at < rs.size(); at += kPidsPerMulti) {
      if (Status s = finish_recoveries(rs.subspan(at, std::min(kPidsPerMulti, rs.size() - at))); !s) return s;
    }
    return Status::ok();
  }
  if (rs.empty()) return Status::ok();
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto node = zk_->get(path("alloc"));
    if (!node) return node.status();
    auto a = decode_alloc_record(node->data);
    if (!a) return a.status();
    const size_t before = a->leases.size();
    std::erase_if(a->leases, [&](const Lease& l) {
      return std::any_of(rs.begin(), rs.end(), [&](const RecoveryRecord& r) { return r.pid == l.pid; });
    });
    std::vector<Op> ops;
    for (const RecoveryRecord& r : rs) {
      RecoveryRecord done = r;
      done.step = RecoveryStep::kDone;
      ops.push_back(Op::set(path(fmt::format("recoveries/{}", r.pid)), encode_recovery_record(done)));
    }
    if (a->leases.size() != before) ops.push_back(Op::set(path("alloc"), encode_alloc_record(*a), node->stat.version));
    Status s = zk_->multi(ops);
    if (s.code() == Errc::kConflict) continue;
    return s;
  }
  return Status(Errc::kUnavailable, "releasing the lane lease lost 100 races in a row");
}

Status Registry::begin_pause(uint64_t epoch, const std::vector<uint16_t>& failed) {
  const std::string data = fmt::format("epoch={}\nfailed={}\n", epoch, pid_list(failed));
  auto created = zk_->create(path("pause"), data);
  if (created) return Status::ok();
  if (created.status().code() != Errc::kAlreadyExists) return created.status();
  return zk_->set(path("pause"), data);  // a dead leader's pause: take it over with the new epoch
}

Result<std::vector<uint16_t>> Registry::pause_acks(uint64_t epoch) {
  auto names = zk_->children(path("pause"));
  if (!names) return names.status();
  std::vector<uint16_t> out;
  for (const std::string& n : *names) {
    auto pid = parse_pid_name(n);
    if (!pid) continue;
    auto node = zk_->get(path("pause/" + n));
    if (!node) continue;
    if (node->data == fmt::format("epoch={}\n", epoch)) out.push_back(*pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status Registry::add_end_pause(std::vector<Op>* ops) {
  auto names = zk_->children(path("pause"));
  if (!names) return names.status().code() == Errc::kNotFound ? Status::ok() : names.status();
  for (const std::string& n : *names) ops->push_back(Op::remove(path("pause/" + n)));
  ops->push_back(Op::remove(path("pause")));
  return Status::ok();
}

Status Registry::end_pause() {
  std::vector<Op> ops;
  if (Status s = add_end_pause(&ops); !s) return s;
  if (ops.empty()) return Status::ok();
  Status s = zk_->multi(ops);
  if (s.code() == Errc::kNotFound) return end_pause();  // an ack vanished meanwhile (its node died): again
  return s;
}

Result<uint64_t> Registry::watch_pause(std::function<void()> on_change) {
  auto exists = zk_->watch_exists(path("pause"), std::move(on_change));
  if (!exists) return exists.status();
  if (!*exists) return uint64_t{0};
  auto node = zk_->get(path("pause"));
  if (!node) return node.status().code() == Errc::kNotFound ? Result<uint64_t>(uint64_t{0}) : node.status();
  auto f = parse_fields(node->data, "pause record");
  if (!f) return f.status();
  for (const auto& [k, v] : *f) {
    if (k == "epoch") return parse_u64(v, k);
  }
  return Status(Errc::kCorrupt, "pause record without an epoch");
}

Status Registry::ack_pause(uint16_t pid, uint64_t epoch) {
  const std::string p = path(fmt::format("pause/{}", pid));
  const std::string data = fmt::format("epoch={}\n", epoch);
  auto created = zk_->create(p, data, CreateMode::kEphemeral);
  if (created) return Status::ok();
  if (created.status().code() == Errc::kAlreadyExists) return zk_->set(p, data);
  return created.status();
}

Status Registry::begin_recycle(const Recycle& r) {
  const std::string data = fmt::format("generation={}\npids={}\n", r.generation, pid_list(r.pids));
  auto created = zk_->create(path("recycle"), data);
  if (created) return Status::ok();
  if (created.status().code() != Errc::kAlreadyExists) return created.status();
  return zk_->set(path("recycle"), data);  // a dead leader's attempt: replaced
}

Result<std::vector<uint16_t>> Registry::recycle_acks(uint64_t generation) {
  auto names = zk_->children(path("recycle"));
  if (!names) return names.status();
  std::vector<uint16_t> out;
  for (const std::string& n : *names) {
    auto pid = parse_pid_name(n);
    if (!pid) continue;
    auto node = zk_->get(path("recycle/" + n));
    if (node && node->data == fmt::format("generation={}\n", generation)) out.push_back(*pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<Registry::Recycle> Registry::watch_recycle(std::function<void()> on_change) {
  auto exists = zk_->watch_exists(path("recycle"), std::move(on_change));
  if (!exists) return exists.status();
  Recycle r;
  if (!*exists) return r;
  auto node = zk_->get(path("recycle"));
  if (!node) return node.status().code() == Errc::kNotFound ? Result<Recycle>(r) : node.status();
  auto f = parse_fields(node->data, "recycle record");
  if (!f) return f.status();
  for (const auto& [k, v] : *f) {
    if (k == "generation") {
      auto g = parse_u64(v, k);
      if (!g) return g.status();
      r.generation = *g;
    } else if (k == "pids") {
      auto pids = parse_pid_list(v);
      if (!pids) return pids.status();
      r.pids = std::move(*pids);
    }
  }
  return r;
}

Status Registry::ack_recycle(uint16_t pid, uint64_t generation) {
  const std::string p = path(fmt::format("recycle/{}", pid));
  const std::string data = fmt::format("generation={}\n", generation);
  auto created = zk_->create(p, data, CreateMode::kEphemeral);
  if (created) return Status::ok();
  if (created.status().code() == Errc::kAlreadyExists) return zk_->set(p, data);
  return created.status();
}

Status Registry::finish_recycle(const Recycle& r) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto node = zk_->get(path("alloc"));
    if (!node) return node.status();
    auto a = decode_alloc_record(node->data);
    if (!a) return a.status();
    for (uint16_t p : r.pids) {
      if (std::find(a->reuse.begin(), a->reuse.end(), p) == a->reuse.end()) a->reuse.push_back(p);
    }
    std::vector<Op> ops = {Op::set(path("alloc"), encode_alloc_record(*a), node->stat.version)};
    for (uint16_t p : r.pids) {
      ops.push_back(Op::remove(path(fmt::format("failed/{}", p))));
      ops.push_back(Op::remove(path(fmt::format("recoveries/{}", p))));
    }
    auto acks = zk_->children(path("recycle"));
    if (!acks) return acks.status();
    for (const std::string& n : *acks) ops.push_back(Op::remove(path("recycle/" + n)));
    ops.push_back(Op::remove(path("recycle")));
    Status s = zk_->multi(ops);
    if (s.code() == Errc::kConflict || s.code() == Errc::kNotFound) continue;  // alloc moved / an ack left
    return s;
  }
  return Status(Errc::kUnavailable, "finishing the pid recycling lost 100 races in a row");
}

Status Registry::abandon_recycle() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto acks = zk_->children(path("recycle"));
    if (!acks) return acks.status().code() == Errc::kNotFound ? Status::ok() : acks.status();
    std::vector<Op> ops;
    for (const std::string& n : *acks) ops.push_back(Op::remove(path("recycle/" + n)));
    ops.push_back(Op::remove(path("recycle")));
    Status s = zk_->multi(ops);
    if (s.code() == Errc::kNotFound) continue;
    return s;
  }
  return Status(Errc::kUnavailable, "withdrawing the pid recycling lost 100 races in a row");
}

Status Registry::announce_replica(uint32_t replica_id, const Endpoint& udp, std::chrono::milliseconds stale_wait) {
  const std::string p = path(fmt::format("fd/replicas/{}", replica_id));
  const auto deadline = std::chrono::steady_clock::now() + stale_wait;
  const std::string announcement = fmt::format("udp={}\n", udp.to_string());
  bool told = false;
  for (;;) {
    auto created = zk_->create(p, announcement, CreateMode::kEphemeral);
    if (created) return Status::ok();
    if (created.status().code() != Errc::kAlreadyExists) return created.status();
    auto node = zk_->get(p);
    if (!node) {
      if (node.status().code() == Errc::kNotFound) continue;  // it just went
      return node.status();
    }
    if (node->data == announcement) {
      // It announces the UDP endpoint this replica has bound: whoever
      // created it no longer holds the socket, so it is dead (its session
      // just has not expired yet). Taken over at once.
      logger_.info("{} is left by a dead replica (ZooKeeper session {:#x}, our UDP endpoint): taking it over", p,
                   node->stat.ephemeral_owner);
      Status rm = zk_->remove(p, node->stat.version);
      if (!rm && rm.code() != Errc::kNotFound && rm.code() != Errc::kConflict) return rm;
      continue;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(Errc::kAlreadyExists,
                    fmt::format("FD replica {} is running already ({} exists, ZooKeeper session {:#x}{}); give each "
                                "replica its own --replica-id",
                                replica_id, p, node->stat.ephemeral_owner,
                                stale_wait.count() > 0
                                    ? fmt::format(", which did not expire within {} ms", stale_wait.count())
                                    : ""));
    }
    if (!told) {
      logger_.info("{} is held by ZooKeeper session {:#x}: waiting up to {} ms for it to expire (a replica that died)",
                p, node->stat.ephemeral_owner, stale_wait.count());
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

namespace {
// What an FD replica's election node holds.
std::string candidacy(uint32_t replica_id) { return fmt::format("replica={}\n", replica_id); }
}  // namespace

Result<std::string> Registry::stand_for_election(uint32_t replica_id) {
  auto created = zk_->create(path("fd/election/n_"), candidacy(replica_id), CreateMode::kEphemeralSequential);
  if (!created) return created.status();
  return created->substr(created->rfind('/') + 1);
}

std::string Registry::election_path(std::string_view name) const { return path(fmt::format("fd/election/{}", name)); }

Result<uint32_t> Registry::candidate(std::string_view name) {
  auto node = zk_->get(election_path(name));
  if (!node) return node.status();
  static constexpr std::string_view kPrefix = "replica=";
  std::string_view v = node->data;
  if (v.rfind(kPrefix, 0) != 0 || v.empty() || v.back() != '\n') {
    return Status(Errc::kCorrupt, fmt::format("election node {} does not name a replica", name));
  }
  auto id = parse_u64(v.substr(kPrefix.size(), v.size() - kPrefix.size() - 1), "replica id", UINT32_MAX);
  if (!id) return Status(Errc::kCorrupt, fmt::format("election node {}: {}", name, id.status().message()));
  return static_cast<uint32_t>(*id);
}

Status Registry::depose(std::string_view name) { return zk_->remove(election_path(name)); }

Result<int> Registry::withdraw_stale_candidacies(uint32_t replica_id) {
  auto names = zk_->children(path("fd/election"));
  if (!names) return names.status();
  const std::string mine = candidacy(replica_id);
  int removed = 0;
  for (const std::string& n : *names) {
    const std::string p = election_path(n);
    auto node = zk_->get(p);
    if (!node) {
      if (node.status().code() == Errc::kNotFound) continue;
      return node.status();
    }
    if (node->data != mine || node->stat.ephemeral_owner == zk_->session_id()) continue;
    Status s = zk_->remove(p, node->stat.version);
    if (s) ++removed;
    else if (s.code() != Errc::kNotFound) return s;
  }
  return removed;
}

namespace {
Result<std::map<uint32_t, Endpoint>> read_replicas(zk::ZkClient& zk, const std::string& dir,
                                                   const std::vector<std::string>& names) {
  std::map<uint32_t, Endpoint> out;
  for (const std::string& n : names) {
    auto id = parse_u64(n, "replica id", UINT32_MAX);
    if (!id) continue;
    auto node = zk.get(dir + "/" + n);
    if (!node) {
      if (node.status().code() == Errc::kNotFound) continue;  // went away meanwhile
      return node.status();
    }
    auto f = parse_fields(node->data, "replica record");
    if (!f) return f.status();
    for (const auto& [k, v] : *f) {
      if (k != "udp") continue;
      auto ep = parse_endpoint(v);
      if (!ep) return Status(Errc::kCorrupt, "replica record: " + ep.status().message());
      out[static_cast<uint32_t>(*id)] = *ep;
    }
  }
  return out;
}
}  // namespace

Result<std::map<uint32_t, Endpoint>> Registry::replicas() {
  auto names = zk_->children(path("fd/replicas"));
  if (!names) return names.status();
  return read_replicas(*zk_, path("fd/replicas"), *names);
}

Result<std::map<uint32_t, Endpoint>> Registry::watch_replicas(std::function<void()> on_change) {
  auto names = zk_->watch_children(path("fd/replicas"), std::move(on_change));
  if (!names) return names.status();
  return read_replicas(*zk_, path("fd/replicas"), *names);
}

}  // namespace pandora
