#include "compute/table_geometry.h"

#include "pandora/table.h"

namespace pandora {

// home_bucket(t, dense_key(t.table_id, i)) = mix64(unmix64(i)) % buckets.
uint64_t dense_key(uint32_t table, uint64_t index) { return unmix64(index) ^ table_salt(table); }

}  // namespace pandora
