// Creating tables and bulk-loading rows, before any transaction runs.
//
//   Status s = create_tables(cluster, specs);     // plans + writes the directory on every node
//   TableLoader loader(cluster, [](const LoadProgress& p) { ... });
//   loader.add(kAccounts, key, value);            // buffered, batched WRITEs to the f+1 replicas
//   s = loader.finish();
//
// The loader is the only writer while it runs (no latches are taken). It
// places every row like a transactional insert does - the first slot of the
// key's probe path that is free on every replica of its shard
// (compute/table_geometry.h) - but decides from its own occupancy map
// instead of reading memory, so it assumes freshly created (zeroed) tables.
// Rows are written with version 1.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "common/table_directory.h"
#include "compute/cluster.h"
#include "compute/op_batch.h"
#include "pandora/table.h"

namespace pandora {

struct CreateTablesOptions {
  // A node that already carries a directory is an error ("already loaded")
  // unless this is set; then the table area is zeroed and rewritten.
  bool replace_existing = false;
};

// Plans the tables in [cluster.table_begin(), cluster.table_limit()), sizes
// the log lanes from the configuration (lane_bytes; as many lanes as every
// node's log area holds), writes the directory to every node, then
// cluster.load_directory().
Status create_tables(Cluster& cluster, std::span<const TableSpec> specs, const CreateTablesOptions& options = {});

struct LoadProgress {
  uint32_t table_id = 0;
  uint64_t rows_loaded = 0;  // into this table so far
  uint64_t rows_total = 0;   // loaded into all tables so far
};
using LoadProgressFn = std::function<void(const LoadProgress&)>;

class TableLoader final : public BulkLoader {
 public:
  // `progress` is called after every flushed batch (about every
  // `batch_rows` rows); may be empty.
  explicit TableLoader(Cluster& cluster, LoadProgressFn progress = {}, size_t batch_rows = 512);

  // Queues one row. kInvalidArgument for an unknown table or a value of the
  // wrong size, kMismatch for a key loaded twice, kOutOfBounds ("table
  // full") when the key's probe path has no free slot on its replicas.
  Status add(uint32_t table, uint64_t key, std::span<const uint8_t> value) override;
  // Writes what is queued and waits.
  Status finish() override;

  uint64_t rows_loaded() const override { return total_; }

 private:
  struct TableState {
    const TableEntry* entry = nullptr;
    std::vector<std::vector<bool>> used;  // per node index, per slot
    std::unordered_set<uint64_t> keys;
    uint64_t rows = 0;
  };
  Status flush();
  TableState* table(uint32_t id);

  Cluster& cluster_;
  LoadProgressFn progress_;
  size_t batch_rows_;
  std::unordered_map<uint32_t, TableState> tables_;
  OpBatch batch_;
  std::deque<std::vector<uint8_t>> images_;  // buffers of the batch in flight
  size_t queued_ = 0;
  uint64_t total_ = 0;
  uint32_t last_table_ = 0;
};

}  // namespace pandora
