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

Worker::Worker(Cluster& cluster, uint32_t thread_index, uint32_t coordinators, uint16_t first_id,
               std::vector<std::unique_ptr<Connection>> conns)
    : cluster_(cluster), thread_index_(thread_index), conns_(std::move(conns)) {
  for (auto& c : conns_) raw_.push_back(c.get());
  for (uint32_t i = 0; i < coordinators; ++i) {
    coordinators_.push_back(std::make_unique<Coordinator>(*this, i, static_cast<uint16_t>(first_id + i)));
  }
}

Worker::~Worker() = default;

void Worker::run(const Task& task) {
  const size_t n = coordinators_.size();
  std::vector<std::unique_ptr<Coroutine>> coros;
  std::vector<uint32_t> ready;
  ready.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Coordinator& c = *coordinators_[i];
    coros.push_back(std::make_unique<Coroutine>(kStackBytes, [&c, &task](Coroutine&) {
      task(c);
      // A task may return with operations in flight (e.g. posted after an
      // abort); drain them so the next run starts clean.
      c.ops().wait_all();
    }));
    c.coroutine_ = coros.back().get();
    ready.push_back(static_cast<uint32_t>(i));
  }
  // Coordinators must not point at coroutines that die with this frame.
  struct Detach {
    std::vector<std::unique_ptr<Coordinator>>& cs;
    ~Detach() {
      for (auto& c : cs) c->coroutine_ = nullptr;
    }
  } detach{coordinators_};
  size_t live = n;
  std::array<Completion, 64> comps;
  int idle = 0;
  while (live > 0) {
    for (uint32_t i : ready) {
      Coroutine& co = *coros[i];
      co.resume();  // rethrows what the task threw
      if (co.finished()) --live;
    }
    ready.clear();
    if (live == 0) break;
    ready.swap(yielded_);  // yielded coordinators run again next round
    size_t got = ready.size();
    for (Connection* conn : raw_) {
      if (conn->outstanding() == 0) continue;
      const size_t k = conn->poll(comps);
      got += k;
      for (size_t j = 0; j < k; ++j) {
        const auto slot = static_cast<uint32_t>(comps[j].wr_id >> 32);
        if (slot < n && coordinators_[slot]->ops().complete(comps[j]) && !coros[slot]->finished()) {
          ready.push_back(slot);
        }
      }
    }
    if (got > 0) {
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
  std::unique_ptr<Scheduler> s(new Scheduler(cluster));
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
