#include "compute/pause_gate.h"

namespace pandora {

PauseGate::Due PauseGate::settle() {
  if (epoch_ == 0) return {};
  if (needs_recovery_) {
    if (refused_ == epoch_) return {};
    refused_ = epoch_;
    return {&refuse_, epoch_};
  }
  if (busy_ != 0 || acked_ == epoch_) return {};
  acked_ = epoch_;
  return {&ack_, epoch_};
}

void PauseGate::set_epoch(uint64_t epoch) {
  Due due;
  {
    std::lock_guard<std::mutex> g(mu_);
    epoch_ = epoch;
    due = settle();
  }
  if (epoch == 0) resumed_.notify_all();
  run(due);
}

void PauseGate::enter() {
  std::unique_lock<std::mutex> g(mu_);
  resumed_.wait(g, [&] { return epoch_ == 0; });
  ++busy_;
}

void PauseGate::leave(bool needs_recovery) {
  Due due;
  {
    std::lock_guard<std::mutex> g(mu_);
    --busy_;
    needs_recovery_ = needs_recovery_ || needs_recovery;
    due = settle();
  }
  run(due);
}

uint64_t PauseGate::acknowledged() const {
  std::lock_guard<std::mutex> g(mu_);
  return acked_;
}

uint64_t PauseGate::refused() const {
  std::lock_guard<std::mutex> g(mu_);
  return refused_;
}

}  // namespace pandora
