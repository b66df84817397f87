// The journal of row moves a replacement's rebuild makes
// (recovery/replica_rebuild.h), written before any move so that a run cut
// short is finished by the next: the interface, and its text form (the
// product keeps it in ZooKeeper: Registry::relocation_journal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pandora {

// One row moving from slot `from` to slot `to` of its table on every
// replica of its shard.
struct Relocation {
  uint32_t table_id = 0;
  uint64_t key = 0;
  uint64_t from = 0;
  uint64_t to = 0;
  bool operator==(const Relocation&) const = default;
};

// Where the rebuild writes down the row moves it is about to make, so that
// a re-run can finish them (it must outlive the rebuild's process).
class RelocationJournal {
 public:
  virtual ~RelocationJournal() = default;
  virtual Result<std::vector<Relocation>> read() = 0;
  virtual Status write(const std::vector<Relocation>& moves) = 0;
  virtual Status clear() = 0;
};

// Text form of a journal ("TABLE KEY FROM TO" per line, decimal), and back
// (kCorrupt on anything else).
std::string encode_relocations(const std::vector<Relocation>& moves);
Result<std::vector<Relocation>> decode_relocations(std::string_view text);

}  // namespace pandora
