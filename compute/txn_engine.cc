#include "compute/txn_engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "compute/txn/abort.h"
#include "compute/txn/commit.h"
#include "compute/txn/execution.h"
#include "compute/txn/failover.h"
#include "compute/txn/protocol.h"
#include "compute/txn/report.h"

namespace pandora {

using txn::Item;

TxnEngine::TxnEngine(Cluster& cluster, RemoteOps& ops, AddressCache& cache, uint16_t coordinator)
    : ctx_(cluster, ops, cache, coordinator) {}

void TxnEngine::begin() {
  if (active_ && ctx_.state == AbortReason::kNone) txn::abort_transaction(ctx_, AbortReason::kUser);
  // The previous transaction's latch releases complete here, off its
  // critical path; one that failed halts this coordinator.
  ctx_.ops.wait_all();
  const bool released = txn::collect_releases(ctx_);
  const Status halt_detail = released ? Status() : ctx_.detail;
  ctx_.ops.reset();
  Status reconnect;
  if (const uint64_t v = ctx_.cluster.memory_config_version(); v != ctx_.memory_config) {
    // A memory node's fail-over moved this node's log to the live log nodes;
    // a restored node needs a new connection (retried at the next begin()
    // when it cannot be opened).
    reconnect = ctx_.ops.refresh_connections();
    if (reconnect) {
      ctx_.memory_config = v;
      ctx_.log_nodes = ctx_.cluster.log_node_indexes(ctx_.pid);
    }
  }
  ctx_.items.clear();
  ctx_.absent.clear();
  ++ctx_.seq;
  ctx_.mine = ctx_.protocol->latch_word(ctx_);
  ctx_.state = AbortReason::kNone;
  ctx_.detail = Status();
  active_ = true;
  ctx_.logged = false;
  ctx_.commit_started = false;
  ctx_.has_reads = ctx_.has_writes = false;
  ctx_.intents = 0;
  ctx_.intent_bufs.clear();
  std::fill(ctx_.ford_cursor.begin(), ctx_.ford_cursor.end(), 0);
  txn::start_accounting(ctx_);
  if (ctx_.lane == UINT32_MAX) {
    ctx_.state = AbortReason::kInvalid;
    ctx_.detail =
        Status(Errc::kInvalidArgument, fmt::format("coordinator {} has no log lane", ctx_.coordinator));
  }
  if (!reconnect) {
    ctx_.state = AbortReason::kTransport;
    ctx_.detail = reconnect;
  }
  if (ctx_.needs_recovery) {
    ctx_.state = AbortReason::kTransport;
    ctx_.detail = !halt_detail.is_ok()
                      ? halt_detail
                      : Status(Errc::kIo, fmt::format("coordinator {} left state only recovery can clean up (a "
                                                      "logged transaction undecided, or latches it could not "
                                                      "release for sure); this compute node must be recovered "
                                                      "before it runs more",
                                                      ctx_.coordinator));
  }
}

// The start of every Txn call: the transaction is active, the table exists
// and, for calls that carry a value, the value has the table's size.
AbortReason TxnEngine::start_call(uint32_t table, const TableEntry** t, const std::span<const uint8_t>* value) {
  if (!active_) {
    ctx_.detail = Status(Errc::kInvalidArgument, "transaction call outside begin()..commit()");
    return AbortReason::kInvalid;
  }
  if (ctx_.state != AbortReason::kNone) return ctx_.state;
  *t = ctx_.dir.find(table);
  if (!*t) {
    ctx_.detail = Status(Errc::kInvalidArgument, fmt::format("unknown table {}", table));
    return txn::abort_transaction(ctx_, AbortReason::kInvalid);
  }
  if (value && value->size() != (*t)->value_size) {
    ctx_.detail = Status(Errc::kInvalidArgument, fmt::format("table {} values have {} bytes, got {}", table,
                                                             (*t)->value_size, value->size()));
    return txn::abort_transaction(ctx_, AbortReason::kInvalid);
  }
  return AbortReason::kNone;
}

AbortReason TxnEngine::transport_failure() {
  if (txn::fail_over(ctx_) != txn::FailoverOutcome::kNotApplicable) return ctx_.state;
  describe_transport_failure();
  return txn::abort_transaction(ctx_, AbortReason::kTransport);
}

void TxnEngine::describe_transport_failure() {
  if (!ctx_.detail.is_ok()) return;
  const size_t node = ctx_.ops.first_error_node();
  ctx_.detail = Status(ctx_.ops.first_error(), fmt::format("remote operation on memory node {} failed",
                                                           ctx_.cluster.node(node).endpoint.to_string()));
}

AbortReason TxnEngine::abort_for(AbortReason r) {
  if (r == AbortReason::kNone) return r;
  return r == AbortReason::kTransport ? transport_failure() : txn::abort_transaction(ctx_, r);
}

ItemResult<std::span<const uint8_t>> TxnEngine::read(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  Item* it = nullptr;
  if (AbortReason r = txn::execute_read(ctx_, *t, table, key, &it); r != AbortReason::kNone) return abort_for(r);
  return std::span<const uint8_t>(it->value);
}

ItemResult<std::optional<std::span<const uint8_t>>> TxnEngine::read_if_present(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  Item* it = nullptr;
  if (AbortReason r = txn::execute_read_if_present(ctx_, *t, table, key, &it); r != AbortReason::kNone) {
    return abort_for(r);
  }
  if (!it) return std::optional<std::span<const uint8_t>>();
  return std::optional<std::span<const uint8_t>>(it->value);
}

ItemResult<std::span<uint8_t>> TxnEngine::update(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  Item* it = nullptr;
  if (AbortReason r = txn::execute_update(ctx_, *t, table, key, &it); r != AbortReason::kNone) return abort_for(r);
  return std::span<uint8_t>(it->value);
}

AbortReason TxnEngine::write(uint32_t table, uint64_t key, std::span<const uint8_t> value) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t, &value); r != AbortReason::kNone) return r;
  return abort_for(txn::execute_write(ctx_, *t, table, key, value));
}

AbortReason TxnEngine::insert(uint32_t table, uint64_t key, std::span<const uint8_t> value) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t, &value); r != AbortReason::kNone) return r;
  return abort_for(txn::execute_insert(ctx_, *t, table, key, value));
}

AbortReason TxnEngine::remove(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  return abort_for(txn::execute_remove(ctx_, *t, table, key));
}

CommitOutcome TxnEngine::ended() {
  active_ = false;
  return CommitOutcome{false, ctx_.state, ctx_.detail};
}

// The protocol's plan, step by step (compute/txn/plan.h); the first step
// that fails aborts the transaction (or, after logging, leaves it to
// recovery).
CommitOutcome TxnEngine::commit() {
  if (!active_) {
    return CommitOutcome{false, AbortReason::kInvalid, Status(Errc::kInvalidArgument, "commit() without begin()")};
  }
  if (ctx_.state != AbortReason::kNone) return ended();
  for (const Item& it : ctx_.items) {
    ctx_.has_writes |= it.installs();
    ctx_.has_reads |= it.access == txn::Access::kRead;
  }
  for (const txn::PlanStep& step : ctx_.plan.steps()) {
    if (AbortReason r = step.run(ctx_); r != AbortReason::kNone) {
      if (r == AbortReason::kTransport) {
        const txn::FailoverOutcome f = txn::fail_over(ctx_);
        if (f == txn::FailoverOutcome::kCommitted) break;  // decided by the live replicas: committed
        if (f == txn::FailoverOutcome::kEnded) return ended();
        describe_transport_failure();
      }
      txn::abort_transaction(ctx_, r);
      return ended();
    }
  }
  txn::account_finish(ctx_, true, AbortReason::kNone);
  active_ = false;
  return CommitOutcome{true, AbortReason::kNone, {}};
}

bool TxnEngine::halted() const { return ctx_.needs_recovery || txn::release_failed(ctx_); }

void TxnEngine::abort() {
  if (!active_) return;
  if (ctx_.state == AbortReason::kNone) txn::abort_transaction(ctx_, AbortReason::kUser);
  active_ = false;
}

}  // namespace pandora
