#include "litmus/history/export_elle.h"

#include <fmt/format.h>

#include <algorithm>

#include "litmus/history/export_common.h"

namespace pandora::history {
namespace {

struct Event {
  uint64_t time;
  // 0: completion of a transaction that began earlier, 1: invocation,
  // 2: completion of a transaction that began at this very time.
  uint32_t rank;
  uint64_t txn;
  bool operator<(const Event& o) const {
    if (time != o.time) return time < o.time;
    if (rank != o.rank) return rank < o.rank;
    return txn < o.txn;
  }
};

void append_value(std::string& out, const std::vector<ExportOp>& ops, bool with_reads) {
  out += '[';
  for (size_t i = 0; i < ops.size(); ++i) {
    const ExportOp& op = ops[i];
    if (i > 0) out += ' ';
    out += fmt::format("[{} {} ", op.write ? ":w" : ":r", op.object);
    if (op.has_value && (op.write || with_reads)) {
      out += fmt::format("{}]", op.value);
    } else {
      out += "nil]";
    }
  }
  out += ']';
}

Status write_elle(const History& h, TextSink& sink) {
  const ExportIndex index(h);
  const std::vector<TxnTrace>& history = h.txns;
  std::vector<Event> events;
  events.reserve(history.size() * 2);
  for (uint64_t i = 0; i < history.size(); ++i) {
    const TxnTrace& t = history[i];
    const uint64_t end = std::max(t.end_ns, t.begin_ns);
    events.push_back({t.begin_ns, 1, i});
    events.push_back({end, end == t.begin_ns ? 2u : 0u, i});
  }
  std::sort(events.begin(), events.end());

  std::string line;
  uint64_t next_index = 0;
  if (!index.initial_writes().empty()) {
    for (const char* type : {":invoke", ":ok"}) {
      line.clear();
      line += fmt::format("{{:type {}, :f :txn, :value ", type);
      append_value(line, index.initial_writes(), false);
      line += fmt::format(", :process {}, :time 0, :index {}}}\n", kElleInitialProcess, next_index++);
      sink.put(line);
    }
  }
  std::vector<ExportOp> ops;
  for (const Event& e : events) {
    const TxnTrace& t = history[e.txn];
    if (Status s = index.ops(e.txn, &ops); !s.is_ok()) return s;
    const bool invoke = e.rank == 1;
    const char* type = invoke ? ":invoke" : t.committed ? ":ok" : ":fail";
    line.clear();
    line += fmt::format("{{:type {}, :f :txn, :value ", type);
    append_value(line, ops, !invoke && t.committed);
    line += fmt::format(", :process {}, :time {}, :index {}}}\n", uint64_t{t.pid} << 16 | t.coordinator,
                        e.time - index.first_ns(), next_index++);
    sink.put(line);
  }
  return Status::ok();
}

}  // namespace

Status export_elle(const History& history, std::FILE* out) {
  TextSink sink(out);
  if (Status s = write_elle(history, sink); !s.is_ok()) return s;
  if (!sink.finish()) return Status(Errc::kIo, "writing the Elle export failed");
  return Status::ok();
}

Result<std::string> elle_text(const History& history) {
  TextSink sink(nullptr);
  if (Status s = write_elle(history, sink); !s.is_ok()) return s;
  return sink.take();
}

}  // namespace pandora::history
