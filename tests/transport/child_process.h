// Forked child processes for multi-process tests, owned by pid.
//
//   ChildProcess c = ChildProcess::run([&] { ...; return 0; });  // body runs in the child
//   auto st = c.wait_for(std::chrono::seconds(30));               // exit status, or nullopt
//
// The body's return value is the child's exit code; the child leaves with
// _exit (no atexit handlers, no destructors of the parent's objects, no
// gtest output). A child still running when its ChildProcess is destroyed is
// SIGKILLed and reaped, so a failing test never leaves processes behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>

namespace pandora::testing {

// How a child ended.
struct ChildExit {
  bool exited = false;  // normal exit: `code` is the exit code
  int code = 0;
  bool signaled = false;  // killed: `signal` is the signal
  int signal = 0;
};

class ChildProcess {
 public:
  // Forks; the child runs `body` and _exits with its result (or 99 if it
  // throws). pid() is -1 if fork failed.
  static ChildProcess run(const std::function<int()>& body);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Waits until the child has exited or `timeout` passed (nullopt).
  std::optional<ChildExit> wait_for(std::chrono::milliseconds timeout);
  // Non-blocking: the exit if the child has already ended.
  std::optional<ChildExit> try_wait() { return wait_for(std::chrono::milliseconds(0)); }
  // SIGKILL and reap (no-op if already reaped).
  void kill_and_reap();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
};

}  // namespace pandora::testing
