#include "litmus/history/report.h"

#include <fmt/format.h>

#include "litmus/history/history.h"
#include "litmus/history/json.h"

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

std::string txn_name(const TxnRef& t) { return fmt::format("{}#{}", client_name(t.pid, t.coordinator), t.seq); }

std::string anomaly_label(const Anomaly& a) {
  std::string label(anomaly_kind_name(a.kind));
  if (a.realtime) label += "-realtime";
  return label;
}

std::string format_anomaly(const Anomaly& a) {
  std::string out = fmt::format("{}: {}\n", anomaly_label(a), a.detail);
  for (size_t i = 0; i < a.txns.size(); ++i) {
    const TxnRef& t = a.txns[i];
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
  const Summary& s = r.summary;
  std::string out;
  auto field = [&out](std::string_view name, uint64_t v, bool comma = true) {
    if (comma) out.push_back(',');
    json::append_string(out, name);
    out.push_back(':');
    json::append_u64(out, v);
  };
  out += "{\"model\":";
  json::append_string(out, r.options.realtime ? "strict-serializability" : "serializability");
  out += ",\"summary\":{";
  field("transactions", s.transactions, false);
  field("committed", s.committed);
  field("aborted", s.aborted);
  field("objects", s.objects);
  field("accesses", s.accesses);
  out += ",\"edges\":{";
  for (size_t t = 0; t < s.edges.size(); ++t) field(edge_type_name(static_cast<EdgeType>(t)), s.edges[t], t > 0);
  out += "}";
  field("dependency_components", s.dependency_components);
  field("realtime_components", s.realtime_components);
  out += "},\"counts\":{";
  for (size_t k = 0; k < kAnomalyKinds; ++k) field(anomaly_kind_name(static_cast<AnomalyKind>(k)), r.counts[k], k > 0);
  out += "},\"anomalies\":[";
  for (size_t i = 0; i < r.anomalies.size(); ++i) {
    const Anomaly& a = r.anomalies[i];
    if (i > 0) out.push_back(',');
    out += "{\"kind\":";
    json::append_string(out, anomaly_kind_name(a.kind));
    out += ",\"label\":";
    json::append_string(out, anomaly_label(a));
    out += ",\"realtime\":";
    json::append_bool(out, a.realtime);
    out += ",\"detail\":";
    json::append_string(out, a.detail);
    if (!a.is_cycle()) {
      field("table", a.table);
      field("key", a.key);
      if (a.slot != 0) field("slot", a.slot);
      field("version", a.version);
    }
    out += ",\"txns\":[";
    for (size_t j = 0; j < a.txns.size(); ++j) {
      const TxnRef& t = a.txns[j];
      if (j > 0) out.push_back(',');
      out.push_back('{');
      field("index", t.index, false);
      out += ",\"client\":";
      json::append_string(out, client_name(t.pid, t.coordinator));
      field("seq", t.seq);
      field("begin_ns", t.begin_ns);
      field("end_ns", t.end_ns);
      out += ",\"committed\":";
      json::append_bool(out, t.committed);
      out.push_back('}');
    }
    out += "],\"steps\":[";
    for (size_t j = 0; j < a.steps.size(); ++j) {
      const CycleStep& st = a.steps[j];
      if (j > 0) out.push_back(',');
      out.push_back('{');
      field("from", st.from, false);
      field("to", st.to);
      out += ",\"type\":";
      json::append_string(out, edge_type_name(st.type));
      if (st.type != EdgeType::kRT) {
        field("table", st.table);
        field("key", st.key);
        if (st.slot != 0) field("slot", st.slot);
        field("from_version", st.from_version);
        field("to_version", st.to_version);
      }
      out.push_back('}');
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace pandora::history
