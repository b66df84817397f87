#include "workloads/bench/runner.h"

#include <atomic>
#include <exception>
#include <memory>
#include <thread>

#include <fmt/format.h>

namespace pandora::workloads {

namespace {

using Clock = std::chrono::steady_clock;

// Everything one coordinator accounts; written only by that coordinator,
// read by the caller after the run (live_commits also during it).
struct CoordinatorSlot {
  std::atomic<uint64_t> live_commits{0};
  uint64_t attempts = 0;
  uint64_t commits = 0;
  std::array<uint64_t, kAbortReasons> aborts{};
  std::vector<uint64_t> commits_by_type;
  std::vector<uint64_t> aborts_by_type;
  std::vector<OpCounters> ops_by_type;
  LatencyHistogram latency;
  TxnCounters window_start;
  TxnCounters window_end;
  int64_t delta = 0;
  uint64_t uncertain = 0;
  bool halted = false;
  bool fenced = false;
  std::optional<uint32_t> lost_node;
  Errc lost_node_error = Errc::kOk;
  uint64_t total_commits = 0;
  std::vector<uint64_t> timeline;
  std::vector<uint64_t> timeline_aborts;
};

// After a transport failure: is this node fenced, or is a memory node lost?
// The connections tell (a broken connection stays broken), not the failed
// operation alone: its error may be that of another node's connection.
void classify_transport_failure(const Cluster& cluster, Coordinator& c, CoordinatorSlot& s) {
  if (c.engine().last_detail().code() == Errc::kFenced) s.fenced = true;
  RemoteOps& ops = c.ops();
  for (size_t n = 0; n < ops.node_count(); ++n) {
    const Errc h = ops.link_health(n);
    if (h == Errc::kFenced) {
      s.fenced = true;
    } else if (h != Errc::kOk && !s.lost_node && !cluster.memory_failed(n)) {
      // A node declared failed is failed over (compute/txn/failover.h):
      // the transaction was decided by the live replicas; run on.
      s.lost_node = static_cast<uint32_t>(n);
      s.lost_node_error = h;
    }
  }
}

}  // namespace

TxnCounters counters_between(const TxnCounters& earlier, const TxnCounters& later) {
  TxnCounters d;
  d.commits = later.commits - earlier.commits;
  for (size_t i = 0; i < kAbortReasons; ++i) d.aborts[i] = later.aborts[i] - earlier.aborts[i];
  d.committed_ops = later.committed_ops - earlier.committed_ops;
  d.all_ops = later.all_ops - earlier.all_ops;
  return d;
}

Result<RunStats> run_workload(Scheduler& scheduler, const Workload& workload, uint16_t compute_id,
                              const RunOptions& options) {
  size_t coordinators = 0;
  for (size_t t = 0; t < scheduler.thread_count(); ++t) coordinators += scheduler.worker(t).coordinator_count();
  const size_t types = workload.txn_types().size();
  const auto total = options.warmup + options.measure;
  const auto width = std::max(options.timeline, std::chrono::milliseconds(1));
  const size_t buckets = static_cast<size_t>((total + width - std::chrono::milliseconds(1)) / width) + 1;

  std::vector<std::unique_ptr<CoordinatorSlot>> slots;
  for (size_t i = 0; i < coordinators; ++i) {
    auto s = std::make_unique<CoordinatorSlot>();
    s->commits_by_type.assign(types, 0);
    s->aborts_by_type.assign(types, 0);
    s->ops_by_type.assign(types, OpCounters{});
    s->timeline.assign(buckets, 0);
    s->timeline_aborts.assign(buckets, 0);
    slots.push_back(std::move(s));
  }

  const Clock::time_point start = Clock::now();
  const auto start_realtime = std::chrono::system_clock::now();
  const Clock::time_point window_start = start + options.warmup;
  const Clock::time_point deadline = window_start + options.measure;

  // Parking for stop-the-world pauses: a coordinator between transactions
  // holds no latch, so once every live one is parked (or finished) the
  // node can acknowledge. Counts are shared across worker threads.
  const uint32_t live_total = static_cast<uint32_t>(coordinators);
  std::atomic<uint32_t> parked{0}, finished{0};
  std::atomic<uint64_t> acked{0};
  std::atomic<uint32_t> pauses{0};
  std::atomic<uint64_t> paused_ns{0};
  // Raised (before the coordinator parks or counts as finished) when a
  // coordinator halted with a transaction or a latch CAS left to recovery,
  // or a link broke: operations of this node may still land, or latches it
  // may hold are not its live coordinators' to release. Such a node must
  // never acknowledge a stop-the-world pause - the scan would release
  // latches under writes that land later - so it refuses, stops, and is
  // recovered as a failed node in that same pause.
  std::atomic<bool> needs_recovery{false};
  std::atomic<bool> pause_refused{false};
  // Raised by the first coordinator that finds this node fenced or a memory
  // node lost: nothing can commit any more, so all stop at once.
  std::atomic<bool> give_up{false};
  auto park = [&](Coordinator& c, uint64_t epoch) {
    const Clock::time_point p0 = Clock::now();
    parked.fetch_add(1, std::memory_order_acq_rel);
    while (options.pause_requested() == epoch) {
      const bool all = parked.load(std::memory_order_acquire) + finished.load(std::memory_order_acquire) >= live_total;
      // Read after the counts: a coordinator raises it before it parks or finishes.
      if (needs_recovery.load(std::memory_order_acquire)) {
        pause_refused.store(true, std::memory_order_release);
        give_up.store(true, std::memory_order_release);
        break;
      }
      if (all) {
        if (acked.exchange(epoch, std::memory_order_acq_rel) != epoch) {
          pauses.fetch_add(1, std::memory_order_relaxed);
          if (options.ack_pause) options.ack_pause(epoch);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      c.yield();  // let this thread's other coordinators finish their transactions
    }
    parked.fetch_sub(1, std::memory_order_acq_rel);
    if (c.id() == 0) {
      paused_ns.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - p0)
                                                    .count()),
                          std::memory_order_relaxed);
    }
  };

  auto task = [&](Coordinator& c) {
    CoordinatorSlot& s = *slots.at(c.id());
    Rng rng = Rng::for_coordinator(options.seed, compute_id, c.id());
    Txn& txn = c.txn();
    bool measuring = false;
    for (;;) {
      const Clock::time_point t0 = Clock::now();
      if (t0 >= deadline) break;
      if (options.stop && options.stop->load(std::memory_order_acquire)) break;
      if (give_up.load(std::memory_order_acquire)) break;
      if (options.pause_requested) {
        if (const uint64_t epoch = options.pause_requested(); epoch != 0) {
          park(c, epoch);
          continue;
        }
      }
      // A coordinator that left a logged transaction to recovery runs no
      // more (its next record would overwrite the undecided one).
      if (c.engine().halted()) {
        s.halted = true;
        break;
      }
      if (!measuring && t0 >= window_start) {
        measuring = true;
        s.window_start = c.engine().counters();
      }
      const OpCounters ops_before = c.engine().counters().committed_ops;
      const bool undecided_before = c.engine().left_undecided();
      const TxnOutcome o = workload.run_one(txn, rng);
      const Clock::time_point t1 = Clock::now();
      const size_t type = o.type < types ? o.type : 0;
      const size_t bucket = std::min(static_cast<size_t>((t1 - start) / width), buckets - 1);
      if (o.commit.committed) {
        s.delta += o.delta;
        ++s.total_commits;
        s.live_commits.store(s.total_commits, std::memory_order_relaxed);
        ++s.timeline[bucket];
      } else {
        ++s.timeline_aborts[bucket];
      }
      if (!o.commit.committed && o.commit.reason == AbortReason::kTransport) {
        // Left undecided (halted) means its outcome is unknown; any earlier
        // transport failure aborted it with nothing written.
        if (!undecided_before && c.engine().left_undecided()) ++s.uncertain;
        classify_transport_failure(scheduler.worker(0).cluster(), c, s);
      }
      // Fenced or a memory node lost: nothing this node does can commit any
      // more; stop at once instead of retrying (recovery decides the rest).
      const bool hopeless = s.fenced || s.lost_node.has_value();
      if (hopeless) give_up.store(true, std::memory_order_release);
      if (hopeless || c.engine().halted()) needs_recovery.store(true, std::memory_order_release);
      if (!measuring) {
        if (hopeless) break;
        continue;
      }
      ++s.attempts;
      if (o.commit.committed) {
        ++s.commits;
        ++s.commits_by_type[type];
        s.ops_by_type[type] += c.engine().counters().committed_ops - ops_before;
        s.latency.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
      } else {
        ++s.aborts[static_cast<size_t>(o.commit.reason) % kAbortReasons];
        ++s.aborts_by_type[type];
      }
      if (hopeless) break;
    }
    // The last transaction's latch releases complete after its commit
    // reported: wait for them; one that failed halts the coordinator now.
    c.ops().wait_all();
    if (c.engine().halted()) {
      s.halted = true;
      needs_recovery.store(true, std::memory_order_release);
    }
    finished.fetch_add(1, std::memory_order_acq_rel);
    s.window_end = c.engine().counters();
    if (!measuring) s.window_start = s.window_end;
  };

  std::atomic<bool> done{false};
  std::exception_ptr failure;
  std::thread runner([&] {
    try {
      scheduler.run(task);
    } catch (...) {
      failure = std::current_exception();
    }
    done.store(true, std::memory_order_release);
  });

  // Progress, once per second, from this thread.
  uint64_t last_commits = 0;
  Clock::time_point last_tick = start;
  Clock::time_point next_tick = start + std::chrono::seconds(1);
  while (!done.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const Clock::time_point now = Clock::now();
    if (now < next_tick || done.load(std::memory_order_acquire)) continue;
    next_tick += std::chrono::seconds(1);
    uint64_t commits = 0;
    for (const auto& s : slots) commits += s->live_commits.load(std::memory_order_relaxed);
    const double interval = std::chrono::duration<double>(now - last_tick).count();
    if (options.on_progress) {
      options.on_progress(Progress{std::chrono::duration<double>(now - start).count(), now < window_start, commits,
                                   interval > 0 ? static_cast<double>(commits - last_commits) / interval : 0.0});
    }
    last_commits = commits;
    last_tick = now;
  }
  runner.join();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      return Status(Errc::kIo, fmt::format("a coordinator failed: {}", e.what()));
    } catch (...) {
      return Status(Errc::kIo, "a coordinator failed with an unknown exception");
    }
  }

  RunStats r;
  // A run stopped early (signal, fence) measured only until it stopped.
  const Clock::time_point ended = std::min(Clock::now(), deadline);
  r.measured_seconds = ended > window_start ? std::chrono::duration<double>(ended - window_start).count() : 0.0;
  r.commits_by_type.assign(types, 0);
  r.aborts_by_type.assign(types, 0);
  r.ops_by_type.assign(types, OpCounters{});
  r.timeline.assign(buckets, 0);
  r.timeline_aborts.assign(buckets, 0);
  r.timeline_width = width;
  r.timeline_start_realtime_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(start_realtime.time_since_epoch()).count());
  r.warmup = options.warmup;
  r.pauses = pauses.load();
  r.pause_refused = pause_refused.load();
  r.paused_seconds = static_cast<double>(paused_ns.load()) / 1e9;
  for (const auto& s : slots) {
    r.attempts += s->attempts;
    r.commits += s->commits;
    for (size_t i = 0; i < kAbortReasons; ++i) r.aborts[i] += s->aborts[i];
    for (size_t i = 0; i < types; ++i) {
      r.commits_by_type[i] += s->commits_by_type[i];
      r.ops_by_type[i] += s->ops_by_type[i];
      r.aborts_by_type[i] += s->aborts_by_type[i];
    }
    r.latency.merge(s->latency);
    r.engine += counters_between(s->window_start, s->window_end);
    r.committed_delta += s->delta;
    r.uncertain += s->uncertain;
    r.halted_coordinators += s->halted ? 1 : 0;
    r.fenced = r.fenced || s->fenced;
    if (s->lost_node && !r.lost_node) {
      r.lost_node = s->lost_node;
      r.lost_node_error = s->lost_node_error;
    }
    r.total_commits += s->total_commits;
    for (size_t b = 0; b < buckets; ++b) {
      r.timeline[b] += s->timeline[b];
      r.timeline_aborts[b] += s->timeline_aborts[b];
    }
  }
  // The last bucket only holds commits of transactions that started before
  // the deadline and finished after it; fold it into the one before so the
  // timeline has no misleading partial tail.
  for (std::vector<uint64_t>* t : {&r.timeline, &r.timeline_aborts}) {
    if (t->size() < 2) continue;
    (*t)[t->size() - 2] += t->back();
    t->pop_back();
  }
  return r;
}

}  // namespace pandora::workloads
