#include "compute/txn/protocol.h"

#include "compute/txn/context.h"

namespace pandora::txn {

const Protocol& protocol_for(ProtocolMode mode) {
  switch (mode) {
    case ProtocolMode::kFord: return ford_protocol();
    case ProtocolMode::kLogALatch: return log_a_latch_protocol();
    case ProtocolMode::kPandora: break;
  }
  return pandora_protocol();  // ComputeConfig::validate admits only the three
}

bool Protocol::decided_to_commit(const TxnContext& ctx) const { return ctx.logged; }

}  // namespace pandora::txn
