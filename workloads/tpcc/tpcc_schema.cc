#include "workloads/tpcc/tpcc_schema.h"

// The one place a workload knows the store's layout: load-only tables get
// keys that the table's hash (compute/table_geometry.h) sends to
// consecutive buckets, so rows of ~700 bytes fill their buckets evenly
// instead of overflowing a key's probe window (8 buckets) at half load.
// The right fix is wider probe windows for tables of big rows.
#include "compute/placement.h"
#include "compute/table_geometry.h"

namespace pandora::workloads::tpcc {

namespace {

// x with x * a == 1 (mod 2^64), a odd: Newton's iteration doubles the
// correct low bits each step (3 -> 6 -> ... -> 96).
constexpr uint64_t inverse(uint64_t a) {
  uint64_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
static_assert(inverse(0xbf58476d1ce4e5b9ull) * 0xbf58476d1ce4e5b9ull == 1);
static_assert(inverse(0x94d049bb133111ebull) * 0x94d049bb133111ebull == 1);

// The inverse of y = x ^ (x >> s).
constexpr uint64_t unshift(uint64_t y, int s) {
  uint64_t x = y;
  for (int k = s; k < 64; k += s) x = y ^ (x >> s);
  return x;
}

}  // namespace

uint64_t unmix64(uint64_t h) {
  uint64_t x = unshift(h, 31);
  x = unshift(x * inverse(0x94d049bb133111ebull), 27);
  x = unshift(x * inverse(0xbf58476d1ce4e5b9ull), 30);
  return x - 0x9e3779b97f4a7c15ull;
}

uint64_t placed_key(uint32_t table, uint64_t index) { return unmix64(index) ^ table_salt(table); }

}  // namespace pandora::workloads::tpcc
