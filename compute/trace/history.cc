#include "compute/trace/history.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "compute/trace/json.h"

namespace pandora::history {
namespace {

constexpr size_t kWriteBuffer = 1 << 20;
constexpr std::string_view kFormatName = "pandora-history";

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

Status parse_item(const json::Json& j, size_t number, TraceItem* item) {
  const json::Fields f(j, fmt::format("item {}", number));
  // "slot" came later: optional, 0 when absent.
  if (Status s = f.check({"table", "key", "op", "present", "rv", "wv", "rval", "wval"}, {"slot"}); !s) return s;
  uint64_t table = 0;
  std::string op;
  if (Status s = f.u64("table", &table, UINT32_MAX); !s) return s;
  item->table = static_cast<uint32_t>(table);
  if (Status s = f.u64("key", &item->key); !s) return s;
  if (f.has("slot")) {
    if (Status s = f.u64("slot", &item->slot); !s) return s;
  }
  if (Status s = f.str("op", &op); !s) return s;
  const auto parsed_op = parse_op(op);
  if (!parsed_op) return f.error(fmt::format("\"op\" is \"{}\"; expected \"r\", \"u\", \"i\" or \"d\"", op));
  item->op = *parsed_op;
  if (Status s = f.boolean("present", &item->present); !s) return s;
  if (Status s = f.u64("rv", &item->read_version); !s) return s;
  if (Status s = f.u64("wv", &item->write_version); !s) return s;
  if (Status s = f.u64("rval", &item->read_value); !s) return s;
  return f.u64("wval", &item->write_value);
}

Status parse_txn(const json::Json& j, TxnTrace* t) {
  const json::Fields f(j);
  if (Status s = f.check({"client", "pid", "coordinator", "seq", "begin_ns", "end_ns", "outcome", "reason", "items"});
      !s) {
    return s;
  }
  std::string client, outcome, reason;
  uint64_t v = 0;
  if (Status s = f.u64("pid", &v, UINT16_MAX); !s) return s;
  t->pid = static_cast<uint16_t>(v);
  if (Status s = f.u64("coordinator", &v, UINT16_MAX); !s) return s;
  t->coordinator = static_cast<uint16_t>(v);
  if (Status s = f.str("client", &client); !s) return s;
  if (client != client_name(t->pid, t->coordinator)) {
    return f.error(
        fmt::format("\"client\" is \"{}\" but pid.coordinator is {}", client, client_name(t->pid, t->coordinator)));
  }
  if (Status s = f.u64("seq", &v, UINT32_MAX); !s) return s;
  t->seq = static_cast<uint32_t>(v);
  if (Status s = f.u64("begin_ns", &t->begin_ns); !s) return s;
  if (Status s = f.u64("end_ns", &t->end_ns); !s) return s;
  if (Status s = f.str("outcome", &outcome); !s) return s;
  if (outcome != "committed" && outcome != "aborted") {
    return f.error(fmt::format("\"outcome\" is \"{}\"; expected \"committed\" or \"aborted\"", outcome));
  }
  t->committed = outcome == "committed";
  if (Status s = f.str("reason", &reason); !s) return s;
  const auto r = parse_reason(reason);
  if (!r) return f.error(fmt::format("unknown abort reason \"{}\"", reason));
  t->reason = *r;
  if (t->committed && t->reason != AbortReason::kNone) {
    return f.error(fmt::format("a committed transaction with abort reason \"{}\"", reason));
  }
  const json::Json& items = j.at("items");
  if (!items.is_array()) return f.error(fmt::format("\"items\" is {}: expected an array", json::describe(items)));
  t->items.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (Status s = parse_item(items[i], i + 1, &t->items[i]); !s) return s;
  }
  return Status::ok();
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

std::string format_header(const InitialState& initial) {
  return json::dump({{"format", kFormatName}, {"version", kFormatVersion}, {"initial", initial.to_json()}});
}

std::string format_txn_line(const TxnTrace& t) {
  json::Json items = json::Json::array();
  for (const TraceItem& it : t.items) {
    json::Json item = {{"table", it.table}, {"key", it.key}};
    // 0 (unknown) is the default: lines without a slot stay as they were.
    if (it.slot != 0) item["slot"] = it.slot;
    item["op"] = op_name(it.op);
    item["present"] = it.present;
    item["rv"] = it.read_version;
    item["wv"] = it.write_version;
    item["rval"] = it.read_value;
    item["wval"] = it.write_value;
    items.push_back(std::move(item));
  }
  return json::dump({{"client", client_name(t.pid, t.coordinator)},
                     {"pid", t.pid},
                     {"coordinator", t.coordinator},
                     {"seq", t.seq},
                     {"begin_ns", t.begin_ns},
                     {"end_ns", t.end_ns},
                     {"outcome", t.committed ? "committed" : "aborted"},
                     {"reason", abort_reason_name(t.reason)},
                     {"items", std::move(items)}});
}

Result<InitialState> parse_header(std::string_view line) {
  Result<json::Json> j = json::parse(line);
  if (!j) return j.status();
  const json::Fields f(*j);
  if (j->is_object() && !j->contains("format") && j->contains("client")) {
    return f.error(fmt::format("no header line: this is a format-1 history (written before the header recorded the "
                               "store's initial state); this reader reads format {} only: record the run again",
                               kFormatVersion));
  }
  if (Status s = f.check({"format", "version", "initial"}); !s) return s;
  std::string format;
  uint64_t version = 0;
  if (Status s = f.str("format", &format); !s) return s;
  if (format != kFormatName) {
    return f.error(fmt::format("\"format\" is \"{}\": not a {} file", format, kFormatName));
  }
  if (Status s = f.u64("version", &version); !s) return s;
  if (version != kFormatVersion) {
    return f.error(fmt::format("format version {}; this reader reads version {} only", version, kFormatVersion));
  }
  return InitialState::from_json(j->at("initial"));
}

Status parse_txn_line(std::string_view line, TxnTrace* out) {
  Result<json::Json> j = json::parse(line);
  if (!j) return j.status();
  TxnTrace t;
  if (Status s = parse_txn(*j, &t); !s) return s;
  *out = std::move(t);
  return Status::ok();
}

// ---------------------------------------------------------------------------

HistoryWriter::HistoryWriter(std::FILE* file, std::string path)
    : file_(file), buffer_(new char[kWriteBuffer]), path_(std::move(path)) {
  std::setvbuf(file_, buffer_.get(), _IOFBF, kWriteBuffer);
}

Result<std::unique_ptr<HistoryWriter>> HistoryWriter::create(const std::string& path, const InitialState& initial) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return Status(Errc::kIo, fmt::format("cannot create history file '{}': {}", path, std::strerror(errno)));
  }
  std::unique_ptr<HistoryWriter> w(new HistoryWriter(f, path));
  const std::string header = format_header(initial) + "\n";
  if (std::fwrite(header.data(), 1, header.size(), f) != header.size() || std::fflush(f) != 0) {
    return Status(Errc::kIo, fmt::format("writing the header of history file '{}' failed: {}", path,
                                         std::strerror(errno)));
  }
  return w;
}

HistoryWriter::~HistoryWriter() { (void)close(); }

void HistoryWriter::on_txn_end(const TxnTrace& trace) {
  std::string line = format_txn_line(trace);
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
  return start(std::unique_ptr<HistoryReader>(new HistoryReader(f, {}, path)));
}

Result<std::unique_ptr<HistoryReader>> HistoryReader::from_text(std::string text, std::string name) {
  return start(std::unique_ptr<HistoryReader>(new HistoryReader(nullptr, std::move(text), std::move(name))));
}

Result<std::unique_ptr<HistoryReader>> HistoryReader::start(std::unique_ptr<HistoryReader> reader) {
  std::string_view line;
  Result<bool> got = reader->next_line(&line);
  if (!got) return got.status();
  if (!got.value()) {
    return Status(Errc::kCorrupt, fmt::format("{}: empty file: no header line (a history starts with "
                                              "{{\"format\":\"pandora-history\",...}})",
                                              reader->name_));
  }
  Result<InitialState> initial = parse_header(line);
  if (!initial) return Status(Errc::kCorrupt, fmt::format("{}:1: {}", reader->name_, initial.status().message()));
  reader->initial_ = std::move(*initial);
  return reader;
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

Result<History> read_all(Result<std::unique_ptr<HistoryReader>> reader) {
  if (!reader) return reader.status();
  History out;
  out.initial = (*reader)->initial();
  while (true) {
    TxnTrace t;
    Result<bool> got = (*reader)->next(&t);
    if (!got.is_ok()) return got.status();
    if (!got.value()) return out;
    out.txns.push_back(std::move(t));
  }
}

}  // namespace

Result<History> read_history(const std::string& path) { return read_all(HistoryReader::open(path)); }

Result<History> parse_history(std::string_view text, std::string name) {
  return read_all(HistoryReader::from_text(std::string(text), std::move(name)));
}

std::string format_history(const History& history) {
  std::string out = format_header(history.initial);
  out.push_back('\n');
  for (const TxnTrace& t : history.txns) {
    out += format_txn_line(t);
    out.push_back('\n');
  }
  return out;
}

}  // namespace pandora::history
