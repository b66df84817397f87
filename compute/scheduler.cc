#include "compute/scheduler.h"

#include <array>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "compute/coroutine.h"

namespace pandora {

namespace {

// Coordinator stacks. Transaction code keeps its buffers on the heap, but
// sanitizer builds use several times more stack per frame.
constexpr size_t kStackBytes = 256 * 1024;

// Idle polls of all connections before the worker gives its core away.
constexpr int kSpinsBeforeYield = 64;

}  // namespace

Coordinator::Coordinator(Worker& worker, uint32_t slot, uint16_t id)
    : worker_(worker), slot_(slot), id_(id), ops_(slot, worker.connections(), *this) {
  engine_ = std::make_unique<TxnEngine>(worker.cluster(), ops_, worker.cache(), id);
}

Coordinator::~Coordinator() = default;

uint32_t Coordinator::thread() const { return worker_.thread_index(); }

Txn& Coordinator::txn() { return *engine_; }

void Coordinator::suspend() { coroutine_->suspend(); }

void Coordinator::yield() {
  worker_.yielded_.push_back(slot_);
  coroutine_->suspend();
}

Status Coordinator::refresh_connections() { return worker_.refresh_connections(); }

Worker::Worker(Cluster& cluster, uint32_t thread_index, uint32_t coordinators, uint16_t first_id,
               std::vector<std::unique_ptr<Connection>> conns)
    : cluster_(cluster),
      thread_index_(thread_index),
      conns_(std::move(conns)),
      failed_seen_(cluster.applied_failed_mask()) {
  for (auto& c : conns_) raw_.push_back(c.get());
  for (uint32_t i = 0; i < coordinators; ++i) {
    coordinators_.push_back(std::make_unique<Coordinator>(*this, i, static_cast<uint16_t>(first_id + i)));
  }
}

Worker::~Worker() { stop(); }

Status Worker::refresh_connections() {
  const uint64_t failed = cluster_.applied_failed_mask();
  const uint64_t restored = failed_seen_ & ~failed;
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (!((restored >> i) & 1)) continue;
    if (conns_[i]->outstanding() != 0) {
      return Status(Errc::kInvalidArgument, fmt::format("memory node {} restored while operations to it were in "
                                                        "flight", cluster_.node(i).region.node_id));
    }
    auto conn = cluster_.open_connection(i);
    if (!conn) return conn.status();
    conns_[i] = std::move(*conn);
    raw_[i] = conns_[i].get();
  }
  failed_seen_ = failed;
  return Status::ok();
}

void Worker::start(const Task& task) {
  stop();
  task_ = task;
  const size_t n = coordinators_.size();
  ready_.clear();
  ready_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Coordinator& c = *coordinators_[i];
    coros_.push_back(std::make_unique<Coroutine>(kStackBytes, [&c, this](Coroutine&) {
      task_(c);
      // A task may return with operations in flight (e.g. posted after an
      // abort); drain them so the next run starts clean.
      c.ops().wait_all();
    }));
    c.coroutine_ = coros_.back().get();
    ready_.push_back(static_cast<uint32_t>(i));
  }
  live_ = n;
}

void Worker::abandon_declared() {
  const uint64_t declared = cluster_.declared_failed_mask();
  if (declared == abandoned_) return;
  // A restore withdraws a declaration (and refresh_connections reopens the
  // node's connection): it may be abandoned again when declared again.
  abandoned_ &= declared;
  const uint64_t fresh = declared & ~abandoned_;
  for (size_t i = 0; i < raw_.size(); ++i) {
    if ((fresh >> i) & 1) raw_[i]->abandon();
  }
  abandoned_ = declared;
}

size_t Worker::step() {
  abandon_declared();
  size_t progress = 0;
  for (uint32_t i : ready_) {
    Coroutine& co = *coros_[i];
    ++progress;
    co.resume();  // rethrows what the task threw
    if (co.finished()) --live_;
  }
  ready_.clear();
  if (live_ == 0) return progress;
  ready_.swap(yielded_);  // yielded coordinators run again next round
  progress += ready_.size();
  const size_t n = coordinators_.size();
  for (Connection* conn : raw_) {
    if (conn->outstanding() == 0) continue;
    const size_t k = conn->poll(comps_);
    progress += k;
    for (size_t j = 0; j < k; ++j) {
      const auto slot = static_cast<uint32_t>(comps_[j].wr_id >> 32);
      if (slot < n && coordinators_[slot]->ops().complete(comps_[j]) && !coros_[slot]->finished()) {
        ready_.push_back(slot);
      }
    }
  }
  return progress;
}

void Worker::stop() {
  // Unwinds unfinished coroutines (~Coroutine) while their coordinators
  // exist; coordinators must not point at coroutines that are gone.
  coros_.clear();
  for (auto& c : coordinators_) c->coroutine_ = nullptr;
  ready_.clear();
  yielded_.clear();
  live_ = 0;
}

void Worker::run(const Task& task) {
  start(task);
  struct StopAtExit {
    Worker& w;
    ~StopAtExit() { w.stop(); }
  } stop_at_exit{*this};
  int idle = 0;
  while (running()) {
    if (step() > 0) {
      idle = 0;
    } else if (++idle >= kSpinsBeforeYield) {
      idle = 0;
      std::this_thread::yield();
    }
  }
}

Result<std::unique_ptr<Scheduler>> Scheduler::create(Cluster& cluster) {
  if (!cluster.has_directory()) {
    return Status(Errc::kInvalidArgument, "the cluster's table directory must be loaded before starting workers");
  }
  const ComputeConfig& cfg = cluster.config();
  std::unique_ptr<Scheduler> s(new Scheduler());
  for (uint32_t t = 0; t < cfg.threads; ++t) {
    auto conns = cluster.open_connections();
    if (!conns) return conns.status();
    s->workers_.push_back(std::make_unique<Worker>(cluster, t, cfg.coordinators,
                                                   static_cast<uint16_t>(t * cfg.coordinators), std::move(*conns)));
  }
  return s;
}

void Scheduler::run(const Worker::Task& task) {
  std::vector<std::exception_ptr> errors(workers_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers_.size(); ++i) {
    threads.emplace_back([this, i, &task, &errors] {
      try {
        workers_[i]->run(task);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

TxnCounters Scheduler::totals() const {
  TxnCounters sum;
  for (const auto& w : workers_) {
    for (size_t i = 0; i < w->coordinator_count(); ++i) sum += w->coordinator(i).engine().counters();
  }
  return sum;
}

}  // namespace pandora
