// Runs a PgWorkload on T threads, one PostgreSQL connection each, for a
// warm-up and a measured window, and collects what pandora-pg-bench reports.
//
// Each thread loops: draw a transaction, run its body in BEGIN ISOLATION
// LEVEL SERIALIZABLE [READ ONLY] ... COMMIT; on SQLSTATE 40001/40P01 roll
// back and run the same body again (counted as an aborted attempt and a
// retry), until it commits, rolls back by its own decision, or the run's
// deadline passes. Transactions whose first attempt *starts* in the
// measured window are measured (as pandora-bench does); committed nets and
// commits are summed over the whole run for the check.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/latency_histogram.h"
#include "common/status.h"
#include "workloads/peers/postgres/pg_workload.h"

namespace pandora::workloads::pg {

// Why an attempt did not commit; names as pandora-bench's where they mean
// the same ("user", "not-found", "duplicate").
enum class PgAbort : uint8_t { kSerialization, kDeadlock, kUser, kNotFound, kDuplicate };
inline constexpr size_t kPgAborts = 5;
std::string_view pg_abort_name(PgAbort a);  // "serialization-failure", "deadlock", "user", ...

struct PgRunOptions {
  uint32_t threads = 1;
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds measure{10000};
  uint64_t seed = 1;
  std::function<void(double elapsed_s, bool warming_up, uint64_t commits, double commits_per_s)> on_progress;
  const std::atomic<bool>* stop = nullptr;  // SIGTERM/SIGINT: end after the current transaction
};

struct PgRunStats {
  double measured_seconds = 0;
  // Measured window.
  uint64_t attempts = 0;
  uint64_t commits = 0;
  uint64_t retries = 0;          // re-executions after 40001/40P01
  std::array<uint64_t, kPgAborts> aborts{};
  std::vector<uint64_t> commits_by_type, aborts_by_type;
  LatencyHistogram latency;               // the committed attempt (as pandora-bench)
  LatencyHistogram latency_with_retries;  // first attempt's start to commit
  // Whole run.
  int64_t committed_delta = 0;
  uint64_t total_commits = 0;

  double commits_per_second() const {
    return measured_seconds > 0 ? static_cast<double>(commits) / measured_seconds : 0.0;
  }
};

// Connects T connections to `conninfo`, prepares the workload's statements
// and runs. Fails when a connection fails or a statement fails with an
// error that is not a serialization failure or deadlock.
Result<PgRunStats> run_pg_workload(const std::string& conninfo, const PgWorkload& workload,
                                   const PgRunOptions& options);

}  // namespace pandora::workloads::pg
