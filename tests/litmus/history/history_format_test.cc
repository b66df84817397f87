// The history file format: exact lines, round trips, the strict reader's
// error messages, and the writer under concurrent coordinators.
#include "compute/trace/history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "tests/litmus/history/history_test_util.h"

namespace pandora::history {
namespace {

using testing::at;
using testing::moved_key_history;
using testing::upd;

bool same(const TxnTrace& a, const TxnTrace& b) {
  if (a.pid != b.pid || a.coordinator != b.coordinator || a.seq != b.seq || a.begin_ns != b.begin_ns ||
      a.end_ns != b.end_ns || a.committed != b.committed || a.reason != b.reason || a.items.size() != b.items.size()) {
    return false;
  }
  for (size_t i = 0; i < a.items.size(); ++i) {
    const TraceItem& x = a.items[i];
    const TraceItem& y = b.items[i];
    if (x.table != y.table || x.key != y.key || x.slot != y.slot || x.op != y.op || x.present != y.present ||
        x.read_version != y.read_version || x.write_version != y.write_version || x.read_value != y.read_value ||
        x.write_value != y.write_value) {
      return false;
    }
  }
  return true;
}

// A temporary file path, removed on destruction.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/pandora-history-XXXXXX";
    const int fd = mkstemp(path_.data());
    if (fd >= 0) ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TxnTrace sample() {
  TxnTrace t;
  t.pid = 3;
  t.coordinator = 1;
  t.seq = 42;
  t.begin_ns = 1700000000000000000;
  t.end_ns = 1700000000000004200;
  t.committed = true;
  TraceItem it = upd(7, 3);
  it.read_value = 100;
  it.write_value = 90;
  t.items = {it};
  return t;
}

constexpr std::string_view kSampleLine =
    "{\"client\":\"3.1\",\"pid\":3,\"coordinator\":1,\"seq\":42,\"begin_ns\":1700000000000000000,"
    "\"end_ns\":1700000000000004200,\"outcome\":\"committed\",\"reason\":\"none\",\"items\":[{\"table\":0,"
    "\"key\":7,\"op\":\"u\",\"present\":true,\"rv\":3,\"wv\":4,\"rval\":100,\"wval\":90}]}";

// The header line of a history whose initial state is unknown.
constexpr std::string_view kHeader = "{\"format\":\"pandora-history\",\"version\":2,\"initial\":\"unknown\"}";

// `lines` as a history file: the header, then them.
std::string with_header(std::string_view lines) { return std::string(kHeader) + "\n" + std::string(lines); }

TEST(HistoryFormat, ExactLine) { EXPECT_EQ(format_txn_line(sample()), kSampleLine); }

TEST(HistoryFormat, RoundTripsEveryField) {
  std::mt19937_64 rng(7);
  std::vector<TxnTrace> history;
  for (int n = 0; n < 200; ++n) {
    TxnTrace t;
    t.pid = static_cast<uint16_t>(rng());
    t.coordinator = static_cast<uint16_t>(rng());
    t.seq = static_cast<uint32_t>(rng());
    t.begin_ns = rng();
    t.end_ns = rng();
    t.committed = rng() % 2 == 0;
    t.reason = t.committed ? AbortReason::kNone : static_cast<AbortReason>(1 + rng() % 8);
    const int items = static_cast<int>(rng() % 5);
    for (int i = 0; i < items; ++i) {
      TraceItem it;
      it.table = static_cast<uint32_t>(rng());
      it.key = rng();
      it.op = static_cast<TraceOp>(1 + rng() % 4);
      it.present = rng() % 2 == 0;
      it.read_version = rng();
      it.write_version = rng();
      it.read_value = rng();
      it.write_value = rng();
      t.items.push_back(it);
    }
    history.push_back(t);
  }
  // The extremes.
  TxnTrace max;
  max.pid = UINT16_MAX;
  max.coordinator = UINT16_MAX;
  max.seq = UINT32_MAX;
  max.begin_ns = max.end_ns = UINT64_MAX;
  TraceItem big;
  big.table = UINT32_MAX;
  big.key = big.read_version = big.write_version = big.read_value = big.write_value = UINT64_MAX;
  max.items = {big};
  history.push_back(max);
  history.push_back(TxnTrace{});

  auto parsed = parse_history(format_history({{}, history}));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->txns.size(), history.size());
  for (size_t i = 0; i < history.size(); ++i) EXPECT_TRUE(same(history[i], parsed->txns[i])) << "transaction " << i;
}

TEST(HistoryFormat, AcceptsWhitespaceCrlfAndAnyFieldOrder) {
  const std::string text =
      " { \"items\" : [ { \"wval\":0, \"rval\":0, \"wv\":0, \"rv\":5, \"present\":false, \"op\":\"r\", \"key\":1, "
      "\"table\":2 } ], \"reason\":\"latched\", \"outcome\":\"aborted\", \"end_ns\":9, \"begin_ns\":8, \"seq\":7, "
      "\"coordinator\":0, \"pid\":1, \"client\":\"1.0\" }\r\n" +
      std::string(kSampleLine);  // no newline after the last line
  auto parsed = parse_history(with_header(text));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->txns.size(), 2u);
  const TxnTrace& t = parsed->txns[0];
  EXPECT_FALSE(t.committed);
  EXPECT_EQ(t.reason, AbortReason::kLatched);
  ASSERT_EQ(t.items.size(), 1u);
  EXPECT_EQ(t.items[0].table, 2u);
  EXPECT_FALSE(t.items[0].present);
  EXPECT_EQ(t.items[0].read_version, 5u);
  EXPECT_TRUE(same(parsed->txns[1], sample()));
}

// Replaces the first occurrence of `from` in the sample line.
std::string sample_with(std::string_view from, std::string_view to) {
  std::string line(kSampleLine);
  const size_t at = line.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) line.replace(at, from.size(), to);
  return line;
}

// Malformed input: every message names the file, the line and what is
// wrong (nlohmann-json's column for syntax errors, the field otherwise).
TEST(HistoryFormat, MalformedLinesAreRejectedWithTheLineNumber) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "column 2: syntax error while parsing value - invalid literal"},
      {"", "empty line"},
      {"   ", "empty line"},
      {std::string(kSampleLine.substr(0, 60)), "column 61: syntax error"},
      {std::string(kSampleLine) + "x", "expected end of input"},
      {sample_with("\"seq\":42,", ""), "no \"seq\" field"},
      {sample_with("\"seq\":42", "\"seq\":42,\"seq\":43"), "key \"seq\" given twice in one object"},
      {sample_with("\"seq\":42", "\"seq\":42,\"extra\":1"), "unknown field \"extra\""},
      {sample_with("\"seq\":42", "\"seq\":-1"), "\"seq\" is -1: expected an unsigned integer"},
      {sample_with("\"seq\":42", "\"seq\":042"), "syntax error"},
      {sample_with("\"seq\":42", "\"seq\":4.5"), "\"seq\" is 4.5: expected an unsigned integer"},
      {sample_with("\"seq\":42", "\"seq\":4294967296"), "\"seq\" is 4294967296, above its maximum 4294967295"},
      {sample_with("\"pid\":3", "\"pid\":65536"), "\"pid\" is 65536, above its maximum 65535"},
      {sample_with("\"begin_ns\":1700000000000000000", "\"begin_ns\":18446744073709551616"),
       "expected an unsigned integer (it does not fit in 64 bits)"},
      {sample_with("\"seq\":42", "\"seq\":\"42\""), "\"seq\" is the string \"42\": expected an unsigned integer"},
      {sample_with("\"op\":\"u\"", "\"op\":\"w\""),
       "item 1: \"op\" is \"w\"; expected \"r\", \"u\", \"i\" or \"d\""},
      {sample_with("\"committed\"", "\"done\""), "\"outcome\" is \"done\""},
      {sample_with("\"reason\":\"none\"", "\"reason\":\"bogus\""), "unknown abort reason \"bogus\""},
      {sample_with("\"reason\":\"none\"", "\"reason\":\"unknown\""), "unknown abort reason \"unknown\""},
      {sample_with("\"reason\":\"none\"", "\"reason\":\"latched\""),
       "a committed transaction with abort reason \"latched\""},
      {sample_with("\"client\":\"3.1\"", "\"client\":\"3.2\""), "\"client\" is \"3.2\" but pid.coordinator is 3.1"},
      {sample_with("\"rval\":100,", ""), "item 1: no \"rval\" field"},
      {sample_with("\"rval\":100", "\"rval\":100,\"bad\":0"), "item 1: unknown field \"bad\""},
      {sample_with("\"present\":true", "\"present\":1"), "item 1: \"present\" is 1: expected true or false"},
      {sample_with("\"items\":[", "\"items\":{"), "syntax error"},
      {sample_with("\"items\":[{", "\"items\":7,\"x\":[{"), "unknown field \"x\""},
      {sample_with("\"op\":\"u\"", "\"op\":\"u\xff\""), "invalid string: ill-formed UTF-8"},
      {sample_with("\"op\":\"u\"", "\"op\":\"\\q\""), "forbidden character after backslash"},
      {sample_with("\"op\":\"u\",", "\"op\":\"u\""), "syntax error while parsing object"},
      {"[1,2]", "expected an object, found an array"},
  };
  for (const auto& [bad, what] : cases) {
    const std::string text = with_header(std::string(kSampleLine) + "\n" + bad + "\n" + std::string(kSampleLine) + "\n");
    auto parsed = parse_history(text, "run.hist");
    ASSERT_FALSE(parsed.is_ok()) << "accepted: " << bad;
    const std::string msg = parsed.status().message();
    EXPECT_EQ(msg.rfind("run.hist:3: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "line: " << bad << "\nmessage: " << msg << "\nwanted: " << what;
  }
}

// The header: format 2 only, with a clear message for a format-1 file (no
// header) and for anything else on line 1.
TEST(HistoryFormat, HeaderIsRequiredAndChecked) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(kSampleLine), "run.hist:1: no header line: this is a format-1 history"},
      {"", "run.hist: empty file: no header line"},
      {"{\"format\":\"pandora-history\",\"version\":1,\"initial\":\"unknown\"}",
       "run.hist:1: format version 1; this reader reads version 2 only"},
      {"{\"format\":\"pandora-history\",\"version\":3,\"initial\":\"unknown\"}", "format version 3"},
      {"{\"format\":\"other\",\"version\":2,\"initial\":\"unknown\"}", "\"format\" is \"other\": not a pandora-history file"},
      {"{\"format\":\"pandora-history\",\"version\":2}", "run.hist:1: no \"initial\" field"},
      {"{\"format\":\"pandora-history\",\"version\":2,\"initial\":\"loaded\"}",
       "\"initial\": expected \"unknown\" or an object, found the string \"loaded\""},
      {"{\"format\":\"pandora-history\",\"version\":2,\"initial\":{\"version\":0}}", "\"version\" is 0"},
      {"{\"format\":\"pandora-history\",\"version\":2,\"initial\":{\"version\":1,\"present\":[{\"table\":0,"
       "\"first\":5,\"last\":4}]}}",
       "\"initial\" range 1: \"last\" 4 is below \"first\" 5"},
      {"{\"format\":\"pandora-history\",\"version\":2,\"initial\":{\"version\":1,\"present\":[{\"table\":0}]}}",
       "\"initial\" range 1: no \"first\" field"},
  };
  for (const auto& [header, what] : cases) {
    auto parsed = parse_history(header.empty() ? "" : header + "\n", "run.hist");
    ASSERT_FALSE(parsed.is_ok()) << "accepted: " << header;
    EXPECT_EQ(parsed.status().message().rfind("run.hist", 0), 0u) << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(what), std::string::npos)
        << "header: " << header << "\nmessage: " << parsed.status().message() << "\nwanted: " << what;
  }
}

TEST(HistoryFormat, HeaderRoundTripsTheInitialState) {
  const std::vector<InitialState> states = {
      InitialState::unknown(), InitialState::loaded(1),
      InitialState::loaded(1, {{0, 16, 23}, {0, 0, 7}, {0, 8, 9}, {3, 5, 5}})};
  for (const InitialState& initial : states) {
    auto parsed = parse_history(format_history({initial, {sample()}}));
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
    EXPECT_TRUE(parsed->initial == initial) << format_header(initial);
    ASSERT_EQ(parsed->txns.size(), 1u);
  }
  // Touching ranges are merged.
  EXPECT_EQ(format_header(states[2]),
            "{\"format\":\"pandora-history\",\"version\":2,\"initial\":{\"version\":1,\"present\":["
            "{\"table\":0,\"first\":0,\"last\":9},{\"table\":0,\"first\":16,\"last\":23},"
            "{\"table\":3,\"first\":5,\"last\":5}]}}");
}

TEST(HistoryFormat, SlotIsWrittenAfterTheKeyWhenKnown) {
  TxnTrace t = sample();
  t.items[0].slot = 4160;
  EXPECT_EQ(format_txn_line(t), sample_with("\"key\":7,", "\"key\":7,\"slot\":4160,"));
  // 0 (unknown) is left out: the line is the old format's.
  t.items[0].slot = 0;
  EXPECT_EQ(format_txn_line(t), kSampleLine);
}

TEST(HistoryFormat, SlotRoundTrips) {
  std::vector<TxnTrace> history = moved_key_history();
  TxnTrace extremes = sample();
  extremes.items = {at(upd(1, 0), 1), at(upd(2, 0), UINT64_MAX), at(upd(3, 0), 0)};
  history.push_back(extremes);
  auto parsed = parse_history(format_history({{}, history}));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->txns.size(), history.size());
  for (size_t i = 0; i < history.size(); ++i) EXPECT_TRUE(same(history[i], parsed->txns[i])) << "transaction " << i;
  EXPECT_EQ(parsed->txns.back().items[1].slot, UINT64_MAX);
  EXPECT_EQ(parsed->txns[0].items[0].slot, testing::kSlotA);
}

TEST(HistoryFormat, LinesWithoutSlotRead) {
  // kSampleLine has no slot (0, unknown: as for an absent key).
  auto parsed = parse_history(with_header(std::string(kSampleLine) + "\n"));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->txns.size(), 1u);
  ASSERT_EQ(parsed->txns[0].items.size(), 1u);
  EXPECT_EQ(parsed->txns[0].items[0].slot, 0u);
  EXPECT_TRUE(same(parsed->txns[0], sample()));
  // An explicit 0 and any field order are accepted too.
  auto explicit_zero = parse_history(with_header(sample_with("\"wval\":90", "\"wval\":90,\"slot\":0")));
  ASSERT_TRUE(explicit_zero.is_ok()) << explicit_zero.status().to_string();
  EXPECT_TRUE(same(explicit_zero->txns[0], sample()));
  auto first = parse_history(with_header(sample_with("{\"table\":0,", "{\"slot\":64,\"table\":0,")));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->txns[0].items[0].slot, 64u);
}

TEST(HistoryFormat, MalformedSlotsAreRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {sample_with("\"key\":7,", "\"key\":7,\"slot\":1,\"slot\":2,"), "key \"slot\" given twice"},
      {sample_with("\"key\":7,", "\"key\":7,\"slot\":-1,"), "item 1: \"slot\" is -1: expected an unsigned integer"},
      {sample_with("\"key\":7,", "\"key\":7,\"slot\":\"64\","), "expected an unsigned integer"},
      {sample_with("\"key\":7,", "\"key\":7,\"slot\":18446744073709551616,"), "does not fit in 64 bits"},
  };
  for (const auto& [bad, what] : cases) {
    auto parsed = parse_history(with_header(bad), "run.hist");
    ASSERT_FALSE(parsed.is_ok()) << "accepted: " << bad;
    EXPECT_NE(parsed.status().message().find(what), std::string::npos) << parsed.status().message();
  }
}

TEST(HistoryFormat, ReaderStopsAtTheFirstBadLine) {
  auto opened = HistoryReader::from_text(with_header(std::string(kSampleLine) + "\n{}\n"), "x");
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  HistoryReader& reader = **opened;
  TxnTrace t;
  auto first = reader.next(&t);
  ASSERT_TRUE(first.is_ok());
  EXPECT_TRUE(first.value());
  auto second = reader.next(&t);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().message(), "x:3: no \"client\" field");
  EXPECT_EQ(reader.line(), 3u);
}

TEST(HistoryFormat, MissingFileIsAnError) {
  auto r = read_history("/nonexistent/dir/history.hist");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("cannot open history file"), std::string::npos);
}

TEST(HistoryWriter, ConcurrentCoordinatorsNeverInterleave) {
  TempFile file;
  auto writer = HistoryWriter::create(file.path());
  ASSERT_TRUE(writer.is_ok()) << writer.status().to_string();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 250;  // 2000 lines of 16 items: the 1 MiB buffer fills several times
  std::vector<std::thread> threads;
  for (int c = 0; c < kThreads; ++c) {
    threads.emplace_back([&, c] {
      TxnTrace t = sample();
      t.coordinator = static_cast<uint16_t>(c);
      // Long lines make a torn write likely if lines were split.
      t.items.assign(16, t.items[0]);
      for (int i = 0; i < kPerThread; ++i) {
        t.seq = static_cast<uint32_t>(i);
        (*writer)->on_txn_end(t);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ((*writer)->written(), uint64_t{kThreads} * kPerThread);
  ASSERT_TRUE((*writer)->close().is_ok());

  auto history = read_history(file.path());
  ASSERT_TRUE(history.is_ok()) << history.status().to_string();
  ASSERT_EQ(history->txns.size(), size_t{kThreads} * kPerThread);
  std::set<std::pair<uint16_t, uint32_t>> seen;
  for (const TxnTrace& t : history->txns) {
    EXPECT_EQ(t.items.size(), 16u);
    seen.emplace(t.coordinator, t.seq);
  }
  EXPECT_EQ(seen.size(), size_t{kThreads} * kPerThread);
}

TEST(HistoryWriter, FlushMakesLinesVisibleAndCloseDropsLaterOnes) {
  TempFile file;
  const InitialState initial = InitialState::loaded(1, {{0, 0, 15}});
  auto writer = HistoryWriter::create(file.path(), initial);
  ASSERT_TRUE(writer.is_ok());
  // The header is on disk before the first transaction.
  auto empty = read_history(file.path());
  ASSERT_TRUE(empty.is_ok()) << empty.status().to_string();
  EXPECT_TRUE(empty->txns.empty());
  EXPECT_TRUE(empty->initial == initial);
  (*writer)->on_txn_end(sample());
  ASSERT_TRUE((*writer)->flush().is_ok());
  auto mid = read_history(file.path());
  ASSERT_TRUE(mid.is_ok());
  EXPECT_EQ(mid->txns.size(), 1u);
  ASSERT_TRUE((*writer)->close().is_ok());
  ASSERT_TRUE((*writer)->close().is_ok());  // idempotent
  (*writer)->on_txn_end(sample());
  EXPECT_EQ((*writer)->written(), 1u);
  EXPECT_EQ((*writer)->dropped(), 1u);
}

TEST(HistoryWriter, UncreatableFileIsAnError) {
  auto writer = HistoryWriter::create("/nonexistent/dir/history.hist");
  ASSERT_FALSE(writer.is_ok());
  EXPECT_EQ(writer.status().code(), Errc::kIo);
}

}  // namespace
}  // namespace pandora::history
