// What the store held before a recorded run's first transaction: the
// history file's header records it (history.h), and the checker and the
// exports use it to tell the initial state from versions nobody wrote.
//
// Three cases, as the producer knows them:
//   unknown          the run attached to tables that earlier runs had used
//                    (pandora-bench without --load): nothing is known.
//   loaded(V)        the run loaded fresh tables itself, so every key
//                    present at its start was at version V (the loader,
//                    compute/loader.h, writes 1), but which keys were
//                    loaded is not recorded (pandora-bench --load).
//   loaded(V, keys)  as above, and exactly `keys` were present: every other
//                    key was absent at the start (pandora-litmus).
//
// The rule, per incarnation (table, key, slot; checker.h) of a key, given
// the lowest version committed transactions read that no recorded
// committed transaction installed ("unrecorded") and the lowest recorded
// committed write:
//   - known and the key was (or may have been) present: the initial
//     version is V, and no version below V can ever be read (a slot's
//     counter starts at 0 and the first insert installs at least 1, so
//     with V = 1 this holds for every incarnation of the key).
//   - known and the key was absent: no initial version; every version was
//     written during the run.
//   - unknown: the lowest unrecorded read, if it is below every recorded
//     committed write (the initial state precedes every write of the run);
//     otherwise none.
// In a complete history every other unrecorded version read is a garbage
// read; in a partial one (recovery rolled writers forward) it stands for
// an unrecorded writer. A loaded(V, keys) header names the keys, not their
// slots: every incarnation of a loaded key gets V, so an unrecorded insert
// of version V into another slot would pass as the initial state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "compute/trace/json.h"

namespace pandora::history {

// Keys first..last (inclusive) of one table.
struct KeyRange {
  uint32_t table = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  bool operator==(const KeyRange&) const = default;
};

// What the rule above gives one incarnation.
struct IncarnationStart {
  // The version it had when the run began; none when it did not exist then
  // (or nothing says which version it had).
  std::optional<uint64_t> initial;
  // Reads of versions below this are anomalies whatever the mode (0: no
  // bound).
  uint64_t floor = 0;
};

class InitialState {
 public:
  InitialState() = default;  // unknown
  static InitialState unknown() { return {}; }
  static InitialState loaded(uint64_t version);
  // `present` in any order, ranges may touch or overlap (they are merged).
  static InitialState loaded(uint64_t version, std::vector<KeyRange> present);

  bool known() const { return known_; }
  bool keys_listed() const { return keys_listed_; }
  uint64_t version() const { return version_; }
  const std::vector<KeyRange>& present() const { return present_; }

  IncarnationStart start(uint32_t table, uint64_t key, std::optional<uint64_t> lowest_unrecorded_read,
                         std::optional<uint64_t> lowest_committed_write) const;

  // Several files of one run: an unknown header agrees with any; two known
  // ones must be equal. `source` names the other file in the error.
  Status merge(const InitialState& other, const std::string& source);

  // The header's "initial" value: "unknown", {"version":V} or
  // {"version":V,"present":[{"table":T,"first":A,"last":B},...]}.
  json::Json to_json() const;
  // The error says what is wrong (the caller adds where).
  static Result<InitialState> from_json(const json::Json& j);

  bool operator==(const InitialState&) const = default;

 private:
  bool present_at_start(uint32_t table, uint64_t key) const;

  bool known_ = false;
  bool keys_listed_ = false;
  uint64_t version_ = 0;
  std::vector<KeyRange> present_;  // sorted, disjoint, not touching
};

}  // namespace pandora::history
