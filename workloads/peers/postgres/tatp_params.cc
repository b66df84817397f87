#include "workloads/peers/postgres/tatp_params.h"

#include <fmt/format.h>

namespace pandora::workloads::tatp {

std::string sub_nbr(uint64_t s_id) { return fmt::format("{:015d}", s_id); }

}  // namespace pandora::workloads::tatp
