#include "litmus/sim/simulation.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "compute/cluster.h"
#include "compute/loader.h"
#include "compute/op_batch.h"
#include "compute/scheduler.h"
#include "litmus/driver/litmus_spec.h"
#include "litmus/history/checker.h"
#include "litmus/history/report.h"
#include "recovery/ford_recovery.h"
#include "recovery/log_recovery.h"
#include "testing/sim/sim_network.h"

namespace pandora::sim {

namespace {

using litmus::InstanceSpec;

constexpr uint64_t kClusterId = 0x51a1;
constexpr uint32_t kLaneBytes = 2048;
constexpr uint32_t kShards = 64;
constexpr uint16_t kLoaderPid = 1;
// Lane slots (ARCHITECTURE.md 5: slots are not pids): every node holds one
// of coordinators + 1 lanes while it lives; a dead node's slot is reused
// once recovery truncated it, as the registry does.
constexpr uint32_t kSlots = 48;

enum class Role : uint8_t { kCompute, kLeader, kChecker };

class World;

// Crashes its node at a completed step with the run's probability.
class CrashAtStep final : public StepHook {
 public:
  CrashAtStep(World& w, struct Node& n) : world_(w), node_(n) {}
  void hit(CrashPoint p) override;
  bool single_steps() const override { return false; }  // batches land in part anyway

 private:
  World& world_;
  struct Node& node_;
};

struct Node {
  uint16_t pid = 0;
  Role role = Role::kCompute;
  LaneSlot slot;  // its log lanes (what recovery reads)
  std::vector<SimConnection*> conns;  // every connection the node opened (bootstrap and worker)
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<Worker> worker;
  bool alive = true;
  bool needs_recovery = false;  // a coordinator halted
  uint64_t doom_at = 0;         // a broken link: crash at this event (0: no)
  bool suspected = false;       // declared failed while alive (a false positive): recovered once
  std::vector<uint16_t> recovering;  // kLeader: the dead pids (one; ford: all dead in the pause)
  uint32_t parked = 0;          // kCompute, ford: coordinators parked for a stop-the-world pause
  uint32_t returned = 0;        // kCompute: coordinators whose task returned (they hold nothing)
  bool finished = false;        // kLeader: recovery complete
  std::unique_ptr<CrashAtStep> hook;
};

// Collects every transaction that reports an outcome, in order.
class TraceSink final : public TxnObserver {
 public:
  explicit TraceSink(std::vector<TxnTrace>& out) : out_(out) {}
  void on_txn_end(const TxnTrace& t) override { out_.push_back(t); }

 private:
  std::vector<TxnTrace>& out_;
};

uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

class World {
 public:
  World(const SimOptions& o, std::vector<InstanceSpec> kinds)
      : o_(o),
        kinds_(std::move(kinds)),
        net_(kClusterId, o.seed, node_specs(o)),
        logger_("sim", LogLevel::kError),
        sink_(traces_) {}

  SimResult run();
  // A node hit a completed step (CrashAtStep).
  void step_hit(Node& n);

 private:
  static std::vector<SimNodeSpec> node_specs(const SimOptions& o) {
    std::vector<SimNodeSpec> out;
    const uint64_t lanes = uint64_t{kSlots} * (o.coordinators + 1);
    for (uint32_t i = 0; i < o.memory_nodes; ++i) {
      out.push_back(SimNodeSpec{.node_id = i + 1, .table_bytes = 1 << 20, .log_bytes = lanes * kLaneBytes});
    }
    return out;
  }
  const InstanceSpec& spec_of(uint32_t inst) const { return kinds_[inst % kinds_.size()]; }
  ComputeConfig config_for(uint16_t pid, uint32_t coordinators, LaneSlot slot) const;
  Result<Node*> add_node(Role role, uint32_t coordinators);
  Status setup();
  void start_compute_node();
  void start_leader(std::vector<uint16_t> dead);
  // ford: every live compute node has parked all its coordinators.
  bool world_stopped() const;
  std::string describe() const;
  void start_checker();
  void compute_task(Node& node, Coordinator& co);
  void leader_task(Node& node, Coordinator& co);
  void ford_leader_task(Node& node, Coordinator& co);
  void checker_task(Coordinator& co);
  // Asserts one instance with `t` (retrying inconclusive reads); records a
  // violation naming `who`.
  void assert_instance(Txn& t, uint32_t inst, const char* who);
  void violation(std::string what);
  void faults();
  void crash(Node& n);
  void detect();
  void release_fenced_nodes();
  bool step_once();
  void finish_history();
  uint64_t digest() const;

  SimOptions o_;
  std::vector<InstanceSpec> kinds_;
  SimNetwork net_;
  Logger logger_;
  std::vector<TxnTrace> traces_;
  TraceSink sink_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<MemoryNodeInfo> infos_;
  history::InitialState loaded_;
  uint16_t next_pid_ = kLoaderPid;
  std::vector<LaneSlot> free_slots_;
  std::vector<uint16_t> published_;
  // Crashed compute pids: (pid, event at which the detector notices).
  std::vector<std::pair<uint16_t, uint64_t>> undetected_;
  std::vector<uint16_t> to_recover_;  // detected, in order
  std::vector<uint16_t> dead_leaders_;
  Node* leader_ = nullptr;
  Node* checker_ = nullptr;
  bool stopping_ = false;
  bool paused_ = false;  // ford: the world is asked to stop
  // Leaders of the current recovery that crashed: after three, the next one
  // is not crashed (as the litmus driver's), so recovery always ends.
  uint32_t leader_attempts_ = 0;
  uint64_t ended_ = 0;  // litmus transactions and asserts that ended
  SimResult r_;
};

ComputeConfig World::config_for(uint16_t pid, uint32_t coordinators, LaneSlot slot) const {
  ComputeConfig c;
  c.cluster_id = kClusterId;
  c.secret = "simulated";
  c.compute_id = pid;
  for (size_t i = 0; i < net_.node_count(); ++i) {
    c.memory_nodes.push_back(Endpoint{"127.0.0.1", static_cast<uint16_t>(1 + i)});  // never dialled
  }
  c.replicas = o_.replicas;
  c.threads = 1;
  c.coordinators = coordinators;
  c.protocol = o_.protocol;
  c.bugs = o_.bugs;
  c.shards = kShards;
  c.lane_bytes = kLaneBytes;
  // Simulated time never runs out; a real-time deadline would make a slow
  // (sanitizer) run differ from a fast one.
  c.op_timeout = std::chrono::hours(24);
  c.lane_slot = slot;
  return c;
}

Result<Node*> World::add_node(Role role, uint32_t coordinators) {
  if (next_pid_ == UINT16_MAX) return Status(Errc::kUnavailable, "the simulation ran out of pids");
  if (free_slots_.empty()) {
    return Status(Errc::kUnavailable, fmt::format("all {} lane slots are held by live or unrecovered nodes", kSlots));
  }
  auto node = std::make_unique<Node>();
  Node* n = node.get();
  n->pid = next_pid_++;
  n->role = role;
  n->slot = free_slots_.back();
  free_slots_.pop_back();
  ComputeConfig cfg = config_for(n->pid, coordinators, n->slot);
  auto cluster = Cluster::attach(
      cfg, logger_, infos_,
      [this, n](size_t index) -> Result<std::unique_ptr<Connection>> {
        std::unique_ptr<SimConnection> c = net_.open(n->pid, index);
        n->conns.push_back(c.get());
        return std::unique_ptr<Connection>(std::move(c));
      },
      net_.clock());
  if (!cluster) return cluster.status();
  n->cluster = std::move(*cluster);
  if (n->pid != kLoaderPid) {
    if (Status s = n->cluster->load_directory(); !s) return s;
    for (uint16_t p : published_) n->cluster->failed_ids().add(p);
    auto conns = n->cluster->open_connections();
    if (!conns) return conns.status();
    n->worker = std::make_unique<Worker>(*n->cluster, 0, coordinators, 0, std::move(*conns));
    n->hook = std::make_unique<CrashAtStep>(*this, *n);
    for (size_t k = 0; k < n->worker->coordinator_count(); ++k) {
      n->worker->coordinator(k).engine().set_observer(&sink_);
      if (role != Role::kChecker) n->worker->coordinator(k).engine().set_step_hook(n->hook.get());
    }
  }
  nodes_.push_back(std::move(node));
  return n;
}

Status World::setup() {
  for (uint32_t i = kSlots; i-- > 0;) free_slots_.push_back(LaneSlot{i * (o_.coordinators + 1), o_.coordinators + 1});
  for (size_t i = 0; i < net_.node_count(); ++i) {
    infos_.push_back(MemoryNodeInfo{Endpoint{"127.0.0.1", static_cast<uint16_t>(1 + i)}, net_.region_info(i)});
  }
  auto loader = add_node(Role::kChecker, 1);
  if (!loader) return loader.status();
  Cluster& cluster = *(*loader)->cluster;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < o_.instances; ++i) rows += spec_of(i).vars;
  const std::vector<TableSpec> specs = {
      {litmus::kTable, "litmus", litmus::kValueSize, std::max<uint64_t>(rows * 4, 256)}};
  if (Status s = create_tables(cluster, specs); !s) return s;
  TableLoader loader_rows(cluster);
  const std::array<uint8_t, litmus::kValueSize> zero{};
  std::vector<history::KeyRange> loaded;
  for (uint32_t i = 0; i < o_.instances; ++i) {
    if (!litmus::initially_present(spec_of(i).kind)) continue;
    for (uint32_t v = 0; v < spec_of(i).vars; ++v) {
      if (Status s = loader_rows.add(litmus::kTable, litmus::key_of(i, v), zero); !s) return s;
    }
    loaded.push_back({litmus::kTable, litmus::key_of(i, 0), litmus::key_of(i, spec_of(i).vars - 1)});
  }
  if (Status s = loader_rows.finish(); !s) return s;
  loaded_ = history::InitialState::loaded(1, std::move(loaded));
  for (uint32_t i = 0; i < o_.compute_nodes; ++i) start_compute_node();
  return r_.error;
}

void World::start_compute_node() {
  auto n = add_node(Role::kCompute, o_.coordinators);
  if (!n) {
    r_.error = n.status();
    return;
  }
  Node* node = *n;
  node->worker->start([this, node](Coordinator& co) { compute_task(*node, co); });
}

void World::start_leader(std::vector<uint16_t> dead) {
  auto n = add_node(Role::kLeader, 1);
  if (!n) {
    r_.error = n.status();
    return;
  }
  leader_ = *n;
  leader_->recovering = std::move(dead);
  Node* node = leader_;
  if (o_.protocol == ProtocolMode::kFord) {
    node->worker->start([this, node](Coordinator& co) { ford_leader_task(*node, co); });
  } else {
    node->worker->start([this, node](Coordinator& co) { leader_task(*node, co); });
  }
}

void World::start_checker() {
  auto n = add_node(Role::kChecker, 1);
  if (!n) {
    r_.error = n.status();
    return;
  }
  checker_ = *n;
  checker_->worker->start([this](Coordinator& co) { checker_task(co); });
}

void CrashAtStep::hit(CrashPoint) { world_.step_hit(node_); }

// The node stops at its next remote operation: what it posts from now on
// never leaves it (SimNetwork::crash).
void World::step_hit(Node& n) {
  if (!n.alive || stopping_ || !net_.rng().chance(o_.step_crash_probability)) return;
  if (n.role == Role::kLeader && leader_attempts_ >= 3) return;
  if (n.role == Role::kCompute && r_.crashes + r_.disconnects >= o_.max_crashes) return;
  if (n.role == Role::kCompute) ++r_.step_crashes;
  crash(n);
}

void World::violation(std::string what) {
  if (!r_.failure.empty()) return;
  r_.failure = std::move(what);
  r_.ops_at_failure = net_.stats().landed_total();
}

void World::compute_task(Node& node, Coordinator& co) {
  struct CountReturn {
    Node& n;
    ~CountReturn() { ++n.returned; }
  } count_return{node};
  litmus::Rng rng(o_.seed * 0x9e3779b97f4a7c15ULL ^ (uint64_t{node.pid} << 20) ^ co.id());
  uint64_t counter = 0;
  while (!stopping_ && r_.failure.empty()) {
    if (paused_) {
      // ford's stop-the-world: park between transactions, with nothing in
      // flight (the last transaction's releases landed), until the leader
      // has scanned the latches away.
      co.ops().wait_all();
      ++node.parked;
      while (paused_) co.yield();
      --node.parked;
      continue;
    }
    if (net_.fenced(node.pid)) {
      // Declared failed while alive (a false positive) and fenced: a real
      // node exits (pandora-bench: code 6); this one is crashed, and its
      // recovery, queued by the detector, happens once.
      node.needs_recovery = true;
      return;
    }
    if (co.engine().halted()) {
      // Its node must be recovered: the scheduler crashes it (a real node
      // is restarted by its operator or the failure detector).
      ++r_.halts;
      node.needs_recovery = true;
      return;
    }
    const auto inst = static_cast<uint32_t>(rng() % o_.instances);
    const InstanceSpec& spec = spec_of(inst);
    Txn& t = co.txn();
    if (o_.assert_every && rng() % o_.assert_every == 0) {
      bool absent = false;
      auto vals = litmus::run_assert_txn(t, spec, inst, &absent);
      ++ended_;
      if (!vals) {
        if (absent) {
          if (auto evidence = litmus::probe_mixed_presence(t, spec, inst)) {
            violation(fmt::format("pid {}: instance {} mixes present and absent keys: {}", node.pid, inst,
                                  litmus::format_values(spec, *evidence)));
          }
        }
      } else {
        ++r_.asserts;
        std::vector<std::optional<uint64_t>> v(vals->begin(), vals->end());
        if (auto bad = litmus::check_assert(spec, v)) {
          violation(fmt::format("pid {}: assert of instance {} ({}): {}", node.pid, inst,
                                litmus::format_values(spec, v), *bad));
        }
      }
    } else {
      const uint64_t tag =
          (uint64_t{node.pid} << 48) | (uint64_t{co.id()} << 40) | (++counter & ((uint64_t{1} << 40) - 1));
      const CommitOutcome out = litmus::run_litmus_txn(t, spec, inst, rng, tag);
      ++(out.committed ? r_.commits : r_.aborts);
      ++ended_;
    }
    if (ended_ >= o_.txns) stopping_ = true;
  }
}

void World::assert_instance(Txn& t, uint32_t inst, const char* who) {
  const InstanceSpec& spec = spec_of(inst);
  for (int attempt = 0; attempt < 20; ++attempt) {
    bool absent = false;
    auto vals = litmus::run_assert_txn(t, spec, inst, &absent);
    if (!vals && absent) {
      if (auto evidence = litmus::probe_mixed_presence(t, spec, inst)) {
        violation(fmt::format("{}: instance {} mixes present and absent keys: {}", who, inst,
                              litmus::format_values(spec, *evidence)));
        return;
      }
    }
    if (!vals) continue;
    ++r_.asserts;
    std::vector<std::optional<uint64_t>> v(vals->begin(), vals->end());
    if (auto bad = litmus::check_assert(spec, v)) {
      violation(fmt::format("{}: assert of instance {} ({}): {}", who, inst, litmus::format_values(spec, v), *bad));
    }
    return;
  }
}

// ARCHITECTURE.md 5 steps 2-5 for node.recovering, as the litmus driver's
// recovery leader runs them (litmus/driver/recovery.cc), inside the
// simulation: every wait lets the rest of the world run.
void World::leader_task(Node& node, Coordinator& co) {
  Cluster& cluster = *node.cluster;
  for (SimConnection* c : node.conns) c->set_wait_hook([&co] { co.yield(); });
  const uint16_t dead = node.recovering.front();
  // Step 2: nothing the dead pid (or a dead leader) sent may land any more.
  net_.fence(dead);
  for (uint16_t l : dead_leaders_) net_.fence(l);
  const auto conns = cluster.bootstrap_connections();
  const LaneSlot slot = nodes_[dead - kLoaderPid]->slot;
  auto report = recover_logs(cluster, conns, dead, slot, logger_, node.hook.get());
  if (!report) {
    violation(fmt::format("recovery of pid {}: {}", dead, report.status().to_string()));
    return;
  }
  if (Status s = truncate_lanes(cluster, conns, dead, slot, node.hook.get()); !s) {
    violation(fmt::format("truncating pid {}'s lanes: {}", dead, s.to_string()));
    return;
  }
  // Assert the instances the logs named before publishing, so that a wrong
  // roll-back is seen before the next commit on the instance repairs it.
  cluster.failed_ids().add(dead);
  {
    std::vector<uint64_t> keys(report->latch_sites.size(), 0);
    OpBatch batch(conns, cluster.config().op_timeout);
    for (size_t i = 0; i < keys.size(); ++i) {
      batch.read(report->latch_sites[i].node, report->latch_sites[i].slot, &keys[i], sizeof(uint64_t));
    }
    if (!keys.empty()) {
      if (Status s = batch.run(); !s) {
        violation(fmt::format("reading pid {}'s logged keys: {}", dead, s.to_string()));
        return;
      }
      std::vector<uint32_t> instances;
      for (uint64_t k : keys) instances.push_back(static_cast<uint32_t>(k / litmus::kMaxVars));
      std::sort(instances.begin(), instances.end());
      instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
      for (uint32_t inst : instances) {
        if (inst < o_.instances) assert_instance(co.txn(), inst, "recovery leader");
      }
    }
  }
  // Step 5: publish (the detector's push), then sweep.
  if (std::find(published_.begin(), published_.end(), dead) == published_.end()) published_.push_back(dead);
  for (auto& n : nodes_) {
    if (n->alive && n->cluster) n->cluster->failed_ids().add(dead);
  }
  auto swept = sweep_stray_latches(cluster, conns, dead, report->latch_sites, node.hook.get());
  if (!swept) {
    violation(fmt::format("sweeping pid {}'s latches: {}", dead, swept.status().to_string()));
    return;
  }
  r_.rolled_forward += report->rolled_forward;
  r_.rolled_back += report->rolled_back;
  r_.swept += *swept;
  node.finished = true;
}

// FORD's stop-the-world recovery (recovery/ford_recovery.h) of every pid
// that died before or during the pause, as the litmus driver's ford leader
// runs it: every live coordinator is parked and holds no latch.
void World::ford_leader_task(Node& node, Coordinator& co) {
  Cluster& cluster = *node.cluster;
  for (SimConnection* c : node.conns) c->set_wait_hook([&co] { co.yield(); });
  for (uint16_t d : node.recovering) net_.fence(d);
  for (uint16_t l : dead_leaders_) net_.fence(l);
  const auto conns = cluster.bootstrap_connections();
  for (uint16_t d : node.recovering) {
    auto report = recover_ford_logs(cluster, conns, d, nodes_[d - kLoaderPid]->slot, logger_, node.hook.get());
    if (!report) {
      violation(fmt::format("ford recovery of pid {}: {}", d, report.status().to_string()));
      return;
    }
    r_.rolled_forward += report->rolled_forward;
    r_.rolled_back += report->rolled_back;
  }
  for (uint16_t d : node.recovering) {
    if (Status s = truncate_ford_lanes(cluster, conns, nodes_[d - kLoaderPid]->slot, node.hook.get()); !s) {
      violation(fmt::format("truncating pid {}'s lanes: {}", d, s.to_string()));
      return;
    }
  }
  auto scan = release_all_latches(cluster, conns, logger_, node.hook.get());
  if (!scan) {
    violation(fmt::format("latch scan: {}", scan.status().to_string()));
    return;
  }
  r_.swept += scan->released;
  // FORD cannot tell a stray latch from a live one: assert every instance
  // while the world stands still.
  for (uint32_t inst = 0; inst < o_.instances && r_.failure.empty(); ++inst) {
    assert_instance(co.txn(), inst, "ford recovery leader");
  }
  node.finished = true;
}

void World::checker_task(Coordinator& co) {
  for (uint32_t inst = 0; inst < o_.instances && r_.failure.empty(); ++inst) {
    assert_instance(co.txn(), inst, "final assert");
  }
}

void World::crash(Node& n) {
  size_t nodes_in_flight = 0;
  std::vector<bool> seen(net_.node_count(), false);
  for (SimConnection* c : n.conns) {
    if (c->in_flight() > 0 && !seen[c->node()]) {
      seen[c->node()] = true;
      ++nodes_in_flight;
    }
  }
  net_.crash(n.pid);
  n.alive = false;
  // A false positive's recovery is already queued or done: the process
  // ending adds nothing to recover.
  if (n.suspected) return;
  if (n.role == Role::kLeader) {
    ++r_.leader_crashes;
    ++leader_attempts_;
    dead_leaders_.push_back(n.pid);
    leader_ = nullptr;
    start_leader(n.recovering);  // starts over: every step is idempotent
    return;
  }
  ++r_.crashes;
  if (nodes_in_flight > 0) ++r_.crashes_in_flight;
  if (nodes_in_flight > 1) ++r_.crashes_mid_batch;
  undetected_.emplace_back(n.pid, r_.events + 1 + net_.rng().below(o_.detect_delay));
}

void World::faults() {
  SimRng& rng = net_.rng();
  if (leader_ && leader_->alive && leader_attempts_ < 3 && rng.chance(o_.leader_crash_probability)) {
    crash(*leader_);
    return;
  }
  for (auto& n : nodes_) {
    if (n->role != Role::kCompute || !n->alive) continue;
    if (n->needs_recovery || (n->doom_at != 0 && r_.events >= n->doom_at)) crash(*n);
  }
  if (stopping_ || r_.crashes + r_.disconnects + r_.false_positives >= o_.max_crashes) return;
  std::vector<Node*> live;
  for (auto& n : nodes_) {
    if (n->role == Role::kCompute && n->alive && n->doom_at == 0) live.push_back(n.get());
  }
  if (live.empty()) return;
  if (rng.chance(o_.crash_probability)) {
    crash(*live[rng.below(live.size())]);
  } else if (o_.false_positive_probability > 0 && rng.chance(o_.false_positive_probability)) {
    std::vector<Node*> unsuspected;
    for (Node* n : live) {
      if (!n->suspected) unsuspected.push_back(n);
    }
    if (unsuspected.empty()) return;
    Node& n = *unsuspected[rng.below(unsuspected.size())];
    n.suspected = true;
    ++r_.false_positives;
    undetected_.emplace_back(n.pid, r_.events + 1 + rng.below(o_.detect_delay));
  } else if (rng.chance(o_.disconnect_probability)) {
    Node& n = *live[rng.below(live.size())];
    // One of its worker connections (the last node_count() it opened).
    const size_t k = net_.node_count();
    SimConnection& c = *n.conns[n.conns.size() - k + rng.below(k)];
    net_.disconnect(c);
    ++r_.disconnects;
    n.doom_at = r_.events + 1 + rng.below(o_.detect_delay);
  }
}

// A dead node whose pid is fenced can do nothing any more: nothing it sent
// lands, and it runs no more. Freeing it (its coroutines are unwound) keeps
// every event's cost independent of how many nodes died before.
void World::release_fenced_nodes() {
  for (auto& n : nodes_) {
    if (n->alive && !(n->role == Role::kLeader && n->finished)) continue;
    const bool done = n->role == Role::kLeader && n->finished;
    if (!n->worker || (!done && (n->alive || !net_.fenced(n->pid)))) continue;
    n->worker->stop();
    n->worker.reset();
    n->conns.clear();
    n->cluster.reset();
    // Its lanes were truncated (a compute node's by its recovery; a
    // leader's hold nothing: its transactions only read).
    free_slots_.push_back(n->slot);
  }
}

void World::detect() {
  for (size_t i = 0; i < undetected_.size();) {
    if (r_.events >= undetected_[i].second) {
      to_recover_.push_back(undetected_[i].first);
      undetected_.erase(undetected_.begin() + static_cast<ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (leader_ && leader_->finished) {
    const std::vector<uint16_t> done = leader_->recovering;
    leader_attempts_ = 0;
    r_.recoveries += done.size();
    leader_->alive = false;
    leader_ = nullptr;
    for (uint16_t d : done) std::erase(to_recover_, d);
    release_fenced_nodes();
    if (!stopping_) {
      for (size_t i = 0; i < done.size(); ++i) start_compute_node();  // the replacements
    }
    if (to_recover_.empty()) paused_ = false;
  }
  if (leader_ || to_recover_.empty()) return;
  release_fenced_nodes();
  if (o_.protocol != ProtocolMode::kFord) {
    start_leader({to_recover_.front()});
    return;
  }
  if (!paused_) {
    paused_ = true;
    ++r_.pauses;
  }
  if (world_stopped()) start_leader(to_recover_);
}

// Who is doing what, for a livelock's report.
std::string World::describe() const {
  std::string out = fmt::format("paused {}, stopping {}, undetected {}, to recover {}, leader {}; nodes:", paused_,
                                stopping_, undetected_.size(), to_recover_.size(), leader_ ? leader_->pid : 0);
  for (const auto& n : nodes_) {
    if (!n->worker || !n->alive) continue;
    out += fmt::format(" pid {} ({}, {} of {} parked{}{})", n->pid, n->role == Role::kCompute ? "compute" : "other",
                       n->parked, n->worker->coordinator_count(), n->worker->running() ? "" : ", done",
                       n->doom_at ? ", link broken" : "");
  }
  return out;
}

bool World::world_stopped() const {
  // A node that crashed unnoticed never acknowledges the pause: the world
  // stops once the detector has named it (it then joins the dead), never by
  // scanning its latches away while its records are undecided.
  if (!undetected_.empty()) return false;
  for (const auto& n : nodes_) {
    if (n->role != Role::kCompute || !n->alive || !n->worker || !n->worker->running()) continue;
    // Nor does a node whose link broke: operations it sent may still land,
    // after the scan. It must be fenced and recovered with the dead (found
    // by the simulation: a late commit WRITE after the scan, then a roll-back
    // of a write a committed reader saw).
    if (n->doom_at != 0 || n->needs_recovery) return false;
    if (n->parked + n->returned < n->worker->coordinator_count()) return false;
  }
  return true;
}

// One event. False when nothing can happen any more.
bool World::step_once() {
  std::vector<Node*> runnable;
  for (auto& n : nodes_) {
    if (!n->alive || !n->worker || !n->worker->running()) continue;
    bool ready = n->worker->has_runnable();
    for (SimConnection* c : n->conns) ready = ready || c->completions() > 0;
    if (ready) runnable.push_back(n.get());
  }
  const bool in_flight = net_.in_flight() > 0;
  if (runnable.empty() && !in_flight) return false;
  SimRng& rng = net_.rng();
  // The network gets as many turns as all nodes together.
  if (in_flight && (runnable.empty() || rng.chance(0.5))) {
    net_.apply_one();
  } else {
    runnable[rng.below(runnable.size())]->worker->step();
  }
  return true;
}

SimResult World::run() {
  if (Status s = setup(); !s) {
    r_.error = s;
    return r_;
  }
  bool checked = false;
  while (r_.error.is_ok()) {
    if (!r_.failure.empty()) break;
    if (++r_.events > o_.max_events) {
      violation(fmt::format("no end after {} events: a livelock (commits {}, aborts {}); {}", o_.max_events,
                            r_.commits, r_.aborts, describe()));
      break;
    }
    net_.clock().advance(100 + net_.rng().below(900));
    faults();
    detect();
    if (!r_.error.is_ok()) break;
    bool progressed = false;
    try {
      progressed = step_once();
    } catch (const std::exception& e) {
      violation(fmt::format("a simulated node threw: {}", e.what()));
      break;
    }
    if (progressed) continue;
    // Nothing can run: the end, or waiting for the detector.
    if (!undetected_.empty() || leader_ || !to_recover_.empty()) continue;
    bool computing = false;
    for (auto& n : nodes_) computing = computing || (n->alive && n->role == Role::kCompute && n->worker->running());
    if (computing) {
      violation("every node waits and nothing is in flight: a deadlock");
      break;
    }
    if (!stopping_) {
      violation("every compute node stopped before the run's transactions ended");
      break;
    }
    if (!checked) {
      checked = true;
      start_checker();
      continue;
    }
    break;
  }
  if (r_.failure.empty() && r_.error.is_ok() && checked && checker_ && checker_->worker->running()) {
    violation("the final asserts did not finish");
  }
  finish_history();
  r_.ops_landed = net_.stats().landed_total();
  r_.sim_ms = static_cast<double>(net_.clock().elapsed_ns()) / 1e6;
  r_.digest = digest();
  // Coroutines of crashed nodes are unwound while the world still exists.
  for (auto& n : nodes_) {
    if (n->worker) n->worker->stop();
  }
  return r_;
}

void World::finish_history() {
  r_.traces = traces_.size();
  if (!o_.check_history || !r_.failure.empty() || !r_.error.is_ok()) return;
  history::CheckOptions co;
  co.realtime = true;
  // A crashed node's committed transactions may be unrecorded (it died
  // before reporting); recovery rolled them forward.
  co.complete = r_.crashes == 0 && r_.leader_crashes == 0;
  const history::Report rep = history::check(traces_, co, loaded_);
  if (!rep.clean()) {
    const history::Anomaly& a = rep.anomalies.front();
    violation(fmt::format("history: {} anomalies, first {}: {}\n{}", rep.anomalies.size(),
                          history::anomaly_kind_name(a.kind), a.detail, history::format_anomaly(a)));
  }
}

uint64_t World::digest() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const TxnTrace& t : traces_) {
    h = fnv(h, (uint64_t{t.pid} << 32) | (uint64_t{t.coordinator} << 16) | (t.committed ? 1 : 0));
    h = fnv(h, t.seq);
    h = fnv(h, t.begin_ns);
    h = fnv(h, t.end_ns);
    for (const TraceItem& i : t.items) {
      h = fnv(h, i.key);
      h = fnv(h, i.read_version);
      h = fnv(h, i.write_version);
      h = fnv(h, i.read_value ^ i.write_value);
    }
  }
  for (size_t i = 0; i < net_.node_count(); ++i) {
    const auto region = net_.region(i);
    const auto& info = net_.region_info(i);
    for (uint64_t off = info.table_offset; off + 8 <= info.log_offset; off += 8) {
      uint64_t w;
      std::memcpy(&w, region.data() + off, 8);
      if (w) h = fnv(h, off ^ w);
    }
  }
  return h;
}

}  // namespace

SimResult simulate(const SimOptions& o) {
  SimResult r;
  auto kinds = litmus::parse_test(o.test);
  if (!kinds) {
    r.error = kinds.status();
    return r;
  }
  if (o.memory_nodes == 0 || o.memory_nodes > 8 || o.replicas == 0 || o.replicas > o.memory_nodes ||
      o.compute_nodes == 0 || o.coordinators == 0 || o.coordinators > 64 || o.instances == 0 || o.txns == 0 ||
      o.detect_delay == 0) {
    r.error = Status(Errc::kInvalidArgument,
                     "simulation options: 1..8 memory nodes, 1..memory-nodes replicas, at least one compute node, "
                     "1..64 coordinators, one instance, one transaction and a detect delay of at least 1");
    return r;
  }
  World w(o, std::move(*kinds));
  return w.run();
}

}  // namespace pandora::sim
