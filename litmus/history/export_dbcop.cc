#include "litmus/history/export_dbcop.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "litmus/history/export_common.h"
#include "compute/trace/json.h"

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

// One transaction of the "data" array.
std::string transaction_text(const std::vector<ExportOp>& ops, bool committed) {
  json::Json events = json::Json::array();
  for (const ExportOp& op : ops) {
    const json::Json version = op.has_value ? json::Json(op.value) : json::Json(nullptr);
    events.push_back({{op.write ? "Write" : "Read", {{"variable", op.object}, {"version", version}}}});
  }
  return json::dump({{"events", std::move(events)}, {"committed", committed}});
}

// Two passes over the session order, so that the header's counts are known
// without holding the events in memory.
Status write_dbcop(const History& h, TextSink& sink) {
  const ExportIndex index(h);
  const std::vector<TxnTrace>& history = h.txns;

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

  const std::vector<ExportOp>& initial = index.initial_writes();
  std::vector<ExportOp> ops;
  uint64_t sessions = initial.empty() ? 0 : 1;
  uint64_t longest_session = sessions, longest_txn = initial.size(), in_session = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    if (n == 0 || !same_session(n, n - 1)) in_session = 0;
    if (Status s = exported_ops(index, history, order[n], &ops); !s.is_ok()) return s;
    if (!included(history[order[n]], ops)) continue;
    if (in_session++ == 0) ++sessions;
    longest_session = std::max(longest_session, in_session);
    longest_txn = std::max<uint64_t>(longest_txn, ops.size());
  }

  const json::Json params = {{"id", 0},
                             {"n_node", sessions},
                             {"n_variable", index.objects()},
                             {"n_transaction", longest_session},
                             {"n_event", longest_txn}};
  // The header's fields, then "data" streamed one transaction per line.
  sink.put(fmt::format("{{\"params\":{},\"info\":\"pandora history\",\"start\":{},\"end\":{},\"data\":[",
                       json::dump(params), json::dump(rfc3339_utc(index.first_ns())),
                       json::dump(rfc3339_utc(index.last_ns()))));
  bool first_session = true;
  if (!initial.empty()) {
    sink.put("\n[\n" + transaction_text(initial, true));
    first_session = false;
  }
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
    line += '\n';
    line += transaction_text(ops, t.committed);
    sink.put(line);
  }
  sink.put(first_session ? "]}\n" : "\n]\n]}\n");
  return Status::ok();
}

}  // namespace

Status export_dbcop(const History& history, std::FILE* out) {
  TextSink sink(out);
  if (Status s = write_dbcop(history, sink); !s.is_ok()) return s;
  if (!sink.finish()) return Status(Errc::kIo, "writing the dbcop export failed");
  return Status::ok();
}

Result<std::string> dbcop_text(const History& history) {
  TextSink sink(nullptr);
  if (Status s = write_dbcop(history, sink); !s.is_ok()) return s;
  return sink.take();
}

}  // namespace pandora::history
