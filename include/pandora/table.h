// Declaring tables and bulk-loading them, before transactions run.
//
//   std::vector<pandora::TableSpec> tables = {{.id = 1, .name = "accounts", .value_size = 16, .expected_rows = 1000}};
//   if (pandora::Status s = client->create_tables(tables); !s) ...;
//   auto loader = client->loader();                    // Result<std::unique_ptr<BulkLoader>>
//   (*loader)->add(1, key, value);                     // buffered, batched
//   (*loader)->finish();
//
// A table is a hash table of fixed capacity on the memory nodes: every row
// has the table's value size, keys are 64-bit integers, and the capacity is
// sized from expected_rows (at a load factor of at most 1/2), so a table
// that outgrows its expectation fails inserts with AbortReason::kTableFull.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "pandora/status.h"

namespace pandora {

struct TableSpec {
  uint32_t id = 0;             // distinct per table; what Txn calls take
  std::string name;            // distinct per table; shown by tools
  uint32_t value_size = 0;     // bytes of every value of the table
  uint64_t expected_rows = 0;  // capacity planning: the most rows the table will hold
};

// Keys for a table whose rows are numbered 0 .. n-1 and only loaded (a
// catalogue, a stock list): dense_key(table, i) is a bijection of i, chosen
// so that row i's home bucket in `table` is i % (the table's bucket count).
// Such a table then fills its buckets evenly instead of at random, which
// matters for rows of a few hundred bytes and more: a bucket holds only one
// or two of them, and a key's probe path is a few buckets, so randomly
// placed big rows overflow some path well below the table's capacity.
// Look rows up by the same function. Fixed for a table id across versions
// (it is part of the data's layout).
uint64_t dense_key(uint32_t table, uint64_t index);

// Loads rows into freshly created tables without transactions (nothing
// else may run meanwhile). Rows are durable once finish() returned ok.
class BulkLoader {
 public:
  virtual ~BulkLoader() = default;
  // Queues one row. kInvalidArgument for an unknown table or a value of the
  // wrong size, kMismatch for a key loaded twice, kOutOfBounds when the
  // table is full.
  virtual Status add(uint32_t table, uint64_t key, std::span<const uint8_t> value) = 0;
  // Writes what is queued and waits for it.
  virtual Status finish() = 0;
  virtual uint64_t rows_loaded() const = 0;
};

}  // namespace pandora
