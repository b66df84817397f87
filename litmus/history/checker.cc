#include "litmus/history/checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace pandora::history {
namespace {

constexpr uint32_t kNoNode = UINT32_MAX;
// Access::txn has 28 bits.
constexpr uint64_t kMaxTransactions = uint64_t{1} << 28;
// G-single search: how many anti-dependency edges of one component to try
// closing with ww/wr paths before settling for a G2 cycle.
constexpr int kGSingleAttempts = 32;

// Accesses of all objects (the sorted table plus stand-ins) stay below this,
// so that an Edge's 30-bit to_access can name every one.
constexpr size_t kMaxAccesses = size_t{1} << 29;

// Sort order within one version: committed writes, then aborted writes,
// then reads, so a version's writers are known before its readers. Reads of
// an absent key read no version: they take part in edges like reads but
// never need a writer.
enum AccessKind : uint32_t { kWrite = 0, kAbortedWrite = 1, kRead = 2, kAbsentRead = 3 };

// One access to an object: an incarnation (table, key, slot) of a key, whose
// version numbers are one slot's counter (checker.h).
struct Access {
  uint64_t key = 0;
  uint64_t slot = 0;
  uint64_t version = 0;
  uint32_t table = 0;
  uint32_t txn : 28 = 0;
  uint32_t kind : 2 = 0;  // AccessKind
  uint32_t op : 2 = 0;    // TraceOp - 1

  bool same_object(const Access& o) const { return table == o.table && key == o.key && slot == o.slot; }
  bool operator<(const Access& o) const {
    if (table != o.table) return table < o.table;
    if (key != o.key) return key < o.key;
    if (slot != o.slot) return slot < o.slot;
    if (version != o.version) return version < o.version;
    if (kind != o.kind) return kind < o.kind;
    return txn < o.txn;
  }
};
static_assert(sizeof(Access) == 32);

struct TxnMeta {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint32_t seq = 0;
  uint16_t pid = 0;
  uint16_t coordinator = 0;
  uint32_t node = kNoNode;  // graph node; kNoNode when aborted
  bool committed = false;
};

std::string_view op_label(TraceOp op) {
  switch (op) {
    case TraceOp::kRead: return "read";
    case TraceOp::kUpdate: return "update";
    case TraceOp::kInsert: return "insert";
    case TraceOp::kDelete: return "delete";
  }
  return "?";
}

}  // namespace

std::string object_name(uint32_t table, uint64_t key, uint64_t slot) {
  if (slot == 0) return fmt::format("t{}:k{}", table, key);
  return fmt::format("t{}:k{}@{}", table, key, slot);
}

std::string_view edge_type_name(EdgeType t) {
  switch (t) {
    case EdgeType::kWW: return "ww";
    case EdgeType::kWR: return "wr";
    case EdgeType::kRW: return "rw";
    case EdgeType::kRT: return "rt";
  }
  return "?";
}

std::string_view anomaly_kind_name(AnomalyKind k) {
  switch (k) {
    case AnomalyKind::kG0: return "G0";
    case AnomalyKind::kG1a: return "G1a";
    case AnomalyKind::kG1c: return "G1c";
    case AnomalyKind::kGSingle: return "G-single";
    case AnomalyKind::kG2: return "G2";
    case AnomalyKind::kLostUpdate: return "lost-update";
    case AnomalyKind::kGarbageRead: return "garbage-read";
    case AnomalyKind::kInternal: return "internal";
  }
  return "?";
}

struct Checker::State {
  CheckOptions options;
  InitialState initial;
  std::vector<TxnMeta> txns;
  std::vector<uint32_t> node_txn;  // graph node -> index in txns (committed transactions)
  std::vector<Access> accesses;
  // Stand-in writers, graph nodes node_txn.size() + i. Their accesses are
  // numbered scanned + i while scan_objects() runs and appended to
  // `accesses` after it, so that edges can name them as witnesses.
  std::vector<Access> standins;
  std::vector<TxnRole> standin_roles;
  size_t scanned = 0;  // accesses of recorded transactions (sorted)
  std::vector<Edge> edges;
  Report report;
  uint64_t beyond_limit = 0;  // transactions add() could not take

  TxnRef ref(uint64_t index) const {
    const TxnMeta& m = txns[index];
    return TxnRef{.index = index, .pid = m.pid, .coordinator = m.coordinator, .seq = m.seq, .begin_ns = m.begin_ns,
                  .end_ns = m.end_ns, .committed = m.committed};
  }
  // A graph node's transaction or stand-in.
  TxnRef node_ref(uint32_t node) const {
    if (node < node_txn.size()) return ref(node_txn[node]);
    const Access& a = standins[node - node_txn.size()];
    return TxnRef{.role = standin_roles[node - node_txn.size()], .table = a.table, .key = a.key, .slot = a.slot,
                  .version = a.version};
  }
  // Cycles start at the lowest history index; stand-ins come after every
  // recorded transaction.
  uint64_t node_order(uint32_t node) const {
    return node < node_txn.size() ? node_txn[node] : kMaxTransactions + (node - node_txn.size());
  }
  uint32_t node_of_access(uint32_t id) const {
    return id < scanned ? txns[accesses[id].txn].node : static_cast<uint32_t>(node_txn.size() + (id - scanned));
  }
  uint32_t real_nodes() const { return static_cast<uint32_t>(node_txn.size() + standins.size()); }

  void add_anomaly(Anomaly a) {
    ++report.counts[static_cast<size_t>(a.kind)];
    report.anomalies.push_back(std::move(a));
  }

  void internal(uint64_t index, const TraceItem& item, std::string what) {
    Anomaly a;
    a.kind = AnomalyKind::kInternal;
    a.txns.push_back(ref(index));
    a.table = item.table;
    a.key = item.key;
    a.slot = item.slot;
    a.version = item.write_version;
    a.detail = fmt::format("T1 {} {}", what, object_name(item.table, item.key, item.slot));
    add_anomaly(std::move(a));
  }

  void add(const TxnTrace& t);
  void add_edge(EdgeType type, uint32_t from_access, uint32_t to_access);
  void scan_objects();
  void add_realtime_edges();
  void find_cycles(Graph& g);
  Anomaly cycle_anomaly(const Graph& g, const std::vector<uint32_t>& edge_ids) const;
};

void Checker::State::add(const TxnTrace& t) {
  if (txns.size() >= kMaxTransactions) {
    ++beyond_limit;
    return;
  }
  const auto index = static_cast<uint32_t>(txns.size());
  TxnMeta m;
  m.begin_ns = t.begin_ns;
  m.end_ns = t.end_ns;
  m.seq = t.seq;
  m.pid = t.pid;
  m.coordinator = t.coordinator;
  m.committed = t.committed;
  if (t.committed) {
    m.node = static_cast<uint32_t>(node_txn.size());
    node_txn.push_back(index);
  }
  txns.push_back(m);

  for (const TraceItem& it : t.items) {
    const bool reads = it.op == TraceOp::kRead || it.op == TraceOp::kUpdate;
    const bool writes = it.op != TraceOp::kRead;
    Access a;
    a.table = it.table;
    a.key = it.key;
    a.slot = it.slot;
    a.txn = index;
    a.op = static_cast<uint32_t>(it.op) - 1;
    if (!t.committed) {
      // Only an aborted transaction's writes matter (G1a); version 0 means
      // it aborted before choosing one.
      if (writes && it.write_version != 0) {
        a.kind = kAbortedWrite;
        a.version = it.write_version;
        accesses.push_back(a);
      }
      continue;
    }
    if (reads) {
      a.kind = it.op == TraceOp::kRead && !it.present ? kAbsentRead : kRead;
      a.version = it.read_version;
      accesses.push_back(a);
    }
    if (writes) {
      if (it.write_version == 0) {
        internal(index, it, fmt::format("committed a {} that installed version 0 of", op_label(it.op)));
        continue;
      }
      if (it.op == TraceOp::kUpdate && it.write_version != it.read_version + 1) {
        internal(index, it,
                 fmt::format("read v{} but installed v{} (expected v{}) updating", it.read_version, it.write_version,
                             it.read_version + 1));
      }
      a.kind = kWrite;
      a.version = it.write_version;
      accesses.push_back(a);
    }
  }
}

void Checker::State::add_edge(EdgeType type, uint32_t from_access, uint32_t to_access) {
  const uint32_t from = node_of_access(from_access);
  const uint32_t to = node_of_access(to_access);
  if (from == to) return;
  Edge e;
  e.from = from;
  e.to = to;
  e.from_access = from_access;
  e.to_access = to_access;
  e.type = static_cast<uint32_t>(type);
  edges.push_back(e);
  ++report.summary.edges[static_cast<size_t>(type)];
}

// Walks each object's accesses in version order, adding dependency edges,
// stand-in writers and the non-cycle anomalies. An object is one
// incarnation (table, key, slot): version numbers order only the accesses
// of one slot, so nothing here relates two incarnations of a key.
void Checker::State::scan_objects() {
  std::sort(accesses.begin(), accesses.end());
  if (accesses.size() >= kMaxAccesses) {
    // Edge::to_access has 30 bits and stand-ins need numbers too; far beyond
    // what the memory budget allows anyway.
    Anomaly a;
    a.kind = AnomalyKind::kInternal;
    a.detail = fmt::format("{} accesses exceed the checker's limit of 2^29; history not checked", accesses.size());
    add_anomaly(std::move(a));
    accesses.clear();
  }
  scanned = accesses.size();
  edges.reserve(accesses.size() + accesses.size() / 2);

  std::vector<uint32_t> prev_writers, writers, aborted, readers, absent, pending;
  const size_t n = accesses.size();
  // Splits the accesses of one version, [g, h), by kind; sorted by (kind,
  // txn), so one entry per transaction and kind.
  auto split = [&](size_t g, size_t h) {
    writers.clear();
    aborted.clear();
    readers.clear();
    absent.clear();
    for (size_t k = g; k < h; ++k) {
      std::vector<uint32_t>* list = accesses[k].kind == kWrite          ? &writers
                                    : accesses[k].kind == kAbortedWrite ? &aborted
                                    : accesses[k].kind == kRead         ? &readers
                                                                        : &absent;
      if (list->empty() || accesses[list->back()].txn != accesses[k].txn) list->push_back(static_cast<uint32_t>(k));
    }
  };
  auto version_end = [&](size_t g, size_t j) {
    size_t h = g;
    while (h < j && accesses[h].version == accesses[g].version) ++h;
    return h;
  };
  auto object_anomaly = [&](AnomalyKind kind, const Access& first, uint64_t version) {
    Anomaly a;
    a.kind = kind;
    a.table = first.table;
    a.key = first.key;
    a.slot = first.slot;
    a.version = version;
    return a;
  };
  auto readers_name = [](size_t count, size_t offset) {
    return count == 1 ? fmt::format("T{}", offset + 1) : fmt::format("T{}..T{}", offset + 1, offset + count);
  };

  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && accesses[j].same_object(accesses[i])) ++j;
    ++report.summary.objects;
    const Access& first = accesses[i];
    const std::string object = object_name(first.table, first.key, first.slot);

    // The incarnation's start (initial_state.h): its lowest recorded
    // committed write and lowest unrecorded version read.
    std::optional<uint64_t> lowest_write, lowest_unrecorded;
    for (size_t g = i; g < j && !(lowest_write && lowest_unrecorded);) {
      const size_t h = version_end(g, j);
      split(g, h);
      if (!writers.empty() && !lowest_write) lowest_write = accesses[g].version;
      if (writers.empty() && aborted.empty() && !readers.empty() && !lowest_unrecorded) {
        lowest_unrecorded = accesses[g].version;
      }
      g = h;
    }
    const IncarnationStart start = initial.start(first.table, first.key, lowest_unrecorded, lowest_write);

    prev_writers.clear();
    pending.clear();
    for (size_t g = i; g < j;) {
      const size_t h = version_end(g, j);
      const uint64_t version = accesses[g].version;
      split(g, h);

      if (!writers.empty()) {
        if (writers.size() > 1) {
          Anomaly a = object_anomaly(AnomalyKind::kLostUpdate, first, version);
          for (uint32_t w : writers) a.txns.push_back(ref(accesses[w].txn));
          a.detail = fmt::format("{} committed transactions (T1..T{}) all installed {} v{}", writers.size(),
                                 writers.size(), object, version);
          add_anomaly(std::move(a));
        }
      } else if (!readers.empty() && !aborted.empty()) {
        // The version order of a rolled-back version is unknown (the next
        // committed writer reuses its number), so these reads get no edges.
        Anomaly a = object_anomaly(AnomalyKind::kG1a, first, version);
        for (uint32_t w : aborted) a.txns.push_back(ref(accesses[w].txn));
        for (uint32_t r : readers) a.txns.push_back(ref(accesses[r].txn));
        a.detail = fmt::format("committed {} read {} v{}, which only aborted {} installed",
                               readers_name(readers.size(), aborted.size()), object, version,
                               readers_name(aborted.size(), 0));
        add_anomaly(std::move(a));
        g = h;
        continue;
      } else if (!readers.empty() && version < start.floor) {
        // Below the version the run began with: no writer could have
        // installed it, so it gets none (and no edges).
        Anomaly a = object_anomaly(AnomalyKind::kGarbageRead, first, version);
        for (uint32_t r : readers) a.txns.push_back(ref(accesses[r].txn));
        a.detail = fmt::format("{} read {} v{}, below v{}, the version it was loaded with before the run",
                               readers_name(readers.size(), 0), object, version, start.floor);
        add_anomaly(std::move(a));
        g = h;
        continue;
      } else if (!readers.empty()) {
        // Read, but no recorded transaction installed it: a stand-in writer
        // takes its place in the version order.
        const bool is_initial = start.initial == version;
        if (!is_initial && options.complete) {
          Anomaly a = object_anomaly(AnomalyKind::kGarbageRead, first, version);
          for (uint32_t r : readers) a.txns.push_back(ref(accesses[r].txn));
          const std::string why =
              start.initial ? fmt::format("and its initial state is v{}", *start.initial)
              : initial.known()
                  ? std::string("and the key was absent when the run began")
                  : fmt::format("above v{}, a committed version, so not the initial state", lowest_write.value_or(0));
          a.detail = fmt::format("{} read {} v{}, which no transaction in the history installed, {}",
                                 readers_name(readers.size(), 0), object, version, why);
          add_anomaly(std::move(a));
        }
        Access w = first;
        w.version = version;
        w.kind = kWrite;
        w.txn = 0;
        standins.push_back(w);
        standin_roles.push_back(is_initial ? TxnRole::kInitial : TxnRole::kUnrecorded);
        ++report.summary.standins;
        if (is_initial) ++report.summary.initial_standins;
        writers.assign(1, static_cast<uint32_t>(scanned + standins.size() - 1));
      } else {
        // Absent-key reads only: they precede the next writer.
        pending.insert(pending.end(), absent.begin(), absent.end());
        g = h;
        continue;
      }

      for (uint32_t p : prev_writers) {
        for (uint32_t w : writers) add_edge(EdgeType::kWW, p, w);
      }
      for (uint32_t r : pending) {
        for (uint32_t w : writers) add_edge(EdgeType::kRW, r, w);
      }
      pending.clear();
      for (uint32_t w : writers) {
        for (uint32_t r : readers) add_edge(EdgeType::kWR, w, r);
        for (uint32_t r : absent) add_edge(EdgeType::kWR, w, r);
      }
      prev_writers = writers;
      pending.insert(pending.end(), readers.begin(), readers.end());
      pending.insert(pending.end(), absent.begin(), absent.end());
      g = h;
    }
    i = j;
  }
  report.summary.accesses = n;
  accesses.insert(accesses.end(), standins.begin(), standins.end());
}

// Real-time order with O(n) edges: committed transactions sorted by end
// time get time points V_0 -> V_1 -> ... (one per transaction, in that
// order); T -> V_pos(T), and V_k -> T' for the last k whose end time is
// below T'.begin. Then T1 reaches T2 through the chain exactly when
// T1.end < T2.begin. Time points are numbered after every real node
// (transactions and stand-ins); stand-ins get no real-time edges.
void Checker::State::add_realtime_edges() {
  const auto n = static_cast<uint32_t>(node_txn.size());
  if (n == 0) return;
  const uint32_t base = real_nodes();
  auto end_of = [&](uint32_t node) {
    const TxnMeta& m = txns[node_txn[node]];
    return std::max(m.end_ns, m.begin_ns);  // a clock step backwards must not make T precede itself
  };
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const uint64_t ea = end_of(a), eb = end_of(b);
    return ea != eb ? ea < eb : a < b;
  });
  std::vector<uint64_t> ends(n);
  for (uint32_t k = 0; k < n; ++k) ends[k] = end_of(order[k]);

  auto push = [&](uint32_t from, uint32_t to) {
    Edge e;
    e.from = from;
    e.to = to;
    e.type = static_cast<uint32_t>(EdgeType::kRT);
    edges.push_back(e);
    ++report.summary.edges[static_cast<size_t>(EdgeType::kRT)];
  };
  for (uint32_t k = 0; k < n; ++k) {
    push(order[k], base + k);
    if (k + 1 < n) push(base + k, base + k + 1);
  }
  for (uint32_t node = 0; node < n; ++node) {
    const uint64_t begin = txns[node_txn[node]].begin_ns;
    const auto k = static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), begin) - ends.begin());
    if (k > 0) push(base + static_cast<uint32_t>(k - 1), node);
  }
}

Anomaly Checker::State::cycle_anomaly(const Graph& g, const std::vector<uint32_t>& edge_ids) const {
  struct RawStep {
    uint32_t from;
    uint32_t to;
    uint32_t edge;  // the dependency edge; unused for rt
    EdgeType type;
  };
  std::vector<RawStep> raw;
  for (size_t i = 0; i < edge_ids.size(); ++i) {
    const Edge& e = g.edge(edge_ids[i]);
    if (!g.is_virtual(e.to)) {
      if (!g.is_virtual(e.from)) raw.push_back({e.from, e.to, edge_ids[i], e.edge_type()});
      continue;
    }
    // A run through the time chain: one real-time step to the first real
    // node after it (cycles start at a real node, so e.from is real).
    const uint32_t from = e.from;
    while (g.is_virtual(g.edge(edge_ids[i]).to)) ++i;
    raw.push_back({from, g.edge(edge_ids[i]).to, 0, EdgeType::kRT});
  }
  // Start at the transaction with the lowest history index.
  size_t start = 0;
  for (size_t i = 1; i < raw.size(); ++i) {
    if (node_order(raw[i].from) < node_order(raw[start].from)) start = i;
  }
  std::rotate(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(start), raw.end());

  Anomaly a;
  std::array<int, 4> by_type{};
  const auto k = static_cast<uint32_t>(raw.size());
  for (uint32_t i = 0; i < k; ++i) {
    const RawStep& r = raw[i];
    a.txns.push_back(node_ref(r.from));
    CycleStep s;
    s.from = i;
    s.to = (i + 1) % k;
    s.type = r.type;
    if (r.type != EdgeType::kRT) {
      const Edge& e = g.edge(r.edge);
      const Access& x = accesses[e.from_access];
      const Access& y = accesses[e.to_access];
      s.table = x.table;
      s.key = x.key;
      s.slot = x.slot;
      s.from_version = x.version;
      s.to_version = y.version;
    }
    ++by_type[static_cast<size_t>(r.type)];
    a.steps.push_back(s);
  }
  const int rw = by_type[static_cast<size_t>(EdgeType::kRW)];
  const int wr = by_type[static_cast<size_t>(EdgeType::kWR)];
  a.realtime = by_type[static_cast<size_t>(EdgeType::kRT)] > 0;
  a.kind = rw > 1    ? AnomalyKind::kG2
           : rw == 1 ? AnomalyKind::kGSingle
           : wr > 0  ? AnomalyKind::kG1c
                     : AnomalyKind::kG0;
  static constexpr std::array<std::string_view, 5> kWhat = {
      "write cycle", "", "circular information flow", "cycle with one anti-dependency (read skew)",
      "anti-dependency cycle"};
  a.detail = fmt::format("{} over {} transaction{}", kWhat[static_cast<size_t>(a.kind)], k, k == 1 ? "" : "s");
  if (a.realtime) a.detail += "; needs real-time order: a strict-serializability violation (real-time)";
  return a;
}

void Checker::State::find_cycles(Graph& g) {
  std::vector<std::vector<uint32_t>> dependency;
  g.components(kDependencyEdges, {}, &dependency);
  report.summary.dependency_components = dependency.size();

  constexpr uint8_t kWW = edge_bit(EdgeType::kWW);
  constexpr uint8_t kWWWR = kWW | edge_bit(EdgeType::kWR);
  std::vector<std::vector<uint32_t>> sub;
  std::vector<uint32_t> cycle, path;
  for (const std::vector<uint32_t>& d : dependency) {
    // The weakest edge set that still closes a cycle in this component.
    bool found = false;
    for (const uint8_t mask : {kWW, kWWWR}) {
      sub.clear();
      g.components(mask, d, &sub);
      if (!sub.empty() && g.shortest_path(sub[0][0], sub[0][0], mask, sub[0], &cycle)) {
        found = true;
        break;
      }
    }
    // G-single: an anti-dependency u -> v closed by a ww/wr path v ~> u.
    int attempts = 0;
    for (size_t i = 0; !found && i < d.size() && attempts < kGSingleAttempts; ++i) {
      const uint32_t u = d[i];
      const auto end = static_cast<uint32_t>(g.first_edge(u) + g.out(u).size());
      for (uint32_t id = g.first_edge(u); id < end; ++id) {
        const Edge& e = g.edge(id);
        if (e.edge_type() != EdgeType::kRW || !std::binary_search(d.begin(), d.end(), e.to)) continue;
        if (g.shortest_path(e.to, u, kWWWR, d, &path)) {
          cycle.assign(1, id);
          cycle.insert(cycle.end(), path.begin(), path.end());
          found = true;
          break;
        }
        if (++attempts >= kGSingleAttempts) break;
      }
    }
    if (!found) found = g.shortest_path(d[0], d[0], kDependencyEdges, d, &cycle);
    if (found) add_anomaly(cycle_anomaly(g, cycle));
  }

  if (!options.realtime) return;
  std::vector<uint8_t> on_dependency_cycle(g.real_nodes(), 0);
  for (const auto& d : dependency) {
    for (uint32_t v : d) on_dependency_cycle[v] = 1;
  }
  std::vector<std::vector<uint32_t>> full;
  g.components(kAllEdges, {}, &full);
  report.summary.realtime_components = full.size();
  for (const std::vector<uint32_t>& c : full) {
    // Components are sorted, real nodes first.
    for (uint32_t v : c) {
      if (g.is_virtual(v)) break;
      if (on_dependency_cycle[v]) continue;
      if (g.shortest_path(v, v, kAllEdges, c, &cycle)) add_anomaly(cycle_anomaly(g, cycle));
      break;
    }
  }
}

Checker::Checker(CheckOptions options, InitialState initial) : s_(std::make_unique<State>()) {
  s_->options = options;
  s_->initial = std::move(initial);
  s_->report.options = options;
}

Checker::~Checker() = default;

void Checker::add(const TxnTrace& t) { s_->add(t); }

Report Checker::finish() {
  State& s = *s_;
  Summary& sum = s.report.summary;
  sum.transactions = s.txns.size() + s.beyond_limit;
  sum.committed = s.node_txn.size();
  sum.aborted = s.txns.size() - s.node_txn.size();
  if (s.beyond_limit > 0) {
    Anomaly a;
    a.kind = AnomalyKind::kInternal;
    a.detail = fmt::format("{} transactions beyond the checker's limit of 2^28 were not checked", s.beyond_limit);
    s.add_anomaly(std::move(a));
  }
  s.scan_objects();
  const auto committed = static_cast<uint32_t>(s.node_txn.size());
  if (s.options.realtime) s.add_realtime_edges();
  Graph g(s.real_nodes(), s.options.realtime ? committed : 0, std::move(s.edges));
  s.edges = {};
  s.find_cycles(g);
  Report out = std::move(s.report);
  InitialState initial = std::move(s.initial);
  s_ = std::make_unique<State>();
  s_->options = out.options;
  s_->initial = std::move(initial);
  s_->report.options = out.options;
  return out;
}

Report check(const std::vector<TxnTrace>& txns, CheckOptions options, const InitialState& initial) {
  Checker c(options, initial);
  for (const TxnTrace& t : txns) c.add(t);
  return c.finish();
}

Report check(const History& history, CheckOptions options) { return check(history.txns, options, history.initial); }

}  // namespace pandora::history
