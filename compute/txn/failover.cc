#include "compute/txn/failover.h"

#include <fmt/format.h>

#include "compute/txn/abort.h"
#include "compute/txn/commit.h"
#include "compute/txn/protocol.h"
#include "compute/txn/report.h"

namespace pandora::txn {

namespace {

std::string node_names(const TxnContext& ctx, uint64_t nodes) {
  std::string out;
  for (size_t n = 0; n < ctx.cluster.node_count(); ++n) {
    if (!((nodes >> n) & 1)) continue;
    if (!out.empty()) out += ", ";
    out += ctx.cluster.node(n).endpoint.to_string();
  }
  return out;
}

}  // namespace

bool await_memory_declaration(TxnContext& ctx, uint64_t nodes) {
  const auto wait = ctx.cluster.config().memory_failover_wait;
  if (nodes == 0) return true;
  if (wait.count() <= 0) return false;
  // A coordinator of this process waited in vain already - for these nodes
  // or others: a link to a live node is broken, so this node stops and
  // needs recovery whatever happens to these. A partitioned node loses its
  // memory nodes one step apart; waiting for each in turn only delays its
  // stop (wait x memory nodes, in the partition test 21 s, not 11).
  if (ctx.cluster.waited_out_mask() != 0) return false;
  const TimeSource& time = ctx.cluster.time();
  const uint64_t deadline = time.realtime_ns() + static_cast<uint64_t>(wait.count()) * 1'000'000;
  while ((nodes & ~ctx.cluster.declared_failed_mask()) != 0) {
    if (time.realtime_ns() >= deadline) {
      ctx.cluster.note_waited_out(nodes & ~ctx.cluster.declared_failed_mask(), wait);
      return false;
    }
    ctx.ops.yield();
  }
  return true;
}

uint64_t absorb_memory_failures(TxnContext& ctx) {
  ctx.ops.wait_all();
  const uint64_t lost = ctx.ops.lost_node_mask();
  if (lost == 0 || ctx.ops.other_failure()) return 0;
  if (!await_memory_declaration(ctx, lost)) return 0;
  // Every failure was on a node that is gone for good, and so are the
  // latches it held there, and (ford) the undo records it wrote there.
  const uint64_t failed = ctx.cluster.declared_failed_mask();
  for (Item& it : ctx.items) {
    for (size_t r = 0; r < it.latches.size() && r < it.replicas.size(); ++r) {
      if ((failed >> it.replicas[r]) & 1) it.latches[r] = ReplicaLatch{};
    }
  }
  for (size_t n = 0; n < ctx.ford_cursor.size(); ++n) {
    if ((failed >> n) & 1) ctx.ford_cursor[n] = 0;
  }
  ctx.ops.clear_failures();
  ctx.acct.counters.memory_failovers++;
  return lost;
}

FailoverOutcome fail_over(TxnContext& ctx) {
  if (ctx.state != AbortReason::kNone) return FailoverOutcome::kNotApplicable;
  const uint64_t lost = absorb_memory_failures(ctx);
  if (lost == 0) return FailoverOutcome::kNotApplicable;
  const uint64_t failed = ctx.cluster.declared_failed_mask();
  const std::string names = node_names(ctx, lost);

  if (!ctx.protocol->decided_to_commit(ctx)) {
    ctx.detail = Status(Errc::kDisconnected,
                        fmt::format("memory node {} failed; the transaction aborted (retry it)", names));
    abort_transaction(ctx, AbortReason::kFailedOver);
    return FailoverOutcome::kEnded;
  }
  // Its outcome is commit (validated and logged; ford: its commit WRITEs
  // begun). Complete it on the live replicas.
  post_commit_writes(ctx, failed);
  ctx.ops.wait_all();
  if (!ctx.all_ok()) {
    leave_undecided(ctx, AbortReason::kTransport,
                    Status(ctx.ops.first_error(),
                           fmt::format("memory node {} failed and a commit WRITE to a live replica failed too; "
                                       "latches kept for recovery",
                                       names)));
    return FailoverOutcome::kEnded;
  }
  report_committed(ctx);
  unlatch(ctx);
  return FailoverOutcome::kCommitted;
}

}  // namespace pandora::txn
