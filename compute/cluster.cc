#include "compute/cluster.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "compute/op_batch.h"

namespace pandora {

namespace {

// The data connection to a memory node out of the configuration: every
// operation fails as on a lost link. Nothing posts to it once placement
// excludes the node; it keeps node indexes dense.
class FailedNodeConnection final : public Connection {
 public:
  void post_read(uint64_t, void*, uint32_t, uint64_t wr_id) override { fail(wr_id, OpType::kRead); }
  void post_write(uint64_t, const void*, uint32_t, uint64_t wr_id, Durability = Durability::kPersistent) override {
    fail(wr_id, OpType::kWrite);
  }
  void post_cas(uint64_t, uint64_t, uint64_t, uint64_t wr_id, Durability = Durability::kPersistent) override {
    fail(wr_id, OpType::kCas);
  }
  void post_faa(uint64_t, uint64_t, uint64_t wr_id, Durability = Durability::kPersistent) override {
    fail(wr_id, OpType::kFaa);
  }
  void flush() override {}
  size_t poll(std::span<Completion> out) override {
    size_t n = 0;
    while (n < out.size() && !failed_.empty()) {
      out[n++] = failed_.back();
      failed_.pop_back();
    }
    return n;
  }
  size_t wait(std::span<Completion> out, std::chrono::milliseconds) override { return poll(out); }
  size_t outstanding() const override { return failed_.size(); }
  Errc health() const override { return Errc::kDisconnected; }
  uint64_t data_begin() const override { return 0; }
  uint64_t data_end() const override { return 0; }
  std::string_view backend() const override { return "failed"; }

 private:
  void fail(uint64_t wr_id, OpType op) { failed_.push_back(Completion{wr_id, op, Errc::kDisconnected, 0}); }
  std::vector<Completion> failed_;
};

}  // namespace

Result<std::unique_ptr<Cluster>> Cluster::connect(const ComputeConfig& config, const Logger& logger) {
  if (Status s = config.validate(); !s) return s;
  if (config.memory_nodes.size() > kMaxMemoryNodes) {
    return Status(Errc::kInvalidArgument, fmt::format("{} memory nodes configured; at most {} are supported",
                                                      config.memory_nodes.size(), kMaxMemoryNodes));
  }
  std::unique_ptr<Cluster> c(new Cluster(config, logger));
  const ClientIdentity me = config.identity();
  uint64_t failed = 0;
  std::optional<wire::RegionInfo> live_region;
  for (const Endpoint& ep : config.memory_nodes) {
    const auto f = std::find_if(config.failed_memory_nodes.begin(), config.failed_memory_nodes.end(),
                                [&](const FailedMemoryNode& n) { return n.endpoint == ep; });
    if (f != config.failed_memory_nodes.end()) {
      // Out of the configuration: never contacted. Its region is described
      // by a live node's (same layout) under its own node id, which keeps
      // placement's ring what it was.
      failed |= uint64_t{1} << c->nodes_.size();
      MemoryNodeInfo info{ep, {}};
      info.region.node_id = f->node_id;
      c->nodes_.push_back(info);
      continue;
    }
    auto ctl = ControlClient::connect(ep, me, config.connect_timeout);
    if (!ctl) {
      return Status(ctl.status().code(),
                    fmt::format("memory node {}: {}", ep.to_string(), ctl.status().message()));
    }
    c->nodes_.push_back(MemoryNodeInfo{ep, (*ctl)->region()});
    if (!live_region) live_region = (*ctl)->region();
  }
  if (!live_region) return Status(Errc::kUnavailable, "every configured memory node has failed");
  for (size_t i = 0; i < c->nodes_.size(); ++i) {
    if (!((failed >> i) & 1)) continue;
    const uint32_t id = c->nodes_[i].region.node_id;
    c->nodes_[i].region = *live_region;
    c->nodes_[i].region.node_id = id;
  }
  c->declared_failed_.store(failed);
  c->applied_failed_.store(failed);
  if (Status s = c->adopt_nodes(); !s) return s;
  logger.debug("connected to {} memory nodes over {}", c->nodes_.size(), backend_name(config.backend));
  return c;
}

Result<std::unique_ptr<Cluster>> Cluster::attach(const ComputeConfig& config, const Logger& logger,
                                                 std::vector<MemoryNodeInfo> nodes, ConnectionFactory open,
                                                 const TimeSource& time) {
  if (Status s = config.validate(); !s) return s;
  if (nodes.size() != config.memory_nodes.size()) {
    return Status(Errc::kInvalidArgument, fmt::format("{} memory nodes given for a configuration listing {}",
                                                      nodes.size(), config.memory_nodes.size()));
  }
  if (!open) return Status(Errc::kInvalidArgument, "attach needs a connection factory");
  std::unique_ptr<Cluster> c(new Cluster(config, logger));
  c->nodes_ = std::move(nodes);
  c->open_ = std::move(open);
  c->time_ = &time;
  if (Status s = c->adopt_nodes(); !s) return s;
  return c;
}

Status Cluster::adopt_nodes() {
  if (nodes_.size() > kMaxMemoryNodes) {
    return Status(Errc::kInvalidArgument, fmt::format("{} memory nodes configured; at most {} are supported",
                                                      nodes_.size(), kMaxMemoryNodes));
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const MemoryNodeInfo& n = nodes_[i];
    if (n.region.cluster_id != config_.cluster_id) {
      return Status(Errc::kMismatch, fmt::format("memory node {} belongs to cluster {:#x}, not {:#x}",
                                                 n.endpoint.to_string(), n.region.cluster_id, config_.cluster_id));
    }
    for (size_t j = 0; j < i; ++j) {
      if (nodes_[j].region.node_id == n.region.node_id) {
        return Status(Errc::kMismatch, fmt::format("memory nodes {} and {} both claim node id {}",
                                                   nodes_[j].endpoint.to_string(), n.endpoint.to_string(),
                                                   n.region.node_id));
      }
    }
  }
  table_begin_ = nodes_[0].region.table_offset;
  table_limit_ = UINT64_MAX;
  for (const auto& n : nodes_) {
    if (n.region.table_offset != table_begin_) {
      return Status(Errc::kMismatch, fmt::format("memory node {} starts its table area at {:#x}, node {} at {:#x}; "
                                                 "every node must share the layout version",
                                                 n.endpoint.to_string(), n.region.table_offset,
                                                 nodes_[0].endpoint.to_string(), table_begin_));
    }
    table_limit_ = std::min(table_limit_, n.region.log_offset);
  }
  if (Status s = rebuild_placement(config_.replicas, config_.shards); !s) return s;
  auto conns = open_connections();
  if (!conns) return conns.status();
  bootstrap_ = std::move(*conns);
  for (auto& p : bootstrap_) bootstrap_raw_.push_back(p.get());
  return Status::ok();
}

std::optional<size_t> Cluster::index_of(uint32_t node_id) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].region.node_id == node_id) return i;
  }
  return std::nullopt;
}

uint32_t Cluster::lanes_that_fit(uint32_t lane_bytes) const {
  uint64_t lanes = UINT32_MAX;
  for (const auto& n : nodes_) lanes = std::min<uint64_t>(lanes, n.region.log_size / lane_bytes);
  return static_cast<uint32_t>(lanes);
}

Status Cluster::rebuild_placement(uint32_t replicas, uint32_t shards) {
  std::vector<uint32_t> ids;
  for (const auto& n : nodes_) ids.push_back(n.region.node_id);
  auto p = Placement::create(ids, replicas, shards);
  if (!p) return p.status();
  placement_.emplace(std::move(*p));
  replicas_ = replicas;
  shard_replicas_.assign(size_t{shards} * replicas, 0);
  for (uint32_t s = 0; s < shards; ++s) {
    auto reps = placement_->replicas_of_shard(s);
    for (uint32_t r = 0; r < replicas; ++r) shard_replicas_[size_t{s} * replicas + r] = static_cast<uint16_t>(*index_of(reps[r]));
  }
  return build_live_replicas(applied_failed_.load(std::memory_order_acquire));
}

Status Cluster::build_live_replicas(uint64_t failed) {
  const uint32_t shards = placement_->shards();
  std::vector<uint16_t> live(shard_replicas_.size(), 0);
  std::vector<uint32_t> counts(shards, 0);
  for (uint32_t s = 0; s < shards; ++s) {
    for (uint32_t r = 0; r < replicas_; ++r) {
      const uint16_t n = shard_replicas_[size_t{s} * replicas_ + r];
      if (!((failed >> n) & 1)) live[size_t{s} * replicas_ + counts[s]++] = n;
    }
    if (counts[s] == 0) {
      return Status(Errc::kUnavailable, fmt::format("shard {} has no live replica left (all {} of its memory nodes "
                                                    "failed): its data is lost to this configuration",
                                                    s, replicas_));
    }
  }
  live_replicas_ = std::move(live);
  live_counts_ = std::move(counts);
  return Status::ok();
}

void Cluster::note_waited_out(uint64_t nodes, std::chrono::milliseconds waited) {
  const uint64_t fresh = nodes & ~waited_out_.fetch_or(nodes, std::memory_order_acq_rel);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!((fresh >> n) & 1)) continue;
    // The only trace of why a compute node stops on a link it lost: say
    // that nobody declared the node, and that this node must be recovered.
    logger_.warn("memory node {} ({}) unreachable and not declared failed within {} ms: a broken link or a "
                 "partition, not a fail-over; coordinators of this compute node stop and leave their logged "
                 "transactions to recovery",
                 nodes_[n].region.node_id, nodes_[n].endpoint.to_string(), waited.count());
  }
}

Status Cluster::apply_memory_failures() {
  const uint64_t failed = declared_failed_.load(std::memory_order_acquire);
  if (failed == applied_failed_.load(std::memory_order_acquire)) return Status::ok();
  if (placement_) {
    if (Status s = build_live_replicas(failed); !s) return s;
  }
  applied_failed_.store(failed, std::memory_order_release);
  config_version_.fetch_add(1, std::memory_order_acq_rel);
  // Warn: an operator must know the data now has fewer copies.
  logger_.warn("memory configuration {}: {} of {} memory nodes live", config_version_.load(),
               nodes_.size() - static_cast<size_t>(std::popcount(failed)), nodes_.size());
  return Status::ok();
}

std::vector<size_t> Cluster::log_node_indexes(uint16_t pid) const {
  std::vector<size_t> out;
  for (uint32_t id : placement_->log_nodes_of(pid)) {
    const size_t i = *index_of(id);
    if (!failed_over(i)) out.push_back(i);
  }
  return out;
}

Result<std::unique_ptr<Connection>> Cluster::connect_replacement(size_t index, const Endpoint& endpoint,
                                                                 wire::RegionInfo* region) const {
  if (index >= nodes_.size()) return Status(Errc::kInvalidArgument, fmt::format("no memory node index {}", index));
  const MemoryNodeInfo& n = nodes_[index];
  if (!failed_over(index)) {
    return Status(Errc::kInvalidArgument, fmt::format("memory node {} is live at {}, not failed over",
                                                      n.region.node_id, n.endpoint.to_string()));
  }
  auto ctl = ControlClient::connect(endpoint, config_.identity(), config_.connect_timeout);
  if (!ctl) {
    return Status(ctl.status().code(), fmt::format("replacement memory node {} at {}: {}", n.region.node_id,
                                                   endpoint.to_string(), ctl.status().message()));
  }
  const wire::RegionInfo& r = (*ctl)->region();
  // n.region describes the failed node by a live node's layout (connect()).
  if (r.node_id != n.region.node_id || r.cluster_id != config_.cluster_id || r.table_offset != table_begin_ ||
      r.log_offset != n.region.log_offset || r.region_size != n.region.region_size) {
    return Status(Errc::kMismatch,
                  fmt::format("the daemon at {} serves node {} of cluster {:#x} (region {} bytes, log at {:#x}); "
                              "node {} of cluster {:#x} needs a region of {} bytes with its log at {:#x}",
                              endpoint.to_string(), r.node_id, r.cluster_id, r.region_size, r.log_offset,
                              n.region.node_id, config_.cluster_id, n.region.region_size, n.region.log_offset));
  }
  if (region) *region = r;
  auto conn = ::pandora::open_connection(endpoint, config_.identity(), config_.connect_options());
  if (!conn) {
    return Status(conn.status().code(), fmt::format("data connection to replacement memory node {} at {}: {}",
                                                    n.region.node_id, endpoint.to_string(), conn.status().message()));
  }
  return conn;
}

Status Cluster::restore_memory_node(size_t index, const Endpoint& endpoint, uint64_t incarnation) {
  if (index < nodes_.size() && !failed_over(index) && nodes_[index].endpoint == endpoint) return Status::ok();
  wire::RegionInfo region;
  auto conn = connect_replacement(index, endpoint, &region);
  if (!conn) return conn.status();
  if (incarnation != 0 && region.daemon_incarnation != incarnation) {
    return Status(Errc::kMismatch,
                  fmt::format("the daemon at {} (incarnation {:#x}) is not the one memory node {} was filled into "
                              "({:#x}): it restarted since, and its region may be empty; the failure detector "
                              "fails the node over again",
                              endpoint.to_string(), region.daemon_incarnation, region.node_id, incarnation));
  }
  const uint64_t bit = uint64_t{1} << index;
  const uint64_t failed = applied_failed_.load(std::memory_order_acquire) & ~bit;
  if (placement_) {
    if (Status s = build_live_replicas(failed); !s) return s;
  }
  nodes_[index] = MemoryNodeInfo{endpoint, region};
  if (index < bootstrap_.size()) {
    bootstrap_[index] = std::move(*conn);
    bootstrap_raw_[index] = bootstrap_[index].get();
  }
  declared_failed_.fetch_and(~bit, std::memory_order_acq_rel);
  waited_out_.fetch_and(~bit, std::memory_order_acq_rel);
  applied_failed_.store(failed, std::memory_order_release);
  config_version_.fetch_add(1, std::memory_order_acq_rel);
  logger_.info("memory configuration {}: memory node {} restored at {}; {} of {} memory nodes live",
               config_version_.load(), region.node_id, endpoint.to_string(),
               nodes_.size() - static_cast<size_t>(std::popcount(failed)), nodes_.size());
  return Status::ok();
}

Result<std::unique_ptr<Connection>> Cluster::open_connection(size_t index) const {
  if (index >= nodes_.size() || failed_over(index)) {
    return Status(Errc::kInvalidArgument, fmt::format("memory node index {} is not live", index));
  }
  const MemoryNodeInfo& n = nodes_[index];
  auto conn = open_ ? open_(index) : ::pandora::open_connection(n.endpoint, config_.identity(), config_.connect_options());
  if (!conn) {
    return Status(conn.status().code(), fmt::format("data connection ({}) to memory node {}: {}",
                                                    backend_name(config_.backend), n.endpoint.to_string(),
                                                    conn.status().message()));
  }
  return conn;
}

Result<std::vector<std::unique_ptr<Connection>>> Cluster::open_connections() const {
  std::vector<std::unique_ptr<Connection>> out;
  if (open_) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      auto conn = open_(i);
      if (!conn) return Status(conn.status().code(), fmt::format("data connection to memory node {}: {}",
                                                                 nodes_[i].endpoint.to_string(),
                                                                 conn.status().message()));
      out.push_back(std::move(*conn));
    }
    return out;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (failed_over(i)) {
      out.push_back(std::make_unique<FailedNodeConnection>());
      continue;
    }
    auto conn = open_connection(i);
    if (!conn) return conn.status();
    out.push_back(std::move(*conn));
  }
  return out;
}

Status Cluster::load_directory() {
  std::vector<std::vector<uint8_t>> raw(nodes_.size(), std::vector<uint8_t>(kTableDirBytes));
  OpBatch batch(bootstrap_raw_, config_.op_timeout * 2);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!failed_over(i)) batch.read(i, table_begin_, raw[i].data(), static_cast<uint32_t>(kTableDirBytes));
  }
  if (Status s = batch.run(); !s) return Status(s.code(), "reading the table directory: " + s.message());
  std::optional<TableDirectory> first;
  size_t first_index = 0;
  std::vector<uint8_t> first_bytes;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (failed_over(i)) continue;
    auto d = decode_table_directory(raw[i]);
    if (!d) {
      return Status(d.status().code(), fmt::format("memory node {} (id {}): {}", nodes_[i].endpoint.to_string(),
                                                   nodes_[i].region.node_id, d.status().message()));
    }
    const size_t used = sizeof(TableDirectoryHeader) + d->tables.size() * sizeof(TableEntry);
    std::vector<uint8_t> bytes(raw[i].begin(), raw[i].begin() + static_cast<ptrdiff_t>(used));
    if (!first) {
      first = std::move(*d);
      first_index = i;
      first_bytes = std::move(bytes);
    } else if (bytes != first_bytes) {
      return Status(Errc::kMismatch,
                    fmt::format("memory nodes {} and {} carry different table directories (loaded by different "
                                "loaders?); reload the cluster",
                                nodes_[first_index].endpoint.to_string(), nodes_[i].endpoint.to_string()));
    }
  }
  TableDirectory& d = *first;
  if (d.cluster_id != config_.cluster_id) {
    return Status(Errc::kMismatch, fmt::format("table directory belongs to cluster {:#x}, not {:#x}", d.cluster_id,
                                               config_.cluster_id));
  }
  if (d.replicas == 0 || d.replicas > nodes_.size()) {
    return Status(Errc::kMismatch, fmt::format("table directory asks for {} replicas but {} memory nodes are configured",
                                               d.replicas, nodes_.size()));
  }
  if (d.end_offset() > table_limit_) {
    return Status(Errc::kMismatch, "table directory describes tables beyond a memory node's table area");
  }
  if (d.lane_bytes < kMinLaneBytes || d.lanes > lanes_that_fit(d.lane_bytes)) {
    return Status(Errc::kMismatch, fmt::format("table directory's log lanes ({} x {} bytes) do not fit every memory "
                                               "node's log area",
                                               d.lanes, d.lane_bytes));
  }
  if (d.replicas != config_.replicas || d.shards != config_.shards || d.lane_bytes != config_.lane_bytes) {
    logger_.info("using the table directory's replicas={} shards={} lane-bytes={} (configured {} {} {})", d.replicas,
                 d.shards, d.lane_bytes, config_.replicas, config_.shards, config_.lane_bytes);
  }
  if (Status s = rebuild_placement(d.replicas, d.shards); !s) return s;
  lanes_ = LaneMap(d.lane_bytes, d.lanes);
  if (config_.compute_id != 0) {
    // Every coordinator of this node needs its lane (tools that only read
    // and recover, compute id 0, write no log).
    if (Status s = lanes_.lane_index(config_.effective_lane_slot(), config_.total_coordinators() - 1).status(); !s) {
      return s;
    }
  }
  directory_ = std::move(d);
  return Status::ok();
}

}  // namespace pandora
