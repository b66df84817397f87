#include "litmus/history/export_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <tuple>

namespace pandora::history {
namespace {

constexpr size_t kSpillBytes = 1 << 20;

bool is_write(TraceOp op) { return op != TraceOp::kRead; }
bool is_read(TraceOp op) { return op == TraceOp::kRead || op == TraceOp::kUpdate; }

}  // namespace

Result<uint64_t> pack_object(uint32_t table, uint64_t key) {
  if (table >= (uint64_t{1} << kObjectTableBits) || key >= (uint64_t{1} << kObjectKeyBits)) {
    return Status(Errc::kUnsupported, fmt::format("object t{}:k{} does not fit the export's object encoding "
                                                  "(table << {} | key needs table < 2^{} and key < 2^{})",
                                                  table, key, kObjectKeyBits, kObjectTableBits, kObjectKeyBits));
  }
  return uint64_t{table} << kObjectKeyBits | key;
}

bool ExportIndex::Version::operator<(const Version& o) const {
  return std::tie(table, key, version, txn) < std::tie(o.table, o.key, o.version, o.txn);
}

ExportIndex::ExportIndex(const std::vector<TxnTrace>& history) : history_(history) {
  std::vector<std::pair<uint32_t, uint64_t>> objects;
  bool any = false;
  for (size_t i = 0; i < history.size(); ++i) {
    const TxnTrace& t = history[i];
    first_ns_ = any ? std::min(first_ns_, t.begin_ns) : t.begin_ns;
    last_ns_ = any ? std::max(last_ns_, std::max(t.end_ns, t.begin_ns)) : std::max(t.end_ns, t.begin_ns);
    any = true;
    for (const TraceItem& it : t.items) {
      objects.emplace_back(it.table, it.key);
      if (!is_write(it.op) || it.write_version == 0) continue;
      (t.committed ? committed_ : aborted_).push_back({it.table, it.key, it.write_version, i});
    }
  }
  std::sort(objects.begin(), objects.end());
  objects_ = static_cast<uint64_t>(std::unique(objects.begin(), objects.end()) - objects.begin());

  for (Version& v : committed_) v.txn = 0;  // uniqueness is per version
  std::sort(committed_.begin(), committed_.end());
  committed_.erase(std::unique(committed_.begin(), committed_.end(),
                               [](const Version& a, const Version& b) {
                                 return a.table == b.table && a.key == b.key && a.version == b.version;
                               }),
                   committed_.end());
  std::erase_if(aborted_, [this](const Version& v) { return committed_write(v.table, v.key, v.version); });
  std::sort(aborted_.begin(), aborted_.end());
}

bool ExportIndex::committed_write(uint32_t table, uint64_t key, uint64_t v) const {
  return std::binary_search(committed_.begin(), committed_.end(), Version{table, key, v, 0});
}

uint64_t ExportIndex::aborted_writer(uint32_t table, uint64_t key, uint64_t v) const {
  const auto it = std::lower_bound(aborted_.begin(), aborted_.end(), Version{table, key, v, 0});
  if (it == aborted_.end() || it->table != table || it->key != key || it->version != v) return UINT64_MAX;
  return it->txn;
}

bool ExportIndex::read_value(uint32_t table, uint64_t key, uint64_t v, uint64_t* value) const {
  *value = v;
  if (committed_write(table, key, v) || aborted_writer(table, key, v) != UINT64_MAX) return true;
  // Lowest committed version of the object.
  const auto it = std::lower_bound(committed_.begin(), committed_.end(), Version{table, key, 0, 0});
  const bool any_committed = it != committed_.end() && it->table == table && it->key == key;
  return any_committed && v > it->version;
}

Status ExportIndex::ops(uint64_t index, std::vector<ExportOp>* out) const {
  out->clear();
  const TxnTrace& t = history_[index];
  std::vector<uint64_t> written;  // objects this transaction wrote so far
  for (const TraceItem& it : t.items) {
    Result<uint64_t> object = pack_object(it.table, it.key);
    if (!object.is_ok()) return object.status();
    const bool wrote_before = std::find(written.begin(), written.end(), *object) != written.end();
    if (is_read(it.op) && !wrote_before) {
      ExportOp op;
      op.object = *object;
      op.has_value = t.committed && read_value(it.table, it.key, it.read_version, &op.value);
      out->push_back(op);
    }
    if (!is_write(it.op)) continue;
    if (!t.committed && (it.write_version == 0 || aborted_writer(it.table, it.key, it.write_version) != index)) {
      continue;
    }
    ExportOp op;
    op.write = true;
    op.object = *object;
    op.has_value = true;
    op.value = it.write_version;
    out->push_back(op);
    written.push_back(*object);
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
