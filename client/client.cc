// The public client (include/pandora/client.h) over the compute library:
// options -> ComputeConfig, registry membership in managed mode, the
// cluster, and a pool of coordinator ids handed to sessions.
#include "pandora/client.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "common/logger.h"
#include "compute/blocking_client.h"
#include "compute/cluster.h"
#include "compute/compute_config.h"
#include "compute/loader.h"
#include "compute/pause_gate.h"
#include "recovery/membership.h"

namespace pandora {

// Shared by the Client and its sessions, so a session may outlive the
// Client object: the last owner closes the cluster, then leaves.
namespace detail {

struct ClientState {
  explicit ClientState(Logger l) : logger(std::move(l)) {}
  ~ClientState() {
    if (membership) membership->detach();  // stop writing failed-ids before the cluster goes
    cluster.reset();  // connections closed before the departure is written
    if (membership && !membership->fenced()) {
      if (Status s = membership->leave(); !s) logger.warn("leaving the cluster: {}", s.to_string());
    }
  }

  Logger logger;
  // Stop-the-world pauses (ford's recovery, a memory node's fail-over)
  // park the sessions here. Declared before the membership, whose thread
  // feeds it: destroyed after it.
  PauseGate gate{[this](uint64_t e) {
                   if (membership) membership->ack_pause(e);  // applies a memory node's fail-over first
                 },
                 [this](uint64_t e) {
                   logger.error("refusing stop-the-world pause {}: a session halted with a transaction left to "
                                "recovery, so this node must be recovered itself; it stops heartbeating to be "
                                "declared failed",
                                e);
                   if (membership) membership->stop_heartbeats();
                 }};
  // Declared before the cluster: destroyed after it.
  std::unique_ptr<Membership> membership;
  std::unique_ptr<Cluster> cluster;
  DetachGuard detach;  // lets go of the cluster's failed-ids before the cluster goes
  Status directory_status;  // why load_directory() failed at connect, if it did

  std::mutex mu;
  std::vector<uint16_t> free_coordinators;  // ids no session uses
};

}  // namespace detail

namespace {

// One session: a blocking client on a coordinator id taken from the pool
// and given back when the session goes.
class PooledSession final : public Session {
 public:
  PooledSession(std::shared_ptr<detail::ClientState> state, uint16_t coordinator, std::unique_ptr<BlockingClient> client)
      : state_(std::move(state)), coordinator_(coordinator), client_(std::move(client)) {}
  ~PooledSession() override;

  // Each call is one stretch the pause gate waits for (a run() may hold
  // several transactions; it is not parked inside).
  void run(const std::function<void(Txn&)>& body) override {
    state_->gate.enter();
    client_->run(body);
    state_->gate.leave(client_->engine().halted());
  }
  CommitOutcome transact(const std::function<AbortReason(Txn&)>& body) override {
    state_->gate.enter();
    CommitOutcome o = client_->transact(body);
    state_->gate.leave(client_->engine().halted());
    return o;
  }

 private:
  std::shared_ptr<detail::ClientState> state_;
  uint16_t coordinator_;
  std::unique_ptr<BlockingClient> client_;
};

class Loader final : public BulkLoader {
 public:
  Loader(std::shared_ptr<detail::ClientState> state) : state_(std::move(state)), loader_(*state_->cluster) {}
  Status add(uint32_t table, uint64_t key, std::span<const uint8_t> value) override {
    return loader_.add(table, key, value);
  }
  Status finish() override { return loader_.finish(); }
  uint64_t rows_loaded() const override { return loader_.rows_loaded(); }

 private:
  std::shared_ptr<detail::ClientState> state_;
  TableLoader loader_;
};

Status invalid(std::string text) { return Status(Errc::kInvalidArgument, std::move(text)); }

// The options as the compute library's flags, so both are validated by one
// set of rules (and give the same messages).
Result<ComputeConfig> to_config(const ClientOptions& o) {
  if (o.zookeeper.empty() && o.memory_nodes.empty()) {
    return invalid("ClientOptions: set memory_nodes (static cluster) or zookeeper (managed cluster)");
  }
  if (!o.zookeeper.empty() && o.compute_id != 0) {
    return invalid("ClientOptions: compute_id is assigned by the registry when zookeeper is set; leave it 0");
  }
  if (o.zookeeper.empty() && o.compute_id == 0) {
    return invalid("ClientOptions: compute_id (1..65535) is required with memory_nodes");
  }
  if (o.max_sessions == 0 || o.max_sessions > 512) {
    return invalid(fmt::format("ClientOptions: max_sessions {} is outside 1..512", o.max_sessions));
  }
  ComputeFlags f;
  f.memory_nodes = o.memory_nodes;
  f.cluster_id = o.cluster_id;
  f.secret_file = o.secret_file;
  f.compute_id = o.compute_id;
  f.backend = o.transport;
  f.replicas = o.replicas;
  f.threads = 1;
  f.coordinators = o.max_sessions;
  f.protocol = o.protocol;
  f.op_timeout_ms = o.op_timeout_ms;
  f.zookeeper = o.zookeeper;
  f.zk_root = o.zk_root;
  auto c = f.resolve();
  if (!c) return Status(c.status().code(), "ClientOptions: " + c.status().message());
  return c;
}

}  // namespace

PooledSession::~PooledSession() {
  client_.reset();  // its connections close before the id can be reused
  std::lock_guard<std::mutex> g(state_->mu);
  state_->free_coordinators.push_back(coordinator_);
}

Result<std::unique_ptr<Client>> Client::connect(const ClientOptions& options) {
  LogLevel level{};
  if (!parse_log_level(options.log_level, &level)) {
    return invalid(fmt::format("ClientOptions: log_level '{}' is not debug, info, warn, error or off",
                               options.log_level));
  }
  auto config = to_config(options);
  if (!config) return config.status();
  auto state = std::make_shared<detail::ClientState>(Logger("pandora-client", level));
  if (!config->zookeeper.empty()) {
    auto m = join_as_compute_node(*config, state->logger);
    if (!m) return Status(m.status().code(), "joining the cluster through ZooKeeper: " + m.status().message());
    state->membership = std::move(*m);
  }
  auto cluster = Cluster::connect(*config, state->logger);
  if (!cluster) return Status(cluster.status().code(), "connecting to the memory nodes: " + cluster.status().message());
  state->cluster = std::move(*cluster);
  if (state->membership) {
    state->detach.reset(state->membership.get());
    if (Status s = state->membership->attach(*state->cluster); !s) return s;
    // ford's recoveries and every memory node's fail-over stop the world.
    state->membership->on_pause([gate = &state->gate](uint64_t e) { gate->set_epoch(e); });
  }
  // No directory yet is fine (create_tables() follows); one this process
  // cannot use (another cluster's, lanes that do not fit) is an error now.
  state->directory_status = state->cluster->load_directory();
  if (!state->directory_status && state->directory_status.code() != Errc::kNotFound) {
    return Status(state->directory_status.code(), "reading the tables: " + state->directory_status.message());
  }
  for (uint32_t i = config->total_coordinators(); i > 0; --i) {
    state->free_coordinators.push_back(static_cast<uint16_t>(i - 1));
  }
  return std::unique_ptr<Client>(new Client(std::move(state)));
}

Client::~Client() = default;

uint16_t Client::pid() const { return state_->cluster->config().compute_id; }

bool Client::fenced() const { return state_->membership && state_->membership->fenced(); }

Status Client::create_tables(std::span<const TableSpec> tables, bool replace_existing) {
  CreateTablesOptions o;
  o.replace_existing = replace_existing;
  Status s = pandora::create_tables(*state_->cluster, tables, o);
  state_->directory_status = state_->cluster->has_directory() ? Status::ok() : s;
  return s;
}

std::vector<TableSpec> Client::tables() const {
  if (!state_->cluster->has_directory()) return {};
  return table_specs(state_->cluster->directory());
}

Result<std::unique_ptr<BulkLoader>> Client::loader() {
  if (!state_->cluster->has_directory()) {
    return invalid("create_tables() must run before loading rows");
  }
  return std::unique_ptr<BulkLoader>(new Loader(state_));
}

Result<std::unique_ptr<Session>> Client::session() {
  if (!state_->cluster->has_directory()) {
    return invalid("no tables to run transactions on: " + state_->directory_status.message());
  }
  uint16_t id = 0;
  {
    std::lock_guard<std::mutex> g(state_->mu);
    if (state_->free_coordinators.empty()) {
      return Status(Errc::kUnavailable,
                    fmt::format("all {} sessions are open (ClientOptions::max_sessions)",
                                state_->cluster->config().total_coordinators()));
    }
    id = state_->free_coordinators.back();
    state_->free_coordinators.pop_back();
  }
  auto client = BlockingClient::create(*state_->cluster, id);
  if (!client) {
    std::lock_guard<std::mutex> g(state_->mu);
    state_->free_coordinators.push_back(id);
    return client.status();
  }
  return std::unique_ptr<Session>(new PooledSession(state_, id, std::move(*client)));
}

}  // namespace pandora
