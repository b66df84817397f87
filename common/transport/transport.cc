#include "common/transport/transport.h"

namespace pandora {

std::string_view op_name(OpType op) {
  switch (op) {
    case OpType::kRead: return "read";
    case OpType::kWrite: return "write";
    case OpType::kCas: return "cas";
    case OpType::kFaa: return "faa";
  }
  return "unknown";
}

}  // namespace pandora
