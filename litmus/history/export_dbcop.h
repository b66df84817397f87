// Exports a history in dbcop's JSON history format (rnbguy/dbcop: the
// standalone file `dbcop verify --input-dir DIR --consistency LEVEL` reads,
// one history per .json file):
//
//   {"params":{"id":0,"n_node":2,"n_variable":3,"n_transaction":4,"n_event":5},
//    "info":"pandora history","start":"<RFC 3339>","end":"<RFC 3339>",
//    "data":[ session, ... ]}
//   session     = [ transaction, ... ]            (in session order)
//   transaction = {"events":[ event, ... ],"committed":true|false}
//   event       = {"Read":{"variable":V,"version":X}}
//               | {"Write":{"variable":V,"version":X}}
//
// Mapping:
//   session     one per coordinator ("<pid>.<coordinator>"), sessions
//               sorted by (pid, coordinator), transactions by begin_ns
//               (then seq): a coordinator runs one transaction at a time,
//               so this is its program order.
//   variable    one per incarnation (table, key, slot) of a key:
//               (incarnation << 8 | table) << 40 | key, which is
//               table << 40 | key for a key that never moved to another
//               slot; version = the version number (per slot, so per
//               variable; export_common.h). dbcop sees a key's
//               incarnations as unrelated variables.
//   initial     the initial state is an explicit transaction, alone in the
//               first session, writing each incarnation's initial version
//               (export_common.h); no read's version is null.
//   committed   the outcome. Aborted transactions keep only their exported
//               writes (export_common.h) and are left out when none remain;
//               dbcop validates every read, and an aborted one's reads
//               carry nothing to check.
//   params      metadata dbcop does not check: n_node = sessions,
//               n_variable = objects (incarnations), n_transaction = the longest session,
//               n_event = the longest transaction; id = 0.
//   start/end   the earliest begin_ns and latest end_ns, UTC.
// The text has one transaction per line (still one JSON document).
// dbcop does not use real time, so this checks serializability (and the
// weaker levels), not strict serializability.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"
#include "compute/trace/history.h"

namespace pandora::history {

Status export_dbcop(const History& history, std::FILE* out);
Result<std::string> dbcop_text(const History& history);

}  // namespace pandora::history
