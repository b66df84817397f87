#include "litmus/history/export_dbcop.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "litmus/history/export_common.h"
#include "litmus/history/json.h"

namespace pandora::history {
namespace {

// The events of history[i] as exported (aborted: writes only).
Status exported_ops(const ExportIndex& index, const std::vector<TxnTrace>& history, uint64_t i,
                    std::vector<ExportOp>* ops) {
  if (Status s = index.ops(i, ops); !s.is_ok()) return s;
  if (!history[i].committed) std::erase_if(*ops, [](const ExportOp& op) { return !op.write; });
  return Status::ok();
}

bool included(const TxnTrace& t, const std::vector<ExportOp>& ops) { return t.committed || !ops.empty(); }

// Two passes over the session order, so that the header's counts are known
// without holding the events in memory.
Status write_dbcop(const std::vector<TxnTrace>& history, TextSink& sink) {
  const ExportIndex index(history);

  // Session order: (pid, coordinator), then begin time, seq, history index.
  std::vector<uint64_t> order(history.size());
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
    const TxnTrace& x = history[a];
    const TxnTrace& y = history[b];
    return std::tie(x.pid, x.coordinator, x.begin_ns, x.seq, a) < std::tie(y.pid, y.coordinator, y.begin_ns, y.seq, b);
  });
  auto same_session = [&](size_t n, size_t m) {
    return history[order[n]].pid == history[order[m]].pid &&
           history[order[n]].coordinator == history[order[m]].coordinator;
  };

  std::vector<ExportOp> ops;
  uint64_t sessions = 0, longest_session = 0, longest_txn = 0, in_session = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    if (n == 0 || !same_session(n, n - 1)) in_session = 0;
    if (Status s = exported_ops(index, history, order[n], &ops); !s.is_ok()) return s;
    if (!included(history[order[n]], ops)) continue;
    if (in_session++ == 0) ++sessions;
    longest_session = std::max(longest_session, in_session);
    longest_txn = std::max<uint64_t>(longest_txn, ops.size());
  }

  sink.put(fmt::format(
      "{{\"params\":{{\"id\":0,\"n_node\":{},\"n_variable\":{},\"n_transaction\":{},\"n_event\":{}}},"
      "\"info\":\"pandora history\",\"start\":\"{}\",\"end\":\"{}\",\"data\":[",
      sessions, index.objects(), longest_session, longest_txn, rfc3339_utc(index.first_ns()),
      rfc3339_utc(index.last_ns())));
  bool first_session = true;
  in_session = 0;
  std::string line;
  for (size_t n = 0; n < order.size(); ++n) {
    if (n == 0 || !same_session(n, n - 1)) in_session = 0;
    const TxnTrace& t = history[order[n]];
    if (Status s = exported_ops(index, history, order[n], &ops); !s.is_ok()) return s;
    if (!included(t, ops)) continue;
    line.clear();
    if (in_session++ == 0) {
      if (!first_session) line += "\n]";
      line += first_session ? "\n[" : ",\n[";
      first_session = false;
    } else {
      line += ',';
    }
    line += "\n{\"events\":[";
    for (size_t k = 0; k < ops.size(); ++k) {
      const ExportOp& op = ops[k];
      if (k > 0) line += ',';
      line += op.write ? "{\"Write\":{\"variable\":" : "{\"Read\":{\"variable\":";
      json::append_u64(line, op.object);
      line += ",\"version\":";
      if (op.has_value) {
        json::append_u64(line, op.value);
      } else {
        line += "null";
      }
      line += "}}";
    }
    line += t.committed ? "],\"committed\":true}" : "],\"committed\":false}";
    sink.put(line);
  }
  sink.put(first_session ? "]}\n" : "\n]\n]}\n");
  return Status::ok();
}

}  // namespace

Status export_dbcop(const std::vector<TxnTrace>& history, std::FILE* out) {
  TextSink sink(out);
  if (Status s = write_dbcop(history, sink); !s.is_ok()) return s;
  if (!sink.finish()) return Status(Errc::kIo, "writing the dbcop export failed");
  return Status::ok();
}

Result<std::string> dbcop_text(const std::vector<TxnTrace>& history) {
  TextSink sink(nullptr);
  if (Status s = write_dbcop(history, sink); !s.is_ok()) return s;
  return sink.take();
}

}  // namespace pandora::history
