// The litmus tests of seed chapter 5 as recurrent, scalable transaction
// programs (Figures 5.1-5.3): what a litmus transaction does on one
// INSTANCE (its own keys X, Y, ...) and the assert that must hold for that
// instance at any time, whatever number of instances, processes and
// coordinators run them concurrently (a "scalable" assert, Figure 5.2).
//
//  * direct (Litmus 1, direct-write cycles): each transaction writes one
//    fresh value V (unique per transaction) to every variable, in a random
//    order, mixing blind writes and read-modify-writes. Assert: all equal.
//    Variants: direct-insert (keys start absent; transactions insert all,
//    delete all, or write all) and direct-delete (keys start present, same
//    mix weighted towards delete/re-insert). Assert: all present with
//    equal values, or all absent. A read-only transaction cannot observe a
//    mix of present and absent keys (a read of an absent key aborts it), so
//    the mixed case is checked by the quiescent end-of-run assert only.
//  * write-skew (Litmus 2, read-write cycles), n variables in a ring:
//    T_i reads X_i and, if its bit is 0, blind-writes X_{i+1} := (round, 1).
//    A reset transaction (read-modify-write of all) moves every variable to
//    (round+1, 0) once some bit is set. Assert: all rounds equal and not
//    every bit is 1 - in a serial order the last writer of the ring would
//    have read a 1. Per-round values keep the assert valid under recurrence.
//  * indirect (Litmus 3, indirect-write cycles), X, m targets Y_1..Y_m and
//    a noise variable W: T_k reads W (read-only), increments X and
//    blind-writes the new X to Y_k; T_w increments W and nothing else.
//    Assert: every Y_k <= X (W is unconstrained). The read-only W gives T_k
//    a validation that fails whenever a T_w commits during it - after its
//    latches were taken and, with lost-decision, after it was logged - which
//    is how a logged transaction comes to abort; the blind write leaves a
//    latch CAS pending at commit, which is what logging-without-latching
//    needs. (Reading Y_{k+1} instead, as a plain reading of the figure
//    suggests, fails validation only inside one round trip.)
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "compute/txn.h"

namespace pandora::litmus {

inline constexpr uint32_t kTable = 1;
inline constexpr uint32_t kValueSize = 8;
inline constexpr uint32_t kMaxVars = 8;

enum class Kind : uint8_t { kDirect, kDirectInsert, kDirectDelete, kWriteSkew, kIndirect };

struct InstanceSpec {
  Kind kind = Kind::kDirect;
  uint32_t vars = 2;
};

std::string instance_name(const InstanceSpec& s);  // "litmus1", "litmus2x3", ...

// --test names: litmus1 | litmus1-insert | litmus1-delete | litmus2 |
// litmus3 | extended | all. Instance i runs kinds[i % kinds.size()].
Result<std::vector<InstanceSpec>> parse_test(std::string_view name);

inline uint64_t key_of(uint32_t instance, uint32_t var) { return uint64_t{instance} * kMaxVars + var; }
bool initially_present(Kind k);

using Rng = std::mt19937_64;

// One litmus transaction on `instance`; `tag` is a value never used before
// (non-zero). Returns the outcome (user aborts when there is nothing to do).
CommitOutcome run_litmus_txn(Txn& t, const InstanceSpec& spec, uint32_t instance, Rng& rng, uint64_t tag);

// The assert as a read-only transaction: reads every variable. nullopt when
// it aborted or met an absent key (inconclusive; see the header comment);
// *saw_absent tells the latter.
std::optional<std::vector<uint64_t>> run_assert_txn(Txn& t, const InstanceSpec& spec, uint32_t instance,
                                                    bool* saw_absent = nullptr);

// Mixed presence (direct-insert/-delete) without a transaction that can see
// it: read A (present, value a), then B (absent), then A again (still a), each
// in its own read-only transaction. Every write installs a fresh value, so A
// did not change in between and, when B was read, the store held A present
// and B absent - a state no serial order of the litmus transactions
// produces. Returns the evidence (A's value, B absent, the others as read) or
// nullopt when there is none.
std::optional<std::vector<std::optional<uint64_t>>> probe_mixed_presence(Txn& t, const InstanceSpec& spec,
                                                                         uint32_t instance);

// nullopt when the values satisfy the assert; else what is wrong. `values`
// has one entry per variable, nullopt for an absent key.
std::optional<std::string> check_assert(const InstanceSpec& spec, std::span<const std::optional<uint64_t>> values);

std::string format_values(const InstanceSpec& spec, std::span<const std::optional<uint64_t>> values);

}  // namespace pandora::litmus
