// Parks the threads of one compute node's blocking sessions for a
// stop-the-world pause (ford's recovery, a memory node's fail-over:
// recovery/recovery_coordinator.h), the way the benchmark's runner parks
// its coroutines:
//
//   PauseGate gate(ack, refuse);
//   membership.on_pause([&](uint64_t e) { gate.set_epoch(e); });
//   gate.enter();                                   // waits while a pause is on
//   CommitOutcome o = session.transact(body);
//   gate.leave(session.engine().halted());
//
// A pause is acknowledged (ack(epoch), once per epoch) as soon as no thread
// is between enter() and leave(): none then holds a latch. A node that
// needs recovery itself (a coordinator halted with a transaction or a latch
// CAS left to recovery) never acknowledges: the recovery coordinator's scan
// would release latches it cannot account for. It calls refuse(epoch)
// instead (once per epoch), so the caller can make the node be declared
// failed and recovered within the same pause.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "pandora/session.h"

namespace pandora {

class PauseGate {
 public:
  using Callback = std::function<void(uint64_t epoch)>;
  // Both are called without the gate's lock held, on the thread that made
  // the decision due (set_epoch()'s or leave()'s caller).
  PauseGate(Callback ack, Callback refuse) : ack_(std::move(ack)), refuse_(std::move(refuse)) {}

  // The pause in progress (0: none). Idempotent.
  void set_epoch(uint64_t epoch);
  // Before a transaction: waits while a pause is in progress.
  void enter();
  // After it. `needs_recovery`: its coordinator halted; the node will
  // refuse every pause from now on.
  void leave(bool needs_recovery);

  uint64_t acknowledged() const;  // the last epoch acknowledged
  uint64_t refused() const;       // the last epoch refused

 private:
  // The callback that became due (and its epoch), decided under the lock.
  struct Due {
    const Callback* call = nullptr;
    uint64_t epoch = 0;
  };
  Due settle();
  static void run(const Due& d) {
    if (d.call && *d.call) (*d.call)(d.epoch);
  }

  const Callback ack_, refuse_;
  mutable std::mutex mu_;
  std::condition_variable resumed_;
  uint64_t epoch_ = 0;
  uint64_t acked_ = 0, refused_ = 0;
  uint32_t busy_ = 0;
  bool needs_recovery_ = false;
};

// Holds `gate` entered for a scope that must not be paused in the middle
// and acknowledges nothing itself: a load, or a benchmark run whose
// coordinators park and acknowledge on their own. A null gate holds nothing.
class PauseGateHold {
 public:
  explicit PauseGateHold(PauseGate* gate) : gate_(gate) {
    if (gate_) gate_->enter();
  }
  ~PauseGateHold() {
    if (gate_) gate_->leave(needs_recovery_);
  }
  PauseGateHold(const PauseGateHold&) = delete;
  PauseGateHold& operator=(const PauseGateHold&) = delete;
  // The scope left state only recovery can clean up (a halted coordinator).
  void set_needs_recovery() { needs_recovery_ = true; }

 private:
  PauseGate* gate_;
  bool needs_recovery_ = false;
};

// A Session whose every call is one stretch `gate` waits for: no pause is
// acknowledged while one of its calls runs, and a call made during a pause
// waits for its end. `halted` says whether the inner session's coordinator
// halted (then the node refuses every pause from now on).
class GatedSession final : public Session {
 public:
  GatedSession(Session& inner, PauseGate& gate, std::function<bool()> halted)
      : inner_(inner), gate_(gate), halted_(std::move(halted)) {}
  void run(const std::function<void(Txn&)>& body) override {
    gate_.enter();
    inner_.run(body);
    gate_.leave(halted_());
  }
  CommitOutcome transact(const std::function<AbortReason(Txn&)>& body) override {
    gate_.enter();
    CommitOutcome o = inner_.transact(body);
    gate_.leave(halted_());
    return o;
  }

 private:
  Session& inner_;
  PauseGate& gate_;
  std::function<bool()> halted_;
};

}  // namespace pandora
