// A session: one transaction coordinator driven by the calling thread.
//
//   auto session = client->session();                         // Result<std::unique_ptr<Session>>
//   pandora::CommitOutcome o = (*session)->transact([&](pandora::Txn& t) {
//     auto v = t.update(kAccounts, 7);
//     if (!v) return v.reason();
//     (*v)[0] += 1;
//     return pandora::AbortReason::kNone;                     // commit
//   });
//
// A session is not thread-safe: use one per thread (each has its own
// connections to every memory node and its own log lane).
#pragma once

#include <functional>

#include "pandora/txn.h"

namespace pandora {

class Session {
 public:
  virtual ~Session() = default;

  // Runs `body` with this session's transaction handle (begin and
  // commit/abort are the body's business); returns when it returned.
  virtual void run(const std::function<void(Txn&)>& body) = 0;

  // begin(); body; commit() if body returned kNone, else abort() and report
  // the body's reason.
  virtual CommitOutcome transact(const std::function<AbortReason(Txn&)>& body) = 0;

  // Retries transact() while it aborts for a conflict or a memory node's
  // fail-over (is_retryable), at
  // most `attempts` times; returns the last outcome. Each attempt is one
  // transact() call, so whatever an implementation does around a call (the
  // client's pause gate) happens between attempts too.
  CommitOutcome transact_retry(const std::function<AbortReason(Txn&)>& body, int attempts = 1000) {
    CommitOutcome out;
    for (int i = 0; i < attempts; ++i) {
      out = transact(body);
      if (out.committed || !is_retryable(out.reason)) return out;
    }
    return out;
  }
};

}  // namespace pandora
