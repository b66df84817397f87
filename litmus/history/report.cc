#include "litmus/history/report.h"

#include <fmt/format.h>

#include "compute/trace/history.h"
#include "compute/trace/json.h"

namespace pandora::history {
namespace {

std::string step_text(const Anomaly& a, const CycleStep& s) {
  const std::string obj = object_name(s.table, s.key, s.slot);
  const uint32_t f = s.from + 1;
  const uint32_t t = s.to + 1;
  switch (s.type) {
    case EdgeType::kWW:
      return fmt::format("T{} -ww-> T{}: T{} installed {} v{}, T{} the next recorded version v{}", f, t, f, obj,
                         s.from_version, t, s.to_version);
    case EdgeType::kWR:
      return fmt::format("T{} -wr-> T{}: T{} read {} v{}, installed by T{}", f, t, t, obj, s.to_version, f);
    case EdgeType::kRW:
      return fmt::format("T{} -rw-> T{}: T{} read {} v{}, T{} installed the next recorded version v{}", f, t, f, obj,
                         s.from_version, t, s.to_version);
    case EdgeType::kRT:
      return fmt::format("T{} -rt-> T{}: T{} ended at {} ns, before T{} began at {} ns", f, t, f,
                         a.txns[s.from].end_ns, t, a.txns[s.to].begin_ns);
  }
  return "?";
}

}  // namespace

std::string txn_name(const TxnRef& t) {
  switch (t.role) {
    case TxnRole::kInitial: return fmt::format("initial state of {} (v{})", object_name(t.table, t.key, t.slot), t.version);
    case TxnRole::kUnrecorded:
      return fmt::format("unrecorded writer of {} v{}", object_name(t.table, t.key, t.slot), t.version);
    case TxnRole::kRecorded: break;
  }
  return fmt::format("{}#{}", client_name(t.pid, t.coordinator), t.seq);
}

std::string anomaly_label(const Anomaly& a) {
  std::string label(anomaly_kind_name(a.kind));
  if (a.realtime) label += "-realtime";
  return label;
}

std::string format_anomaly(const Anomaly& a) {
  std::string out = fmt::format("{}: {}\n", anomaly_label(a), a.detail);
  for (size_t i = 0; i < a.txns.size(); ++i) {
    const TxnRef& t = a.txns[i];
    if (t.standin()) {
      out += fmt::format("    T{} = {} (a stand-in: no recorded transaction installed it)\n", i + 1, txn_name(t));
      continue;
    }
    out += fmt::format("    T{} = {} (history #{}, {}, {}..{} ns)\n", i + 1, txn_name(t), t.index,
                       t.committed ? "committed" : "aborted", t.begin_ns, t.end_ns);
  }
  for (const CycleStep& s : a.steps) out += fmt::format("    {}\n", step_text(a, s));
  return out;
}

std::string format_report_text(const Report& r) {
  const Summary& s = r.summary;
  std::string out;
  out += fmt::format("model: {}\n", r.options.realtime ? "strict serializability (real-time edges on)"
                                                       : "serializability (real-time edges off)");
  out += fmt::format("transactions: {} (committed {}, aborted {})\n", s.transactions, s.committed, s.aborted);
  out += fmt::format("objects: {}, accesses: {}\n", s.objects, s.accesses);
  out += fmt::format("stand-in writers: {} ({} initial states)\n", s.standins, s.initial_standins);
  out += fmt::format("edges: ww {}, wr {}, rw {}, rt {}{}\n", s.edges[0], s.edges[1], s.edges[2], s.edges[3],
                     r.options.realtime ? " (rt chain-encoded)" : "");
  out += fmt::format("cyclic components: {} dependency, {} with real-time\n", s.dependency_components,
                     s.realtime_components);
  if (r.anomalies.empty()) {
    out += "no anomalies\n";
    return out;
  }
  std::string by_kind;
  for (size_t k = 0; k < kAnomalyKinds; ++k) {
    if (r.counts[k] == 0) continue;
    if (!by_kind.empty()) by_kind += ", ";
    by_kind += fmt::format("{} {}", anomaly_kind_name(static_cast<AnomalyKind>(k)), r.counts[k]);
  }
  out += fmt::format("anomalies: {} ({})\n", r.anomalies.size(), by_kind);
  for (size_t i = 0; i < r.anomalies.size(); ++i) {
    out += fmt::format("[{}] {}", i + 1, format_anomaly(r.anomalies[i]));
  }
  return out;
}

std::string format_report_json(const Report& r) {
  using json::Json;
  const Summary& s = r.summary;
  Json edges = Json::object();
  for (size_t t = 0; t < s.edges.size(); ++t) edges[std::string(edge_type_name(static_cast<EdgeType>(t)))] = s.edges[t];
  Json counts = Json::object();
  for (size_t k = 0; k < kAnomalyKinds; ++k) counts[std::string(anomaly_kind_name(static_cast<AnomalyKind>(k)))] = r.counts[k];
  auto put_object = [](Json& j, uint32_t table, uint64_t key, uint64_t slot) {
    j["table"] = table;
    j["key"] = key;
    if (slot != 0) j["slot"] = slot;
  };
  Json anomalies = Json::array();
  for (const Anomaly& a : r.anomalies) {
    Json j = {{"kind", anomaly_kind_name(a.kind)}, {"label", anomaly_label(a)}, {"realtime", a.realtime},
              {"detail", a.detail}};
    if (!a.is_cycle()) {
      put_object(j, a.table, a.key, a.slot);
      j["version"] = a.version;
    }
    Json txns = Json::array();
    for (const TxnRef& t : a.txns) {
      Json tj;
      if (t.standin()) {
        tj["standin"] = t.role == TxnRole::kInitial ? "initial" : "unrecorded";
        put_object(tj, t.table, t.key, t.slot);
        tj["version"] = t.version;
      } else {
        tj = {{"index", t.index}, {"client", client_name(t.pid, t.coordinator)}, {"seq", t.seq},
              {"begin_ns", t.begin_ns}, {"end_ns", t.end_ns}, {"committed", t.committed}};
      }
      txns.push_back(std::move(tj));
    }
    j["txns"] = std::move(txns);
    Json steps = Json::array();
    for (const CycleStep& st : a.steps) {
      Json sj = {{"from", st.from}, {"to", st.to}, {"type", edge_type_name(st.type)}};
      if (st.type != EdgeType::kRT) {
        put_object(sj, st.table, st.key, st.slot);
        sj["from_version"] = st.from_version;
        sj["to_version"] = st.to_version;
      }
      steps.push_back(std::move(sj));
    }
    j["steps"] = std::move(steps);
    anomalies.push_back(std::move(j));
  }
  const Json out = {{"model", r.options.realtime ? "strict-serializability" : "serializability"},
                    {"summary",
                     {{"transactions", s.transactions},
                      {"committed", s.committed},
                      {"aborted", s.aborted},
                      {"objects", s.objects},
                      {"accesses", s.accesses},
                      {"standins", s.standins},
                      {"initial_standins", s.initial_standins},
                      {"edges", std::move(edges)},
                      {"dependency_components", s.dependency_components},
                      {"realtime_components", s.realtime_components}}},
                    {"counts", std::move(counts)},
                    {"anomalies", std::move(anomalies)}};
  return json::dump(out) + "\n";
}

}  // namespace pandora::history
