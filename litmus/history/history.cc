#include "litmus/history/history.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "litmus/history/json.h"

namespace pandora::history {
namespace {

constexpr size_t kWriteBuffer = 1 << 20;

// abort_reason_name() is the single source of the names; this inverts it
// once. Values it does not name come back as "unknown" and are skipped.
std::optional<AbortReason> parse_reason(std::string_view name) {
  static const auto kNames = [] {
    std::array<std::string_view, 256> names{};
    for (size_t r = 0; r < names.size(); ++r) names[r] = abort_reason_name(static_cast<AbortReason>(r));
    return names;
  }();
  if (name == "unknown") return std::nullopt;
  for (size_t r = 0; r < kNames.size(); ++r) {
    if (kNames[r] == name) return static_cast<AbortReason>(r);
  }
  return std::nullopt;
}

std::optional<TraceOp> parse_op(std::string_view s) {
  if (s == "r") return TraceOp::kRead;
  if (s == "u") return TraceOp::kUpdate;
  if (s == "i") return TraceOp::kInsert;
  if (s == "d") return TraceOp::kDelete;
  return std::nullopt;
}

// Tracks which of a fixed set of fields an object had, to report missing and
// repeated ones. The first `required` names are required, the rest optional
// (fields added to the format later, so that older files still read).
template <size_t N>
class FieldSet {
 public:
  explicit FieldSet(const std::array<std::string_view, N>& names, size_t required = N)
      : names_(names), required_(required) {}

  // The field's index, or N for an unknown name. `repeated` says it was seen.
  size_t mark(std::string_view name, bool* repeated) {
    for (size_t i = 0; i < N; ++i) {
      if (names_[i] == name) {
        *repeated = seen_[i];
        seen_[i] = true;
        return i;
      }
    }
    *repeated = false;
    return N;
  }
  // The first required field not seen, or empty.
  std::string_view missing() const {
    for (size_t i = 0; i < required_; ++i) {
      if (!seen_[i]) return names_[i];
    }
    return {};
  }

 private:
  const std::array<std::string_view, N>& names_;
  size_t required_;
  std::array<bool, N> seen_{};
};

constexpr std::array<std::string_view, 9> kTxnFields = {"client", "pid",     "coordinator", "seq",  "begin_ns",
                                                        "end_ns", "outcome", "reason",      "items"};
// "slot" came later: optional, 0 when absent.
constexpr std::array<std::string_view, 9> kItemFields = {"table", "key", "op",   "present", "rv",
                                                         "wv",    "rval", "wval", "slot"};
constexpr size_t kRequiredItemFields = 8;

bool parse_bounded(json::Cursor& c, std::string_view field, uint64_t max, uint64_t* out) {
  const size_t at = c.offset();
  if (!c.parse_u64(out)) return false;
  if (*out > max) return c.fail_at(at, fmt::format("\"{}\" is {}, above its maximum {}", field, *out, max));
  return true;
}

bool parse_item(json::Cursor& c, TraceItem* item) {
  FieldSet<kItemFields.size()> seen(kItemFields, kRequiredItemFields);
  const size_t start = c.offset();
  std::string s;
  uint64_t v = 0;
  const bool parsed = c.parse_object([&](const std::string& key) {
    bool repeated = false;
    const size_t field = seen.mark(key, &repeated);
    if (field == kItemFields.size()) return c.fail(fmt::format("unknown item field \"{}\"", key));
    if (repeated) return c.fail(fmt::format("item field \"{}\" given twice", key));
    switch (field) {
      case 0:
        if (!parse_bounded(c, "table", UINT32_MAX, &v)) return false;
        item->table = static_cast<uint32_t>(v);
        return true;
      case 1: return c.parse_u64(&item->key);
      case 2: {
        const size_t at = c.offset();
        if (!c.parse_string(&s)) return false;
        const auto op = parse_op(s);
        if (!op) return c.fail_at(at, fmt::format("\"op\" is \"{}\"; expected \"r\", \"u\", \"i\" or \"d\"", s));
        item->op = *op;
        return true;
      }
      case 3: return c.parse_bool(&item->present);
      case 4: return c.parse_u64(&item->read_version);
      case 5: return c.parse_u64(&item->write_version);
      case 6: return c.parse_u64(&item->read_value);
      case 7: return c.parse_u64(&item->write_value);
      default: return c.parse_u64(&item->slot);
    }
  });
  if (!parsed) return false;
  if (auto m = seen.missing(); !m.empty()) return c.fail_at(start, fmt::format("item without \"{}\"", m));
  return true;
}

}  // namespace

std::string_view op_name(TraceOp op) {
  switch (op) {
    case TraceOp::kRead: return "r";
    case TraceOp::kUpdate: return "u";
    case TraceOp::kInsert: return "i";
    case TraceOp::kDelete: return "d";
  }
  return "?";
}

std::string client_name(uint16_t pid, uint16_t coordinator) { return fmt::format("{}.{}", pid, coordinator); }

void append_txn_line(std::string& out, const TxnTrace& t) {
  out += "{\"client\":";
  json::append_string(out, client_name(t.pid, t.coordinator));
  out += ",\"pid\":";
  json::append_u64(out, t.pid);
  out += ",\"coordinator\":";
  json::append_u64(out, t.coordinator);
  out += ",\"seq\":";
  json::append_u64(out, t.seq);
  out += ",\"begin_ns\":";
  json::append_u64(out, t.begin_ns);
  out += ",\"end_ns\":";
  json::append_u64(out, t.end_ns);
  out += t.committed ? ",\"outcome\":\"committed\"" : ",\"outcome\":\"aborted\"";
  out += ",\"reason\":";
  json::append_string(out, abort_reason_name(t.reason));
  out += ",\"items\":[";
  for (size_t i = 0; i < t.items.size(); ++i) {
    const TraceItem& it = t.items[i];
    if (i > 0) out.push_back(',');
    out += "{\"table\":";
    json::append_u64(out, it.table);
    out += ",\"key\":";
    json::append_u64(out, it.key);
    if (it.slot != 0) {  // 0 (unknown) is the default: lines without a slot stay as they were
      out += ",\"slot\":";
      json::append_u64(out, it.slot);
    }
    out += ",\"op\":\"";
    out += op_name(it.op);
    out += "\",\"present\":";
    json::append_bool(out, it.present);
    out += ",\"rv\":";
    json::append_u64(out, it.read_version);
    out += ",\"wv\":";
    json::append_u64(out, it.write_version);
    out += ",\"rval\":";
    json::append_u64(out, it.read_value);
    out += ",\"wval\":";
    json::append_u64(out, it.write_value);
    out.push_back('}');
  }
  out += "]}";
}

std::string format_txn_line(const TxnTrace& t) {
  std::string out;
  out.reserve(200 + 120 * t.items.size());
  append_txn_line(out, t);
  return out;
}

Status parse_txn_line(std::string_view line, TxnTrace* out) {
  json::Cursor c(line);
  FieldSet<kTxnFields.size()> seen(kTxnFields);
  TxnTrace t;
  std::string s;
  std::string client;
  size_t client_at = 0;
  uint64_t v = 0;
  const bool parsed = c.parse_object([&](const std::string& key) {
    bool repeated = false;
    const size_t field = seen.mark(key, &repeated);
    if (field == kTxnFields.size()) return c.fail(fmt::format("unknown field \"{}\"", key));
    if (repeated) return c.fail(fmt::format("field \"{}\" given twice", key));
    switch (field) {
      case 0:
        c.skip_ws();  // so that client_at points at the string
        client_at = c.offset();
        return c.parse_string(&client);
      case 1:
        if (!parse_bounded(c, "pid", UINT16_MAX, &v)) return false;
        t.pid = static_cast<uint16_t>(v);
        return true;
      case 2:
        if (!parse_bounded(c, "coordinator", UINT16_MAX, &v)) return false;
        t.coordinator = static_cast<uint16_t>(v);
        return true;
      case 3:
        if (!parse_bounded(c, "seq", UINT32_MAX, &v)) return false;
        t.seq = static_cast<uint32_t>(v);
        return true;
      case 4: return c.parse_u64(&t.begin_ns);
      case 5: return c.parse_u64(&t.end_ns);
      case 6: {
        const size_t at = c.offset();
        if (!c.parse_string(&s)) return false;
        if (s == "committed") {
          t.committed = true;
        } else if (s == "aborted") {
          t.committed = false;
        } else {
          return c.fail_at(at, fmt::format("\"outcome\" is \"{}\"; expected \"committed\" or \"aborted\"", s));
        }
        return true;
      }
      case 7: {
        const size_t at = c.offset();
        if (!c.parse_string(&s)) return false;
        const auto r = parse_reason(s);
        if (!r) return c.fail_at(at, fmt::format("unknown abort reason \"{}\"", s));
        t.reason = *r;
        return true;
      }
      default:
        return c.parse_array([&] {
          t.items.emplace_back();
          return parse_item(c, &t.items.back());
        });
    }
  });
  if (parsed) c.expect_end();
  if (!c.ok()) return Status(Errc::kCorrupt, c.error());
  if (auto m = seen.missing(); !m.empty()) return Status(Errc::kCorrupt, fmt::format("no \"{}\" field", m));
  if (client != client_name(t.pid, t.coordinator)) {
    return Status(Errc::kCorrupt, fmt::format("column {}: \"client\" is \"{}\" but pid.coordinator is {}", client_at + 1,
                                              client, client_name(t.pid, t.coordinator)));
  }
  if (t.committed && t.reason != AbortReason::kNone) {
    return Status(Errc::kCorrupt,
                  fmt::format("a committed transaction with abort reason \"{}\"", abort_reason_name(t.reason)));
  }
  *out = std::move(t);
  return Status::ok();
}

// ---------------------------------------------------------------------------

HistoryWriter::HistoryWriter(std::FILE* file, std::string path)
    : file_(file), buffer_(new char[kWriteBuffer]), path_(std::move(path)) {
  std::setvbuf(file_, buffer_.get(), _IOFBF, kWriteBuffer);
}

Result<std::unique_ptr<HistoryWriter>> HistoryWriter::create(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return Status(Errc::kIo, fmt::format("cannot create history file '{}': {}", path, std::strerror(errno)));
  }
  return std::unique_ptr<HistoryWriter>(new HistoryWriter(f, path));
}

HistoryWriter::~HistoryWriter() { (void)close(); }

void HistoryWriter::on_txn_end(const TxnTrace& trace) {
  std::string line;
  line.reserve(200 + 120 * trace.items.size());
  append_txn_line(line, trace);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) {
    ++dropped_;
    return;
  }
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) write_failed_ = true;
  ++written_;
}

Status HistoryWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return Status::ok();
  if (std::fflush(file_) != 0) write_failed_ = true;
  if (write_failed_) return Status(Errc::kIo, fmt::format("writing history file '{}' failed", path_));
  return Status::ok();
}

Status HistoryWriter::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return Status::ok();
  if (std::fflush(file_) != 0 || std::ferror(file_)) write_failed_ = true;
  if (std::fclose(file_) != 0) write_failed_ = true;
  file_ = nullptr;
  if (write_failed_) {
    return Status(Errc::kIo, fmt::format("writing history file '{}' failed: {}", path_, std::strerror(errno)));
  }
  return Status::ok();
}

uint64_t HistoryWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

uint64_t HistoryWriter::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

// ---------------------------------------------------------------------------

HistoryReader::HistoryReader(std::FILE* file, std::string text, std::string name)
    : file_(file), text_(std::move(text)), name_(std::move(name)) {}

HistoryReader::~HistoryReader() {
  if (file_ != nullptr) std::fclose(file_);
  std::free(buf_);  // allocated by getline()
}

Result<std::unique_ptr<HistoryReader>> HistoryReader::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    return Status(Errc::kIo, fmt::format("cannot open history file '{}': {}", path, std::strerror(errno)));
  }
  return std::unique_ptr<HistoryReader>(new HistoryReader(f, {}, path));
}

std::unique_ptr<HistoryReader> HistoryReader::from_text(std::string text, std::string name) {
  return std::unique_ptr<HistoryReader>(new HistoryReader(nullptr, std::move(text), std::move(name)));
}

Result<bool> HistoryReader::next_line(std::string_view* line) {
  if (file_ == nullptr) {
    if (text_pos_ >= text_.size()) return false;
    const size_t nl = text_.find('\n', text_pos_);
    const size_t end = nl == std::string::npos ? text_.size() : nl;
    *line = std::string_view(text_).substr(text_pos_, end - text_pos_);
    text_pos_ = nl == std::string::npos ? text_.size() : nl + 1;
    ++line_;
    return true;
  }
  errno = 0;
  const ssize_t n = ::getline(&buf_, &buf_cap_, file_);
  if (n < 0) {
    if (std::ferror(file_)) {
      return Status(Errc::kIo, fmt::format("{}:{}: read failed: {}", name_, line_ + 1, std::strerror(errno)));
    }
    return false;
  }
  ++line_;
  size_t len = static_cast<size_t>(n);
  if (len > 0 && buf_[len - 1] == '\n') --len;
  *line = std::string_view(buf_, len);
  return true;
}

Result<bool> HistoryReader::next(TxnTrace* out) {
  std::string_view line;
  Result<bool> got = next_line(&line);
  if (!got.is_ok() || !got.value()) return got;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
    return Status(Errc::kCorrupt, fmt::format("{}:{}: empty line (expected one transaction per line)", name_, line_));
  }
  if (Status s = parse_txn_line(line, out); !s.is_ok()) {
    return Status(Errc::kCorrupt, fmt::format("{}:{}: {}", name_, line_, s.message()));
  }
  return true;
}

namespace {

Result<std::vector<TxnTrace>> read_all(HistoryReader& reader) {
  std::vector<TxnTrace> out;
  while (true) {
    TxnTrace t;
    Result<bool> got = reader.next(&t);
    if (!got.is_ok()) return got.status();
    if (!got.value()) return out;
    out.push_back(std::move(t));
  }
}

}  // namespace

Result<std::vector<TxnTrace>> read_history(const std::string& path) {
  auto reader = HistoryReader::open(path);
  if (!reader.is_ok()) return reader.status();
  return read_all(**reader);
}

Result<std::vector<TxnTrace>> parse_history(std::string_view text, std::string name) {
  auto reader = HistoryReader::from_text(std::string(text), std::move(name));
  return read_all(*reader);
}

std::string format_history(const std::vector<TxnTrace>& history) {
  std::string out;
  for (const TxnTrace& t : history) {
    append_txn_line(out, t);
    out.push_back('\n');
  }
  return out;
}

}  // namespace pandora::history
