#include "workloads/peers/postgres/pg_runner.h"

#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "workloads/peers/postgres/sqlstate.h"

namespace pandora::workloads::pg {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

PgAbort abort_of(PgEnd e) {
  switch (e) {
    case PgEnd::kNotFound: return PgAbort::kNotFound;
    case PgEnd::kDuplicate: return PgAbort::kDuplicate;
    default: return PgAbort::kUser;
  }
}

struct Shared {
  Clock::time_point start, warm_end, deadline;
  const std::atomic<bool>* stop = nullptr;
  std::atomic<uint64_t> commits{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;

  bool over() const {
    return failed.load(std::memory_order_relaxed) || (stop && stop->load(std::memory_order_relaxed)) ||
           Clock::now() >= deadline;
  }
  void fail(std::string m) {
    std::lock_guard<std::mutex> g(mu);
    if (error.empty()) error = std::move(m);
    failed.store(true);
  }
};

// One thread's loop; its stats are its own until the join.
void run_thread(PgConn& conn, const PgWorkload& w, Rng rng, Shared& sh, PgRunStats& st) {
  const size_t types = w.txn_types().size();
  st.commits_by_type.assign(types, 0);
  st.aborts_by_type.assign(types, 0);
  while (!sh.over()) {
    PgTxn t = w.draw(rng);
    const Clock::time_point first = Clock::now();
    const bool measured = first >= sh.warm_end && first < sh.deadline;
    for (;;) {
      const Clock::time_point begin = Clock::now();
      if (measured) ++st.attempts;
      try {
        conn.exec(t.read_only ? "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY" : "BEGIN ISOLATION LEVEL SERIALIZABLE");
        const PgBodyResult r = t.body(conn);
        if (r.end != PgEnd::kCommit) {
          conn.exec("ROLLBACK");
          if (measured) {
            ++st.aborts[static_cast<size_t>(abort_of(r.end))];
            ++st.aborts_by_type[t.type];
          }
          break;
        }
        conn.exec("COMMIT");
        const Clock::time_point end = Clock::now();
        st.committed_delta += r.net;
        ++st.total_commits;
        sh.commits.fetch_add(1, std::memory_order_relaxed);
        if (measured) {
          ++st.commits;
          ++st.commits_by_type[t.type];
          st.latency.record(ns_between(begin, end));
          st.latency_with_retries.record(ns_between(first, end));
        }
        break;
      } catch (const PgError& e) {
        conn.rollback_quietly();
        const PgFailure f = classify_sqlstate(e.sqlstate());
        if (f == PgFailure::kFatal) throw;
        if (measured) {
          ++st.aborts[static_cast<size_t>(f == PgFailure::kDeadlock ? PgAbort::kDeadlock : PgAbort::kSerialization)];
          ++st.aborts_by_type[t.type];
          ++st.retries;
        }
        if (sh.over()) break;  // given up at the deadline
      }
    }
  }
}

void merge(PgRunStats& into, const PgRunStats& s) {
  into.attempts += s.attempts;
  into.commits += s.commits;
  into.retries += s.retries;
  for (size_t i = 0; i < kPgAborts; ++i) into.aborts[i] += s.aborts[i];
  into.commits_by_type.resize(s.commits_by_type.size());
  into.aborts_by_type.resize(s.aborts_by_type.size());
  for (size_t i = 0; i < s.commits_by_type.size(); ++i) {
    into.commits_by_type[i] += s.commits_by_type[i];
    into.aborts_by_type[i] += s.aborts_by_type[i];
  }
  into.latency.merge(s.latency);
  into.latency_with_retries.merge(s.latency_with_retries);
  into.committed_delta += s.committed_delta;
  into.total_commits += s.total_commits;
}

}  // namespace

std::string_view pg_abort_name(PgAbort a) {
  switch (a) {
    case PgAbort::kSerialization: return "serialization-failure";
    case PgAbort::kDeadlock: return "deadlock";
    case PgAbort::kUser: return "user";
    case PgAbort::kNotFound: return "not-found";
    case PgAbort::kDuplicate: return "duplicate";
  }
  return "unknown";
}

Result<PgRunStats> run_pg_workload(const std::string& conninfo, const PgWorkload& workload,
                                   const PgRunOptions& o) {
  // Every connection is open and prepared before the clock starts.
  std::vector<std::unique_ptr<PgConn>> conns;
  for (uint32_t i = 0; i < o.threads; ++i) {
    Result<std::unique_ptr<PgConn>> c = PgConn::connect(conninfo);
    if (!c) return c.status();
    try {
      workload.prepare(**c);
    } catch (const PgError& e) {
      return Status(Errc::kIo, fmt::format("preparing the statements: {}", e.what()));
    }
    conns.push_back(std::move(*c));
  }
  Shared sh;
  sh.stop = o.stop;
  sh.start = Clock::now();
  sh.warm_end = sh.start + o.warmup;
  sh.deadline = sh.warm_end + o.measure;
  std::vector<PgRunStats> per(o.threads);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < o.threads; ++i) {
    threads.emplace_back([&, i] {
      try {
        run_thread(*conns[i], workload, Rng::for_coordinator(o.seed, 0, i), sh, per[i]);
      } catch (const std::exception& e) {
        sh.fail(fmt::format("thread {}: {}", i, e.what()));
      }
    });
  }
  uint64_t last = 0;
  Clock::time_point tick = sh.start;
  while (!sh.over()) {
    std::this_thread::sleep_until(std::min(tick + std::chrono::seconds(1), sh.deadline));
    const Clock::time_point now = Clock::now();
    const uint64_t c = sh.commits.load(std::memory_order_relaxed);
    if (o.on_progress && now < sh.deadline) {
      const double dt = std::chrono::duration<double>(now - tick).count();
      o.on_progress(std::chrono::duration<double>(now - sh.start).count(), now < sh.warm_end, c,
                    dt > 0 ? static_cast<double>(c - last) / dt : 0.0);
    }
    last = c;
    tick = now;
  }
  const Clock::time_point stopped = Clock::now();
  for (std::thread& t : threads) t.join();
  if (sh.failed.load()) return Status(Errc::kIo, sh.error);
  PgRunStats total;
  for (const PgRunStats& s : per) merge(total, s);
  // The window actually measured (shorter when stopped by a signal).
  total.measured_seconds = std::max(0.0, std::chrono::duration<double>(std::min(stopped, sh.deadline) - sh.warm_end).count());
  return total;
}

}  // namespace pandora::workloads::pg
