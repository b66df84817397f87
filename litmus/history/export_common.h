// What the Elle and dbcop exporters share: how an object becomes one
// integer, which micro-operations each transaction exports, and a buffered
// output sink.
//
// Objects. Both tools name a key with one integer:
//   object = table << 40 | key      (table < 2^23, key < 2^40)
// which stays below 2^63 (a Clojure long), is reversible by eye
// (table = object >> 40) and needs no side table. Histories with larger
// keys cannot be exported (the export fails naming the object).
//
// Values. A register's value is the version number: unique per key, as both
// tools require, and it already orders the key's versions.
//   - A committed read of a version that no committed or aborted
//     transaction in the history installed and that lies below the object's
//     lowest committed version is the initial state: exported as nil/null
//     (both tools' "never written" value).
//   - Other reads export their version, so reads of unrecorded versions
//     above it show up as the tools' garbage/incomplete-history errors.
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
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "compute/txn_trace.h"

namespace pandora::history {

inline constexpr unsigned kObjectKeyBits = 40;
inline constexpr unsigned kObjectTableBits = 23;

Result<uint64_t> pack_object(uint32_t table, uint64_t key);

struct ExportOp {
  bool write = false;
  uint64_t object = 0;
  bool has_value = false;  // false: nil / null
  uint64_t value = 0;
};

class ExportIndex {
 public:
  explicit ExportIndex(const std::vector<TxnTrace>& history);

  // The micro-operations history[index] exports, in access order.
  Status ops(uint64_t index, std::vector<ExportOp>* out) const;

  uint64_t objects() const { return objects_; }
  // Earliest begin and latest end (0 for an empty history).
  uint64_t first_ns() const { return first_ns_; }
  uint64_t last_ns() const { return last_ns_; }

 private:
  struct Version {
    uint32_t table;
    uint64_t key;
    uint64_t version;
    uint64_t txn;  // aborted writes: the writer's index
    bool operator<(const Version& o) const;
  };
  bool committed_write(uint32_t table, uint64_t key, uint64_t v) const;
  // The first aborted writer of a version no committed transaction
  // installed, or UINT64_MAX.
  uint64_t aborted_writer(uint32_t table, uint64_t key, uint64_t v) const;
  // A committed read's exported value.
  bool read_value(uint32_t table, uint64_t key, uint64_t v, uint64_t* value) const;

  const std::vector<TxnTrace>& history_;
  std::vector<Version> committed_;  // sorted, unique
  std::vector<Version> aborted_;    // sorted by (object, version, txn)
  uint64_t objects_ = 0;
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
