// Transaction histories on disk: JSON lines. The first line is the header,
// then one finished transaction (compute/txn_trace.h's TxnTrace) per line,
// in the order the outcomes were recorded.
//
//   {"format":"pandora-history","version":2,"initial":{"version":1,
//    "present":[{"table":0,"first":0,"last":7}]}}
//   {"client":"3.1","pid":3,"coordinator":1,"seq":42,
//    "begin_ns":1700000000000000000,"end_ns":1700000000000004200,
//    "outcome":"committed","reason":"none",
//    "items":[{"table":0,"key":7,"slot":4160,"op":"u","present":true,
//              "rv":3,"wv":4,"rval":100,"wval":90}]}
//
// (one line each in the file; wrapped here). Header fields:
//   format       "pandora-history"
//   version      2 (kFormatVersion). Format 1 had no header line; its
//                files are refused with a message saying so (they do not
//                say what the store held before the run, which the checker
//                now needs to tell the initial state from versions nobody
//                wrote).
//   initial      what the store held before the first transaction
//                (initial_state.h): "unknown", {"version":V} (every key
//                present was at version V) or {"version":V,"present":[key
//                ranges]} (exactly those keys were present, at V).
// Transaction fields:
//   client       "<pid>.<coordinator>", redundant with the next two; it names
//                the transaction's session in reports and exports
//   pid          compute process id (TxnTrace::pid, 0..65535)
//   coordinator  coordinator within the process (0..65535)
//   seq          the coordinator's transaction sequence (0..2^32-1)
//   begin_ns     CLOCK_REALTIME at begin()
//   end_ns       CLOCK_REALTIME when the outcome was known
//   outcome      "committed" or "aborted"
//   reason       abort_reason_name() of the abort reason; "none" when
//                committed (a committed line with another reason is rejected)
//   items        accesses in order: table, key, slot, op ("r" read, "u"
//                update or write, "i" insert, "d" delete), present (reads:
//                the key existed), rv / wv (version read / installed), rval
//                / wval (first 8 value bytes read / written, little-endian)
//   slot         (in an item) TraceItem::slot, the region offset of the slot
//                the item was read from / written to. Versions count per
//                slot, and a key deleted and re-inserted elsewhere restarts
//                from the new slot's counter, so the checker needs it
//                (checker.h, "Incarnations"). Optional: the writer omits it
//                when 0 (unknown: an absent key), and a missing "slot" reads
//                as 0.
// Every other field is required, none may repeat, no other field is allowed.
// Whitespace between tokens is allowed (the writer emits none). The JSON is
// read and written with nlohmann-json (json.h).
//
// One file per compute process: the writer serializes its own threads'
// lines, not other processes'. The checker reads several files as one
// history (pandora-history-check FILE...); their headers must agree
// (InitialState::merge).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "compute/txn_trace.h"
#include "compute/trace/initial_state.h"

namespace pandora::history {

inline constexpr uint64_t kFormatVersion = 2;

// A whole history: the header's initial state and the transactions.
struct History {
  InitialState initial;
  std::vector<TxnTrace> txns;
};

// "r", "u", "i", "d".
std::string_view op_name(TraceOp op);
// "<pid>.<coordinator>".
std::string client_name(uint16_t pid, uint16_t coordinator);

// The header line (without the newline).
std::string format_header(const InitialState& initial);
// The line for `t` (without the newline).
std::string format_txn_line(const TxnTrace& t);

// Parse one line (without the newline). The error says what is wrong (at
// which column for a syntax error, else which field); it does not know the
// line number (the reader adds it).
Result<InitialState> parse_header(std::string_view line);
Status parse_txn_line(std::string_view line, TxnTrace* out);

// A TxnObserver that appends each finished transaction to a file. Safe to
// call from every coordinator thread at once: each line is formatted on the
// caller's thread, then handed to the (1 MiB-buffered) stream in one fwrite
// under a mutex, so lines never interleave; the cost on the coordinator is
// the formatting plus a memcpy, and a write(2) when the buffer fills.
class HistoryWriter final : public TxnObserver {
 public:
  // Creates or truncates `path` and writes the header (flushed at once, so
  // that a process killed before its first transaction leaves a valid file).
  static Result<std::unique_ptr<HistoryWriter>> create(const std::string& path,
                                                       const InitialState& initial = InitialState::unknown());
  ~HistoryWriter() override;  // close()s; a write error is lost then

  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  void on_txn_end(const TxnTrace& trace) override;

  // Pushes buffered lines to the file.
  Status flush();
  // Flushes and closes; reports the first write error, if any. Transactions
  // that end after close() are counted in dropped(), not written.
  Status close();

  uint64_t written() const;
  uint64_t dropped() const;
  const std::string& path() const { return path_; }

 private:
  HistoryWriter(std::FILE* file, std::string path);

  mutable std::mutex mu_;
  std::FILE* file_;  // null once closed
  std::unique_ptr<char[]> buffer_;
  std::string path_;
  uint64_t written_ = 0;
  uint64_t dropped_ = 0;
  bool write_failed_ = false;
};

// Reads a history one transaction at a time, strictly: a malformed line is
// an error naming the source, the line number and what is wrong
// ("run.hist:17: item 1: \"op\" is \"w\"; expected ..."); nothing is
// skipped. Empty lines are errors too; a missing newline after the last
// line is not. Opening reads the header: a missing header (a format-1 file),
// another format or version, or an empty file is an error.
class HistoryReader {
 public:
  static Result<std::unique_ptr<HistoryReader>> open(const std::string& path);
  // Reads from memory; `name` stands for the file name in messages.
  static Result<std::unique_ptr<HistoryReader>> from_text(std::string text, std::string name = "<text>");
  ~HistoryReader();

  HistoryReader(const HistoryReader&) = delete;
  HistoryReader& operator=(const HistoryReader&) = delete;

  // true with *out filled, false at the end of the input, or the error.
  Result<bool> next(TxnTrace* out);

  // The header's initial state.
  const InitialState& initial() const { return initial_; }
  // The number of the line last read (1-based; the header is line 1).
  uint64_t line() const { return line_; }
  const std::string& name() const { return name_; }

 private:
  HistoryReader(std::FILE* file, std::string text, std::string name);
  static Result<std::unique_ptr<HistoryReader>> start(std::unique_ptr<HistoryReader> reader);
  // The next line without its newline; false at the end of the input.
  Result<bool> next_line(std::string_view* line);

  std::FILE* file_;  // null when reading from text_
  std::string text_;
  size_t text_pos_ = 0;
  char* buf_ = nullptr;  // getline's buffer
  size_t buf_cap_ = 0;
  std::string name_;
  uint64_t line_ = 0;
  InitialState initial_;
};

// Whole-history helpers.
Result<History> read_history(const std::string& path);
Result<History> parse_history(std::string_view text, std::string name = "<text>");
// The header and one line per transaction.
std::string format_history(const History& history);

}  // namespace pandora::history
