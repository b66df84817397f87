// Worker threads and coordinator coroutines (Boost.Coroutine2).
//
// Each worker thread owns one data connection per memory node, an address
// cache, and N coordinators. A coordinator is a coroutine running the
// application's task; whenever it waits for remote operations
// (RemoteOps::wait_all) it yields to the worker loop, which polls the
// thread's connections, routes each completion to its coordinator by wr_id
// (coordinator slot << 32 | op id) and resumes a coordinator once all its
// operations have completed. Nothing blocks: while one coordinator waits for
// a round trip the others run.
//
//   auto sched = Scheduler::create(cluster);          // threads x coordinators from the config
//   sched->run([&](Coordinator& c) {
//     while (!stop) { Txn& t = c.txn(); t.begin(); ...; t.commit(); }
//   });                                                // returns when every task returned
//
// Coordinator ids (the latch word's coordinator field and the log lane) are
// thread * coordinators + slot, unique on this compute node.
//
// Coroutines and their ASan annotations: compute/coroutine.h.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "common/status.h"
#include "common/transport/transport.h"
#include "compute/address_cache.h"
#include "compute/cluster.h"
#include "compute/remote_ops.h"
#include "compute/txn_engine.h"

namespace pandora {

class Coroutine;
class Worker;

class Coordinator final : public Suspender {
 public:
  Coordinator(Worker& worker, uint32_t slot, uint16_t id);
  ~Coordinator() override;

  uint16_t id() const { return id_; }        // unique on this compute node
  uint32_t slot() const { return slot_; }    // index within the worker
  uint32_t thread() const;
  Txn& txn();
  TxnEngine& engine() { return *engine_; }
  RemoteOps& ops() { return ops_; }

  // Suspender: returns when one of this coordinator's operations completed.
  void suspend() override;
  // Lets the other coordinators of this thread run, and returns at the
  // worker's next round even when nothing completed (for code that waits
  // on something other than its own operations, e.g. a pause flag).
  void yield() override;
  Status refresh_connections() override;

 private:
  friend class Worker;
  Worker& worker_;
  uint32_t slot_;
  uint16_t id_;
  RemoteOps ops_;
  std::unique_ptr<TxnEngine> engine_;
  Coroutine* coroutine_ = nullptr;  // while Worker::run runs it
};

class Worker {
 public:
  using Task = std::function<void(Coordinator&)>;

  // `first_id`: coordinator id of slot 0.
  Worker(Cluster& cluster, uint32_t thread_index, uint32_t coordinators, uint16_t first_id,
         std::vector<std::unique_ptr<Connection>> conns);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs `task` on every coordinator (each in its own coroutine) on the
  // calling thread until all of them returned. An exception escaping a task
  // ends the run and is rethrown here. run() is start() and step() until
  // nothing runs, spinning (then yielding the core) while no completion
  // arrives.
  void run(const Task& task);

  // The same run, one round at a time, for a caller that interleaves many
  // workers on one thread and decides itself when each makes progress (the
  // deterministic simulation, testing/sim). start() creates the
  // coordinators' coroutines (none runs yet); each step() resumes every
  // coordinator that can run, then polls the connections and routes the
  // completions. step() returns how many coordinators it resumed plus
  // completions it routed (0: nothing happened); it rethrows what a task
  // threw. A run abandoned before every task returned (a simulated crash)
  // is cancelled by stop() or the destructor: each unfinished coroutine is
  // unwound without running further.
  void start(const Task& task);
  size_t step();
  bool running() const { return live_ > 0; }
  // A coordinator is ready to run at the next step() (its operations
  // completed, or it yielded).
  bool has_runnable() const { return !ready_.empty() || !yielded_.empty(); }
  void stop();

  Cluster& cluster() { return cluster_; }
  uint32_t thread_index() const { return thread_index_; }
  size_t coordinator_count() const { return coordinators_.size(); }
  Coordinator& coordinator(size_t slot) { return *coordinators_[slot]; }
  AddressCache& cache() { return cache_; }
  std::span<Connection* const> connections() const { return raw_; }
  // Opens a new data connection to every node restored to the memory
  // configuration since the last call (Cluster::restore_memory_node): the
  // old one failed with the node. In place, so every coordinator's
  // RemoteOps sees it.
  Status refresh_connections();

 private:
  friend class Coordinator;
  Cluster& cluster_;
  uint32_t thread_index_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<Connection*> raw_;
  uint64_t failed_seen_ = 0;  // the cluster's applied failed nodes at the last refresh
  uint64_t abandoned_ = 0;    // declared-failed nodes whose connections were abandoned
  // Abandons the connections to nodes declared failed since the last call
  // (Connection::abandon), so coordinators waiting on them resume now.
  void abandon_declared();
  AddressCache cache_;
  std::vector<std::unique_ptr<Coordinator>> coordinators_;
  std::vector<uint32_t> yielded_;  // slots that called yield(): run again next round
  // The current run (start() .. stop()); declared after coordinators_ so a
  // cancelled coroutine unwinds while its coordinator still exists.
  Task task_;
  std::vector<std::unique_ptr<Coroutine>> coros_;
  std::vector<uint32_t> ready_;
  size_t live_ = 0;
  // step()'s completion buffer: a member, since a local array of 64
  // Completions (default member initialisers) is zeroed on every step.
  std::array<Completion, 64> comps_;
};

class Scheduler {
 public:
  // Opens config.threads x (one connection per memory node) and builds the
  // workers. The cluster must have its directory loaded.
  static Result<std::unique_ptr<Scheduler>> create(Cluster& cluster);

  // Runs `task` on every coordinator of every worker thread; returns when all
  // returned. The first exception of any thread is rethrown.
  void run(const Worker::Task& task);

  size_t thread_count() const { return workers_.size(); }
  Worker& worker(size_t i) { return *workers_[i]; }

  // Sums over every coordinator (call when not running).
  TxnCounters totals() const;

 private:
  Scheduler() = default;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace pandora
