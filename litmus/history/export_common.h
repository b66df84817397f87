// What the Elle and dbcop exporters share: how an object becomes one
// integer, which micro-operations each transaction exports, and a buffered
// output sink.
//
// Objects. Both tools name a key with one integer. What is exported as one
// key is an incarnation (table, key, slot) of a Pandora key (checker.h):
// versions count per slot, so a key deleted and re-inserted into another
// slot restarts its numbers, and one exported key per Pandora key would
// show the tools repeated or decreasing versions. A key's incarnations are
// numbered 0, 1, ... in the order of their first access (the earliest
// begin_ns of a transaction touching the slot, then the slot), and
//   object = (incarnation << 8 | table) << 40 | key
// which stays below 2^63 (a Clojure long), is reversible by eye
// (key = low 40 bits, table = bits 40..47, incarnation = object >> 48) and
// needs no side table. Incarnation 0 is every key that never moved (and
// every key of a history without slots): object = table << 40 | key, as it
// always was, with table < 2^23 and key < 2^40. Later incarnations need
// table < 2^8 (the engine's kMaxTables is 256) and incarnation < 2^15, and
// a history with any of them must keep every table below 2^8, else two
// objects could share a number. Histories outside these bounds cannot be
// exported (the export fails naming the object). The tools then check each
// incarnation on its own: like the checker, nothing orders two incarnations
// of a key except real time (Elle) -- dbcop ignores real time.
//
// Values. A register's value is the version number: unique per incarnation,
// as both tools require, and it already orders the incarnation's versions.
//   - Every committed read exports its version; none is nil/null (the
//     tools' "never written", which would accept any number of different
//     pre-run versions as the initial state).
//   - The initial state is written explicitly: an initial transaction,
//     before every other one, writes each incarnation's initial version
//     (initial_state.h, the same rule as the checker's) when a committed
//     read reads it and no recorded committed transaction installed it.
//   - So reads of other unrecorded versions (a second pre-run version, a
//     version below the loaded one, a version of a key absent at the
//     start) show up as the tools' garbage/incomplete-history errors.
//   - Reads of an object the transaction itself already wrote are internal
//     and are not exported (the trace records the version read before the
//     write, which the tools would call an internal inconsistency).
//   - An update exports its read, then its write.
//   - Aborted transactions export only writes whose version no committed
//     transaction installed (Pandora reuses a rolled-back version number
//     for the next committed write, and both tools require unique writes),
//     once per version (the first aborted writer in history order). Their
//     reads carry no value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "compute/txn_trace.h"
#include "compute/trace/history.h"

namespace pandora::history {

inline constexpr unsigned kObjectKeyBits = 40;
inline constexpr unsigned kObjectTableBits = 23;
// Incarnations after a key's first: table and incarnation share the 23 bits.
inline constexpr unsigned kObjectMovedTableBits = 8;
inline constexpr unsigned kObjectIncarnationBits = kObjectTableBits - kObjectMovedTableBits;

// The exported key of incarnation `incarnation` (0-based) of (table, key);
// `slot` only names it in the error.
Result<uint64_t> pack_object(uint32_t table, uint64_t key, uint64_t incarnation = 0, uint64_t slot = 0);

struct ExportOp {
  bool write = false;
  uint64_t object = 0;
  bool has_value = false;  // false: nil / null
  uint64_t value = 0;
};

class ExportIndex {
 public:
  explicit ExportIndex(const History& history);

  // The micro-operations history[index] exports, in access order. Fails
  // when the history cannot be exported (see "Objects").
  Status ops(uint64_t index, std::vector<ExportOp>* out) const;
  // The initial transaction's writes (empty: export no initial
  // transaction), by object.
  const std::vector<ExportOp>& initial_writes() const { return initial_writes_; }

  // Exported objects: incarnations.
  uint64_t objects() const { return incarnations_.size(); }
  // Earliest begin and latest end (0 for an empty history).
  uint64_t first_ns() const { return first_ns_; }
  uint64_t last_ns() const { return last_ns_; }

 private:
  struct Incarnation {
    uint32_t table;
    uint64_t key;
    uint64_t slot;
    uint64_t first_ns;  // earliest begin_ns of a transaction accessing it
    uint64_t object;    // the exported key
    // The lowest version committed transactions read that no recorded
    // transaction installed, and whether its initial version is read.
    std::optional<uint64_t> lowest_unrecorded = std::nullopt;
    bool initial_read = false;
  };
  struct Version {
    uint64_t object;
    uint64_t version;
    uint64_t txn;  // aborted writes: the writer's index
    bool operator<(const Version& o) const;
  };
  void compact_incarnations();
  void number_incarnations();
  // Finds each incarnation's initial version and fills initial_writes_.
  void add_initial_writes(const InitialState& initial);
  // The index of an item's incarnation, and its exported key.
  size_t incarnation_of(const TraceItem& it) const;
  uint64_t object_of(const TraceItem& it) const { return incarnations_[incarnation_of(it)].object; }
  bool committed_write(uint64_t object, uint64_t v) const;
  // The first aborted writer of a version no committed transaction
  // installed, or UINT64_MAX.
  uint64_t aborted_writer(uint64_t object, uint64_t v) const;
  const std::vector<TxnTrace>& history_;
  Status status_;                          // why the history cannot be exported
  std::vector<Incarnation> incarnations_;  // sorted by (table, key, slot), unique
  std::vector<Version> committed_;         // sorted, unique
  std::vector<Version> aborted_;           // sorted by (object, version, txn)
  std::vector<ExportOp> initial_writes_;
  uint64_t first_ns_ = 0;
  uint64_t last_ns_ = 0;
};

// Appends to a string and, when given a file, writes it out in 1 MiB
// chunks so that a large export does not sit in memory.
class TextSink {
 public:
  explicit TextSink(std::FILE* file) : file_(file) {}
  void put(std::string_view s);
  std::string& buffer() { return buf_; }
  // Writes what is left (file mode); false if any write failed.
  bool finish();
  std::string take() { return std::move(buf_); }

 private:
  void spill();
  std::FILE* file_;
  std::string buf_;
  bool failed_ = false;
};

// "2023-11-14T22:13:20.000000000+00:00" (RFC 3339, UTC).
std::string rfc3339_utc(uint64_t ns);

}  // namespace pandora::history
