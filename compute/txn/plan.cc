#include "compute/txn/plan.h"

#include <algorithm>

namespace pandora::txn {

namespace {

constexpr std::array<std::string_view, kStepKinds> kStepNames = {
    "settle-latches", "post-validation", "check-validation", "post-log",
    "await-log",      "commit-writes",   "report",           "unlatch",
};

}  // namespace

std::string_view step_name(Step s) {
  const auto i = static_cast<size_t>(s);
  return i < kStepNames.size() ? kStepNames[i] : "unknown";
}

void TxnPlan::append(Step s, StepFn run) {
  if (size_ < kMaxSteps) steps_[size_++] = PlanStep{s, run};
}

PlanStep* TxnPlan::find(Step s) {
  for (size_t i = 0; i < size_; ++i) {
    if (steps_[i].step == s) return &steps_[i];
  }
  return nullptr;
}

bool TxnPlan::move_before(Step moved, Step anchor) {
  PlanStep* m = find(moved);
  PlanStep* a = find(anchor);
  if (!m || !a || m == a) return false;
  if (m > a) {
    std::rotate(a, m, m + 1);  // [a .. m] -> [m, a ..]
  } else {
    std::rotate(m, m + 1, a);  // [m .. a) -> [.., m] before a
  }
  return true;
}

std::string TxnPlan::to_string() const {
  std::string out;
  for (const PlanStep& s : steps()) {
    if (!out.empty()) out += " -> ";
    out += step_name(s.step);
  }
  return out;
}

}  // namespace pandora::txn
