// Parsing of the workload flags OptionSet has no type for (fractions,
// real-valued parameters). Errors name the flag and the accepted range so the
// driver can print them as they are.
#pragma once

#include <string_view>

#include "common/status.h"

namespace pandora::workloads {

// A decimal number in [min, max], e.g. "0.5", "1", "0.99", "1e-3".
// kInvalidArgument: "--write-ratio: 'abc' is not a number in [0, 1]".
Result<double> parse_real(std::string_view flag, std::string_view text, double min, double max);

}  // namespace pandora::workloads
