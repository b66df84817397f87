// Renders a checker Report for people (text) and for tools (one JSON
// object). Both name transactions the same way: "<pid>.<coordinator>#<seq>"
// plus the history index, which locates the line.
#pragma once

#include <string>

#include "litmus/history/checker.h"

namespace pandora::history {

// "3.1#42".
std::string txn_name(const TxnRef& t);
// "G2", or "G2-realtime" for a cycle that needs real-time edges.
std::string anomaly_label(const Anomaly& a);

// One anomaly: a headline, its transactions (T1, T2, ... in order), and for
// cycles one line per edge saying which object and versions made it.
std::string format_anomaly(const Anomaly& a);

// Summary lines, then every anomaly (numbered), or "no anomalies".
std::string format_report_text(const Report& r);

// {"model":..., "summary":{...}, "counts":{...}, "anomalies":[...]} on one
// line, newline-terminated. Objects are named by "table" and "key", plus
// "slot" when the incarnation's slot is known (non-zero; checker.h).
std::string format_report_json(const Report& r);

}  // namespace pandora::history
