#include "compute/txn/protocol.h"

namespace pandora::txn {

const Protocol& protocol_for(ProtocolMode mode) {
  switch (mode) {
    case ProtocolMode::kFord: return ford_protocol();
    case ProtocolMode::kLogALatch: return log_a_latch_protocol();
    case ProtocolMode::kPandora: break;
  }
  return pandora_protocol();  // ComputeConfig::validate admits only the three
}

}  // namespace pandora::txn
