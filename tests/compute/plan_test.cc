// The protocol plans (compute/txn/plan.h, protocol_*.cc) and, in builds with
// bug switches, the mutation layer that re-creates seed Table 5.1 by
// reordering or replacing plan steps (compute/txn/mutations.h).
#include <gtest/gtest.h>

#include "compute/txn/mutations.h"
#include "compute/txn/protocol.h"

namespace pandora::txn {
namespace {

constexpr std::string_view kPandoraPlan =
    "settle-latches -> post-validation -> check-validation -> post-log -> await-log -> commit-writes -> report -> "
    "unlatch";

TEST(PlanTest, EachProtocolReadsAsItsPlan) {
  EXPECT_EQ(protocol_for(ProtocolMode::kPandora).plan().to_string(), kPandoraPlan);
  EXPECT_EQ(protocol_for(ProtocolMode::kLogALatch).plan().to_string(), kPandoraPlan);
  // ford has no logging phase: its undo records went out during execution.
  EXPECT_EQ(protocol_for(ProtocolMode::kFord).plan().to_string(),
            "settle-latches -> post-validation -> check-validation -> await-log -> commit-writes -> report -> "
            "unlatch");
  for (ProtocolMode m : {ProtocolMode::kPandora, ProtocolMode::kFord, ProtocolMode::kLogALatch}) {
    EXPECT_EQ(protocol_for(m).mode(), m);
    const TxnPlan p = protocol_for(m).plan();
    EXPECT_NE(p.abort_release, nullptr) << protocol_name(m);
    EXPECT_EQ(p.before_blind_latch, nullptr) << protocol_name(m);
  }
  EXPECT_TRUE(protocol_for(ProtocolMode::kFord).latch_blind_writes_at_once());
  EXPECT_FALSE(protocol_for(ProtocolMode::kPandora).latch_blind_writes_at_once());
}

TEST(PlanTest, MoveBeforeReordersBothWaysAndRefusesAbsentSteps) {
  TxnPlan p = protocol_for(ProtocolMode::kPandora).plan();
  ASSERT_TRUE(p.move_before(Step::kUnlatch, Step::kSettleLatches));
  EXPECT_EQ(p.steps().front().step, Step::kUnlatch);
  ASSERT_TRUE(p.move_before(Step::kUnlatch, Step::kReport));
  EXPECT_EQ(p.to_string(),
            "settle-latches -> post-validation -> check-validation -> post-log -> await-log -> commit-writes -> "
            "unlatch -> report");
  TxnPlan ford = protocol_for(ProtocolMode::kFord).plan();
  const std::string before = ford.to_string();
  EXPECT_FALSE(ford.move_before(Step::kPostLog, Step::kSettleLatches));
  EXPECT_EQ(ford.to_string(), before);
}

TEST(PlanTest, EveryStepKindHasAName) {
  for (size_t i = 0; i < kStepKinds; ++i) EXPECT_NE(step_name(static_cast<Step>(i)), "unknown") << i;
}

#ifdef PANDORA_BUG_SWITCHES

TxnPlan mutated(std::string_view bug) {
  Result<BugSwitches> b = parse_bug_switches(bug);
  EXPECT_TRUE(b) << b.status().to_string();
  TxnPlan p = protocol_for(ProtocolMode::kPandora).plan();
  apply_mutations(*b, p);
  return p;
}

TEST(MutationTest, EverySwitchHasOneRowAndChangesThePlan) {
  const TxnPlan clean = protocol_for(ProtocolMode::kPandora).plan();
  EXPECT_EQ(mutations().size(), 6u);
  for (const Mutation& m : mutations()) {
    BugSwitches b;
    b.*m.flag = true;
    TxnPlan p = clean;
    apply_mutations(b, p);
    bool changed = p.to_string() != clean.to_string() || p.abort_release != clean.abort_release ||
                   p.before_blind_latch != clean.before_blind_latch;
    for (size_t i = 0; i < p.steps().size(); ++i) changed |= p.steps()[i].run != clean.steps()[i].run;
    EXPECT_TRUE(changed) << b.to_string() << ": " << m.changes;
  }
}

TEST(MutationTest, Table51AsPlans) {
  const TxnPlan clean = protocol_for(ProtocolMode::kPandora).plan();
  EXPECT_EQ(mutated("none").to_string(), kPandoraPlan);
  EXPECT_NE(mutated("complicit-abort").abort_release, clean.abort_release);
  EXPECT_EQ(mutated("complicit-abort").to_string(), kPandoraPlan);
  TxnPlan missing = mutated("missing-insert-log");
  EXPECT_NE(missing.find(Step::kPostLog)->run, clean.steps()[3].run);
  TxnPlan covert = mutated("covert-latches");
  EXPECT_NE(covert.find(Step::kCheckValidation)->run, clean.steps()[2].run);
  EXPECT_EQ(mutated("relaxed-latches").to_string(),
            "post-validation -> settle-latches -> check-validation -> post-log -> await-log -> commit-writes -> "
            "report -> unlatch");
  EXPECT_EQ(mutated("lost-decision").to_string(),
            "settle-latches -> post-log -> await-log -> post-validation -> check-validation -> commit-writes -> "
            "report -> unlatch");
  TxnPlan unlatched = mutated("logging-without-latching");
  EXPECT_EQ(unlatched.to_string(),
            "post-log -> settle-latches -> post-validation -> check-validation -> await-log -> commit-writes -> "
            "report -> unlatch");
  EXPECT_NE(unlatched.before_blind_latch, nullptr);
}

#endif  // PANDORA_BUG_SWITCHES

}  // namespace
}  // namespace pandora::txn
