#include "litmus/history/export_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <tuple>

#include "litmus/history/checker.h"

namespace pandora::history {
namespace {

constexpr size_t kSpillBytes = 1 << 20;
constexpr size_t kCompactMin = 1 << 16;  // incarnations collected before the first compaction

bool is_write(TraceOp op) { return op != TraceOp::kRead; }
bool is_read(TraceOp op) { return op == TraceOp::kRead || op == TraceOp::kUpdate; }

}  // namespace

Result<uint64_t> pack_object(uint32_t table, uint64_t key, uint64_t incarnation, uint64_t slot) {
  if (incarnation == 0) {
    if (table >= (uint64_t{1} << kObjectTableBits) || key >= (uint64_t{1} << kObjectKeyBits)) {
      return Status(Errc::kUnsupported, fmt::format("object {} does not fit the export's object encoding "
                                                    "(table << {} | key needs table < 2^{} and key < 2^{})",
                                                    object_name(table, key, slot), kObjectKeyBits, kObjectTableBits,
                                                    kObjectKeyBits));
    }
    return uint64_t{table} << kObjectKeyBits | key;
  }
  if (table >= (uint64_t{1} << kObjectMovedTableBits) || key >= (uint64_t{1} << kObjectKeyBits) ||
      incarnation >= (uint64_t{1} << kObjectIncarnationBits)) {
    return Status(Errc::kUnsupported,
                  fmt::format("object {} (incarnation {} of the key) does not fit the export's object encoding "
                              "((incarnation << {} | table) << {} | key needs incarnation < 2^{}, table < 2^{} "
                              "and key < 2^{})",
                              object_name(table, key, slot), incarnation, kObjectMovedTableBits, kObjectKeyBits,
                              kObjectIncarnationBits, kObjectMovedTableBits, kObjectKeyBits));
  }
  return (incarnation << kObjectMovedTableBits | table) << kObjectKeyBits | key;
}

bool ExportIndex::Version::operator<(const Version& o) const {
  return std::tie(object, version, txn) < std::tie(o.object, o.version, o.txn);
}

ExportIndex::ExportIndex(const History& h) : history_(h.txns) {
  const std::vector<TxnTrace>& history = h.txns;
  bool any = false;
  // Compacting whenever the list doubles keeps it near the number of
  // distinct incarnations instead of one entry per access.
  size_t compact_at = kCompactMin;
  for (const TxnTrace& t : history) {
    first_ns_ = any ? std::min(first_ns_, t.begin_ns) : t.begin_ns;
    last_ns_ = any ? std::max(last_ns_, std::max(t.end_ns, t.begin_ns)) : std::max(t.end_ns, t.begin_ns);
    any = true;
    for (const TraceItem& it : t.items) incarnations_.push_back({it.table, it.key, it.slot, t.begin_ns, 0});
    if (incarnations_.size() >= compact_at) {
      compact_incarnations();
      compact_at = std::max(kCompactMin, 2 * incarnations_.size());
    }
  }
  compact_incarnations();
  number_incarnations();
  if (!status_.is_ok()) return;

  for (size_t i = 0; i < history.size(); ++i) {
    const TxnTrace& t = history[i];
    for (const TraceItem& it : t.items) {
      if (!is_write(it.op) || it.write_version == 0) continue;
      (t.committed ? committed_ : aborted_).push_back({object_of(it), it.write_version, i});
    }
  }
  for (Version& v : committed_) v.txn = 0;  // uniqueness is per version
  std::sort(committed_.begin(), committed_.end());
  committed_.erase(std::unique(committed_.begin(), committed_.end(),
                               [](const Version& a, const Version& b) {
                                 return a.object == b.object && a.version == b.version;
                               }),
                   committed_.end());
  std::erase_if(aborted_, [this](const Version& v) { return committed_write(v.object, v.version); });
  std::sort(aborted_.begin(), aborted_.end());
  add_initial_writes(h.initial);
}

void ExportIndex::add_initial_writes(const InitialState& initial) {
  auto unrecorded = [this](uint64_t object, uint64_t v) {
    return !committed_write(object, v) && aborted_writer(object, v) == UINT64_MAX;
  };
  for (const TxnTrace& t : history_) {
    if (!t.committed) continue;
    for (const TraceItem& it : t.items) {
      if (!is_read(it.op) || !it.present) continue;
      Incarnation& inc = incarnations_[incarnation_of(it)];
      if (unrecorded(inc.object, it.read_version)) {
        inc.lowest_unrecorded = std::min(inc.lowest_unrecorded.value_or(UINT64_MAX), it.read_version);
      }
    }
  }
  std::vector<std::optional<uint64_t>> initial_of(incarnations_.size());
  for (size_t i = 0; i < incarnations_.size(); ++i) {
    const Incarnation& inc = incarnations_[i];
    const auto lowest = std::lower_bound(committed_.begin(), committed_.end(), Version{inc.object, 0, 0});
    std::optional<uint64_t> lowest_write;
    if (lowest != committed_.end() && lowest->object == inc.object) lowest_write = lowest->version;
    initial_of[i] = initial.start(inc.table, inc.key, inc.lowest_unrecorded, lowest_write).initial;
  }
  for (const TxnTrace& t : history_) {
    if (!t.committed) continue;
    for (const TraceItem& it : t.items) {
      if (!is_read(it.op) || !it.present) continue;
      const size_t i = incarnation_of(it);
      Incarnation& inc = incarnations_[i];
      if (initial_of[i] == it.read_version && !committed_write(inc.object, it.read_version)) inc.initial_read = true;
    }
  }
  for (size_t i = 0; i < incarnations_.size(); ++i) {
    const Incarnation& inc = incarnations_[i];
    if (inc.initial_read) initial_writes_.push_back({true, inc.object, true, *initial_of[i]});
  }
  std::sort(initial_writes_.begin(), initial_writes_.end(),
            [](const ExportOp& a, const ExportOp& b) { return a.object < b.object; });
  // The initial transaction is a committed writer like any other: aborted
  // writes of its versions are not exported.
  for (const ExportOp& w : initial_writes_) committed_.push_back({w.object, w.value, 0});
  std::sort(committed_.begin(), committed_.end());
  std::erase_if(aborted_, [this](const Version& v) { return committed_write(v.object, v.version); });
}

// Sorts incarnations_ by (table, key, slot) and drops duplicates, keeping
// each incarnation's earliest access.
void ExportIndex::compact_incarnations() {
  std::sort(incarnations_.begin(), incarnations_.end(), [](const Incarnation& a, const Incarnation& b) {
    return std::tie(a.table, a.key, a.slot, a.first_ns) < std::tie(b.table, b.key, b.slot, b.first_ns);
  });
  incarnations_.erase(std::unique(incarnations_.begin(), incarnations_.end(),
                                  [](const Incarnation& a, const Incarnation& b) {
                                    return a.table == b.table && a.key == b.key && a.slot == b.slot;
                                  }),
                      incarnations_.end());
}

// Numbers each key's incarnations (compacted) by first access and packs
// their objects.
void ExportIndex::number_incarnations() {
  uint32_t max_table = 0;
  bool moved = false;  // some key has a second incarnation
  std::vector<size_t> order;
  for (size_t i = 0; i < incarnations_.size();) {
    size_t j = i;
    while (j < incarnations_.size() && incarnations_[j].table == incarnations_[i].table &&
           incarnations_[j].key == incarnations_[i].key) {
      ++j;
    }
    order.resize(j - i);
    for (size_t k = 0; k < order.size(); ++k) order[k] = i + k;
    std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
      return std::tie(incarnations_[a].first_ns, incarnations_[a].slot) <
             std::tie(incarnations_[b].first_ns, incarnations_[b].slot);
    });
    for (size_t n = 0; n < order.size(); ++n) {
      Incarnation& inc = incarnations_[order[n]];
      Result<uint64_t> object = pack_object(inc.table, inc.key, n, inc.slot);
      if (!object.is_ok()) {
        status_ = object.status();
        return;
      }
      inc.object = *object;
    }
    max_table = std::max(max_table, incarnations_[i].table);
    moved |= order.size() > 1;
    i = j;
  }
  if (moved && max_table >= (uint32_t{1} << kObjectMovedTableBits)) {
    status_ = Status(Errc::kUnsupported,
                     fmt::format("the history has keys with several incarnations (slots) and table {} >= 2^{}: "
                                 "the export's object encoding cannot keep their objects apart",
                                 max_table, kObjectMovedTableBits));
  }
}

size_t ExportIndex::incarnation_of(const TraceItem& it) const {
  const auto at = std::lower_bound(incarnations_.begin(), incarnations_.end(), it, [](const Incarnation& a,
                                                                                       const TraceItem& b) {
    return std::tie(a.table, a.key, a.slot) < std::tie(b.table, b.key, b.slot);
  });
  return static_cast<size_t>(at - incarnations_.begin());  // every item of the history has its incarnation
}

bool ExportIndex::committed_write(uint64_t object, uint64_t v) const {
  return std::binary_search(committed_.begin(), committed_.end(), Version{object, v, 0});
}

uint64_t ExportIndex::aborted_writer(uint64_t object, uint64_t v) const {
  const auto it = std::lower_bound(aborted_.begin(), aborted_.end(), Version{object, v, 0});
  if (it == aborted_.end() || it->object != object || it->version != v) return UINT64_MAX;
  return it->txn;
}

Status ExportIndex::ops(uint64_t index, std::vector<ExportOp>* out) const {
  out->clear();
  if (!status_.is_ok()) return status_;
  const TxnTrace& t = history_[index];
  std::vector<uint64_t> written;  // objects this transaction wrote so far
  for (const TraceItem& it : t.items) {
    const uint64_t object = object_of(it);
    const bool wrote_before = std::find(written.begin(), written.end(), object) != written.end();
    if (is_read(it.op) && !wrote_before) {
      ExportOp op;
      op.object = object;
      // Committed reads carry their version (the initial one included:
      // the initial transaction wrote it); an aborted one's carry nothing.
      op.has_value = t.committed;
      op.value = it.read_version;
      out->push_back(op);
    }
    if (!is_write(it.op)) continue;
    if (!t.committed && (it.write_version == 0 || aborted_writer(object, it.write_version) != index)) continue;
    ExportOp op;
    op.write = true;
    op.object = object;
    op.has_value = true;
    op.value = it.write_version;
    out->push_back(op);
    written.push_back(object);
  }
  return Status::ok();
}

void TextSink::put(std::string_view s) {
  buf_ += s;
  if (file_ != nullptr && buf_.size() >= kSpillBytes) spill();
}

void TextSink::spill() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) failed_ = true;
  buf_.clear();
}

bool TextSink::finish() {
  if (file_ != nullptr) {
    spill();
    if (std::fflush(file_) != 0) failed_ = true;
  }
  return !failed_;
}

std::string rfc3339_utc(uint64_t ns) {
  const auto secs = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}+00:00", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ns % 1000000000);
}

}  // namespace pandora::history
