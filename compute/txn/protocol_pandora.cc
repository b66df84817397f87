// Mode `pandora` (ARCHITECTURE.md 4, seed 4.3):
//  * latches carry the owner {pid, coordinator, seq}, so a latch of a failed
//    pid is recognised as stray and stolen (implicit latch logging);
//  * validation starts only after every latch CAS completed;
//  * one log record, posted only after validation succeeded, to the f+1
//    log nodes of this pid, waited for before any commit WRITE;
//  * committed is reported before the latches are released;
//  * an abort releases exactly the latches it holds, unless the transaction
//    was logged and a transport failure struck: then recovery decides.
#include "compute/txn/abort.h"
#include "compute/txn/commit.h"
#include "compute/txn/context.h"
#include "compute/txn/latching.h"
#include "compute/txn/logging.h"
#include "compute/txn/protocol.h"
#include "compute/txn/report.h"
#include "compute/txn/validation.h"

namespace pandora::txn {

TxnPlan pandora_plan() {
  TxnPlan p;
  p.append(Step::kSettleLatches, settle_latches);
  p.append(Step::kPostValidation, post_validation);
  p.append(Step::kCheckValidation, check_validation);
  p.append(Step::kPostLog, post_log);
  p.append(Step::kAwaitLog, await_log);
  p.append(Step::kCommitWrites, commit_writes);
  p.append(Step::kReport, report_committed);
  p.append(Step::kUnlatch, unlatch);
  p.abort_release = release_held;
  return p;
}

bool keep_latches_if_logged(const TxnContext& ctx, AbortReason r) {
  return r == AbortReason::kTransport && ctx.logged;
}

namespace {

class Pandora final : public Protocol {
 public:
  ProtocolMode mode() const override { return ProtocolMode::kPandora; }
  TxnPlan plan() const override { return pandora_plan(); }
  uint64_t latch_word(const TxnContext& ctx) const override { return ctx.txn_id(); }
  bool keep_latches_on_abort(TxnContext& ctx, AbortReason r) const override { return keep_latches_if_logged(ctx, r); }
};

}  // namespace

const Protocol& pandora_protocol() {
  static const Pandora p;
  return p;
}

}  // namespace pandora::txn
